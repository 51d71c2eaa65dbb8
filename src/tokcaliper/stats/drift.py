"""Monotonic drift over run order: the Mann–Kendall trend test (METHODS.md M2, M4).

Pure functions; no I/O.

Method
- Mann–Kendall (Mann 1945, Econometrica 13:245; Kendall 1975, *Rank
  Correlation Methods*, 4th ed.): ``S = Σ_{i<j} sign(x_j − x_i)`` over runs in
  execution order; it is Kendall's τ between run position and the metric. The
  p-value is ``scipy.stats.kendalltau(position, values)``: exact permutation
  distribution when n is small and there are no ties, the normal approximation
  with the tie-corrected variance otherwise. The exact test is conservative
  (its discrete size is ≤ α).
- Size of the drift: the Theil–Sen slope (Sen 1968, JASA 63:1379;
  ``scipy.stats.theilslopes``), the median of pairwise slopes, per run, in the
  metric's unit and relative to the mean.
- Advice (M4): a monotonic drift biases an AAAA…BBBB order by about
  slope × (runs per arm); interleave arms (A/B/A/B, ABBA or randomised blocks).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel
from scipy import stats as _st

from tokcaliper.errors import InputError
from tokcaliper.stats.describe import require_finite_values

__all__ = ["INTERLEAVE_ADVICE", "MIN_RUNS_DRIFT", "DriftResult", "mann_kendall"]

#: Fewest runs for a trend test: with 4 runs the smallest exact two-sided p is 2/24 ≈ 0.083.
MIN_RUNS_DRIFT = 5

INTERLEAVE_ADVICE = (
    "the metric drifts with run order: interleave the arms (A/B/A/B, ABBA or randomised blocks, M4) "
    "so that the drift falls on both arms alike"
)


class DriftResult(BaseModel):
    """Mann–Kendall trend test of a metric over run order.

    Attributes:
        n: runs.
        s: Mann–Kendall S = Σ_{i<j} sign(x_j − x_i).
        tau: Kendall's τ-b between run position and the metric.
        p: two-sided p-value (scipy ``kendalltau``; ``method`` says which).
        method: ``"exact"`` or ``"asymptotic"``.
        slope_per_run: Theil–Sen slope, metric units per run.
        slope_per_run_rel: the slope ÷ mean of the values (fraction per run).
        slope_ci95: 95% interval of the Theil–Sen slope (scipy), units per run.
        alpha: level of the verdict.
        drifting: ``p < alpha``.
        direction: ``"up"``, ``"down"`` or ``"none"`` (sign of τ when drifting).
        advice: :data:`INTERLEAVE_ADVICE` when drifting, else ``None``.
    """

    n: int
    s: int
    tau: float
    p: float
    method: str
    slope_per_run: float
    slope_per_run_rel: float | None
    slope_ci95: tuple[float, float]
    alpha: float
    drifting: bool
    direction: str
    advice: str | None


def mann_kendall(values: Sequence[float], positions: Sequence[float] | None = None,
                 alpha: float = 0.05, name: str = "values") -> DriftResult:
    """Test ``values`` (in run order) for a monotonic trend.

    Args:
        values: the metric per run, in execution order unless ``positions`` is given.
        positions: run positions (any increasing scale, e.g. 0..n−1); default 0..n−1.
        alpha: level (``drifting = p < alpha``).
        name: for error messages.

    Returns:
        :class:`DriftResult`.

    Raises:
        InputError: fewer than :data:`MIN_RUNS_DRIFT` values, non-finite values,
            positions of another length or with repeats.
    """
    x = require_finite_values(values, name)
    n = len(x)
    if n < MIN_RUNS_DRIFT:
        raise InputError(f"{name}: {n} runs; a trend test needs ≥ {MIN_RUNS_DRIFT} runs")
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha}")
    t = np.arange(n, dtype=float) if positions is None else require_finite_values(positions, "run positions")
    if len(t) != n:
        raise InputError(f"{name}: {n} values but {len(t)} run positions")
    if len(np.unique(t)) != n:
        raise InputError(f"{name}: two runs share a run position")
    order = np.argsort(t)
    t, x = t[order], x[order]
    diff = np.sign(x[None, :] - x[:, None])
    s = int(np.triu(diff, 1).sum())
    has_ties = len(np.unique(x)) < n
    method = "asymptotic" if has_ties or n > 50 else "exact"
    if np.ptp(x) == 0:
        tau, p = 0.0, 1.0
    else:
        res = _st.kendalltau(t, x, method=method)
        tau, p = float(res.statistic), float(res.pvalue)
    ts = _st.theilslopes(x, t, alpha=0.95)
    mean = float(x.mean())
    drifting = bool(p < alpha)
    return DriftResult(
        n=n, s=s, tau=tau, p=p, method=method, slope_per_run=float(ts.slope),
        slope_per_run_rel=float(ts.slope) / mean if mean != 0 else None,
        slope_ci95=(float(ts.low_slope), float(ts.high_slope)), alpha=alpha, drifting=drifting,
        direction=("up" if tau > 0 else "down") if drifting else "none",
        advice=INTERLEAVE_ADVICE if drifting else None,
    )
