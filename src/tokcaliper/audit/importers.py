"""Importers: published results in many shapes → validated :class:`Record` s.

The only audit module that reads files. Raw bytes are read first and parsed
from the bytes (METHODS.md A9: fetch to disk, then parse; never a shell
round-trip). JSON is parsed with ``strict=False`` so control characters inside
strings (notes fields) are kept and never break parsing.

Inputs: a ``.json`` file (one record, a list, or ``{"records": [...]}``),
``.jsonl`` (one record per line), ``.csv`` (one record per row; dotted column
names such as ``model.name`` for the native shape), or a folder of such files.
Row shapes recognised (one function each):

* native — this package's :class:`Record` fields (:func:`record_from_native`);
* LocalMaxxing snapshot rows (``hfId``, ``observedTokS`` …) and live rows
  (``model{hfId,…}``, ``tokSOut`` …) (:func:`record_from_localmaxxing`);
* ``vllm bench serve --save-result`` JSON (:func:`record_from_vllm_bench`);
* ``llama-bench -o json`` rows (:func:`record_from_llama_bench`);
* a llama-server ``/v1/chat/completions`` response with ``timings``
  (:func:`record_from_llama_server_response`).

A malformed record is reported by file, index and field (:class:`Problem`) and
skipped; the others are returned. A file that cannot be parsed at all raises
:class:`~tokcaliper.errors.InputError`.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from tokcaliper.audit.facts.params import ParamFacts
from tokcaliper.audit.launch import parse_launch
from tokcaliper.errors import InputError
from tokcaliper.model.record import Record

#: Default ceiling on one input file (bytes); ``--max-bytes`` raises it.
DEFAULT_MAX_BYTES = 256 * 1024 * 1024


@dataclass
class Problem:
    """A record that could not be imported: where and why (plain words, no Python internals)."""

    file: str
    index: int | str
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: record {self.index}"
        return f"{where}: field {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


@dataclass
class ImportResult:
    """Records imported from one or more files, the ones skipped, and warnings.

    ``warnings`` are one-line notes about input that was read but looks off
    (a CSV row with fewer cells than columns); the CLI prints them on stderr.
    """

    records: list[Record] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class _FieldError(ValueError):
    """A source field that cannot be mapped; ``field`` is the user's own field name."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field = field_name


# --------------------------------------------------------------------------- reading


def human_bytes(n: float) -> str:
    """``512`` → ``"512 bytes"``, ``20_480`` → ``"20.5 kB"``, ``10_000_000`` → ``"10 MB"`` (SI units)."""
    if n < 1000:
        return f"{int(n)} byte{'s' if n != 1 else ''}"
    for unit, scale in (("kB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12)):
        if n < scale * 1000 or unit == "TB":
            out = f"{n / scale:g}" if n % scale == 0 else f"{n / scale:.1f}"
            return f"{out} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def check_max_bytes(max_bytes: int) -> None:
    """Validate the ``--max-bytes`` ceiling.

    Raises:
        InputError: a ceiling that is not a positive whole number of bytes.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise InputError(f"--max-bytes {max_bytes!r}: must be a positive number of bytes")


def read_raw(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """Read a file's raw bytes (A9).

    Raises:
        InputError: missing/unreadable file, a directory, or larger than ``max_bytes``.
    """
    check_max_bytes(max_bytes)
    if path.is_dir():
        raise InputError(f"{path}: is a directory (give a file, or a folder of .json files)")
    try:
        size = path.stat().st_size
    except OSError as e:
        raise InputError(f"{path}: cannot read ({_os_reason(e)})") from None
    if size > max_bytes:
        raise InputError(f"{path}: {human_bytes(size)} is over the {human_bytes(max_bytes)} limit "
                         "(raise it with --max-bytes)")
    try:
        return path.read_bytes()
    except OSError as e:
        raise InputError(f"{path}: cannot read ({_os_reason(e)})") from None


def _os_reason(e: OSError) -> str:
    """An OS error in plain words (``"permission denied"``), without ``[Errno N]``."""
    return (e.strerror or "input/output error").lower()


def _text(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (bad byte at offset {e.start})") from None


class _ParseError(ValueError):
    """JSON that cannot be parsed, with a plain one-line reason."""


def _loads(text: str) -> Any:
    """``json.loads`` (``strict=False``) with every failure turned into :class:`_ParseError`.

    Besides syntax errors this covers the two limits of Python's parser that
    hostile or broken files reach: nesting deeper than the interpreter's
    recursion limit (RecursionError) and integers longer than
    ``sys.get_int_max_str_digits()`` (ValueError, CVE-2020-10735 guard).
    """
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError as e:
        cut = e.pos >= len(text.rstrip()) - 1 or e.msg.startswith("Unterminated string")
        what = "truncated JSON" if cut else "invalid JSON"
        ch = repr(text[e.pos]) if e.pos < len(text) else "end of file"
        raise _ParseError(f"{what} at line {e.lineno} column {e.colno} (near {ch}): {e.msg}") from None
    except RecursionError:
        raise _ParseError(f"JSON nested too deeply (more than about {sys.getrecursionlimit()} levels of "
                          "[ or {): not a record file") from None
    except ValueError as e:
        if "digits" in str(e):
            raise _ParseError(f"a JSON integer has more than {sys.get_int_max_str_digits()} digits: "
                              "no published figure is that long") from None
        raise _ParseError(f"invalid JSON ({e})") from None


def _json(text: str, path: Path, where: str = "") -> Any:
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
    seen: dict[str, int] = {}
    for i, n in enumerate(clean, 1):
        if not n:
            raise InputError(f"{path}: header column {i} has no name")
        if any(not part for part in n.split(".")):
            raise InputError(f"{path}: header column {i} {n!r}: empty part in a dotted name")
        if n in seen:
            raise InputError(f"{path}: header names column {n!r} twice (columns {seen[n]} and {i}); "
                             "which value to use is ambiguous")
        seen[n] = i
    for n in clean:
        for m in clean:
            if m.startswith(n + "."):
                raise InputError(f"{path}: header columns {n!r} and {m!r} conflict: {n!r} cannot be both a "
                                 f"value and a group of fields (use {n + '.name'!r}-style names only)")
    return clean


def _csv_rows(text: str, path: Path) -> tuple[list[tuple[int | str, Any]], list[Problem], list[str]]:
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
        warnings: list[str] = []
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
                    warnings.append(f"{path}: record {idx} (line {start}): {len(cells)} cells for {len(names)} "
                                    f"columns; missing cells ({', '.join(names[len(cells):])}) read as empty")
                rows.append((idx, _unflatten(dict(zip(names, cells)))))
            idx += 1
        return rows, problems, warnings
    finally:
        csv.field_size_limit(old_limit)


def _rows(path: Path, max_bytes: int) -> tuple[list[tuple[int | str, Any]], list[Problem], dict[str, Any], list[str]]:
    """Rows of one file: ``[(index, row)]``, per-line problems, file-level context, warnings."""
    data = read_raw(path, max_bytes)
    if not data.strip():
        raise InputError(f"{path}: empty file")
    text = _text(data, path)
    suffix = path.suffix.lower()
    problems: list[Problem] = []
    ctx: dict[str, Any] = {}
    if suffix == ".jsonl":
        rows: list[tuple[int | str, Any]] = []
        for n, line in enumerate(text.splitlines()):
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
    doc = _json(text, path)
    if isinstance(doc, dict) and isinstance(doc.get("records"), list):
        ctx = {k: v for k, v in doc.items() if k != "records" and not isinstance(v, (list, dict))}
        return list(enumerate(doc["records"])), problems, ctx, []
    if isinstance(doc, list):
        return list(enumerate(doc)), problems, ctx, []
    if isinstance(doc, dict):
        return [(0, doc)], problems, ctx, []
    raise InputError(f"{path}: expected a JSON object or list of records, got {_show(doc)}")


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
            rows, problems, ctx, warnings = _rows(f, max_bytes)
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


# --------------------------------------------------------------------------- shapes


def detect_shape(row: Any) -> str:
    """Name the shape of one row: native, localmaxxing, vllm_bench, llama_bench, llama_server, unknown."""
    if not isinstance(row, dict):
        return "unknown"
    if "timings" in row and ("choices" in row or "content" in row):
        return "llama_server"
    if "observedTokS" in row or "tokSOut" in row or "hfId" in row:
        return "localmaxxing"
    if isinstance(row.get("model"), dict) and ("hfId" in row["model"] or "isMoE" in row["model"]):
        return "localmaxxing"
    if "output_throughput" in row and ("completed" in row or "max_concurrency" in row):
        return "vllm_bench"
    if "avg_ts" in row and ("n_gen" in row or "n_prompt" in row):
        return "llama_bench"
    if set(row) & set(Record.model_fields):
        return "native"
    return "unknown"


def record_from_row(row: Any, *, file: str = "<memory>", index: int | str = 0,
                    context: dict[str, Any] | None = None) -> tuple[Record | None, Problem | None]:
    """Map and validate one row; never raises.

    After mapping, a record without a quantization whose model name carries
    one (``"zai-org/GLM-5-FP8"``) gets it, with the inference noted in
    ``provenance.assumptions`` (:func:`_infer_quant_from_name`).

    Returns:
        ``(record, None)`` or ``(None, problem)`` naming file, index and field
        in plain words (``field tok_s_decode: expected a number, got 'lots'``).
    """
    shape = detect_shape(row)
    fname = os.path.basename(file) if file != "<memory>" else None
    mappers = {
        "native": record_from_native,
        "localmaxxing": record_from_localmaxxing,
        "vllm_bench": lambda r: record_from_vllm_bench(r, fname),
        "llama_bench": record_from_llama_bench,
        "llama_server": lambda r: record_from_llama_server_response(r, None),
    }
    if shape == "unknown":
        if isinstance(row, dict):
            keys = ", ".join(str(k) for k in list(row)[:6]) or "none"
            return None, Problem(file, index, "", f"not a recognised record shape (keys: {keys})")
        return None, Problem(file, index, "", f"not a record: expected an object, got {_show(row)}")
    try:
        rec = mappers[shape](row)
    except ValidationError as e:
        errs = e.errors()
        err = errs[0]
        loc = _loc(err["loc"]) or "(record)"
        more = f"; and {len(errs) - 1} more" if len(errs) > 1 else ""
        src = _SOURCE_FIELD.get(shape, {}).get(loc.split("[")[0])
        loc_s = f"{loc} (from {src})" if src else loc
        return None, Problem(file, index, loc_s, describe_error(err) + more)
    except _FieldError as e:
        return None, Problem(file, index, e.field, str(e))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None, Problem(file, index, "", f"could not read this {shape.replace('_', ' ')} record: a field "
                             "has an unexpected type or is missing")
    prov = dict(rec.provenance)
    prov.update({"file": file, "index": index, "importer": shape})
    if context and context.get("source") and not rec.source_url:
        rec.source_url = str(context["source"])
    rec.provenance = prov
    _infer_quant_from_name(rec)
    return rec, None


def _loc(loc: tuple[Any, ...]) -> str:
    """pydantic location → ``"power_w[1]"``, ``"speculative.al"``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _show(v: Any) -> str:
    """A value as a user would recognise it, short: ``'lots'``, ``true``, ``a list``, ``a 400-digit number``."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, (list, tuple)):
        return "a list"
    if isinstance(v, int):
        digits = len(str(abs(v))) if abs(v) < 10 ** 4000 else 4000
        return f"a {digits}-digit integer" if digits > 15 else str(v)
    if isinstance(v, float):
        return repr(v) if abs(v) < 1e15 or v != v else f"{v:.3e}"
    if isinstance(v, str):
        return repr(v if len(v) <= 40 else v[:37] + "…")
    return f"a {type(v).__name__}"


def describe_error(err: dict[str, Any]) -> str:
    """One pydantic error as a plain sentence: ``"expected a number, got 'lots'"``."""
    t = err.get("type", "")
    ctx = err.get("ctx") or {}
    got = _show(err.get("input"))
    if t in ("float_parsing", "float_type"):
        raw = err.get("input")
        if isinstance(raw, int) and not isinstance(raw, bool):
            return f"number too large ({got}; the largest is about 1.8e308)"
        return f"expected a number, got {got}"
    if t in ("int_parsing", "int_type", "int_from_float", "int_parsing_size"):
        return f"expected a whole number, got {got}"
    if t == "greater_than":
        return f"must be greater than {ctx.get('gt')}, got {got}"
    if t == "greater_than_equal":
        return f"must be at least {ctx.get('ge')}, got {got}"
    if t == "less_than_equal":
        return f"must be at most {ctx.get('le')}, got {got}"
    if t == "less_than":
        return f"must be less than {ctx.get('lt')}, got {got}"
    if t == "finite_number":
        return f"must be a finite number, got {got}"
    if t == "extra_forbidden":
        return "unknown field (not part of the record format)"
    if t == "string_type":
        return f"expected text, got {got}"
    if t in ("bool_type", "bool_parsing"):
        return f"expected true or false, got {got}"
    if t in ("model_type", "dict_type", "model_attributes_type"):
        return f"expected an object with fields, got {got}"
    if t == "list_type":
        return f"expected a list, got {got}"
    if t == "literal_error":
        return f"expected one of {ctx.get('expected')}, got {got}"
    if t == "missing":
        return "required field missing"
    if t == "value_error":
        return str(ctx.get("error") or err.get("msg", "invalid value"))
    msg = str(err.get("msg", "invalid value"))
    return f"{msg[0].lower()}{msg[1:]}, got {got}" if msg else f"invalid value {got}"


def _infer_quant_from_name(rec: Record) -> None:
    """Fill ``quantization.weights`` from a format named in the model name (``GLM-5-FP8`` → FP8).

    Only when the record gives no quantization and the name holds exactly one
    known format as a whole token (split on ``/ - _ .`` and spaces, K-quant
    names such as ``Q4_K_M`` kept whole). Two different formats → nothing
    inferred (ambiguous). The inference is recorded in the assumptions.
    """
    if rec.quantization.weights or rec.quantization.bytes_per_param or not rec.model.name:
        return
    from tokcaliper.audit.facts.quant import bits_per_weight

    name = rec.model.name.upper()
    found: dict[str, str] = {}
    for m in re.finditer(r"(?<![A-Z0-9])(I?Q\d_K(?:_[A-Z]+)?|IQ\d_[A-Z]+|Q\d_\d)(?![A-Z0-9])", name):
        q = bits_per_weight(m.group(1))
        if q:
            found[q.matched] = m.group(1)
    for tok in re.split(r"[\s/\-_.]+", name):
        if tok and not re.fullmatch(r"\d+B?", tok) and tok not in ("K", "S", "M", "L", "XL"):
            q = bits_per_weight(tok)
            if q is not None and q.confident:
                found.setdefault(q.matched, tok)
    if len(found) != 1:
        return
    matched, tok = next(iter(found.items()))
    rec.quantization.weights = matched
    rec.provenance = {**rec.provenance, "assumptions": list(rec.provenance.get("assumptions", [])) + [
        f"quantization {matched} inferred from the model name {rec.model.name!r} (none was given)"]}


#: record field → source field, for error messages naming the user's own field.
_SOURCE_FIELD: dict[str, dict[str, str]] = {
    "localmaxxing": {
        "tok_s_decode": "observedTokS/tokSOut", "tok_s_prefill": "prefillTokS/tokSPrefill",
        "ttft_ms": "ttftMs", "batch_size": "batchSize", "hardware.gpu_count": "deviceCount/gpuCount",
        "model.params_total": "paramsB/params", "context_length": "contextLength",
        "power_w": "gpuPowerWatts",
    },
    "vllm_bench": {"tok_s_aggregate": "output_throughput", "seconds": "duration",
                   "output_tokens": "total_output_tokens", "concurrency": "max_concurrency"},
    "llama_bench": {"tok_s_decode": "avg_ts", "tok_s_prefill": "avg_ts"},
}


def record_from_native(row: dict[str, Any]) -> Record:
    """A row already in :class:`Record` shape (CSV cells coerced; ``power_w`` may be ``"99;100"``).

    Raises:
        pydantic.ValidationError: a bad field.
    """
    row = dict(row)
    pw = row.get("power_w")
    if isinstance(pw, str):
        parts = [x for x in re.split(r"[;, ]+", pw.strip()) if x]
        try:
            row["power_w"] = [float(x) for x in parts]
        except ValueError:
            raise _FieldError("power_w", f"expected numbers separated by ';', got {_show(pw)}") from None
    elif pw is None and "power_w" in row:
        row["power_w"] = []
    rec = Record.model_validate(row)
    return _fill_from_launch(rec)


def _num(v: Any, field_name: str = "(number)") -> float | None:
    """A source number (or numeric text); None/"" → None.

    Raises:
        _FieldError: anything else (text that is not a number, a boolean, a list…),
            naming ``field_name`` as the source spells it.
    """
    if v is None or v == "":
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise _FieldError(field_name, f"expected a number, got {_show(v)}")
    try:
        return float(v)
    except (ValueError, OverflowError):
        raise _FieldError(field_name, f"expected a number, got {_show(v)}") from None


def _billions(v: Any, field_name: str) -> float | None:
    n = _num(v, field_name)
    return None if n is None else n * 1e9


def record_from_localmaxxing(row: dict[str, Any]) -> Record:
    """A LocalMaxxing leaderboard row, snapshot or live shape.

    Snapshot (``localmaxxing_records.json``): ``hfId, model, paramsB,
    activeParamsB, hardware, deviceCount, memoryGB, engine, engineVersion,
    quantization, contextLength, batchSize, observedTokS, prefillTokS, ttftMs,
    command, source``. Live: ``model{hfId,params,activeParams,isMoE}``,
    ``hardware{gpuName,gpuCount}``, ``engine{engineName,engineVersion,quantization}``,
    ``tokSOut, tokSPrefill, ttftMs, gpuPowerWatts[], batchSize,
    engineFlags{commandSnippet, specMethod, specNumTokens, specDraftTokens,
    specAcceptedTokens, specMeanAcceptedLength, prefixCaching, concurrency}, notes``.

    Assumptions (recorded in ``provenance.assumptions``): ``observedTokS`` /
    ``tokSOut`` is the per-stream decode rate; ``paramsB`` is billions;
    ``activeParamsB: null`` means unknown, not dense.

    Raises:
        pydantic.ValidationError: a bad field.
    """
    assumptions = ["observedTokS/tokSOut read as the per-stream decode rate (tok/s)"]
    m = row.get("model")
    hw = row.get("hardware")
    eng = row.get("engine")
    flags = row.get("engineFlags") or {}
    if isinstance(m, dict):  # live shape
        params = _num(m.get("params"), "model.params")
        active = _num(m.get("activeParams"), "model.activeParams")
        # live rows give params in billions when small numbers, raw counts otherwise
        model = {"name": m.get("hfId") or m.get("name"),
                 "params_total": None if params is None else (params * 1e9 if params < 1e5 else params),
                 "params_active": None if active is None else (active * 1e9 if active < 1e5 else active),
                 "is_moe": m.get("isMoE")}
    else:
        model = {"name": row.get("hfId") or m, "params_total": _billions(row.get("paramsB"), "paramsB"),
                 "params_active": _billions(row.get("activeParamsB"), "activeParamsB")}
        assumptions.append("paramsB/activeParamsB read as billions; activeParamsB null = unknown")
    if isinstance(hw, dict):
        hardware = {"gpu_name": hw.get("gpuName"), "gpu_count": hw.get("gpuCount") or 1}
    else:
        hardware = {"gpu_name": hw or row.get("hardwareTemplate"), "gpu_count": row.get("deviceCount") or 1}
        mem = _num(row.get("memoryGB"), "memoryGB")
        if mem:
            hardware["memory_gb"] = mem
    if isinstance(eng, dict):
        engine = {"name": eng.get("engineName"), "version": eng.get("engineVersion")}
        quant = eng.get("quantization")
    else:
        engine = {"name": eng or row.get("runtimeKey"), "version": row.get("engineVersion")}
        quant = row.get("quantization")
    command = flags.get("commandSnippet") or row.get("command")
    spec = None
    if flags.get("specMethod") or flags.get("specNumTokens") or flags.get("specMeanAcceptedLength"):
        spec = {"method": flags.get("specMethod"), "window_k": flags.get("specNumTokens"),
                "drafted": flags.get("specDraftTokens"), "accepted": flags.get("specAcceptedTokens"),
                "al": flags.get("specMeanAcceptedLength")}
    power = row.get("gpuPowerWatts") or []
    if isinstance(power, (int, float)):
        power = [power]
    rec = Record.model_validate({
        "id": row.get("id"),
        "submitter": row.get("submitter") or row.get("userName") or row.get("user"),
        "date": row.get("createdAt"),
        "model": model,
        "hardware": hardware,
        "engine": engine,
        "quantization": {"weights": quant},
        "launch_command": command or None,
        "batch_size": row.get("batchSize"),
        "concurrency": flags.get("concurrency"),
        "context_length": row.get("contextLength"),
        "prefix_cache": flags.get("prefixCaching"),
        "tok_s_decode": row.get("observedTokS", row.get("tokSOut")),
        "tok_s_prefill": row.get("prefillTokS", row.get("tokSPrefill")),
        "ttft_ms": row.get("ttftMs"),
        "power_w": [p for p in power if p is not None],
        "notes": row.get("notes"),
        "source_url": row.get("source") or row.get("url"),
        "speculative": spec,
        "provenance": {"assumptions": assumptions},
    })
    return _fill_from_launch(rec)


def _fill_from_launch(rec: Record) -> Record:
    """Fill fields the source left out from its launch command; note each fill."""
    if not rec.launch_command:
        return rec
    k = parse_launch(rec.launch_command)
    notes: list[str] = list(rec.provenance.get("assumptions", []))
    if rec.context_length is None and k.context_length:
        rec.context_length = k.context_length
        notes.append(f"context length {k.context_length} from the launch command")
    if rec.quantization.kv_cache is None and (k.kv_cache_k or k.kv_cache_v):
        rec.quantization.kv_cache = "/".join(x for x in (k.kv_cache_k, k.kv_cache_v) if x)
        notes.append(f"KV cache dtype {rec.quantization.kv_cache} from the launch command")
    if rec.prefix_cache is None and k.prefix_cache is not None:
        rec.prefix_cache = k.prefix_cache
    if rec.temperature is None and k.temperature is not None:
        rec.temperature = k.temperature
    if rec.hardware.split_mode is None:
        mode = k.split_mode
        if mode is None and rec.hardware.gpu_count > 1 and _is_llama_cpp(rec):
            mode = "layer"
            notes.append("split mode 'layer' assumed: llama.cpp default for several GPUs (-sm)")
        if mode in ("none", "layer", "row", "tensor", "pipeline", "expert"):
            rec.hardware.split_mode = mode  # type: ignore[assignment]
    if rec.speculative is None and k.spec_method:
        from tokcaliper.model.record import SpeculativeInfo

        rec.speculative = SpeculativeInfo(method=k.spec_method, window_k=k.draft_max, draft_model=k.draft_model)
        notes.append(f"speculative decoding ({k.spec_method}) found in the launch command")
    if k.offload:
        notes.append(f"weights partly in host memory: {k.offload}")
    rec.provenance = {**rec.provenance, "assumptions": notes}
    return rec


def _is_llama_cpp(rec: Record) -> bool:
    name = (rec.engine.name or "").lower().replace(".", "").replace("_", "")
    cmd = rec.launch_command or ""
    return "llamacpp" in name or "llama-server" in cmd or "llama-cli" in cmd


def _tp_from_filename(filename: str | None) -> int | None:
    """Tensor-parallel size from a file name token ``tp8`` / ``TP-8`` / ``tp_8``.

    Only when exactly one such token appears, delimited by ``_ - .`` or the
    ends of the name (``glm5_fp8_vllm_tp8_isl1024…`` → 8); two different values
    → None (ambiguous).
    """
    if not filename:
        return None
    hits = {int(m.group(1)) for m in re.finditer(r"(?:^|[_\-.])tp[_\-]?(\d{1,4})(?=$|[_\-.])", filename, re.I)}
    return hits.pop() if len(hits) == 1 and min(hits) >= 1 else None


def record_from_vllm_bench(row: dict[str, Any], filename: str | None = None) -> Record:
    """A ``vllm bench serve --save-result`` JSON document.

    Upstream writes latencies in milliseconds under ``*_ms`` names
    (``median_ttft_ms``); derived clients (e.g. InferenceX) write seconds under
    names without the suffix (``median_ttft``). The unit assumed is recorded in
    ``provenance.assumptions``. Per-stream decode rate = 1 / median TPOT.

    GPU count: the file's own ``tensor_parallel_size`` (or ``tp`` /
    ``tp_size``) times ``pipeline_parallel_size`` when present; otherwise a
    single unambiguous ``tpN`` token in the file name (InferenceX names files
    ``…_vllm_tp8_…``), assuming one GPU per TP rank and no pipeline or data
    parallelism; the source is recorded in the assumptions. The result files
    do not name the GPU model, so it stays unknown (give ``--bandwidth``).
    ``completed`` becomes ``requests`` (the totals add up over that many
    requests, which A5 needs).

    Raises:
        pydantic.ValidationError: a bad field; _FieldError: a non-numeric latency.
    """
    assumptions: list[str] = []
    if "median_ttft_ms" in row or "median_tpot_ms" in row:
        ttft_ms = _num(row.get("median_ttft_ms"), "median_ttft_ms")
        tpot_ms = _num(row.get("median_tpot_ms"), "median_tpot_ms")
        tpot_s = None if tpot_ms is None else tpot_ms / 1000
        assumptions.append("latencies in milliseconds (*_ms names, upstream vllm bench serve)")
    else:
        t = _num(row.get("median_ttft"), "median_ttft")
        ttft_ms = None if t is None else t * 1000
        tpot_s = _num(row.get("median_tpot"), "median_tpot")
        if t is not None or tpot_s is not None:
            assumptions.append("latencies in seconds (names without _ms: derived client convention)")
    assumptions.append("tok_s_decode = 1 / median TPOT (per stream); output_throughput = aggregate")
    hardware: dict[str, Any] = {}
    tp_key = next((k for k in ("tensor_parallel_size", "tp_size", "tp") if row.get(k) is not None), None)
    if tp_key is not None:
        tp = _num(row[tp_key], tp_key)
        pp = _num(row.get("pipeline_parallel_size"), "pipeline_parallel_size") or 1
        hardware = {"gpu_count": tp * pp, "split_mode": "tensor" if pp == 1 else None}
        assumptions.append(f"GPU count {tp * pp:g} from {tp_key}" + (" × pipeline_parallel_size" if pp != 1 else ""))
    else:
        tp_name = _tp_from_filename(filename)
        if tp_name is not None:
            hardware = {"gpu_count": tp_name, "split_mode": "tensor"}
            assumptions.append(f"GPU count {tp_name} from 'tp{tp_name}' in the file name {filename!r} "
                               "(one GPU per tensor-parallel rank; no pipeline/data parallelism assumed)")
    rec = Record.model_validate({
        "id": filename or row.get("date"),
        "date": row.get("date"),
        "model": {"name": row.get("model_id")},
        "hardware": hardware,
        "engine": {"name": "vllm", "version": row.get("vllm_version") or row.get("version")},
        "concurrency": row.get("max_concurrency"),
        "requests": row.get("completed"),
        "prompt_tokens": row.get("total_input_tokens"),
        "output_tokens": row.get("total_output_tokens"),
        "seconds": row.get("duration"),
        "tok_s_aggregate": row.get("output_throughput"),
        "tok_s_decode": None if not tpot_s else 1 / tpot_s,
        "ttft_ms": ttft_ms,
        "provenance": {"assumptions": assumptions},
    })
    return rec


def record_from_llama_bench(row: dict[str, Any]) -> Record:
    """One ``llama-bench -o json`` row.

    ``n_gen > 0, n_prompt = 0`` is a decode (tg) test → ``tok_s_decode = avg_ts``;
    ``n_prompt > 0, n_gen = 0`` a prefill (pp) test → ``tok_s_prefill``.
    Bytes per weight = ``model_size / model_n_params`` (exact, from the file).

    Raises:
        pydantic.ValidationError: a bad field.
    """
    n_gen, n_prompt = int(_num(row.get("n_gen"), "n_gen") or 0), int(_num(row.get("n_prompt"), "n_prompt") or 0)
    avg_ts = row.get("avg_ts")
    gpu_info = row.get("gpu_info") or ""
    if not isinstance(gpu_info, str):
        raise _FieldError("gpu_info", f"expected text, got {_show(gpu_info)}")
    gpus = [g.strip() for g in gpu_info.split(",") if g.strip()]
    size, nparams = _num(row.get("model_size"), "model_size"), _num(row.get("model_n_params"), "model_n_params")
    mtype = row.get("model_type") or ""
    quant = mtype.split()[-1] if mtype else None
    argv = ["llama-bench", "-m", str(row.get("model_filename")), "-p", str(n_prompt), "-n", str(n_gen),
            "-ngl", str(row.get("n_gpu_layers")), "-sm", str(row.get("split_mode"))]
    rec = Record.model_validate({
        "date": row.get("test_time"),
        "model": {"name": os.path.basename(str(row.get("model_filename") or "")) or mtype,
                  "params_total": nparams},
        "hardware": {"gpu_name": gpus[0] if gpus else None, "gpu_count": max(1, len(gpus)),
                     "split_mode": row.get("split_mode") if len(gpus) > 1 else "none"},
        "engine": {"name": "llama.cpp", "version": f"b{row.get('build_number')} ({row.get('build_commit')})"},
        "quantization": {"weights": quant, "kv_cache": f"{row.get('type_k')}/{row.get('type_v')}",
                         "bytes_per_param": size / nparams if size and nparams else None},
        "launch_command": shlex.join(argv),
        "batch_size": 1,
        "prompt_tokens": n_prompt,
        "output_tokens": n_gen,
        "tok_s_decode": avg_ts if n_gen and not n_prompt else None,
        "tok_s_prefill": avg_ts if n_prompt and not n_gen else None,
        "repetitions": len(row.get("samples_ts") or []) or None,
        "provenance": {"assumptions": ["launch command reconstructed from llama-bench fields",
                                       "bytes per weight = model_size / model_n_params"]},
    })
    return rec


def record_from_llama_server_response(resp: dict[str, Any], launch_args: list[str] | None, *,
                                      request: dict[str, Any] | None = None,
                                      gpu_name: str | None = None, gpu_count: int = 1,
                                      engine_version: str | None = None) -> Record:
    """A record from one non-streaming llama-server ``/v1/chat/completions`` response.

    Reads ``timings`` (``predicted_n``, ``predicted_ms``, ``predicted_per_second``,
    ``prompt_ms``, and with speculation ``draft_n`` / ``draft_n_accepted``).
    The window k and method come from ``launch_args`` (``--spec-draft-n-max``/
    ``--draft-max``, ``--spec-type``, ``-md``). TTFT is taken as ``prompt_ms``
    (prompt processing time; assumption recorded).

    Args:
        resp: parsed JSON response.
        launch_args: argv the server was started with (None when unknown).
        request: the request body (for temperature).
        gpu_name, gpu_count: hardware, when known (None: CPU / unknown).
        engine_version: from ``/props`` ``build_info``, when known.

    Raises:
        pydantic.ValidationError: a bad field; KeyError: no ``timings``.
    """
    t = resp["timings"]
    k = parse_launch(launch_args) if launch_args else None
    spec = None
    if "draft_n" in t or (k and k.spec_method):
        spec = {"method": (k.spec_method if k else None) or "draft",
                "window_k": k.draft_max if k else None,
                "draft_model": k.draft_model if k else None,
                "drafted": t.get("draft_n"), "accepted": t.get("draft_n_accepted")}
    model_name = resp.get("model")
    if launch_args and "-m" in launch_args:
        model_name = os.path.basename(launch_args[launch_args.index("-m") + 1])
    temp = (request or {}).get("temperature")
    return Record.model_validate({
        "id": resp.get("id"),
        "model": {"name": model_name},
        "hardware": {"gpu_name": gpu_name, "gpu_count": gpu_count},
        "engine": {"name": "llama.cpp", "version": engine_version},
        "launch_command": shlex.join(launch_args) if launch_args else None,
        "batch_size": 1,
        "concurrency": 1,
        "context_length": k.context_length if k else None,
        "prompt_tokens": t.get("prompt_n"),
        "output_tokens": t.get("predicted_n"),
        "seconds": (t["predicted_ms"] / 1000) if t.get("predicted_ms") else None,
        "tok_s_decode": t.get("predicted_per_second") or None,
        "ttft_ms": t.get("prompt_ms"),
        "temperature": temp,
        "speculative": spec,
        "provenance": {"importer": "llama_server",
                       "assumptions": ["TTFT taken as timings.prompt_ms",
                                       "drafted/accepted from timings.draft_n / draft_n_accepted"]},
    })


# --------------------------------------------------------------------------- model files


def read_model_file(path: Path) -> ParamFacts:
    """Parameters from a GGUF header or a Hugging Face ``config.json``.

    GGUF: total = Σ tensor elements; MoE when ``{arch}.expert_count`` > 0, and
    active = non-expert tensors + expert tensors × ``expert_used_count /
    expert_count`` (tensors named ``*_exps``). config.json: standard transformer
    count (embeddings, attention q/k/v/o, gated MLP or experts), approximate.

    Raises:
        InputError: unreadable file or unknown format.
    """
    if not path.exists():
        raise InputError(f"{path}: no such model file")
    if path.is_dir():
        raise InputError(f"{path}: is a directory (give a .gguf file or a config.json)")
    if path.suffix.lower() == ".gguf":
        try:
            from gguf import GGUFReader

            reader = GGUFReader(str(path))
        except OSError as e:
            raise InputError(f"{path}: cannot read ({_os_reason(e)})") from None
        except Exception:
            raise InputError(f"{path}: not a readable GGUF file (its header could not be parsed)") from None
        total = float(sum(int(t.n_elements) for t in reader.tensors))
        experts = float(sum(int(t.n_elements) for t in reader.tensors if "_exps" in t.name))
        arch = _gguf_field(reader, "general.architecture")
        n_exp = _gguf_field(reader, f"{arch}.expert_count")
        n_used = _gguf_field(reader, f"{arch}.expert_used_count")
        src = f"GGUF header of {path.name} (Σ tensor elements)"
        if n_exp and n_used and experts:
            active = total - experts + experts * float(n_used) / float(n_exp)
            return ParamFacts(total, active, True, src, f"{src}: experts × {n_used}/{n_exp}", src)
        return ParamFacts(total, None, False, src, "unknown", src + ": no expert_count")
    data = _json(_text(read_raw(path), path), path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: not a config.json object")
    return _params_from_config(data, path.name)


def _gguf_field(reader: Any, key: str) -> Any:
    f = reader.fields.get(key)
    if f is None:
        return None
    try:
        return f.contents()
    except Exception:  # older gguf without contents()
        part = f.parts[f.data[0]]
        return bytes(part).decode() if part.dtype.kind == "u" and part.dtype.itemsize == 1 else part[0]


def _params_from_config(c: dict[str, Any], name: str) -> ParamFacts:
    c = c.get("text_config", c)
    try:
        h, layers, vocab = int(c["hidden_size"]), int(c["num_hidden_layers"]), int(c["vocab_size"])
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(f"{name}: config.json lacks {e} (hidden_size, num_hidden_layers, vocab_size)") from None
    heads = int(c.get("num_attention_heads", 1))
    kv = int(c.get("num_key_value_heads", heads))
    hd = int(c.get("head_dim") or h // heads)
    attn = h * heads * hd * 2 + h * kv * hd * 2
    n_exp = int(c.get("num_experts") or c.get("num_local_experts") or c.get("n_routed_experts") or 0)
    used = int(c.get("num_experts_per_tok") or 0)
    inter = int(c.get("moe_intermediate_size") or c.get("intermediate_size") or 4 * h)
    embed = vocab * h * (1 if c.get("tie_word_embeddings") else 2)
    src = f"{name}: estimated from hidden_size, layers, heads, vocab (approximate)"
    if n_exp and used:
        shared = int(c.get("shared_expert_intermediate_size") or 0) * 3 * h
        exp_total = n_exp * 3 * h * inter
        total = embed + layers * (attn + exp_total + shared)
        active = embed + layers * (attn + used * 3 * h * inter + shared)
        return ParamFacts(float(total), float(active), True, src, src, src)
    total = embed + layers * (attn + 3 * h * int(c.get("intermediate_size") or 4 * h))
    return ParamFacts(float(total), None, False, src, "unknown", src)


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
