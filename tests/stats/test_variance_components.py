"""Restart-level against run-level variance (stats/variance_components.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tokcaliper.errors import InputError
from tokcaliper.stats.variance_components import allocation, mde_nested, variance_components


def nested(rng, restarts, runs, sd_restart, sd_run, mean=100.0):
    r = rng.normal(0, sd_restart, restarts)
    return np.exp(math.log(mean) + r[:, None] + rng.normal(0, sd_run, (restarts, runs)))


def test_known_components_are_recovered_within_their_cis():
    rng = np.random.default_rng(21)
    y = nested(rng, 12, 6, 0.05, 0.03)
    v = variance_components(y.tolist())
    assert v.ci_restart[0] <= 0.05**2 <= v.ci_restart[1]
    assert v.ci_run[0] <= 0.03**2 <= v.ci_run[1]
    assert v.ci_icc[0] <= 0.05**2 / (0.05**2 + 0.03**2) <= v.ci_icc[1]
    assert v.sd_restart == pytest.approx(0.05, rel=0.4) and v.sd_run == pytest.approx(0.03, rel=0.15)
    assert v.p < 1e-6 and v.restarts == 12 and v.runs == 72


@pytest.mark.parametrize("restarts, runs, sd_restart, sd_run", [(8, 5, 0.05, 0.03),
                                                                 (5, 3, 0.02, 0.05)])
def test_the_cis_cover_at_their_level(restarts, runs, sd_restart, sd_run):
    rng = np.random.default_rng(22)
    reps = 400
    cov_r = cov_e = 0
    for _ in range(reps):
        v = variance_components(nested(rng, restarts, runs, sd_restart, sd_run).tolist())
        cov_r += v.ci_restart[0] <= sd_restart**2 <= v.ci_restart[1]
        cov_e += v.ci_run[0] <= sd_run**2 <= v.ci_run[1]
    # 95% CIs; 400 reps: MC sd 1.1 points
    assert 0.92 <= cov_r / reps <= 0.985
    assert 0.92 <= cov_e / reps <= 0.98


@pytest.mark.filterwarnings("ignore::statsmodels.tools.sm_exceptions.ConvergenceWarning")
def test_balanced_estimates_match_reml():
    # REML equals the ANOVA estimates in a balanced design when they are positive
    import statsmodels.formula.api as smf

    rng = np.random.default_rng(23)
    y = nested(rng, 10, 4, 0.04, 0.03)
    v = variance_components(y.tolist())
    import pandas as pd

    df = pd.DataFrame({"y": np.log(y).ravel(), "g": np.repeat(np.arange(10), 4)})
    fit = smf.mixedlm("y ~ 1", df, groups=df["g"]).fit(reml=True)
    assert v.var_restart == pytest.approx(float(fit.cov_re.iloc[0, 0]), rel=1e-3)
    assert v.var_run == pytest.approx(float(fit.scale), rel=1e-3)


def test_no_restart_variance_is_not_invented():
    rng = np.random.default_rng(24)
    y = nested(rng, 6, 5, 0.0, 0.04)
    v = variance_components(y.tolist())
    assert v.ci_restart[0] == 0.0 and v.p > 0.001
    assert v.ci_run[0] <= 0.04**2 <= v.ci_run[1]


def test_unbalanced_designs_use_n0():
    v = variance_components([[100, 102, 101], [110, 111], [95, 96, 94, 95]])
    assert v.n0 == pytest.approx((9 - (9 + 4 + 16) / 9) / 2)
    assert v.var_restart > 10 * v.var_run


def test_allocation_restarts_against_runs_per_restart():
    # restart noise dominates and restarts are cheap: add restarts
    a = allocation(0.05**2, 0.02**2, restarts=4, runs_per_restart=5, restart_s=30, run_s=20)
    assert a.better == "restarts" and a.optimal_runs_per_restart < 5
    assert a.mde_more_restarts < a.mde_now and a.mde_more_runs < a.mde_now
    # no restart noise: more runs per restart (no restart cost paid)
    a = allocation(0.0, 0.04**2, restarts=4, runs_per_restart=5, restart_s=120, run_s=20)
    assert a.better == "runs per restart" and math.isinf(a.optimal_runs_per_restart)
    # m* = √((c_r/c_e)·(σ²_e/σ²_r)) = √(9 · 4) = 6
    a = allocation(0.01**2, 0.02**2, restarts=4, runs_per_restart=5, restart_s=180, run_s=20)
    assert a.optimal_runs_per_restart == pytest.approx(6.0)
    assert mde_nested(0.01**2, 0.02**2, 4, 5) == pytest.approx(
        2 * math.sqrt(2 * (0.01**2 / 4 + 0.02**2 / 20)))


@pytest.mark.parametrize("data, msg", [([[1.0, 2.0]], "at least 2 restarts"),
                                       ([[1.0], [2.0]], "2 or more runs"),
                                       ([[1.0, -2.0], [2.0, 3.0]], "restart 1"),
                                       ([[1.0, 2.0], []], "restart 2 has no runs")])
def test_bad_input(data, msg):
    with pytest.raises(InputError, match=msg):
        variance_components(data)
