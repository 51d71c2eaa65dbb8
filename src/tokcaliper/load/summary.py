"""Per-run metrics from per-request records (pure computation, no I/O).

Definitions follow the usual serving benchmarks (vLLM ``bench serve``,
genai-perf): TTFT = issue → first generated token; ITL = gap between
consecutive tokens of one stream; TPOT = (E2E − TTFT) ÷ (output tokens − 1),
undefined for a request whose text arrived at one instant (:func:`decode_time_s`);
aggregate output throughput = all output tokens ÷ the run's wall time.
Percentiles use numpy's default linear interpolation. The scalar metrics
taken from a summary (names, units, direction) are in
:mod:`tokcaliper.model.metrics`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from tokcaliper.model import warnings as W
from tokcaliper.model.run import ArrivalStats, ClientHealth, Percentiles, RequestRecord, RunMetrics


def percentiles(values: Sequence[float]) -> Percentiles:
    """Mean, p50, p90 and p99 of ``values`` (seconds); empty → all None."""
    if len(values) == 0:
        return Percentiles(n=0)
    arr = np.asarray(values, dtype=float)
    p50, p90, p99 = np.percentile(arr, [50, 90, 99])
    return Percentiles(n=len(arr), mean=float(arr.mean()), p50=float(p50), p90=float(p90), p99=float(p99))


def decode_time_s(rec: RequestRecord) -> float | None:
    """The time over which a request's tokens after the first arrived: E2E − TTFT, s.

    None (undefined, not a number) when the request failed, has < 2 tokens, or
    that interval is zero-length: E2E ≤ TTFT, or all its text arrived at one
    instant — one text chunk, or every text chunk in one network read
    (``first_token_s == last_token_s``). Then the tokens after the first came
    with it, and E2E − TTFT is only the stream's tail (usage, ``[DONE]``): a
    rate over it read 7 tokens over a 23 ms tail as 307.6 tok/s. Records stored before
    the token stamps existed are judged by ``content_chunks`` alone (0 there
    means not recorded).
    """
    if not rec.ok or rec.ttft_s is None or rec.e2e_s is None or rec.output_tokens < 2:
        return None
    if at_one_instant(rec):
        return None
    decode_s = rec.e2e_s - rec.ttft_s
    return decode_s if decode_s > 0 else None


def at_one_instant(rec: RequestRecord) -> bool:
    """Whether a request's text (two or more tokens of it) all arrived at one instant:
    one text chunk, or its first and last text chunk stamped alike."""
    if rec.output_tokens < 2:
        return False
    if rec.content_chunks == 1:
        return True
    return rec.first_token_s is not None and rec.last_token_s is not None \
        and rec.last_token_s <= rec.first_token_s


def decode_rate(rec: RequestRecord) -> float | None:
    """Per-stream decode rate, tok/s: (output tokens − 1) ÷ (E2E − TTFT).

    None when the request failed, produced < 2 tokens or its decode interval
    is zero-length (:func:`decode_time_s`).
    """
    decode_s = decode_time_s(rec)
    return None if decode_s is None else (rec.output_tokens - 1) / decode_s


#: Most tokens per text chunk, on average over a run's completed requests, that
#: a streaming server plausibly delivers: a speculative step delivers at most
#: draft window + 1 tokens and on average its acceptance length, below
#: llama.cpp's default ``--draft-max`` 16 + 1. More than 16 means the server sends
#: tokens in bunches (or its ``usage`` is wrong): ITL then measures the gap
#: between bunches, not tokens. The run is flagged, not invalidated.
MAX_TOKENS_PER_CHUNK = 16


def stream_warnings(done: Sequence[RequestRecord]) -> list[str]:
    """Where a run's completed requests' ``usage`` and streamed text disagree.

    Two sentences at most, each with its figures: requests whose text came at
    one instant (:func:`at_one_instant`; their decode rate and TPOT are left
    out), and usage counting more than :data:`MAX_TOKENS_PER_CHUNK` tokens per
    text chunk over the requests counted from ``usage``.
    """
    from tokcaliper.numbers import num

    out = []
    instant = sum(1 for r in done if at_one_instant(r))
    if instant:
        out.append(W.TEXT_AT_ONE_INSTANT.text(k=instant, n=len(done)))
    counted = [r for r in done if r.token_count_source == "usage" and r.content_chunks > 0]
    tokens, chunks = sum(r.output_tokens for r in counted), sum(r.content_chunks for r in counted)
    if chunks and tokens > MAX_TOKENS_PER_CHUNK * chunks:
        out.append(W.TOKENS_PER_CHUNK.text(ratio=num(tokens / chunks), tokens=tokens, chunks=chunks,
                                           bound=MAX_TOKENS_PER_CHUNK))
    return out


def judge_client(client: ClientHealth, dispatch: Percentiles, itl_p50_s: float | None = None,
                 foreign_cores: float | None = None) -> ClientHealth:
    """``client`` with ``client_limited`` and ``limits`` set from its bounds.

    Bounds (:mod:`tokcaliper.load.monitor`): loop lag p99 > ``LAG_BOUND_S``
    — or, where every arrival was kernel-stamped, > the larger of that and
    the run's median ITL ``itl_p50_s`` (a late loop then costs a stamp only
    when the next token of the same stream is already waiting, i.e. when it
    is later than the gap between tokens) — dispatch delay p99 >
    ``DISPATCH_BOUND_S``, loop CPU share > ``CPU_BOUND_SHARE``. Each crossed
    bound adds one sentence with its figures.

    A late dispatch is the client's only when its own figures show it (issue 21):
    its loop lag or its CPU share crossed their bounds too. Otherwise the client
    was idle and on time by its own clock, so the delay came from the host (a
    saturated host deschedules an idle client as well): the sentence names the
    host and goes to ``host_limits``; ``client_limited`` is not set by it. So does a
    late dispatch whose only own figure is the loop lag when other processes held the
    host (``foreign_cores`` ≥ :data:`~tokcaliper.model.telemetry.FOREIGN_CPU_BOUND_CORES`,
    the run's telemetry) while the client's CPU share stayed within its bound: an idle
    loop that runs late was descheduled by that load (seen on the shared 2-core host at
    load 10: loop lag p99 5–33 ms at 0.3–0.4 % client CPU with 1.6–1.7 foreign cores). The
    loop-lag warning itself stays: its timestamps do trail by that much.

    In an open loop, arrivals that found the in-flight cap reached waited for a slot
    (``client.cap_late`` of them past ``DISPATCH_BOUND_S``, counted by the driver).
    When those alone are at least 1 % of the requests (so they alone put the p99
    past the bound), the late dispatch is the cap's: one sentence naming it goes to
    ``cap_limits``, and neither the client nor the host is blamed for it.

    With several load workers
    (``client.workers``, each already judged over its own requests) the limits
    are the workers' own, each named: one worker over a bound limits the run.
    """
    from tokcaliper.load.monitor import CPU_BOUND_SHARE, DISPATCH_BOUND_S, LAG_BOUND_S
    from tokcaliper.model.telemetry import FOREIGN_CPU_BOUND_CORES
    from tokcaliper.numbers import num

    limits: list[str] = []
    lag = client.loop_lag_s.p99
    kernel = client.arrival_clock == "kernel"
    lag_bound = max(LAG_BOUND_S, itl_p50_s or 0.0) if kernel else LAG_BOUND_S
    if lag is not None and lag > lag_bound:
        warning = W.CLIENT_LOOP_LAG_KERNEL_STAMPED if kernel else W.CLIENT_LOOP_LAG
        limits.append(warning.text(lag_ms=num(lag * 1000), bound_ms=num(lag_bound * 1000)))
    lagged = lag is not None and lag > LAG_BOUND_S  # sends wait for the loop whatever stamps arrivals
    busy = client.cpu_share is not None and client.cpu_share > CPU_BOUND_SHARE
    if lagged and not busy and foreign_cores is not None and foreign_cores >= FOREIGN_CPU_BOUND_CORES:
        lagged = False  # the host's load made an idle loop late: the late sends are the host's
    host: list[str] = []
    cap: list[str] = []
    late = dispatch.p99 is not None and dispatch.p99 > DISPATCH_BOUND_S
    if late and client.cap and dispatch.n and client.cap_late >= 0.01 * dispatch.n:
        cap.append(W.CAP_DISPATCH_LATE.text(delay_ms=num(dispatch.p99 * 1000),  # type: ignore[operator]
                                            bound_ms=num(DISPATCH_BOUND_S * 1000), late=client.cap_late,
                                            n=dispatch.n, cap=client.cap))
    elif late:
        if lagged or busy:
            limits.append(W.CLIENT_DISPATCH_LATE.text(delay_ms=num(dispatch.p99 * 1000),
                                                      bound_ms=num(DISPATCH_BOUND_S * 1000)))
        else:
            host.append(W.HOST_DISPATCH_LATE.text(
                delay_ms=num(dispatch.p99 * 1000), bound_ms=num(DISPATCH_BOUND_S * 1000),
                lag_ms=num(None if lag is None else lag * 1000),
                share_pct="—" if client.cpu_share is None else f"{num(client.cpu_share * 100)} %"))
    if busy:
        limits.append(W.CLIENT_CPU_BOUND.text(share_pct=f"{num(client.cpu_share * 100)} %",  # type: ignore[operator]
                                              bound_pct=f"{num(CPU_BOUND_SHARE * 100)} %"))
    if client.workers:  # several load processes: each one's own verdict (the figures above are their union)
        limits = [f"load worker {w.worker + 1}: {line}" for w in client.workers if w.client is not None
                  for line in w.client.limits]
    return client.model_copy(update={"client_limited": bool(limits), "limits": limits, "host_limits": host,
                                     "cap_limits": cap})


def error_rate(metrics: RunMetrics) -> float:
    """Failed ÷ (completed + failed) measured requests; 1.0 when none was measured."""
    n = metrics.completed + metrics.failed
    return metrics.failed / n if n else 1.0


def most_common_error(metrics: RunMetrics) -> tuple[str, int] | None:
    """The most frequent error message of a run and its count (None without failures)."""
    if not metrics.errors:
        return None
    return max(metrics.errors.items(), key=lambda kv: kv[1])


#: Default largest share of failed measured requests a valid run may have.
#: Above it the run measured a failing server, not its speed: the failures'
#: short latencies and missing tokens bias every figure of the run.
MAX_ERROR_RATE = 0.10


def error_rate_reason(metrics: RunMetrics, max_error_rate: float = MAX_ERROR_RATE) -> str | None:
    """Why a run is invalid for its failures, or None when its error rate is acceptable.

    A run is invalid when no measured request completed, or when
    ``failed ÷ (completed + failed) > max_error_rate``. The reason carries
    the arithmetic and the most common error (message truncated to 160
    characters).
    """
    n = metrics.completed + metrics.failed
    rate = error_rate(metrics)
    if n and metrics.completed and rate <= max_error_rate:
        return None
    common = most_common_error(metrics)
    top = "" if common is None else f"; most common: {common[1]} × {common[0][:160]}"
    if not n:
        return "no measured request" + top
    from tokcaliper.numbers import num

    return (f"{metrics.failed} of {n} measured requests failed ({num(rate * 100)} % > "
            f"{num(max_error_rate * 100, trim=True)} % allowed){top}")


def summarize(
    records: Sequence[RequestRecord],
    client: ClientHealth | None = None,
    arrivals: ArrivalStats | None = None,
    slo_s: dict[str, float] | None = None,
    steady_share: float | None = None,
    foreign_cores: float | None = None,
) -> RunMetrics:
    """Summarise one run's measured requests.

    Warm-up records are excluded and counted in ``excluded_warmup``. The wall
    time spans the first measured issue to the last measured end (failed
    requests included, since they occupied the run).

    Args:
        records: the run's requests.
        client: the client's own figures of the measured phase
            (:class:`tokcaliper.load.monitor.LoopMonitor`); judged here
            against the bounds (:func:`judge_client`).
        arrivals: open-loop arrival statistics, stored as given.
        slo_s: SLO bounds by kind, s: attainment and goodput over the measured
            requests (:func:`tokcaliper.load.slo.slo_attainment`).
        steady_share: share of the peak in flight bounding the steady-state
            window (:func:`tokcaliper.load.steady.steady_window`).
        foreign_cores: cores other processes used during the run (telemetry), for
            the client's judgement (:func:`judge_client`).
    """
    from tokcaliper.load.slo import slo_attainment
    from tokcaliper.load.steady import steady_window

    warm = [r for r in records if r.warmup]
    measured = [r for r in records if not r.warmup]
    done = [r for r in measured if r.ok]
    failed = [r for r in measured if not r.ok]
    if measured:
        t_first = min(r.start_s for r in measured)
        t_last = max(r.start_s + (r.e2e_s or 0.0) for r in measured)
        wall = t_last - t_first
    else:
        wall = 0.0
    out_tokens = sum(r.output_tokens for r in done)
    prompt = [r.prompt_tokens for r in done if r.prompt_tokens is not None]
    sources = {r.token_count_source for r in done}
    rates = [x for x in (decode_rate(r) for r in done) if x is not None]
    tpots = [d / (r.output_tokens - 1) for r in done if (d := decode_time_s(r)) is not None]
    dispatch = percentiles([d for r in measured if (d := r.dispatch_delay_s) is not None])
    itl = percentiles([x for r in done for x in r.itl_s])
    return RunMetrics(
        wall_s=wall,
        completed=len(done),
        failed=len(failed),
        excluded_warmup=len(warm),
        output_tokens=out_tokens,
        prompt_tokens=sum(prompt) if len(prompt) == len(done) and done else None,
        token_count_source=sources.pop() if len(sources) == 1 else ("mixed" if sources else "none"),
        aggregate_output_tok_s=out_tokens / wall if wall > 0 else None,
        request_throughput_rps=len(done) / wall if wall > 0 else None,
        per_stream_decode_tok_s_mean=float(np.mean(rates)) if rates else None,
        per_stream_decode_tok_s_median=float(np.median(rates)) if rates else None,
        ttft_s=percentiles([r.ttft_s for r in done if r.ttft_s is not None]),
        itl_s=itl,
        e2e_s=percentiles([r.e2e_s for r in done if r.e2e_s is not None]),
        tpot_s=percentiles(tpots),
        errors=dict(Counter(r.error for r in failed if r.error)),
        error_classes=dict(Counter(r.error_class or "unclassified" for r in failed)),
        dispatch_s=dispatch,
        ttft_from_schedule_s=percentiles([
            r.ttft_s + r.dispatch_delay_s for r in done
            if r.ttft_s is not None and r.dispatch_delay_s is not None
        ]),
        client=judge_client(client, dispatch, itl.p50, foreign_cores) if client is not None else None,
        arrivals=arrivals,
        stream_warnings=stream_warnings(done),
        slo=slo_attainment(measured, slo_s, wall) if slo_s else None,
        steady=steady_window(measured, steady_share) if steady_share is not None else None,
    )
