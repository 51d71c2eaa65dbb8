"""Writers of :class:`~tokcaliper.experiment.export.ExportTables`: CSV, Parquet, JSON.

One writer per format behind :func:`write_export`; each returns the paths it
wrote. CSV floats are written with ``repr`` (shortest round-trip form), so a
re-read gives the stored numbers bit for bit; a missing value is an empty
cell; ``itl_ms`` (a list) is its values joined by ``;``. Parquet keeps the
list as a list column (pyarrow, the ``parquet`` extra). JSON is one file
holding the three tables and their column lists. :func:`render_export` is the
terminal view of what was written (:class:`~tokcaliper.experiment.export.ExportSummary`).
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path
from typing import Any, Literal

from rich.console import Console

from tokcaliper.errors import InputError
from tokcaliper.experiment.export import ExportSummary, ExportTables

__all__ = ["FORMATS", "TABLES", "render_export", "write_export"]

Format = Literal["csv", "parquet", "json"]
FORMATS: tuple[str, ...] = ("csv", "parquet", "json")
TABLES = ("runs", "samples", "requests")


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return ";".join(_cell(v) for v in value)
    return str(value)


def _replace(tmp: Path, path: Path) -> Path:
    os.replace(tmp, path)  # a reader never sees half a file
    return path


def _write_csv(tables: ExportTables, prefix: Path) -> list[Path]:
    out = []
    for name in TABLES:
        columns, rows = tables.table(name)
        path = prefix.with_name(f"{prefix.name}.{name}.csv")
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(columns)
            w.writerows([_cell(row.get(c)) for c in columns] for row in rows)
        out.append(_replace(tmp, path))
    return out


def _write_parquet(tables: ExportTables, prefix: Path) -> list[Path]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("--format parquet needs pyarrow: pip install 'tokcaliper[parquet]'") from None
    out = []
    for name in TABLES:
        columns, rows = tables.table(name)
        table = pa.Table.from_pylist([{c: row.get(c) for c in columns} for row in rows]) if rows \
            else pa.table({c: pa.array([], pa.null()) for c in columns})
        path = prefix.with_name(f"{prefix.name}.{name}.parquet")
        tmp = path.with_name(path.name + ".tmp")
        pq.write_table(table.select(columns), tmp)
        out.append(_replace(tmp, path))
    return out


def _write_json(tables: ExportTables, prefix: Path) -> list[Path]:
    doc: dict[str, Any] = {"source": tables.source, "columns": {}}
    for name in TABLES:
        columns, rows = tables.table(name)
        doc["columns"][name] = columns
        doc[name] = [{c: row.get(c) for c in columns} for row in rows]
    path = prefix.with_name(f"{prefix.name}.json")
    tmp = path.with_name(path.name + ".tmp")
    # allow_nan=False: a non-finite value would make invalid JSON; the registry never yields one
    tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n",
                   encoding="utf-8")
    return [_replace(tmp, path)]


def write_export(tables: ExportTables, prefix: Path, fmt: str) -> list[Path]:
    """Write ``tables`` as ``PREFIX.runs.csv``/``.samples.csv``/``.requests.csv`` (csv),
    the same three ``.parquet`` files, or one ``PREFIX.json``.

    Args:
        tables: what to write. prefix: path without extension (its folder must
            exist). fmt: ``csv``, ``parquet`` or ``json``.

    Returns:
        The paths written, in table order.

    Raises:
        InputError: an unknown format, pyarrow missing for Parquet, or a folder
            that is missing or not writable (named).
    """
    writers = {"csv": _write_csv, "parquet": _write_parquet, "json": _write_json}
    if fmt not in writers:
        raise InputError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    folder = prefix.parent if str(prefix.parent) else Path(".")
    if not folder.is_dir():
        raise InputError(f"-o {prefix}: folder {folder} does not exist")
    try:
        return writers[fmt](tables, prefix)
    except OSError as e:
        raise InputError(f"-o {prefix}: cannot write: {e.strerror or e}") from None


def render_export(console: Console, result: ExportSummary) -> None:
    """The source with its row counts per table, then each file written."""
    console.print(f"{result.source}: {result.runs} runs, {result.samples} samples, {result.requests} requests",
                  markup=False)
    for p in result.files:
        console.print(f"  wrote {p}", markup=False)
