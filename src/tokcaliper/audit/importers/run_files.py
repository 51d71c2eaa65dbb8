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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokcaliper.audit.importers import aiperf, genai_perf, guidellm, inference_perf, llama_bench, llmperf
from tokcaliper.audit.importers import sglang_bench, vllm_bench
from tokcaliper.audit.importers.base import FieldError
from tokcaliper.audit.importers.files import DEFAULT_MAX_BYTES, parse_json, read_raw
from tokcaliper.audit.importers.runs import PeerRun, Summarize
from tokcaliper.errors import InputError
from tokcaliper.fileio import JSONParseError, decode_text, jsonl_lines, loads_json

__all__ = ["RunImport", "read_runs"]

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
