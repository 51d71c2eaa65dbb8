"""One cloud or clumps? The best two-group split of one arm's runs (METHODS.md M2).

Pure functions: numbers in, pydantic results out; no I/O.

Method
- Statistic (Engelman & Hartigan 1969, "Percentage points of a test for
  clusters", JASA 64:1647; the 1-D two-means / Fisher 1958 optimal partition):
  sort the n values, and for every split of the sorted values into a low group
  of k and a high group of n − k (both ≥ ``min_group``, default 2, so a lone
  outlier is not a "group") compute the share of the variance the split
  explains, ``R²(k) = 1 − (WSS_low + WSS_high) / TSS`` (WSS: within-group sum
  of squared deviations, TSS: total). The statistic is ``R² = max_k R²(k)``
  and the best split is its arg-max.
- Calibration: R² does not change under a shift or a scaling of the values, so
  its null distribution for n independent normal values ("one cloud") depends
  on n only. It is simulated once per (n, min_group) from standard normal
  samples (:data:`NULL_DRAWS` draws, fixed seed) and the p-value is the Monte
  Carlo ``(1 + #{R²_null ≥ R²}) / (B + 1)`` (Davison & Hinkley 1997, eq. 4.11).
  This is a parametric bootstrap test; a permutation test cannot be used
  because the values carry no labels to permute.
- Limits: the null is a normal cloud, so a strongly skewed or heavy-tailed
  cloud can also be called clumped at large n; with n ≈ 5–6 only well separated
  groups (within-group CV of a few percent against a gap of ×1.1 or more) are
  detected. Median R² under the null is ≈ 0.76 at n = 6 and tends to 2/π ≈
  0.64 as n grows (Hartigan 1978, Ann. Statist. 6:117).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from pydantic import BaseModel

from tokcaliper.errors import InputError
from tokcaliper.stats.describe import Description, describe, require_finite_values

__all__ = [
    "MIN_RUNS",
    "NULL_DRAWS",
    "SplitResult",
    "best_split",
    "split_p_values",
    "split_r2",
]

#: Fewest runs for which a two-group split is tested (two groups of ≥ 2, plus one).
MIN_RUNS = 5
#: Monte Carlo draws of the normal null distribution of R² (p resolution ≈ 5e-5).
NULL_DRAWS = 20_000
_NULL_SEED = 20260101
_MAX_NULL_CELLS = 20_000_000  # draws × n simulated (bounds the time)
_NULL_BLOCK_CELLS = 1_000_000  # draws × n simulated at once (bounds the memory: ~10 arrays of it)


def _split_r2_matrix(x: np.ndarray, min_group: int) -> tuple[np.ndarray, np.ndarray]:
    """R² of the best split per row of ``x`` (shape (m, n)) and its low-group size k."""
    xs = np.sort(x, axis=1)
    n = xs.shape[1]
    c1 = np.cumsum(xs, axis=1)
    c2 = np.cumsum(xs * xs, axis=1)
    t1, t2 = c1[:, -1:], c2[:, -1:]
    mean = t1 / n
    tss = np.sum((xs - mean) ** 2, axis=1, keepdims=True)  # two-pass: no cancellation
    k = np.arange(min_group, n - min_group + 1)
    # Shift by the row mean before the one-pass formulas to keep them accurate.
    c1s = c1[:, k - 1] - k * mean
    c2s = c2[:, k - 1] - 2 * mean * c1[:, k - 1] + k * mean**2
    t1s = t1 - n * mean
    t2s = tss
    wl = c2s - c1s**2 / k
    wr = (t2s - c2s) - (t1s - c1s) ** 2 / (n - k)
    with np.errstate(invalid="ignore", divide="ignore"):
        r2 = 1.0 - (wl + wr) / tss
    r2 = np.where(tss > 0, r2, 0.0)
    r2 = np.clip(r2, 0.0, 1.0)
    best = np.argmax(r2, axis=1)
    return r2[np.arange(len(r2)), best], k[best]


def split_r2(x: np.ndarray | Sequence[Sequence[float]], min_group: int = 2) -> np.ndarray:
    """Engelman–Hartigan R² of the best two-group split, per row.

    Args:
        x: array of shape (m, n): m data sets of n values each (vectorised, so
            that simulations are fast).
        min_group: fewest values in each group (≥ 1).

    Returns:
        Shape (m,) array of R² in [0, 1] (0 for a row of equal values).

    Raises:
        InputError: n < 2·min_group or min_group < 1.
    """
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 2:
        raise InputError("split_r2 needs a 2-D array (data sets × values)")
    if min_group < 1 or arr.shape[1] < 2 * min_group:
        raise InputError(f"a split into two groups of ≥ {min_group} needs ≥ {2 * min_group} values")
    return _split_r2_matrix(arr, min_group)[0]


@lru_cache(maxsize=64)
def _null_r2(n: int, min_group: int) -> np.ndarray:
    """Sorted null draws of R² for n standard normal values (fixed seed)."""
    rng = np.random.default_rng(_NULL_SEED + 1000 * n + min_group)
    draws = max(2_000, min(NULL_DRAWS, _MAX_NULL_CELLS // n))
    # In blocks of rows: the generator's stream is the same however it is cut, so the
    # draws are those of one (draws, n) call, without its ~10 temporaries of that size.
    rows = max(1, _NULL_BLOCK_CELLS // n)
    out = [_split_r2_matrix(rng.standard_normal((min(rows, draws - i), n)), min_group)[0]
           for i in range(0, draws, rows)]
    return np.sort(np.concatenate(out))


def split_p_values(r2: np.ndarray | Sequence[float] | float, n: int, min_group: int = 2) -> np.ndarray:
    """Monte Carlo p-values of observed R² against the normal null for n values.

    ``p = (1 + #{R²_null ≥ R²}) / (B + 1)`` (Davison & Hinkley 1997, eq. 4.11).

    Args:
        r2: one or many observed R² (each from n values).
        n: number of values each R² came from.
        min_group: as in :func:`split_r2`.

    Returns:
        Array of p-values, same shape as ``r2``.
    """
    null = _null_r2(n, min_group)
    obs = np.asarray(r2, dtype=float)
    # 1e-12: an observed R² equal to a null draw counts as "≥" despite rounding.
    ge = len(null) - np.searchsorted(null, obs - 1e-12, side="left")
    return (1.0 + ge) / (len(null) + 1.0)


class SplitResult(BaseModel):
    """The best two-group split of n values and whether it beats one normal cloud.

    Attributes:
        n: number of values.
        r2: share of the variance explained by the best split (Engelman–Hartigan).
        p: Monte Carlo p-value against n normal values (see module docstring).
        null_draws: B, the simulated null samples behind ``p``.
        alpha: level the verdict uses.
        clumped: ``p < alpha``.
        threshold: low group = values ≤ threshold (midpoint of the gap).
        gap: smallest high value − largest low value (units of the values).
        gap_over_within_sd: gap ÷ pooled within-group sample std (how many
            within-group standard deviations the gap spans).
        low / high: description (n, mean, CV, CI) of each group.
        ratio: high mean ÷ low mean (``None`` if the low mean ≤ 0).
        labels: per input value (input order) 0 = low group, 1 = high group.
        min_group: smallest group size tried.
    """

    n: int
    r2: float
    p: float
    null_draws: int
    alpha: float
    clumped: bool
    threshold: float
    gap: float
    gap_over_within_sd: float | None
    low: Description
    high: Description
    ratio: float | None
    labels: list[int]
    min_group: int


def best_split(values: Sequence[float], alpha: float = 0.05, min_group: int = 2,
               name: str = "values") -> SplitResult:
    """Find the best two-group split of ``values`` and test it against one cloud (M2).

    Args:
        values: one metric over n ≥ :data:`MIN_RUNS` runs of one configuration
            (any unit; finite).
        alpha: level of the test (``clumped = p < alpha``).
        min_group: fewest runs per group (default 2: one odd run is an outlier,
            not a group).
        name: what the values are, for error messages.

    Returns:
        :class:`SplitResult`.

    Raises:
        InputError: fewer than :data:`MIN_RUNS` values (or < 2·min_group + 1),
            non-finite values, alpha outside (0, 1).
    """
    x = require_finite_values(values, name)
    n = len(x)
    need = max(MIN_RUNS, 2 * min_group + 1)
    if n < need:
        raise InputError(f"{name}: {n} runs; telling clumps from scatter needs ≥ {need} runs (M2)")
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha}")
    r2_arr, k_arr = _split_r2_matrix(x[None, :], min_group)
    r2, k = float(r2_arr[0]), int(k_arr[0])
    xs = np.sort(x)
    lo_vals, hi_vals = xs[:k], xs[k:]
    gap = float(hi_vals[0] - lo_vals[-1])
    threshold = float((hi_vals[0] + lo_vals[-1]) / 2)
    wss = float(np.sum((lo_vals - lo_vals.mean()) ** 2) + np.sum((hi_vals - hi_vals.mean()) ** 2))
    within_sd = (wss / (n - 2)) ** 0.5
    p = float(split_p_values(r2, n, min_group))
    # Ties at the threshold: values equal to the largest low value go low.
    labels = [0 if v <= lo_vals[-1] else 1 for v in x]
    low, high = describe(lo_vals.tolist(), f"{name} (low group)"), describe(hi_vals.tolist(), f"{name} (high group)")
    return SplitResult(
        n=n, r2=r2, p=p, null_draws=len(_null_r2(n, min_group)), alpha=alpha,
        clumped=bool(p < alpha and gap > 0), threshold=threshold, gap=gap,
        gap_over_within_sd=(gap / within_sd) if within_sd > 0 else None,
        low=low, high=high, ratio=(high.mean / low.mean) if low.mean > 0 else None,
        labels=labels, min_group=min_group,
    )
