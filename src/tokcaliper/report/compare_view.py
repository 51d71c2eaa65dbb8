"""Terminal view of ``tokcaliper compare``: arms table, tests, pairs, verdict, arithmetic.

Renders :class:`tokcaliper.stats.ab.ABAnalysis`, :class:`~tokcaliper.stats.ab.MultiComparison`
and :class:`~tokcaliper.stats.ab.SingleNumbers`; ``--json`` dumps the same objects.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from tokcaliper.stats.ab import ABAnalysis, MultiComparison, SingleNumbers

__all__ = ["render_analysis", "render_multi", "render_single"]

_STYLE = {"faster": "green", "slower": "red", "equivalent": "green", "inconclusive": "yellow"}


def _arms_table(an: ABAnalysis) -> Table:
    u = f" ({an.unit})" if an.unit else ""
    t = Table(show_header=True, header_style="bold")
    for h, j in (("arm", "left"), ("n", "right"), (f"mean{u}", "right"), ("sd", "right"),
                 ("CV", "right"), ("min", "right"), ("max", "right")):
        t.add_column(h, justify=j)  # type: ignore[arg-type]
    for x in (an.a, an.b):
        t.add_row(escape(x.name), str(x.n), f"{x.mean:.4g}", f"{x.sd:.3g}",
                  "—" if x.cv is None else f"{100 * x.cv:.1f}%",
                  "—" if x.min is None else f"{x.min:g}", "—" if x.max is None else f"{x.max:g}")
    return t


def render_analysis(an: ABAnalysis, console: Console, header: bool = True) -> None:
    """Print one metric's comparison."""
    na, nb = an.a.name, an.b.name
    lvl = f"{100 * (1 - an.alpha):g}%"
    if header:
        console.print(f"[bold]tokcaliper compare[/bold] — {escape(nb)} against {escape(na)} "
                      f"(baseline), {escape(an.metric)}, "
                      f"{'higher' if an.higher_is_better else 'lower'} is better")
    else:
        console.print(f"[bold]{escape(an.metric)}[/bold] "
                      f"({'higher' if an.higher_is_better else 'lower'} is better)")
    console.print(_arms_table(an))
    ci = an.ratio_of_means_ci
    console.print(escape(f"ratio of means {nb}/{na} = {an.ratio_of_means:.3f}"
                         + ("" if ci is None else f" ({lvl} CI {ci[0]:.3f} … {ci[1]:.3f})")))
    w = an.welch
    console.print(escape(f"Welch's t = {w.t:.2f}, df = {w.df:.1f}, p = {w.p:.3f}"
                         + ("  — shown beside the paired analysis, which decides"
                            if an.decided_by == "paired" else "  — decides")))
    if an.paired is not None:
        pr = an.paired
        pci = "" if pr.ratio_ci is None else f" ({lvl} CI {pr.ratio_ci[0]:.3f} … {pr.ratio_ci[1]:.3f})"
        ptxt = "t undefined" if pr.t is None else f"t = {pr.t:.2f}, df = {pr.df}, p = {pr.p:.3f}"
        console.print(escape(f"paired on log ratios ({pr.n} pairs): ratio {pr.ratio:.3f}{pci}, {ptxt}"))
        console.print("pair ratios in run order: " + " ".join(f"{r:.3f}" for r in pr.ratios))
    if an.running:
        console.print("verdict after each pair:")
        for s in an.running:
            console.print(f"  {escape(s.text)}")
    v = an.variance
    bf = "" if v.bf_p is None else f"Brown–Forsythe W = {v.bf_w:.2f}, p = {v.bf_p:.3f}; "
    f = "F undefined" if v.f is None else f"F-test F = {v.f:.3g}, p = {v.f_p:.3f}"
    console.print(escape(f"variances: {bf}{f}"))
    if an.mde is not None:
        need = "more than 10⁹" if an.runs_needed is None else str(an.runs_needed)
        console.print(escape(f"MDE with these runs: ±{100 * an.mde:.1f}%; runs per arm for "
                             f"±{100 * an.target_effect:.1f}% at power 0.8: {need}"))
    if an.tost is not None:
        t = an.tost
        console.print(escape(f"equivalence (TOST ±{100 * t.margin:.1f}%): p = {t.p:.3g}, "
                             f"{100 * (1 - 2 * t.alpha):g}% CI {t.ci[0]:.3f} … {t.ci[1]:.3f}"))
    style = _STYLE[an.verdict]
    console.print(f"[bold {style}]verdict:[/bold {style}] {escape(an.report.summary)}")
    console.print("arithmetic:")
    for line in an.report.arithmetic:
        console.print(f"  {escape(line)}")
    for n in an.notes:
        console.print(f"[yellow]note:[/yellow] {escape(n)}")
    console.print("sources: " + escape("; ".join(an.report.sources)), style="dim")


def render_multi(mc: MultiComparison, console: Console) -> None:
    """Print several metrics' comparisons and the Holm note."""
    if not mc.metrics:
        return
    first = mc.metrics[0]
    console.print(f"[bold]tokcaliper compare[/bold] — {escape(first.b.name)} against "
                  f"{escape(first.a.name)} (baseline), {len(mc.metrics)} metrics")
    console.print(escape(mc.note))
    for an in mc.metrics:
        console.print()
        render_analysis(an, console, header=False)


def render_single(sn: SingleNumbers, console: Console) -> None:
    """Print a single-number comparison (no verdict, M10)."""
    console.print("[bold]tokcaliper compare[/bold] — one number per arm (M10)")
    console.print(f"[bold yellow]{escape(sn.report.summary)}[/bold yellow]")
    console.print("arithmetic:")
    for line in sn.report.arithmetic:
        console.print(f"  {escape(line)}")
    console.print("sources: " + escape("; ".join(sn.report.sources)), style="dim")
