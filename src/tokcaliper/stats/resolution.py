"""Resolution of the ruler: what n runs per arm can see, before running (METHODS.md M3).

Two families of formulas, always shown side by side:

- **Quick** (METHODS.md M3, from the source write-up):
  ``MDE ≈ 2 · CV · √(2/n)`` and ``n ≈ 8 · (CV/Δ)²``. The 2 is z(0.975) ≈ 1.96
  rounded; √(2/n) because both arm means carry noise. They ignore statistical
  power: a true difference of exactly the MDE is detected only about half the
  time (z_β = 0 ⇒ power ≈ 50%), and they assume independent runs.
- **Power-based**: a two-sample t-test power analysis,
  ``statsmodels.stats.power.TTestIndPower.solve_power`` with effect size
  Cohen's d = Δ/CV (both relative to the mean), equal n per arm, two-sided
  α. statsmodels uses the pooled-variance (Student) t with 2n−2 degrees of
  freedom; Welch's test has at most that many, so the true Welch power is
  marginally lower (negligible for equal n and similar CVs).
- **Verdict power** (:func:`verdict_power`, :func:`n_verdict`): the power of
  the verdict ``compare`` and ``experiment`` actually give. "faster" needs
  p < α *and* the whole ``1 − α`` CI beyond the noise band, i.e. on the
  analysis scale (ln ratio, or the difference in the metric's unit)
  ``(est − b)/se > t(1 − α/2, ν)`` with b the band's edge. With a true effect
  θ, ``(est − b)/se`` is noncentral t with ν df and noncentrality
  ``λ = (θ − b)·√n / s_d``, so

      power = P(T'(ν, λ) > t(1 − α/2, ν))     (scipy.stats.nct.sf)

  exactly for normal pair differences (p < α follows: a CI beyond the band
  excludes no change). ``paired``: mean of n pair differences of sd s_d,
  ν = n − 1; ``independent``: two arms of n runs of sd s each,
  s_d = s·√2, ν = 2n − 2 (Welch's df for equal spreads). With Δ ≤ band
  (θ ≤ b) the power stays ≤ α/2 at every n: no faster/slower verdict is
  reachable. For ratios θ = ln(1 + Δ), b = ln(1 + band) (the increase case:
  for a decrease the distance |ln(1 − Δ)| − |ln(1 − band)| is slightly
  larger, so this is conservative) and s_d = √2·√(ln(1 + CV²)) for
  independent runs of CV ``CV``.

All effects and CVs are fractions of the mean (0.05 = 5%). Pure functions, no I/O.
"""

from __future__ import annotations

import math
import numbers
import warnings

from pydantic import BaseModel, Field

from tokcaliper.errors import InputError
from tokcaliper.model import warnings as W
from tokcaliper.model.bounds import MAX_DURATION_S, MAX_TIMEOUT_S
from tokcaliper.model.warnings import Caveat
from tokcaliper.model.verdict import Status, Verdict
from tokcaliper.numbers import num, percent

__all__ = [
    "Plan",
    "achieved_power_of_quick_formula",
    "human_duration",
    "mde_power",
    "mde_quick",
    "n_power",
    "n_verdict",
    "n_quick",
    "n_quick_raw",
    "plan",
    "power_at",
    "ratio_distance",
    "sd_diff_from_cv",
    "verdict_power",
]

#: z(0.975) = 1.96, rounded to 2 in the quick formulas (METHODS.md M3).
QUICK_Z = 2.0
#: Smallest n per arm for which a two-sample t-test has degrees of freedom (2n−2 ≥ 2).
MIN_N_POWER = 2
#: Tolerance when taking the ceiling of a float that should be an integer
#: (8·(0.15/0.05)² evaluates to 71.99999999999999 in binary floating point).
_CEIL_EPS = 1e-9

SOURCE_QUICK = "METHODS.md M3: MDE ≈ 2·CV·√(2/n); n ≈ 8·(CV/Δ)² (about 50% power)"
SOURCE_POWER = (
    "statsmodels.stats.power.TTestIndPower.solve_power "
    "(two-sample t-test, equal n, two-sided, effect size d = Δ/CV)"
)
SOURCE_BUDGET = "METHODS.md M3: budget = 2 arms × n × (run time + cool-down)"
SOURCE_VERDICT = ("verdict power: P(the 1−α CI lies wholly beyond the noise band) = "
                  "P(T'(ν, λ) > t(1−α/2, ν)), λ = (θ − band edge)·√n/s_d; paired ν = n−1, "
                  "independent ν = 2n−2 (scipy.stats.nct)")
#: ``design`` of :func:`verdict_power`: interleaved runs analysed as pairs, or two independent arms.
DESIGNS = ("paired", "independent")


# ---------------------------------------------------------------- validation


def _num(x: float) -> str:
    return f"{x:g}"


def _check_cv(cv: float) -> None:
    if not (isinstance(cv, (int, float)) and math.isfinite(cv) and cv > 0):
        raise InputError(f"--cv must be > 0, got {_num(cv)}")


#: Largest relative effect taken (1000%): beyond it the figure is a typo, and
#: percentages of it print as hundreds of digits.
MAX_EFFECT = 10.0


def _check_effect(delta: float) -> None:
    if not (isinstance(delta, (int, float)) and math.isfinite(delta) and delta > 0):
        raise InputError(f"--effect must be > 0, got {_num(delta)}")
    if delta > MAX_EFFECT:
        raise InputError(f"--effect must be ≤ {MAX_EFFECT:g} (a fraction: 0.05 = 5%), got {_num(delta)}")


#: Largest run count we compute with: beyond it the answer is "never", and
#: floats stop being exact integers long before 2**53.
MAX_RUNS = 10**9


def _check_n(n: int, minimum: int = 1, why: str = "") -> None:
    if isinstance(n, bool) or not (isinstance(n, numbers.Integral) and minimum <= n <= MAX_RUNS):
        raise InputError(f"--n must be an integer between {minimum} and {MAX_RUNS:,}{why}, got {n}")


def _check_alpha(alpha: float) -> None:
    if not (math.isfinite(alpha) and 0 < alpha < 1):
        raise InputError(f"--alpha must be between 0 and 1 (exclusive), got {_num(alpha)}")


def _check_power(power: float, alpha: float | None = None) -> None:
    if not (math.isfinite(power) and 0 < power < 1):
        raise InputError(f"--power must be between 0 and 1 (exclusive), got {_num(power)}")
    # A two-sided test already rejects with probability α when there is no
    # effect, so no effect size gives a power at or below α: nothing to solve.
    if alpha is not None and power <= alpha:
        raise InputError(
            f"--power {_num(power)} must exceed --alpha {_num(alpha)}: a test rejects with "
            "probability alpha even without any effect"
        )


def _ceil(x: float) -> int:
    """Ceiling of a run count; InputError when it is beyond :data:`MAX_RUNS`."""
    if not math.isfinite(x) or x > MAX_RUNS:
        raise InputError(
            f"that needs more than {MAX_RUNS:,} runs per arm: the effect is far below "
            "what this ruler can resolve"
        )
    return int(math.ceil(x - _CEIL_EPS))


# ---------------------------------------------------------------- quick formulas


def mde_quick(cv: float, n: int) -> float:
    """Quick minimum detectable effect of two arms with n runs each (METHODS.md M3).

    ``MDE = 2 · CV · √(2/n)``; CV 15%: n=1 → 42%, n=5 → 19%.

    Args:
        cv: coefficient of variation as a fraction (> 0).
        n: runs per arm (≥ 1).

    Returns:
        MDE as a fraction of the mean (≈95% two-sided, ≈50% power).

    Raises:
        InputError: cv ≤ 0 or n < 1.
    """
    _check_cv(cv)
    _check_n(n)
    return QUICK_Z * cv * math.sqrt(2.0 / n)


def n_quick_raw(cv: float, delta: float) -> float:
    """Unrounded quick runs per arm, ``8 · (CV/Δ)²`` (METHODS.md M3).

    Raises:
        InputError: cv ≤ 0 or delta ≤ 0.
    """
    _check_cv(cv)
    _check_effect(delta)
    ratio = cv / delta
    # (1e200)**2 raises OverflowError; multiplying gives inf instead, which the
    # callers report as "more than MAX_RUNS runs per arm".
    return 2.0 * QUICK_Z**2 * ratio * ratio


def n_quick(cv: float, delta: float) -> int:
    """Quick runs per arm to see a relative difference Δ: ``ceil(8 · (CV/Δ)²)`` (METHODS.md M3).

    CV 15%: Δ=10% → 18, Δ=5% → 72. (CV 4%, Δ=5% gives 5.12 → 6; the source
    rounds it to "≈ 5".) Has only about 50% power: see
    :func:`achieved_power_of_quick_formula`.

    Raises:
        InputError: cv ≤ 0 or delta ≤ 0.
    """
    # At least 2: one run per arm has no variance, so no test can use it.
    return max(2, _ceil(n_quick_raw(cv, delta)))


# ---------------------------------------------------------------- power-based


def _solver():
    from statsmodels.stats.power import TTestIndPower

    return TTestIndPower()


def power_at(cv: float, delta: float, n: int, alpha: float = 0.05) -> float:
    """Power of a two-sided two-sample t-test with n runs per arm to detect Δ.

    Uses ``statsmodels.stats.power.TTestIndPower.power`` with effect size
    d = Δ/CV and ``ratio=1``; where it returns NaN (very large d) the normal
    approximation Φ(d·√(n/2) − z(1−α/2)) is used.

    Args:
        cv: CV as a fraction (> 0). delta: relative effect (> 0).
        n: runs per arm (≥ 2). alpha: two-sided significance level.

    Returns:
        Probability in [0, 1].

    Raises:
        InputError: invalid cv, delta, n (< 2) or alpha.
    """
    _check_cv(cv)
    _check_effect(delta)
    _check_n(n, MIN_N_POWER, " for a power calculation")
    _check_alpha(alpha)
    d = delta / cv
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = float(_solver().power(effect_size=d, nobs1=n, alpha=alpha, ratio=1.0,
                                  alternative="two-sided"))
    if not math.isfinite(p):
        # statsmodels' noncentral t returns NaN for very large d·√(n/2); the
        # normal approximation Φ(d·√(n/2) − z(1−α/2)) is then ≈ 1 and accurate.
        from scipy.stats import norm

        p = float(norm.cdf(d * math.sqrt(n / 2) - norm.ppf(1 - alpha / 2)))
    return p


def n_power(cv: float, delta: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Exact power-based runs per arm to detect a relative difference Δ (METHODS.md M3).

    ``ceil(TTestIndPower().solve_power(effect_size=Δ/CV, alpha=α, power=power,
    ratio=1, alternative="two-sided"))`` from statsmodels, at least 2. Where
    the root finder fails (very large effects), the smallest n ≥ 2 whose
    :func:`power_at` reaches ``power`` is searched directly.

    Args:
        cv: CV as a fraction (> 0). delta: relative effect (> 0).
        alpha: two-sided significance level in (0, 1). power: target power in (0, 1).

    Returns:
        Runs per arm (int ≥ 2). Larger than :func:`n_quick` for power ≥ 0.5.

    Raises:
        InputError: invalid cv, delta, alpha or power.
    """
    _check_cv(cv)
    _check_effect(delta)
    _check_alpha(alpha)
    _check_power(power, alpha)
    solver = _solver()
    d = delta / cv
    if power_at(cv, delta, MIN_N_POWER, alpha) >= power:
        return MIN_N_POWER
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = float(solver.solve_power(effect_size=d, alpha=alpha, power=power, ratio=1.0,
                                       alternative="two-sided"))
    if math.isfinite(raw):
        return max(MIN_N_POWER, _ceil(raw))
    n = MIN_N_POWER  # fallback: monotone search, doubling then bisection
    while power_at(cv, delta, n, alpha) < power:
        n *= 2
    lo, hi = n // 2, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if power_at(cv, delta, mid, alpha) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def mde_power(cv: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Power-based minimum detectable effect of two arms with n runs each (METHODS.md M3).

    Solves ``TTestIndPower().solve_power(effect_size=None, nobs1=n, alpha=α,
    power=power, ratio=1, alternative="two-sided")`` (statsmodels) for Cohen's
    d and returns d · CV. CV 15%, n=5, power 0.8 → ≈ 30%.

    Args:
        cv: CV as a fraction (> 0). n: runs per arm (≥ 2).
        alpha, power: in (0, 1).

    Returns:
        MDE as a fraction of the mean.

    Raises:
        InputError: invalid cv, n < 2, alpha or power.
    """
    _check_cv(cv)
    _check_n(n, MIN_N_POWER, " for a power calculation")
    _check_alpha(alpha)
    _check_power(power, alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            d = float(_solver().solve_power(effect_size=None, nobs1=n, alpha=alpha, power=power,
                                            ratio=1.0, alternative="two-sided"))
        except (ValueError, ArithmeticError):
            d = math.nan
    if not math.isfinite(d):
        raise InputError(f"statsmodels could not solve the MDE for n={n}, alpha={alpha}, power={power}")
    return d * cv


def _check_design(design: str) -> None:
    if design not in DESIGNS:
        raise InputError(f"--design must be paired or independent, got {design!r}")


def ratio_distance(effect: float, noise_band: float) -> float:
    """How far a relative effect lies beyond the noise band on the log scale.

    ``ln(1 + Δ) − ln(1 + band)`` (the increase case; conservative for a
    decrease, see the module docstring). ≤ 0 when Δ ≤ band.
    """
    return math.log1p(effect) - math.log1p(noise_band)


def sd_diff_from_cv(cv: float) -> float:
    """sd of one pair's log ratio of two independent runs with CV ``cv``: ``√2·√(ln(1 + CV²))``."""
    return math.sqrt(2.0 * math.log1p(cv * cv))


def verdict_power(distance: float, sd_d: float, n: int, alpha: float = 0.05, *,
                  design: str = "paired") -> float:
    """Power of the gated verdict: P(the ``1 − α`` CI lies wholly beyond the band edge).

    ``P(T'(ν, λ) > t(1 − α/2, ν))`` with ``λ = distance·√n / sd_d`` (module
    docstring; ``scipy.stats.nct.sf``). Only the right direction counts.

    Args:
        distance: true effect minus the band's edge on the analysis scale
            (:func:`ratio_distance` for ratios; Δ − noise_abs for differences).
        sd_d: sd of one pair difference (> 0), same scale
            (:func:`sd_diff_from_cv` for independent runs of a known CV).
        n: pairs, or runs per arm (≥ 2). alpha: two-sided level.
        design: "paired" (ν = n − 1) or "independent" (ν = 2n − 2).

    Returns:
        Probability in [0, 1].

    Raises:
        InputError: sd_d ≤ 0, n < 2, alpha or design invalid.
    """
    from scipy import stats as st

    _check_design(design)
    _check_alpha(alpha)
    _check_n(n, MIN_N_POWER, " for a power calculation")
    if not (math.isfinite(sd_d) and sd_d > 0) or not math.isfinite(distance):
        raise InputError(f"the spread of the differences must be > 0, got {_num(sd_d)}")
    df = n - 1 if design == "paired" else 2 * n - 2
    lam = distance * math.sqrt(n) / sd_d
    crit = float(st.t.ppf(1 - alpha / 2, df))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = float(st.nct.sf(crit, df, lam))
    if not math.isfinite(p):  # extreme λ: the normal approximation is then accurate
        from scipy.stats import norm

        p = float(norm.sf(crit - lam))
    return min(1.0, max(0.0, p))


def n_verdict(distance: float, sd_d: float, alpha: float = 0.05, power: float = 0.8, *,
              design: str = "paired") -> int | None:
    """Smallest n (pairs, or runs per arm) whose :func:`verdict_power` reaches ``power``.

    Doubling then bisection (the power rises with n when distance > 0).

    Returns:
        n ≥ 2, or ``None`` when no n reaches it: distance ≤ 0 (the effect is
        inside the noise band, so no faster/slower verdict is reachable) or
        more than :data:`MAX_RUNS` would be needed.

    Raises:
        InputError: as :func:`verdict_power`, or power out of range.
    """
    _check_power(power, alpha)
    if distance <= 0:
        return None
    if verdict_power(distance, sd_d, MIN_N_POWER, alpha, design=design) >= power:
        return MIN_N_POWER
    hi = MIN_N_POWER
    while verdict_power(distance, sd_d, hi, alpha, design=design) < power:
        hi *= 2
        if hi > MAX_RUNS:
            return None
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if verdict_power(distance, sd_d, mid, alpha, design=design) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def achieved_power_of_quick_formula(cv: float, delta: float, alpha: float = 0.05) -> float:
    """Power actually reached by the quick ``n = 8·(CV/Δ)²`` runs per arm.

    About 50% (CV 15%, Δ 5%: n=72 → 0.51): the quick formula finds a true
    effect of size Δ only about half the time. Computed with
    ``TTestIndPower.power`` at ``max(2, n_quick(cv, delta))``.

    Raises:
        InputError: invalid cv, delta or alpha.
    """
    return power_at(cv, delta, max(MIN_N_POWER, n_quick(cv, delta)), alpha)


def human_duration(seconds: float) -> str:
    """Format seconds as a short human duration ("45 s", "12 min", "4.8 h", "3.1 days")."""
    if seconds < 120:
        return f"{num(seconds, 2, trim=True)} s"
    if seconds < 2 * 3600:
        return f"{num(seconds / 60, 2, trim=True)} min"
    if seconds < 72 * 3600:
        return f"{num(seconds / 3600, 2, min_decimals=1)} h"
    return f"{num(seconds / 86400, 2, min_decimals=1)} days"


# ---------------------------------------------------------------- the plan


class Plan(BaseModel):
    """Result of :func:`plan`: what n runs per arm can resolve, and what Δ needs.

    All effects/CVs are fractions of the mean; times in seconds.

    Attributes:
        cv, effect, n, alpha, power: the inputs.
        run_seconds, cooldown_seconds: time per run and rest between runs (``None``
            when no run time was given: then no budget is computed).
        cv_source: where the CV came from ("--cv" or the stored runs and metric).
        mde_quick_n: quick MDE for the given n; mde_quick_1: for single runs (M10).
        mde_power_n: power-based MDE for n (``None`` when n < 2).
        n_quick_raw, n_quick: 8·(CV/Δ)² unrounded and ceiled.
        power_of_quick: power the quick n actually achieves (≈ 0.5).
        n_power: exact power-based runs per arm.
        noise_band: half-width of the verdict gate's noise band (fraction).
        design: "paired" (interleaved runs, the experiment default) or
            "independent" (blocked order or unpaired arms): the analysis the
            verdict will come from.
        n_power_gated: runs per arm (pairs) for a *verdict* (faster/slower)
            with that power: :func:`n_verdict` — the gate also needs the whole
            CI beyond the band (``None`` when Δ ≤ band: no verdict reachable,
            or beyond :data:`MAX_RUNS`). The calibration (docs/calibration.md)
            found the old n reaching only 50–66% of the requested power.
        power_gated_n: :func:`verdict_power` of the planned n (``None`` when n < 2).
        n_quick_gated: the quick formula's runs per arm for a verdict, 8·(CV/(Δ − band))²
            (``None`` when Δ ≤ band).
        verdict_reachable: False when Δ ≤ band (no n gives a faster/slower verdict).
        mde_gated_n: band + quick MDE(n): smaller changes cannot be called with n runs.
        power_at_n: power of n runs per arm against Δ (``None`` when n < 2).
        budget_seconds_n / _quick / _power: 2 × n × (run + cool-down) for each n.
        verdict: status and plain sentence with the arithmetic (check "M3").
        warnings: caveats (the quick formulas' power, independence, CV uncertainty,
            single runs), each a named warning (:mod:`tokcaliper.model.warnings`).
    """

    cv: float
    effect: float
    n: int
    alpha: float
    power: float
    run_seconds: float | None
    cooldown_seconds: float
    cv_source: str
    mde_quick_n: float
    mde_quick_1: float
    mde_power_n: float | None
    n_quick_raw: float
    n_quick: int
    power_of_quick: float
    n_power: int
    noise_band: float = 0.0
    design: str = "paired"
    n_power_gated: int | None = None
    power_gated_n: float | None = None
    n_quick_gated: int | None = None
    verdict_reachable: bool = True
    mde_gated_n: float | None = None
    power_at_n: float | None
    budget_seconds_n: float | None
    budget_seconds_quick: float | None
    budget_seconds_power: float | None
    verdict: Verdict
    warnings: list[Caveat] = Field(default_factory=list)


def _pct(x: float) -> str:
    """An input fraction echoed as a percentage, as given (0.15 → "15%", 0.125 → "12.5%")."""
    return num(100 * x, 4, trim=True) + "%"


def plan(
    cv: float,
    effect: float,
    n: int = 5,
    run_seconds: float | None = None,
    cooldown: float = 0.0,
    alpha: float = 0.05,
    power: float = 0.8,
    cv_source: str = "--cv",
    cv_n: int | None = None,
    noise_band: float = 0.01,
    design: str = "paired",
) -> Plan:
    """Plan an A/B comparison before running it (METHODS.md M3, M10).

    Computes the quick MDE for n runs per arm, the quick n for Δ (≈50% power),
    the exact power-based n of the test (statsmodels ``TTestIndPower.solve_power``),
    the n a *verdict* needs (:func:`n_verdict`: the gate's CI must clear the
    noise band, in the analysis of ``design``), the wall-clock budget
    ``2 arms × n × (run_seconds + cooldown)``, and a verdict that follows the
    gated n:

    - FAIL "no verdict reachable" when Δ ≤ band (at any n);
    - FAIL "don't run" when Δ < band + quick MDE(n);
    - WARN when the verdict power of n is below ``power`` (under-powered);
    - PASS when it reaches ``power``.

    Args:
        cv: CV of the metric as a fraction (> 0). effect: expected relative
            difference Δ (> 0). n: planned runs per arm (≥ 1).
        run_seconds: seconds per run (≥ 0) or ``None`` for no budget.
        cooldown: seconds of rest after each run (≥ 0).
        alpha: two-sided significance level; power: target power.
        cv_source: text naming where the CV came from (shown in the output).
        cv_n: number of runs the CV was estimated from, if known; fewer than 5
            adds a warning that the CV itself is uncertain (METHODS.md M1).
        noise_band: the verdict gate's band (fraction, ≥ 0; default ±1% as in
            ``compare``): the verdict power and n count it.
        design: "paired" (default; interleaved orders) or "independent".

    Raises:
        InputError: any argument out of range (message names the CLI option).
    """
    _check_cv(cv)
    _check_effect(effect)
    _check_n(n)
    _check_alpha(alpha)
    _check_power(power, alpha)
    if run_seconds is not None and not (math.isfinite(run_seconds) and run_seconds > 0):
        raise InputError(f"--run-seconds must be > 0, got {_num(run_seconds)}")
    if not (math.isfinite(cooldown) and cooldown >= 0):
        raise InputError(f"--cooldown must be >= 0, got {_num(cooldown)}")
    if run_seconds is not None and run_seconds > MAX_DURATION_S:
        raise InputError(f"--run-seconds must be ≤ {num(MAX_DURATION_S)} (7 days, the longest run bench "
                         f"takes), got {_num(run_seconds)}")
    if cooldown > MAX_TIMEOUT_S:
        raise InputError(f"--cooldown must be ≤ {num(MAX_TIMEOUT_S)} (1 day, bench's bound), "
                         f"got {_num(cooldown)}")

    _check_design(design)
    m_n = mde_quick(cv, n)
    m_1 = mde_quick(cv, 1)
    m_pw = mde_power(cv, n, alpha, power) if n >= MIN_N_POWER else None
    nq_raw = n_quick_raw(cv, effect)
    nq = n_quick(cv, effect)
    pq = achieved_power_of_quick_formula(cv, effect, alpha)
    npw = n_power(cv, effect, alpha, power)
    if not (math.isfinite(noise_band) and 0 <= noise_band < 1):
        raise InputError(f"--noise-band must be in [0, 1), got {_num(noise_band)}")
    reachable = effect > noise_band
    dist, sd_d = ratio_distance(effect, noise_band), sd_diff_from_cv(cv)
    n_gated = n_verdict(dist, sd_d, alpha, power, design=design) if reachable else None
    nq_gated = n_quick(cv, effect - noise_band) if reachable else None
    p_gated = (verdict_power(dist, sd_d, n, alpha, design=design)
               if n >= MIN_N_POWER else None)
    m_gated = noise_band + m_n
    p_n = power_at(cv, effect, n, alpha) if n >= MIN_N_POWER else None
    d = effect / cv
    df_txt = "n − 1" if design == "paired" else "2n − 2"

    per_run = None if run_seconds is None else run_seconds + cooldown
    b_n = None if per_run is None else 2 * n * per_run
    b_q = None if per_run is None else 2 * nq * per_run
    b_p = None if per_run is None else 2 * npw * per_run
    b_g = None if per_run is None or n_gated is None else 2 * n_gated * per_run

    band_txt = f"±{_pct(noise_band)}"
    arithmetic = [
        f"MDE (quick, n={n}) = 2 × {cv:g} × √(2/{n}) = {num(m_n)} ({percent(m_n)})",
        f"MDE (quick, n=1, single runs) = 2 × {cv:g} × √2 = {num(m_1)} ({percent(m_1)})",
        f"n (quick) = 8 × ({cv:g} / {effect:g})² = {num(nq_raw, 3, min_decimals=2)} → {nq} runs per arm "
        f"(power only {percent(pq, decimals=0)})",
        f"n (test alone, power {power:g}) = solve_power(d = {effect:g}/{cv:g} = {num(d)}, "
        f"alpha={alpha:g}, power={power:g}, two-sided) → {npw} runs per arm",
        f"smallest change a verdict can call at n={n}: band + quick MDE = {_pct(noise_band)} + "
        f"{percent(m_n)} = {percent(m_gated)}",
    ]
    verdict_line = (
        f"verdict power ({design}; the {100 * (1 - alpha):g}% CI must lie beyond the {band_txt} "
        f"noise band): P(T'(ν, λ) > t(1−α/2, ν)), λ = (ln(1+{effect:g}) − ln(1+{noise_band:g}))·√n / "
        f"s_d, s_d = √2·√(ln(1+{cv:g}²)) = {num(sd_d)}, ν = {df_txt}")
    if not reachable:
        arithmetic.append(verdict_line + f": none at any n — Δ = {_pct(effect)} ≤ band "
                          f"{_pct(noise_band)} (λ ≤ 0, power ≤ α/2)")
    else:
        arithmetic.append(
            verdict_line + (f"; at n={n}: {percent(p_gated, decimals=0)}" if p_gated is not None else "")
            + (f"; n for power {power:g} → {n_gated} runs per arm" if n_gated is not None
               else f"; power {power:g} needs more than {MAX_RUNS:,} runs per arm"))
    if m_pw is not None:
        arithmetic.append(
            f"MDE (power {power:g}, n={n}) = d({n}) × CV = {num(m_pw / cv, 4)} × {cv:g} = "
            f"{num(m_pw)} ({percent(m_pw)})"
        )
    if per_run is not None:
        for label, k, b in (("n", n, b_n), ("quick", nq, b_q), (f"test, power {power:g}", npw, b_p),
                            (f"verdict, power {power:g}", n_gated, b_g)):
            if k is None or b is None:
                continue
            arithmetic.append(
                f"budget ({label}) = 2 arms × {k} × ({run_seconds:g} s + {cooldown:g} s) = "
                f"{num(b, 4, trim=True)} s ≈ {human_duration(b)}"
            )

    cv_txt, eff_txt = _pct(cv), _pct(effect)
    if n_gated is not None:
        need = f"a verdict needs {n_gated} runs per arm (power {power:g}, {design})"
        if b_g is not None:
            need += f", about {human_duration(b_g)}"
        need += f"; the test alone {npw}, the quick formula {nq}"
    else:
        need = f"a verdict needs more than {MAX_RUNS:,} runs per arm"
    if not reachable:
        status = Status.FAIL
        summary = (
            f"no faster/slower verdict is reachable at any n: a {eff_txt} effect does not exceed "
            f"the {band_txt} noise band, and the verdict needs the whole CI beyond it; to call "
            f"changes this small use a smaller --noise-band (e.g. {_pct(effect / 2)}), or to show "
            f"the arms match give an equivalence margin (compare --margin E, equivalence_margin)")
    elif effect < m_gated:
        status = Status.FAIL
        summary = (
            f"don't run: a {eff_txt} effect is below what {n} run{'s' if n != 1 else ''} per arm "
            f"can call at CV {cv_txt} (noise band {_pct(noise_band)} + MDE "
            f"{percent(m_n)} = {percent(m_gated)}); {need}"
        )
    elif p_gated is None or p_gated < power:
        status = Status.WARN
        pw_txt = percent(p_gated, decimals=0) if p_gated is not None else "undefined (n=1)"
        summary = (
            f"under-powered: at {n} runs per arm the verdict ({design}, CI beyond {band_txt}) calls "
            f"a {eff_txt} effect at CV {cv_txt} with power {pw_txt} only; {need}"
        )
    else:
        status = Status.PASS
        summary = (
            f"go: {n} runs per arm give a verdict on a {eff_txt} effect at CV {cv_txt} with power "
            f"{percent(p_gated, decimals=0)} ≥ {power:g} ({design}, CI beyond {band_txt}; "
            f"verdict n = {n_gated})"
            + (f", about {human_duration(b_n)}" if b_n is not None else "")
        )

    warns = [
        W.QUICK_FORMULA_POWER.caveat(power_pct=percent(pq, decimals=0), n=nq, effect=eff_txt,
                                     power=f"{power:g}"),
        W.INDEPENDENT_RUNS_ASSUMED.caveat(),
    ]
    if cv_n is not None and cv_n < W.M1_MIN_RUNS:
        warns.append(W.CV_FROM_FEW_RUNS.caveat(n=cv_n, min_n=W.M1_MIN_RUNS))
    if n == 1:
        warns.append(W.SINGLE_RUNS_ANECDOTE.caveat(mde=percent(m_1, decimals=0)))

    verdict = Verdict(
        check="M3",
        title="resolution of the ruler",
        status=status,
        summary=summary,
        arithmetic=arithmetic,
        inputs={
            "cv": cv, "effect": effect, "n_per_arm": n, "alpha": alpha, "power": power,
            "run_seconds": run_seconds, "cooldown_seconds": cooldown, "cv_source": cv_source,
            "cv_n": cv_n, "noise_band": noise_band, "design": design,
        },
        sources=[SOURCE_QUICK, SOURCE_POWER, SOURCE_VERDICT, SOURCE_BUDGET],
    )
    return Plan(
        cv=cv, effect=effect, n=n, alpha=alpha, power=power, run_seconds=run_seconds,
        cooldown_seconds=cooldown, cv_source=cv_source, mde_quick_n=m_n, mde_quick_1=m_1,
        mde_power_n=m_pw, n_quick_raw=nq_raw, n_quick=nq, power_of_quick=pq, n_power=npw,
        noise_band=noise_band, design=design, n_power_gated=n_gated, power_gated_n=p_gated,
        n_quick_gated=nq_gated,
        verdict_reachable=reachable, mde_gated_n=m_gated, power_at_n=p_n, budget_seconds_n=b_n,
        budget_seconds_quick=b_q, budget_seconds_power=b_p,
        verdict=verdict, warnings=warns,
    )
