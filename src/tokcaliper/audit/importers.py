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
    """A record that could not be imported: where and why."""

    file: str
    index: int | str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: record {self.index}: field {self.field}: {self.message}"


@dataclass
class ImportResult:
    """Records imported from one or more files, and the ones skipped."""

    records: list[Record] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- reading


def read_raw(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """Read a file's raw bytes (A9).

    Raises:
        InputError: missing/unreadable file, or larger than ``max_bytes``.
    """
    try:
        size = path.stat().st_size
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror or e})") from None
    if size > max_bytes:
        raise InputError(f"{path}: {size / 1e6:.1f} MB is over the {max_bytes / 1e6:.0f} MB limit "
                         "(raise it with --max-bytes)")
    try:
        return path.read_bytes()
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror or e})") from None


def _text(data: bytes, path: Path) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (bad byte at offset {e.start})") from None


def _json(text: str, path: Path, where: str = "") -> Any:
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError as e:
        cut = e.pos >= len(text.rstrip()) - 1 or e.msg.startswith("Unterminated string")
        what = "truncated JSON" if cut else "invalid JSON"
        ch = repr(text[e.pos]) if e.pos < len(text) else "end of file"
        raise InputError(f"{path}{where}: {what} at line {e.lineno} column {e.colno} "
                         f"(near {ch}): {e.msg}") from None


def _rows(path: Path, max_bytes: int) -> tuple[list[tuple[int | str, Any]], list[Problem], dict[str, Any]]:
    """Rows of one file: ``[(index, row)]``, per-line problems, and file-level context."""
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
                rows.append((len(rows), json.loads(line, strict=False)))
            except json.JSONDecodeError as e:
                problems.append(Problem(str(path), f"{len(rows)} (line {n + 1})", "(json)",
                                        f"invalid JSON at column {e.colno}: {e.msg}"))
                rows.append((len(rows), None))
        return [(i, r) for i, r in rows if r is not None], problems, ctx
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        return [(i, _unflatten(r)) for i, r in enumerate(reader)], problems, ctx
    doc = _json(text, path)
    if isinstance(doc, dict) and isinstance(doc.get("records"), list):
        ctx = {k: v for k, v in doc.items() if k != "records" and not isinstance(v, (list, dict))}
        return list(enumerate(doc["records"])), problems, ctx
    if isinstance(doc, list):
        return list(enumerate(doc)), problems, ctx
    if isinstance(doc, dict):
        return [(0, doc)], problems, ctx
    raise InputError(f"{path}: expected a JSON object or list of records, got {type(doc).__name__}")


def _unflatten(row: dict[str, str | None]) -> dict[str, Any]:
    """CSV row with dotted names → nested dict; empty cells → None."""
    out: dict[str, Any] = {}
    for key, val in row.items():
        if key is None:
            continue
        v: Any = None if val is None or val.strip() == "" else val
        parts = key.strip().split(".")
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
    result = ImportResult()
    for p in [paths] if isinstance(paths, Path) else paths:
        p = Path(p)
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.suffix.lower() in (".json", ".jsonl", ".csv"))
            if not files:
                raise InputError(f"{p}: folder holds no .json, .jsonl or .csv files")
        elif p.exists():
            files = [p]
        else:
            raise InputError(f"{p}: no such file or folder")
        for f in files:
            rows, problems, ctx = _rows(f, max_bytes)
            result.files.append(str(f))
            result.problems += problems
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

    Returns:
        ``(record, None)`` or ``(None, problem)`` naming file, index and field.
    """
    shape = detect_shape(row)
    mappers = {
        "native": record_from_native,
        "localmaxxing": record_from_localmaxxing,
        "vllm_bench": record_from_vllm_bench,
        "llama_bench": record_from_llama_bench,
        "llama_server": lambda r: record_from_llama_server_response(r, None),
    }
    if shape == "unknown":
        keys = ", ".join(list(row)[:6]) if isinstance(row, dict) else type(row).__name__
        return None, Problem(file, index, "(shape)", f"not a recognised record shape (keys: {keys})")
    try:
        rec = mappers[shape](row)
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "(record)"
        got = err.get("input")
        got_s = "" if isinstance(got, dict) else f" (got {got!r})"
        more = f"; and {len(e.errors()) - 1} more" if len(e.errors()) > 1 else ""
        src = _SOURCE_FIELD.get(shape, {}).get(loc)
        loc_s = f"{loc} (from {src})" if src else loc
        return None, Problem(file, index, loc_s, f"{err['msg']}{got_s}{more}")
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        return None, Problem(file, index, "(mapping)", f"{shape} row: {type(e).__name__}: {e}")
    prov = dict(rec.provenance)
    prov.update({"file": file, "index": index, "importer": shape})
    if context and context.get("source") and not rec.source_url:
        rec.source_url = str(context["source"])
    rec.provenance = prov
    return rec, None


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
        row["power_w"] = [float(x) for x in re.split(r"[;, ]+", pw.strip()) if x]
    elif pw is None and "power_w" in row:
        row["power_w"] = []
    rec = Record.model_validate(row)
    return _fill_from_launch(rec)


def _num(v: Any) -> float | None:
    if v is None or v == "":
        return None
    return float(v)


def _billions(v: Any) -> float | None:
    n = _num(v)
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
        params = _num(m.get("params"))
        active = _num(m.get("activeParams"))
        # live rows give params in billions when small numbers, raw counts otherwise
        model = {"name": m.get("hfId") or m.get("name"),
                 "params_total": None if params is None else (params * 1e9 if params < 1e5 else params),
                 "params_active": None if active is None else (active * 1e9 if active < 1e5 else active),
                 "is_moe": m.get("isMoE")}
    else:
        model = {"name": row.get("hfId") or m, "params_total": _billions(row.get("paramsB")),
                 "params_active": _billions(row.get("activeParamsB"))}
        assumptions.append("paramsB/activeParamsB read as billions; activeParamsB null = unknown")
    if isinstance(hw, dict):
        hardware = {"gpu_name": hw.get("gpuName"), "gpu_count": hw.get("gpuCount") or 1}
    else:
        hardware = {"gpu_name": hw or row.get("hardwareTemplate"), "gpu_count": row.get("deviceCount") or 1}
        mem = _num(row.get("memoryGB"))
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


def record_from_vllm_bench(row: dict[str, Any], filename: str | None = None) -> Record:
    """A ``vllm bench serve --save-result`` JSON document.

    Upstream writes latencies in milliseconds under ``*_ms`` names
    (``median_ttft_ms``); derived clients (e.g. InferenceX) write seconds under
    names without the suffix (``median_ttft``). The unit assumed is recorded in
    ``provenance.assumptions``. Per-stream decode rate = 1 / median TPOT.

    Raises:
        pydantic.ValidationError: a bad field.
    """
    assumptions: list[str] = []
    if "median_ttft_ms" in row or "median_tpot_ms" in row:
        ttft_ms = _num(row.get("median_ttft_ms"))
        tpot_s = None if row.get("median_tpot_ms") is None else _num(row["median_tpot_ms"]) / 1000
        assumptions.append("latencies in milliseconds (*_ms names, upstream vllm bench serve)")
    else:
        t = _num(row.get("median_ttft"))
        ttft_ms = None if t is None else t * 1000
        tpot_s = _num(row.get("median_tpot"))
        if t is not None or tpot_s is not None:
            assumptions.append("latencies in seconds (names without _ms: derived client convention)")
    assumptions.append("tok_s_decode = 1 / median TPOT (per stream); output_throughput = aggregate")
    rec = Record.model_validate({
        "id": filename or row.get("date"),
        "date": row.get("date"),
        "model": {"name": row.get("model_id")},
        "engine": {"name": "vllm", "version": row.get("vllm_version") or row.get("version")},
        "concurrency": row.get("max_concurrency"),
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
    n_gen, n_prompt = int(row.get("n_gen") or 0), int(row.get("n_prompt") or 0)
    avg_ts = row.get("avg_ts")
    gpu_info = row.get("gpu_info") or ""
    gpus = [g.strip() for g in gpu_info.split(",") if g.strip()]
    size, nparams = _num(row.get("model_size")), _num(row.get("model_n_params"))
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
    if path.suffix.lower() == ".gguf":
        try:
            from gguf import GGUFReader

            reader = GGUFReader(str(path))
        except Exception as e:
            raise InputError(f"{path}: not a readable GGUF file ({type(e).__name__}: {e})") from None
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
