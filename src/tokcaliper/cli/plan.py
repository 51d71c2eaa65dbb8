"""CLI: ``tokcaliper plan`` — how many runs before running (METHODS.md M3).

Thin: parse options, get the CV (``--cv`` or stored runs), call
:func:`tokcaliper.stats.resolution.plan`, render the :class:`Plan` as text or JSON.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app
from tokcaliper.errors import InputError
from tokcaliper.numbers import num, percent
from tokcaliper.report.output import emit
from tokcaliper.report.verdict_view import print_verdict

if TYPE_CHECKING:
    from tokcaliper.stats.resolution import Plan


def _render(p: Plan, console: Console) -> None:
    from tokcaliper.stats.resolution import human_duration

    cv, eff = p.cv, p.effect
    timing = ("no run time given (--run-seconds): no budget" if p.run_seconds is None
              else f"{p.run_seconds:g} s per run + {p.cooldown_seconds:g} s cool-down")
    console.print("[bold]tokcaliper plan[/bold] — resolution of the ruler (METHODS.md M3)")
    eff_txt = num(100 * eff, 6, trim=True) + "%"  # as given
    console.print(escape(
        f"inputs: CV {percent(cv)} ({p.cv_source}), expected effect Δ {eff_txt}, "
        f"n = {p.n} runs per arm, α = {p.alpha:g}, power {p.power:g}; {timing}"))
    t = Table(show_header=True, header_style="bold")
    t.add_column("")
    t.add_column("quick (≈50% power)", justify="right")
    t.add_column(f"power {p.power:g} (statsmodels)", justify="right")
    mde_pw = "— (n<2)" if p.mde_power_n is None else percent(p.mde_power_n)
    t.add_row(f"MDE at n={p.n} per arm: 2·CV·√(2/n)", percent(p.mde_quick_n), mde_pw)
    t.add_row(f"runs per arm for Δ={eff_txt}: 8·(CV/Δ)² (test alone)", f"{p.n_quick}", f"{p.n_power}")
    band = f"±{num(100 * p.noise_band, 4, trim=True)}%"
    if not p.verdict_reachable:
        t.add_row(f"runs per arm for a verdict (CI beyond {band})", "none: Δ ≤ band", "none: Δ ≤ band")
    else:
        from tokcaliper.stats.resolution import n_quick

        q = n_quick(cv, eff - p.noise_band)
        t.add_row(f"runs per arm for a verdict ({p.design}, CI beyond {band})", f"{q}",
                  "more than 10⁹" if p.n_power_gated is None else f"{p.n_power_gated}")
    if p.run_seconds is not None:
        per = p.run_seconds + p.cooldown_seconds
        t.add_row(f"budget: 2 arms × n × {per:g} s",
                  human_duration(p.budget_seconds_quick), human_duration(p.budget_seconds_power))
    console.print(t)
    if p.run_seconds is not None:
        console.print(f"budget at n={p.n}: 2 × {p.n} × {p.run_seconds + p.cooldown_seconds:g} s ≈ "
                      f"{human_duration(p.budget_seconds_n)}")
    console.print(f"single runs (n=1 per arm, METHODS.md M10): MDE 2·CV·√2 = {percent(p.mde_quick_1)}")
    pn = ("" if p.power_at_n is None
          else f"; power of n={p.n} against Δ: {percent(p.power_at_n, decimals=0)}")
    console.print(f"power actually reached by the quick n={p.n_quick}: "
                  f"{percent(p.power_of_quick, decimals=0)}{pn}")
    if p.power_gated_n is not None:
        console.print(f"power of a verdict at n={p.n} ({p.design}, the CI must clear the noise band): "
                      f"{percent(p.power_gated_n, decimals=0)}")
    print_verdict(console, p.verdict, sources=False)
    for w in p.warnings:
        console.print(f"[yellow]note:[/yellow] {escape(w)}")
    console.print("sources: " + escape("; ".join(p.verdict.sources)), style="dim")


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


def _cv_from_runs(db: Path, from_runs: str, metric: Optional[str]) -> tuple[float, str, int]:
    """Load the metric's values for the run ids and return (CV, source text, n)."""
    if not metric:
        raise InputError("--from-runs needs --metric NAME (which stored metric to take the CV of)")
    ids = parse_run_ids(from_runs, "--from-runs")
    from tokcaliper.store import load_metric_values

    values = load_metric_values(db, ids, metric)
    from tokcaliper.stats.describe import describe  # lazy: scipy is slow to import

    d = describe(values, f"metric {metric!r} of runs {','.join(map(str, ids))}")
    if d.cv is None or d.cv <= 0:
        raise InputError(f"--from-runs: metric {metric!r} over runs {','.join(map(str, ids))} has n={d.n}, "
                         f"CV {'undefined' if d.cv is None else 0}; need ≥ 2 differing values")
    ci = "" if d.cv_ci95 is None else f", 95% CI {percent(d.cv_ci95[0])[:-1]}–{percent(d.cv_ci95[1])}"
    src = (f"runs {','.join(map(str, ids))}, metric '{metric}': n={d.n}, mean {num(d.mean, 4, trim=True)}, "
           f"CV {percent(d.cv)}{ci}")
    return d.cv, src, d.n


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
    cv_n = None
    source = "--cv"
    if from_runs is not None:
        cv, source, cv_n = _cv_from_runs(db, from_runs, metric)
    from tokcaliper.stats.resolution import plan  # lazy: statsmodels is slow to import

    result = plan(cv, effect, n=n, run_seconds=run_seconds, cooldown=cooldown, alpha=alpha,
                  power=power, cv_source=source, cv_n=cv_n, noise_band=noise_band,
                  design=design)
    emit(result, as_json, lambda console: _render(result, console))
