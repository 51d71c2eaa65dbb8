"""The JSON exporter: the report's typed data as one JSON document (``model_dump``).

What the HTML and Markdown pages are drawn from, for a script: the same result
object, dumped with :func:`tokcaliper.report.output.to_jsonable` (NaN and ±inf
become ``null``), plus ``kind``, ``sentence`` and ``verdict`` — the first line of
the page — so a reader of the JSON gets the same answer first.
"""

from __future__ import annotations

import json

from pydantic import BaseModel

__all__ = ["JsonExporter"]


class JsonExporter:
    """:class:`~tokcaliper.report.formats.Exporter` of the report data (``.json``)."""

    format = "json"
    suffix = ".json"

    def document(self, report: object) -> str:
        """``{"kind", "sentence", "verdict", "report": <model_dump>}`` as indented JSON text.

        Raises:
            TypeError: not a reportable result.
        """
        from tokcaliper.report.formats.pages import headline
        from tokcaliper.report.output import to_jsonable

        if not isinstance(report, BaseModel):
            raise TypeError(f"not a reportable result: {type(report).__name__}")
        kind, sentence, verdict = headline(report)  # type: ignore[arg-type]
        doc = {"kind": kind, "sentence": sentence, "verdict": verdict, "report": to_jsonable(report)}
        return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
