"""CLI: ``tokcaliper baseline save/list/show`` and the gate behind ``compare --baseline``.

Thin: :mod:`tokcaliper.experiment.baseline` builds each result, the store keeps the
baselines, :mod:`tokcaliper.report.gate_view` renders and writes the CI files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app
from tokcaliper.errors import EXIT_GATE_INCONCLUSIVE, EXIT_REGRESSION

baseline_app = typer.Typer(help="Named baselines for the CI regression gate (docs/ci-gate.md).",
                           no_args_is_help=True, rich_markup_mode=None)
app.add_typer(baseline_app, name="baseline")


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
    from tokcaliper.experiment.baseline import baseline_from_runs, load_arm_runs
    from tokcaliper.model.timestamps import utc_now_iso
    from tokcaliper.report.gate_view import render_baseline_saved
    from tokcaliper.report.output import emit
    from tokcaliper.store import Store

    with Store(db, create=False) as store:
        source, arm_name, runs = load_arm_runs(store, experiment, session, arm)
        b = baseline_from_runs(name, runs, arm=arm_name, source=source, created_at=utc_now_iso(),
                               commit=commit)
        store.save_baseline(b, replace=replace)
    emit(b, as_json, lambda console: render_baseline_saved(console, b))


@baseline_app.command("list")
def list_cmd(
    db: Annotated[Path, typer.Option("--db", help=DB_HELP)] = Path("tokcaliper.db"),
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """List the stored baselines."""
    from tokcaliper.experiment.baseline import BaselineList
    from tokcaliper.report.gate_view import render_baseline_list
    from tokcaliper.report.output import emit
    from tokcaliper.store import Store

    with Store(db, create=False) as store:
        result = BaselineList(db=str(db), baselines=store.list_baselines())
    emit(result, as_json, lambda console: render_baseline_list(console, result))


@baseline_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="The baseline's name.")],
    db: Annotated[Path, typer.Option("--db", help=DB_HELP)] = Path("tokcaliper.db"),
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Print one baseline: provenance and each headline metric's mean (n, CV) over its runs."""
    from tokcaliper.experiment.baseline import describe_baseline
    from tokcaliper.report.gate_view import render_baseline
    from tokcaliper.report.output import emit
    from tokcaliper.store import Store

    with Store(db, create=False) as store:
        detail = describe_baseline(store.get_baseline(name))
    emit(detail, as_json, lambda console: render_baseline(console, detail))


def run_gate(*, baseline: str, experiment: Optional[str], session: Optional[str],
             arm: Optional[str], metric: str, alpha: float, noise_band: float,
             margin: Optional[float], effect: Optional[float], db: Path, as_json: bool,
             summary_md: Optional[Path], bmf: Optional[Path], github_benchmark: Optional[Path],
             fail_on_inconclusive: bool) -> None:
    """``compare --baseline``: gate, print, write the requested files, exit with the gate's code."""
    from tokcaliper.experiment.analysis import comparison_metrics
    from tokcaliper.experiment.baseline import gate_on_baseline, load_arm_runs
    from tokcaliper.report.gate_view import render_gate, write_gate_files
    from tokcaliper.report.output import emit
    from tokcaliper.store import Store

    with Store(db, create=False) as store:
        b = store.get_baseline(baseline)
        source, _, runs = load_arm_runs(store, experiment, session, arm)
    report = gate_on_baseline(b, runs, new_source=source, metrics=comparison_metrics(metric), alpha=alpha,
                              noise_band=noise_band, margin=margin, effect=effect)
    write_gate_files(report, f"tokcaliper/{b.arm}", summary_md=summary_md, bmf=bmf,
                     github_benchmark_prefix=github_benchmark)
    emit(report, as_json, lambda console: render_gate(report, console))
    if report.outcome == "regression":
        raise typer.Exit(EXIT_REGRESSION)
    if report.outcome == "inconclusive" and fail_on_inconclusive:
        raise typer.Exit(EXIT_GATE_INCONCLUSIVE)
