"""Terminal view of the metric registry (``tokcaliper metrics``). Computes nothing."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from tokcaliper.model.metric_list import MetricList
from tokcaliper.report.text import esc

__all__ = ["render_metric_list"]


def render_metric_list(console: Console, result: MetricList) -> None:
    """One row per metric: name, unit, better direction, whether compared by default, and how
    it is computed (with its noise floor and the option it needs, where it has them)."""
    t = Table(title=f"{len(result.metrics)} per-run metrics", title_justify="left")
    for col in ("name", "unit", "better", "noise floor", "computed as"):
        t.add_column(col, overflow="fold")
    for m in result.metrics:
        scale = ("" if m.noise_abs is None else
                 f"; compared on b − a, noise floor ±{m.noise_abs:g} {m.unit} (its resolution)")
        needs = "" if m.needs is None else f"; only in runs with {m.needs}"
        t.add_row(esc(m.name), esc(m.unit), m.better, "default" if m.headline else "bench --metric",
                  esc(m.computed + scale + needs))
    console.print(t)
