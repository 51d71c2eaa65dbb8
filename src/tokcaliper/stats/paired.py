"""Paired analysis of interleaved runs on per-pair log ratios (M4).

When the arms were interleaved (ABAB…, ABBA…), run k of arm a and run k of
arm b share their moment in time, so the drift both saw cancels in the ratio
``b_k / a_k``. The analysis works on ``d_k = ln(b_k / a_k)``:

- mean log ratio ``d̄`` and its sample std ``s_d`` (ddof = 1);
- paired t-test ``t = (mean(ln a) − mean(ln b)) / (s_d/√n)`` with n − 1 df:
  ``scipy.stats.ttest_rel(ln a, ln b)`` (Student 1908; the sign follows
  scipy and :func:`tokcaliper.stats.compare.welch`: positive when a is larger);
- the ratio ``exp(d̄)`` (the geometric mean of the pair ratios) with its
  ``1 − α`` CI ``exp(d̄ ± t(1 − α/2, n − 1) · s_d/√n``).

Logs make the ratio symmetric (×1.1 and ×1/1.1 weigh the same) and the
result independent of the unit. Pure functions, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel
from scipy import stats as _st

from tokcaliper.errors import InputError
from tokcaliper.stats.describe import require_finite_values

__all__ = ["PairedResult", "paired_log_ratio", "SOURCE_PAIRED"]

SOURCE_PAIRED = ("paired t-test on per-pair log ratios: scipy.stats.ttest_rel(ln a, ln b), "
                 "n−1 df; ratio = exp(mean ln(b/a))")


class PairedResult(BaseModel):
    """Paired t-test on the log ratios of n interleaved pairs.

    Attributes:
        n: number of pairs. log_ratios: ``ln(b_k / a_k)`` in run order, shape (n,).
        ratios: ``b_k / a_k`` in run order.
        mean_log: mean of the log ratios; sd_log: their sample std (ddof = 1),
            the per-pair noise as a fraction (≈ CV of the ratio).
        se_log: ``sd_log / √n``. t: paired t (scipy's sign: positive when a > b).
        df: n − 1. p: two-sided p-value.
        ratio: ``exp(mean_log)``, b over a. ratio_ci: ``1 − alpha`` CI of the ratio.
        alpha: the level of ``ratio_ci``.
    """

    n: int
    log_ratios: list[float]
    ratios: list[float]
    mean_log: float
    sd_log: float
    se_log: float
    t: float | None
    df: int
    p: float | None
    ratio: float
    ratio_ci: tuple[float, float] | None
    alpha: float


def _positive(x: np.ndarray, name: str) -> None:
    bad = np.flatnonzero(x <= 0)
    if bad.size:
        i = int(bad[0])
        raise InputError(f"{name} must be > 0 for a ratio, got {x[i]:g} at position {i + 1}")


def paired_log_ratio(a: Sequence[float], b: Sequence[float], alpha: float = 0.05) -> PairedResult:
    """Paired t-test of interleaved pairs on their log ratios (M4).

    Args:
        a: baseline runs in run order, shape (n,), n ≥ 2, finite, > 0.
        b: candidate runs, pair k = (a[k], b[k]), same shape and unit.
        alpha: two-sided level of the CI, in (0, 1).

    Returns:
        :class:`PairedResult`. When all log ratios are equal (s_d = 0) t, p and
        the CI are ``None``: the test is undefined, not infinitely significant.

    Raises:
        InputError: unequal lengths, fewer than 2 pairs, non-finite or non-positive
            values, alpha outside (0, 1).
    """
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise InputError(f"--alpha must be between 0 and 1 (exclusive), got {alpha}")
    xa, xb = require_finite_values(a, "arm a"), require_finite_values(b, "arm b")
    if xa.size != xb.size:
        raise InputError(f"paired runs need equal run counts per arm, got {xa.size} and {xb.size}")
    if xa.size < 2:
        raise InputError(f"a paired t-test needs at least 2 pairs, got {xa.size}")
    _positive(xa, "arm a")
    _positive(xb, "arm b")
    la, lb = np.log(xa), np.log(xb)
    d = lb - la
    n = int(d.size)
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    t = p = None
    ci = None
    if se > 0:
        r = _st.ttest_rel(la, lb)
        t, p = float(r.statistic), float(r.pvalue)
        q = float(_st.t.ppf(1 - alpha / 2, n - 1))
        ci = (math.exp(mean - q * se), math.exp(mean + q * se))
    return PairedResult(n=n, log_ratios=[float(x) for x in d], ratios=[float(x) for x in xb / xa],
                        mean_log=mean, sd_log=sd, se_log=se, t=t, df=n - 1, p=p,
                        ratio=math.exp(mean), ratio_ci=ci, alpha=float(alpha))
