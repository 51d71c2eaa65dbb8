"""``vllm bench serve --save-result`` JSON documents, and files of clients derived from it.

Units (the one trap of this format): upstream ``vllm bench serve`` writes
latencies in **milliseconds** under ``*_ms`` names (``median_ttft_ms``,
``median_tpot_ms``); derived clients (e.g. InferenceX's
``benchmark_serving``) write **seconds** under the same names without the
suffix (``median_ttft``, ``median_tpot``). A document with any ``*_ms``
latency is read as milliseconds; one with only unit-less names as seconds.
The unit assumed is recorded in ``provenance.assumptions``.

Mapping: ``output_throughput`` → aggregate tok/s; per-stream decode rate =
1 / median TPOT; ``completed`` → ``requests`` (the totals add up over that
many requests, which A5 needs); ``total_output_tokens`` / ``duration`` →
output tokens / seconds; ``max_concurrency`` → concurrency.

GPU count: the file's own ``tensor_parallel_size`` (or ``tp`` / ``tp_size``)
times ``pipeline_parallel_size`` when present; otherwise a single unambiguous
``tpN`` token in the file name (InferenceX names files ``…_vllm_tp8_…``),
assuming one GPU per TP rank and no pipeline or data parallelism; the source
is recorded in the assumptions. The result files do not name the GPU model,
so it stays unknown (give ``--bandwidth``).
"""

from __future__ import annotations

import re
from typing import Any

from tokcaliper.audit.importers.base import RecordBuilder, num
from tokcaliper.model.record import Record

#: Latency names of upstream vllm bench serve (milliseconds); their unit-less twins are seconds.
MS_NAMES = ("median_ttft_ms", "median_tpot_ms", "mean_ttft_ms", "mean_tpot_ms", "median_itl_ms", "median_e2el_ms")


class VllmBenchImporter:
    """One ``vllm bench serve --save-result`` document (or a derived client's)."""

    name = "vllm_bench"

    def detect(self, row: Any) -> bool:
        """True for an object with ``output_throughput`` and ``completed`` or ``max_concurrency``
        that is not an SGLang ``bench_serving`` line (those also have both; :mod:`.sglang_bench`)."""
        from tokcaliper.audit.importers.sglang_bench import detect_row

        return isinstance(row, dict) and "output_throughput" in row and (
            "completed" in row or "max_concurrency" in row) and not detect_row(row)

    def to_record(self, row: dict[str, Any], *, filename: str | None = None) -> Record:
        """See :func:`record_from_vllm_bench`."""
        return record_from_vllm_bench(row, filename)


def latency_unit(row: dict[str, Any]) -> str:
    """``"ms"`` when any upstream ``*_ms`` latency name is present, else ``"s"`` (derived clients)."""
    return "ms" if any(k in row for k in MS_NAMES) else "s"


def tp_from_filename(filename: str | None) -> int | None:
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
    """A ``vllm bench serve --save-result`` JSON document (see the module docstring for units).

    Args:
        row: the parsed document.
        filename: its base name (for the ``tpN`` token and the record id).

    Raises:
        FieldError: a bad field, by record path and source field
            (``tok_s_aggregate (from output_throughput)``), or a non-numeric latency.
    """
    b = RecordBuilder()
    if latency_unit(row) == "ms":
        ttft_src, tpot_src = "median_ttft_ms", "median_tpot_ms"
        ttft_ms = num(row.get(ttft_src), ttft_src)
        tpot_ms = num(row.get(tpot_src), tpot_src)
        tpot_s = None if tpot_ms is None else tpot_ms / 1000
        b.assumptions.append("latencies in milliseconds (*_ms names, upstream vllm bench serve)")
    else:
        ttft_src, tpot_src = "median_ttft", "median_tpot"
        t = num(row.get(ttft_src), ttft_src)
        ttft_ms = None if t is None else t * 1000
        tpot_s = num(row.get(tpot_src), tpot_src)
        if t is not None or tpot_s is not None:
            b.assumptions.append("latencies in seconds (names without _ms: derived client convention)")
    b.assumptions.append("tok_s_decode = 1 / median TPOT (per stream); output_throughput = aggregate")
    tp_key = next((k for k in ("tensor_parallel_size", "tp_size", "tp") if row.get(k) is not None), None)
    if tp_key is not None:
        tp = num(row[tp_key], tp_key)
        pp = num(row.get("pipeline_parallel_size"), "pipeline_parallel_size") or 1
        b.put("hardware.gpu_count", tp * pp, tp_key)
        if pp == 1:
            b.put("hardware.split_mode", "tensor", tp_key)
        b.assumptions.append(f"GPU count {tp * pp:g} from {tp_key}" + (" × pipeline_parallel_size" if pp != 1 else ""))
    else:
        tp_name = tp_from_filename(filename)
        if tp_name is not None:
            b.put("hardware.gpu_count", tp_name, "file name")
            b.put("hardware.split_mode", "tensor", "file name")
            b.assumptions.append(f"GPU count {tp_name} from 'tp{tp_name}' in the file name {filename!r} "
                                 "(one GPU per tensor-parallel rank; no pipeline/data parallelism assumed)")
    if filename:
        b.put("id", filename, "file name")
    else:
        b.take(row, "id", "date")
    b.take(row, "date", "date")
    b.take(row, "model.name", "model_id")
    b.put("engine.name", "vllm")
    b.take(row, "engine.version", "vllm_version", "version", truthy=True)
    b.take(row, "concurrency", "max_concurrency")
    b.take(row, "requests", "completed")
    b.take(row, "prompt_tokens", "total_input_tokens")
    b.take(row, "output_tokens", "total_output_tokens")
    b.take(row, "seconds", "duration")
    b.take(row, "tok_s_aggregate", "output_throughput")
    if tpot_s:
        b.put("tok_s_decode", 1 / tpot_s, tpot_src)
    b.put("ttft_ms", ttft_ms, ttft_src)
    return b.build()


# --------------------------------------------------------------------------- as runs (issue 20)

#: vLLM's latency names → RunMetrics fields.
_LAT = {"ttft": "ttft_s", "tpot": "tpot_s", "itl": "itl_s", "e2el": "e2e_s"}


def runs_from_document(row: dict[str, Any], file: str) -> list[Any]:
    """The one run of a ``vllm bench serve --save-result`` document.

    ``{mean,median,p90,p99}_{ttft,tpot,itl,e2el}_ms`` → ``ttft_s``/``tpot_s``/``itl_s``/``e2e_s``
    (ms → s; unit-less names of derived clients are seconds, see :func:`latency_unit`);
    other percentiles (``p99.9``, ``std``) stay in the file. ``output_throughput`` →
    aggregate tok/s, ``request_throughput`` → req/s, ``duration`` → wall,
    ``completed``/``failed``, ``total_input_tokens``/``total_output_tokens``. The
    ``--save-detailed`` arrays (``ttfts``, ``itls``, ``output_lens``, ``input_lens``,
    ``errors``; seconds) become per-request samples (no start times: ``start_s`` = 0).
    The old script's typo key ``"request_goodput:"`` is noted, not mapped.
    """
    from tokcaliper.audit.importers.runs import PeerRun, Reader, metrics_from
    from tokcaliper.model.run import RequestRecord

    r = Reader()
    unit = latency_unit(row)
    factor, suffix, how = (1e-3, "_ms", "ms → s") if unit == "ms" else (1.0, "", "s")
    dists = {}
    for name, target in _LAT.items():
        keys = {stat: f"{src}_{name}{suffix}" for stat, src in
                (("mean", "mean"), ("p50", "median"), ("p90", "p90"), ("p99", "p99")) if f"{src}_{name}{suffix}" in row}
        d = {k: row[v] for k, v in keys.items()}
        dists[target] = r.dist(d, f"{name}{suffix}", target, factor, how, keys={k: k for k in d}, n=0)
        for stat, v in keys.items():
            if f"{target}.{stat}" in r.fields:
                r.fields[f"{target}.{stat}"] = f"{v} ({how})"
    n_done = r.num(row.get("completed"), "completed", "completed")
    failed = r.num(row.get("failed"), "failed", "failed") or 0
    for d in dists.values():
        d.n = int(n_done or 0) if any(x is not None for x in (d.mean, d.p50, d.p90, d.p99)) else 0
    notes = list(r.notes)
    if "request_goodput:" in row:
        notes.append("key 'request_goodput:' (trailing colon: old benchmark_serving.py) not mapped")
    reqs: list[RequestRecord] = []
    ttfts, outs = row.get("ttfts"), row.get("output_lens")
    if isinstance(ttfts, list) and isinstance(outs, list) and len(ttfts) == len(outs):
        itls, ins, errs = row.get("itls") or [], row.get("input_lens") or [], row.get("errors") or []
        for i, (t, o) in enumerate(zip(ttfts, outs)):
            gaps = itls[i] if i < len(itls) and isinstance(itls[i], list) else []
            err = errs[i] if i < len(errs) and errs[i] else None
            reqs.append(RequestRecord(index=i, start_s=0.0, ttft_s=t if t else None, itl_s=gaps,
                                      e2e_s=(t + sum(gaps)) if t else None, output_tokens=int(o or 0),
                                      prompt_tokens=ins[i] if i < len(ins) else None, token_count_source="usage",
                                      content_chunks=len(gaps) + 1, error=str(err) if err else None))
        notes.append("per-request samples from the --save-detailed arrays (no start times: start_s = 0; "
                     "E2E = TTFT + Σ ITL)")
    rate = row.get("request_rate")
    settings = {"model": row.get("model_id"), "engine": row.get("backend"), "concurrency": row.get("max_concurrency"),
                "requests": row.get("num_prompts"), "request_rate": rate,
                "rate_rps": rate if isinstance(rate, (int, float)) and not isinstance(rate, bool) else None,
                "burstiness": row.get("burstiness"), "date": row.get("date")}
    if row.get("max_concurrency") is not None:
        r.fields["concurrency"] = "max_concurrency"
    ver = row.get("vllm_version") or row.get("version")
    return [PeerRun(tool="vllm", version=str(ver) if ver else None, format="vllm_bench", file=file, benchmark=None,
                    settings={k: v for k, v in settings.items() if v is not None},
                    metrics=metrics_from(
                        wall_s=r.num(row.get("duration"), "duration", "wall_s", unit="s"), completed=int(n_done or 0),
                        failed=int(failed), output_tokens=r.num(row.get("total_output_tokens"), "total_output_tokens",
                                                                "output_tokens"),
                        prompt_tokens=r.num(row.get("total_input_tokens"), "total_input_tokens", "prompt_tokens"),
                        aggregate_output_tok_s=r.num(row.get("output_throughput"), "output_throughput",
                                                     "aggregate_output_tok_s"),
                        request_throughput_rps=r.num(row.get("request_throughput"), "request_throughput",
                                                     "request_throughput_rps"),
                        ttft=dists["ttft_s"], tpot=dists["tpot_s"], itl=dists["itl_s"], e2e=dists["e2e_s"]),
                    requests=reqs, fields=r.fields, notes=notes + (
                        [] if unit == "ms" else ["latencies in seconds (names without _ms: derived client)"]))]
