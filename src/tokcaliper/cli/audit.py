"""CLI: ``tokcaliper audit``, ``diff`` and ``attribute`` (METHODS.md Part A).

Thin: parse arguments, call one function in :mod:`tokcaliper.audit` that returns a
typed result, emit it (text: :mod:`tokcaliper.report.audit_view`; ``--json``: its
dump; its caveats through the warning sink). ``attribute`` reads the store here
and hands the runs to :func:`tokcaliper.audit.attribution.attribute_runs`.

Exit codes: 0 all pass/warn, 10 any record fails (diff: 11 not comparable), 2 input
errors (including records skipped as malformed when none fails), 12 none fails but
not every check could run.
"""

from __future__ import annotations

from pathlib import Path

import typer

from tokcaliper.cli._app import JSON_HELP, app
from tokcaliper.errors import EXIT_NOT_COMPARABLE, InputError

_BW_HELP = "Spec memory bandwidth in GB/s, for every GPU or one: 1792 or 'RTX 5090=1792'. Repeatable."
_ACH_HELP = "Measured achievable bandwidth in GB/s (preferred by A3 over the spec sheet); NUMBER or NAME=NUMBER."
_TDP_HELP = "TDP per GPU in W, for every GPU or one: 575 or 'RTX 5090=575'. Repeatable."


@app.command("audit")
def audit_cmd(
    files: list[str] = typer.Argument(None, help="Record files (.json, .jsonl, .csv), folders of them, or "
                                                 "http(s) URLs (saved to disk first, then parsed)."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    explain: str | None = typer.Option(None, "--explain", metavar="CHECK",
                                       help="Print what a check (A1…A11) does and where its constants come from."),
    bandwidth: list[str] = typer.Option(None, "--bandwidth", help=_BW_HELP),
    achievable: list[str] = typer.Option(None, "--achievable-bandwidth", help=_ACH_HELP),
    tdp: list[str] = typer.Option(None, "--tdp", help=_TDP_HELP),
    model_file: Path | None = typer.Option(None, "--model-file",
                                           help="GGUF file or HF config.json giving the model's parameters."),
    host_bandwidth: float | None = typer.Option(
        None, "--host-bandwidth", metavar="GB/S",
        help="Host memory bandwidth for weights offloaded to the CPU (A3; default 102.4 GB/s, dual-channel DDR5-6400)."),
    brief: bool = typer.Option(False, "--brief", help="One line per record instead of one table each."),
    max_bytes: int = typer.Option(256 * 1024 * 1024, "--max-bytes", help="Largest input file accepted, bytes."),
    save_dir: Path | None = typer.Option(None, "--save-dir",
                                         help="Folder for downloaded URLs (default ~/.cache/tokcaliper/downloads)."),
    timeout: float = typer.Option(30.0, "--timeout", help="Seconds allowed for a URL's whole download (connect, headers, body)."),
) -> None:
    """Audit published benchmark records: one verdict table per record and a batch summary.

    A URL is downloaded to a file first (size limit --max-bytes, --timeout;
    the path is printed on stderr), then parsed from that file, so the same
    bytes can be audited again later.

    Exits 10 when any record fails (usable in CI), 2 on input errors, 1 only on an internal error.
    """
    from tokcaliper.audit import AuditOptions, audit_files
    from tokcaliper.audit.explain import explain as explain_check
    from tokcaliper.audit.facts.gpus import GPUOverrides
    from tokcaliper.report import audit_view
    from tokcaliper.report.output import emit

    if explain is not None:
        if files:
            raise InputError(f"--explain takes no files (got {', '.join(str(f) for f in files[:3])}): "
                             "run --explain and the audit separately")
        e = explain_check(explain)
        emit(e, as_json, lambda c: audit_view.render_explain(c, e))
        return
    if not files:
        raise InputError("give at least one record file (or --explain CHECK)")
    from tokcaliper.audit.fetch import resolve_inputs
    from tokcaliper.audit.importers import check_max_bytes

    check_max_bytes(max_bytes)
    paths = resolve_inputs(files, save_dir, max_bytes=max_bytes, timeout_s=timeout,
                           on_saved=audit_view.render_saved)
    overrides = GPUOverrides.from_options(bandwidth, achievable, tdp)
    if host_bandwidth is not None and not host_bandwidth > 0:
        raise InputError(f"--host-bandwidth must be > 0 GB/s, got {host_bandwidth}")
    report = audit_files(paths, AuditOptions(gpu=overrides, host_bandwidth_gb_s=host_bandwidth),
                         max_bytes=max_bytes, model_file=model_file)
    emit(report, as_json, lambda c: audit_view.render_report(c, report, brief=brief))
    if report.exit_code:
        raise typer.Exit(report.exit_code)


@app.command("diff")
def diff_cmd(
    rec_a: str = typer.Argument(..., help="First record: FILE or FILE#INDEX."),
    rec_b: str = typer.Argument(..., help="Second record: FILE or FILE#INDEX."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    plan: bool = typer.Option(False, "--plan", help="Write an experiment file measuring each knob alone (A8)."),
    out: Path = typer.Option(Path("attribution.toml"), "--out", help="Where --plan writes the experiment file."),
    runs_per_arm: int | None = typer.Option(None, "--runs-per-arm",
                                            help="Measured runs per arm (default: `tokcaliper plan` for --cv/--effect)."),
    cv: float = typer.Option(0.05, "--cv", help="Run-to-run CV assumed for the default runs per arm (fraction)."),
    effect: float = typer.Option(0.05, "--effect", help="Smallest contribution to resolve (fraction), for --plan."),
    metric: str | None = typer.Option(None, "--metric", help="Primary metric of the plan (default by batch size)."),
) -> None:
    """List every knob two records differ in; say 'not comparable' before any ratio (A7).

    With --plan, write an experiment file (one arm per single-knob change from A
    toward B, plus A and B) for `tokcaliper experiment run`; `tokcaliper
    attribute` analyses it afterwards (A8). Exits 11 when a knob that matters differs (not comparable).
    """
    from tokcaliper.audit import diff_files, plan_files
    from tokcaliper.report import audit_view
    from tokcaliper.report.output import emit

    if plan:
        p = plan_files(rec_a, rec_b, out, runs_per_arm=runs_per_arm, cv=cv, effect=effect, metric=metric)
        emit(p, as_json, lambda c: audit_view.render_plan(c, p))
        comparable = p.comparable
    else:
        d = diff_files(rec_a, rec_b)
        emit(d, as_json, lambda c: audit_view.render_diff(c, d))
        comparable = d.comparable
    if not comparable:
        raise typer.Exit(EXIT_NOT_COMPARABLE)


@app.command("attribute")
def attribute_cmd(
    experiment: str = typer.Argument(..., help="Experiment id (or unique prefix) of a plan from `diff --plan`."),
    db: Path = typer.Option(Path("tokcaliper.db"), "--db", help="The database the experiment stored its runs in."),
    alpha: float = typer.Option(0.05, "--alpha", help="Two-sided level of the CIs."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Each knob's signed contribution with its CI, and the unexplained residual (A8)."""
    from tokcaliper.audit.attribution import attribute_runs
    from tokcaliper.report.audit_view import render_attribution
    from tokcaliper.report.output import emit
    from tokcaliper.store import Store

    if not (0 < alpha < 1):
        raise InputError(f"--alpha must be between 0 and 1 (exclusive), got {alpha}")
    # A missing or unusable database is a StoreError (exit 4), as for every other reader.
    with Store(db, create=False) as store:
        exp = store.get_experiment(experiment)
        runs = store.session_runs(exp.id)
    res = attribute_runs(exp.id, runs, arms=[a["name"] for a in exp.spec.get("arms", [])],
                         metric=exp.spec.get("metric"), alpha=alpha)
    emit(res, as_json, lambda c: render_attribution(c, res))
