"""CLI: ``tokcaliper analyze`` — one cloud or clumps, their cause, drift; adjusted comparison.

Thin: parse the options, call :func:`tokcaliper.stats.analyze_report.analyze_csv` (a CSV,
one row per run) or :func:`tokcaliper.experiment.stored_runs.analyze_stored` (stored runs),
emit the :class:`~tokcaliper.stats.analyze_report.AnalyzeReport` with
:func:`tokcaliper.report.analyze_view.render_analyze`. Methods: docs/analyze.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app
from tokcaliper.errors import InputError
from tokcaliper.report.output import emit


@app.command("analyze")
def analyze_cmd(
    csv_file: Optional[Path] = typer.Option(None, "--csv", help="CSV with one row per run, in run order."),
    value: Optional[str] = typer.Option(None, "--value", help="CSV column with the metric (e.g. tok_s)."),
    runs: Optional[str] = typer.Option(None, "--runs", help="Stored run ids: 3,4,5 or 3-7."),
    session: Optional[str] = typer.Option(None, "--session", help="Every stored run of this session."),
    metric: str = typer.Option("aggregate_output_tok_s", "--metric",
                               help="Metric of stored runs (`tokcaliper metrics` lists them)."),
    arm: Optional[str] = typer.Option(None, "--arm", help="Only stored runs of this arm."),
    arm_column: Optional[str] = typer.Option(None, "--arm-column", help="CSV column with the arm label."),
    adjust_for: Optional[str] = typer.Option(
        None, "--adjust-for",
        help="Compare two arms adjusted for this covariate (measured at run start, e.g. sm_clock_start_mhz)."),
    linear: bool = typer.Option(False, "--linear", help="With --adjust-for: model the metric, not its log "
                                                        "(effect = difference instead of ratio)."),
    unit: Optional[str] = typer.Option(None, "--unit", help="Unit of the CSV value column, e.g. tok/s."),
    alpha: float = typer.Option(0.05, "--alpha", help="Family-wise level (split and trend at α/2 each)."),
    reference_clock: Optional[float] = typer.Option(
        None, "--reference-clock", help="Default GPU clock, MHz, for the telemetry gate "
                                        "(default: the highest clock seen over the runs)."),
    db: Path = typer.Option(Path("tokcaliper.db"), "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """One cloud or clumps? Which covariate explains them? Drift over run order? (METHODS.md M2)

    On n ≥ 5 runs of one configuration: the best two-group split and its test,
    covariates ranked by rank correlation, a Mann–Kendall trend test, and the
    telemetry gate of stored runs. With --adjust-for on two arms: the arm
    difference with and without adjusting for that covariate (ANCOVA).
    """
    sources = [x is not None for x in (csv_file, runs, session)]
    if sum(sources) != 1:
        raise InputError("give exactly one of --csv FILE, --runs IDS or --session ID")
    settings = {"arm": arm, "adjust_for": adjust_for, "linear": linear, "alpha": alpha}
    if csv_file is not None:
        if not value:
            raise InputError("--csv needs --value COLUMN (the metric column)")
        from tokcaliper.stats.analyze_report import analyze_csv

        rep = analyze_csv(csv_file, value, arm_column=arm_column, unit=unit, **settings)  # type: ignore[arg-type]
    else:
        if value is not None or arm_column is not None:
            raise InputError("--value and --arm-column are for --csv; stored runs use --metric and their arm")
        from tokcaliper.cli.plan import parse_run_ids
        from tokcaliper.experiment.stored_runs import analyze_stored
        from tokcaliper.store import Store

        ids = None if runs is None else parse_run_ids(runs, "--runs")
        with Store(db, create=False) as store:
            rep = analyze_stored(store, run_ids=ids, session=session, metric=metric,
                                 reference_clock_mhz=reference_clock, **settings)  # type: ignore[arg-type]
    from tokcaliper.report.analyze_view import render_analyze

    emit(rep, as_json, lambda console: render_analyze(rep, console))
