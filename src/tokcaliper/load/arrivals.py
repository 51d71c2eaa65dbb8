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

from tokcaliper.model.run import ArrivalStats

__all__ = ["ArrivalKind", "arrival_offsets", "arrival_stats"]

ArrivalKind = Literal["poisson", "gamma", "constant"]


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
    kind: ArrivalKind,
    burstiness: float = 1.0,
) -> ArrivalStats:
    """How the achieved arrivals (``sent``) compare with the requested process.

    Args:
        sent: actual send times of the run's requests, seconds (any origin).
        scheduled: their scheduled times (same origin).
        rate / kind / burstiness: the requested process.

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
