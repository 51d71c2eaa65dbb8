"""Rows already in this package's own :class:`~tokcaliper.model.record.Record` shape.

Any JSON object, JSONL line or CSV row (dotted column names such as
``model.name`` for nested fields; see :mod:`.files`) whose keys include a
Record field. CSV cells are text; pydantic reads numeric text as numbers.
``power_w`` may be one cell of readings separated by ``;`` (``"99;100"``).
Every value's source field is its own path (``hardware.gpu_name``).
"""

from __future__ import annotations

import re
from typing import Any

from tokcaliper.audit.importers.base import FieldError, RecordBuilder, fill_from_launch, leaf_paths, show
from tokcaliper.model.record import Record


class NativeImporter:
    """Our own Record shape (the fallback: detected last)."""

    name = "native"

    def detect(self, row: Any) -> bool:
        """True for an object sharing at least one key with :class:`Record`."""
        return isinstance(row, dict) and bool(set(row) & set(Record.model_fields))

    def to_record(self, row: dict[str, Any], *, filename: str | None = None) -> Record:
        """See :func:`record_from_native`."""
        return record_from_native(row)


def record_from_native(row: dict[str, Any]) -> Record:
    """A row already in :class:`Record` shape (CSV cells coerced; ``power_w`` may be ``"99;100"``).

    Raises:
        FieldError: a bad field, by its path (``power_w[1]``, ``hardware.gpu_count``).
    """
    row = dict(row)
    pw = row.get("power_w")
    if isinstance(pw, str):
        parts = [x for x in re.split(r"[;, ]+", pw.strip()) if x]
        try:
            row["power_w"] = [float(x) for x in parts]
        except ValueError:
            raise FieldError("power_w", f"expected numbers separated by ';', got {show(pw)}") from None
    elif pw is None and "power_w" in row:
        row["power_w"] = []
    rec = RecordBuilder(row, leaf_paths(row)).build()
    return fill_from_launch(rec)
