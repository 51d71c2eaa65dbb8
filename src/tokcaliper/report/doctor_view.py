"""Terminal view of a machine check (``tokcaliper doctor``; issue 21). Computes nothing."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tokcaliper.model.doctor import MachineCheck

__all__ = ["render_check_warnings", "render_machine_check"]

_MARK = {"ok": "[green]ok[/green]", "warn": "[yellow]warn[/yellow]", "info": "info",
         "unknown": "[dim]unknown[/dim]"}


def render_machine_check(console: Console, check: MachineCheck) -> None:
    """One block per area: a line per finding (status, what was found), then under a
    warning or a note why it matters and the command that would change it. Long lines
    wrap under their own text, not under the status column."""
    areas = {"host": "host", "gpu": "GPU", "server": "server"}
    for area, title in areas.items():
        items = [f for f in check.findings if f.area == area]
        if not items:
            continue
        console.print(f"[bold]{title}[/bold]")
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=1)
        grid.add_column(width=7, no_wrap=True)
        grid.add_column(overflow="fold")
        for f in items:
            grid.add_row("", _MARK[f.status], escape(f.found))
            if f.status in ("warn", "info") and f.why:
                grid.add_row("", "", f"why: {escape(f.why)}")
            if f.status in ("warn", "info") and f.fix:
                grid.add_row("", "", f"change: {escape(f.fix)}")
        console.print(grid)
    n = len(check.warnings)
    console.print(f"{n} item(s) that can make runs differ; tokcaliper changes nothing itself."
                  if n else "nothing found that would make runs differ.")


def render_check_warnings(check: MachineCheck) -> None:
    """Print one named warning per ``warn`` finding (before measuring), through the warning
    sink (:func:`tokcaliper.report.output.warn`: ``tokcaliper: warning: machine-check CODE: …``
    on stderr)."""
    from tokcaliper.report.output import warn

    for c in check.caveats():
        warn(c)
