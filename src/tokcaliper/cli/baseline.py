"""CLI: ``tokcaliper baseline save/list/show`` and the gate behind ``compare --baseline``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app
from tokcaliper.errors import EXIT_GATE_INCONCLUSIVE, EXIT_REGRESSION, InputError

baseline_app = typer.Typer(help="Named baselines for the CI regression gate (docs/ci-gate.md).",
                           no_args_is_help=True, rich_markup_mode=None)
app.add_typer(baseline_app, name="baseline")


def load_runs(store, experiment: Optional[str], session: Optional[str], arm: Optional[str]):  # type: ignore[no-untyped-def]
    """``(source words, arm, runs)`` of an experiment's or a session's arm (one of the two given)."""
    from tokcaliper.experiment.baseline import runs_of_arm

    if (experiment is None) == (session is None):
        raise InputError("give --experiment ID or --session NAME (one of them)")
    if experiment is not None:
        row = store.get_experiment(experiment)
        what = f"experiment {row.id}"
        runs = store.session_runs(row.id)
    else:
        what = f"session {session}"
        runs = store.session_runs(session)
        if not runs:
            raise InputError(f"no runs in session {session!r} (see `tokcaliper runs`)")
    arm, chosen = runs_of_arm(runs, arm, what)
    return f"{what} arm {arm}", arm, chosen


@baseline_app.command("save")
def save(
    name: Annotated[str, typer.Argument(help="The baseline's name (e.g. main, or a config name).")],
    experiment: Annotated[Optional[str], typer.Option("--experiment", help="Runs of this experiment…")] = None,
    session: Annotated[Optional[str], typer.Option("--session", help="…or of this bench session.")] = None,
    arm: Annotated[Optional[str], typer.Option("--arm", help="The arm (needed when there are several).")] = None,
    commit: Annotated[Optional[str], typer.Option("--commit", help="The commit the runs measured (recorded).")] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite a baseline of that name.")] = False,
    db: Annotated[Path, typer.Option("--db", help=DB_HELP)] = Path("tokcaliper.db"),
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Store one arm's runs (≥ 2) with their provenance as a named baseline."""
    from tokcaliper.experiment.baseline import baseline_from_runs
    from tokcaliper.model.timestamps import utc_now_iso
    from tokcaliper.report.output import emit
    from tokcaliper.store import Store

    with Store(db, create=False) as store:
        source, arm_name, runs = load_runs(store, experiment, session, arm)
        b = baseline_from_runs(name, runs, arm=arm_name, source=source, created_at=utc_now_iso(),
                               commit=commit)
        store.save_baseline(b, replace=replace)
    emit(b, as_json, lambda console: console.print(
        f"baseline {b.name}: {len(b.runs)} runs of {b.source}"
        + (f" at commit {b.commit}" if b.commit else ""), markup=False))


@baseline_app.command("list")
def list_cmd(
    db: Annotated[Path, typer.Option("--db", help=DB_HELP)] = Path("tokcaliper.db"),
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """List the stored baselines."""
    from tokcaliper.report.output import emit
    from tokcaliper.store import Store

    with Store(db, create=False) as store:
        rows = store.list_baselines()

    def render(console) -> None:  # type: ignore[no-untyped-def]
        console.print(f"{len(rows)} baseline(s) in {db}", markup=False)
        for b in rows:
            console.print(f"  {b.name}: {len(b.runs)} runs of {b.source}, {b.created_at}"
                          + (f", commit {b.commit}" if b.commit else ""), markup=False)

    emit(rows, as_json, render)


@baseline_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="The baseline's name.")],
    db: Annotated[Path, typer.Option("--db", help=DB_HELP)] = Path("tokcaliper.db"),
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Print one baseline: provenance and each run's headline figures."""
    from tokcaliper.model.metrics import headline_metrics
    from tokcaliper.numbers import num, percent
    from tokcaliper.report.output import emit
    from tokcaliper.stats.describe import describe
    from tokcaliper.store import Store

    with Store(db, create=False) as store:
        b = store.get_baseline(name)

    def render(console) -> None:  # type: ignore[no-untyped-def]
        console.print(f"baseline {b.name}: {b.source}, saved {b.created_at}"
                      + (f", commit {b.commit}" if b.commit else ""), markup=False)
        console.print(f"  server: {b.server_command or '(a live server, --url)'}; "
                      f"tokcaliper {b.tool_version}", markup=False)
        for m in headline_metrics():
            vals = [v for r in b.runs if (v := r.values.get(m.name)) is not None]
            if len(vals) >= 2:
                d = describe(vals, m.name)
                console.print(f"  {m.name}: {num(d.mean, 4)} {m.unit} (n={d.n}, CV "
                              f"{percent(d.cv)})", markup=False)

    emit(b, as_json, render)


def run_gate(*, baseline: str, experiment: Optional[str], session: Optional[str],
             arm: Optional[str], metric: str, alpha: float, noise_band: float,
             margin: Optional[float], effect: Optional[float], db: Path, as_json: bool,
             summary_md: Optional[Path], bmf: Optional[Path], github_benchmark: Optional[Path],
             fail_on_inconclusive: bool) -> None:
    """``compare --baseline``: gate, print, write the requested files, exit with the gate's code."""
    from tokcaliper.experiment.analysis import comparison_metrics
    from tokcaliper.experiment.baseline import gate_on_baseline
    from tokcaliper.report.gate_view import bencher_bmf, gate_markdown, github_benchmark as gab, render_gate
    from tokcaliper.report.output import emit
    from tokcaliper.store import Store

    with Store(db, create=False) as store:
        b = store.get_baseline(baseline)
        source, _, runs = load_runs(store, experiment, session, arm)
    report = gate_on_baseline(b, runs, new_source=source, metrics=comparison_metrics(metric), alpha=alpha,
                  noise_band=noise_band, margin=margin, effect=effect)
    bench_name = f"tokcaliper/{b.arm}"
    try:
        if summary_md is not None:  # appended: GitHub's job summary collects every step's text
            with open(summary_md, "a", encoding="utf-8") as f:
                f.write(gate_markdown(report))
        if bmf is not None:
            bmf.write_text(json.dumps(bencher_bmf(report, bench_name), indent=1) + "\n", encoding="utf-8")
        if github_benchmark is not None:
            smaller, bigger = gab(report, bench_name)
            for suffix, entries in (("smaller", smaller), ("bigger", bigger)):
                path = github_benchmark.with_name(f"{github_benchmark.name}.{suffix}.json")
                path.write_text(json.dumps(entries, indent=1) + "\n", encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot write {e.filename}: {e.strerror}") from None
    emit(report, as_json, lambda console: render_gate(report, console))
    if report.outcome == "regression":
        raise typer.Exit(EXIT_REGRESSION)
    if report.outcome == "inconclusive" and fail_on_inconclusive:
        raise typer.Exit(EXIT_GATE_INCONCLUSIVE)
