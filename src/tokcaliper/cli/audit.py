"""CLI: ``tokcaliper audit`` and ``tokcaliper diff`` (METHODS.md Part A).

Thin: parse arguments, call one function in :mod:`tokcaliper.audit`, render
with :mod:`tokcaliper.report.audit_view`. Exit codes: 0 all pass/warn, 1 any
record fails (diff: not comparable), 2 input errors (including records skipped
as malformed when none fails).
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from tokcaliper.cli._app import JSON_HELP, app
from tokcaliper.errors import InputError

_BW_HELP = "Spec memory bandwidth in GB/s, for every GPU or one: 1792 or 'RTX 5090=1792'. Repeatable."
_ACH_HELP = "Measured achievable bandwidth in GB/s (preferred by A3 over the spec sheet); NUMBER or NAME=NUMBER."
_TDP_HELP = "TDP per GPU in W, for every GPU or one: 575 or 'RTX 5090=575'. Repeatable."


def _warn(lines: list[str]) -> None:
    """Warnings go to stderr, one line each, so ``--json`` output stays clean."""
    for line in lines:
        print(f"tokcaliper: warning: {line}", file=sys.stderr)


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
    timeout: float = typer.Option(30.0, "--timeout", help="Seconds allowed to connect and per read, for URLs."),
) -> None:
    """Audit published benchmark records: one verdict table per record and a batch summary.

    A URL is downloaded to a file first (size limit --max-bytes, --timeout;
    the path is printed on stderr), then parsed from that file, so the same
    bytes can be audited again later.

    Exits 1 when any record fails (usable in CI), 2 on input errors.
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
    from tokcaliper.audit.fetch import fetch_to_file, is_url
    from tokcaliper.audit.importers import check_max_bytes

    check_max_bytes(max_bytes)
    paths: list[Path] = []
    for f in files:
        if is_url(f):
            got = fetch_to_file(f, save_dir, max_bytes=max_bytes, timeout_s=timeout)
            print(f"tokcaliper: saved {f} ({got.size_bytes} bytes, sha256 {got.sha256[:12]}) to {got.path}",
                  file=sys.stderr)
            paths.append(got.path)
        else:
            paths.append(Path(f))
    overrides = GPUOverrides.from_options(bandwidth, achievable, tdp)
    if host_bandwidth is not None and not host_bandwidth > 0:
        raise InputError(f"--host-bandwidth must be > 0 GB/s, got {host_bandwidth}")
    report = audit_files(paths, AuditOptions(gpu=overrides, host_bandwidth_gb_s=host_bandwidth),
                         max_bytes=max_bytes, model_file=model_file)
    _warn(report.warnings)
    emit(report, as_json, lambda c: audit_view.render_report(c, report, brief=brief))
    if report.exit_code:
        raise typer.Exit(report.exit_code)


@app.command("diff")
def diff_cmd(
    rec_a: str = typer.Argument(..., help="First record: FILE or FILE#INDEX."),
    rec_b: str = typer.Argument(..., help="Second record: FILE or FILE#INDEX."),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """List every knob two records differ in; say 'not comparable' before any ratio (A7).

    Exits 1 when a knob that matters differs.
    """
    from tokcaliper.audit import diff_files
    from tokcaliper.report import audit_view
    from tokcaliper.report.output import emit

    d = diff_files(rec_a, rec_b)
    _warn(d.warnings)
    emit(d, as_json, lambda c: audit_view.render_diff(c, d))
    if not d.comparable:
        raise typer.Exit(1)
