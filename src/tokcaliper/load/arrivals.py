"""Open-loop arrival processes and how closely a run followed one (pure computation).

Processes (inter-arrival gaps, mean ``1/rate``):

* ``poisson`` — exponential gaps (CV = 1): independent users;
* ``gamma`` — gamma gaps of shape ``k = burstiness`` and scale
  ``1/(rate·k)`` (CV = 1/√k): ``k < 1`` is burstier than Poisson, ``k > 1``
  smoother; ``k = 1`` is Poisson. This is vLLM ``bench serve``'s
  ``--burstiness``;
* ``constant`` — equal gaps (CV = 0).

The achieved rate's 95 % CI uses the exact gamma/chi-square interval of a
renewal process with gamma gaps: for ``m`` gaps of shape ``k`` summing to
``T``, ``2·k·λ·T ~ χ²(2·m·k)`` (NIST/SEMATECH e-Handbook of Statistical
Methods, §8.1.7.1, for the exponential case ``k = 1``); for constant gaps a
Student-t interval of the mean gap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from tokcaliper.model.bounds import MAX_DURATION_S
from tokcaliper.model.run import ArrivalStats

__all__ = ["MAX_ARRIVALS", "MAX_RUN_S", "ArrivalKind", "arrival_offsets", "arrival_stats", "open_loop_problem"]

ArrivalKind = Literal["poisson", "gamma", "constant"]

#: Most arrivals of one open-loop run: their times are drawn before the run
#: starts (8 bytes each, half as many again with ``duration_s``), and each
#: request is a record in memory afterwards.
MAX_ARRIVALS = 10_000_000

#: Longest one run may last, s: 7 days, the bound of ``--duration``
#: (:data:`tokcaliper.model.bounds.MAX_DURATION_S`).
MAX_RUN_S = MAX_DURATION_S


def open_loop_problem(rate: float, count: int | None, duration_s: float | None) -> str | None:
    """Why an open-loop run at ``rate`` cannot run as asked, or None when it can.

    With ``count`` requests the run lasts about ``count ÷ rate`` seconds
    (the mean gap is ``1/rate``), which must stay within :data:`MAX_RUN_S`
    (``--rate 1e-9`` would sleep ~10⁹ s before its second request); at most
    :data:`MAX_ARRIVALS` arrivals. With ``duration_s`` the expected arrivals
    ``rate × duration_s`` must be at least one and at most :data:`MAX_ARRIVALS`.
    The sentence names the options (``--rate``, ``--requests``, ``--duration``)
    and shows the arithmetic.
    """
    from tokcaliper.numbers import num

    r = f"{rate:g}"  # the options as typed
    if duration_s is not None:
        expected = rate * duration_s
        d = f"{duration_s:g}"
        if expected < 1:
            return (f"--rate {r} over --duration {d} s expects {num(expected, 3, trim=True)} arrivals "
                    "(rate × duration): fewer than one; raise --rate or --duration")
        if expected > MAX_ARRIVALS:
            return (f"--rate {r} over --duration {d} s expects {num(expected, 3, trim=True)} arrivals "
                    f"(rate × duration), above the {MAX_ARRIVALS:,} whose times are drawn before the run "
                    "starts; lower --rate or --duration")
        return None
    if count is None:
        return None
    if count > MAX_ARRIVALS:
        return (f"--rate {r} with {count} requests: more than the {MAX_ARRIVALS:,} arrivals whose times "
                "are drawn before the run starts; lower --requests")
    span = count / rate
    if span > MAX_RUN_S:
        return (f"--rate {r} with {count} requests means a run of about {num(span, 2, trim=True)} s "
                f"(requests ÷ rate), longer than the 7-day bound of one run ({num(MAX_RUN_S)} s): "
                "raise --rate or lower --requests")
    return None


def arrival_offsets(
    rate: float,
    kind: ArrivalKind = "poisson",
    *,
    burstiness: float = 1.0,
    count: int | None = None,
    duration_s: float | None = None,
    seed: int | None = None,
) -> np.ndarray:
    """Arrival times, seconds from the start; the first arrival is at 0.

    Args:
        rate: mean arrivals per second (> 0).
        kind: ``"poisson"``, ``"gamma"`` or ``"constant"``.
        burstiness: gamma shape ``k`` (> 0; only for ``"gamma"``).
        count: number of arrivals; or
        duration_s: every arrival before this many seconds.
        seed: random seed (None: fresh entropy).

    Returns:
        Increasing float64 array.

    Raises:
        ValueError: non-positive rate or burstiness, or neither/both of
            ``count`` and ``duration_s``.
    """
    if not rate > 0 or not burstiness > 0:
        raise ValueError(f"rate and burstiness must be > 0, got {rate}, {burstiness}")
    if (count is None) == (duration_s is None):
        raise ValueError("give exactly one of count and duration_s")
    rng = np.random.default_rng(seed)
    n = count if count is not None else max(1, int(np.ceil(rate * duration_s * 1.5 + 10)))  # type: ignore[operator]

    def gaps(m: int) -> np.ndarray:
        if kind == "constant":
            return np.full(m, 1.0 / rate)
        k = burstiness if kind == "gamma" else 1.0
        return rng.gamma(shape=k, scale=1.0 / (rate * k), size=m)

    t = np.concatenate([[0.0], np.cumsum(gaps(n - 1))]) if n > 1 else np.zeros(1)
    if duration_s is not None:
        while t[-1] < duration_s:  # rare: the first draw ended early
            t = np.concatenate([t, t[-1] + np.cumsum(gaps(n))])
        t = t[t < duration_s]
    return t


def arrival_stats(
    sent: Sequence[float],
    scheduled: Sequence[float],
    rate: float,
    kind: ArrivalKind | Literal["trace"],
    burstiness: float = 1.0,
) -> ArrivalStats:
    """How the achieved arrivals (``sent``) compare with the requested process.

    Args:
        sent: actual send times of the run's requests, seconds (any origin).
        scheduled: their scheduled times (same origin).
        rate / kind / burstiness: the requested process (kind ``"trace"``:
            a replayed trace, ``rate`` its mean; no rate CI).

    Returns:
        :class:`ArrivalStats`; rate and CV are None with fewer than 3 arrivals.
    """
    # scipy.stats is imported here, not at module level: importing it costs
    # seconds of CPU (py-spy: half of a load phase's samples at concurrency 64).
    from scipy import stats

    s = np.sort(np.asarray(sent, dtype=float))
    sched = np.sort(np.asarray(scheduled, dtype=float))
    out = ArrivalStats(process=kind, requested_rate_rps=rate,
                       burstiness=burstiness if kind == "gamma" else None, n=len(s))
    if len(s) < 3:
        return out
    g = np.diff(s)
    if kind == "trace":  # a replayed schedule: rate and CVs, no process to put a CI on
        total = float(s[-1] - s[0])
        if total > 0:
            out.achieved_rate_rps = len(g) / total
            out.interarrival_cv = float(g.std(ddof=1) / g.mean()) if g.mean() > 0 else None
            d = np.diff(sched)
            out.scheduled_cv = float(d.std(ddof=1) / d.mean()) if len(sched) >= 3 and d.mean() > 0 else None
        return out
    m, total = len(g), float(s[-1] - s[0])
    if total <= 0:
        return out
    out.achieved_rate_rps = m / total
    out.interarrival_cv = float(g.std(ddof=1) / g.mean())
    out.scheduled_cv = float(np.diff(sched).std(ddof=1) / np.diff(sched).mean()) if len(sched) >= 3 else None
    if kind == "constant":
        half = stats.t.ppf(0.975, m - 1) * g.std(ddof=1) / np.sqrt(m)
        lo_gap, hi_gap = g.mean() - half, g.mean() + half
        out.rate_ci95_rps = (1.0 / hi_gap, 1.0 / lo_gap if lo_gap > 0 else float("inf"))
    else:
        k = burstiness if kind == "gamma" else 1.0
        dof = 2 * m * k
        out.rate_ci95_rps = (float(stats.chi2.ppf(0.025, dof) / (2 * k * total)),
                             float(stats.chi2.ppf(0.975, dof) / (2 * k * total)))
    return out
