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


# ---------------------------------------------------------------- reported by commands (issue 17 item 7)


def test_restart_split_recovers_known_components_and_advises_restarts():
    from tokcaliper.stats.variance_components import restart_split

    rng = np.random.default_rng(7)
    y = nested(rng, 40, 4, 0.03, 0.01)
    sp = restart_split(y.tolist(), arm="A", metric="aggregate_output_tok_s", restart_s=60, run_s=20)
    vc = sp.components
    assert vc is not None and vc.log and sp.runs_per_restart == [4] * 40
    assert vc.ci_restart[0] <= 0.03**2 <= vc.ci_restart[1] and vc.ci_run[0] <= 0.01**2 <= vc.ci_run[1]
    assert vc.sd_restart == pytest.approx(0.03, rel=0.25) and vc.sd_run == pytest.approx(0.01, rel=0.15)
    assert sp.allocation is not None and sp.allocation.better == "restarts"
    assert "restart-level sd" in sp.summary and "more restarts shrink the MDE faster" in sp.summary


def test_restart_split_advises_more_runs_when_run_noise_dominates():
    from tokcaliper.stats.variance_components import restart_split

    y = nested(np.random.default_rng(8), 30, 3, 0.004, 0.03)
    sp = restart_split(y.tolist(), arm="B", metric="m", restart_s=120, run_s=10)
    assert sp.allocation is not None and sp.allocation.better == "runs per restart"
    assert sp.allocation.optimal_runs_per_restart > 3


def test_restart_split_says_why_when_segments_hold_one_run():
    """alternate order: every segment holds one run of an arm, so no split is possible."""
    from tokcaliper.stats.variance_components import restart_split

    sp = restart_split([[100.0], [101.0], [99.0]], arm="A", metric="m", restart_s=1, run_s=1)
    assert sp.components is None and "needs ≥ 2 restarts of ≥ 2 runs" in sp.summary
    sp = restart_split([[0.0, 0.5], [1.0, 1.5], [0.5, 1.0]], arm="A", metric="lag", restart_s=None,
                       run_s=None)
    assert sp.components is not None and not sp.components.log  # a 0: the unit, not ln y
    assert "no allocation advice" in sp.summary


def test_experiment_with_managed_arms_reports_each_arms_split(tmp_path, capsys):
    """ABBA order, managed-server arms: segments A | BB | AA | BB | AA | B…, one restart each."""
    from tokcaliper.cli import main
    from tokcaliper.experiment.analysis import analyze_experiment
    from tokcaliper.experiment.spec import parse_experiment
    from tokcaliper.load.summary import summarize
    from tokcaliper.model.run import LoadConfig, RequestRecord, Run
    from tokcaliper.store import Store

    text = ('name = "vc"\norder = "abba"\nruns_per_arm = 8\nwarmup_runs = 0\n'
            '[[arms]]\nname = "A"\nserver_cmd = "srv --port {port}"\n'
            '[[arms]]\nname = "B"\nserver_cmd = "srv --port {port} --x"\n')
    spec = parse_experiment(text, "vc.toml")
    rng = np.random.default_rng(3)
    order = spec.run_order()
    seg_of, seg, prev = {}, -1, None
    for pos, arm in order:
        if arm != prev:
            seg, prev = seg + 1, arm
        seg_of[pos] = seg
    level = {s: rng.normal(0, 0.03) for s in set(seg_of.values())}
    db = tmp_path / "vc.db"
    with Store(db) as store:
        store.create_experiment("e1", "vc", spec.model_dump(mode="json"), text, "2026-01-01T00:00:00.000Z")
        for pos, arm in order:
            v = 100 * math.exp(level[seg_of[pos]] + rng.normal(0, 0.005))
            recs = [RequestRecord(index=0, start_s=0.0, ttft_s=0.05, e2e_s=1000.0 / v, output_tokens=1000,
                                  token_count_source="usage")]
            t0 = f"2026-01-01T00:{pos:02d}:00+00:00"
            store.save_run(Run(session="e1", arm=arm, position=pos, started_at=t0,
                               finished_at=f"2026-01-01T00:{pos:02d}:10+00:00",
                               command_line="t", tool_version="0", config=LoadConfig(base_url="http://x"),
                               metrics=summarize(recs), requests=recs))
        an = analyze_experiment(store, "e1")
    assert [sp.arm for sp in an.restarts] == ["A", "B"]
    for sp in an.restarts:
        assert sp.components is not None and sp.components.restarts >= 4
        assert sp.components.icc > 0.5  # restart sd 3% against run sd 0.5%
        assert sp.run_s == 10 and sp.restart_s == 50
        assert sp.allocation is not None and sp.allocation.better == "restarts"
    assert main(["experiment", "show", "e1", "--db", str(db)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "where the variance lives" in out and "A, aggregate_output_tok_s: restart-level sd" in out
    assert "control (reference, the ratio's denominator): A — the first arm of the experiment file" in out
