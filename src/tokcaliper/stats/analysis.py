"""``analyze``: one cloud or clumps, what explains them, and drift over run order (M2).

Pure: combines :mod:`.clumps`, :mod:`.covariates` and :mod:`.drift` into one
:class:`Analysis` that the CLI renders as text or JSON.

Error control: ``analyze`` asks two questions of the same runs (is there a
split? is there a trend?); each is tested at α/2 (Bonferroni), so that a cloud
of independent noise is called "clumped or drifting" with probability ≤ α
(default 5%). The covariate p-values are descriptive; Holm-adjusted ones are
given beside them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from tokcaliper.errors import InputError
from tokcaliper.stats.clumps import SplitResult, best_split
from tokcaliper.stats.covariates import CovariateRank, rank_covariates
from tokcaliper.stats.describe import Description, describe
from tokcaliper.stats.drift import DriftResult, mann_kendall

__all__ = ["Analysis", "analyze_values"]


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


def _num(x: float, digits: int = 3) -> str:
    """``digits`` significant figures in fixed notation (60.87 → 60.9, 1234.5 → 1,235)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    return f"{x:,.{decimals}f}"


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
        InputError: fewer than 5 runs, non-finite values, bad covariate lengths.
    """
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha}")
    cov = dict(covariates or {})
    desc = describe(values, metric)
    split = best_split(values, alpha=alpha / 2, name=metric)
    ranked, skipped = rank_covariates(values, cov, split.labels if split.clumped else None)
    order = positions
    if order is None and "position" in cov and all(v is not None for v in cov["position"]):
        order = [float(v) for v in cov["position"]]  # type: ignore[arg-type]
    drift = mann_kendall(values, order, alpha=alpha / 2, name=metric) if len(values) >= 5 else None
    u = f" {unit}" if unit else ""
    n = len(values)
    advice: list[str] = []
    if split.clumped:
        ratio = "" if split.ratio is None else f", ×{split.ratio:.2f}"
        head = (f"{n} runs form 2 groups ({_num(split.low.mean)} vs {_num(split.high.mean)}{u}{ratio}; "
                f"n = {split.low.n} + {split.high.n}, split R² = {split.r2:.2f}, p = {split.p:.2g})")
        strong = [r for r in ranked if r.measured != "during"] or ranked
        if strong:
            best = strong[0]
            rest = [r for r in ranked if r is not best]
            head += f"; best explained by {best.label} (ρ = {best.rho:.2f}, p = {best.p:.2g})"
            if rest:
                head += f"; next: {rest[0].label} (ρ = {rest[0].rho:.2f})"
            advice.append(f"find what sets {best.label} before each run and hold it fixed "
                          "(e.g. a longer, equal rest; locked clocks), or adjust for it (--adjust-for)")
        else:
            head += "; no recorded covariate to explain them"
            advice.append("record telemetry (clock and temperature at start, rest) to find the cause")
    else:
        cv = "" if desc.cv is None else f", CV {desc.cv:.1%}"
        head = (f"{n} runs form one cloud (mean {_num(desc.mean)}{u}{cv}; best split R² = {split.r2:.2f}, "
                f"p = {split.p:.2g} ≥ {split.alpha:g})")
        if ranked and ranked[0].p < alpha / 2:
            head += f"; the metric follows {ranked[0].label} (ρ = {ranked[0].rho:.2f}, p = {ranked[0].p:.2g})"
    if drift is not None and drift.drifting:
        rel = "" if drift.slope_per_run_rel is None else f" ({drift.slope_per_run_rel:+.1%} per run)"
        head += (f". Drift over run order: Mann–Kendall τ = {drift.tau:.2f}, p = {drift.p:.2g}, "
                 f"Theil–Sen slope {drift.slope_per_run:+.3g}{u} per run{rel}")
        advice.append(drift.advice or "")
    return Analysis(metric=metric, unit=unit, n=n, description=desc, alpha=alpha, split=split,
                    groups=2 if split.clumped else 1, covariates=ranked, skipped_covariates=skipped,
                    drift=drift, sentence=head, advice=[a for a in advice if a])
