"""Noise floor of one unchanged configuration (METHODS.md M1, with M3's MDE).

Run one configuration R ≥ 5 times; per metric report mean, sample std, CV,
min, max, (max−min)/mean, and the quick MDE ``2·CV·√(2/n)`` (METHODS.md M3)
for single runs (n = 1, the cross-machine case of M10) and for R runs per arm.
When the runs carry covariates (:func:`tokcaliper.stats.covariates.run_covariates`),
a metric whose spread goes with one of them says so in one sentence (issue 21):
the covariate ranked first (:func:`~tokcaliper.stats.covariates.rank_covariates`,
Spearman's ρ) when ``|ρ| ≥`` :data:`EXPLAIN_MIN_RHO` or when it separates the lower
half of the runs from the upper half completely (:func:`explain_spread`), with its
mean in the runs below and above the median, e.g. "CV 87.7%: other processes' CPU (cores used)
0.900 on average in the 2 lowest runs, 0.0500 in the 2 highest (ρ = −0.95 …)".
The noise floor is then that covariate's as much as the server's.

Pure functions, no I/O; rendered by :mod:`tokcaliper.report.noise_view`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from tokcaliper.errors import InputError
from tokcaliper.model import warnings as W
from tokcaliper.model.verdict import Status, Verdict
from tokcaliper.numbers import num, percent
from tokcaliper.stats.covariates import FOLLOWS_THROUGHPUT, CovariateRank, rank_covariates, separated
from tokcaliper.stats.describe import Description, describe
from tokcaliper.stats.resolution import (
    mde_quick,
    n_power,
    n_quick,
    n_verdict,
    ratio_distance,
    sd_diff_from_cv,
)
from tokcaliper.stats.verdict_gate import DEFAULT_NOISE_BAND

__all__ = ["EXPLAIN_MIN_RHO", "MetricNoise", "NoiseFloorReport", "explain_spread",
           "noise_floor"]

#: Smallest |Spearman ρ| at which a covariate is said to explain a metric's spread.
#: With 4 runs only ρ = ±1 reaches an exact p below 0.1 (2/24); 0.8 at n ≥ 5.
EXPLAIN_MIN_RHO = 0.8


class MetricNoise(BaseModel):
    """Noise floor of one metric.

    Attributes:
        name: metric name with unit, e.g. ``"aggregate output throughput (tok/s)"``.
        description: :class:`Description` of the R repetitions (n = R).
        mde_n1: quick MDE for one run per arm, 2·CV·√2 (``None`` without a CV).
        mde_nR: quick MDE for R runs per arm, 2·CV·√(2/R) (``None`` without a CV).
        effect: the expected effect (fraction) if given; n_quick_for_effect,
            n_power_for_effect: runs per arm it needs (quick ≈ 50% power / power 0.8).
            n_verdict_for_effect: runs per arm a faster/slower *verdict* needs (power
            0.8 that the CI of paired runs clears compare's ±1% band; ``None`` when
            Δ ≤ 1%: no verdict reachable).
        warnings: caveats for this metric.
        verdict: check "M1" with the arithmetic.
        explained_by: the covariate that goes with the spread (|ρ| ≥
            :data:`EXPLAIN_MIN_RHO`), None when none does or none was given.
        explanation: that in one sentence (see the module docstring).
    """

    name: str
    description: Description
    mde_n1: float | None
    mde_nR: float | None
    effect: float | None = None
    n_quick_for_effect: int | None = None
    n_power_for_effect: int | None = None
    n_verdict_for_effect: int | None = None
    warnings: list[str] = Field(default_factory=list)
    verdict: Verdict
    explained_by: CovariateRank | None = None
    explanation: str | None = None


class NoiseFloorReport(BaseModel):
    """Noise floor of every metric of one configuration.

    Attributes:
        metrics: one :class:`MetricNoise` per input metric, in input order.
        effect: the expected relative effect, if given.
        warnings: report-level warnings (deduplicated, e.g. the R < 5 warning).
    """

    metrics: list[MetricNoise]
    effect: float | None = None
    warnings: list[str] = Field(default_factory=list)


def _one(name: str, values: Sequence[float], effect: float | None) -> MetricNoise:
    d = describe(values, name)
    r = d.n
    warns: list[str] = []
    def g(x: float | None) -> str:  # a value of the metric, 4 significant digits as given
        return num(x, 4, trim=True)

    arithmetic = [
        f"n = {r}, mean = {g(d.mean)}, std = {g(d.std)}, min = {g(d.min)}, max = {g(d.max)}",
    ]
    if d.cv is not None:
        arithmetic.append(f"CV = {g(d.std)} / {g(d.mean)} = {num(d.cv)} ({percent(d.cv)})")
    if d.spread is not None:
        arithmetic.append(f"(max − min)/mean = ({g(d.max)} − {g(d.min)}) / {g(d.mean)} = "
                          f"{num(d.spread)} ({percent(d.spread, decimals=0)})")
    if r == 1:
        warns.append(W.SINGLE_REPETITION.text(metric=name))
    elif r < W.M1_MIN_RUNS:
        warns.append(W.FEW_REPETITIONS.text(min_n=W.M1_MIN_RUNS, n=r))
    if d.cv_ci95 is not None:
        arithmetic.append(f"CV 95% CI {percent(d.cv_ci95[0])}–{percent(d.cv_ci95[1])} "
                          f"(chi-square on the variance, n={r})")
    if d.cv is None and r > 1:
        warns.append(W.CV_UNDEFINED.text(metric=name))

    m1 = mR = None
    nq = npw = nv = None
    status = Status.PASS if r >= W.M1_MIN_RUNS else Status.WARN
    if d.cv is not None and d.cv > 0:
        m1, mR = mde_quick(d.cv, 1), mde_quick(d.cv, r)
        arithmetic.append(f"MDE (n=1) = 2 × {num(d.cv)} × √2 = {percent(m1)}")
        arithmetic.append(f"MDE (n={r}) = 2 × {num(d.cv)} × √(2/{r}) = {percent(mR)}")
        summary = (f"CV {percent(d.cv)} over {r} runs (mean {g(d.mean)}, "
                   f"(max−min)/mean {percent(d.spread or 0, decimals=0)}): two arms resolve "
                   f"{percent(m1, decimals=0)} with single runs, {percent(mR, decimals=0)} "
                   f"with {r} runs each")
        if effect is not None:
            nq, npw = n_quick(d.cv, effect), n_power(d.cv, effect)
            nv = n_verdict(ratio_distance(effect, DEFAULT_NOISE_BAND), sd_diff_from_cv(d.cv))
            eff = num(100 * effect, 6, trim=True) + "%"  # as given
            arithmetic.append(f"n (quick) = 8 × ({num(d.cv)} / {num(effect, 6, trim=True)})² → {nq}; "
                              f"n (power 0.8, statsmodels TTestIndPower) → {npw}; n for a verdict "
                              f"(paired, CI beyond ±{percent(DEFAULT_NOISE_BAND)}, power 0.8) → "
                              + ("none: Δ inside the band" if nv is None else str(nv)))
            if effect < mR:
                status = Status.WARN
                summary += (f"; a {eff} effect is below that — needs {nq} runs per arm "
                            f"(quick, ~50% power) / {npw} (power 0.8)"
                            + ("" if nv is None else f" / {nv} for a faster/slower verdict"))
            else:
                summary += (f"; a {eff} effect is resolvable at {r} runs per arm "
                            f"(quick; power 0.8 needs {npw}"
                            + ("" if nv is None else f", a faster/slower verdict {nv}") + ")")
    elif d.cv == 0:
        status = Status.WARN
        summary = f"all {r} runs identical ({g(d.mean)}): CV 0, the metric may not be measured"
        warns.append(W.IDENTICAL_RUNS.text(metric=name, n=r))
    else:
        status = Status.NA
        summary = f"{r} run{'s' if r != 1 else ''}: no CV, no MDE"
    verdict = Verdict(
        check="M1", title=f"noise floor: {name}", status=status, summary=summary,
        arithmetic=arithmetic,
        inputs={"metric": name, "values": [float(v) for v in values], "effect": effect},
        sources=["METHODS.md M1 (noise floor, ≥ 5 repetitions)",
                 "METHODS.md M3: MDE = 2·CV·√(2/n); n = 8·(CV/Δ)²",
                 "statsmodels.stats.power.TTestIndPower.solve_power (power-based n)"],
    )
    return MetricNoise(name=name, description=d, mde_n1=m1, mde_nR=mR, effect=effect,
                       n_quick_for_effect=nq, n_power_for_effect=npw,
                       n_verdict_for_effect=nv, warnings=warns,
                       verdict=verdict)


def explain_spread(name: str, values: Sequence[float], covariates: Mapping[str, Sequence[float | None]],
                   cv: float | None = None) -> tuple[CovariateRank | None, str | None]:
    """The covariate that goes with a metric's spread, and the sentence saying so (pure).

    The runs are split into their lower and upper half by the metric (the lower
    ``n − n//2`` and the upper ``n//2``), and the covariates are ranked against the
    metric with those groups (:func:`rank_covariates`). The first that is neither run
    order (it has the drift test) nor an effect of throughput explains the spread when
    ``|ρ| ≥`` :data:`EXPLAIN_MIN_RHO`, or when it separates the halves completely at an
    exact Mann–Whitney p ≤ :data:`~tokcaliper.stats.covariates.SEPARATED_P` (3 runs
    against 3 and more: contended runs and quiet ones, whose order within each half
    is noise, can leave ρ at 0.55–0.8 with every contended run below every quiet one).

    Args:
        name: the metric's name (with unit).
        values: its value per run.
        covariates: covariate name → value per run (same order; None = unknown).
        cv: the metric's CV, quoted at the start of the sentence when given.

    Returns:
        ``(rank, sentence)``, or ``(None, None)`` when none does.

    Raises:
        InputError: a covariate of another length than ``values``.
    """
    if len(values) < 4 or not covariates:
        return None, None
    n = len(values)
    groups = [0] * n
    for i in sorted(range(n), key=lambda i: values[i])[n - n // 2:]:
        groups[i] = 1
    ranked, _ = rank_covariates(values, covariates, groups)
    best = next((r for r in ranked if r.measured != "order" and r.name not in FOLLOWS_THROUGHPUT), None)
    split = best is not None and abs(best.rho) < EXPLAIN_MIN_RHO and separated(best)
    if best is None or (abs(best.rho) < EXPLAIN_MIN_RHO and not split):
        return None, None
    col = covariates[best.name]
    known = sorted((v, float(c)) for v, c in zip(values, col) if c is not None)
    k = len(known) // 2
    low = sum(c for _, c in known[:k]) / k
    high = sum(c for _, c in known[-k:]) / k
    head = f"CV {percent(cv)}: " if cv is not None else ""
    sep = (f"; it separates the lower {n - n // 2} runs from the upper {n // 2} completely, Mann–Whitney "
           f"exact p = {num(best.separation_p, 2)}") if split else ""
    sentence = (f"{head}{best.label} {num(low)} on average in the {k} lowest runs, {num(high)} in the {k} "
                f"highest (ρ = {num(best.rho, 2, min_decimals=2, signed=True)} with {name}, n = {best.n}, "
                f"p = {num(best.p, 2)} {best.p_method}{sep}): the spread is that covariate's as much as the "
                "server's")
    return best, sentence


def noise_floor(metrics: Mapping[str, Sequence[float]], effect: float | None = None,
                covariates: Mapping[str, Sequence[float | None]] | None = None) -> NoiseFloorReport:
    """Noise floor per metric of R repetitions of one configuration (METHODS.md M1).

    Args:
        metrics: metric name (with unit) → its R values, one per repetition,
            e.g. ``{"aggregate output throughput (tok/s)": [366.0, …, 561.0]}``.
            R may differ between metrics; every list must be non-empty and finite.
        effect: optional expected relative effect Δ (> 0), e.g. 0.05 for 5%;
            adds the runs per arm it needs (quick and power-based).
        covariates: optional covariate name → value per repetition (same runs, same
            order, as every metric list): a metric whose spread one of them
            explains gets ``explanation`` (:func:`explain_spread`).

    Returns:
        :class:`NoiseFloorReport`; a metric with one value gets ``None`` for std,
        CV and MDE and a warning; R < 5 adds "fewer than 5 repetitions: CV
        itself is uncertain".

    Raises:
        InputError: no metrics, an empty or non-finite list, or effect ≤ 0.
    """
    if not metrics:
        raise InputError("noise floor needs at least one metric")
    if effect is not None and not (effect > 0):
        raise InputError(f"--effect must be > 0, got {effect:g}")
    items = [_one(str(name), vals, effect) for name, vals in metrics.items()]
    for m, vals in zip(items, metrics.values()):
        if covariates and len(vals) == len(next(iter(covariates.values()))):
            m.explained_by, m.explanation = explain_spread(m.name, vals, covariates, m.description.cv)
            if m.explanation:
                m.verdict.arithmetic.append(m.explanation)
    report_warnings: list[str] = []
    for m in items:
        for w in m.warnings:
            if w not in report_warnings:
                report_warnings.append(w)
    return NoiseFloorReport(metrics=items, effect=effect, warnings=report_warnings)
