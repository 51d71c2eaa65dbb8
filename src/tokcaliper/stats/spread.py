"""``analyze``: why one configuration's runs spread — one cloud or clumps, what explains them,
and drift over run order (M2). (Module ``spread``: ``experiment.analysis`` compares arms.)

Pure: combines :mod:`.clumps`, :mod:`.covariates` and :mod:`.drift` into one
:class:`Analysis` that the CLI renders as text or JSON.

Error control: ``analyze`` asks two questions of the same runs (is there a
split? is there a trend?); each is tested at α/2 (Bonferroni), so that a cloud
of independent noise is called "clumped or drifting" with probability ≤ α
(default 5%). The covariate p-values are descriptive; Holm-adjusted ones are
given beside them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from tokcaliper.errors import InputError
from tokcaliper.numbers import num, percent
from tokcaliper.numbers import ratio as fmt_ratio
from tokcaliper.stats.clumps import SplitResult, best_split
from tokcaliper.stats.covariates import CovariateRank, rank_covariates
from tokcaliper.stats.describe import Description, describe
from tokcaliper.stats.drift import MIN_RUNS_DRIFT, DriftResult, mann_kendall

__all__ = ["MAX_RUNS", "Analysis", "analyze_values"]

#: Most runs one analysis takes. The Theil–Sen slope of the drift test is the
#: median of every pair's slope, n(n−1)/2 of them: 5·10⁷ (400 MB) at 10,000
#: runs, 5·10⁹ at 100,000. Everything else is O(n log n) or bounded.
MAX_RUNS = 10_000


class Analysis(BaseModel):
    """What ``tokcaliper analyze`` finds in n runs of one configuration.

    Attributes:
        metric: name of the metric (or CSV column).
        unit: its unit (e.g. ``"tok/s"``; the column name for a CSV without one).
        n: runs analysed.
        description: mean, CV, min, max, CI of all runs.
        alpha: family-wise level; each of the split and trend tests uses alpha/2.
        split: the best two-group split and its test.
        groups: 2 when ``split.clumped``, else 1.
        covariates: ranked covariates, strongest first.
        skipped_covariates: name → why it was not ranked.
        drift: Mann–Kendall test over run order (None if fewer than 5 runs have a position).
        sentence: the one-line finding.
        advice: what to do about it.
    """

    metric: str
    unit: str
    n: int
    description: Description
    alpha: float
    split: SplitResult
    groups: int
    covariates: list[CovariateRank]
    skipped_covariates: dict[str, str] = Field(default_factory=dict)
    drift: DriftResult | None
    sentence: str
    advice: list[str] = Field(default_factory=list)


def _two(x: float) -> str:
    """A correlation or R² to two decimals, at least two significant digits (0.94, 0.0042)."""
    return num(x, 2, min_decimals=2)


def analyze_values(
    values: Sequence[float],
    covariates: Mapping[str, Sequence[float | None]] | None = None,
    *,
    positions: Sequence[float] | None = None,
    metric: str = "value",
    unit: str = "",
    alpha: float = 0.05,
) -> Analysis:
    """Clumps, covariate ranking and drift for n ≥ 5 runs of one configuration.

    Args:
        values: the metric per run.
        covariates: name → value per run (``None`` = unknown); ``position``, if
            present, is also used as the run order for the drift test.
        positions: run order (default: the ``position`` covariate, else 0..n−1).
        metric, unit: for the sentence.
        alpha: family-wise level (split and trend at alpha/2 each).

    Returns:
        :class:`Analysis`.

    Raises:
        InputError: fewer than 5 or more than :data:`MAX_RUNS` runs,
            non-finite values, bad covariate lengths.
    """
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha}")
    if len(values) > MAX_RUNS:
        raise InputError(f"{metric}: {len(values):,} runs; analyze takes at most {MAX_RUNS:,} (the drift "
                         "test's Theil–Sen slope compares every pair of runs, n²/2 of them): analyse a "
                         "window of the runs (e.g. --runs FIRST-LAST) or a sample of the rows")
    cov = dict(covariates or {})
    desc = describe(values, metric)
    split = best_split(values, alpha=alpha / 2, name=metric)
    # The best split's groups whether or not its test says clumped (the view shows both groups):
    # at n = 6 a real contended/quiet split can miss α/2 (p = 0.028 on a CI run), and then a
    # covariate set outside the run that separates the groups completely must still come
    # before the server's own CPU, its mediator (as in the noise floor's halves, stats.noise).
    ranked, skipped = rank_covariates(values, cov, split.labels)
    order = positions
    if order is None and "position" in cov and all(v is not None for v in cov["position"]):
        order = [float(v) for v in cov["position"]]  # type: ignore[arg-type]
    drift = mann_kendall(values, order, alpha=alpha / 2, name=metric) if len(values) >= MIN_RUNS_DRIFT else None
    u = f" {unit}" if unit else ""
    n = len(values)
    advice: list[str] = []
    if split.clumped:
        ratio = "" if split.ratio is None else f", ×{fmt_ratio(split.ratio)}"
        head = (f"{n} runs form 2 groups ({num(split.low.mean)} vs {num(split.high.mean)}{u}{ratio}; "
                f"n = {split.low.n} + {split.high.n}, split R² = {_two(split.r2)}, p = {num(split.p, 2)})")
        strong = [r for r in ranked if r.measured != "during"] or ranked
        if strong:
            best = strong[0]
            rest = [r for r in ranked if r is not best]
            head += f"; best explained by {best.label} (ρ = {_two(best.rho)}, p = {num(best.p, 2)})"
            if rest:
                head += f"; next: {rest[0].label} (ρ = {_two(rest[0].rho)})"
            advice.append(f"find what sets {best.label} before each run and hold it fixed "
                          "(e.g. a longer, equal rest; locked clocks), or adjust for it (--adjust-for)")
        else:
            head += "; no recorded covariate to explain them"
            advice.append("record telemetry (clock and temperature at start, rest) to find the cause")
    else:
        cv = "" if desc.cv is None else f", CV {percent(desc.cv)}"
        head = (f"{n} runs form one cloud (mean {num(desc.mean)}{u}{cv}; best split R² = {_two(split.r2)}, "
                f"p = {num(split.p, 2)} ≥ {split.alpha:g})")
        if ranked and ranked[0].p < alpha / 2:
            head += f"; the metric follows {ranked[0].label} (ρ = {_two(ranked[0].rho)}, p = {num(ranked[0].p, 2)})"
    if drift is not None and drift.drifting:
        rel = "" if drift.slope_per_run_rel is None else f" ({percent(drift.slope_per_run_rel, signed=True)} per run)"
        head += (f". Drift over run order: Mann–Kendall τ = {_two(drift.tau)}, p = {num(drift.p, 2)}, "
                 f"Theil–Sen slope {num(drift.slope_per_run, 3, signed=True)}{u} per run{rel}")
        advice.append(drift.advice or "")
    return Analysis(metric=metric, unit=unit, n=n, description=desc, alpha=alpha, split=split,
                    groups=2 if split.clumped else 1, covariates=ranked, skipped_covariates=skipped,
                    drift=drift, sentence=head, advice=[a for a in advice if a])
