"""Adjusted comparison (ANCOVA on log throughput): coverage at the nominal rate, narrower than unadjusted."""

import math

import numpy as np
import pytest

from tokcaliper.errors import InputError
from tokcaliper.stats.adjust import adjusted_comparison

TRUE_RATIO = 1.05


def simulate(rng, n=6):
    clock = rng.normal(1380, 60, 2 * n)  # start clock varies run to run, independent of arm
    arm = np.array(["A"] * n + ["B"] * n)
    log_y = (math.log(600) + 0.0008 * (clock - 1380) + math.log(TRUE_RATIO) * (arm == "B")
             + rng.normal(0, 0.015, 2 * n))
    return np.exp(log_y), arm, clock


def test_adjusted_ci_covers_true_effect_at_nominal_rate_and_is_narrower():
    rng = np.random.default_rng(9)
    covered = covered_un = 0
    width_ratio = []
    sims = 500
    for _ in range(sims):
        y, arm, clock = simulate(rng)
        r = adjusted_comparison(y, arm, clock, covariate_name="sm_clock_start_mhz", with_mde=False)
        covered += r.adjusted.ci[0] <= TRUE_RATIO <= r.adjusted.ci[1]
        covered_un += r.unadjusted.ci[0] <= TRUE_RATIO <= r.unadjusted.ci[1]
        width_ratio.append(math.log(r.adjusted.ci[1] / r.adjusted.ci[0])
                           / math.log(r.unadjusted.ci[1] / r.unadjusted.ci[0]))
    assert abs(covered / sims - 0.95) <= 0.03
    assert abs(covered_un / sims - 0.95) <= 0.03
    assert np.median(width_ratio) < 0.5  # clock explains most of the variance here


def test_one_case_reports_both_results_with_shrink_and_mde():
    y, arm, clock = simulate(np.random.default_rng(1))
    r = adjusted_comparison(y, arm, clock, covariate_name="sm_clock_start_mhz")
    assert r.arms == ("A", "B") and r.n == (6, 6) and r.log
    assert r.adjusted.df == 9 and r.unadjusted.df == 10
    assert r.adjusted.residual_cv < r.unadjusted.residual_cv
    assert r.cv_shrink == pytest.approx(1 - r.adjusted.residual_cv / r.unadjusted.residual_cv)
    assert r.adjusted.mde_power < r.unadjusted.mde_power
    assert 0.5 < r.variance_explained < 1
    assert r.adjusted.slope == pytest.approx(0.0008, rel=0.3)
    # unadjusted log model = pooled two-sample t on log values
    from scipy import stats
    t = stats.ttest_ind(np.log(y[arm == "B"]), np.log(y[arm == "A"]))
    assert r.unadjusted.p == pytest.approx(t.pvalue)
    assert any("log(metric)" in line for line in r.arithmetic)


def test_covariate_caused_by_arm_is_warned_and_bad_input_raises():
    y = [600, 610, 590, 605, 640, 650, 645, 655]
    arm = ["A"] * 4 + ["B"] * 4
    clock = [1300, 1310, 1305, 1295, 1400, 1410, 1395, 1405]
    r = adjusted_comparison(y, arm, clock, covariate_name="clk")
    assert any(w.code == "covariate-differs-by-arm" and "differs between arms" in w.message for w in r.warnings)
    with pytest.raises(InputError, match="exactly two arms"):
        adjusted_comparison(y, ["A"] * 8, clock)
    with pytest.raises(InputError, match="same value in every run"):
        adjusted_comparison(y, arm, [1] * 8)
    with pytest.raises(InputError, match="constant within each arm"):
        adjusted_comparison(y, arm, [1] * 4 + [2] * 4)
    with pytest.raises(InputError, match="> 0"):
        adjusted_comparison([0, *y[1:]], arm, clock)
