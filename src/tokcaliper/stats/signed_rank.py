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

__all__ = ["SOURCE_SIGNED_RANK", "SignedRank", "signed_rank"]

SOURCE_SIGNED_RANK = ("rank companion: Wilcoxon signed-rank test on pair log ratios "
                      "(scipy.stats.wilcoxon; Wilcoxon 1945), Hodges–Lehmann median of Walsh "
                      "averages with its exact signed-rank CI (Hodges & Lehmann 1963)")

#: Above this many pairs the CI's order statistic uses the normal approximation.
_EXACT_MAX = 200


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
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2)
    hl = float(np.median(walsh))
    stat = p = None
    if np.any(d != 0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = _st.wilcoxon(d)
        stat, p = float(r.statistic), float(r.pvalue)
    c = _lower_count(n, alpha)
    ci = None
    if c >= 1:
        ci = (math.exp(float(walsh[c - 1])), math.exp(float(walsh[walsh.size - c])))
    return SignedRank(n=n, statistic=stat, p=p, hl_log=hl, ratio=math.exp(hl), ratio_ci=ci,
                      alpha=float(alpha))
