"""A run's steady-state window from its per-request timestamps (pure computation).

Every measured request is in flight over ``[start_s, start_s + e2e_s)``
(sent → end of stream; a failed request without an end is left out). The
in-flight count is a step function of time; its peak P is the most requests
in flight at once. With share f (``--steady-state f``) the threshold is f·P,
and the steady-state window runs from the first instant the count reaches
f·P to the last instant it is at or above it. Before it is the ramp-up
(streams starting, or arrivals filling an empty server), after it the drain
(the last requests finishing with no new ones behind them); both are left out
of the steady-state figures. Dips below f·P inside the window (a closed-loop
stream between its requests) stay in it; the share of the window's time at or
above f·P is reported beside it.

Figures within the window: output tokens that arrived in it ÷ its length
(each text chunk carries ``output tokens ÷ chunks`` of its request's tokens,
chunk times rebuilt from TTFT and the gaps), TTFT of the completed requests
issued in it, and the token gaps that ended in it. This follows the
"steady-state window" of SGLang's ``bench_serving`` and the usual practice of
excluding warm-up and cool-down from throughput (Georges et al., OOPSLA 2007,
for the JIT analogue).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate

from tokcaliper.model.run import RequestRecord, SteadyWindow

__all__ = ["in_flight_steps", "steady_window"]


def _end(rec: RequestRecord) -> float | None:
    return None if rec.e2e_s is None else rec.start_s + rec.e2e_s


def in_flight_steps(measured: Sequence[RequestRecord]) -> list[tuple[float, int]]:
    """The in-flight count as steps: ``[(t, count from t on), …]``, times ascending, s.

    Intervals are half-open ``[start, end)``: a request ending at the instant
    another starts is not counted twice. The last step has count 0.
    """
    events: list[tuple[float, int]] = []
    for r in measured:
        end = _end(r)
        if end is None or end <= r.start_s:
            continue
        events += [(r.start_s, +1), (end, -1)]
    events.sort()  # at one instant only the count after all its events is kept (half-open)
    steps: list[tuple[float, int]] = []
    count = 0
    for t, d in events:
        count += d
        if steps and steps[-1][0] == t:
            steps[-1] = (t, count)
        else:
            steps.append((t, count))
    return steps


def _chunk_times(rec: RequestRecord) -> list[float]:
    if rec.ttft_s is None:
        return []
    first = rec.start_s + rec.ttft_s
    return [first, *(first + g for g in accumulate(rec.itl_s))]


def steady_window(measured: Sequence[RequestRecord], share: float) -> SteadyWindow | None:
    """The steady-state window of one run's measured requests and its figures.

    Args:
        measured: the run's measured requests (warm-up excluded by the caller).
        share: the share f of the peak in flight, 0 < f ≤ 1.

    Returns:
        None when no request has a positive in-flight interval.

    Raises:
        ValueError: share outside (0, 1].
    """
    from tokcaliper.load.summary import percentiles

    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share}")
    steps = in_flight_steps(measured)
    if not steps:
        return None
    peak = max(c for _, c in steps)
    threshold = share * peak
    above = [i for i, (_, c) in enumerate(steps) if c >= threshold]
    first, last = above[0], above[-1]
    start, end = steps[first][0], steps[last + 1][0]  # the last step (count 0) is never above
    length = end - start
    at = sum(steps[i + 1][0] - steps[i][0] for i in above)
    tokens = 0.0
    gaps: list[float] = []
    for r in measured:
        if not r.ok:
            continue
        times = _chunk_times(r)
        if times:
            per_chunk = r.output_tokens / len(times)
            tokens += per_chunk * sum(1 for t in times if start <= t <= end)
            gaps += [g for g, t in zip(r.itl_s, times[1:]) if start <= t <= end]
    issued = [r for r in measured if r.ok and r.ttft_s is not None and start <= r.start_s < end]
    return SteadyWindow(
        share=share, peak=peak, threshold=threshold, start_s=start, end_s=end, length_s=length,
        at_threshold_share=at / length if length > 0 else None, requests=len(issued),
        output_tokens=tokens, output_tok_s=tokens / length if length > 0 else None,
        ttft_s=percentiles([r.ttft_s for r in issued if r.ttft_s is not None]),
        itl_s=percentiles(gaps),
    )
