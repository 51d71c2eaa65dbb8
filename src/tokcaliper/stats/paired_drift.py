"""Paired comparison that survives drift over run positions (issue 17 item 1, M4).

Within a pair the two runs do not share their moment exactly: in every order
one of them runs later. With a drift of β per position on the log scale
(a GPU warming up, a host whose load grows: ``y_i ∝ (1 + δ)^pos_i``,
β = ln(1 + δ)), the pair log ratio ``d_k = ln(b_k/a_k)`` carries
``β·Δ_k`` with ``Δ_k = pos(b_k) − pos(a_k)``:

- ``alternate`` (A B | A B | …): Δ_k = +1 in every pair, so the unadjusted
  mean d̄ is biased by β — the paired t-test then calls an A/A "slower";
- ``abba`` (A B | B A | …): Δ alternates +1, −1, so the two pairs of every
  4-run block cancel a linear drift;
- ``random-blocks``: Δ_k = ±1 at random, so the bias is zero on average
  over the randomisation and its spread is part of s_d (the CI stays valid).

Two analyses, chosen by the design the positions show (:func:`pair_design`):

- **trend adjustment** (``alternate``, ``random-blocks`` and any other
  layout): β is estimated from the pair means
  ``m_k = (ln a_k + ln b_k)/2`` regressed on the pair centres
  ``c_k = (pos a_k + pos b_k)/2`` (ordinary least squares; the arm effect
  cancels in m_k), and each ratio is corrected: ``d'_k = d_k − β̂·Δ_k``.
  The estimate is ``μ̂ = mean(d')`` with
  ``se² = s_{d'}²/n + Δ̄²·se(β̂)²`` (d̄ and β̂ are uncorrelated because the
  OLS weights sum to 0) and Welch–Satterthwaite df from ν₁ = n − 1 and
  ν₂ = n − 2 (Satterthwaite 1946). Needs n ≥ 3 pairs and pairs at ≥ 2
  distinct centres; otherwise the unadjusted analysis stays, and says so.
- **4-run blocks** (``abba`` with ≥ 2 complete blocks): consecutive pairs
  with opposite Δ form a block; the block value is the mean of its two log
  ratios, ``q_j = (d_{2j} + d_{2j+1})/2``, in which a linear drift cancels
  exactly; the one-sample t on the q_j has n_blocks − 1 df. A pair without a
  partner (an odd count, a lost block) is named and left out of this
  estimate (it is still listed with the pairs).

In ``alternate`` (b after a in every pair) a linear drift and one step
between two runs move every pair ratio alike and the pair means cannot tell
them apart: the trend fit reads a step as a drift and shifts every ratio by
it (A/A coverage 67% under a 75% step at 10 pairs; docs/calibration.md).
There the verdict needs both readings: the CI is the union of the adjusted
and the unadjusted CI and p the larger of the two p-values, which keeps the
coverage of whichever model holds. ``random-blocks`` needs no such guard:
the randomisation makes the unadjusted pair mean unbiased, and Δ̄ ≈ 0 keeps
the correction small.

All report the implied per-pair bias of the unadjusted mean, ``β̂·Δ̄``, so a
reader sees what the drift would have done. ``y ∝ (1 + δ)^pos`` is the model
adjusted for; a drift that is far from linear over the experiment is only
partly removed (docs/calibration.md measures a step change).

Pure functions, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel
from scipy import stats as _st

from tokcaliper.errors import InputError
from tokcaliper.numbers import num, p_value, percent, statistic
from tokcaliper.numbers import ratio as fmt_ratio
from tokcaliper.stats.describe import require_finite_values

__all__ = ["ROBUST_SLOPE_MAX_PAIRS", "SOURCE_DRIFT_ADJUST", "Design", "DriftAdjusted", "drift_adjusted_paired",
           "pair_design", "robust_slope"]

Design = Literal["alternate", "abba", "random-blocks"]

#: Most pairs :func:`robust_slope` is asked for: the Theil–Sen median of
#: n(n−1)/2 slopes (10,000 pairs: 5·10⁷ slopes, 400 MB; 30,000 pairs: 3.6 GB).
ROBUST_SLOPE_MAX_PAIRS = 10_000

SOURCE_DRIFT_ADJUST = (
    "drift over run positions: β̂ = OLS slope of pair means on pair centres, d'_k = d_k − β̂·Δ_k, "
    "se² = s_d'²/n + Δ̄²·se(β̂)², Welch–Satterthwaite df (Satterthwaite 1946); abba: means of the "
    "two log ratios of each 4-run block (ABBA counterbalancing), t with blocks − 1 df")


class DriftAdjusted(BaseModel):
    """The paired analysis with the drift over run positions taken out.

    Attributes:
        design: the layout the positions show (:func:`pair_design`).
        method: ``"trend"`` (β̂ from the pair means), ``"trend+unadjusted"``
            (alternate: the trend-adjusted estimate, with the union of its CI and
            the unadjusted CI and the larger p), ``"abba-blocks"`` (4-run blocks)
            or ``"none"`` (too few pairs to estimate a drift: the unadjusted
            paired figures, see ``reason``).
        n: pairs used. offsets: Δ_k = pos(b_k) − pos(a_k), in run order (shape (n_all,)).
        slope_log: β̂, drift per position on the log scale (``None`` when not estimable).
        slope_se, slope_df: its standard error and df (n − 2).
        drift_per_run: exp(β̂) − 1, the drift as a fraction per run.
        implied_bias_log: β̂·Δ̄, what the drift puts into the unadjusted mean log ratio.
        mean_log, se_log, df: the estimate of the mean log ratio, its se and df.
        t: (scipy's sign: positive when a is larger) ``None`` when se = 0. p: two-sided.
        ratio: exp(mean_log). ratio_ci: its ``1 − alpha`` CI.
        blocks: abba: the pair indices (0-based, run order) of each 4-run block.
        left_out: pairs outside any 4-run block (abba only), 0-based.
        label: how the verdict names the deciding test, e.g.
            ``"paired p (adjusted for drift)"``.
        reason: why this method was used, in words.
    """

    design: Design
    method: Literal["trend", "trend+unadjusted", "abba-blocks", "none"]
    n: int
    offsets: list[float]
    slope_log: float | None
    slope_se: float | None
    slope_df: int | None
    drift_per_run: float | None
    implied_bias_log: float | None
    mean_log: float
    se_log: float
    df: float
    t: float | None
    p: float | None
    ratio: float
    ratio_ci: tuple[float, float] | None
    alpha: float
    blocks: list[list[int]] | None = None
    left_out: list[int] = []
    label: str
    reason: str

    def describe(self) -> str:
        """One line: design, method, drift, estimate, CI and p (for the arithmetic)."""
        lvl = f"{100 * (1 - self.alpha):g}%"
        drift = ("drift not estimable" if self.slope_log is None else
                 f"drift {percent(self.drift_per_run, signed=True)}/run (se "
                 f"{percent(self.slope_se)}), implied bias of the unadjusted pair mean "
                 f"{percent(math.expm1(self.implied_bias_log or 0.0), signed=True)}")
        ci = "" if self.ratio_ci is None else (
            f" [{lvl} CI {fmt_ratio(self.ratio_ci[0])} … {fmt_ratio(self.ratio_ci[1])}"
            + (", union with the unadjusted CI]" if self.method == "trend+unadjusted" else "]"))
        tt = ("t undefined" if self.t is None else
              f"adjusted t = {statistic(self.t)}, df = {num(self.df, 2, min_decimals=1)}; "
              f"p = {p_value(self.p)} (the larger of the adjusted and the unadjusted p)"
              if self.method == "trend+unadjusted" else
              f"t = {statistic(self.t)}, df = {num(self.df, 2, min_decimals=1)}, "
              f"p = {p_value(self.p)}")
        return (f"design {self.design}, {self.reason}; {drift}; mean log ratio "
                f"{num(self.mean_log, signed=True)}, se {num(self.se_log)}; {tt}; ratio "
                f"{fmt_ratio(self.ratio)}{ci}")


def pair_design(pos_a: Sequence[float], pos_b: Sequence[float]) -> Design:
    """The layout of pairs in run order, from where each pair's runs ran.

    ``alternate`` when b runs after a in every pair (or before in every pair),
    ``abba`` when the side alternates from pair to pair, else ``random-blocks``.
    Pairs are taken in the order given (run order). A randomised order that
    happens to look alternate or abba is analysed as such, which is valid
    for it too.

    Raises:
        InputError: lengths differ, fewer than 2 pairs, or a pair whose two runs
            share a position.
    """
    off = _offsets(pos_a, pos_b)
    s = np.sign(off)
    if np.all(s == s[0]):
        return "alternate"
    if np.all(s[1:] == -s[:-1]):
        return "abba"
    return "random-blocks"


def _offsets(pos_a: Sequence[float], pos_b: Sequence[float]) -> np.ndarray:
    pa = require_finite_values(pos_a, "run positions of arm a")
    pb = require_finite_values(pos_b, "run positions of arm b")
    if pa.size != pb.size:
        raise InputError(f"{pa.size} positions for arm a but {pb.size} for arm b")
    if pa.size < 2:
        raise InputError(f"a design needs at least 2 pairs, got {pa.size}")
    off = pb - pa
    if np.any(off == 0):
        k = int(np.flatnonzero(off == 0)[0])
        raise InputError(f"pair {k + 1}: both runs have position {num(pa[k], 6, trim=True)}")
    return off


def _trend(m: np.ndarray, c: np.ndarray) -> tuple[float, float, int] | None:
    """OLS slope of m on c, its se and df (n − 2); ``None`` when not estimable."""
    n = m.size
    if n < 3:
        return None
    cc = c - c.mean()
    sxx = float(cc @ cc)
    if sxx <= 0:
        return None
    beta = float(cc @ (m - m.mean())) / sxx
    resid = m - m.mean() - beta * cc
    s2 = float(resid @ resid) / (n - 2)
    return beta, math.sqrt(s2 / sxx), n - 2


def _ci(mean: float, se: float, df: float, alpha: float) -> tuple[float | None, tuple[float, float] | None, float | None]:
    if not (se > 0 and math.isfinite(df) and df > 0):
        return None, None, None
    t = mean / se
    p = float(2 * _st.t.sf(abs(t), df))
    q = float(_st.t.ppf(1 - alpha / 2, df))
    return -t, (math.exp(mean - q * se), math.exp(mean + q * se)), p


def _abba_blocks(off: np.ndarray) -> tuple[list[list[int]], list[int]]:
    """Greedy in run order: two consecutive pairs with opposite sides form a block."""
    blocks: list[list[int]] = []
    left: list[int] = []
    k = 0
    n = off.size
    while k < n:
        if k + 1 < n and np.sign(off[k]) == -np.sign(off[k + 1]):
            blocks.append([k, k + 1])
            k += 2
        else:
            left.append(k)
            k += 1
    return blocks, left


def drift_adjusted_paired(a: Sequence[float], b: Sequence[float], pos_a: Sequence[float],
                          pos_b: Sequence[float], alpha: float = 0.05,
                          design: Design | None = None) -> DriftAdjusted:
    """The paired log-ratio analysis of interleaved runs, robust to drift over positions.

    Args:
        a, b: the pairs' runs, shape (n,) each, in run order, finite, > 0.
        pos_a, pos_b: the run position of each run (any increasing scale, e.g.
            the 0-based position in the experiment's order), shape (n,).
        alpha: two-sided level of the CI, in (0, 1).
        design: the order the experiment declared; default :func:`pair_design`
            of the positions. ``abba`` uses the 4-run blocks, the others the
            trend adjustment (see the module docstring for the formulas).

    Returns:
        :class:`DriftAdjusted`.

    Raises:
        InputError: unequal lengths, fewer than 2 pairs, non-positive values or
            a pair whose runs share a position.
    """
    if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
        raise InputError(f"--alpha must be between 0 and 1 (exclusive), got {alpha}")
    xa, xb = require_finite_values(a, "arm a"), require_finite_values(b, "arm b")
    if xa.size != xb.size:
        raise InputError(f"paired runs need equal run counts per arm, got {xa.size} and {xb.size}")
    if np.any(xa <= 0) or np.any(xb <= 0):
        raise InputError("ratios need positive values")
    off = _offsets(pos_a, pos_b)
    if off.size != xa.size:
        raise InputError(f"{xa.size} pairs but {off.size} pairs of positions")
    pa = np.asarray(pos_a, dtype=float)
    pb = np.asarray(pos_b, dtype=float)
    la, lb = np.log(xa), np.log(xb)
    d = lb - la
    n = d.size
    shown: Design = design or pair_design(pa, pb)
    tr = _trend((la + lb) / 2, (pa + pb) / 2)
    slope = se_b = None
    df_b = None
    bias = None
    if tr is not None:
        slope, se_b, df_b = tr
        bias = slope * float(off.mean())
    common = dict(design=shown, offsets=[float(x) for x in off], slope_log=slope, slope_se=se_b,
                  slope_df=df_b, drift_per_run=None if slope is None else math.expm1(slope),
                  implied_bias_log=bias, alpha=float(alpha))

    if shown == "abba":
        blocks, left = _abba_blocks(off)
        if len(blocks) >= 2:
            q = np.array([(d[i] + d[j]) / 2 for i, j in blocks])
            nq = q.size
            mean, sd = float(q.mean()), float(q.std(ddof=1))
            se = sd / math.sqrt(nq)
            t, ci, p = _ci(mean, se, nq - 1, alpha)
            why = (f"{nq} 4-run blocks (the two log ratios of each averaged: a linear drift "
                   "cancels)")
            if left:
                why += ("; pair " + ", ".join(str(k + 1) for k in left)
                        + " not in a 4-run block, left out of this estimate")
            return DriftAdjusted(method="abba-blocks", n=2 * nq, mean_log=mean, se_log=se,
                                 df=float(nq - 1), t=t, p=p, ratio=math.exp(mean), ratio_ci=ci,
                                 blocks=blocks, left_out=left,
                                 label="paired p (ABBA 4-run blocks)", reason=why, **common)

    if tr is None:
        mean, sd = float(d.mean()), float(d.std(ddof=1))
        se = sd / math.sqrt(n)
        t, ci, p = _ci(mean, se, n - 1, alpha)
        return DriftAdjusted(method="none", n=n, mean_log=mean, se_log=se, df=float(n - 1), t=t,
                             p=p, ratio=math.exp(mean), ratio_ci=ci, label="paired p",
                             reason=(f"{n} pairs: too few to estimate a drift (needs 3 at "
                                     "distinct times); not adjusted"), **common)
    assert slope is not None and se_b is not None and df_b is not None
    dd = d - slope * off
    mean, sd = float(dd.mean()), float(dd.std(ddof=1))
    v1 = sd * sd / n
    v2 = float(off.mean()) ** 2 * se_b * se_b
    se = math.sqrt(v1 + v2)
    den = (v1 * v1 / (n - 1) if v1 > 0 else 0.0) + (v2 * v2 / df_b if v2 > 0 else 0.0)
    df = (v1 + v2) ** 2 / den if den > 0 else float(n - 1)
    t, ci, p = _ci(mean, se, df, alpha)
    if shown == "alternate" and np.all(off == off[0]):
        # Every pair has b on the same side: a linear drift and one step between two
        # runs both move every ratio alike, and the pair means cannot tell which it
        # was (the trend fit reads a step as a drift and moves every ratio). The
        # verdict needs both readings: CI = union of the two, p = the larger.
        su = float(d.std(ddof=1))
        _tu, ciu, pu = _ci(float(d.mean()), su / math.sqrt(n), n - 1, alpha)
        if ci is not None and ciu is not None and p is not None and pu is not None:
            ci = (min(ci[0], ciu[0]), max(ci[1], ciu[1]))
            p = max(p, pu)
        return DriftAdjusted(method="trend+unadjusted", n=n, mean_log=mean, se_log=se, df=df,
                             t=t, p=p, ratio=math.exp(mean), ratio_ci=ci,
                             label="paired p (larger of drift-adjusted and unadjusted)",
                             reason=("b runs after a in every pair, so a drift and a step cannot "
                                     "be told apart: the verdict needs the drift-adjusted and the "
                                     "unadjusted paired analysis alike (CI = their union, p = the "
                                     "larger)"), **common)
    return DriftAdjusted(method="trend", n=n, mean_log=mean, se_log=se, df=df, t=t, p=p,
                         ratio=math.exp(mean), ratio_ci=ci, label="paired p (adjusted for drift)",
                         reason="ratios adjusted for the drift per position fitted to the pair means",
                         **common)


def robust_slope(a: Sequence[float], b: Sequence[float], pos_a: Sequence[float],
                 pos_b: Sequence[float]) -> float | None:
    """Theil–Sen drift per position (log scale) of the pair means on the pair centres.

    The median of pairwise slopes (Sen 1968, ``scipy.stats.theilslopes``) of
    ``m_k = (ln a_k + ln b_k)/2`` on ``c_k = (pos a_k + pos b_k)/2``: one wild
    run moves it little, unlike the least-squares slope the decider uses.

    Args:
        a, b: the pairs' runs (> 0), shape (n,) each. pos_a, pos_b: their positions.

    Cost: n(n−1)/2 slopes (8 bytes each) — callers bound n
    (:data:`ROBUST_SLOPE_MAX_PAIRS`: 5·10⁷ slopes, 400 MB).

    Returns:
        The slope, or ``None`` with fewer than 3 pairs or a single pair centre.
    """
    if len(a) < 3 or not (len(a) == len(b) == len(pos_a) == len(pos_b)):
        return None
    m = (np.log(np.asarray(a, dtype=float)) + np.log(np.asarray(b, dtype=float))) / 2
    c = (np.asarray(pos_a, dtype=float) + np.asarray(pos_b, dtype=float)) / 2
    if np.ptp(c) == 0:
        return None
    from tokcaliper.stats.drift import theil_sen

    return theil_sen(m, c)[0]  # scipy's slope bit for bit, without its two n × n matrices
