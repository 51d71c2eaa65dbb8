"""Stopping when decided: an always-valid sequential rule on paired log ratios (issue 8, M4).

``experiment run --until-decided`` adds interleaved pairs one at a time and,
after each, asks :func:`sequential_step` whether the verdict is decided. A
fixed-n test read after every pair would have a false-positive rate far above
α (peeking); this rule keeps its error rates at any stopping time.

The rule — a confidence sequence for the mean log ratio with unknown variance
----------------------------------------------------------------------------
Per pair ``d_k = ln(b_k / a_k)``, modelled as independent ``N(μ, σ²)`` with σ
unknown. After n ≥ 2 pairs, with ``t(μ₀) = (d̄ − μ₀) / (s/√n)`` and ν = n − 1,
the normal-mixture Bayes factor of the t statistic

    BF_n(μ₀) = (1 + n·g)^(−1/2) · [(1 + t²/ν) / (1 + t²/(ν·(1 + n·g)))]^((ν+1)/2)

is the likelihood ratio of the scale-invariant statistic under the mixture
``δ = (μ − μ₀)/σ ~ N(0, g)`` against ``μ = μ₀`` (Gönen, Johnson, Lu & Westfall
2005, "The Bayesian two-sample t test", The American Statistician 59:252,
one-sample form; by Wijsman's representation theorem it is the likelihood
ratio of the whole maximal invariant, so it is a nonnegative martingale with
mean 1 under μ = μ₀ — Lai 1976, "On confidence sequences", Ann. Statist.
4:265; Pérez-Ortiz, Lardy, de Heide & Grünwald 2024, "E-statistics, group
invariance and anytime-valid testing", Ann. Statist. 52:1410). Ville's
inequality (Ville 1939) gives ``P(sup_n BF_n(μ) ≥ 1/α) ≤ α``, so

    CS_n = { μ₀ : BF_n(μ₀) < 1/α } = d̄ ± c_n · s/√n

covers the true μ at *every* n simultaneously with probability ≥ 1 − α. The
BF is increasing in |t|, so c_n has a closed form: with
``R = (√(1 + n·g) / α)^(2/(ν+1))``, ``c_n² = ν·(R − 1) / (1 − R/(1 + n·g))``
when ``R < 1 + n·g``, and ``c_n = ∞`` (no decision possible yet) otherwise.

Decisions after each pair (the same classes as the fixed verdict gate,
:func:`tokcaliper.stats.verdict_gate.gate`, which is called with the CS in
place of the CI and the always-valid p ``p_n = min(1, 1/max_{k≤n} BF_k(0))``):

- ``faster`` / ``slower``: p_n < α and ``exp(CS_n)`` lies outside the noise
  band ``[1 − band, 1 + band]``;
- ``equivalent`` (only with a margin E): ``exp(CS_n)`` lies inside
  ``[1 − E, 1 + E]``. The same 1 − α sequence is used (not 1 − 2α as in the
  fixed TOST): a one-sided miss is at most the two-sided miss, so the chance
  of a false "equivalent" stays ≤ α without splitting α across the sides;
- ``inconclusive`` when ``max_pairs`` is reached undecided;
- otherwise not decided: run another pair.

Error rates: false faster/slower on A/A data ≤ α, false "equivalent" when
|true change| ≥ E is ≤ α, and the CS covers the true ratio at every stopping
time with probability ≥ 1 − α — for normal log ratios exactly, whatever the
stopping rule. The calibration (``benchmarks/calibration.py``,
docs/calibration.md) measures them on non-normal, drifting and correlated
data.

Mixture scale g: fixed before the data (choosing it from the data breaks the
guarantee). :func:`mixture_scale` picks the g that makes the CS narrowest at
``design_pairs`` pairs (default ``max_pairs // 3``), where a well-planned
experiment expects to stop.

Pure functions, no I/O. The array functions accept any leading batch shape so
the calibration runs exactly this code, vectorised.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
import numpy as np
from pydantic import BaseModel, Field

from tokcaliper.errors import InputError
from tokcaliper.numbers import num, p_value, percent, ratio as fmt_ratio, statistic
from tokcaliper.stats.equivalence import check_margin
from tokcaliper.stats.verdict_gate import DEFAULT_NOISE_BAND, VerdictClass, check_noise_band, gate

__all__ = [
    "SOURCE_SEQUENTIAL",
    "SequentialDecision",
    "boundary_t",
    "confidence_sequence",
    "mixture_bf",
    "mixture_scale",
    "sequential_step",
]

SOURCE_SEQUENTIAL = (
    "always-valid confidence sequence for the mean log ratio, σ unknown: normal-mixture Bayes "
    "factor of the t statistic (Gönen et al. 2005; invariance: Lai 1976, Pérez-Ortiz et al. 2024) "
    "with Ville's inequality P(sup BF ≥ 1/α) ≤ α (Ville 1939)")

#: Fewest pairs before the rule may stop (below 3 the boundary is infinite for any sane g).
MIN_PAIRS = 2


# ---------------------------------------------------------------- array core


def mixture_bf(t: np.ndarray | float, n: np.ndarray | int, g: float) -> np.ndarray:
    """Normal-mixture Bayes factor of a one-sample t statistic (Gönen et al. 2005).

    ``BF = (1 + n·g)^(−1/2) · [(1 + t²/ν) / (1 + t²/(ν(1 + n·g)))]^((ν+1)/2)``, ν = n − 1.

    Args:
        t: t statistics (any shape). n: sample sizes ≥ 2 (broadcast with t).
        g: prior variance of the standardised effect δ = μ/σ (> 0).

    Returns:
        Array of Bayes factors (≥ 0), the e-value against μ = μ₀.
    """
    t = np.asarray(t, dtype=float)
    n = np.asarray(n, dtype=float)
    nu = n - 1
    k = 1 + n * g
    with np.errstate(over="ignore", invalid="ignore"):
        log_bf = -0.5 * np.log(k) + 0.5 * (nu + 1) * (np.log1p(t * t / nu)
                                                     - np.log1p(t * t / (nu * k)))
    return np.exp(log_bf)


def boundary_t(n: np.ndarray | int, g: float, alpha: float) -> np.ndarray:
    """|t| at which the mixture BF reaches 1/α after n observations (``∞`` if never).

    Closed form: ``R = (√(1 + n·g)/α)^(2/n)``; ``c² = (n − 1)(R − 1)/(1 − R/(1 + n·g))``
    when ``R < 1 + n·g`` (the BF's limit as |t| → ∞ is ``(1 + n·g)^((n−1)/2)``).

    Args:
        n: sample sizes ≥ 2 (any shape). g: mixture variance (> 0). alpha: level in (0, 1).
    """
    n = np.asarray(n, dtype=float)
    k = 1 + n * g
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        log_r = (2.0 / n) * (0.5 * np.log(k) - math.log(alpha))
        r = np.exp(log_r)
        c2 = (n - 1) * np.expm1(log_r) / (1 - r / k)
        return np.where(r < k, np.sqrt(c2), np.inf)


@lru_cache(maxsize=256)
def mixture_scale(design_pairs: int, alpha: float = 0.05) -> float:
    """The mixture variance g that makes the confidence sequence narrowest at ``design_pairs``.

    Minimises ``boundary_t(n, g, α)`` over g at n = design_pairs
    (``scipy.optimize.minimize_scalar`` on ln g, bounded to g ∈ [10⁻⁴, 10⁴]); cached.

    Raises:
        InputError: design_pairs < 3 (no finite boundary is possible earlier) or alpha out of range.
    """
    from scipy.optimize import minimize_scalar

    if isinstance(design_pairs, bool) or not isinstance(design_pairs, (int, np.integer)) \
            or design_pairs < 3:
        raise InputError(f"the sequential design needs at least 3 pairs, got {design_pairs}")
    _check_alpha(alpha)
    def width(lg: float) -> float:  # ∞ (no boundary yet) as a large finite value for the solver
        return min(float(boundary_t(design_pairs, math.exp(lg), alpha)), 1e6)

    res = minimize_scalar(width,
                          bounds=(math.log(1e-4), math.log(1e4)), method="bounded",
                          options={"xatol": 1e-4})
    return float(math.exp(res.x))


def confidence_sequence(log_ratios: np.ndarray, g: float, alpha: float
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The confidence sequence and always-valid p after every prefix of each path.

    Args:
        log_ratios: shape (..., n_max): paths of per-pair log ratios in run order.
        g: mixture variance. alpha: level.

    Returns:
        ``(mean, sd, low, high, p_av)``, each of shape (..., n_max): for prefix k
        (index k − 1) the mean and sample std (ddof 1) of the first k log ratios,
        the CS ``mean ∓ c_k·sd/√k`` (±∞ where undefined, k = 1 or sd = 0) and the
        always-valid p ``min(1, 1/max_{j≤k} BF_j(0))`` (1 for k = 1).
    """
    d = np.asarray(log_ratios, dtype=float)
    nmax = d.shape[-1]
    k = np.arange(1, nmax + 1, dtype=float)
    csum = np.cumsum(d, axis=-1)
    mean = csum / k
    csq = np.cumsum(d * d, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (csq - k * mean * mean) / (k - 1)
    var = np.where(k > 1, np.maximum(var, 0.0), np.nan)
    sd = np.sqrt(var)
    se = sd / np.sqrt(k)
    c = np.concatenate([[np.inf], boundary_t(k[1:], g, alpha)]) if nmax > 1 else np.array([np.inf])
    with np.errstate(invalid="ignore", divide="ignore"):
        half = np.where((k > 1) & (se > 0), c * se, np.inf)
        t0 = np.where((k > 1) & (se > 0), mean / se, 0.0)
    half = np.where(np.isnan(half), np.inf, half)
    bf0 = np.where(k > 1, mixture_bf(t0, np.maximum(k, 2), g), 1.0)
    p_av = np.minimum(1.0, 1.0 / np.maximum.accumulate(bf0, axis=-1))
    return mean, sd, mean - half, mean + half, p_av


# ---------------------------------------------------------------- the step


class SequentialDecision(BaseModel):
    """What the sequential rule says after the pairs seen so far.

    Attributes:
        decided: True when the runner should stop (a verdict, or ``max_pairs`` reached).
        verdict: faster / slower / equivalent, "inconclusive" at ``max_pairs``,
            ``None`` while undecided.
        reason: one sentence with the numbers.
        pairs_used: pairs analysed (runs per arm). max_pairs: the cap.
        fixed_design_pairs: pairs a fixed-n design would have needed (from the
            caller's plan, or a paired power analysis of these pairs at ``effect``);
            ``None`` when unknown.
        alpha, noise_band, margin, higher_is_better: the settings.
        g: mixture variance; design_pairs: where the CS was made narrowest.
        mean_log, sd_log: of the log ratios. ratio: exp(mean_log).
        t: t against no change (``None`` below 2 pairs or sd 0).
        bf: e-value against no change, BF_n(0). p_always_valid: min(1, 1/max BF_k(0)).
        boundary: |t| the BF needs to reach 1/α at this n (``None`` = infinite).
        cs: the 1 − α confidence sequence of the ratio b/a (``None`` = unbounded).
        arithmetic: the lines of the computation.
    """

    decided: bool
    verdict: VerdictClass | None
    reason: str
    pairs_used: int
    max_pairs: int
    fixed_design_pairs: int | None
    alpha: float
    noise_band: float
    margin: float | None
    higher_is_better: bool
    g: float
    design_pairs: int
    mean_log: float | None
    sd_log: float | None
    ratio: float | None
    t: float | None
    bf: float | None
    p_always_valid: float
    boundary: float | None
    cs: tuple[float, float] | None
    arithmetic: list[str] = Field(default_factory=list)


def _check_alpha(alpha: float) -> None:
    if isinstance(alpha, bool) or not (isinstance(alpha, (int, float)) and math.isfinite(alpha)
                                       and 0 < alpha < 0.5):
        raise InputError(f"--alpha must be between 0 and 0.5, got {alpha}")


def _int_ge(x: object, lo: int, what: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < lo:
        raise InputError(f"{what} must be an integer ≥ {lo}, got {x}")
    return int(x)


def sequential_step(
    log_ratios: Sequence[float],
    *,
    alpha: float = 0.05,
    noise_band: float = DEFAULT_NOISE_BAND,
    margin: float | None = None,
    higher_is_better: bool = True,
    max_pairs: int,
    design_pairs: int | None = None,
    effect: float | None = None,
    fixed_design_pairs: int | None = None,
) -> SequentialDecision:
    """Decide, after the latest pair, whether to stop (the rule of the module docstring).

    Args:
        log_ratios: ``ln(b_k/a_k)`` of the pairs so far, in run order, shape (n,), finite.
        alpha: error rate to keep, in (0, 0.5). noise_band: half-width of the band
            around 1 inside which no faster/slower is reported (fraction).
        margin: equivalence margin E (fraction) or ``None`` (no "equivalent").
        higher_is_better: direction of the metric (throughput True, latency False).
        max_pairs: the cap (≥ 3): at it an undecided experiment stops "inconclusive".
        design_pairs: where the CS is made narrowest (3 ≤ design_pairs ≤ max_pairs;
            default ``max(3, max_pairs // 3)``). Must not depend on the data.
        effect: effect of interest (fraction) for the paired fixed-design comparison
            when ``fixed_design_pairs`` is not given.
        fixed_design_pairs: pairs the fixed design (``plan``) asked for, reported beside.

    Returns:
        :class:`SequentialDecision`.

    Raises:
        InputError: more pairs than ``max_pairs``, non-finite log ratios, settings out of range.
    """
    _check_alpha(alpha)
    check_noise_band(noise_band)
    if margin is not None:
        check_margin(margin)
    max_pairs = _int_ge(max_pairs, 3, "--max-pairs")
    design = max(3, max_pairs // 3) if design_pairs is None else _int_ge(design_pairs, 3,
                                                                          "design pairs")
    if design > max_pairs:
        raise InputError(f"design pairs ({design}) cannot exceed --max-pairs ({max_pairs})")
    if fixed_design_pairs is not None:
        fixed_design_pairs = _int_ge(fixed_design_pairs, 2, "fixed-design pairs")
    if effect is not None and not (isinstance(effect, (int, float)) and math.isfinite(effect)
                                   and 0 < effect < 10):
        raise InputError(f"--effect must be a positive fraction (0.05 = 5%), got {effect}")
    d = np.asarray([float(x) for x in log_ratios], dtype=float)
    n = int(d.size)
    if n > max_pairs:
        raise InputError(f"{n} pairs given but --max-pairs is {max_pairs}")
    if n and not np.isfinite(d).all():
        i = int(np.flatnonzero(~np.isfinite(d))[0])
        raise InputError(f"log ratio of pair {i + 1} is not finite ({d[i]}): a run gave 0 or no value")
    g = mixture_scale(design, alpha)
    common = dict(pairs_used=n, max_pairs=max_pairs, alpha=alpha, noise_band=noise_band,
                  margin=margin, higher_is_better=higher_is_better, g=g, design_pairs=design)
    ar = [f"rule: stop when the {100 * (1 - alpha):g}% confidence sequence of the ratio leaves the "
          f"±{percent(noise_band)} noise band" + (f" or lies within ±{percent(margin)}"
                                                  if margin is not None else "")
          + f", at most {max_pairs} pairs; mixture g = {num(g)} (narrowest at {design} pairs)"]
    if n < MIN_PAIRS:  # max_pairs ≥ 3, so the cap cannot have been reached
        return SequentialDecision(
            decided=False, verdict=None, fixed_design_pairs=fixed_design_pairs,
            reason=f"{n} pair{'s' if n != 1 else ''}: the rule needs at least {MIN_PAIRS}",
            mean_log=float(d[0]) if n else None, sd_log=None,
            ratio=math.exp(float(d[0])) if n else None, t=None, bf=None, p_always_valid=1.0,
            boundary=None, cs=None, arithmetic=ar, **common)
    mean, sd, lo, hi, p_av = confidence_sequence(d, g, alpha)
    m, s, lo_n, hi_n, p = float(mean[-1]), float(sd[-1]), float(lo[-1]), float(hi[-1]), float(p_av[-1])
    se = s / math.sqrt(n)
    t = m / se if se > 0 else None
    bf = float(mixture_bf(t, n, g)) if t is not None else None
    c = float(boundary_t(n, g, alpha))
    bounded = math.isfinite(lo_n) and math.isfinite(hi_n)
    cs = (math.exp(lo_n), math.exp(hi_n)) if bounded else None
    ratio = math.exp(m)
    if fixed_design_pairs is None and effect is not None and s > 0:
        from tokcaliper.stats.resolution import n_verdict, ratio_distance

        # the fixed design's gated verdict (CI beyond the band), as compare gives it
        fixed_design_pairs = n_verdict(ratio_distance(effect, noise_band), s, alpha, 0.8)
    ar.append(f"{n} pairs: mean log ratio {num(m, 3, signed=True)}, sd {num(s)}, se {num(se)}"
              + ("" if t is None else f", t = {statistic(t)}"))
    ar.append(f"boundary: |t| ≥ {statistic(c)} (BF ≥ 1/α = {1 / alpha:g})" if math.isfinite(c)
              else f"boundary: none yet at {n} pairs (the BF cannot reach 1/α = {1 / alpha:g})")
    if bf is not None:
        ar.append(f"BF against no change = {num(bf)}; always-valid p = min(1, 1/max BF) = {p_value(p)}")
    ar.append("confidence sequence: " + ("unbounded" if cs is None else
              f"ratio in [{fmt_ratio(cs[0])}, {fmt_ratio(cs[1])}] = exp({num(m, 3, signed=True)} ∓ "
              f"{statistic(c)} × {num(se)})"))
    g_res = gate(ratio=ratio, ci=cs, p=p, alpha=alpha, higher_is_better=higher_is_better,
                 noise_band=noise_band, test_label="always-valid p")
    ar.extend("gate: " + r.replace("CI of the ratio", "confidence sequence of the ratio")
              for r in g_res.reasons[:2])
    verdict: VerdictClass | None = None
    if g_res.verdict in ("faster", "slower"):
        verdict = g_res.verdict
        reason = f"decided after {n} pairs: " + g_res.summary.replace("CI", "confidence sequence")
    elif margin is not None and cs is not None and cs[0] > 1 - margin and cs[1] < 1 + margin:
        verdict = "equivalent"
        reason = (f"decided after {n} pairs: equivalent within ±{percent(margin)} (ratio "
                  f"{fmt_ratio(ratio)}, confidence sequence [{fmt_ratio(cs[0])}, {fmt_ratio(cs[1])}])")
        ar.append(f"equivalence: [{fmt_ratio(cs[0])}, {fmt_ratio(cs[1])}] inside [{fmt_ratio(1 - margin)}, "
                      f"{fmt_ratio(1 + margin)}]")
    elif n >= max_pairs:
        verdict = "inconclusive"
        reason = (f"stopped at the cap of {max_pairs} pairs undecided: ratio {fmt_ratio(ratio)}"
                  + ("" if cs is None else
                     f", confidence sequence [{fmt_ratio(cs[0])}, {fmt_ratio(cs[1])}]"))
    else:
        reason = (f"not decided after {n} pairs (ratio {fmt_ratio(ratio)}"
                  + (", confidence sequence unbounded" if cs is None else
                     f", confidence sequence [{fmt_ratio(cs[0])}, {fmt_ratio(cs[1])}]")
                  + "): run another pair")
    if fixed_design_pairs is not None:
        ar.append(f"fixed design: {fixed_design_pairs} pairs; used so far: {n}")
    return SequentialDecision(
        decided=verdict is not None, verdict=verdict, reason=reason,
        fixed_design_pairs=fixed_design_pairs, mean_log=m, sd_log=s, ratio=ratio, t=t, bf=bf,
        p_always_valid=p, boundary=c if math.isfinite(c) else None, cs=cs, arithmetic=ar, **common)
