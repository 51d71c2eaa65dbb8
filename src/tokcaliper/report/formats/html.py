"""The HTML exporter: one self-contained page that opens offline (issue 19 item 3).

Images are embedded as ``data:`` PNGs, the CSS is inline, and the page has no
script, no font and no link to the network (``tests/report`` opens it in
headless Chromium with the network blocked and checks that nothing was asked for).
"""

from __future__ import annotations

import base64
import html
import re

from tokcaliper.report import plots
from tokcaliper.report.formats.document import (Bullets, Code, Document, Heading, OutlineExporter, Paragraph,
                                                 Plot, Table)

__all__ = ["CSS", "HtmlExporter", "write_html"]

#: The page's whole style sheet (inline; system fonts only).
CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:980px;margin:2em auto;
padding:0 1em;color:#222}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
.verdict{font-size:1.15em;padding:.7em 1em;border-left:5px solid #0072B2;background:#f3f7fb}
.verdict.slower,.verdict.regression,.verdict.fail{border-color:#D55E00;background:#fdf3ee}
.verdict.faster,.verdict.pass{border-color:#009E73;background:#eef8f4}
.verdict.warn,.verdict.inconclusive{border-color:#E69F00}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}
td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left}th{background:#f6f6f6}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
img{max-width:100%;height:auto;display:block;margin:.6em 0}
code,pre{font:13px/1.4 ui-monospace,Menlo,Consolas,monospace;background:#f6f6f6}
pre{padding:.6em;overflow-x:auto;white-space:pre-wrap}
.muted{color:#666;font-size:.9em}
"""


def _e(text: object) -> str:
    return html.escape("" if text is None else str(text))


#: A figure cell: a number first (a sign, ×, ≤ … before it), at most a short tail of units.
_FIGURE = re.compile(r"^[\s+\-−±×x~≈<>≤≥]*\d[\d.,]*(e[+-]?\d+)?\s*\S{0,12}(\s*…\s*\S+)?$")


#: Cells that say "no figure" and leave a column's alignment to the others.
_BLANK = frozenset({"", "n/a", "—", "–", "-", "None"})


def _numeric_columns(rows: list[list[object]], width: int) -> list[bool]:
    """Per column: every filled cell is a figure (right-aligned; words read from the left)."""
    cells = [[c for r in rows if i < len(r) and (c := str(r[i]).strip()) not in _BLANK] for i in range(width)]
    return [bool(col) and all(_FIGURE.match(c) for c in col) for col in cells]


def _cell(tag: str, text: object, num: bool) -> str:
    return f'<{tag} class="num">{_e(text)}</{tag}>' if num else f"<{tag}>{_e(text)}</{tag}>"


def _block(b: object) -> str:
    if isinstance(b, Heading):
        return f"<h2>{_e(b.text)}</h2>"
    if isinstance(b, Paragraph):
        return f'<p class="muted">{_e(b.text)}</p>' if b.muted else f"<p>{_e(b.text)}</p>"
    if isinstance(b, Table):
        num = _numeric_columns([list(r) for r in b.rows], len(b.head))
        out = ["<table><tr>" + "".join(_cell("th", h, n) for h, n in zip(b.head, num)) + "</tr>"]
        out += ["<tr>" + "".join(_cell("td", c, n) for c, n in zip(r, num)) + "</tr>" for r in b.rows]
        return "\n".join(out) + "</table>"
    if isinstance(b, Plot):
        data = base64.b64encode(plots.to_bytes(b.draw())).decode("ascii")
        return f'<img alt="{_e(b.alt)}" src="data:image/png;base64,{data}">'
    if isinstance(b, Code):
        return "<pre>" + _e("\n".join(b.lines)) + "</pre>"
    if isinstance(b, Bullets):
        return "<ul>" + "".join(f"<li>{_e(i)}</li>" for i in b.items) + "</ul>"
    raise TypeError(f"not a report block: {type(b).__name__}")


def write_html(doc: Document) -> str:
    """``doc`` as one self-contained HTML document (UTF-8 text): title, the verdict
    sentence (``<p id="verdict" class="verdict VERDICT">``), then every block; plots
    drawn and embedded as base64 PNG ``data:`` URIs."""
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        '<meta name=viewport content="width=device-width,initial-scale=1">',
        f"<title>tokcaliper {_e(doc.kind)}: {_e(doc.title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_e(doc.title)}</h1>",
    ]
    if doc.subtitle:
        parts.append(f'<p class="muted">{_e(doc.subtitle)}</p>')
    parts.append(f'<p class="verdict {_e(doc.verdict)}" id="verdict">{_e(doc.sentence)}</p>')
    parts += [_block(b) for b in doc.blocks]
    parts.append('<p class="muted">Methods: docs/METHODS.md of tokcaliper (M1 noise floor, '
                 "M2 MDE and runs needed, M9 verdict gate; Part A for the audit checks).</p>"
                 "</body></html>")
    return "\n".join(parts) + "\n"


class HtmlExporter(OutlineExporter):
    """:class:`~tokcaliper.report.formats.Exporter` of the offline HTML page (``.html``)."""

    format = "html"
    suffix = ".html"

    def write(self, doc: Document) -> str:
        """``doc`` as the offline HTML page (:func:`write_html`)."""
        return write_html(doc)
