"""The format-neutral outline of a report page: typed blocks every exporter writes.

A report (an experiment, a bench session, a sweep, an audit) is first turned
into one :class:`Document` — title, the verdict sentence, then blocks in
reading order — by its outline function (:mod:`tokcaliper.report.formats.pages`).
The HTML and Markdown exporters write the *same* blocks, so the two formats
cannot drift apart in content: Markdown leaves the plots out (naming each one)
and keeps every sentence, table and command.

Plots are held as a function that draws them (:attr:`Plot.draw`), so a Markdown
summary never spends time in matplotlib.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from matplotlib.figure import Figure

__all__ = ["Block", "Bullets", "Code", "Document", "Heading", "OutlineExporter", "Paragraph", "Plot", "Table"]


@dataclass(frozen=True)
class Heading:
    """A section heading (HTML ``<h2>``, Markdown ``####``)."""

    text: str


@dataclass(frozen=True)
class Paragraph:
    """One paragraph of text; ``muted`` for provenance lines (smaller, grey in HTML)."""

    text: str
    muted: bool = False


@dataclass(frozen=True)
class Table:
    """A table: ``head`` column names, ``rows`` of already formatted cells (same length)."""

    head: list[str]
    rows: list[list[str]]


@dataclass(frozen=True)
class Plot:
    """A figure: ``alt`` names it (the HTML alt text, the Markdown placeholder); ``draw`` builds it."""

    alt: str
    draw: Callable[[], Figure]


@dataclass(frozen=True)
class Code:
    """Preformatted lines (commands, arithmetic), written verbatim."""

    lines: list[str]


@dataclass(frozen=True)
class Bullets:
    """A list of items (caveats, outcomes, findings)."""

    items: list[str]


Block = Heading | Paragraph | Table | Plot | Code | Bullets


@dataclass
class Document:
    """One report page.

    Attributes:
        kind: ``"experiment"``, ``"session"``, ``"sweep"`` or ``"audit"``.
        title: the page's heading (``<title>`` and ``<h1>``; Markdown ``###``).
        sentence: the verdict (or the audit's findings) in one sentence, shown first.
        verdict: its class — a verdict word (``faster``, ``slower``, ``equivalent``,
            ``inconclusive``), ``regression``, ``fail``, ``warn``, ``pass`` or ``noise-floor``.
        subtitle: one provenance line under the title (what ran, how many runs).
        blocks: the rest of the page in reading order.
    """

    kind: str
    title: str
    sentence: str
    verdict: str
    subtitle: str = ""
    blocks: list[Block] = field(default_factory=list)

    @property
    def plots(self) -> list[Plot]:
        """The page's figures, in order."""
        return [b for b in self.blocks if isinstance(b, Plot)]


class OutlineExporter:
    """An exporter that writes a report's outline (:func:`~tokcaliper.report.formats.pages.outline`).

    The HTML and Markdown exporters differ only in ``format``, ``suffix`` and
    :meth:`write`; they share :meth:`document`, so both draw the same outline.
    """

    format: str
    suffix: str

    def write(self, doc: Document) -> str:
        """``doc`` in this format (each subclass gives its writer)."""
        raise NotImplementedError

    def document(self, report: object) -> str:
        """The document of ``report`` (any :data:`~tokcaliper.report.formats.Reportable`).

        Raises:
            TypeError: not a reportable result.
        """
        from tokcaliper.report.formats.pages import outline  # pages draws on this module

        return self.write(outline(report))  # type: ignore[arg-type]

