"""The calibration (benchmarks/calibration.py): same decisions as the product, small grid.

The calibration's vectorised decisions must be the product's decisions,
otherwise it calibrates something else: each is checked here against
``analyze_samples`` / ``adjusted_comparison`` / ``sequential_step`` on
concrete cases. Then a small A/A grid: false positives at most α plus
Monte-Carlo error and CI coverage 95 ± 1.5 points for the default analysis,
and the naive blocked-order Welch shown to exceed α under drift.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from tokcaliper.experiment.order import run_order
from tokcaliper.experiment.samples import samples_from_runs
from tokcaliper.stats.ab import analyze_samples
from tokcaliper.stats.adjust import adjusted_comparison
from tokcaliper.stats.outliers import RunTags
from tokcaliper.stats.sequential import sequential_step

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cal():
    spec = importlib.util.spec_from_file_location("calibration", ROOT / "benchmarks" / "calibration.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


CODE = {"faster": 1, "slower": -1, "inconclusive": 0}


@pytest.mark.parametrize("effect, cv, n", [(0.0, 0.05, 6), (0.08, 0.05, 10), (-0.06, 0.03, 8),
                                           (0.012, 0.004, 12), (0.02, 0.15, 5)])
def test_vectorised_decisions_are_the_products(cal, effect, cv, n):
    rng = np.random.default_rng(31)
    a, b, _, _ = cal.experiment("drift", "abba", cv, n, effect, 6, rng)
    vp, vw = cal.paired(a, b), cal.welch(a, b)
    for i in range(6):
        pr = analyze_samples(a[i], b[i], paired=True)
        assert CODE[pr.verdict] == vp.verdict[i]
        assert pr.p_raw == pytest.approx(vp.p[i], rel=1e-9)
        assert pr.decision_ci == pytest.approx((vp.lo[i], vp.hi[i]), rel=1e-12)
        w = analyze_samples(a[i], b[i], paired=False)
        assert CODE[w.verdict] == vw.verdict[i]
        assert w.p_raw == pytest.approx(vw.p[i], rel=1e-9)
        assert w.decision_ci == pytest.approx((vw.lo[i], vw.hi[i]), rel=1e-12)
        assert w.decision_ratio == pytest.approx(vw.ratio[i], rel=1e-12)


def test_some_cases_above_decide_something(cal):
    # guard: the comparison above must see decided verdicts too, not only inconclusive ones
    rng = np.random.default_rng(31)
    a, b, _, _ = cal.experiment("drift", "abba", 0.05, 10, 0.08, 6, rng)
    assert (cal.paired(a, b).verdict == 1).sum() >= 3


def test_vectorised_ancova_is_adjusted_comparison(cal):
    rng = np.random.default_rng(32)
    a, b, ca, cb = cal.experiment("realistic", "alternate", 0.15, 12, 0.05, 4, rng)
    v = cal.ancova(a, b, ca, cb)
    for i in range(4):
        r = adjusted_comparison(np.concatenate([a[i], b[i]]), ["A"] * 12 + ["B"] * 12,
                                np.concatenate([ca[i], cb[i]]), with_mde=False)
        assert r.adjusted.effect == pytest.approx(v.ratio[i], rel=1e-9)
        assert r.adjusted.ci == pytest.approx((v.lo[i], v.hi[i]), rel=1e-9)
        assert r.adjusted.p == pytest.approx(v.p[i], rel=1e-7)


def test_vectorised_sequential_is_sequential_step(cal):
    rng = np.random.default_rng(33)
    a, b, _, _ = cal.experiment("clumps", "alternate", 0.05, 30, 0.06, 12, rng)
    d = np.log(b) - np.log(a)
    verdict, used = cal.sequential(d, 30)
    for i in range(12):
        for k in range(1, 31):
            r = sequential_step(d[i, :k], max_pairs=30)
            if r.decided:
                break
        assert r.pairs_used == used[i]
        assert CODE[r.verdict] == verdict[i]
    assert (verdict == 1).sum() >= 4  # the comparison saw decisions


@pytest.mark.parametrize("order", ["alternate", "abba", "random-blocks"])
def test_positions_pair_like_the_product(cal, order):
    # the calibration pairs A's k-th run with B's k-th run: samples_from_runs pairs by block
    pa, pb = cal.positions(order, 6, rep=3)
    seq = run_order(["A", "B"], 6, order, seed=3)
    runs = [(pos, arm, float(pos)) for pos, arm in seq]  # value = position
    s = samples_from_runs(runs, ("A", "B"), order=order, n_arms=2)
    assert s.paired
    assert [int(x) for x in s.a] == list(pa)
    assert [int(x) for x in s.b] == list(pb)


def test_small_grid_keeps_error_rates_and_naive_welch_breaks_under_drift(cal):
    reps = 2000
    rows = cal.aa_grid((0.15,), (5, 20), ("normal", "lognormal", "drift"),
                       ("alternate", "abba", "random-blocks", "blocked"), reps, seed=7)
    bound = 0.05 + 3 * cal.mc_sd(0.05, reps)
    for r in rows:
        if r["order"] == "blocked" and r["shape"] == "drift":
            continue
        assert r["fpr"] <= bound, r
        assert abs(r["coverage"] - 0.95) <= 0.015, r
    naive = next(r for r in rows if r["order"] == "blocked" and r["shape"] == "drift"
                 and r["n"] == 20)
    assert naive["analysis"] == "welch"
    assert naive["fpr"] > 0.05 + 5 * cal.mc_sd(0.05, reps)
    assert naive["coverage"] < 0.90
    default = next(r for r in rows if r["order"] == "alternate" and r["shape"] == "drift"
                   and r["n"] == 20)
    assert default["fpr"] <= bound and default["analysis"] == "adjusted paired"


@pytest.mark.parametrize("order", ["alternate", "abba", "random-blocks"])
@pytest.mark.parametrize("disturb, n", [(("linear", -0.015), 10), (("step", 0.01), 7),
                                        (None, 5), (("linear", 0.03), 4)])
def test_vectorised_drift_adjusted_decisions_are_the_products(cal, order, disturb, n):
    # the default analysis with run positions: analyze_samples(tags=positions, design=order)
    rng = np.random.default_rng(41)
    a, b, _, _, pa, pb = cal.experiment_at("normal", order, 0.01, n, 0.02, 8, rng, disturb)
    v = cal.default_decision(order, a, b, pa, pb)
    for i in range(8):
        an = analyze_samples(a[i], b[i], paired=True, design=order,
                             tags=(RunTags(positions=list(map(float, pa[i]))),
                                   RunTags(positions=list(map(float, pb[i])))))
        assert an.drift is not None
        assert CODE[an.verdict] == v.verdict[i]
        assert an.p_raw == pytest.approx(v.p[i], rel=1e-7, abs=1e-15)
        assert an.decision_ci == pytest.approx((v.lo[i], v.hi[i]), rel=1e-9)


def test_drift_grid_default_design_keeps_alpha_and_coverage_alternate_unadjusted_fails(cal):
    # issue 17: A/A, CV 1%, drift 1.5%/run (up or down), 10 pairs, fixed seed
    reps = 2000
    rows = cal.drift_study(cvs=(0.01,), ns=(10,), disturbances=(("linear", 0.015),),
                           orders=("random-blocks", "alternate"), reps=reps, seed=11)
    cell = {(r["order"], r["analysis"]): r for r in rows}
    bound = 0.05 + 3 * cal.mc_sd(0.05, reps)
    default = cell[("random-blocks", "adjusted")]  # the default order and design
    assert default["fpr"] <= bound and default["p_below_alpha"] <= bound, default
    assert abs(default["coverage"] - 0.95) <= 0.02, default
    fixed = cell[("alternate", "adjusted")]  # alternate with the adjustment: valid too
    assert fixed["fpr"] <= bound and fixed["coverage"] >= 0.93, fixed
    naive = cell[("alternate", "unadjusted")]  # alternate without it: broken
    assert naive["fpr"] > bound and naive["coverage"] < 0.5, naive
