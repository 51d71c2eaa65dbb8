"""Terminal view of ``tokcaliper plan``: the resolution of the ruler before running (METHODS.md M3).

Renders :class:`tokcaliper.stats.resolution.Plan`; ``--json`` dumps the same
object, and its ``warnings`` are printed on stderr by
:func:`tokcaliper.report.output.emit`. Computes nothing.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tokcaliper.numbers import num, percent
from tokcaliper.report.verdict_view import print_verdict
from tokcaliper.stats.resolution import Plan, human_duration

__all__ = ["render_plan"]


def render_plan(p: Plan, console: Console) -> None:
    """Print ``p``: its inputs; MDE, runs per arm (quick, power-based, for a verdict) and the
    budget side by side; the single-run MDE; the power reached; the verdict with its
    arithmetic; the sources."""
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
        t.add_row(f"runs per arm for a verdict ({p.design}, CI beyond {band})", f"{p.n_quick_gated}",
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
    console.print("sources: " + escape("; ".join(p.verdict.sources)), style="dim")
