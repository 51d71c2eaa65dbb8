"""Capacity at an SLO (issue 18 item 8): the monotone fit, the interpolation, and the bootstrap CI
on simulated attainment draws from a curve of known capacity."""

from __future__ import annotations

import numpy as np
import pytest

from tokcaliper.stats.capacity import capacity_at_slo, capacity_from_fit, pav_decreasing

#: A true attainment curve, linear between the tried rates, so that the interpolated
#: capacity is exactly the true one: a(3) = 99.5 %, a(4) = 97 % → a(r) = 99 % at r = 3.2.
RATES = [1.0, 2.0, 3.0, 4.0, 5.0]
TRUE = [1.0, 0.999, 0.995, 0.97, 0.8]
TRUE_CAPACITY = 3.0 + (0.995 - 0.99) / (0.995 - 0.97)
REQUESTS = 400  # measured requests per simulated run


def simulate(runs: int, seed: int) -> dict[float, list[float]]:
    """Per-run attainments: Binomial(REQUESTS, a(r)) / REQUESTS at each rate."""
    rng = np.random.default_rng(seed)
    return {r: list(rng.binomial(REQUESTS, a, runs) / REQUESTS) for r, a in zip(RATES, TRUE)}


def test_pav_pools_violators_into_their_weighted_mean():
    assert pav_decreasing([1.0, 0.9, 0.95, 0.5]) == pytest.approx([1.0, 0.925, 0.925, 0.5])
    assert pav_decreasing([0.2, 0.4], [3, 1]) == pytest.approx([0.25, 0.25])
    assert pav_decreasing([1.0, 0.8, 0.6]) == [1.0, 0.8, 0.6]  # already monotone: unchanged
    with pytest.raises(ValueError):
        pav_decreasing([1.0], [0.0])


def test_interpolation_and_the_unbracketed_ends():
    assert capacity_from_fit(RATES, TRUE, 0.99)[0] == pytest.approx(TRUE_CAPACITY)
    assert capacity_from_fit(RATES, TRUE, 0.5)[:2] == (None, "above_all")
    assert capacity_from_fit(RATES, [0.9] * 5, 0.99)[:2] == (None, "below_all")


def test_true_capacity_is_inside_the_ci_and_the_ci_shrinks_with_more_runs():
    few = capacity_at_slo(simulate(3, seed=1), 0.99, bootstrap=1000, seed=0)
    many = capacity_at_slo(simulate(24, seed=2), 0.99, bootstrap=1000, seed=0)
    for est in (few, many):
        assert est.bracket == "bracketed" and est.ci95 is not None
        assert est.ci95[0] <= TRUE_CAPACITY <= est.ci95[1], est.arithmetic
    width = lambda e: e.ci95[1] - e.ci95[0]  # noqa: E731
    assert width(many) < 0.6 * width(few), (few.ci95, many.ci95)
    # The same draws and seed give the same CI (the seed is part of the result).
    again = capacity_at_slo(simulate(3, seed=1), 0.99, bootstrap=1000, seed=0)
    assert again.ci95 == few.ci95 and few.seed == 0


def test_the_ci_covers_the_true_capacity_about_as_often_as_it_says():
    hits = 0
    trials = 40
    for k in range(trials):
        est = capacity_at_slo(simulate(8, seed=100 + k), 0.99, bootstrap=300, seed=k)
        hits += est.ci95 is not None and est.ci95[0] <= TRUE_CAPACITY <= est.ci95[1]
    assert hits >= 0.85 * trials, hits  # nominal 95 %; a percentile bootstrap of 8 runs is a bit short


def test_rates_that_do_not_bracket_say_so_with_no_number():
    est = capacity_at_slo({1.0: [1.0, 1.0], 2.0: [0.999, 1.0]}, 0.99, bootstrap=200)
    assert (est.bracket, est.capacity_rps, est.ci95) == ("above_all", None, None)
    assert "above 2 req/s" in est.arithmetic[-1]
    est = capacity_at_slo({1.0: [0.5, 0.6], 2.0: [0.2, 0.1]}, 0.99, bootstrap=200)
    assert est.bracket == "below_all" and "below 1 req/s" in est.arithmetic[-1]


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least 2 tried rates"):
        capacity_at_slo({1.0: [1.0]}, 0.99)
    with pytest.raises(ValueError, match="target"):
        capacity_at_slo({1.0: [1.0], 2.0: [0.5]}, 99)
