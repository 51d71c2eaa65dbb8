"""The importer interface, and what every importer shares.

An importer reads one *shape* of someone else's result row (a LocalMaxxing
leaderboard row, a ``vllm bench serve --save-result`` document …) and maps
it to a :class:`~tokcaliper.model.record.Record`. It has three duties, one
each in :class:`Importer`:

* ``detect(row) -> bool`` — is this row in my shape? Pure, cheap, never
  raises; :mod:`.dispatch` asks the importers in a fixed order and the first
  yes wins.
* ``to_record(row, filename=...) -> Record`` — map and validate the row.
* name the source field of every value: the mapping is built with a
  :class:`RecordBuilder`, which stores ``provenance["source_fields"]`` on the
  record (record field path → the source's own field path, e.g.
  ``"tok_s_decode": "observedTokS"``), and uses it to name the user's own
  field when a value is rejected.

Errors: a bad value raises :class:`FieldError` naming the field path
(``tok_s_decode (from observedTokS)`` or, for our own shape, just
``hardware.memory_gb``) with a plain sentence; :mod:`.dispatch` adds the file
and record index (:class:`Problem`), e.g.
``records.json: record 3: field hardware.memory_gb: expected a number, got 'lots'``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable

from pydantic import ValidationError

from tokcaliper.audit.launch import parse_launch
from tokcaliper.errors import InputError
from tokcaliper.model.record import Record, SpeculativeInfo
from tokcaliper.model.warnings import Caveat
from tokcaliper.validation import describe as describe_error
from tokcaliper.validation import and_more, as_number, loc_path, problems, show


@runtime_checkable
class Importer(Protocol):
    """One source shape → :class:`Record`.

    Attributes:
        name: short shape name recorded as ``provenance["importer"]``
            (``"native"``, ``"localmaxxing"``, ``"vllm_bench"`` …).
    """

    name: str

    def detect(self, row: Any) -> bool:
        """True when ``row`` (one parsed JSON value or CSV row) is in this shape; never raises."""
        ...

    def to_record(self, row: dict[str, Any], *, filename: str | None = None) -> Record:
        """Map and validate one row; ``filename`` is the file's base name, when it came from one.

        Raises:
            FieldError: a value that cannot be mapped or validated, naming its field path.
        """
        ...


@dataclass
class Problem:
    """A record that could not be imported: where and why (plain words, no Python internals).

    Attributes:
        file: the file path as given (``"<memory>"`` for rows passed in directly).
        index: the record's position in the file (0-based), with ``" (line N)"``
            for line-oriented files when the row could not be parsed.
        field: the field path (empty when the record as a whole is at fault).
        message: a plain sentence.
    """

    file: str
    index: int | str
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: record {self.index}"
        return f"{where}: field {self.field}: {self.message}" if self.field else f"{where}: {self.message}"

    def error(self) -> InputError:
        """This problem as the one-line :class:`~tokcaliper.errors.InputError` the CLI prints."""
        return InputError(str(self))


@dataclass
class ImportResult:
    """Records imported from one or more files, the ones skipped, and warnings.

    ``warnings`` are named caveats (:class:`~tokcaliper.model.warnings.Caveat`) about
    input that was read but looks off (a CSV row with fewer cells than columns); the
    result that carries them on prints them through the warning sink.
    """

    records: list[Record] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    warnings: list[Caveat] = field(default_factory=list)


class FieldError(ValueError):
    """A source value that cannot be mapped; ``field`` is its path as the user sees it."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field = field_name


# --------------------------------------------------------------------------- values


def num(v: Any, field_name: str = "(number)") -> float | None:
    """A source number (or numeric text); None/"" → None.

    Raises:
        FieldError: anything else (text that is not a number, a boolean, a list…),
            naming ``field_name`` as the source spells it.
    """
    if v is None or v == "":
        return None
    try:
        return as_number(v)
    except ValueError:
        raise FieldError(field_name, f"expected a number, got {show(v)}") from None


def text(v: Any, field_name: str) -> str | None:
    """A source text value; None/"" → None.

    Raises:
        FieldError: a number, list or object where text is expected.
    """
    if v is None or v == "":
        return None
    if not isinstance(v, str):
        raise FieldError(field_name, f"expected text, got {show(v)}")
    return v


def get(row: dict[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` (``"engineFlags.specMethod"``); None when absent.

    Raises:
        FieldError: a step on the path that is not an object (``engineFlags: "x"``),
            naming the path up to it.
    """
    cur: Any = row
    parts = path.split(".")
    for i, p in enumerate(parts):
        if cur is None:
            return None
        if not isinstance(cur, dict):
            raise FieldError(".".join(parts[:i]), f"expected an object with fields, got {show(cur)}")
        cur = cur.get(p)
    return cur


def field_error(e: ValidationError, sources: dict[str, str] | None = None) -> FieldError:
    """The first error of a pydantic validation as a :class:`FieldError`.

    The field is the record's path (``power_w[1]``); when the value came from
    a differently named source field the path is followed by it:
    ``tok_s_decode (from observedTokS)``. ``" (and N more)"`` counts the rest
    (:func:`tokcaliper.validation.and_more`).
    """
    probs = problems(e)
    first = probs[0]
    loc = loc_path(first.loc) or "(record)"
    src = (sources or {}).get(loc.split("[")[0])
    where = f"{loc} (from {src})" if src and src != loc.split("[")[0] else loc
    what = describe_error(first.err)
    if first.err.get("type") == "extra_forbidden":
        what = "unknown field (not part of the record format)"
    return FieldError(where, what + and_more(len(probs) - 1))


# --------------------------------------------------------------------------- building records


class RecordBuilder:
    """Collects a record's values with the source field of each, then validates once.

    ``put("tok_s_decode", 61.5, "observedTokS")`` sets a (dotted) record path;
    ``take(row, "tok_s_decode", "observedTokS", "tokSOut")`` copies the first
    source path that holds a value. :meth:`build` validates the record, stores
    ``provenance["source_fields"]`` and ``provenance["assumptions"]``, and
    turns a validation failure into a :class:`FieldError` naming both the
    record field and the source field.
    """

    def __init__(self, data: dict[str, Any] | None = None, sources: dict[str, str] | None = None) -> None:
        self.data: dict[str, Any] = dict(data or {})
        self.sources: dict[str, str] = dict(sources or {})
        self.assumptions: list[str] = []

    def put(self, target: str, value: Any, source: str | None = None) -> None:
        """Set record path ``target`` to ``value`` (None: leave the default) from ``source``."""
        if value is None:
            return
        parts = target.split(".")
        d = self.data
        for p in parts[:-1]:
            d = d.setdefault(p, {})
        d[parts[-1]] = value
        if source:
            self.sources[target] = source

    def take(self, row: dict[str, Any], target: str, *sources: str,
             convert: Callable[[Any, str], Any] | None = None, truthy: bool = False) -> Any:
        """Copy the first of ``sources`` (dotted paths into ``row``) that holds a value.

        Args:
            convert: ``convert(value, source_path)`` applied before storing
                (e.g. :func:`num`); it may raise :class:`FieldError`.
            truthy: skip falsy values (``""``, ``0``) of all but the last
                source, like ``a or b``; by default only absent/None values
                are skipped.

        Returns:
            the stored value, or None when no source holds one.
        """
        for i, s in enumerate(sources):
            v = get(row, s)
            if v is None or (truthy and not v and i < len(sources) - 1):
                continue
            out = convert(v, s) if convert else v
            self.put(target, out, s)
            return out
        return None

    def build(self) -> Record:
        """Validate the collected values.

        Raises:
            FieldError: the first invalid value, by record path and source field.
        """
        data = dict(self.data)
        prov = data.get("provenance")
        if prov is None or isinstance(prov, dict):
            prov = dict(prov or {})
            if self.assumptions:
                prov["assumptions"] = list(prov.get("assumptions", [])) + self.assumptions
            prov["source_fields"] = dict(self.sources)
            data["provenance"] = prov
        try:
            return Record.model_validate(data)
        except ValidationError as e:
            raise field_error(e, self.sources) from None


def leaf_paths(row: dict[str, Any], prefix: str = "") -> dict[str, str]:
    """Identity source map of a row in our own shape: every leaf path → itself (``provenance`` left out)."""
    out: dict[str, str] = {}
    for k, v in row.items():
        path = f"{prefix}{k}"
        if not prefix and k == "provenance":
            continue
        if isinstance(v, dict) and v:
            out.update(leaf_paths(v, path + "."))
        else:
            out[path] = path
    return out


def note(rec: Record, text: str, fields: dict[str, str] | None = None) -> None:
    """Append an assumption to ``rec.provenance`` and record the source of the fields it filled."""
    prov = dict(rec.provenance)
    prov["assumptions"] = list(prov.get("assumptions", [])) + [text]
    if fields:
        prov["source_fields"] = {**prov.get("source_fields", {}), **fields}
    rec.provenance = prov


def fill_from_launch(rec: Record) -> Record:
    """Fill fields the source left out from its launch command; note each fill.

    Each filled field's source is ``launch_command`` (in ``source_fields``).
    """
    if not rec.launch_command:
        return rec
    k = parse_launch(rec.launch_command)
    notes: list[str] = list(rec.provenance.get("assumptions", []))
    filled: list[str] = []
    if rec.context_length is None and k.context_length:
        rec.context_length = k.context_length
        filled.append("context_length")
        notes.append(f"context length {k.context_length} from the launch command")
    if rec.quantization.kv_cache is None and (k.kv_cache_k or k.kv_cache_v):
        rec.quantization.kv_cache = "/".join(x for x in (k.kv_cache_k, k.kv_cache_v) if x)
        filled.append("quantization.kv_cache")
        notes.append(f"KV cache dtype {rec.quantization.kv_cache} from the launch command")
    if rec.prefix_cache is None and k.prefix_cache is not None:
        rec.prefix_cache = k.prefix_cache
        filled.append("prefix_cache")
    if rec.temperature is None and k.temperature is not None:
        rec.temperature = k.temperature
        filled.append("temperature")
    if rec.hardware.split_mode is None:
        mode = k.split_mode
        if mode is None and rec.hardware.gpu_count > 1 and _is_llama_cpp(rec):
            mode = "layer"
            notes.append("split mode 'layer' assumed: llama.cpp default for several GPUs (-sm)")
        if mode in ("none", "layer", "row", "tensor", "pipeline", "expert"):
            rec.hardware.split_mode = mode  # type: ignore[assignment]
            filled.append("hardware.split_mode")
    if rec.speculative is None and k.spec_method:
        rec.speculative = SpeculativeInfo(method=k.spec_method, window_k=k.draft_max, draft_model=k.draft_model)
        filled.append("speculative")
        notes.append(f"speculative decoding ({k.spec_method}) found in the launch command")
    if k.offload:
        notes.append(f"weights partly in host memory: {k.offload}")
    sources = {**rec.provenance.get("source_fields", {}), **{f: "launch_command" for f in filled}}
    rec.provenance = {**rec.provenance, "assumptions": notes, "source_fields": sources}
    return rec


def _is_llama_cpp(rec: Record) -> bool:
    name = (rec.engine.name or "").lower().replace(".", "").replace("_", "")
    cmd = rec.launch_command or ""
    return "llamacpp" in name or "llama-server" in cmd or "llama-cli" in cmd
