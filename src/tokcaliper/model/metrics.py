"""The metric registry: every per-run metric, once, with its unit and direction.

Each :class:`Metric` says what it is called (the name users give to
``--metric`` and the key the store indexes), its unit, whether a higher or a
lower value is better, how it is computed from a run's
:class:`~tokcaliper.model.run.RunMetrics` and what it means. The summary, the
store, the noise-floor report, ``plan --metric`` and every comparison read
this table; nothing else lists metrics.

Definitions follow the usual serving benchmarks (vLLM ``bench serve``,
genai-perf/AIPerf): TTFT = request issued → first generated token; ITL = gap
between consecutive tokens of one stream; TPOT = (E2E − TTFT) ÷ (output
tokens − 1) per request; aggregate output throughput = all output tokens ÷
the run's wall time. Latency percentiles are over the requests (TTFT, TPOT,
E2E) or over all token gaps (ITL) of one run, numpy's linear interpolation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from tokcaliper.errors import InputError
from tokcaliper.model.run import Percentiles, RunMetrics

__all__ = [
    "METRICS",
    "NOT_METRICS",
    "Metric",
    "get_metric",
    "headline_metrics",
    "run_scalars",
    "scalar_series",
]

Better = Literal["higher", "lower"]


@dataclass(frozen=True)
class Metric:
    """One per-run scalar metric.

    Attributes:
        name: identifier, e.g. ``"ttft_p50_ms"`` (stable: stored in databases).
        label: human label with unit, e.g. ``"TTFT p50 (ms)"``.
        unit: ``"tok/s"``, ``"req/s"``, ``"ms"``, ``"s"`` or ``"%"``.
        better: ``"higher"`` or ``"lower"`` — which direction is an improvement.
        computed: how the value is computed, in words and symbols.
        description: one line on what it tells a user.
        headline: shown in the noise-floor report by default (the rest on request).
        extract: ``RunMetrics → value`` in ``unit``; ``None`` when the run has no data.
        noise_abs: the metric's known resolution in ``unit``, where one is known
            (``None`` otherwise). Comparisons of such a metric default to the
            difference scale b − a with this absolute noise floor
            (:mod:`tokcaliper.stats.difference`): its runs can read 0 and sit at
            a few resolution steps, where ratios and a relative band mean nothing.
        needs: the load option without which a run has no value for it
            (``"--slo"``, ``"--steady-state"``; ``None``: every run has one).
    """

    name: str
    label: str
    unit: str
    better: Better
    computed: str
    description: str
    headline: bool
    extract: Callable[[RunMetrics], float | None]
    noise_abs: float | None = None
    needs: str | None = None

    @property
    def higher_is_better(self) -> bool:
        """True when a larger value is an improvement (throughputs)."""
        return self.better == "higher"


def _scaled(x: float | None, factor: float) -> float | None:
    return None if x is None else factor * x


_LATENCIES: dict[str, tuple[str, str, str, str]] = {
    # field of RunMetrics: (name prefix, label, unit, what it is over)
    "ttft_s": ("ttft", "TTFT", "ms", "request issued → first generated token, over the run's requests"),
    "itl_s": ("itl", "ITL", "ms", "gap between consecutive tokens of a stream, over all gaps of the run"),
    "tpot_s": ("tpot", "TPOT", "ms", "(E2E − TTFT) ÷ (output tokens − 1), over the run's requests"),
    "e2e_s": ("e2e", "E2E latency", "s", "request issued → end of stream, over the run's requests"),
    "dispatch_s": ("dispatch", "dispatch delay", "ms",
                   "request scheduled → sent (client queueing, connect if none was ready), over the requests"),
    "ttft_from_schedule_s": ("ttft_from_schedule", "TTFT from schedule", "ms",
                             "request scheduled → first generated token (shows coordinated omission), "
                             "over the requests"),
}
_STATS: dict[str, str] = {"mean": "mean", "p50": "p50", "p90": "p90", "p99": "p99"}
# The latency figures the noise floor shows by default (the others exist for --metric).
_HEADLINE_LATENCIES = {"ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "tpot_mean_ms", "e2e_p50_s"}


def _latency_metric(field: str, stat: str) -> Metric:
    prefix, label, unit, over = _LATENCIES[field]
    factor = 1000.0 if unit == "ms" else 1.0
    name = f"{prefix}_{stat}_{unit}"

    def extract(m: RunMetrics) -> float | None:
        p: Percentiles = getattr(m, field)
        return _scaled(getattr(p, stat), factor)

    return Metric(
        name=name, label=f"{label} {_STATS[stat]} ({unit})", unit=unit, better="lower",
        computed=f"{stat} of {label} ({over})" + (", × 1000 for ms" if factor != 1 else ""),
        description=f"{label} {stat} of one run; lower is better",
        headline=name in _HEADLINE_LATENCIES, extract=extract,
    )


_RATES: tuple[Metric, ...] = (
    Metric(
        name="aggregate_output_tok_s", label="aggregate output tok/s", unit="tok/s", better="higher",
        computed="Σ output tokens of completed requests ÷ wall time (first measured issue → last end)",
        description="output throughput of all streams together: what the server delivers",
        headline=True, extract=lambda m: m.aggregate_output_tok_s,
    ),
    Metric(
        name="per_stream_decode_tok_s_mean", label="per-stream decode tok/s (mean)", unit="tok/s",
        better="higher",
        computed="mean over requests of (output tokens − 1) ÷ (E2E − TTFT)",
        description="decode speed one user sees after the first token",
        headline=True, extract=lambda m: m.per_stream_decode_tok_s_mean,
    ),
    Metric(
        name="per_stream_decode_tok_s_median", label="per-stream decode tok/s (median)", unit="tok/s",
        better="higher",
        computed="median over requests of (output tokens − 1) ÷ (E2E − TTFT)",
        description="per-stream decode speed, robust to a few slow streams",
        headline=False, extract=lambda m: m.per_stream_decode_tok_s_median,
    ),
    Metric(
        name="request_throughput_rps", label="request throughput req/s", unit="req/s", better="higher",
        computed="completed requests ÷ wall time",
        description="requests finished per second",
        headline=True, extract=lambda m: m.request_throughput_rps,
    ),
)

def _client(m: RunMetrics, get: Callable[[object], float | None]) -> float | None:
    return None if m.client is None else get(m.client)


_CLIENT: tuple[Metric, ...] = (
    Metric(
        name="client_loop_lag_p99_ms", label="client loop lag p99 (ms)", unit="ms", better="lower",
        computed="p99 of the lateness of a 10 ms periodic probe on the client's event loop, × 1000",
        description="how late the client's event loop ran: requests may leave this late, and read "
                    "times trail arrivals by it unless kernel-stamped (client_health.reads_kernel_stamped)",
        headline=False,
        extract=lambda m: _client(m, lambda c: _scaled(c.loop_lag_s.p99, 1000.0)),  # type: ignore[attr-defined]
        # epoll_wait takes whole milliseconds and Python rounds up: an idle loop's
        # probes read 0–1 ms late (tokcaliper.load.monitor), so 1 ms is the resolution.
        noise_abs=1.0,
    ),
    Metric(
        name="client_cpu_pct", label="client loop CPU (%)", unit="%", better="lower",
        computed="CPU time of the client's event-loop thread ÷ the phase's wall time × 100",
        description="how busy the load client was; near 100 % it is the bottleneck",
        headline=False,
        extract=lambda m: _client(m, lambda c: _scaled(c.cpu_share, 100.0)),  # type: ignore[attr-defined]
    ),
)

def _slo(m: RunMetrics, get: Callable[[object], float | None]) -> float | None:
    return None if m.slo is None else get(m.slo)


def _steady(m: RunMetrics, get: Callable[[object], float | None]) -> float | None:
    return None if m.steady is None else get(m.steady)


# Goodput under SLOs (--slo; tokcaliper.load.slo) and the steady-state window
# (--steady-state; tokcaliper.load.steady): None in runs that did not ask for them.
_SLO: tuple[Metric, ...] = (
    Metric(
        name="slo_attainment_pct", label="SLO attainment (%)", unit="%", better="higher",
        computed="requests that completed and met every SLO ÷ measured requests (failed ones count "
                 "as missing) × 100",
        description="share of requests served within the SLOs (--slo)",
        headline=False, needs="--slo",
        extract=lambda m: _slo(m, lambda s: _scaled(s.attainment, 100.0)),  # type: ignore[attr-defined]
    ),
    Metric(
        name="goodput_rps", label="goodput req/s", unit="req/s", better="higher",
        computed="requests that met every SLO ÷ wall time (vLLM bench serve's request_goodput)",
        description="requests per second served within the SLOs (--slo)",
        headline=False, needs="--slo",
        extract=lambda m: _slo(m, lambda s: s.goodput_rps),  # type: ignore[attr-defined]
    ),
    Metric(
        name="goodput_tok_s", label="goodput output tok/s", unit="tok/s", better="higher",
        computed="Σ output tokens of the requests that met every SLO ÷ wall time",
        description="output tokens per second served within the SLOs (--slo)",
        headline=False, needs="--slo",
        extract=lambda m: _slo(m, lambda s: s.goodput_tok_s),  # type: ignore[attr-defined]
    ),
)


def _steady_latency(field: str, stat: str, label: str) -> Metric:
    return Metric(
        name=f"steady_{field}_{stat}_ms", label=f"steady {label} {stat} (ms)", unit="ms", better="lower",
        computed=f"{stat} of {label} within the steady-state window (--steady-state), × 1000",
        description=f"{label} {stat} with ramp-up and drain excluded",
        headline=False, needs="--steady-state",
        extract=lambda m: _steady(m, lambda w: _scaled(getattr(getattr(w, f"{field}_s"), stat), 1000.0)),
    )


_STEADY: tuple[Metric, ...] = (
    Metric(
        name="steady_output_tok_s", label="steady output tok/s", unit="tok/s", better="higher",
        computed="output tokens that arrived within the steady-state window ÷ its length",
        description="output throughput with ramp-up and drain excluded (--steady-state)",
        headline=False, needs="--steady-state",
        extract=lambda m: _steady(m, lambda w: w.output_tok_s),  # type: ignore[attr-defined]
    ),
    *(_steady_latency(f, s, lab) for f, lab in (("ttft", "TTFT"), ("itl", "ITL")) for s in ("p50", "p99")),
)

# The server's prefix-cache hit rate (tokcaliper.load.prefix_cache): every run
# whose server reports cached prompt tokens has one (llama.cpp always does).
_CACHE: tuple[Metric, ...] = (
    Metric(
        name="prefix_cache_hit_pct", label="prefix-cache hit (%)", unit="%", better="higher",
        computed="Σ cached prompt tokens ÷ Σ prompt tokens over the completed requests × 100 "
                 "(usage.prompt_tokens_details.cached_tokens or llama.cpp's timings.cache_n; "
                 "else vLLM's prefix_cache_hits ÷ prefix_cache_queries over the run; SGLang's "
                 "gauge is not scoped to a run and gives none)",
        description="share of prompt tokens the server took from its prefix cache "
                    "(--shared-prefix, --turns)",
        headline=False,
        # SGLang's gauge is not scoped to the run: reported, never a run's metric.
        extract=lambda m: None if m.prefix_cache is None or m.prefix_cache.source == "gauge"
        else _scaled(m.prefix_cache.hit_share, 100.0),
    ),
)

#: Every per-run metric, by name, in display order (rates, then latencies, then the client's own).
METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        *_RATES,
        *(_latency_metric(f, s) for f in _LATENCIES for s in _STATS),
        *_CLIENT,
        *_SLO,
        *_STEADY,
        *_CACHE,
    )
}

#: Numeric fields of :class:`RunMetrics` that are deliberately not metrics, and why
#: (a test checks that every field is either a metric source or listed here).
NOT_METRICS: dict[str, str] = {
    "wall_s": "a duration set by --requests/--duration; throughput is the comparable figure",
    "completed": "a count, not a performance figure (reported beside every run)",
    "failed": "a count of failures (reported beside every run)",
    "excluded_warmup": "a count of excluded warm-up requests",
    "output_tokens": "a count fixed by the load (max_tokens × requests)",
    "prompt_tokens": "a count fixed by the prompt set",
}


#: The primary metric of an experiment or comparison by default: aggregate output
#: throughput (tok/s over all streams).
DEFAULT_METRIC = "aggregate_output_tok_s"


def get_metric(name: str) -> Metric:
    """The registry entry ``name``.

    Raises:
        InputError: unknown name (the message lists the valid ones).
    """
    try:
        return METRICS[name]
    except KeyError:
        raise InputError(f"unknown metric {name!r}; choose one of: {', '.join(METRICS)}") from None


def headline_metrics() -> list[Metric]:
    """The metrics a noise-floor report shows by default, in registry order."""
    return [m for m in METRICS.values() if m.headline]


def run_scalars(m: RunMetrics) -> dict[str, float | None]:
    """Every registry metric of one run, by name (``None`` where the run has no data)."""
    return {name: metric.extract(m) for name, metric in METRICS.items()}


def scalar_series(
    metrics: Sequence[RunMetrics], names: Sequence[str] | None = None
) -> dict[str, list[float]]:
    """Per metric label, its values over runs, in run order.

    Args:
        metrics: one :class:`RunMetrics` per run.
        names: registry names to include (default: :func:`headline_metrics`).

    Returns:
        ``label → values``; a metric missing (None) in any run is left out, so
        every series has one value per run and the noise floor's n is the
        number of runs.

    Raises:
        InputError: an unknown name in ``names``.
    """
    chosen = [get_metric(n) for n in names] if names is not None else headline_metrics()
    out: dict[str, list[float]] = {}
    for metric in chosen:
        values = [metric.extract(m) for m in metrics]
        if values and all(v is not None for v in values):
            out[metric.label] = [float(v) for v in values]  # type: ignore[arg-type]
    return out
