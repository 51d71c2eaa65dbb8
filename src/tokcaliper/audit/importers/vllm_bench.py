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
        """True for an object with ``output_throughput`` and ``completed`` or ``max_concurrency``."""
        return isinstance(row, dict) and "output_throughput" in row and (
            "completed" in row or "max_concurrency" in row)

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
