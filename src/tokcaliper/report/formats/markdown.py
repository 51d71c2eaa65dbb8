"""The Markdown exporter: the page's content for a CI job summary (``$GITHUB_STEP_SUMMARY``).

The same blocks as the HTML page (:mod:`tokcaliper.report.formats.document`):
the verdict sentence in bold first, then every table, sentence and command;
each plot is named in one italic line instead of drawn, so the summary stays
text and small. Pipes inside cells are escaped.
"""

from __future__ import annotations

from tokcaliper.report.formats.document import (Bullets, Code, Document, Heading, OutlineExporter, Paragraph,
                                                 Plot, Table)

__all__ = ["MarkdownExporter", "markdown_table", "write_markdown"]


def markdown_table(head: list[str], rows: list[list[str]]) -> list[str]:
    """A GitHub-flavoured Markdown table, one line per row (``|`` in cells escaped)."""
    def cell(s: object) -> str:
        return str(s).replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(cell(h) for h in head) + " |", "|" + "---|" * len(head),
            *("| " + " | ".join(cell(c) for c in r) + " |" for r in rows)]


def _block(b: object) -> list[str]:
    if isinstance(b, Heading):
        return [f"#### {b.text}"]
    if isinstance(b, Paragraph):
        return [b.text]
    if isinstance(b, Table):
        return markdown_table(b.head, b.rows)
    if isinstance(b, Plot):
        return [f"_plot: {b.alt} (drawn in the HTML report)_"]
    if isinstance(b, Code):
        return ["```", *b.lines, "```"]
    if isinstance(b, Bullets):
        return [f"- {i}" for i in b.items]
    raise TypeError(f"not a report block: {type(b).__name__}")


def write_markdown(doc: Document) -> str:
    """``doc`` as Markdown: ``### title``, the subtitle, ``**sentence**``, then each block."""
    lines = [f"### {doc.title}", ""]
    if doc.subtitle:
        lines += [doc.subtitle, ""]
    lines += [f"**{doc.sentence}**", ""]
    for b in doc.blocks:
        lines += [*_block(b), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


class MarkdownExporter(OutlineExporter):
    """:class:`~tokcaliper.report.formats.Exporter` of the Markdown summary (``.md``)."""

    format = "markdown"
    suffix = ".md"

    def write(self, doc: Document) -> str:
        """``doc`` as the Markdown summary (:func:`write_markdown`)."""
        return write_markdown(doc)
