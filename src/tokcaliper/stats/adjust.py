"""Arm difference adjusted for a covariate measured at run start (ANCOVA; issue 9 item 5).

Pure function; no I/O. The unadjusted result is always computed beside the
adjusted one, and both are returned.

Model (ordinary least squares, ``statsmodels.api.OLS``)
- unadjusted: ``log y = β₀ + β_arm · [arm = B] + ε``
- adjusted:   ``log y = β₀ + β_arm · [arm = B] + β_c · (c − c̄) + ε``
  (analysis of covariance, Fisher 1932; see e.g. Montgomery, *Design and
  Analysis of Experiments*, ch. 15). With ``log=True`` (the default) the arm
  effect is a ratio: ``B/A = exp(β_arm)``, CI ``exp(β_arm ± t(1−α/2, df)·SE)``
  with df = n − 2 (unadjusted) or n − 3 (adjusted); p is the OLS t-test of
  β_arm. With ``log=False`` the effect is a difference B − A in the metric's
  unit. The unadjusted model is the pooled-variance (Student) two-sample t-test.
- Residual CV: ``s = √MSE`` of the model on the log scale; reported as the CV of
  a log-normal with that σ, ``√(exp(s²) − 1)`` (≈ s for small s). On the linear
  scale, ``s / mean``.
- MDE: :func:`tokcaliper.stats.resolution.mde_power` on each residual CV with
  n = the smaller arm's run count (statsmodels ``TTestIndPower``, two-sided,
  α and power given), and the quick ``2·CV·√(2/n)``. The adjusted MDE ignores
  the one degree of freedom the slope costs (slightly optimistic at small n).
- Why the covariate must be measured before or at the start of each run: if
  the arm could change it (a mean clock *during* the run under a different
  power cap), adjusting for it removes part of the arm's own effect. The
  function warns when the covariate differs between arms (Welch p < 0.05).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field

from tokcaliper.errors import InputError
from tokcaliper.model import warnings as W
from tokcaliper.model.warnings import Caveat
from tokcaliper.numbers import num, percent
from tokcaliper.stats.describe import require_finite_values

__all__ = ["AdjustedComparison", "ArmEffect", "adjusted_comparison"]


class ArmEffect(BaseModel):
    """The arm effect of one model.

    Attributes:
        model: the formula, e.g. ``"log y ~ arm + sm_clock_start_mhz"``.
        effect: B/A ratio (log model) or B − A difference (linear model).
        ci: ``(low, high)`` confidence interval of ``effect`` at 1 − α.
        p: two-sided p of the arm coefficient (OLS t-test).
        df: residual degrees of freedom.
        residual_sd: √MSE, on the model's scale (log or linear).
        residual_cv: residual CV (see module docstring).
        mde_power: power-based MDE at n per arm (fraction of the mean).
        mde_quick: 2·CV·√(2/n) (fraction of the mean).
        slope: covariate coefficient (None for the unadjusted model), per covariate unit
            on the model's scale (log units: ≈ fraction of the metric per unit).
        slope_p: its p.
    """

    model: str
    effect: float
    ci: tuple[float, float]
    p: float
    df: int
    residual_sd: float
    residual_cv: float
    mde_power: float | None
    mde_quick: float | None
    slope: float | None = None
    slope_p: float | None = None


class AdjustedComparison(BaseModel):
    """Unadjusted and covariate-adjusted arm comparison.

    Attributes:
        arms: ``(A, B)``; the effect is B relative to A.
        n: runs per arm ``(n_A, n_B)``.
        covariate: the covariate's name.
        log: True when the metric was log-transformed (effect = ratio).
        alpha: 1 − confidence level of the CIs.
        unadjusted / adjusted: :class:`ArmEffect` of each model.
        variance_explained: 1 − SSE_adjusted / SSE_unadjusted, the share of the
            within-arm variance the covariate explains (partial R²).
        cv_shrink: 1 − residual CV adjusted / unadjusted.
        covariate_arm_p: Welch p that the covariate's mean differs between arms.
        warnings: cautions, each a named warning (``covariate-differs-by-arm``,
            ``covariate-explains-little``; :mod:`tokcaliper.model.warnings`).
        arithmetic: the lines of the computation, for the report.
    """

    arms: tuple[str, str]
    n: tuple[int, int]
    covariate: str
    log: bool
    alpha: float
    unadjusted: ArmEffect
    adjusted: ArmEffect
    variance_explained: float
    cv_shrink: float
    covariate_arm_p: float | None
    warnings: list[Caveat] = Field(default_factory=list)
    arithmetic: list[str] = Field(default_factory=list)


def _fit(y: np.ndarray, cols: list[np.ndarray], alpha: float):  # type: ignore[no-untyped-def]
    import statsmodels.api as sm  # lazy: slow import

    X = np.column_stack([np.ones_like(y), *cols])
    res = sm.OLS(y, X).fit()
    lo, hi = res.conf_int(alpha=alpha)[1]
    return res, float(res.params[1]), (float(lo), float(hi)), float(res.pvalues[1])


def adjusted_comparison(
    values: Sequence[float],
    arms: Sequence[str],
    covariate: Sequence[float],
    *,
    covariate_name: str = "covariate",
    log: bool = True,
    alpha: float = 0.05,
    power: float = 0.8,
    reference_arm: str | None = None,
    with_mde: bool = True,
) -> AdjustedComparison:
    """Compare two arms with and without adjusting for a start-of-run covariate.

    Args:
        values: the metric per run (> 0 when ``log``).
        arms: arm label per run; exactly two distinct labels.
        covariate: covariate per run (finite), measured before or at the start of the run.
        covariate_name: its name, for the formula and messages.
        log: model log(metric) so that the effect is a ratio (default, recommended
            for throughputs); False models the metric itself (effect = difference).
        alpha: CI level is 1 − alpha.
        power: power for the MDE.
        reference_arm: arm A (the denominator); default the first label in ``arms``.
        with_mde: compute the power-based MDEs (a numerical solve each; False
            leaves them ``None``, for simulations).

    Returns:
        :class:`AdjustedComparison`.

    Raises:
        InputError: lengths differ, not exactly two arms, an arm with < 2 runs,
            fewer than 5 runs in all (the adjusted model needs df ≥ 2), a
            non-positive value with ``log``, a constant covariate, or a
            covariate collinear with the arm.
    """
    from tokcaliper.stats.resolution import mde_power, mde_quick
    from scipy import stats as _st

    y_raw = require_finite_values(values, "metric values")
    c = require_finite_values(covariate, covariate_name)
    if not (len(y_raw) == len(arms) == len(c)):
        raise InputError(f"{len(y_raw)} values, {len(arms)} arm labels and {len(c)} {covariate_name} values")
    labels = list(dict.fromkeys(arms))
    if len(labels) != 2:
        raise InputError(f"an adjusted comparison needs exactly two arms, got {len(labels)}: "
                         f"{', '.join(map(str, labels)) or 'none'}")
    if reference_arm is not None:
        if reference_arm not in labels:
            raise InputError(f"reference arm {reference_arm!r} is not one of {labels}")
        labels = [reference_arm, next(a for a in labels if a != reference_arm)]
    a_name, b_name = labels
    isb = np.array([a == b_name for a in arms], dtype=float)
    n_a, n_b = int((isb == 0).sum()), int(isb.sum())
    if min(n_a, n_b) < 2:
        raise InputError(f"each arm needs ≥ 2 runs ({a_name}: {n_a}, {b_name}: {n_b})")
    if n_a + n_b < 5:
        raise InputError(f"{n_a + n_b} runs: the adjusted model (3 coefficients) needs ≥ 5")
    if log and np.any(y_raw <= 0):
        raise InputError("log model needs metric values > 0 (use log=False for a difference)")
    if np.ptp(c) == 0:
        raise InputError(f"{covariate_name} has the same value in every run: nothing to adjust for")
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha}")
    ca, cb = c[isb == 0], c[isb == 1]
    if np.ptp(ca) == 0 and np.ptp(cb) == 0:
        raise InputError(f"{covariate_name} is constant within each arm: it cannot be told apart from the arm")
    y = np.log(y_raw) if log else y_raw
    cc = c - c.mean()
    r0, b0, ci0, p0 = _fit(y, [isb], alpha)
    r1, b1, ci1, p1 = _fit(y, [isb, cc], alpha)
    mean_y = float(y_raw.mean())

    def cv_of(sd: float) -> float:
        return math.sqrt(math.expm1(sd * sd)) if log else sd / mean_y

    n_min = min(n_a, n_b)

    def effect(model: str, res, b: float, ci: tuple[float, float], p: float,  # type: ignore[no-untyped-def]
               slope: float | None, slope_p: float | None) -> ArmEffect:
        sd = math.sqrt(float(res.mse_resid))
        cv = cv_of(sd)
        mp = None
        if with_mde and cv > 0:
            try:
                mp = mde_power(cv, n_min, alpha=alpha, power=power)
            except InputError:
                mp = None
        mq = mde_quick(cv, n_min) if cv > 0 else None
        tr = math.exp if log else (lambda v: v)
        return ArmEffect(model=model, effect=tr(b), ci=(tr(ci[0]), tr(ci[1])), p=p,
                         df=int(res.df_resid), residual_sd=sd, residual_cv=cv, mde_power=mp,
                         mde_quick=mq, slope=slope, slope_p=slope_p)

    lhs = "log y" if log else "y"
    un = effect(f"{lhs} ~ arm", r0, b0, ci0, p0, None, None)
    ad = effect(f"{lhs} ~ arm + {covariate_name}", r1, b1, ci1, p1,
                float(r1.params[2]), float(r1.pvalues[2]))
    sse0, sse1 = float(r0.ssr), float(r1.ssr)
    explained = 1.0 - sse1 / sse0 if sse0 > 0 else 0.0
    shrink = 1.0 - ad.residual_cv / un.residual_cv if un.residual_cv > 0 else 0.0
    warnings: list[Caveat] = []
    cov_p = None
    if np.ptp(ca) > 0 or np.ptp(cb) > 0:
        cov_p = float(_st.ttest_ind(cb, ca, equal_var=False).pvalue)
        if cov_p < 0.05:
            warnings.append(W.COVARIATE_DIFFERS_BY_ARM.caveat(
                covariate=covariate_name, p=num(cov_p, 3), mean_a=num(ca.mean(), 4), mean_b=num(cb.mean(), 4)))
    if explained < 0.25:
        warnings.append(W.COVARIATE_EXPLAINS_LITTLE.caveat(covariate=covariate_name,
                                                           share=percent(explained, decimals=0)))
    kind = "ratio B/A" if log else "difference B − A"
    fmt_e = (lambda v: num(v, 4, min_decimals=4)) if log else (lambda v: num(v, 4))
    arithmetic = [
        f"arms: A = {a_name} (n={n_a}), B = {b_name} (n={n_b}); effect = {kind}"
        + ("; OLS on log(metric), effect = exp(β_arm)" if log else "; OLS on the metric"),
        f"unadjusted {un.model}: {fmt_e(un.effect)} [{fmt_e(un.ci[0])}, {fmt_e(un.ci[1])}] "
        f"({percent(1 - alpha, decimals=0)} CI, t with {un.df} df), p = {num(un.p, 3)}, "
        f"residual CV {percent(un.residual_cv, decimals=2)}",
        f"adjusted {ad.model}: {fmt_e(ad.effect)} [{fmt_e(ad.ci[0])}, {fmt_e(ad.ci[1])}] "
        f"({percent(1 - alpha, decimals=0)} CI, t with {ad.df} df), p = {num(ad.p, 3)}, "
        f"residual CV {percent(ad.residual_cv, decimals=2)}",
        f"{covariate_name} explains 1 − SSE_adj/SSE_unadj = 1 − {num(sse1, 4)}/{num(sse0, 4)} = "
        f"{percent(explained)} "
        f"of the within-arm variance; residual CV shrinks by {percent(shrink)}",
    ]
    if un.mde_power is not None and ad.mde_power is not None:
        arithmetic.append(
            f"MDE at n={n_min} per arm, power {power:g}, α {alpha:g} (statsmodels TTestIndPower): "
            f"{percent(un.mde_power)} unadjusted → {percent(ad.mde_power)} adjusted")
    return AdjustedComparison(
        arms=(a_name, b_name), n=(n_a, n_b), covariate=covariate_name, log=log, alpha=alpha,
        unadjusted=un, adjusted=ad, variance_explained=explained, cv_shrink=shrink,
        covariate_arm_p=cov_p, warnings=warnings, arithmetic=arithmetic,
    )
