"""Parse published AL-per-k tables from CSV, JSON or YAML text (for ``tokcaliper spec table``; no I/O).

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
import json
from pathlib import PurePath
from typing import Any

from pydantic import ValidationError

from tokcaliper.errors import InputError
from tokcaliper.spec.table import KInput

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
        err = e.errors()[0]
        msg = str(err["msg"]).removeprefix("Value error, ")
        loc = ".".join(str(x) for x in err["loc"])
        raise InputError(f"{where}: {loc + ': ' if loc else ''}{msg}") from None


def _find_tables(obj: Any, path: str, out: list[tuple[str, list[KInput]]]) -> None:
    if isinstance(obj, dict):
        keys = [k for k in obj if not str(k).startswith("_")]
        if "rows" in obj and isinstance(obj["rows"], list):
            out.append((path, [_row(None, r, f"{path or 'rows'}[{i}]") for i, r in enumerate(obj["rows"])]))
            return
        if keys and all(_is_k(k) for k in keys):
            out.append((path, [_row(int(k), obj[k], f"{path}.{k}" if path else str(k)) for k in keys]))
            return
        for k in keys:
            _find_tables(obj[k], f"{path}.{k}" if path else str(k), out)


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
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"{source}: not JSON (line {e.lineno}: {e.msg})") from None
        return tables_from_data(data, source)
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        if suffix in (".yaml", ".yml"):
            raise InputError(f"{source}: not YAML ({' '.join(str(e).split())[:160]})") from None
        data = None
    if isinstance(data, (dict, list)):
        return tables_from_data(data, source)
    if suffix in (".yaml", ".yml"):
        raise InputError(f"{source}: YAML holds no mapping")
    return _csv_tables(text, source)
