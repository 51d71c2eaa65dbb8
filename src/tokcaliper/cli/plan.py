"""CLI: ``tokcaliper plan`` — how many runs before running (METHODS.md M3).

Thin: parse the options, call :func:`tokcaliper.stats.resolution.plan` (``--cv``) or
:func:`tokcaliper.experiment.stored_runs.plan_from_runs` (the CV of stored runs), emit the
:class:`~tokcaliper.stats.resolution.Plan` with :func:`tokcaliper.report.plan_view.render_plan`.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Optional

import typer

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app
from tokcaliper.errors import InputError
from tokcaliper.report.output import emit


def parse_run_ids(text: str, option: str) -> list[int]:
    """Run ids from ``"3,4,5"`` or ``"3-7"`` (or a mix), in order, each once.

    Raises:
        InputError: empty list, a part that is not an id or range, or an id
            given twice (a repeated run would count as two repetitions).
    """
    ids: list[int] = []
    for part in (p.strip() for p in text.split(",")):
        lo, sep, hi = part.partition("-")
        try:
            span = range(int(lo), int(hi) + 1) if sep else range(int(part), int(part) + 1)
        except ValueError:
            raise InputError(f"{option} must list run ids like 3,4,5 or 3-7, got {text!r}") from None
        if len(span) > 100_000:
            raise InputError(f"{option}: range {part} is longer than 100,000 runs")
        ids.extend(span)
    if not ids or any(i < 1 for i in ids):
        raise InputError(f"{option} must list positive run ids like 3,4,5 or 3-7, got {text!r}")
    dupes = sorted(i for i, k in Counter(ids).items() if k > 1)
    if dupes:
        raise InputError(f"{option} lists run {', '.join(map(str, dupes))} more than once")
    return ids


@app.command("plan")
def plan_cmd(
    effect: float = typer.Option(..., "--effect", help="Expected relative difference Δ, e.g. 0.05 for 5%."),
    cv: Optional[float] = typer.Option(None, "--cv", help="Coefficient of variation of the metric, e.g. 0.15."),
    n: int = typer.Option(5, "--n", help="Planned runs per arm."),
    run_seconds: Optional[float] = typer.Option(None, "--run-seconds", help="Seconds per run (for the budget)."),
    cooldown: float = typer.Option(0.0, "--cooldown", help="Seconds of rest after each run."),
    alpha: float = typer.Option(0.05, "--alpha", help="Two-sided significance level."),
    power: float = typer.Option(0.8, "--power", help="Target power for the power-based n."),
    noise_band: float = typer.Option(
        0.01, "--noise-band", help="compare's noise band: the verdict (and its power) needs the CI beyond it."),
    design: str = typer.Option(
        "paired", "--design",
        help="The analysis the verdict will come from: paired (interleaved runs, the experiment "
             "default) or independent (blocked order, unpaired arms)."),
    from_runs: Optional[str] = typer.Option(None, "--from-runs", help="Take the CV from stored runs: ID[,ID...]."),
    metric: Optional[str] = typer.Option(
        None, "--metric",
        help="Metric name for --from-runs (`tokcaliper metrics` lists them; e.g. aggregate_output_tok_s)."),
    db: Path = typer.Option(Path("tokcaliper.db"), "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """Runs per arm and wall-clock budget to see an effect, before running (METHODS.md M3).

    Prints the quick formulas MDE = 2·CV·√(2/n) and n ≈ 8·(CV/Δ)² (only about
    50% power) beside the exact power-based n, the n a faster/slower verdict
    needs (its CI must clear the noise band), the budget, and a plain verdict
    that follows the verdict's n.
    """
    if (cv is None) == (from_runs is None):
        raise InputError("give exactly one of --cv or --from-runs")
    settings = {"n": n, "run_seconds": run_seconds, "cooldown": cooldown, "alpha": alpha, "power": power,
                "noise_band": noise_band, "design": design}
    if from_runs is not None:
        if not metric:
            raise InputError("--from-runs needs --metric NAME (which stored metric to take the CV of)")
        from tokcaliper.experiment.stored_runs import plan_from_runs

        result = plan_from_runs(db, parse_run_ids(from_runs, "--from-runs"), metric, effect, **settings)
    else:
        from tokcaliper.stats.resolution import plan  # lazy: statsmodels is slow to import

        result = plan(cv, effect, cv_source="--cv", **settings)  # type: ignore[arg-type]
    from tokcaliper.report.plan_view import render_plan

    emit(result, as_json, lambda console: render_plan(result, console))
