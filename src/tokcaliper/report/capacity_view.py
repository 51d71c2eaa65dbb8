"""Terminal view of ``tokcaliper capacity``: attainment by rate, the fit, the capacity with its CI."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from tokcaliper.experiment.capacity import CapacityResult
from tokcaliper.numbers import num, percent
from tokcaliper.report.text import esc

__all__ = ["render_capacity"]


def render_capacity(console: Console, res: CapacityResult) -> None:
    """Print ``res``: the table of rates (per-run attainments, mean, monotone fit), the fit's
    arithmetic, then the capacity with its bootstrap CI, or which way it is not bracketed."""
    e = res.estimate
    console.print(f"[bold]tokcaliper capacity[/bold]  SLO {esc(res.slo)}, target {percent(e.target)} "
                  f"attainment; experiment {esc(res.experiment)} ({esc(res.status)}) in {esc(res.db)}")
    t = Table(title=f"SLO attainment by offered rate ({esc(res.arrival)} arrivals)", title_justify="left")
    for col in ("rate req/s", "runs", "attainment per run", "mean", "monotone fit", "meets target"):
        t.add_column(col, justify="right")
    for p in e.points:
        t.add_row(num(p.rate_rps, trim=True), str(len(p.attainments)),
                  " ".join(percent(a) for a in p.attainments), percent(p.mean), percent(p.fitted),
                  "yes" if p.fitted >= e.target else "no")
    console.print(t)
    for line in e.arithmetic:
        console.print(f"  {esc(line)}", soft_wrap=True)
    if e.bracket == "bracketed":
        assert e.capacity_rps is not None and e.between is not None
        ci = ("no CI (a rate has one run)" if e.ci95 is None
              else f"95% CI {num(e.ci95[0])}–{num(e.ci95[1])} req/s over runs")
        console.print(f"[bold]capacity at {percent(e.target)} attainment: {num(e.capacity_rps)} req/s[/bold] "
                      f"({ci}; between the tried rates {num(e.between[0], trim=True)} and "
                      f"{num(e.between[1], trim=True)})")
        if e.grid_note:
            console.print(f"  [yellow]note:[/yellow] {esc(e.grid_note)}")
        if e.below_share or e.above_share:
            console.print(f"  [yellow]note:[/yellow] {percent(e.below_share + e.above_share)} of the bootstrap "
                          "replicates were not bracketed by the tried rates: a CI end at a tried rate means "
                          "'at or beyond it'; add rates there")
    elif e.bracket == "above_all":
        console.print(f"[bold yellow]not bracketed:[/bold yellow] every tried rate meets {percent(e.target)}; "
                      f"the capacity is above {num(e.points[-1].rate_rps, trim=True)} req/s — try higher --rates")
    else:
        console.print(f"[bold yellow]not bracketed:[/bold yellow] no tried rate meets {percent(e.target)}; "
                      f"the capacity is below {num(e.points[0].rate_rps, trim=True)} req/s — try lower --rates")
    if res.invalid_runs_counted:
        console.print(f"  {res.invalid_runs_counted} run(s) flagged invalid for their error rate are counted "
                      "(their failed requests miss the SLO)")
    if res.left_out_runs:
        console.print("  left out (the server died during them): "
                      + ", ".join(f"#{i}" for i in res.left_out_runs))
    for o in res.outcomes:
        console.print(f"  [bold red]outcome[/bold red] {esc(o)}")
