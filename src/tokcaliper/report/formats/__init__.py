"""One exporter per report format behind one interface (issue 19 items 1 and 3).

As hyperfine's ``export/`` has one exporter per format with the same method,
every format here is an :class:`Exporter`: ``format`` (its ``--format`` name),
``suffix`` (the default file suffix) and ``document(report) -> str`` over the
same :data:`Reportable` results — an experiment, a bench session, a load sweep
or an audit of record files:

===========  =========================================  ==========
format       exporter                                   suffix
===========  =========================================  ==========
``html``     :class:`~.html.HtmlExporter` (offline page)  ``.html``
``markdown`` :class:`~.markdown.MarkdownExporter`         ``.md``
``json``     :class:`~.jsondoc.JsonExporter`              ``.json``
===========  =========================================  ==========

HTML and Markdown write the same outline (:mod:`.pages`, :mod:`.document`);
JSON writes the typed data they are drawn from. :func:`write_report` writes one
document to a file and returns what was written (:class:`ReportWritten`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from tokcaliper.errors import InputError
from tokcaliper.report.formats.html import HtmlExporter
from tokcaliper.report.formats.jsondoc import JsonExporter
from tokcaliper.report.formats.markdown import MarkdownExporter
from tokcaliper.report.formats.pages import Reportable, headline, outline

__all__ = ["EXPORTERS", "Exporter", "HtmlExporter", "JsonExporter", "MarkdownExporter", "ReportWritten",
           "Reportable", "exporter", "headline", "outline", "render_written", "write_report"]


@runtime_checkable
class Exporter(Protocol):
    """A report format.

    Attributes:
        format: the ``--format`` name. suffix: the default file suffix (with its dot).
    """

    format: str
    suffix: str

    def document(self, report: Reportable) -> str:
        """The whole document of ``report`` as text (UTF-8 when written)."""
        ...


#: ``--format`` name → its exporter.
EXPORTERS: dict[str, Exporter] = {e.format: e for e in (HtmlExporter(), MarkdownExporter(), JsonExporter())}


def exporter(fmt: str) -> Exporter:
    """The exporter of ``--format fmt``.

    Raises:
        InputError: an unknown format (the message lists the known ones).
    """
    try:
        return EXPORTERS[fmt]
    except KeyError:
        raise InputError(f"--format must be {', '.join(EXPORTERS)}, got {fmt!r}") from None


class ReportWritten(BaseModel):
    """What ``tokcaliper report`` wrote.

    Attributes:
        kind: experiment, session, sweep or audit. id: the experiment/session id, or the
            audited files joined by ``, ``. file: the path written. format: the format name.
        verdict: the verdict class; sentence: the page's first sentence. bytes: UTF-8 size.
    """

    kind: str
    id: str
    file: str
    format: str
    verdict: str
    sentence: str
    bytes: int


def _report_id(report: Reportable) -> str:
    for attr in ("analysis", "session"):
        v = getattr(report, attr, None)
        if v is not None:
            return v if isinstance(v, str) else v.id
    return ", ".join(getattr(report, "files", []))


def write_report(report: Reportable, fmt: str, path: Path | None = None) -> ReportWritten:
    """Write ``report`` as format ``fmt`` to ``path`` (default ``report-ID`` + the format's suffix).

    The file is written beside itself first and renamed, so a reader never sees half a page.

    Raises:
        InputError: an unknown format, or the file cannot be written (naming it).
    """
    exp = exporter(fmt)
    text = exp.document(report)
    kind, sentence, verdict = headline(report)
    rid = _report_id(report)
    if path is None:
        stem = rid if kind != "audit" else Path(rid.split(", ")[0]).stem
        path = Path(f"report-{stem}{exp.suffix}")
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as e:
        raise InputError(f"-o {path}: cannot write: {e.strerror or e}") from None
    return ReportWritten(kind=kind, id=rid, file=str(path), format=exp.format, verdict=verdict,
                         sentence=sentence, bytes=len(text.encode()))


def render_written(written: ReportWritten, console: object) -> None:
    """The text view: the page's first sentence, then ``wrote PATH``."""
    console.print(f"{written.sentence}\nwrote {written.file}", markup=False)  # type: ignore[attr-defined]
