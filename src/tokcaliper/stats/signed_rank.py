"""Rank-based companion of the paired analysis: Wilcoxon signed-rank + Hodges–Lehmann.

One wild pair moves the mean log ratio and inflates its sd; ranks are not
moved by how wild it is (benchstat's Mann–Whitney, criterion's bootstrap and
pyperf's outlier flags answer the same worry). On the pair log ratios
``d_k = ln(b_k/a_k)``:

- Wilcoxon signed-rank test of "median d = 0" (Wilcoxon 1945):
  ``scipy.stats.wilcoxon`` (exact null distribution for small n without ties,
  the normal approximation otherwise);
- Hodges–Lehmann estimate: the median of the n(n+1)/2 Walsh averages
  ``(d_i + d_j)/2, i ≤ j`` (Hodges & Lehmann 1963), reported as the ratio
  ``exp(HL)``;
- above :data:`_DIRECT_MAX` pairs the Walsh averages are not formed (30,000
  pairs: 4.5·10⁸ of them, 11 GB with their indices): each order statistic
  needed is selected exactly by bisection on its value, counting the averages
  at or below a value row by row in sorted order (O(n log n) per step,
  :func:`walsh_order_stat`); the same numbers, bit for bit;
- its ``1 − α`` CI: Walsh averages number C and N + 1 − C in sorted order,
  N = n(n+1)/2, C the largest c with ``P(T⁺ ≤ c − 1) ≤ α/2`` under the exact
  null distribution of the signed-rank statistic T⁺ (Hollander, Wolfe &
  Chicken 2014, §3.3); ``None`` when n is too small for any C ≥ 1 (n ≤ 5 at
  α = 0.05).

Pure functions, no I/O.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel
from scipy import stats as _st

from tokcaliper.errors import InputError
from tokcaliper.stats.describe import require_finite_values

__all__ = ["SOURCE_SIGNED_RANK", "SignedRank", "signed_rank", "walsh_order_stat"]

SOURCE_SIGNED_RANK = ("rank companion: Wilcoxon signed-rank test on pair log ratios "
                      "(scipy.stats.wilcoxon; Wilcoxon 1945), Hodges–Lehmann median of Walsh "
                      "averages with its exact signed-rank CI (Hodges & Lehmann 1963)")

#: Above this many pairs the CI's order statistic uses the normal approximation.
_EXACT_MAX = 200
#: Up to this many pairs the Walsh averages are formed and sorted (N = 500,500: 4 MB).
_DIRECT_MAX = 1_000


def _row_bounds(s: np.ndarray, v: float) -> np.ndarray:
    """For each i, the first j with ``s[i] + s[j] > v`` (floating-point sums; ``s`` sorted), shape (n,).

    ``searchsorted`` on ``v − s[i]`` is right up to the rounding of that
    subtraction; the boundary is then moved until it holds for the sums as
    computed (which are monotone in j), so counts agree exactly with the sums.
    """
    n = s.size
    jj = np.searchsorted(s, v - s, side="right")
    while True:
        down = (jj > 0) & (s[np.maximum(jj - 1, 0)] + s > v)
        up = (jj < n) & (s[np.minimum(jj, n - 1)] + s <= v)
        if not (down.any() or up.any()):
            return jj
        jj = jj - down + up


def _count_at_most(s: np.ndarray, v: float) -> tuple[int, np.ndarray]:
    """How many sums ``s[i] + s[j]``, i ≤ j, are ≤ v, and each row's end (as :func:`_row_bounds`)."""
    jj = _row_bounds(s, v)
    return int(np.maximum(jj - np.arange(s.size), 0).sum()), jj


def walsh_order_stat(s: np.ndarray, r: int) -> float:
    """The r-th smallest (0-based) Walsh average ``(s_i + s_j)/2``, i ≤ j, without forming them.

    Bisection on the value keeps ``count(≤ lo) ≤ r < count(≤ hi)`` (counts by
    :func:`_count_at_most`, O(n log n) each) until at most 4n sums lie in
    ``(lo, hi]`` (or no float lies between lo and hi: then every one of them
    equals hi); those are formed, sorted and the one of rank r taken. Equal to
    ``np.sort((d[i] + d[j]) / 2)[r]`` over ``np.triu_indices(n)`` bit for bit.

    Args:
        s: the values sorted ascending, finite, shape (n,), n ≥ 1.
        r: rank, 0 ≤ r < n(n+1)/2.
    """
    n = s.size
    lo = float(np.nextafter(s[0] + s[0], -np.inf))
    hi = float(s[-1] + s[-1])
    c_lo, j_lo = 0, np.zeros(n, dtype=np.intp)
    c_hi, j_hi = n * (n + 1) // 2, np.full(n, n, dtype=np.intp)
    while c_hi - c_lo > 4 * n:
        mid = lo + (hi - lo) / 2
        if not lo < mid < hi:
            return hi / 2
        c, jj = _count_at_most(s, mid)
        if c > r:
            hi, c_hi, j_hi = mid, c, jj
        else:
            lo, c_lo, j_lo = mid, c, jj
    rows = np.arange(n)
    start, stop = np.maximum(j_lo, rows), np.maximum(j_hi, rows)
    lengths = stop - start
    ii = np.repeat(rows, lengths)
    jj = np.repeat(start - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
    sums = np.sort(s[ii] + s[jj])
    return float(sums[r - c_lo]) / 2


class SignedRank(BaseModel):
    """Wilcoxon signed-rank test and Hodges–Lehmann estimate of the pair log ratios.

    Attributes:
        n: pairs. statistic: scipy's W (the smaller of T⁺ and T⁻). p: two-sided
            (``None`` when every log ratio is 0).
        hl_log: Hodges–Lehmann estimate of the median log ratio. ratio: exp(hl_log).
        ratio_ci: ``1 − alpha`` CI of the ratio (``None`` when n is too small).
        alpha: level of the CI.
    """

    n: int
    statistic: float | None
    p: float | None
    hl_log: float
    ratio: float
    ratio_ci: tuple[float, float] | None
    alpha: float


def _lower_count(n: int, alpha: float) -> int:
    """C: the largest c with P(T⁺ ≤ c − 1) ≤ α/2 under H₀ (0 when none)."""
    if n > _EXACT_MAX:
        mu, sd = n * (n + 1) / 4, math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        return max(0, int(math.floor(mu - _st.norm.ppf(1 - alpha / 2) * sd)))
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for r in range(1, n + 1):  # subsets of {1..n}: the exact null distribution of T⁺
        counts[r:] = counts[r:] + counts[:-r].copy()
    cdf = np.cumsum(counts) / 2.0**n
    ok = np.flatnonzero(cdf <= alpha / 2)  # P(T⁺ ≤ w) ≤ α/2 for w in ok
    return 0 if ok.size == 0 else int(ok[-1]) + 1


def signed_rank(log_ratios: Sequence[float], alpha: float = 0.05) -> SignedRank:
    """Signed-rank test and Hodges–Lehmann estimate of pair log ratios, shape (n,), n ≥ 2.

    Raises:
        InputError: fewer than 2 values, non-finite values, alpha outside (0, 1).
    """
    d = require_finite_values(log_ratios, "pair log ratios")
    n = int(d.size)
    if n < 2:
        raise InputError(f"a signed-rank test needs at least 2 pairs, got {n}")
    if not 0 < alpha < 1:
        raise InputError(f"--alpha must be between 0 and 1 (exclusive), got {alpha}")
    n_walsh = n * (n + 1) // 2
    if n <= _DIRECT_MAX:
        i, j = np.triu_indices(n)
        walsh = np.sort((d[i] + d[j]) / 2)

        def order(r: int) -> float:
            return float(walsh[r])
    else:
        ds = np.sort(d)

        def order(r: int) -> float:
            return walsh_order_stat(ds, r)
    mid = n_walsh // 2
    hl = order(mid) if n_walsh % 2 else (order(mid - 1) + order(mid)) / 2  # = np.median
    stat = p = None
    if np.any(d != 0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = _st.wilcoxon(d)
        stat, p = float(r.statistic), float(r.pvalue)
    c = _lower_count(n, alpha)
    ci = None
    if c >= 1:
        ci = (math.exp(order(c - 1)), math.exp(order(n_walsh - c)))
    return SignedRank(n=n, statistic=stat, p=p, hl_log=hl, ratio=math.exp(hl), ratio_ci=ci,
                      alpha=float(alpha))
