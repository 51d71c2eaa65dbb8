"""Peer tools' result files → :class:`~.runs.PeerRun` s: reading, telling the tool, pairing files.

Which tool wrote a file is told from its content (never its name alone), in
the order of :func:`read_runs`: AIPerf JSON/CSV/JSONL, GuideLLM, vLLM bench,
SGLang bench_serving JSONL, llama-bench JSONL/array, inference-perf, LLMPerf
summary / individual responses, genai-perf CSV. Files that belong to one run
are paired: AIPerf's ``profile_export.jsonl`` beside its
``profile_export_aiperf.json`` gives that run's samples, LLMPerf's
``*_individual_responses.json`` beside its ``*_summary.json`` likewise; a
companion that is named too is not imported a second time (noted), and an
AIPerf CSV named beside its JSON is skipped (the same run).

Errors: a file no importer recognises, or of an unknown schema version,
raises :class:`~tokcaliper.errors.InputError` in one line naming the file and
the field (``x.json: not a result file of a known tool: no field names the tool
(fields: a, b, c)``; ``x.json: field schema_version: AIPerf schema 9 …``). Records of
a file that cannot be read are skipped and listed (``skipped``); the rest import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tokcaliper.audit.importers import aiperf, genai_perf, guidellm, inference_perf, llama_bench, llmperf
from tokcaliper.audit.importers import sglang_bench, vllm_bench
from tokcaliper.audit.importers.base import FieldError
from tokcaliper.audit.importers.files import DEFAULT_MAX_BYTES, parse_json, read_raw
from tokcaliper.audit.importers.runs import PeerRun, Summarize, to_run
from tokcaliper.errors import InputError
from tokcaliper.fileio import JSONParseError, decode_text, jsonl_lines, loads_json
from tokcaliper.model.run import Run

__all__ = ["ImportSummary", "ImportedRun", "RunImport", "import_session_name", "import_summary", "read_runs",
           "runs_to_store"]

#: The tools this module reads, as the error message lists them.
KNOWN = ("vLLM bench serve JSON, AIPerf JSON/CSV/JSONL, GuideLLM benchmarks JSON, genai-perf CSV, "
         "llama-bench JSONL, inference-perf lifecycle JSON, SGLang bench_serving JSONL, LLMPerf JSON")


@dataclass
class RunImport:
    """What :func:`read_runs` found.

    Attributes:
        runs: every run, in file order (then benchmark order within a file).
        skipped: one line per record, benchmark, table or file left out, with why.
        files: the files read (companions included).
    """

    runs: list[PeerRun] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def _jsonl(text: str, path: Path) -> tuple[list[tuple[int, Any]], list[str]]:
    rows, bad = [], []
    for n, line in enumerate(jsonl_lines(text)):
        if not line.strip():
            continue
        try:
            rows.append((n, loads_json(line, strict=False)))
        except JSONParseError as e:
            bad.append(f"{path}: line {n + 1}: {e}; skipped")
    return rows, bad


def _fields(doc: Any) -> str:
    if isinstance(doc, dict):
        return "fields: " + (", ".join(str(k) for k in list(doc)[:8]) or "none")
    if isinstance(doc, list):
        return f"a list of {len(doc)} item(s)" + (f" with fields {', '.join(list(doc[0])[:6])}"
                                                   if doc and isinstance(doc[0], dict) else "")
    return f"a {type(doc).__name__}"


def _unknown(path: Path, doc: Any) -> InputError:
    return InputError(f"{path}: not a result file of a known tool ({KNOWN}): no field tells which "
                      f"({_fields(doc)})")


def _read_one(path: Path, max_bytes: int, given: set[Path], out: RunImport, summarize: Summarize) -> None:
    text = decode_text(read_raw(path, max_bytes), path)
    if not text.strip():
        raise InputError(f"{path}: empty file")
    name = str(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            if genai_perf.detect_csv(text):
                runs, skipped = genai_perf.runs_from_csv(text, name)
            elif aiperf.detect_csv(text):
                twin = path.with_name(path.name.replace(".csv", ".json"))
                if twin.resolve() in given:
                    out.skipped.append(f"{path}: the same run as {twin} (AIPerf CSV and JSON): not imported twice")
                    return
                runs, skipped = aiperf.runs_from_csv(text, name), []
            else:
                first = text.lstrip("\ufeff").split("\n", 1)[0][:80]
                raise InputError(f"{path}: not a result file of a known tool ({KNOWN}): header {first!r}")
        elif suffix == ".jsonl":
            rows, skipped = _jsonl(text, path)
            first = next((r for _, r in rows if isinstance(r, dict)), None)
            if first is None:
                raise InputError(f"{path}: no JSON object on any line")
            if aiperf.detect_jsonl_row(first):
                twin = path.with_name(path.name.replace("profile_export.jsonl", "profile_export_aiperf.json"))
                if twin != path and twin.resolve() in given:
                    out.skipped.append(f"{path}: per-request records of {twin}, imported with it")
                    return
                runs, more = aiperf.run_from_jsonl(rows, name, summarize)
            elif sglang_bench.detect_row(first):
                runs, more = sglang_bench.runs_from_rows(rows, name)
            elif "avg_ts" in first:
                runs, more = llama_bench.runs_from_rows(rows, name)
            else:
                raise _unknown(path, first)
            skipped += more
        else:
            doc = parse_json(text, path)
            runs, skipped = _from_json(doc, path, given, out, summarize)
    except FieldError as e:
        raise InputError(f"{path}: field {e.field}: {e}") from None
    out.files.append(name)
    out.runs += runs
    out.skipped += skipped
    if not runs and not skipped:
        out.skipped.append(f"{path}: no run in the file")


def _from_json(doc: Any, path: Path, given: set[Path], out: RunImport,
               summarize: Summarize) -> tuple[list[PeerRun], list[str]]:
    name = str(path)
    if aiperf.detect_document(doc):
        jsonl = aiperf.companion_jsonl(path)
        samples, note, t0 = None, None, None
        if jsonl is not None:
            text = decode_text(read_raw(jsonl), jsonl)
            rows, bad = _jsonl(text, jsonl)
            samples, skipped, t0 = aiperf.requests_from_jsonl(rows, aiperf.Reader(), str(jsonl))
            out.skipped += bad + skipped
            out.files.append(str(jsonl))
            note = f"per-request samples from {jsonl}"
        return aiperf.runs_from_document(doc, name, samples, note, t0), []
    if guidellm.detect_document(doc):
        return guidellm.runs_from_document(doc, name)
    if isinstance(doc, dict) and sglang_bench.detect_row(doc):
        return [sglang_bench.run_from_row(doc, 0, name)], []
    if vllm_bench.VllmBenchImporter().detect(doc):
        return vllm_bench.runs_from_document(doc, name), []
    if inference_perf.detect_document(doc):
        return inference_perf.runs_from_document(doc, name), []
    if llmperf.detect_summary(doc):
        comp = llmperf.companion(path, "_summary.json", "_individual_responses.json")
        samples, note = None, None
        if comp is not None:
            rows = parse_json(decode_text(read_raw(comp), comp), comp)
            if llmperf.detect_individual(rows):
                samples, skipped = llmperf.requests_from_individual(rows, str(comp), llmperf.Reader())
                out.skipped += skipped
                out.files.append(str(comp))
                note = f"per-request samples from {comp}"
        return llmperf.runs_from_summary(doc, name, samples, note), []
    if llmperf.detect_individual(doc):
        twin = llmperf.companion(path, "_individual_responses.json", "_summary.json")
        if twin is not None and twin.resolve() in given:
            return [], [f"{path}: per-request records of {twin}, imported with it"]
        return llmperf.run_from_individual(doc, name, summarize)
    if isinstance(doc, list) and doc and isinstance(doc[0], dict) and "avg_ts" in doc[0]:
        return llama_bench.runs_from_rows(list(enumerate(doc)), name)
    raise _unknown(path, doc)


def read_runs(paths: list[Path], summarize: Summarize, max_bytes: int = DEFAULT_MAX_BYTES) -> RunImport:
    """Every run of the given peer-tool result files (see the module docstring).

    Args:
        paths: the files, as given.
        summarize: :func:`tokcaliper.load.summary.summarize` (for a file of per-request
            records alone: AIPerf's JSONL, LLMPerf's individual responses).
        max_bytes: per-file size ceiling.

    Raises:
        InputError: a missing or unreadable file, a file of no known tool, an unknown
            schema version, or a field that makes the whole file unreadable — one line
            naming the file and the field.
    """
    out = RunImport()
    given = {Path(p).resolve() for p in paths}
    for p in paths:
        p = Path(p)
        if not p.is_file():
            raise InputError(f"{p}: no such file" if not p.exists() else f"{p}: not a regular file")
        _read_one(p, max_bytes, given, out, summarize)
    return out


# ------------------------------------------------------------------ tokcaliper import


def import_session_name(now_iso: str) -> str:
    """The default session of an import: ``import-`` and the UTC time, ``import-20260101T120000``."""
    return "import-" + now_iso.replace(":", "").replace("-", "")[:15]


def runs_to_store(found: RunImport, *, session: str, arm: str | None, previous: Sequence[Run],
                  command_line: str, tool_version: str) -> list[Run]:
    """The runs of ``found`` as :class:`Run` s to store in ``session``, numbered after ``previous``.

    Each arm (``arm``, else the tool's name) continues its repetitions after the
    session's ``previous`` runs of that arm, and positions continue after the
    session's last one, so an import into an existing session appends to it.
    """
    reps: dict[str, int] = {}
    for r in previous:
        reps[r.arm] = max(reps.get(r.arm, 0), r.repetition + 1)
    position = max((r.position for r in previous if r.position is not None), default=-1) + 1
    out = []
    for p in found.runs:
        a = arm or p.tool
        out.append(to_run(p, session=session, arm=a, repetition=reps.get(a, 0), position=position,
                          command_line=command_line, tool_version=tool_version))
        reps[a] = reps.get(a, 0) + 1
        position += 1
    return out


class ImportedRun(BaseModel):
    """One stored run of ``tokcaliper import``.

    Attributes:
        id: its id in the database. arm, repetition (0-based): where it was stored.
        tool, tool_version, file, benchmark: where it came from.
        completed: the requests the tool reports completed (n of its figures).
        requests_stored: per-request samples stored with it.
        aggregate_output_tok_s: output tok/s as the tool defines it. ttft_p50_ms: median TTFT (ms).
        notes: the importer's assumptions and values stored as missing.
    """

    id: int | None
    arm: str
    repetition: int
    tool: str
    tool_version: str | None
    file: str
    benchmark: str | None
    completed: int
    requests_stored: int
    aggregate_output_tok_s: float | None
    ttft_p50_ms: float | None
    notes: list[str]


class ImportSummary(BaseModel):
    """``tokcaliper import``: the runs stored, and what was left out.

    Attributes:
        session, db: where they were stored. runs: one per stored run, in order.
        skipped: one line per record, benchmark, table or file left out, with why.
        files: the files read (companions included).
    """

    session: str
    db: str
    runs: list[ImportedRun]
    skipped: list[str]
    files: list[str]


def import_summary(found: RunImport, stored: Sequence[Run], *, session: str, db: str) -> ImportSummary:
    """The :class:`ImportSummary` of ``stored`` (the runs :func:`runs_to_store` made, once saved)."""
    rows = []
    for r in stored:
        src = r.source
        if src is None:  # every imported run has one (to_run sets it)
            raise ValueError(f"run {r.id} has no source: not an imported run")
        p50 = r.metrics.ttft_s.p50
        rows.append(ImportedRun(
            id=r.id, arm=r.arm, repetition=r.repetition, tool=src.tool, tool_version=src.tool_version,
            file=src.file, benchmark=src.benchmark, completed=r.metrics.completed, requests_stored=len(r.requests),
            aggregate_output_tok_s=r.metrics.aggregate_output_tok_s,
            ttft_p50_ms=None if p50 is None else p50 * 1000, notes=list(src.notes)))
    return ImportSummary(session=session, db=db, runs=rows, skipped=list(found.skipped), files=list(found.files))
