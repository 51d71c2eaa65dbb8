"""Terminal view of ``tokcaliper analyze``: the split, covariates, drift, the adjusted
comparison, the telemetry gate (methods: docs/analyze.md).

Renders :class:`tokcaliper.stats.analyze_report.AnalyzeReport`; ``--json`` dumps the
same object, and its ``warnings`` are printed on stderr by
:func:`tokcaliper.report.output.emit`. Computes nothing. Column names, units and
other user text are escaped, never read as rich markup.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tokcaliper.numbers import num, percent
from tokcaliper.stats.adjust import AdjustedComparison
from tokcaliper.stats.analyze_report import AnalyzeReport
from tokcaliper.stats.gates import RunGate
from tokcaliper.stats.spread import Analysis

__all__ = ["render_analyze"]

METHODS = "methods: docs/analyze.md (Engelman–Hartigan split, Spearman, Mann–Kendall, ANCOVA)"


def _signed2(x: float | None) -> str:
    """A signed correlation or effect size to two decimals (``+0.94``); None → "—"."""
    return num(x, 2, min_decimals=2, signed=True)


def _analysis(a: Analysis, console: Console) -> None:
    console.print(escape(a.sentence))
    d = a.description
    console.print(escape(f"all runs: n = {d.n}, mean {num(d.mean, 4)} {a.unit}, CV {percent(d.cv)}, "
                         f"min {num(d.min, 4)}, max {num(d.max, 4)}"))
    s = a.split
    for name, g in (("low", s.low), ("high", s.high)):
        console.print(escape(f"  {name} group: n = {g.n}, mean {num(g.mean, 4)}, CV {percent(g.cv)}"))
    gap = ("" if s.gap_over_within_sd is None
           else f" = {num(s.gap_over_within_sd, 2, min_decimals=1)} within-group sd")
    console.print(escape(
        f"best split at {num(s.threshold, 4)}: gap {num(s.gap, 3)}{gap}; R² = {num(s.r2, 3, min_decimals=3)}, "
        f"p = {num(s.p, 2)} (Monte Carlo, {s.null_draws:,} normal samples of n = {s.n}; α/2 = {s.alpha:g})"))
    if a.covariates:
        t = Table(title="covariates, strongest first (Spearman ρ with the metric)", title_justify="left")
        for col in ("covariate", "measured", "n", "ρ", "p", "p (Holm)", "separates groups r"):
            t.add_column(col, justify="right" if col not in ("covariate", "measured") else "left")
        for r in a.covariates:
            t.add_row(escape(r.label), r.measured, str(r.n), _signed2(r.rho), num(r.p, 2),
                      num(r.p_holm, 2), _signed2(r.separation))
        console.print(t)
    for name, why in a.skipped_covariates.items():
        console.print(escape(f"not ranked: {name}: {why}"), style="dim")
    if a.drift is not None:
        dr = a.drift
        verdict = "drift" if dr.drifting else "no monotonic drift"
        console.print(escape(
            f"run order: {verdict} (Mann–Kendall S = {dr.s}, τ = {_signed2(dr.tau)}, p = {num(dr.p, 2)} "
            f"{dr.method}, α/2 = {dr.alpha:g}; Theil–Sen slope {num(dr.slope_per_run, 3, signed=True)} per run, "
            f"95% CI {num(dr.slope_ci95[0], 3, signed=True)} to {num(dr.slope_ci95[1], 3, signed=True)})"))
    for line in a.advice:
        console.print(f"[yellow]advice:[/yellow] {escape(line)}")


def _adjusted(adj: AdjustedComparison, console: Console) -> None:
    console.print(escape(f"adjusted comparison of {adj.arms[1]} vs {adj.arms[0]} for {adj.covariate}:"))
    for line in adj.arithmetic:
        console.print(f"  {escape(line)}")


def _gates(gates: list[RunGate], unflagged: Analysis | None, console: Console) -> None:
    flagged = [g for g in gates if g.flagged]
    checked = sum(g.checked for g in gates)
    console.print(f"telemetry gate: {len(flagged)} of {checked} run(s) with telemetry flagged"
                  + ("" if checked == len(gates) else f" ({len(gates) - checked} without telemetry)"))
    for g in flagged:
        for r in g.reasons:
            console.print(f"  [red]flag[/red] run {g.run_id}: {escape(r.detail)}")
    if unflagged is not None:
        console.print(escape(f"without the flagged run(s): {unflagged.sentence}"))


def render_analyze(rep: AnalyzeReport, console: Console) -> None:
    """Print ``rep``: the source; the split (n, mean, CV of all runs and of each group, the
    test's R² and p), ranked covariates and drift, or the adjusted comparison's arithmetic;
    the telemetry gate; notes; the methods line."""
    console.print(f"[bold]tokcaliper analyze[/bold] — {escape(rep.source)}")
    if rep.analysis is not None:
        _analysis(rep.analysis, console)
    if rep.adjusted is not None:
        _adjusted(rep.adjusted, console)
    if rep.gates:
        _gates(rep.gates, rep.analysis_unflagged, console)
    for note in rep.notes:
        console.print(escape(f"note: {note}"), style="dim")
    console.print(METHODS, style="dim")
