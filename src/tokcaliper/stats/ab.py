"""A/B analysis of two arms: every figure, one verdict class (M3, M4, M9, M10).

Composes the pure pieces into what ``tokcaliper compare`` prints:

- per arm n, mean, sd, CV (:mod:`.describe`, or a published mean ± sd);
- the ratio of means b/a with its ``1 − α`` CI (delta method on the log
  scale) and Welch's t, df, p (:func:`tokcaliper.stats.compare.welch`,
  Welch 1947);
- for interleaved runs the paired t on per-pair log ratios
  (:mod:`.paired`) — it then *decides*, and Welch's test is shown beside it —
  plus the per-pair ratios in run order and the verdict after each pair;
- the variance comparison (Brown–Forsythe 1974 on runs, F-test on a summary,
  :mod:`.compare`) and the "stably slow" flag (:func:`stably_slow`, M9);
- the MDE these runs resolve and the runs per arm a target effect needs (M3);
- the TOST when an equivalence margin is given (:mod:`.equivalence`);
- the verdict class from :func:`tokcaliper.stats.verdict_gate.gate`;
- with several metrics, Holm's correction of the deciding p-values
  (:func:`apply_holm`, Holm 1979).

MDE (quick formula of M3, z ≈ 2, about 50% power) and runs needed
(power 0.8, because the quick n finds a true effect only half the time):

- independent arms: ``MDE = 2·√(CV_a²/n_a + CV_b²/n_b)`` (= 2·CV·√(2/n) for
  equal arms); pairs: ``MDE = 2·s_d/√n`` with s_d the std of the log ratios.
  A verdict needs the CI beyond the band, so changes below band + MDE cannot
  be called;
- runs needed: the n at which the *gated* verdict has power 0.8
  (:func:`tokcaliper.stats.resolution.n_verdict`: noncentral t with
  λ = (ln(1+Δ) − ln(1+band))·√n/s_d; pairs: s_d of the log ratios, ν = n − 1;
  arms: s_d = √(ln(1+CV_a²) + ln(1+CV_b²)), ν = 2n − 2; an arm with sd 0
  borrows the other's CV). With Δ ≤ band no n gives a verdict, and the text
  says so and what to change;
- Δ is the effect the user cares about, or else the larger of the observed
  |ratio − 1| and the noise band.

Conventions: ``a`` is the baseline, ``b`` the candidate; ratios are b/a;
effects are fractions (0.05 = 5%). Pure functions, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel

from tokcaliper.errors import InputError
from tokcaliper.model.verdict import Status, Verdict
from tokcaliper.numbers import num, p_value, percent, statistic
from tokcaliper.numbers import ratio as fmt_ratio
from tokcaliper.stats.compare import (
    SOURCE_RATIO_CI,
    SOURCE_VAR,
    SOURCE_WELCH,
    VarianceTest,
    WelchResult,
    f_test_from_summary,
    single_number_comparison,
    variance_test,
    welch,
    welch_from_summary,
)
from tokcaliper.stats.describe import describe
from tokcaliper.stats.equivalence import (
    SOURCE_TOST,
    TostResult,
    check_margin,
    log_ratio_of_means,
    tost_from_log_estimate,
    tost_paired,
)
from tokcaliper.stats.multiple import SOURCE_HOLM, holm
from tokcaliper.stats.outliers import SOURCE_OUTLIERS, OutlierReport, RunTags, flag_outliers
from tokcaliper.stats.paired import SOURCE_PAIRED, PairedResult, paired_log_ratio
from tokcaliper.stats.resolution import MAX_RUNS, mde_quick, n_verdict, ratio_distance
from tokcaliper.stats.paired_drift import (
    ROBUST_SLOPE_MAX_PAIRS,
    SOURCE_DRIFT_ADJUST,
    DriftAdjusted,
    drift_adjusted_paired,
    robust_slope,
)
from tokcaliper.stats.signed_rank import SOURCE_SIGNED_RANK, SignedRank, signed_rank
from tokcaliper.stats.verdict_gate import (
    DEFAULT_NOISE_BAND,
    GateResult,
    VerdictClass,
    check_noise_band,
    gate,
    reading,
    verdict_class,
)

__all__ = [
    "MAX_RUNS_PER_ARM",
    "ABAnalysis",
    "ABEvidence",
    "ArmStats",
    "MultiComparison",
    "OutlierFree",
    "RunningStep",
    "SingleNumbers",
    "analyze_samples",
    "analyze_summary",
    "apply_holm",
    "compare_metrics",
    "n_pairs_power",
    "needed_for",
    "ratios_text",
    "running_lines",
    "runs_advice",
    "single_numbers",
    "stably_slow",
]

SOURCE_MDE = ("M3 quick MDE = 2·√(CV_a²/n_a + CV_b²/n_b), pairs 2·s_d/√n; runs needed at "
              "power 0.8 for the gated verdict (CI beyond the noise band): "
              "tokcaliper.stats.resolution.n_verdict (noncentral t)")
#: Power of the "runs needed" figure (M3: the quick n has only ≈50%).
POWER = 0.8
SOURCE_GATE = ("verdict gate: faster/slower only when p < α and the whole CI lies outside the "
               "noise band; equivalent only when the TOST passes; else inconclusive")


class ArmStats(BaseModel):
    """One arm as the comparison saw it.

    Attributes:
        name: display name. n: runs. mean: in the metric's unit.
        sd: sample std (ddof = 1). cv: sd / mean (fraction; ``None`` when mean ≤ 0).
        min, max: extremes (``None`` for a published summary).
        values: the runs in run order (``None`` for a summary).
    """

    name: str
    n: int
    mean: float
    sd: float
    cv: float | None
    min: float | None = None
    max: float | None = None
    values: list[float] | None = None


class RunningStep(BaseModel):
    """The verdict one would have drawn after the first k pairs (M4).

    Attributes:
        k: 1-based pair number. a, b: pair k's runs. ratio: b/a of pair k.
        cum_ratio: exp(mean log ratio) over pairs 1..k.
        ci: its ``1 − α`` CI (``None`` for k = 1 or identical ratios). p: paired p.
        mde: 2·s_d/√k (``None`` for k = 1).
        reading: what the point estimate alone says ("slower by 21.1%").
        verdict: the gated verdict class at that point, or "insufficient data".
        text: one line, e.g. ``"2: slower by 21.2% → inconclusive (paired p = 0.15, 2 pairs)"``.
    """

    k: int
    a: float
    b: float
    ratio: float
    cum_ratio: float
    ci: tuple[float, float] | None
    p: float | None
    mde: float | None
    reading: str
    verdict: VerdictClass | Literal["insufficient data"]
    text: str


class OutlierFree(BaseModel):
    """The comparison re-run without the flagged runs (shown beside the verdict, never deciding).

    Attributes:
        left_out: what was left out, in words (runs, or pairs holding them).
        verdict: the gated verdict class without them. summary: its sentence.
        ratio, ci, p: the deciding estimate, CI and p without them.
        mde: MDE without them. runs_needed: runs per arm for ``target_effect`` at
            power 0.8 without them (``None`` beyond the limit).
        target_effect: as in :class:`ABEvidence`.
        error: why it could not be computed (e.g. fewer than 2 pairs left), else ``None``.
    """

    left_out: str
    verdict: VerdictClass | None = None
    summary: str | None = None
    ratio: float | None = None
    ci: tuple[float, float] | None = None
    p: float | None = None
    mde: float | None = None
    runs_needed: int | None = None
    target_effect: float | None = None
    error: str | None = None


class ABEvidence(BaseModel):
    """Every figure of one metric's A/B comparison, before the verdict.

    Attributes:
        metric, unit, higher_is_better: what was compared and which way is better.
        alpha, noise_band, margin, effect: the settings (fractions; margin and
            effect ``None`` when not given).
        input_kind: "samples" (runs) or "summary" (mean, sd, n).
        a, b: the arms. ratio_of_means: mean_b/mean_a; ratio_of_means_ci: its
            ``1 − α`` CI (delta method, Welch df).
        welch: Welch's test. variance: Brown–Forsythe (runs only) and F-test.
        paired: paired log-ratio analysis (``None`` when not paired).
        running: per-pair steps in run order (paired only).
        tost: equivalence test of the deciding analysis (``None`` without margin).
        decided_by: "paired" or "welch". p_raw: the deciding p before any correction.
        decision_ratio, decision_ci: estimate and CI the gate reads.
        mde: smallest difference these runs resolve (fraction). target_effect:
            Δ used for ``runs_needed`` (runs per arm / pairs).
        stably_slow: name of an arm flagged "stably slow" by :func:`stably_slow` (M9), else ``None``.
        notes: caveats.
        control_reason: why ``a`` is the reference arm (``--control``, its name,
            first in the file), set by the caller that chose it; ``None`` when the
            roles were given positionally (``--a``/``--b``).
        scale: "ratio" (b/a, relative noise band) or "difference" (b − a in the
            unit, absolute noise floor ``noise_abs``; :mod:`tokcaliper.stats.difference`).
            On the difference scale ``ratio_of_means``/``decision_ratio`` are
            ``None`` unless both means are > 0, and ``difference``,
            ``difference_ci`` (``1 − α``) and ``differences`` (pairs b_k − a_k,
            ``None`` unpaired) carry the estimate; ``target_effect`` is then in the unit.
        drift: the paired analysis adjusted for drift over run positions
            (:mod:`.paired_drift`); when present it decides. ``None`` when the
            runs are not paired or their positions are unknown.
        outliers: flagged runs (:mod:`.outliers`); ``None`` when not checked.
        rank: Wilcoxon signed-rank + Hodges–Lehmann companion (paired only).
        without_outliers: the comparison without the flagged runs (shown, not deciding).
    """

    metric: str
    unit: str
    higher_is_better: bool
    alpha: float
    noise_band: float
    margin: float | None
    effect: float | None
    input_kind: Literal["samples", "summary"]
    a: ArmStats
    b: ArmStats
    ratio_of_means: float | None
    ratio_of_means_ci: tuple[float, float] | None
    welch: WelchResult
    variance: VarianceTest
    paired: PairedResult | None
    running: list[RunningStep] | None
    tost: TostResult | None
    decided_by: Literal["paired", "welch"]
    p_raw: float | None
    decision_ratio: float | None
    decision_ci: tuple[float, float] | None
    mde: float | None
    target_effect: float
    runs_needed: int | None
    stably_slow: str | None
    notes: list[str]
    control_reason: str | None = None
    scale: Literal["ratio", "difference"] = "ratio"
    noise_abs: float | None = None
    difference: float | None = None
    difference_ci: tuple[float, float] | None = None
    differences: list[float] | None = None
    drift: DriftAdjusted | None = None
    outliers: OutlierReport | None = None
    rank: SignedRank | None = None
    without_outliers: OutlierFree | None = None


class ABAnalysis(ABEvidence):
    """:class:`ABEvidence` plus the decision.

    Attributes:
        p_used: the p the gate read (Holm-adjusted when ``holm_m`` > 1).
        tost_p_used: the TOST p the gate read (likewise).
        holm_m: number of metrics in the Holm family (1 = no correction).
        gate: the gate's result; verdict: its class (faster / slower /
            equivalent / inconclusive).
        report: check "compare" with summary, arithmetic, inputs and sources.
    """

    p_used: float | None
    tost_p_used: float | None
    holm_m: int
    gate: GateResult
    verdict: VerdictClass
    report: Verdict


class MultiComparison(BaseModel):
    """Several metrics of the same two arms, with Holm's correction.

    Attributes:
        metrics: one :class:`ABAnalysis` per metric (p adjusted across them).
        holm: True when more than one metric was compared (correction applied).
        note: what was corrected, in words.
    """

    metrics: list[ABAnalysis]
    holm: bool
    note: str


class SingleNumbers(BaseModel):
    """One number per arm: a ratio and the MDE it would need, never a verdict (M10).

    Attributes:
        names: (a, b). a, b: the two numbers. ratio: b/a. change: ratio − 1.
        cv: local CV (fraction) when known. mde_1: 2·CV·√2 when the CV is known.
        exceeds_mde: |change| ≥ mde_1 (``None`` without a CV).
        verdict: always ``None``: single numbers get no verdict class.
        report: check "M10" with the arithmetic.
    """

    names: tuple[str, str]
    a: float
    b: float
    ratio: float
    change: float
    cv: float | None
    mde_1: float | None
    exceeds_mde: bool | None
    verdict: None = None
    report: Verdict


# ---------------------------------------------------------------- helpers


def _check_settings(alpha: float, noise_band: float, margin: float | None,
                    effect: float | None) -> None:
    if not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and 0 < alpha < 0.5):
        raise InputError(f"--alpha must be between 0 and 0.5, got {alpha}")
    check_noise_band(noise_band)
    if margin is not None:
        check_margin(margin)
    if effect is not None and not (math.isfinite(effect) and 0 < effect < 10):
        raise InputError(f"--effect must be a positive fraction (0.05 = 5%), got {effect}")


def _ceil_runs(x: float) -> int | None:
    if not math.isfinite(x) or x > MAX_RUNS:
        return None
    return max(2, int(math.ceil(x - 1e-9)))


def _target(effect: float | None, ratio: float, band: float) -> float:
    if effect is not None:
        return effect
    return max(abs(ratio - 1), band) or DEFAULT_NOISE_BAND


def _require_variation(a: ArmStats, b: ArmStats) -> None:
    if a.sd == 0 and b.sd == 0:
        raise InputError(f"the runs do not vary (sd 0 in arms {a.name} and {b.name}): no test is "
                         "defined; is this the right metric?")


def _ratio_ci(a: ArmStats, b: ArmStats, alpha: float) -> tuple[float, float] | None:
    if a.mean <= 0 or b.mean <= 0:
        return None
    est, se, df = log_ratio_of_means(a.mean, a.sd, a.n, b.mean, b.sd, b.n)
    if not (se > 0 and math.isfinite(df)):
        return None
    from scipy import stats as _st

    q = float(_st.t.ppf(1 - alpha / 2, df))
    return math.exp(est - q * se), math.exp(est + q * se)


def _log_sd(cv: float) -> float:
    """sd of ln y for runs of CV ``cv``: √(ln(1 + CV²))."""
    return math.sqrt(math.log1p(cv * cv))


def _verdict_need(distance: float, sd_d: float, alpha: float, design: str) -> int | None:
    return n_verdict(distance, sd_d, alpha, POWER, design=design) if sd_d > 0 else 2


def _unpaired_resolution(a: ArmStats, b: ArmStats, target: float, alpha: float,
                         band: float) -> tuple[float | None, int | None, list[str]]:
    """MDE, runs per arm a verdict on ±target needs (gated, independent arms), and notes.

    A zero-sd arm borrows the other arm's CV for the runs needed: a spread of 0
    from a few runs is not evidence of no noise (often a coarse metric).
    """
    notes: list[str] = []
    if a.cv is None or b.cv is None:
        return None, None, notes
    mde = 2 * math.sqrt(a.cv**2 / a.n + b.cv**2 / b.n)
    cva, cvb = a.cv, b.cv
    for x, other in ((a, b), (b, a)):
        if x.sd == 0 and (other.cv or 0) > 0:
            notes.append(f"arm {x.name} did not vary (sd 0 over {x.n} runs): the runs needed take its "
                         f"spread to be arm {other.name}'s (CV {percent(other.cv)}); a zero spread "
                         "from a few runs is not evidence of no noise (is the metric coarse?)")
            if x is a:
                cva = other.cv  # type: ignore[assignment]
            else:
                cvb = other.cv  # type: ignore[assignment]
    sd_d = math.sqrt(_log_sd(cva) ** 2 + _log_sd(cvb) ** 2)
    return mde, _verdict_need(ratio_distance(target, band), sd_d, alpha, "independent"), notes


def _paired_resolution(pr: PairedResult, target: float, alpha: float,
                       band: float) -> tuple[float, int | None]:
    mde = 2 * pr.sd_log / math.sqrt(pr.n)
    return mde, _verdict_need(ratio_distance(target, band), pr.sd_log, alpha, "paired")


def runs_advice(*, n: int, need: int | None, target: float, band: float, effect_given: bool,
                paired: bool) -> str:
    """The "runs needed" sentence of an inconclusive verdict, counting the gate.

    Args:
        n: pairs / runs per arm there are. need: :func:`~tokcaliper.stats.resolution.n_verdict`
            for ``target`` (``None``: unreachable or beyond 10⁹). target: Δ (fraction).
        band: noise band (fraction). effect_given: Δ came from ``--effect``.
        paired: the runs are pairs.
    """
    unit = "pairs" if paired else "runs per arm"
    if target <= band:
        what = "the effect given" if effect_given else "a change within the band"
        return (f"no faster/slower verdict is reachable at any n for ±{percent(target)} ({what}): "
                f"it does not exceed the ±{percent(band)} noise band; give --effect Δ above the band "
                "for the runs a larger change needs, a smaller --noise-band, or --margin E to test "
                "equivalence")
    if need is None:
        return f"more than 10⁹ {unit} would be needed for a verdict on ±{percent(target)}"
    if need <= n:
        return (f"these {n} {unit} already give a verdict on ±{percent(target)} with power "
                f"≥ {POWER:g} ({need} needed): a true change of that size would usually have been "
                "called, so the change is likely smaller")
    return (f"about {need} {unit} would be needed for a verdict on ±{percent(target)} "
            f"(power {POWER:g} that the CI clears the ±{percent(band)} band)")


def needed_for(ev: ABEvidence, effect: float) -> int | None:
    """Pairs (or runs per arm) at which a true change of ``effect`` gets a gated verdict at
    power 0.8, from the spread of ``ev``'s own runs (as :attr:`ABEvidence.runs_needed`, which
    is sized for the effect given or the larger of the observed change and the band).

    Args:
        ev: a ratio-scale comparison. effect: relative change (fraction, > band).

    Returns:
        The n, or ``None`` when it is beyond :data:`MAX_RUNS` or no spread is known.
    """
    if ev.paired is not None:
        return _paired_resolution(ev.paired, effect, ev.alpha, ev.noise_band)[1]
    return _unpaired_resolution(ev.a, ev.b, effect, ev.alpha, ev.noise_band)[1]


def n_pairs_power(sd_log: float, delta: float, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """Pairs needed to detect a relative effect Δ with a paired t-test.

    ``ceil(TTestPower().solve_power(effect_size=ln(1+Δ)/s_d, alpha, power,
    alternative="two-sided"))`` (statsmodels, one-sample t on the log ratios),
    at least 2; ``None`` when it exceeds :data:`MAX_RUNS` or cannot be solved.

    Args:
        sd_log: std of the per-pair log ratios (> 0). delta: effect (> 0).
    """
    import warnings

    from statsmodels.stats.power import TTestPower

    d = math.log1p(delta) / sd_log
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if float(TTestPower().power(effect_size=d, nobs=2, alpha=alpha)) >= power:
                return 2
            raw = float(TTestPower().solve_power(effect_size=d, nobs=None, alpha=alpha,
                                                 power=power, alternative="two-sided"))
        except (ValueError, ArithmeticError):
            return None
    return _ceil_runs(raw)


def stably_slow(a: ArmStats, b: ArmStats, var: VarianceTest, alpha: float,
                higher_is_better: bool) -> str | None:
    """The one "stably slow" rule (METHODS.md M9: small variance is a signal).

    An arm is flagged when its runs sit in a narrow band on the worse side of
    the other arm, even if Welch's t is not significant:

    1. the variances differ: the smaller p of Brown–Forsythe (``var.bf_p``,
       only with runs) and the two-sided F-test (``var.f_p``) is below α;
    2. the narrow arm (the smaller sample std) lies wholly on the worse side of
       the other arm's mean: for a higher-is-better metric the top of its band
       is below that mean, for lower-is-better the bottom is above it. The band
       is [min, max] of its runs when they are known (``ArmStats.min/max``);
       from mean ± sd only it is ``mean ± 2·sd`` (about 95% of normal runs).

    METHODS.md M9's reference: 64 → 453.2 ± 6.9 against 128 → 500.3 ± 50.2
    (n = 4 each): 453.2 + 2·6.9 = 467.0 < 500.3 and F-test p = 0.009 → "64"
    flagged, though Welch's t = −1.86 is not significant.

    Args:
        a, b: the arms (baseline, candidate). var: their variance tests.
        alpha: level of the variance test. higher_is_better: which side is worse.

    Returns:
        Name of the flagged arm, or ``None`` (equal sds, no variance test or no flag).
    """
    ps = [p for p in (var.bf_p, var.f_p) if p is not None]
    if not ps or min(ps) >= alpha or a.sd == b.sd:
        return None
    narrow, other = (a, b) if a.sd < b.sd else (b, a)
    lo = narrow.min if narrow.min is not None else narrow.mean - 2 * narrow.sd
    hi = narrow.max if narrow.max is not None else narrow.mean + 2 * narrow.sd
    if higher_is_better:
        return narrow.name if hi < other.mean else None
    return narrow.name if lo > other.mean else None


#: Most runs per arm one comparison takes (issue 22 item 17). Every step is
#: O(n log n) or linear in the runs now (30,000 pairs: a few seconds); past
#: this the CSV alone is tens of MB and the JSON's per-pair steps hundreds.
#: The home of the like bound of ``analyze`` is :data:`tokcaliper.stats.spread.MAX_RUNS`.
MAX_RUNS_PER_ARM = 100_000

#: Below this sd of the pair log ratios they are "equal up to rounding": no test.
_EQUAL_SD = 1e-12


def _prefix_paired(d: np.ndarray, alpha: float) -> dict[str, np.ndarray]:
    """The paired figures of every prefix ``d[:k]``, k = 1…n, in one pass (issue 22 item 17).

    Exactly what :func:`tokcaliper.stats.paired.paired_log_ratio` gives for
    each prefix (up to summation-order rounding, ~1e-12 relative): mean log
    ratio, sd (ddof = 1), se = sd/√k, two-sided paired p = 2·sf(|mean/se|, k − 1)
    (``scipy.stats.ttest_rel``'s), the ratio exp(mean) and its CI
    exp(mean ± t(1 − α/2, k − 1)·se). Cumulative sums of the log ratios shifted
    by the first (sums of deviations, so the one-pass variance does not cancel),
    then one vectorised call each of ``scipy.stats.t.sf`` and ``t.ppf``.

    Args:
        d: pair log ratios ln(b_k/a_k) in run order, shape (n,), n ≥ 1.
        alpha: two-sided level of the CI.

    Returns:
        Arrays of shape (n,): ``mean``, ``sd``, ``p``, ``lo``, ``hi``, ``ratio``;
        sd, p, lo and hi are NaN for k = 1, and p, lo, hi where sd < 1e-12
        (ratios equal up to rounding: the test is undefined).
    """
    from scipy import stats as _st

    n = d.size
    k = np.arange(1, n + 1, dtype=float)
    dev = d - d[0]
    s1, s2 = np.cumsum(dev), np.cumsum(dev * dev)
    mean = d[0] + s1 / k
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(k > 1, (s2 - s1 * s1 / k) / (k - 1), np.nan)
        sd = np.sqrt(np.maximum(var, 0.0))
        se = sd / np.sqrt(k)
        ok = (k > 1) & (sd >= _EQUAL_SD)
        df = np.maximum(k - 1, 1.0)
        t = np.where(ok, mean / np.where(ok, se, 1.0), np.nan)
        p = np.where(ok, 2 * _st.t.sf(np.abs(t), df), np.nan)
        q = _st.t.ppf(1 - alpha / 2, df)
        lo = np.where(ok, np.exp(mean - q * se), np.nan)
        hi = np.where(ok, np.exp(mean + q * se), np.nan)
    return {"mean": mean, "sd": sd, "p": p, "lo": lo, "hi": hi, "ratio": np.exp(mean)}


#: Text shows at most this many per-pair entries (the first and the last half);
#: ``--json`` keeps every one.
SHOWN_PAIRS = 20


def running_lines(steps: Sequence[RunningStep]) -> list[str]:
    """The "verdict after each pair" lines for text: all up to :data:`SHOWN_PAIRS`, else a summary.

    Beyond it: the first and the last ``SHOWN_PAIRS/2`` steps around one line
    ``"… 29,980 more pairs (all in --json); over all 30,000 the verdict changed 3 times:
    inconclusive since pair 1,204"``.
    """
    if len(steps) <= SHOWN_PAIRS:
        return [s.text for s in steps]
    half = SHOWN_PAIRS // 2
    tested = [s for s in steps if s.verdict != "insufficient data"]
    changes = sum(1 for x, y in zip(tested, tested[1:]) if x.verdict != y.verdict)
    since = tested[0].k
    for x, y in zip(tested, tested[1:]):
        if x.verdict != y.verdict:
            since = y.k
    gap = (f"… {len(steps) - 2 * half:,} more pairs (all in --json); over all {len(steps):,} the "
           f"verdict changed {changes:,} time{'' if changes == 1 else 's'}: {steps[-1].verdict} "
           f"since pair {since:,}")
    return [s.text for s in steps[:half]] + [gap] + [s.text for s in steps[-half:]]


def ratios_text(ratios: Sequence[float]) -> str:
    """Pair ratios in run order for text: all up to :data:`SHOWN_PAIRS`, else the first and last half."""
    if len(ratios) <= SHOWN_PAIRS:
        return " ".join(fmt_ratio(r) for r in ratios)
    half = SHOWN_PAIRS // 2
    return (" ".join(fmt_ratio(r) for r in ratios[:half])
            + f" … {len(ratios) - 2 * half:,} more (all in --json; min {fmt_ratio(min(ratios))}, "
            f"max {fmt_ratio(max(ratios))}) … " + " ".join(fmt_ratio(r) for r in ratios[-half:]))


def _running(pa: Sequence[float], pb: Sequence[float], alpha: float, higher_is_better: bool,
             band: float, effect: float | None) -> list[RunningStep]:
    """The verdict after each pair (M4), every prefix's figures from :func:`_prefix_paired`.

    Linear in the pairs: the figures in one vectorised pass, then the gate's rule
    (:func:`~tokcaliper.stats.verdict_gate.verdict_class`, which ``gate`` uses too)
    once per prefix, without the sentences ``gate`` writes. Values are validated by the caller (finite, > 0, equal counts).
    """
    xa, xb = np.asarray(pa, dtype=float), np.asarray(pb, dtype=float)
    fig = _prefix_paired(np.log(xb) - np.log(xa), alpha)
    steps: list[RunningStep] = []
    for k in range(1, xa.size + 1):
        ai, bi = float(xa[k - 1]), float(xb[k - 1])
        if k == 1:
            r = bi / ai
            rd = reading(r, higher_is_better, band)
            steps.append(RunningStep(k=1, a=ai, b=bi, ratio=r, cum_ratio=r, ci=None, p=None,
                                     mde=None, reading=rd, verdict="insufficient data",
                                     text=f"1: {rd} → insufficient data (one pair, no test)"))
            continue
        i = k - 1
        ratio = float(fig["ratio"][i])
        p = None if math.isnan(fig["p"][i]) else float(fig["p"][i])
        ci = None if p is None else (float(fig["lo"][i]), float(fig["hi"][i]))
        mde = 2 * float(fig["sd"][i]) / math.sqrt(k)
        verdict = verdict_class(ratio=ratio, ci=ci, p=p, alpha=alpha,
                                higher_is_better=higher_is_better, noise_band=band)
        rd = reading(ratio, higher_is_better, band)
        ptxt = "p undefined" if p is None else f"paired p = {p_value(p, 2)}"
        steps.append(RunningStep(
            k=k, a=ai, b=bi, ratio=bi / ai, cum_ratio=ratio, ci=ci, p=p, mde=mde,
            reading=rd, verdict=verdict,
            text=f"{k}: {rd} → {verdict} ({ptxt}, MDE ±{percent(mde)}, {k} pairs)"))
    return steps


def _arm(values: Sequence[float], name: str) -> ArmStats:
    d = describe(values, f"arm {name}")
    if d.n < 2:
        raise InputError(f"arm {name} has {d.n} run: a comparison needs at least 2 runs per arm "
                         "(for one number per arm use --a-single/--b-single)")
    return ArmStats(name=name, n=d.n, mean=d.mean, sd=float(d.std or 0.0), cv=d.cv, min=d.min,
                    max=d.max, values=[float(v) for v in values])


# ---------------------------------------------------------------- analyses


def analyze_samples(
    a: Sequence[float],
    b: Sequence[float],
    names: tuple[str, str] = ("A", "B"),
    *,
    paired: bool = False,
    metric: str = "aggregate output throughput",
    unit: str = "",
    higher_is_better: bool = True,
    alpha: float = 0.05,
    noise_band: float = DEFAULT_NOISE_BAND,
    margin: float | None = None,
    effect: float | None = None,
    noise_abs: float | None = None,
    tags: tuple[RunTags | None, RunTags | None] | None = None,
    design: str | None = None,
    check_outliers: bool = True,
) -> ABAnalysis:
    """Compare the runs of a candidate arm ``b`` with a baseline arm ``a``.

    Args:
        a, b: runs, shapes (n_a,), (n_b,), each n ≥ 2, finite, > 0 for ratios.
            With ``paired`` they are in run order and pair k = (a[k], b[k]).
        names: display names (baseline, candidate).
        paired: the runs were interleaved; the paired log-ratio analysis decides.
        metric, unit: labels. higher_is_better: True for throughput, False for latencies.
        alpha: two-sided level in (0, 0.5). noise_band: half-width around 1 (fraction).
        margin: equivalence margin E (fraction) or ``None`` (no TOST).
        effect: the effect the user cares about (fraction), for the runs needed.
        noise_abs: compare on the difference scale b − a with this absolute
            noise floor (metric's unit) instead of ratios
            (:func:`tokcaliper.stats.difference.analyze_difference`): for metrics
            that can be 0 or sit at their resolution.
        tags: what is known about each arm's runs (positions, run ids, known
            causes), in the order of ``a`` and ``b``. With ``paired`` and the
            positions of both arms, the drift-adjusted paired analysis
            (:func:`tokcaliper.stats.paired_drift.drift_adjusted_paired`) decides.
        design: the run order the experiment declared (``alternate``, ``abba``,
            ``random-blocks``); default: read from the positions.
        check_outliers: flag outlying runs (:mod:`.outliers`), add the rank
            companion and the comparison without them (default True).

    Returns:
        :class:`ABAnalysis` (not Holm-corrected; see :func:`compare_metrics`).

    Raises:
        InputError: fewer than 2 runs or more than :data:`MAX_RUNS_PER_ARM` in an
            arm, unequal counts when paired, non-finite or non-positive values,
            settings out of range.
    """
    _check_settings(alpha, noise_band, margin, effect)
    for arm_name, runs in zip(names, (a, b)):
        if len(runs) > MAX_RUNS_PER_ARM:
            raise InputError(f"{metric}: {len(runs):,} runs in arm {arm_name}; compare takes at most "
                             f"{MAX_RUNS_PER_ARM:,} per arm: compare a window of the runs or a "
                             "sample of the pairs")
    if noise_abs is not None:
        from tokcaliper.stats.difference import analyze_difference

        return analyze_difference(a, b, names, paired=paired, metric=metric, unit=unit,
                                  higher_is_better=higher_is_better, alpha=alpha,
                                  noise_abs=noise_abs, effect=effect, margin=margin,
                                  noise_band=noise_band)
    na, nb = names
    arm_a, arm_b = _arm(a, na), _arm(b, nb)
    for arm in (arm_a, arm_b):
        if arm.min is not None and arm.min <= 0:
            raise InputError(f"arm {arm.name}: ratios need positive values, got {num(arm.min, 6, trim=True)}; "
                             "compare on the difference scale with --noise-abs X (the smallest "
                             "change worth calling, in the metric's unit)")
    if paired and arm_a.n != arm_b.n:
        raise InputError(f"paired runs need equal run counts per arm, got {na}: {arm_a.n} and "
                         f"{nb}: {arm_b.n}")
    _require_variation(arm_a, arm_b)
    w, var = welch(a, b), variance_test(a, b)
    ratio = arm_b.mean / arm_a.mean
    ci = _ratio_ci(arm_a, arm_b, alpha)
    notes: list[str] = []
    pr = running = drift = None
    if paired:
        pr = paired_log_ratio(a, b, alpha)
        if pr.p is None or pr.sd_log < _EQUAL_SD:  # equal up to rounding
            raise InputError(f"all pair ratios are equal ({fmt_ratio(pr.ratio)}): the paired t-test is "
                             "undefined")
        running = _running(list(a), list(b), alpha, higher_is_better, noise_band, effect)
        tgt = _target(effect, pr.ratio, noise_band)
        mde, need = _paired_resolution(pr, tgt, alpha, noise_band)
        tost = None
        if margin is not None:
            tost = tost_paired(a, b, margin, alpha)
        dec_ratio, dec_ci, p_raw = pr.ratio, pr.ratio_ci, pr.p
        drift = _drift(a, b, tags, design, alpha)
        if drift is None:
            notes.append("run positions unknown: drift between the two runs of a pair is not "
                         "checked (give a position column, or run an experiment)")
        else:
            dec_ratio, dec_ci, p_raw = drift.ratio, drift.ratio_ci, drift.p
            tgt = _target(effect, drift.ratio, noise_band)  # not the drift-biased estimate
            mde, need = _paired_resolution(pr, tgt, alpha, noise_band)
            if margin is not None and drift.se_log > 0 and drift.method != "none":
                tost = tost_from_log_estimate(drift.mean_log, drift.se_log, drift.df, margin,
                                              alpha)
    else:
        tgt = _target(effect, ratio, noise_band)
        mde, need, zero_notes = _unpaired_resolution(arm_a, arm_b, tgt, alpha, noise_band)
        notes.extend(zero_notes)
        tost = _unpaired_tost(arm_a, arm_b, margin, alpha)
        dec_ratio, dec_ci, p_raw = ratio, ci, w.p
        if arm_a.n == arm_b.n:
            notes.append("equal run counts: if the runs were interleaved, pass them as pairs "
                         "(--paired or a pair column) so drift cancels in the per-pair ratios")
    if margin is not None and tost is None:
        notes.append("equivalence not tested: the runs do not vary")
    outliers = rank = without = None
    if check_outliers:
        tg = tags or (None, None)
        outliers = flag_outliers(a, b, names, paired=paired, tags=tg)
        if paired and pr is not None:
            rank_d = _rank_log_ratios(a, b, pr, drift, tg)
            if rank_d is None:
                notes.append(f"rank companion not computed: its drift correction (the Theil–Sen "
                             f"slope over every two of the {pr.n:,} pairs, n²/2 slopes) takes at "
                             f"most {ROBUST_SLOPE_MAX_PAIRS:,} pairs")
            else:
                rank = signed_rank(rank_d, alpha)
        if outliers.runs:
            without = _without_outliers(a, b, names, outliers, paired=paired, tags=tg,
                                        design=design, metric=metric, unit=unit,
                                        higher_is_better=higher_is_better, alpha=alpha,
                                        noise_band=noise_band, margin=margin, effect=effect)
    ev = ABEvidence(
        metric=metric, unit=unit, higher_is_better=higher_is_better, alpha=alpha,
        noise_band=noise_band, margin=margin, effect=effect, input_kind="samples", a=arm_a,
        b=arm_b, ratio_of_means=ratio, ratio_of_means_ci=ci, welch=w,
        variance=var, paired=pr, running=running, tost=tost,
        decided_by="paired" if paired else "welch", p_raw=p_raw, decision_ratio=dec_ratio,
        decision_ci=dec_ci, mde=mde, target_effect=tgt, runs_needed=need,
        stably_slow=stably_slow(arm_a, arm_b, var, alpha, higher_is_better), notes=notes,
        drift=drift, outliers=outliers, rank=rank, without_outliers=without)
    return decide(ev)


def _drift(a: Sequence[float], b: Sequence[float],
           tags: tuple[RunTags | None, RunTags | None] | None, design: str | None,
           alpha: float) -> DriftAdjusted | None:
    """The drift-adjusted paired analysis when both arms' positions are known, else ``None``."""
    if tags is None or tags[0] is None or tags[1] is None:
        return None
    pa, pb = tags[0].positions, tags[1].positions
    if pa is None or pb is None or len(pa) != len(a) or len(pb) != len(b):
        return None
    known = design if design in ("alternate", "abba", "random-blocks") else None
    return drift_adjusted_paired(a, b, pa, pb, alpha, design=known)  # type: ignore[arg-type]


def _rank_log_ratios(a: Sequence[float], b: Sequence[float], pr: PairedResult,
                     drift: DriftAdjusted | None,
                     tags: tuple[RunTags | None, RunTags | None]) -> list[float] | None:
    """Pair log ratios for the rank companion; with known positions, less a robust drift.

    ``d_k − β̃·Δ_k`` with β̃ the Theil–Sen slope (Sen 1968) of the pair means on
    the pair centres (:func:`tokcaliper.stats.paired_drift.robust_slope`): one
    wild run moves the least-squares slope of the decider, not the median slope.
    ``None`` when that slope is needed for more than
    :data:`~tokcaliper.stats.paired_drift.ROBUST_SLOPE_MAX_PAIRS` pairs (n²/2 slopes).
    """
    d = list(pr.log_ratios)
    if drift is None or drift.method == "none" or tags[0] is None or tags[1] is None:
        return d
    if pr.n > ROBUST_SLOPE_MAX_PAIRS:
        return None
    beta = robust_slope(a, b, tags[0].positions, tags[1].positions)  # type: ignore[arg-type]
    if beta is None:
        return d
    return [x - beta * off for x, off in zip(d, drift.offsets)]


def _without_outliers(a: Sequence[float], b: Sequence[float], names: tuple[str, str],
                      report: OutlierReport, *, paired: bool,
                      tags: tuple[RunTags | None, RunTags | None], design: str | None,
                      **settings: object) -> OutlierFree:
    """Re-run :func:`analyze_samples` without the flagged runs (pairs holding them when paired)."""
    def keep(tg: RunTags | None, idx: list[int]) -> RunTags | None:
        if tg is None:
            return None
        pick = (lambda seq: None if seq is None else [seq[i] for i in idx if i < len(seq)])
        return RunTags(positions=pick(tg.positions), ids=pick(tg.ids), causes=pick(tg.causes))

    if paired:
        drop = set(report.pairs)
        ia = ib = [k for k in range(len(a)) if k not in drop]
        listed = sorted(drop)
        what = (f"{len(drop)} pair(s) holding the flagged run(s): pair "
                + ", ".join(str(k + 1) for k in listed[:SHOWN_PAIRS])
                + (f" … and {len(listed) - SHOWN_PAIRS:,} more" if len(listed) > SHOWN_PAIRS else ""))
    else:
        da = {r.index for r in report.runs if r.arm == names[0]}
        db = {r.index for r in report.runs if r.arm == names[1]}
        ia = [i for i in range(len(a)) if i not in da]
        ib = [i for i in range(len(b)) if i not in db]
        what = f"{len(da) + len(db)} flagged run(s)"
    try:
        an = analyze_samples([a[i] for i in ia], [b[i] for i in ib], names, paired=paired,
                             tags=(keep(tags[0], ia), keep(tags[1], ib)), design=design,
                             check_outliers=False, **settings)  # type: ignore[arg-type]
    except InputError as e:
        return OutlierFree(left_out=what, error=str(e))
    return OutlierFree(left_out=what, verdict=an.verdict, summary=an.gate.summary,
                       ratio=an.decision_ratio, ci=an.decision_ci, p=an.p_raw, mde=an.mde,
                       runs_needed=an.runs_needed, target_effect=an.target_effect)


def _unpaired_tost(a: ArmStats, b: ArmStats, margin: float | None, alpha: float) -> TostResult | None:
    if margin is None:
        return None
    est, se, df = log_ratio_of_means(a.mean, a.sd, a.n, b.mean, b.sd, b.n)
    if not (se > 0 and math.isfinite(df)):
        return None
    return tost_from_log_estimate(est, se, df, margin, alpha)


def analyze_summary(
    stats_a: tuple[float, float, int],
    stats_b: tuple[float, float, int],
    names: tuple[str, str] = ("A", "B"),
    *,
    metric: str = "aggregate output throughput",
    unit: str = "",
    higher_is_better: bool = True,
    alpha: float = 0.05,
    noise_band: float = DEFAULT_NOISE_BAND,
    margin: float | None = None,
    effect: float | None = None,
) -> ABAnalysis:
    """Compare two arms from published mean, sample std and n (e.g. "453.2 ± 6.9, n = 4").

    Welch from ``scipy.stats.ttest_ind_from_stats``; variances by the F-test
    only (Brown–Forsythe needs the runs); the stably-slow flag by
    :func:`stably_slow` (its mean ± 2·sd band). No pairing is possible.

    Args:
        stats_a, stats_b: ``(mean, sd, n)`` with sd ≥ 0 (ddof = 1), n ≥ 2, mean > 0.
        Others: as :func:`analyze_samples`.

    Raises:
        InputError: invalid summaries or settings.
    """
    _check_settings(alpha, noise_band, margin, effect)
    arms = []
    for (mean, sd, n), name in zip((stats_a, stats_b), names):
        if isinstance(n, bool) or not isinstance(n, int) or n < 2:
            raise InputError(f"arm {name}: n must be an integer ≥ 2, got {n}")
        if not (math.isfinite(mean) and mean > 0):
            raise InputError(f"arm {name}: the mean must be > 0 for a ratio, got {mean}")
        if not (math.isfinite(sd) and sd >= 0):
            raise InputError(f"arm {name}: the standard deviation must be ≥ 0, got {sd}")
        arms.append(ArmStats(name=name, n=n, mean=float(mean), sd=float(sd), cv=sd / mean))
    arm_a, arm_b = arms
    _require_variation(arm_a, arm_b)
    w = welch_from_summary(arm_a.mean, arm_a.sd, arm_a.n, arm_b.mean, arm_b.sd, arm_b.n)
    var = f_test_from_summary(arm_a.sd, arm_a.n, arm_b.sd, arm_b.n)
    ratio = arm_b.mean / arm_a.mean
    ci = _ratio_ci(arm_a, arm_b, alpha)
    tgt = _target(effect, ratio, noise_band)
    mde, need, zero_notes = _unpaired_resolution(arm_a, arm_b, tgt, alpha, noise_band)
    tost = _unpaired_tost(arm_a, arm_b, margin, alpha)
    notes = [*zero_notes, "from mean ± sd only: Brown–Forsythe needs the runs, so variances are compared by "
             "the F-test (sensitive to non-normal runs); rounded summaries reproduce t to about ±0.02"]
    if margin is not None and tost is None:
        notes.append("equivalence not tested: both standard deviations are 0")
    ev = ABEvidence(
        metric=metric, unit=unit, higher_is_better=higher_is_better, alpha=alpha,
        noise_band=noise_band, margin=margin, effect=effect, input_kind="summary", a=arm_a,
        b=arm_b, ratio_of_means=ratio, ratio_of_means_ci=ci, welch=w, variance=var, paired=None,
        running=None, tost=tost, decided_by="welch", p_raw=w.p if math.isfinite(w.p) else None,
        decision_ratio=ratio, decision_ci=ci, mde=mde, target_effect=tgt, runs_needed=need,
        stably_slow=stably_slow(arm_a, arm_b, var, alpha, higher_is_better),
        notes=notes)
    return decide(ev)


# ---------------------------------------------------------------- decision


def decide(ev: ABEvidence, p_used: float | None = None, tost_p_used: float | None = None,
           holm_m: int = 1) -> ABAnalysis:
    """Apply the verdict gate to ``ev`` and write the report.

    Args:
        ev: the figures. p_used / tost_p_used: corrected p-values to gate on
            (default: the raw ones). holm_m: size of the Holm family (1 = none).
    """
    if ev.scale == "difference":
        from tokcaliper.stats.difference import decide_difference

        return decide_difference(ev, p_used, holm_m)
    assert ev.decision_ratio is not None
    p = ev.p_raw if p_used is None else p_used
    tp = None if ev.tost is None else (ev.tost.p if tost_p_used is None else tost_p_used)
    base_label = ev.drift.label if ev.drift is not None else (
        "paired p" if ev.decided_by == "paired" else "Welch p")
    label = base_label + (f" (Holm, {holm_m} metrics)" if holm_m > 1 else "")
    n_have = ev.paired.n if ev.paired is not None else min(ev.a.n, ev.b.n)
    advice = runs_advice(n=n_have, need=ev.runs_needed, target=ev.target_effect,
                         band=ev.noise_band, effect_given=ev.effect is not None,
                         paired=ev.paired is not None)
    g = gate(ratio=ev.decision_ratio, ci=ev.decision_ci, p=p, alpha=ev.alpha,
             higher_is_better=ev.higher_is_better, noise_band=ev.noise_band, tost=ev.tost,
             tost_p=tp, mde=ev.mde, runs_needed=ev.runs_needed, target_effect=ev.target_effect,
             test_label=label, advice=advice)
    return ABAnalysis(**{k: getattr(ev, k) for k in ABEvidence.model_fields}, p_used=p,
                      tost_p_used=tp, holm_m=holm_m, gate=g, verdict=g.verdict,
                      report=_report(ev, g, p, holm_m))


def _ci(ci: tuple[float, float]) -> str:
    """A CI of a ratio: ``"0.950 … 1.050"``."""
    return f"{fmt_ratio(ci[0])} … {fmt_ratio(ci[1])}"


def _arm_line(x: ArmStats, u: str) -> str:
    cv = f"CV {percent(x.cv)}"
    ext = "" if x.min is None else f", min {num(x.min, 6, trim=True)}, max {num(x.max, 6, trim=True)}"
    return f"{x.name}: n = {x.n}, mean {num(x.mean, 4)}{u}, sd {num(x.sd)}, {cv}{ext}"


def _report(ev: ABEvidence, g: GateResult, p: float | None, holm_m: int) -> Verdict:
    na, nb = ev.a.name, ev.b.name
    u = f" {ev.unit}" if ev.unit else ""
    lvl = f"{100 * (1 - ev.alpha):g}%"
    w = ev.welch
    ar = [_arm_line(ev.a, u), _arm_line(ev.b, u)]
    ci = ev.ratio_of_means_ci
    ar.append(f"ratio of means {nb}/{na} = {num(ev.b.mean, 4)} / {num(ev.a.mean, 4)} = "
              f"{fmt_ratio(ev.ratio_of_means)}" + ("" if ci is None else f" [{lvl} CI {_ci(ci)}]"))
    ar.append(f"Welch t = ({num(w.mean_a, 4)} − {num(w.mean_b, 4)}) / √({num(w.sd_a)}²/{w.n_a} + "
              f"{num(w.sd_b)}²/{w.n_b}) = {statistic(w.t)}, df = {num(w.df, 2, min_decimals=1)}, "
              f"p = {p_value(w.p)}"
              + ("  (shown beside the paired analysis)" if ev.decided_by == "paired" else ""))
    if ev.paired is not None:
        pr = ev.paired
        pci = "" if pr.ratio_ci is None else f" [{lvl} CI {_ci(pr.ratio_ci)}]"
        ptxt = ("t undefined (all pair ratios equal)" if pr.t is None
                else f"paired t = {statistic(pr.t)}, df = {pr.df}, p = {p_value(pr.p)}")
        ar.append("pair ratios in run order: " + ratios_text(pr.ratios))
        ar.append(f"log ratios: mean {num(pr.mean_log, signed=True)}, sd {num(pr.sd_log)}, "
                  f"se {num(pr.se_log)}; {ptxt}; ratio exp(mean) = {fmt_ratio(pr.ratio)}{pci}"
                  + ("  (unadjusted; shown beside)" if ev.drift is not None else "  (decides)"))
    if ev.drift is not None:
        ar.append(f"run positions: {ev.drift.describe()}  (decides)")
    if ev.running:
        ar.append("verdict after each pair (unadjusted paired t): "
                  + "; ".join(running_lines(ev.running)))
    ar.extend(_robust_lines(ev, lvl))
    v = ev.variance
    bf = "" if v.bf_p is None else f"Brown–Forsythe W = {statistic(v.bf_w)}, p = {p_value(v.bf_p)}; "
    f = "F undefined" if v.f is None else f"F = {statistic(v.f)}, p = {p_value(v.f_p)}"
    sr = "" if v.sd_ratio is None else f"; sd ratio {fmt_ratio(v.sd_ratio)}"
    ar.append(f"variance: {bf}{f}{sr}")
    if ev.mde is not None:
        if ev.paired is not None:
            ar.append(f"MDE (pairs) = 2 × {num(ev.paired.sd_log)} / √{ev.paired.n} = "
                      f"{percent(ev.mde)}")
        else:
            ar.append(f"MDE = 2 × √({num(ev.a.cv)}²/{ev.a.n} + {num(ev.b.cv)}²/{ev.b.n}) = "
                      f"{percent(ev.mde)}")
    basis = "the effect given" if ev.effect is not None else "max(observed |ratio − 1|, noise band)"
    design = "paired" if ev.paired is not None else "independent"
    if ev.target_effect <= ev.noise_band:
        need = f"none at any n (±{percent(ev.target_effect)} does not exceed the band)"
    else:
        need = "more than 10⁹" if ev.runs_needed is None else str(ev.runs_needed)
    ar.append(f"{'pairs' if ev.paired is not None else 'runs per arm'} for a verdict on "
              f"±{percent(ev.target_effect)} ({basis}) with power {POWER:g}: P(T'(ν, λ) > "
              f"t(1−α/2, ν)), λ = (ln(1+Δ) − ln(1+band))·√n/s_d ({design}): {need}")
    if ev.tost is not None:
        t = ev.tost
        ar.append(f"TOST ±{percent(t.margin)}: t_low = {statistic(t.t_low)} (p {p_value(t.p_low)}), "
                  f"t_upp = {statistic(t.t_upp)} (p {p_value(t.p_upp)}), "
                  f"df = {num(t.df, 2, min_decimals=1)}, p = {p_value(t.p)}")
    if holm_m > 1:
        ar.append(f"Holm correction over {holm_m} metrics: p {p_value(ev.p_raw)} → {p_value(p)}"
                  if ev.p_raw is not None and p is not None else
                  f"Holm correction over {holm_m} metrics")
    ar.extend(f"gate: {r}" for r in g.reasons)

    status = {"faster": Status.PASS, "equivalent": Status.PASS, "slower": Status.FAIL,
              "inconclusive": Status.NA}[g.verdict]
    summary = (g.summary + _design_sentence(ev)
               + _outlier_sentence(ev, advice=g.verdict == "inconclusive"))
    if ev.stably_slow is not None:
        s = ev.a if ev.stably_slow == na else ev.b
        word = "slow" if ev.higher_is_better else "worse"
        summary += (f"; {s.name} is stably {word}: narrow band (CV {percent(s.cv or 0)}) on the "
                    f"worse side of the other arm's mean, and the variances differ (M9)")
        if status is Status.NA:
            summary += " — a flag to re-test with more runs, not a significant difference"
            status = Status.WARN
    sources = [SOURCE_WELCH, SOURCE_RATIO_CI, SOURCE_VAR, SOURCE_MDE, SOURCE_GATE]
    if ev.paired is not None:
        sources.insert(1, SOURCE_PAIRED)
    if ev.drift is not None:
        sources.insert(2, SOURCE_DRIFT_ADJUST)
    if ev.outliers is not None:
        sources.append(SOURCE_OUTLIERS)
    if ev.rank is not None:
        sources.append(SOURCE_SIGNED_RANK)
    if ev.tost is not None:
        sources.append(SOURCE_TOST)
    if holm_m > 1:
        sources.append(SOURCE_HOLM)
    inputs = {"metric": ev.metric, "unit": ev.unit, "higher_is_better": ev.higher_is_better,
              "alpha": ev.alpha, "noise_band": ev.noise_band, "margin": ev.margin,
              "effect": ev.effect, "input_kind": ev.input_kind, "decided_by": ev.decided_by,
              "names": [na, nb]}
    return Verdict(check="compare", title=f"{nb} vs {na} ({ev.metric})", status=status,
                   summary=summary, arithmetic=ar, inputs=inputs, sources=sources)


def _design_sentence(ev: ABEvidence) -> str:
    """Which design and adjustment decided, and what the unadjusted pairs said."""
    dz = ev.drift
    if dz is None:
        return ""
    if dz.method == "none":
        return f"; design {dz.design}, decided by the paired t ({dz.reason})"
    how = {"abba-blocks": "the 4-run blocks",
           "trend+unadjusted": "the drift-adjusted and the unadjusted paired analysis together"
           }.get(dz.method, "the paired analysis adjusted for drift")
    drift = ("" if dz.drift_per_run is None else
             f" (drift {percent(dz.drift_per_run, signed=True)}/run")
    if drift and dz.implied_bias_log is not None:
        drift += (f", which puts {percent(math.expm1(dz.implied_bias_log), signed=True)} into "
                  "the unadjusted pair mean)")
    elif drift:
        drift += ")"
    un = ""
    if ev.paired is not None:
        un = (f"; unadjusted paired: ratio {fmt_ratio(ev.paired.ratio)}, "
              f"p = {p_value(ev.paired.p)}")
    return f"; design {dz.design}, decided by {how}{drift}{un}"


def _outlier_sentence(ev: ABEvidence, advice: bool) -> str:
    """Flagged runs by name, the verdict without them, and the rank companion."""
    o = ev.outliers
    if o is None or not o.runs:
        return ""
    names = "; ".join(o.shown())
    out = f"; {len(o.runs)} run(s) flagged as outliers ({names})"
    w = ev.without_outliers
    if w is not None and w.summary is not None:
        out += f"; without them: {w.summary}"
        if advice:
            need = "more than 10⁹" if w.runs_needed is None else str(w.runs_needed)
            out += (f"; the runs needed above come from a spread the flagged run(s) inflated "
                    f"(without them: {need} runs per arm, MDE ±{percent(w.mde)})")
    elif w is not None:
        out += f"; without them no comparison: {w.error}"
    if ev.rank is not None:
        rk = ev.rank
        ci = "" if rk.ratio_ci is None else (f", {100 * (1 - rk.alpha):g}% CI "
                                             f"{percent(rk.ratio_ci[0] - 1, signed=True)} … "
                                             f"{percent(rk.ratio_ci[1] - 1, signed=True)}")
        out += (f"; rank companion (Wilcoxon signed-rank, Hodges–Lehmann): "
                f"{percent(rk.ratio - 1, signed=True)}{ci}, p = {p_value(rk.p)}")
    return out


def _robust_lines(ev: ABEvidence, lvl: str) -> list[str]:
    """Arithmetic lines of the outlier check and the rank companion."""
    lines = []
    o = ev.outliers
    if o is not None:
        if o.runs:
            lines.append(f"outliers ({o.basis}, |modified z| > {num(o.limit, 2, trim=True)}): "
                         + "; ".join(o.shown()))
            w = ev.without_outliers
            if w is not None:
                lines.append(f"without {w.left_out}: "
                             + (w.summary if w.summary is not None else f"no comparison ({w.error})"))
        else:
            lines.append(f"outliers ({o.basis}, |modified z| > {num(o.limit, 2, trim=True)}): none")
    if ev.rank is not None:
        rk = ev.rank
        ci = "" if rk.ratio_ci is None else f" [{lvl} CI {_ci(rk.ratio_ci)}]"
        lines.append(f"rank companion on the pair log ratios{' less the Theil–Sen drift' if ev.drift is not None and ev.drift.method != 'none' else ''}: "
                     f"Wilcoxon signed-rank W = {num(rk.statistic, 6, trim=True)}, "
                     f"p = {p_value(rk.p)}; Hodges–Lehmann ratio {fmt_ratio(rk.ratio)}{ci}")
    return lines


def apply_holm(analyses: Sequence[ABAnalysis]) -> list[ABAnalysis]:
    """Re-gate several metrics' analyses with Holm-adjusted p-values (Holm 1979).

    The deciding p-values form one family and the TOST p-values another; an
    undefined p counts as 1. With one analysis nothing changes.

    Returns:
        New analyses in the same order, ``holm_m = len(analyses)``.
    """
    m = len(analyses)
    if m <= 1:
        return list(analyses)
    adj = holm([1.0 if x.p_raw is None else x.p_raw for x in analyses])
    with_tost = [i for i, x in enumerate(analyses) if x.tost is not None]
    tadj = dict(zip(with_tost, holm([analyses[i].tost.p for i in with_tost]))) if with_tost else {}
    return [decide(x, p_used=adj[i], tost_p_used=tadj.get(i), holm_m=m)
            for i, x in enumerate(analyses)]


def compare_metrics(analyses: Sequence[ABAnalysis]) -> MultiComparison:
    """Holm-correct several metrics of the same arms and say so (Holm 1979).

    Raises:
        InputError: no analyses, or the same metric twice.
    """
    if not analyses:
        raise InputError("nothing to compare: no metric")
    names = [x.metric for x in analyses]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"metric {dup[0]!r} given twice")
    out = apply_holm(analyses)
    m = len(out)
    note = (f"Holm's correction applied over {m} metrics ({', '.join(names)}): each verdict "
            f"reads the adjusted p, keeping the chance of any false 'faster/slower' at α"
            if m > 1 else "one metric: no multiple-testing correction needed")
    return MultiComparison(metrics=out, holm=m > 1, note=note)


# ---------------------------------------------------------------- M10


def single_numbers(a: float, b: float, cv: float | None = None,
                   names: tuple[str, str] = ("A", "B")) -> SingleNumbers:
    """One number per arm (e.g. one local run against a published figure): no verdict (M10).

    Prints the ratio, the local CV when known and the difference single numbers
    need to mean anything, ``MDE(n=1) = 2·CV·√2`` (CV 15% → 42%).

    Args:
        a, b: the two numbers (same unit, > 0). cv: local CV (fraction, > 0) or ``None``.
        names: display names.

    Raises:
        InputError: non-positive or non-finite numbers or CV.
    """
    for nm, v in zip(names, (a, b)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise InputError(f"{nm} must be a positive number, got {v}")
    ratio = b / a
    change = ratio - 1
    if cv is None:
        rep = Verdict(
            check="M10", title="single numbers", status=Status.NA,
            summary=(f"no verdict: one number per arm ({names[1]}/{names[0]} = {fmt_ratio(ratio)}, "
                     f"{percent(change, signed=True)}); the local CV is unknown — measure it (bench --repeat 5) "
                     f"and pass --cv: single numbers need a gap of 2·CV·√2 to mean anything"),
            arithmetic=[f"ratio {names[1]}/{names[0]} = {num(b, 6, trim=True)} / "
                        f"{num(a, 6, trim=True)} = {fmt_ratio(ratio)} "
                        f"({percent(change, signed=True)})", "MDE (n=1 per side) = 2 × CV × √2: CV unknown"],
            inputs={"a": a, "b": b, "cv": None},
            sources=["M10", "M3: MDE = 2·CV·√(2/n), n = 1"])
        return SingleNumbers(names=names, a=a, b=b, ratio=ratio, change=change, cv=None,
                             mde_1=None, exceeds_mde=None, report=rep)
    if not (isinstance(cv, (int, float)) and math.isfinite(cv) and cv > 0):
        raise InputError(f"--cv must be > 0, got {cv}")
    base = single_number_comparison(a, b, cv, names)
    mde = mde_quick(cv, 1)
    exceeds = abs(change) >= mde
    rep = base.model_copy(update={
        "status": Status.NA,
        "summary": (f"no verdict from single numbers: {names[1]}/{names[0]} = {fmt_ratio(ratio)} "
                    f"({percent(change, signed=True)}); at local CV {percent(cv)} a difference must "
                    f"reach {percent(mde, decimals=0)} (2·CV·√2) to mean anything — this one "
                    f"{'does' if exceeds else 'does not'}"
                    + ("; even so, list the knobs that differ before concluding" if exceeds else "")),
    })
    return SingleNumbers(names=names, a=a, b=b, ratio=ratio, change=change, cv=cv, mde_1=mde,
                         exceeds_mde=exceeds, report=rep)
