"""Comparing two arms: Welch's t, per-pair ratios, variance tests (METHODS.md M4, M9, M10).

Conventions (all functions): ``a`` is the baseline arm, ``b`` the candidate.
``t`` is scipy's sign convention, ``(mean_a − mean_b) / se``; the ratio is
``mean_b / mean_a`` (METHODS.md M4: 180 W over 200 W = 0.932 with t = +0.90).

Sources
- Welch's t-test: ``scipy.stats.ttest_ind(a, b, equal_var=False)`` and, from
  mean ± sample std, ``scipy.stats.ttest_ind_from_stats(..., equal_var=False)``;
  Welch–Satterthwaite degrees of freedom.
- Ratio-of-means CI: delta method on the log scale,
  ``se(log r)² = s_a²/(n_a·m_a²) + s_b²/(n_b·m_b²)`` with Welch–Satterthwaite df,
  CI = r · exp(± t(0.975, df) · se). Approximate (Fieller's interval is exact
  for normal data); fine while CV/√n is small.
- Variance: Brown–Forsythe (``scipy.stats.levene(a, b, center="median")``)
  and the two-sided F-test of s_a²/s_b² (``scipy.stats.f``), METHODS.md M9.

The figures only: the one verdict of a comparison (faster / slower /
equivalent / inconclusive) and the one "stably slow" rule (M9) are
:func:`tokcaliper.stats.ab.analyze_samples` and :func:`tokcaliper.stats.ab.stably_slow`.

Pure functions, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel
from scipy import stats as _st

from tokcaliper.errors import InputError
from tokcaliper.model.verdict import Status, Verdict
from tokcaliper.numbers import num, p_value, percent, ratio as fmt_ratio
from tokcaliper.numbers import signed_percent as _signed_pct
from tokcaliper.stats.describe import require_finite_values
from tokcaliper.stats.resolution import mde_quick

__all__ = [
    "PairStep",
    "VarianceTest",
    "WelchResult",
    "f_test_from_summary",
    "pair_ratios",
    "single_number_comparison",
    "variance_test",
    "welch",
    "welch_from_summary",
]

SOURCE_WELCH = "Welch's t-test: scipy.stats.ttest_ind(equal_var=False), Welch–Satterthwaite df"
SOURCE_RATIO_CI = "ratio CI: delta method on log(mean_b/mean_a), Welch–Satterthwaite df"
SOURCE_VAR = "Brown–Forsythe: scipy.stats.levene(center='median'); F-test: scipy.stats.f (two-sided)"


class WelchResult(BaseModel):
    """Welch's two-sample t-test of arm a (baseline) against arm b (candidate).

    Attributes:
        n_a, n_b: runs per arm. mean_a, mean_b, sd_a, sd_b: means and sample stds.
        t: (mean_a − mean_b) / se (scipy's sign). df: Welch–Satterthwaite df.
        p: two-sided p-value. se: standard error of the difference of means.
        diff: mean_b − mean_a; diff_ci95: its 95% CI (Welch).
        ratio: mean_b / mean_a (``None`` if mean_a ≤ 0);
        ratio_ci95: 95% CI of the ratio (delta method, log scale; ``None`` when
            a mean is ≤ 0 or both stds are 0).
    """

    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    sd_a: float
    sd_b: float
    t: float
    df: float
    p: float
    se: float
    diff: float
    diff_ci95: tuple[float, float] | None
    ratio: float | None
    ratio_ci95: tuple[float, float] | None


def _welch_df(va: float, vb: float, n_a: int, n_b: int) -> float:
    """Welch–Satterthwaite df for per-mean variances ``va = s_a²/n_a``, ``vb = s_b²/n_b``."""
    den = va**2 / (n_a - 1) + vb**2 / (n_b - 1)
    return (va + vb) ** 2 / den if den > 0 else float("nan")


def _finish(m_a: float, s_a: float, n_a: int, m_b: float, s_b: float, n_b: int,
            t: float, p: float, df: float) -> WelchResult:
    va, vb = s_a**2 / n_a, s_b**2 / n_b
    se = math.sqrt(va + vb)
    diff = m_b - m_a
    diff_ci = None
    if se > 0 and math.isfinite(df):
        q = float(_st.t.ppf(0.975, df))
        diff_ci = (diff - q * se, diff + q * se)
    ratio = m_b / m_a if m_a > 0 else None
    ratio_ci = None
    if ratio is not None and m_b > 0:
        la, lb = s_a**2 / (n_a * m_a**2), s_b**2 / (n_b * m_b**2)
        se_log = math.sqrt(la + lb)
        df_log = _welch_df(la, lb, n_a, n_b)
        if se_log > 0 and math.isfinite(df_log):
            q = float(_st.t.ppf(0.975, df_log))
            ratio_ci = (ratio * math.exp(-q * se_log), ratio * math.exp(q * se_log))
    return WelchResult(n_a=n_a, n_b=n_b, mean_a=m_a, mean_b=m_b, sd_a=s_a, sd_b=s_b, t=t,
                       df=df, p=p, se=se, diff=diff, diff_ci95=diff_ci, ratio=ratio,
                       ratio_ci95=ratio_ci)


def _need_two(n_a: int, n_b: int) -> None:
    if n_a < 2 or n_b < 2:
        raise InputError(f"Welch's t-test needs at least 2 runs per arm, got n={n_a}+{n_b}")


def welch(a: Sequence[float], b: Sequence[float]) -> WelchResult:
    """Welch's t-test of two arms' runs (METHODS.md M4).

    Args:
        a: baseline runs, shape (n_a,), n_a ≥ 2, finite, in the metric's unit.
        b: candidate runs, shape (n_b,), n_b ≥ 2.

    Returns:
        :class:`WelchResult` (t from ``scipy.stats.ttest_ind(a, b, equal_var=False)``,
        ratio mean_b/mean_a with a delta-method CI).

    Raises:
        InputError: empty/non-finite input or fewer than 2 runs in an arm.
    """
    xa, xb = require_finite_values(a, "arm a"), require_finite_values(b, "arm b")
    _need_two(xa.size, xb.size)
    r = _st.ttest_ind(xa, xb, equal_var=False)
    va, vb = xa.var(ddof=1) / xa.size, xb.var(ddof=1) / xb.size
    df = float(getattr(r, "df", _welch_df(va, vb, xa.size, xb.size)))
    return _finish(float(xa.mean()), float(xa.std(ddof=1)), int(xa.size), float(xb.mean()),
                   float(xb.std(ddof=1)), int(xb.size), float(r.statistic), float(r.pvalue), df)


def welch_from_summary(mean_a: float, sd_a: float, n_a: int,
                       mean_b: float, sd_b: float, n_b: int) -> WelchResult:
    """Welch's t-test from published mean ± sample std and n (METHODS.md M9).

    Uses ``scipy.stats.ttest_ind_from_stats(..., equal_var=False)``. Rounded
    published summaries reproduce the raw-data t only to about ±0.02 (e.g.
    453.2 ± 6.9 vs 500.3 ± 50.2, n = 4 each, gives −1.86; the source's −1.84
    came from its unpublished raw runs).

    Args:
        mean_a, sd_a, n_a: baseline mean, sample std (ddof=1, ≥ 0) and runs (≥ 2).
        mean_b, sd_b, n_b: the same for the candidate.

    Raises:
        InputError: non-finite values, negative std or n < 2.
    """
    for name, v in (("mean_a", mean_a), ("sd_a", sd_a), ("mean_b", mean_b), ("sd_b", sd_b)):
        if not math.isfinite(v):
            raise InputError(f"{name} must be finite, got {v}")
    if sd_a < 0 or sd_b < 0:
        raise InputError(f"standard deviations must be >= 0, got {sd_a} and {sd_b}")
    _need_two(n_a, n_b)
    r = _st.ttest_ind_from_stats(mean_a, sd_a, n_a, mean_b, sd_b, n_b, equal_var=False)
    df = _welch_df(sd_a**2 / n_a, sd_b**2 / n_b, n_a, n_b)
    return _finish(float(mean_a), float(sd_a), int(n_a), float(mean_b), float(sd_b), int(n_b),
                   float(r.statistic), float(r.pvalue), df)


# ---------------------------------------------------------------- variances (M9)


class VarianceTest(BaseModel):
    """Do the two arms' variances differ? (METHODS.md M9)

    Attributes:
        sd_a, sd_b: sample stds; sd_ratio: larger / smaller (``None`` if the smaller is 0).
        f: s_a² / s_b²; f_p: two-sided p of the F-test with (n_a−1, n_b−1) df.
        bf_w, bf_p: Brown–Forsythe statistic and p (``None`` when only a summary was given).
    """

    n_a: int
    n_b: int
    sd_a: float
    sd_b: float
    sd_ratio: float | None
    f: float | None
    f_p: float | None
    bf_w: float | None = None
    bf_p: float | None = None


def f_test_from_summary(sd_a: float, n_a: int, sd_b: float, n_b: int) -> VarianceTest:
    """Two-sided F-test of equal variances from sample stds (METHODS.md M9).

    ``F = s_a²/s_b²``, p = 2·min(F.cdf, F.sf) with (n_a−1, n_b−1) df
    (``scipy.stats.f``). Sensitive to non-normality; prefer
    :func:`variance_test` (Brown–Forsythe) when the runs are available.

    Raises:
        InputError: negative/non-finite std or n < 2.
    """
    if not (math.isfinite(sd_a) and math.isfinite(sd_b)) or sd_a < 0 or sd_b < 0:
        raise InputError(f"standard deviations must be finite and >= 0, got {sd_a} and {sd_b}")
    if n_a < 2 or n_b < 2:
        raise InputError(f"a variance test needs at least 2 runs per arm, got n={n_a}+{n_b}")
    lo, hi = min(sd_a, sd_b), max(sd_a, sd_b)
    ratio = hi / lo if lo > 0 else None
    f = f_p = None
    if sd_b > 0:
        f = sd_a**2 / sd_b**2
        dist = _st.f(n_a - 1, n_b - 1)
        f_p = float(min(1.0, 2 * min(dist.cdf(f), dist.sf(f))))
    return VarianceTest(n_a=n_a, n_b=n_b, sd_a=sd_a, sd_b=sd_b, sd_ratio=ratio, f=f, f_p=f_p)


def variance_test(a: Sequence[float], b: Sequence[float]) -> VarianceTest:
    """Brown–Forsythe and F-tests of equal variances of two arms (METHODS.md M9).

    Brown–Forsythe is ``scipy.stats.levene(a, b, center="median")`` (robust to
    non-normal runs), skipped (``None``) below 3 runs per arm where it is
    degenerate; the F-test is :func:`f_test_from_summary`.

    Args:
        a, b: runs, shapes (n_a,), (n_b,), each n ≥ 2, finite.

    Raises:
        InputError: empty/non-finite input or n < 2 in an arm.
    """
    xa, xb = require_finite_values(a, "arm a"), require_finite_values(b, "arm b")
    res = f_test_from_summary(float(xa.std(ddof=1)) if xa.size > 1 else 0.0, int(xa.size),
                              float(xb.std(ddof=1)) if xb.size > 1 else 0.0, int(xb.size))
    if min(xa.size, xb.size) < 3:
        # With 2 runs both absolute deviations from the median are equal, so the
        # within-arm spread of deviations is 0 and W is infinite: no test at all.
        return res
    bf = _st.levene(xa, xb, center="median")
    w, p = float(bf.statistic), float(bf.pvalue)
    if not (math.isfinite(w) and math.isfinite(p)):
        return res
    return res.model_copy(update={"bf_w": w, "bf_p": p})


# ---------------------------------------------------------------- pairs (M4)


class PairStep(BaseModel):
    """One interleaved pair and Welch's figures over the pairs so far (METHODS.md M4).

    The figures only, no verdict word: the verdict after each pair is
    :class:`tokcaliper.stats.ab.RunningStep` (the gated paired analysis).

    Attributes:
        k: 1-based pair number. a, b: the pair's runs. ratio: b / a.
        cum_ratio: ratio of the means of the first k pairs (mean_b / mean_a).
        t, p: Welch's t and p over the first k pairs (``None`` for k = 1).
        text: e.g. ``"-21.1% (p=0.09, n=2+2)"``.
    """

    k: int
    a: float
    b: float
    ratio: float | None
    cum_ratio: float | None
    t: float | None
    p: float | None
    text: str


def pair_ratios(a: Sequence[float], b: Sequence[float]) -> list[PairStep]:
    """Per-pair ratios b_k/a_k in run order and Welch's t and p after each pair (M4).

    The source's power-cap A/B read "−21%" after two pairs and "+4%" over the
    last three; showing every step makes such early conclusions visible.

    Args:
        a, b: baseline and candidate runs in the order they were interleaved,
            equal length (pair k = (a[k], b[k])). Drop both runs of a pair
            whose run was invalid before calling.

    Returns:
        One :class:`PairStep` per pair, shape (n,); linear in n.

    Raises:
        InputError: unequal lengths, empty or non-finite input.
    """
    xa, xb = require_finite_values(a, "arm a"), require_finite_values(b, "arm b")
    if xa.size != xb.size:
        raise InputError(f"pairs need equal run counts per arm, got {xa.size} and {xb.size}")
    ma, va = _prefix_mean_var(xa)
    mb, vb = _prefix_mean_var(xb)
    t_all, p_all = _prefix_welch(ma, va, mb, vb)
    steps: list[PairStep] = []
    for k in range(1, xa.size + 1):
        ai, bi = float(xa[k - 1]), float(xb[k - 1])
        cum = float(mb[k - 1]) / float(ma[k - 1]) if ma[k - 1] > 0 else None
        t = p = None
        if k >= 2:
            t, p = float(t_all[k - 1]), float(p_all[k - 1])
            t, p = (t if math.isfinite(t) else None), (p if math.isfinite(p) else None)
        ptxt = f"p={p_value(p, 2)}" if p is not None else "no test"
        steps.append(PairStep(k=k, a=ai, b=bi, ratio=bi / ai if ai > 0 else None, cum_ratio=cum,
                              t=t, p=p, text=f"{_signed_pct(cum)} ({ptxt}, n={k}+{k})"))
    return steps


def _prefix_mean_var(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sample variance (ddof 1; NaN for one value) of every prefix ``x[:k]``, k = 1…n.

    One pass of cumulative sums of the values shifted by the first one (the
    shift keeps the one-pass variance formula free of cancellation: the sums
    are of deviations, not of values ~10⁶ times larger), so all n prefixes cost
    O(n) instead of n separate passes.
    """
    k = np.arange(1, x.size + 1, dtype=float)
    d = x - x[0]
    s1, s2 = np.cumsum(d), np.cumsum(d * d)
    mean = x[0] + s1 / k
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(k > 1, (s2 - s1 * s1 / k) / (k - 1), np.nan)
    return mean, np.maximum(var, 0.0)


def _prefix_welch(ma: np.ndarray, va: np.ndarray, mb: np.ndarray, vb: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Welch's t and two-sided p of every prefix pair (k runs each), as ``scipy.stats.ttest_ind``.

    ``t = (m_a − m_b) / √(v_a/k + v_b/k)``, Welch–Satterthwaite
    ``df = (v_a/k + v_b/k)² / ((v_a/k)²/(k−1) + (v_b/k)²/(k−1))``,
    ``p = 2·sf(|t|, df)``: one vectorised call of ``scipy.stats.t.sf`` for all
    prefixes. NaN where undefined (k = 1; no spread and equal means); no spread
    but different means gives t = ±inf and p = 0, as scipy does.
    """
    k = np.arange(1, ma.size + 1, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        qa, qb = va / k, vb / k
        se = np.sqrt(qa + qb)
        t = (ma - mb) / se
        df = (qa + qb) ** 2 / (qa * qa / (k - 1) + qb * qb / (k - 1))
        df = np.where(np.isnan(df), 1.0, df)  # no spread: any df (scipy's rule), t is ±inf or NaN
        p = 2 * _st.t.sf(np.abs(t), df)
    return t, p


# ---------------------------------------------------------------- M10


def single_number_comparison(mine: float, theirs: float, local_cv: float,
                             names: tuple[str, str] = ("mine", "theirs")) -> Verdict:
    """One local run against one published number from another machine (METHODS.md M10).

    A single run per side resolves only ``MDE = 2·CV·√2`` (CV 15% → 42%). The
    verdict always shows the local CV beside the ratio.

    Args:
        mine, theirs: the two numbers (same unit, > 0).
        local_cv: CV of the local setup as a fraction (> 0), from a noise-floor run.
        names: display names.

    Returns:
        Verdict "M10": WARN "anecdote" when |ratio − 1| < MDE, else PASS with the
        caveat that other knobs may differ (METHODS.md A7).

    Raises:
        InputError: non-positive or non-finite inputs.
    """
    for nm, v in ((names[0], mine), (names[1], theirs)):
        if not (math.isfinite(v) and v > 0):
            raise InputError(f"{nm} must be a positive number, got {v}")
    mde = mde_quick(local_cv, 1)
    ratio = theirs / mine
    gap = abs(ratio - 1)
    arithmetic = [
        f"ratio {names[1]}/{names[0]} = {num(theirs, 6, trim=True)} / {num(mine, 6, trim=True)} = {fmt_ratio(ratio)} "
        f"({_signed_pct(ratio)})",
        f"MDE (n=1 per side) = 2 × {num(local_cv, 6, trim=True)} × √2 = {num(mde)} ({percent(mde, decimals=0)})",
    ]
    if gap < mde:
        status = Status.WARN
        summary = (f"anecdote: a {percent(gap, decimals=0)} gap between single numbers is below the "
                   f"{percent(mde, decimals=0)} a single run can resolve at local CV {percent(local_cv)}")
    else:
        status = Status.PASS
        summary = (f"the {percent(gap, decimals=0)} gap exceeds the single-run MDE "
                   f"{percent(mde, decimals=0)} at local CV {percent(local_cv)}; still list the knobs "
                   f"that differ (A7) before concluding")
    return Verdict(check="M10", title="cross-machine single numbers", status=status, summary=summary,
                   arithmetic=arithmetic,
                   inputs={names[0]: mine, names[1]: theirs, "local_cv": local_cv},
                   sources=["METHODS.md M10", "METHODS.md M3: MDE = 2·CV·√(2/n), n = 1"])

