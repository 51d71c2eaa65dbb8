"""Terminal view of ``tokcaliper import`` (:class:`~tokcaliper.audit.importers.run_files.ImportSummary`)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from tokcaliper.audit.importers.run_files import ImportSummary
from tokcaliper.numbers import num
from tokcaliper.report.text import esc, plain

__all__ = ["render_import"]


def render_import(console: Console, result: ImportSummary) -> None:
    """One row per stored run (id, arm, tool, n, samples, aggregate tok/s, TTFT p50), then each
    importer note once and each record left out."""
    t = Table(title=f"{len(result.runs)} run(s) imported into session {esc(result.session)} of {esc(result.db)}",
              title_justify="left")
    for col in ("id", "arm", "rep", "tool", "benchmark", "n", "samples", "agg tok/s", "TTFT p50 ms"):
        t.add_column(col, justify="right" if col not in ("arm", "tool", "benchmark") else "left")
    for x in result.runs:
        t.add_row(str(x.id), esc(x.arm), str(x.repetition + 1), esc(f"{x.tool} {x.tool_version or ''}".strip()),
                  esc(x.benchmark or "-"), str(x.completed), str(x.requests_stored),
                  num(x.aggregate_output_tok_s, 4), num(x.ttft_p50_ms))
    console.print(t)
    console.print("n = completed requests the tool reports; figures follow each tool's definitions "
                  "(docs/import.md); `tokcaliper show ID` lists the field mapping.")
    seen: list[str] = []
    for x in result.runs:
        seen += [n for n in x.notes if n not in seen]
    for n in seen:
        console.print(plain(f"note: {n}"), markup=False)
    for s in result.skipped:
        console.print(plain(f"skipped: {s}"), markup=False)
