"""Published AL-per-k tables from CSV, JSON or YAML (``tokcaliper spec table``).

:func:`parse_tables` is pure (text in); :func:`read_window_tables` reads the
file (through :func:`tokcaliper.fileio.read_text`) and builds the command's
result, :class:`WindowTables`.

Accepted shapes:

* CSV with a header: ``k`` and ``al`` columns (``AL`` too), optional
  ``al_cv``, ``al_n``, ``acceptance_rate``, ``throughput``, ``throughput_cv``,
  ``failed`` (the reason a k did not start).
* JSON / YAML: a mapping ``k → AL`` (``{"5": 4.733, "7": 5.177}``), a
  mapping ``k → row`` (``{"5": {"al": 4.733, "al_cv": 0.04}}``), or
  ``{"rows": [{"k": 5, "al": 4.733, …}, …]}``. Such tables may sit anywhere
  in the document; every one found is read and named by its path
  (``al_by_k.thinking_on``). Keys starting with ``_`` (``_about``) are skipped.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path, PurePath
from typing import Any

from pydantic import BaseModel, ValidationError

from tokcaliper.errors import InputError
from tokcaliper.fileio import JSONParseError, check_unique_columns, first_duplicate, loads_json, read_text
from tokcaliper.model.warnings import Caveat
from tokcaliper.specdec.table import KInput, WindowTable, window_table
from tokcaliper.validation import explain

#: Largest table file read (bytes).
MAX_FILE_BYTES = 64 * 1024 * 1024

#: Deepest nesting searched for tables; published tables sit a few levels down.
MAX_DEPTH = 32

_ALIASES = {"AL": "al", "mean_acceptance_length": "al", "acceptance_length": "al", "K": "k",
            "draft_window": "k", "num_speculative_tokens": "k", "error": "failed", "reason": "failed"}


def _is_k(key: Any) -> bool:
    return isinstance(key, int) and not isinstance(key, bool) or (isinstance(key, str) and key.strip().isdigit())


def _row(k: Any, value: Any, where: str) -> KInput:
    if isinstance(value, dict):
        data = {_ALIASES.get(str(a), str(a)): b for a, b in value.items() if not str(a).startswith("_")}
    else:
        data = {"al": value}
    if k is not None:
        data["k"] = k
    data = {a: (None if b == "" else b) for a, b in data.items()}
    try:
        return KInput.model_validate(data)
    except ValidationError as e:
        raise InputError(f"{where}: {explain(e)}") from None


def _find_tables(obj: Any, path: str, out: list[tuple[str, list[KInput]]], depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise InputError(f"{path}: nested more than {MAX_DEPTH} levels deep; no table of AL per k is "
                         "that deep")
    if isinstance(obj, dict):
        keys = [k for k in obj if not str(k).startswith("_")]
        if "rows" in obj and isinstance(obj["rows"], list):
            out.append((path, [_row(None, r, f"{path or 'rows'}[{i}]") for i, r in enumerate(obj["rows"])]))
            return
        if keys and all(_is_k(k) for k in keys):
            out.append((path, [_row(int(k), obj[k], f"{path}.{k}" if path else str(k)) for k in keys]))
            return
        for k in keys:
            _find_tables(obj[k], f"{path}.{k}" if path else str(k), out, depth + 1)


def tables_from_data(data: Any, source: str) -> list[tuple[str, list[KInput]]]:
    """Every AL-per-k table in parsed JSON/YAML ``data``: ``[(name, rows), …]``.

    Raises:
        InputError: no table found, or a row that does not validate (named by its path).
    """
    out: list[tuple[str, list[KInput]]] = []
    try:
        _find_tables(data, "", out)
    except InputError as e:
        raise InputError(f"{source}: {e}") from None
    if not out:
        raise InputError(f"{source}: no table of AL per k found (expected a mapping k → AL, "
                         "k → {al: …}, or rows: [{k: …, al: …}])")
    return out


def _csv_tables(text: str, source: str) -> list[tuple[str, list[KInput]]]:
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames:
        raise InputError(f"{source}: empty CSV")
    check_unique_columns([_ALIASES.get(f.strip(), f.strip()) for f in reader.fieldnames], source)
    fields = {_ALIASES.get(f.strip(), f.strip()) for f in reader.fieldnames}
    if "k" not in fields or ("al" not in fields and "failed" not in fields):
        raise InputError(f"{source}: CSV needs columns k and al (got {', '.join(reader.fieldnames)})")
    rows = []
    for i, rec in enumerate(reader, start=2):
        rows.append(_row(None, {k.strip(): (v or "").strip() for k, v in rec.items() if k}, f"{source} line {i}"))
    if not rows:
        raise InputError(f"{source}: CSV has a header but no rows")
    return [("", rows)]


def parse_tables(text: str, source: str) -> list[tuple[str, list[KInput]]]:
    """The AL-per-k table(s) in ``text``; the format follows ``source``'s suffix
    (.csv, .json, .yaml/.yml; anything else is tried as YAML/JSON, then CSV).

    Args:
        text: the file's content.
        source: the file name, used for the format and in error messages.

    Raises:
        InputError: bad syntax, or no/invalid table (naming the culprit).
    """
    suffix = PurePath(source).suffix.lower()
    if suffix == ".csv":
        return _csv_tables(text, source)
    if suffix == ".json":
        try:
            data = loads_json(text, strict=True)
        except JSONParseError as e:
            raise InputError(f"{source}: {e}") from None
        return tables_from_data(data, source)
    import yaml

    try:
        data = yaml.load(text, Loader=_unique_key_loader())  # noqa: S506 - a SafeLoader subclass
    except _DuplicateYamlKey as e:
        raise InputError(f"{source}: key {e.args[0]!r} is given twice in one mapping (line {e.args[1]}); "
                         "which value to use is ambiguous") from None
    except RecursionError:
        raise InputError(f"{source}: nested too deeply to be a table of AL per k") from None
    except yaml.YAMLError as e:
        if suffix in (".yaml", ".yml"):
            raise InputError(f"{source}: not YAML ({' '.join(str(e).split())[:160]})") from None
        data = None
    if isinstance(data, (dict, list)):
        return tables_from_data(data, source)
    if suffix in (".yaml", ".yml"):
        raise InputError(f"{source}: YAML holds no mapping")
    return _csv_tables(text, source)


class WindowTables(BaseModel):
    """What ``tokcaliper spec table FILE`` prints (``--json`` gives this document).

    Attributes:
        source: the file read, as given.
        tables: one :class:`~tokcaliper.specdec.table.WindowTable` per table found, in file order.
        warnings: every table's caveats (the "not the best buy" warning names its table).
    """

    source: str
    tables: list[WindowTable]
    warnings: list[Caveat] = []


def read_window_tables(path: Path) -> WindowTables:
    """Read ``path`` (at most :data:`MAX_FILE_BYTES`) and build the draft-window table of each
    table in it (:func:`parse_tables`, :func:`~tokcaliper.specdec.table.window_table`).

    Raises:
        InputError: a missing, unreadable or too large file, bad syntax, no or an invalid
            table (naming the culprit).
    """
    text = read_text(path, MAX_FILE_BYTES)
    tables = [window_table(rows, name) for name, rows in parse_tables(text, str(path))]
    return WindowTables(source=str(path), tables=tables, warnings=[w for t in tables for w in t.warnings])


class _DuplicateYamlKey(Exception):
    """A YAML mapping that gives one key twice: ``(key, line)``."""


def _unique_key_loader() -> type:
    """A ``yaml.SafeLoader`` that refuses a mapping giving one key twice (PyYAML keeps the last)."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):  # type: ignore[no-untyped-def]
            keys = [self.construct_object(k, deep=deep) for k, _v in node.value]
            dup = first_duplicate(str(k) for k in keys)
            if dup is not None:
                line = node.value[dup[2] - 1][0].start_mark.line + 1
                raise _DuplicateYamlKey(dup[0], line)
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader
