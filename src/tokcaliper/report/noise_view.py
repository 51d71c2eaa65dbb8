"""Terminal view of a noise-floor report (METHODS.md M1).

Renders :class:`tokcaliper.stats.noise.NoiseFloorReport`; computes nothing.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tokcaliper.numbers import num, percent
from tokcaliper.report.verdict_view import summary_markup
from tokcaliper.stats.noise import NoiseFloorReport

__all__ = ["render_noise_floor"]


def render_noise_floor(console: Console, report: NoiseFloorReport) -> None:
    """Print the noise floor as a table, then the formula (its warnings are caveats of the
    command's result, printed by the warning sink).

    Columns: metric, n (in the title instead when every metric shares it), mean,
    std, CV, its 95% CI, min, max, (max−min)/mean, MDE n=1, MDE n=R (R shown in
    the header when all metrics share it, else "n=R" means each row's own n).
    Undefined values (n = 1) print as "—". Fits 100 columns.

    Args:
        console: a rich console (``tokcaliper.report.output.stdout`` in the CLI).
        report: from :func:`tokcaliper.stats.noise.noise_floor`.
    """
    ns = {m.description.n for m in report.metrics}
    same_n = ns.pop() if len(ns) == 1 else None
    # Two-line headers, one space between columns, names that wrap and n in the title when every metric
    # shares it: the table fits 100 columns with the registry's longest metric name.
    title = "Noise floor (one unchanged configuration" + (
        f", n = {same_n} runs per metric)" if same_n is not None else ")")
    r_label = f"n={same_n}" if same_n is not None else "n=R"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  padding=0)
    cols = ["metric", *([] if same_n is not None else ["n"]), "mean", "std", "CV", "CV\n95% CI",
            "min", "max", "(max−min)\n/mean", "MDE\nn=1", f"MDE\n{r_label}"]
    for col in cols:
        # the metric's name wraps before any figure is cut
        table.add_column(col, justify="left" if col == "metric" else "right", no_wrap=col != "metric")
    for m in report.metrics:
        d = m.description
        ci = ("—" if d.cv_ci95 is None
              else f"{percent(d.cv_ci95[0], decimals=0)}–{percent(d.cv_ci95[1], decimals=0)}")
        table.add_row(escape(m.name), *([] if same_n is not None else [str(d.n)]), num(d.mean, 4),
                      num(d.std, 3), percent(d.cv), ci, num(d.min, 4), num(d.max, 4),
                      percent(d.spread), percent(m.mde_n1), percent(m.mde_nR))
    console.print(table)
    console.print("MDE = 2·CV·√(2/n): smallest difference two arms of n runs each can resolve "
                  "(≈95% two-sided, only ≈50% power; METHODS.md M1, M3).")
    for m in report.metrics:
        if m.explanation:
            console.print(f"[yellow]explained:[/yellow] {escape(m.explanation)}")
    if report.effect is not None:
        for m in report.metrics:
            console.print(summary_markup(m.verdict, label=m.name))
