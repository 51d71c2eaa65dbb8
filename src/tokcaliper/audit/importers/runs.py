"""Peer tools' result files as runs: what every format module shares (issue 20).

Each format module of this package (:mod:`.vllm_bench`, :mod:`.aiperf`,
:mod:`.guidellm`, :mod:`.genai_perf`, :mod:`.llama_bench`,
:mod:`.inference_perf`, :mod:`.sglang_bench`, :mod:`.llmperf`) has two
outputs: audit :class:`~tokcaliper.model.record.Record` s (its ``Importer``)
and :class:`PeerRun` s — one per run the file describes — which
:func:`to_run` turns into stored :class:`~tokcaliper.model.run.Run` s. A
:class:`PeerRun` holds the tool's own summary mapped onto
:class:`~tokcaliper.model.run.RunMetrics` (units converted: latencies to
seconds, rates to tok/s or req/s), the settings the file states, per-request
samples where the file has them, and for every metric the source field and
the unit conversion (``fields``). Which figures only *resemble* tokcaliper's
is in :mod:`.definitions`.

Non-finite numbers (``Infinity``, ``NaN``: Python's JSON reader accepts the
bare tokens) are stored as missing, with a note naming the field (:meth:`Reader.num`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokcaliper.audit.importers.base import FieldError, show
from tokcaliper.model.run import LoadConfig, Percentiles, RequestRecord, Run, RunMetrics, RunSource
from tokcaliper.model.timestamps import utc_iso, utc_now_iso

__all__ = ["PeerRun", "Reader", "metrics_from", "record_from_peer_run", "to_run"]

#: Per-request records → a run's summary: :func:`tokcaliper.load.summary.summarize`, passed in by
#: the caller (the audit layer does not import the load layer; docs/ARCHITECTURE.md).
Summarize = Callable[[Sequence[RequestRecord]], RunMetrics]

#: Unit names → factor to seconds (latencies) as the tools spell them.
TO_SECONDS: dict[str, float] = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
                                "seconds": 1.0}


@dataclass
class Reader:
    """Reads numbers from one source document, converting units and noting what it did.

    ``fields`` maps a target (``ttft_s.p50``, ``aggregate_output_tok_s``) to the
    source field and its conversion (``"median_ttft_ms (ms → s)"``); ``notes``
    collects the non-finite values stored as missing.
    """

    fields: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def num(self, v: Any, src: str, target: str | None = None, factor: float = 1.0,
            unit: str | None = None) -> float | None:
        """``v`` × ``factor`` as a finite float, or None (absent, or ``Infinity``/``NaN``: noted).

        Raises:
            FieldError: text that is not a number, a list, an object (naming ``src``).
        """
        if v is None or v == "":
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float, str)):
            raise FieldError(src, f"expected a number, got {show(v)}")
        try:
            x = float(v)
        except ValueError:
            raise FieldError(src, f"expected a number, got {show(v)}") from None
        if not math.isfinite(x):
            self.notes.append(f"field {src} is {v!r} (not a finite number): stored as missing")
            return None
        if target:
            self.fields[target] = src + (f" ({unit})" if unit else "")
        return x * factor

    def dist(self, d: Any, src: str, target: str, factor: float = 1.0, unit: str | None = None,
             keys: dict[str, str] | None = None, n: int = 0) -> Percentiles:
        """A distribution object → :class:`Percentiles` (seconds when ``factor`` converts).

        Args:
            d: the tool's object (``{"mean":…, "median":…, "p90":…, "p99":…}`` or others).
            keys: our stat → the tool's key (default mean/p50/p90/p99 from
                ``mean``/``avg``, ``median``/``p50``, ``p90``, ``p99``).
            n: the sample size behind it (requests, or token gaps), when known.
        """
        if not isinstance(d, dict):
            return Percentiles(n=0)
        keys = keys or {}
        out: dict[str, float | None] = {}
        for stat, alts in (("mean", ("mean", "avg")), ("p50", ("median", "p50")), ("p90", ("p90",)),
                           ("p99", ("p99",))):
            key = keys.get(stat) or next((a for a in alts if a in d), None)
            out[stat] = None if key is None else self.num(d.get(key), f"{src}.{key}", f"{target}.{stat}",
                                                           factor, unit)
        cnt = d.get("count")
        size = n or (int(cnt) if isinstance(cnt, (int, float)) and not isinstance(cnt, bool)
                     and math.isfinite(cnt) else 0)
        return Percentiles(n=size if any(v is not None for v in out.values()) else 0, **out)


@dataclass
class PeerRun:
    """One run as a peer tool's file states it.

    Attributes:
        tool / version: the tool (``"vllm"``, ``"aiperf"`` …) and its version when the file says.
        format: the module that read it (``"vllm_bench"``, ``"aiperf"`` …).
        file: the file as given. benchmark: which run of a file of several
            (``"rate 4"``, ``"stage 2"``, ``"row 3"``), None for a one-run file.
        settings: what the file states about the load: ``model``, ``concurrency``,
            ``rate_rps``, ``input_tokens``, ``output_tokens``, ``requests``, ``url``,
            and the distinguishing setting of a benchmark, as the file names them.
        metrics: the tool's summary mapped onto :class:`RunMetrics` (seconds, tok/s, req/s).
        requests: per-request samples (empty when the file has none).
        fields: target → source field and conversion (see :class:`Reader`).
        notes: assumptions, non-finite values stored as missing, skipped records.
        started / finished: epoch seconds when the file states them.
    """

    tool: str
    version: str | None
    format: str
    file: str
    benchmark: str | None
    settings: dict[str, Any]
    metrics: RunMetrics
    requests: list[RequestRecord] = field(default_factory=list)
    fields: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    started: float | None = None
    finished: float | None = None


def metrics_from(*, wall_s: float | None, completed: int | None, failed: int = 0, output_tokens: float | None = None,
                 prompt_tokens: float | None = None, aggregate_output_tok_s: float | None = None,
                 request_throughput_rps: float | None = None, decode_mean: float | None = None,
                 decode_median: float | None = None, ttft: Percentiles | None = None,
                 itl: Percentiles | None = None, e2e: Percentiles | None = None,
                 tpot: Percentiles | None = None) -> RunMetrics:
    """A :class:`RunMetrics` from a tool's summary figures (units already converted).

    Throughputs the tool does not state are derived only from its own totals
    (output tokens ÷ duration, completed ÷ duration); nothing is guessed.
    """
    wall = float(wall_s or 0.0)
    done = int(completed or 0)
    out = int(round(output_tokens)) if output_tokens is not None else 0
    if aggregate_output_tok_s is None and output_tokens and wall > 0:
        aggregate_output_tok_s = output_tokens / wall
    if request_throughput_rps is None and completed is not None and wall > 0:
        request_throughput_rps = done / wall
    return RunMetrics(
        wall_s=wall, completed=done, failed=int(failed or 0), excluded_warmup=0, output_tokens=out,
        prompt_tokens=None if prompt_tokens is None else int(round(prompt_tokens)), token_count_source="usage",
        aggregate_output_tok_s=aggregate_output_tok_s, request_throughput_rps=request_throughput_rps,
        per_stream_decode_tok_s_mean=decode_mean, per_stream_decode_tok_s_median=decode_median,
        ttft_s=ttft or Percentiles(n=0), itl_s=itl or Percentiles(n=0), e2e_s=e2e or Percentiles(n=0),
        tpot_s=tpot or Percentiles(n=0))


def _int_setting(v: Any) -> int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 1:
        return None
    return int(v)


def to_run(p: PeerRun, *, session: str, arm: str, repetition: int, position: int, command_line: str,
           tool_version: str) -> Run:
    """The stored form of ``p``: a :class:`Run` with :attr:`Run.source` naming the tool.

    The load configuration holds what the file states (``base_url`` is the
    tool's target, or ``imported:<tool>``); a setting the file does not state
    keeps the :class:`LoadConfig` default and is absent from ``source.settings``.
    Times: the file's own (epoch s), else the import time.
    """
    s = p.settings
    cfg: dict[str, Any] = {"base_url": str(s.get("url") or f"imported:{p.tool}"), "requests": None,
                           "warmup": 0, "prompts_source": f"imported from {p.file}"}
    if s.get("model"):
        cfg["model"] = str(s["model"])
    if (c := _int_setting(s.get("concurrency"))) is not None:
        cfg["concurrency"] = c
    if (n := _int_setting(s.get("requests"))) is not None:
        cfg["requests"] = n
    if (k := _int_setting(s.get("output_tokens"))) is not None:
        cfg["max_tokens"] = k
    rate = s.get("rate_rps")
    if isinstance(rate, (int, float)) and not isinstance(rate, bool) and math.isfinite(rate) and rate > 0:
        cfg["rate_rps"] = float(rate)
    now = utc_now_iso()
    started = utc_iso(p.started) if p.started else now
    finished = utc_iso(p.finished) if p.finished else (utc_iso(p.started + p.metrics.wall_s) if p.started else now)
    source = RunSource(tool=p.tool, tool_version=p.version, format=p.format, file=p.file, benchmark=p.benchmark,
                       settings=dict(s), fields=dict(p.fields), notes=list(p.notes))
    return Run(session=session, arm=arm, repetition=repetition, position=position, started_at=started,
               finished_at=finished, command_line=command_line, server_version=None, tool_version=tool_version,
               config=LoadConfig(**cfg), metrics=p.metrics, requests=p.requests, source=source)


def record_from_peer_run(p: PeerRun, filename: str | None = None) -> Any:
    """The audit :class:`~tokcaliper.model.record.Record` of one peer run: its headline figures.

    ``tok_s_aggregate`` = aggregate output tok/s; ``tok_s_decode`` = the mean
    per-stream decode rate; ``ttft_ms`` = median TTFT (mean when no median);
    ``requests``/``seconds``/``output_tokens`` from the run's totals.

    Raises:
        FieldError: a value the record refuses (naming the record field and its source).
    """
    from tokcaliper.audit.importers.base import RecordBuilder

    m = p.metrics
    b = RecordBuilder()
    b.put("id", filename + (f" ({p.benchmark})" if p.benchmark else "") if filename else None, "file name")
    b.put("model.name", p.settings.get("model"), "model")
    b.put("engine.name", p.settings.get("engine"))
    b.put("concurrency", _int_setting(p.settings.get("concurrency")), p.fields.get("concurrency"))
    b.put("requests", m.completed or None, p.fields.get("completed"))
    b.put("seconds", m.wall_s or None, p.fields.get("wall_s"))
    b.put("output_tokens", m.output_tokens or None, p.fields.get("output_tokens"))
    b.put("tok_s_aggregate", m.aggregate_output_tok_s or None, p.fields.get("aggregate_output_tok_s"))
    b.put("tok_s_decode", m.per_stream_decode_tok_s_mean or None, p.fields.get("per_stream_decode_tok_s_mean"))
    ttft = m.ttft_s.p50 if m.ttft_s.p50 is not None else m.ttft_s.mean
    b.put("ttft_ms", None if ttft is None else ttft * 1000, p.fields.get("ttft_s.p50") or p.fields.get("ttft_s.mean"))
    b.assumptions += [f"{p.tool} result read as a run ({p.format}); figures are the tool's own definitions "
                      "(docs/import.md)", *p.notes]
    return b.build()
