"""Capacity at an SLO: the highest arrival rate whose SLO attainment meets a target, with a CI.

Input: for each tried rate r_1 < … < r_k (req/s), the SLO attainment of each of
its runs (share of the run's measured requests meeting every SLO,
:func:`tokcaliper.load.slo.slo_attainment`; failed requests miss).

1. Monotone fit. Attainment can only fall as the offered rate rises, so the
   per-rate means ā_i (weights w_i = runs at r_i) are fitted by the weighted
   least-squares non-increasing sequence f_1 ≥ … ≥ f_k — isotonic regression by
   the pool-adjacent-violators algorithm (Ayer et al., Ann. Math. Stat. 1955;
   Barlow et al., "Statistical inference under order restrictions", 1972):
   adjacent values that violate the order are pooled into their weighted mean
   until none does. Noise that makes a higher rate look better is pooled away
   instead of producing two crossings.
2. Capacity. With i the last rate whose fit meets the target t (f_i ≥ t > f_{i+1}),
   capacity = r_i + (f_i − t) / (f_i − f_{i+1}) × (r_{i+1} − r_i): linear
   interpolation between the two tried rates that bracket it. If the fit meets
   t at every tried rate the capacity is *above* the highest one; if at none, it
   is *below* the lowest one — the tried rates do not bracket it, and no number
   is given.
3. Uncertainty. A percentile bootstrap over runs (Efron & Tibshirani, "An
   introduction to the bootstrap", 1993, ch. 13): each replicate resamples, with
   replacement, the runs of each rate separately (the design's runs per rate are
   kept), refits and recomputes the capacity; the 95 % CI is the 2.5th and
   97.5th percentiles of the replicates, the generator seeded by a stored seed
   (``numpy.random.default_rng(seed)``) so the CI is reproducible. A replicate
   that is not bracketed counts at the end it falls off (the lowest or highest
   rate), and their share is reported: a CI end at a tried rate with such
   replicates means "at or beyond".

Interpolation assumes attainment is linear between two tried rates; a finer grid
of rates near the capacity removes that assumption's effect. Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel

__all__ = ["CapacityEstimate", "CapacityPoint", "capacity_at_slo", "capacity_from_fit", "pav_decreasing"]

#: Bootstrap replicates by default.
DEFAULT_BOOTSTRAP = 2000

Bracket = Literal["bracketed", "above_all", "below_all"]


def pav_decreasing(y: Sequence[float], w: Sequence[float] | None = None) -> list[float]:
    """The weighted least-squares non-increasing fit of ``y`` (pool adjacent violators).

    Args:
        y: values in the order of their x (here: mean attainment by ascending rate).
        w: positive weights (default all 1).

    Returns:
        f with f[0] ≥ f[1] ≥ … minimising Σ w_i (y_i − f_i)², same length as ``y``.

    Raises:
        ValueError: lengths differ, or a weight is not positive.
    """
    ws = [1.0] * len(y) if w is None else [float(x) for x in w]
    if len(ws) != len(y):
        raise ValueError(f"y has {len(y)} values but w has {len(ws)}")
    if any(not x > 0 for x in ws):
        raise ValueError("weights must be positive")
    # Blocks of (mean, weight, count); merge while the order (non-increasing) is violated.
    blocks: list[list[float]] = []
    for yi, wi in zip(y, ws):
        blocks.append([float(yi), wi, 1])
        while len(blocks) > 1 and blocks[-2][0] < blocks[-1][0]:
            m2, w2, c2 = blocks.pop()
            m1, w1, c1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, c1 + c2])
    out: list[float] = []
    for m, _w, c in blocks:
        out.extend([m] * int(c))
    return out


def capacity_from_fit(rates: Sequence[float], fitted: Sequence[float],
                      target: float) -> tuple[float | None, Bracket, int | None]:
    """Interpolated capacity from a non-increasing fit (step 2 of the module docstring).

    Args:
        rates: ascending tried rates, req/s. fitted: the fit at each (non-increasing).
        target: attainment to meet, a share in (0, 1].

    Returns:
        ``(capacity req/s or None, bracket, i)``: ``i`` is the index of the last rate
        meeting the target (None when none does).
    """
    meets = [i for i, f in enumerate(fitted) if f >= target]
    if not meets:
        return None, "below_all", None
    i = meets[-1]
    if i == len(rates) - 1:
        return None, "above_all", i
    f_i, f_j = fitted[i], fitted[i + 1]
    return rates[i] + (f_i - target) / (f_i - f_j) * (rates[i + 1] - rates[i]), "bracketed", i


class CapacityPoint(BaseModel):
    """One tried rate: its runs' attainments, their mean and the monotone fit there.

    Attributes:
        rate_rps: offered rate, req/s. attainments: per run, shares 0–1.
        mean: their mean; fitted: the isotonic fit at this rate (shares).
    """

    rate_rps: float
    attainments: list[float]
    mean: float
    fitted: float


class CapacityEstimate(BaseModel):
    """The capacity at an SLO and how sure it is.

    Attributes:
        target: attainment target, a share (0.99 = 99 %).
        points: the tried rates, ascending.
        capacity_rps: interpolated capacity, req/s (None when not bracketed).
        bracket: ``bracketed``, ``above_all`` (every tried rate meets the target:
            capacity ≥ the highest) or ``below_all`` (none does: capacity < the lowest).
        between: the two tried rates the capacity lies between (bracketed only).
        ci95: percentile-bootstrap 95 % CI, req/s (None when the point is not bracketed
            or a rate has a single run).
        below_share / above_share: shares of the replicates that fell below the lowest
            / above the highest tried rate (counted at that rate).
        bootstrap: replicates; seed: the generator's seed.
        grid_note: set when the CI is narrower than half the gap between the bracketing
            rates: the interpolation, not the runs, then limits what is known.
        arithmetic: the calculation, one step per line.
    """

    target: float
    points: list[CapacityPoint]
    capacity_rps: float | None
    bracket: Bracket
    between: tuple[float, float] | None = None
    ci95: tuple[float, float] | None = None
    below_share: float = 0.0
    above_share: float = 0.0
    bootstrap: int
    seed: int
    grid_note: str | None = None
    arithmetic: list[str]


def capacity_at_slo(by_rate: Mapping[float, Sequence[float]], target: float, *,
                    bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0) -> CapacityEstimate:
    """Capacity at an SLO from per-run attainments by rate (the module docstring's steps 1–3).

    Args:
        by_rate: tried rate (req/s) → the SLO attainment of each of its runs (shares 0–1).
        target: the attainment to meet, a share in (0, 1] (0.99 = 99 %).
        bootstrap: replicates (≥ 100). seed: ``numpy.random.default_rng`` seed.

    Returns:
        :class:`CapacityEstimate`.

    Raises:
        ValueError: fewer than 2 rates, a rate without runs, a non-positive rate, an
            attainment outside [0, 1], a target outside (0, 1], too few replicates.
    """
    from tokcaliper.numbers import num, percent

    if not 0 < target <= 1:
        raise ValueError(f"target must be a share in (0, 1], got {target}")
    if bootstrap < 100:
        raise ValueError(f"bootstrap needs at least 100 replicates, got {bootstrap}")
    rates = sorted(by_rate)
    if len(rates) < 2:
        raise ValueError(f"capacity needs at least 2 tried rates, got {len(rates)}")
    runs = [np.asarray(by_rate[r], dtype=float) for r in rates]
    for r, a in zip(rates, runs):
        if not r > 0:
            raise ValueError(f"rates must be > 0, got {r}")
        if a.size == 0:
            raise ValueError(f"rate {r:g} has no run with an SLO attainment")
        if np.any((a < 0) | (a > 1)) or not np.all(np.isfinite(a)):
            raise ValueError(f"rate {r:g}: attainments must be shares in [0, 1]")
    weights = [float(a.size) for a in runs]
    means = [float(a.mean()) for a in runs]
    fitted = pav_decreasing(means, weights)
    cap, bracket, i = capacity_from_fit(rates, fitted, target)
    t = percent(target)
    arithmetic = [
        "mean attainment by rate (runs): " + ", ".join(
            f"{num(r, trim=True)} req/s {percent(m)} (n={a.size})" for r, m, a in zip(rates, means, runs)),
        "monotone (non-increasing) fit, pool-adjacent-violators weighted by runs: " + ", ".join(
            f"{num(r, trim=True)} → {percent(f)}" for r, f in zip(rates, fitted)),
    ]
    between = None
    if bracket == "bracketed":
        assert i is not None and cap is not None
        r_i, r_j, f_i, f_j = rates[i], rates[i + 1], fitted[i], fitted[i + 1]
        between = (r_i, r_j)
        arithmetic.append(
            f"capacity = {num(r_i, trim=True)} + ({percent(f_i)} − {t}) / ({percent(f_i)} − {percent(f_j)}) × "
            f"({num(r_j, trim=True)} − {num(r_i, trim=True)}) = {num(cap)} req/s (linear between the two "
            "tried rates that bracket the target)")
    elif bracket == "above_all":
        arithmetic.append(f"the fit meets {t} at every tried rate: the capacity is above "
                          f"{num(rates[-1], trim=True)} req/s (not bracketed; try higher rates)")
    else:
        arithmetic.append(f"the fit meets {t} at no tried rate: the capacity is below "
                          f"{num(rates[0], trim=True)} req/s (not bracketed; try lower rates)")

    ci = None
    below = above = 0.0
    if bracket == "bracketed" and all(a.size >= 2 for a in runs):
        rng = np.random.default_rng(seed)
        values = np.empty(bootstrap)
        n_below = n_above = 0
        for b in range(bootstrap):
            m = [float(a[rng.integers(0, a.size, a.size)].mean()) for a in runs]
            c, kind, _ = capacity_from_fit(rates, pav_decreasing(m, weights), target)
            if kind == "below_all":
                n_below += 1
                c = rates[0]
            elif kind == "above_all":
                n_above += 1
                c = rates[-1]
            values[b] = c
        lo, hi = (float(x) for x in np.percentile(values, [2.5, 97.5]))
        ci = (lo, hi)
        below, above = n_below / bootstrap, n_above / bootstrap
        arithmetic.append(
            f"95% CI: percentile bootstrap over runs, {bootstrap} replicates resampling each rate's runs "
            f"(seed {seed}): 2.5th–97.5th percentiles {num(lo)}–{num(hi)} req/s"
            + (f"; {percent(below)} of replicates fell below {num(rates[0], trim=True)} req/s"
               if n_below else "")
            + (f"; {percent(above)} above {num(rates[-1], trim=True)} req/s" if n_above else ""))
    elif bracket == "bracketed":
        arithmetic.append("no CI: a rate has a single run (the bootstrap resamples runs; give --repeat ≥ 2)")
    grid_note = None
    if between is not None and (ci is None or ci[1] - ci[0] < 0.5 * (between[1] - between[0])):
        grid_note = (f"the CI counts run-to-run noise only; assuming only that attainment falls with rate, "
                     f"the capacity lies between the tried rates {num(between[0], trim=True)} and "
                     f"{num(between[1], trim=True)} req/s — try rates between them to narrow that")
    points = [CapacityPoint(rate_rps=r, attainments=[float(x) for x in a], mean=m, fitted=f)
              for r, a, m, f in zip(rates, runs, means, fitted)]
    return CapacityEstimate(target=target, points=points, capacity_rps=cap, bracket=bracket,
                            between=between, ci95=ci, below_share=below, above_share=above,
                            grid_note=grid_note,
                            bootstrap=bootstrap, seed=seed, arithmetic=arithmetic)
