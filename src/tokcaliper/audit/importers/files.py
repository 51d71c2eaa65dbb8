"""Reading files and folders of records: raw bytes first, then rows, then importers.

Raw bytes are read first and parsed from the bytes (METHODS.md A9: fetch to
disk, then parse; never a shell round-trip). JSON is parsed with
``strict=False`` so control characters inside strings (notes fields) are kept
and never break parsing.

Inputs: a ``.json`` file (one record, a list, or ``{"records": [...]}``),
``.jsonl`` (one record per line), ``.csv`` (one record per row; dotted column
names such as ``model.name`` for nested fields), or a folder of such files.
Each row goes to :func:`~tokcaliper.audit.importers.dispatch.record_from_row`.

A file that cannot be read or parsed at all raises
:class:`~tokcaliper.errors.InputError` naming the file (and line/column); a
malformed row or record is a :class:`~tokcaliper.audit.importers.base.Problem`
naming file, record index (and line) and field, and is skipped.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from tokcaliper import numbers as fmt
from tokcaliper.audit.importers.base import ImportResult, Problem, show
from tokcaliper.audit.importers.dispatch import record_from_row
from tokcaliper.errors import InputError
from tokcaliper.model.warnings import CSV_MISSING_CELLS, Caveat
from tokcaliper.fileio import (JSONParseError, check_max_bytes, check_unique_columns, decode_text, human_bytes,
                               jsonl_lines, loads_json, os_reason, read_bytes)

__all__ = ["DEFAULT_MAX_BYTES", "check_max_bytes", "decode_text", "human_bytes", "load_records",
           "os_reason", "parse_json", "parse_record_ref", "read_raw"]

#: Default ceiling on one input file (bytes); ``--max-bytes`` raises it.
DEFAULT_MAX_BYTES = 256 * 1024 * 1024


def read_raw(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """Read a file's raw bytes (A9): regular files only, the ceiling enforced on bytes read
    (see :func:`tokcaliper.fileio.read_bytes`).

    Raises:
        InputError: missing/unreadable file, a directory, a device or FIFO, or larger than ``max_bytes``.
    """
    return read_bytes(path, max_bytes)


_ParseError = JSONParseError


def _loads(text: str) -> Any:
    """:func:`tokcaliper.fileio.loads_json` with ``strict=False`` (control characters in strings kept)."""
    try:
        return loads_json(text, strict=False)
    except JSONParseError as e:
        msg = str(e)
        if "nested too deeply" in msg:
            msg += ": not a record file"
        elif "digits" in msg:
            msg += ": no published figure is that long"
        raise JSONParseError(msg) from None


def parse_json(text: str, path: Path, where: str = "") -> Any:
    """Parsed JSON of a file's text (``strict=False``).

    Raises:
        InputError: ``"{path}{where}: invalid JSON at line L column C …"`` and the other parse failures.
    """
    try:
        return _loads(text)
    except _ParseError as e:
        raise InputError(f"{path}{where}: {e}") from None


def _csv_reason(e: csv.Error, start: int, end: int, header: bool = False) -> str:
    msg = str(e)
    if "unexpected end of data" in msg:
        span = f"line {start}" if end <= start else f"lines {start}–{end}"
        tail = "" if header else f" ({span} skipped)"
        return f"unbalanced quote: a quoted cell opened on line {start} is never closed{tail}"
    if "expected after" in msg:
        return f"stray quote on line {start}: text follows a closing quote (quote the whole cell, double inner quotes)"
    return f"malformed CSV on line {start}: {msg}"


def _csv_header(names: list[str], path: Path) -> list[str]:
    """Validate a CSV header: named, unique, and no column both a value and a group.

    Raises:
        InputError: an unnamed column, a duplicate name, or conflicting dotted names
            (``model`` and ``model.name``: ``model`` cannot be text and a group at once).
    """
    clean = [n.strip() for n in names]
    for i, n in enumerate(clean, 1):
        if not n:
            raise InputError(f"{path}: header column {i} has no name")
        if any(not part for part in n.split(".")):
            raise InputError(f"{path}: header column {i} {n!r}: empty part in a dotted name")
    check_unique_columns(clean, str(path))
    for n in clean:
        for m in clean:
            if m.startswith(n + "."):
                raise InputError(f"{path}: header columns {n!r} and {m!r} conflict: {n!r} cannot be both a "
                                 f"value and a group of fields (use {n + '.name'!r}-style names only)")
    return clean


def _csv_rows(text: str, path: Path) -> tuple[list[tuple[int | str, Any]], list[Problem], list[Caveat]]:
    """Rows of a CSV file, strict about quotes and cell counts.

    A cell may be as long as the file (notes can be long): the csv module's
    131072-character field limit is raised to the file's length while parsing.
    A malformed row (unbalanced or stray quote, more cells than columns) is a
    :class:`Problem` by record index and line and is skipped; a row with fewer
    cells than columns is read with the missing cells empty and a warning.
    """
    old_limit = csv.field_size_limit()
    csv.field_size_limit(max(old_limit, len(text) + 1))
    try:
        reader = csv.reader(io.StringIO(text), strict=True)
        try:
            header = next(reader)
        except csv.Error as e:
            raise InputError(f"{path}: header: {_csv_reason(e, 1, reader.line_num, header=True)}") from None
        names = _csv_header(header, path)
        rows: list[tuple[int | str, Any]] = []
        problems: list[Problem] = []
        warnings: list[Caveat] = []
        idx = 0
        while True:
            start = reader.line_num + 1
            try:
                cells = next(reader)
            except StopIteration:
                break
            except csv.Error as e:
                problems.append(Problem(str(path), f"{idx} (line {start})", "",
                                        _csv_reason(e, start, reader.line_num)))
                idx += 1
                continue
            if not any(c.strip() for c in cells):
                continue  # blank line
            if len(cells) > len(names):
                problems.append(Problem(str(path), f"{idx} (line {start})", "",
                                        f"{len(cells)} cells for {len(names)} columns (an unquoted comma in a "
                                        "value?); row skipped"))
            else:
                if len(cells) < len(names):
                    warnings.append(CSV_MISSING_CELLS.caveat(
                        path=path, index=idx, line=start, cells=len(cells), columns=len(names),
                        missing=", ".join(names[len(cells):])))
                rows.append((idx, _unflatten(dict(zip(names, cells)))))
            idx += 1
        return rows, problems, warnings
    finally:
        csv.field_size_limit(old_limit)


def _rows(path: Path, max_bytes: int) -> tuple[list[tuple[int | str, Any]], list[Problem], dict[str, Any], list[Caveat]]:
    """Rows of one file: ``[(index, row)]``, per-line problems, file-level context, warnings."""
    data = read_raw(path, max_bytes)
    if not data.strip():
        raise InputError(f"{path}: empty file")
    text = decode_text(data, path)
    suffix = path.suffix.lower()
    problems: list[Problem] = []
    ctx: dict[str, Any] = {}
    if suffix == ".jsonl":
        rows: list[tuple[int | str, Any]] = []
        for n, line in enumerate(jsonl_lines(text)):
            if not line.strip():
                continue
            try:
                rows.append((len(rows), _loads(line)))
            except _ParseError as e:
                problems.append(Problem(str(path), f"{len(rows)} (line {n + 1})", "", str(e)))
                rows.append((len(rows), None))
        return [(i, r) for i, r in rows if r is not None], problems, ctx, []
    if suffix == ".csv":
        csv_rows, problems, warnings = _csv_rows(text, path)
        return csv_rows, problems, ctx, warnings
    doc = parse_json(text, path)
    if isinstance(doc, dict) and isinstance(doc.get("records"), list):
        ctx = {k: v for k, v in doc.items() if k != "records" and not isinstance(v, (list, dict))}
        return list(enumerate(doc["records"])), problems, ctx, []
    if isinstance(doc, list):
        return list(enumerate(doc)), problems, ctx, []
    if isinstance(doc, dict):
        return [(0, doc)], problems, ctx, []
    raise InputError(f"{path}: expected a JSON object or list of records, got {show(doc)}")


def _unflatten(row: dict[str, str | None]) -> dict[str, Any]:
    """CSV row with dotted names → nested dict; empty cells → None.

    The header was validated by :func:`_csv_header`, so no name is both a
    leaf and a group.
    """
    out: dict[str, Any] = {}
    for key, val in row.items():
        v: Any = None if val is None or val.strip() == "" else val
        parts = key.split(".")
        d = out
        for p in parts[:-1]:
            d = d.setdefault(p, {})
        d[parts[-1]] = v
    return out


def load_records(paths: list[Path] | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> ImportResult:
    """Import records from files and folders.

    Args:
        paths: files (``.json``, ``.jsonl``, ``.csv``) or folders of them.
        max_bytes: per-file size ceiling.

    Returns:
        :class:`ImportResult` with valid records (``provenance`` filled: importer,
        file, index, assumptions) and problems for skipped ones.

    Raises:
        InputError: a path that does not exist, an unparseable file, or no
            readable file in a folder.
    """
    check_max_bytes(max_bytes)
    result = ImportResult()
    for p in [paths] if isinstance(paths, Path) else paths:
        p = Path(p)
        if p.is_dir():
            files = sorted(f for f in p.iterdir()
                           if f.suffix.lower() in (".json", ".jsonl", ".csv") and f.is_file())
            if not files:
                raise InputError(f"{p}: folder holds no .json, .jsonl or .csv files")
        elif p.exists():
            files = [p]
        else:
            raise InputError(f"{p}: no such file or folder")
        for f in files:
            try:
                rows, problems, ctx, warnings = _rows(f, max_bytes)
            except InputError as e:
                if not p.is_dir():
                    raise  # a file named on its own: its error is the answer
                # one unreadable file of a folder is skipped with its reason, like a malformed record
                result.problems.append(Problem(str(f), "-", "", f"file skipped: {e}"))
                continue
            result.files.append(str(f))
            result.problems += problems
            result.warnings += warnings
            for idx, row in rows:
                rec, prob = record_from_row(row, file=str(f), index=idx, context=ctx)
                if rec is not None:
                    result.records.append(rec)
                if prob is not None:
                    result.problems.append(prob)
    return result


def parse_record_ref(ref: str) -> tuple[Path, int | None]:
    """``"file.json#3"`` → ``(Path("file.json"), 3)``; ``"file.json"`` → ``(…, None)``.

    Raises:
        InputError: a ``#`` suffix that is not an integer.
    """
    path, sep, idx = ref.rpartition("#")
    if not sep or Path(ref).exists():
        return Path(ref), None
    try:
        return Path(path), int(idx)
    except ValueError:
        raise InputError(f"{ref}: record selector after '#' must be an index") from None
