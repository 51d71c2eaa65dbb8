"""LocalMaxxing leaderboard rows, snapshot and live shapes.

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
``activeParamsB: null`` means unknown, not dense; live ``params`` below 1e5
are billions, above raw counts. ``gpuPowerWatts`` is a list of watts, or one
reading (a number, or numeric text in a CSV cell).
"""

from __future__ import annotations

from typing import Any

from tokcaliper.audit.importers.base import FieldError, RecordBuilder, fill_from_launch, get, num, show
from tokcaliper.model.record import Record


class LocalMaxxingImporter:
    """LocalMaxxing snapshot and live rows."""

    name = "localmaxxing"

    def detect(self, row: Any) -> bool:
        """True for a row with ``observedTokS``/``tokSOut``/``hfId``, or a live ``model{hfId|isMoE}``."""
        if not isinstance(row, dict):
            return False
        if "observedTokS" in row or "tokSOut" in row or "hfId" in row:
            return True
        m = row.get("model")
        return isinstance(m, dict) and ("hfId" in m or "isMoE" in m)

    def to_record(self, row: dict[str, Any], *, filename: str | None = None) -> Record:
        """See :func:`record_from_localmaxxing`."""
        return record_from_localmaxxing(row)


def _billions(v: Any, field_name: str) -> float | None:
    n = num(v, field_name)
    return None if n is None else n * 1e9


def _count_or_billions(v: Any, field_name: str) -> float | None:
    n = num(v, field_name)
    return None if n is None else (n * 1e9 if n < 1e5 else n)


def record_from_localmaxxing(row: dict[str, Any]) -> Record:
    """A LocalMaxxing leaderboard row, snapshot or live shape (see the module docstring).

    Raises:
        FieldError: a bad field, by record path and the row's own field
            (``tok_s_decode (from observedTokS)``), or a nested block that is
            not an object (``engineFlags``).
    """
    if "engineFlags" in row and not row["engineFlags"]:  # "" / {} / null: no flags
        row = {k: v for k, v in row.items() if k != "engineFlags"}
    b = RecordBuilder()
    b.assumptions.append("observedTokS/tokSOut read as the per-stream decode rate (tok/s)")
    m, hw, eng = row.get("model"), row.get("hardware"), row.get("engine")
    if isinstance(m, dict):  # live shape
        b.take(row, "model.name", "model.hfId", "model.name", truthy=True)
        b.take(row, "model.params_total", "model.params", convert=_count_or_billions)
        b.take(row, "model.params_active", "model.activeParams", convert=_count_or_billions)
        b.take(row, "model.is_moe", "model.isMoE")
    else:
        b.take(row, "model.name", "hfId", "model", truthy=True)
        b.take(row, "model.params_total", "paramsB", convert=_billions)
        b.take(row, "model.params_active", "activeParamsB", convert=_billions)
        b.assumptions.append("paramsB/activeParamsB read as billions; activeParamsB null = unknown")
    if isinstance(hw, dict):
        b.take(row, "hardware.gpu_name", "hardware.gpuName")
        b.take(row, "hardware.gpu_count", "hardware.gpuCount")
    else:
        b.take(row, "hardware.gpu_name", "hardware", "hardwareTemplate", truthy=True)
        b.take(row, "hardware.gpu_count", "deviceCount")
        mem = num(row.get("memoryGB"), "memoryGB")
        if mem:
            b.put("hardware.memory_gb", mem, "memoryGB")
    if not b.data.get("hardware", {}).get("gpu_count"):  # 0 or absent: one device
        b.data.setdefault("hardware", {})["gpu_count"] = 1
        b.sources.pop("hardware.gpu_count", None)
    if isinstance(eng, dict):
        b.take(row, "engine.name", "engine.engineName")
        b.take(row, "engine.version", "engine.engineVersion")
        b.take(row, "quantization.weights", "engine.quantization")
    else:
        b.take(row, "engine.name", "engine", "runtimeKey", truthy=True)
        b.take(row, "engine.version", "engineVersion")
        b.take(row, "quantization.weights", "quantization")
    if not b.take(row, "launch_command", "engineFlags.commandSnippet", "command", truthy=True):
        b.data.pop("launch_command", None)
        b.sources.pop("launch_command", None)
    b.take(row, "id", "id")
    b.take(row, "submitter", "submitter", "userName", "user", truthy=True)
    b.take(row, "date", "createdAt")
    b.take(row, "batch_size", "batchSize")
    b.take(row, "concurrency", "engineFlags.concurrency")
    b.take(row, "context_length", "contextLength")
    b.take(row, "prefix_cache", "engineFlags.prefixCaching")
    b.take(row, "tok_s_decode", "observedTokS", "tokSOut")
    b.take(row, "tok_s_prefill", "prefillTokS", "tokSPrefill")
    b.take(row, "ttft_ms", "ttftMs")
    b.take(row, "notes", "notes")
    b.take(row, "source_url", "source", "url", truthy=True)
    if get(row, "engineFlags.specMethod") or get(row, "engineFlags.specNumTokens") \
            or get(row, "engineFlags.specMeanAcceptedLength"):
        for target, src in (("method", "specMethod"), ("window_k", "specNumTokens"), ("drafted", "specDraftTokens"),
                            ("accepted", "specAcceptedTokens"), ("al", "specMeanAcceptedLength")):
            b.take(row, f"speculative.{target}", f"engineFlags.{src}")
    power = row.get("gpuPowerWatts") or []
    if isinstance(power, (int, float, str)) and not isinstance(power, bool):
        power = [num(power, "gpuPowerWatts")]  # one reading (a CSV cell is text)
    if not isinstance(power, list):
        raise FieldError("gpuPowerWatts", f"expected a list of watts, got {show(power)}")
    b.put("power_w", [p for p in power if p is not None] or None, "gpuPowerWatts")
    return fill_from_launch(b.build())
