"""Equivalence: two one-sided tests (TOST) on the ratio b/a (Schuirmann 1987).

"No significant difference" is not evidence of no difference. To *claim* two
arms equivalent within ±E, both one-sided nulls ``ratio ≤ 1 − E`` and
``ratio ≥ 1 + E`` must be rejected at level α (Schuirmann, D. J., 1987, "A
comparison of the two one-sided tests procedure and the power approach for
assessing the equivalence of average bioavailability", J. Pharmacokin.
Biopharm. 15(6):657–680). Equivalently, the ``1 − 2α`` CI of the ratio lies
inside ``[1 − E, 1 + E]``. The tests run on the log scale, where the bounds are
``ln(1 − E)`` and ``ln(1 + E)``:

- paired runs: ``statsmodels.stats.weightstats.ttost_paired(ln b, ln a, low, upp)``
  (per-pair log ratios, n − 1 df);
- independent arms (runs or published mean ± sd): the log of the ratio of
  means with the delta-method standard error
  ``se² = s_a²/(n_a·m_a²) + s_b²/(n_b·m_b²)`` and Welch–Satterthwaite df —
  the same standard error as the ratio CI of :mod:`tokcaliper.stats.compare`,
  so the TOST and the printed CI never disagree. One-sided p-values from
  ``scipy.stats.t``.

Pure functions, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel
from scipy import stats as _st

from tokcaliper.errors import InputError
from tokcaliper.stats.describe import require_finite_values

__all__ = ["TostResult", "check_margin", "log_ratio_of_means", "tost_from_log_estimate",
           "tost_paired", "tost_ratio_of_means", "SOURCE_TOST"]

SOURCE_TOST = ("TOST (Schuirmann 1987): both one-sided t-tests reject at α ⇔ the (1−2α) CI of "
               "the ratio lies in [1−E, 1+E]; paired: statsmodels ttost_paired on ln values")


class TostResult(BaseModel):
    """Two one-sided tests of ``1 − E < ratio < 1 + E``.

    Attributes:
        margin: E as a fraction (0.02 = ±2%). bounds: ``(1 − E, 1 + E)`` on the ratio.
        ratio: the estimate (b/a). t_low, p_low: test of ratio > 1 − E;
        t_upp, p_upp: test of ratio < 1 + E. df: degrees of freedom.
        p: ``max(p_low, p_upp)``, the TOST p-value. alpha: level.
        equivalent: ``p < alpha``. ci: the ``1 − 2α`` CI of the ratio (the
            interval that must lie within the bounds).
    """

    margin: float
    bounds: tuple[float, float]
    ratio: float
    t_low: float
    p_low: float
    t_upp: float
    p_upp: float
    df: float
    p: float
    alpha: float
    equivalent: bool
    ci: tuple[float, float]


def check_margin(margin: float, option: str = "--margin") -> None:
    """Raise :class:`InputError` unless 0 < margin < 1 (a fraction of the baseline)."""
    if isinstance(margin, bool) or not (isinstance(margin, (int, float)) and math.isfinite(margin)
                                        and 0 < margin < 1):
        raise InputError(f"{option} must be a fraction between 0 and 1 (0.02 = ±2%), got {margin}")


def _check_alpha(alpha: float) -> None:
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 0.5):
        raise InputError(f"--alpha must be between 0 and 0.5 for an equivalence test, got {alpha}")


def log_ratio_of_means(mean_a: float, sd_a: float, n_a: int,
                       mean_b: float, sd_b: float, n_b: int) -> tuple[float, float, float]:
    """``(ln(m_b/m_a), se, df)`` by the delta method with Welch–Satterthwaite df.

    ``se² = s_a²/(n_a·m_a²) + s_b²/(n_b·m_b²)``; ``df = se⁴ / Σ (v_i²/(n_i − 1))``
    (Welch 1947). df is NaN when both stds are 0.

    Raises:
        InputError: a mean ≤ 0, a negative std, or n < 2.
    """
    if not (mean_a > 0 and mean_b > 0):
        raise InputError(f"a ratio of means needs positive means, got {mean_a:g} and {mean_b:g}")
    if sd_a < 0 or sd_b < 0:
        raise InputError(f"standard deviations must be >= 0, got {sd_a:g} and {sd_b:g}")
    if n_a < 2 or n_b < 2:
        raise InputError(f"need at least 2 runs per arm, got n={n_a}+{n_b}")
    va, vb = sd_a**2 / (n_a * mean_a**2), sd_b**2 / (n_b * mean_b**2)
    den = va**2 / (n_a - 1) + vb**2 / (n_b - 1)
    df = (va + vb) ** 2 / den if den > 0 else float("nan")
    return math.log(mean_b / mean_a), math.sqrt(va + vb), df


def tost_from_log_estimate(est_log: float, se_log: float, df: float, margin: float,
                           alpha: float = 0.05) -> TostResult:
    """TOST of ``1 − E < exp(est_log) < 1 + E`` from a log-scale estimate and its se.

    ``t_low = (est − ln(1−E))/se``, ``p_low = P(T_df > t_low)``;
    ``t_upp = (est − ln(1+E))/se``, ``p_upp = P(T_df < t_upp)`` (``scipy.stats.t``).

    Args:
        est_log: estimate of ln(ratio). se_log: its standard error (> 0).
        df: degrees of freedom (> 0). margin: E in (0, 1). alpha: level in (0, 0.5).

    Raises:
        InputError: margin or alpha out of range, se ≤ 0 or df not finite
            (identical runs: nothing to test).
    """
    check_margin(margin)
    _check_alpha(alpha)
    if not (math.isfinite(se_log) and se_log > 0 and math.isfinite(df) and df > 0):
        raise InputError("an equivalence test needs runs that vary (standard error 0)")
    lo, hi = math.log(1 - margin), math.log(1 + margin)
    t_low, t_upp = (est_log - lo) / se_log, (est_log - hi) / se_log
    p_low, p_upp = float(_st.t.sf(t_low, df)), float(_st.t.cdf(t_upp, df))
    q = float(_st.t.ppf(1 - alpha, df))
    p = max(p_low, p_upp)
    return TostResult(margin=margin, bounds=(1 - margin, 1 + margin), ratio=math.exp(est_log),
                      t_low=t_low, p_low=p_low, t_upp=t_upp, p_upp=p_upp, df=df, p=p, alpha=alpha,
                      equivalent=p < alpha,
                      ci=(math.exp(est_log - q * se_log), math.exp(est_log + q * se_log)))


def tost_ratio_of_means(mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float, n_b: int,
                        margin: float, alpha: float = 0.05) -> TostResult:
    """TOST on the ratio of means of two independent arms (runs or published mean ± sd).

    Uses :func:`log_ratio_of_means` then :func:`tost_from_log_estimate`.

    Raises:
        InputError: see both functions.
    """
    est, se, df = log_ratio_of_means(mean_a, sd_a, n_a, mean_b, sd_b, n_b)
    return tost_from_log_estimate(est, se, df, margin, alpha)


def tost_paired(a: Sequence[float], b: Sequence[float], margin: float,
                alpha: float = 0.05) -> TostResult:
    """TOST on per-pair log ratios of interleaved runs (statsmodels ``ttost_paired``).

    Args:
        a, b: baseline and candidate runs in run order, shape (n,), n ≥ 2, > 0.
        margin: E in (0, 1). alpha: level in (0, 0.5).

    Raises:
        InputError: unequal lengths, n < 2, non-positive values, identical ratios.
    """
    from statsmodels.stats.weightstats import ttost_paired

    check_margin(margin)
    _check_alpha(alpha)
    xa, xb = require_finite_values(a, "arm a"), require_finite_values(b, "arm b")
    if xa.size != xb.size or xa.size < 2:
        raise InputError(f"a paired equivalence test needs ≥ 2 pairs of equal count, got "
                         f"{xa.size} and {xb.size}")
    if (xa <= 0).any() or (xb <= 0).any():
        raise InputError("a ratio needs positive values")
    d = np.log(xb) - np.log(xa)
    sd = float(d.std(ddof=1))
    if sd == 0:
        raise InputError("an equivalence test needs runs that vary (all pair ratios equal)")
    lo, hi = math.log(1 - margin), math.log(1 + margin)
    p, (t1, p1, df1), (t2, p2, _df2) = ttost_paired(np.log(xb), np.log(xa), lo, hi)
    n = int(d.size)
    se = sd / math.sqrt(n)
    q = float(_st.t.ppf(1 - alpha, n - 1))
    mean = float(d.mean())
    return TostResult(margin=margin, bounds=(1 - margin, 1 + margin), ratio=math.exp(mean),
                      t_low=float(t1), p_low=float(p1), t_upp=float(t2), p_upp=float(p2),
                      df=float(df1), p=float(p), alpha=alpha, equivalent=float(p) < alpha,
                      ci=(math.exp(mean - q * se), math.exp(mean + q * se)))
