"""Clumps (M2): the six-run baseline splits into 2 groups explained by the start clock; noise does not."""

import json
from pathlib import Path

import numpy as np
import pytest

from tokcaliper.errors import InputError
from tokcaliper.stats.spread import analyze_values
from tokcaliper.stats.clumps import best_split, split_p_values, split_r2
from tokcaliper.stats.covariates import spearman

DATA = json.loads((Path(__file__).parent / "data" / "data_clumps.json").read_text())


def test_baseline_forms_two_groups_explained_by_start_clock():
    runs = DATA["runs"]
    a = analyze_values(runs["per_stream_tok_s"],
                       {k: runs[k] for k in ("sm_clock_start_mhz", "rest_s", "position")},
                       metric="per_stream_decode_tok_s_mean", unit="tok/s per stream")
    lo, hi = DATA["summary"]["per_stream_decode_clusters_tok_s"]
    assert a.groups == 2 and a.split.clumped
    assert a.split.low.mean == pytest.approx(lo, abs=0.05)
    assert a.split.high.mean == pytest.approx(hi, abs=0.05)
    assert a.split.ratio == pytest.approx(hi / lo, abs=0.005)
    assert a.split.p < 0.025
    assert [r.name for r in a.covariates][0] == "sm_clock_start_mhz"
    assert a.covariates[0].rho == pytest.approx(0.943, abs=0.001)
    assert a.covariates[0].separation == 1.0
    assert a.sentence.startswith("6 runs form 2 groups (60.9 vs 72.1 tok/s per stream, ×1.18")
    assert "best explained by SM clock at start (ρ = 0.94" in a.sentence
    assert "next: rest before run" in a.sentence
    assert a.drift is not None and not a.drift.drifting


def test_r2_of_a_hand_computed_split():
    # 1,2 | 10,11: WSS = 0.5 + 0.5, TSS = 82 → R² = 1 − 1/82.
    assert split_r2([[1, 2, 10, 11]])[0] == pytest.approx(1 - 1 / 82)
    # Location and scale do not change R² (so one null distribution per n suffices).
    x = np.array([[3.0, 1.0, 4.0, 1.5, 9.0, 2.6]])
    assert split_r2(x)[0] == pytest.approx(split_r2(1000 + 7 * x)[0])


def test_pure_noise_is_one_cloud_in_at_least_95_percent():
    rng = np.random.default_rng(2026)
    noise = rng.normal(66.5, 66.5 * 0.093, size=(1000, 6))  # same n and CV as the baseline
    p = split_p_values(split_r2(noise), 6)
    called = np.mean(p < 0.025)  # analyze tests the split at α/2 = 0.025
    assert called <= 0.05
    # the calibration is not vacuous: at α = 0.5 about half are called
    assert 0.45 < np.mean(p < 0.5) < 0.55


def test_two_tight_groups_at_n5_are_found_and_one_odd_run_is_not_a_group():
    s = best_split([100.0, 101.0, 120.0, 121.0, 120.5])
    assert s.clumped and (s.low.n, s.high.n) == (2, 3)
    s1 = best_split([100.0, 100.5, 101.0, 100.2, 130.0])  # one outlier: groups need ≥ 2 runs
    assert s1.low.n >= 2 and s1.high.n >= 2


def test_constant_values_are_one_cloud_and_too_few_runs_is_an_error():
    s = best_split([5.0] * 6)
    assert not s.clumped and s.r2 == 0
    with pytest.raises(InputError, match="needs ≥ 5 runs"):
        best_split([1.0, 2.0, 3.0, 4.0])


def test_spearman_exact_p_matches_enumeration_count():
    # n = 6, one adjacent swap: ρ = 1 − 6·2/(6·35) = 0.943; orderings with |ρ| ≥ that: 2·(1 + 5) of 720.
    rho, p, how = spearman([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 6, 5])
    assert rho == pytest.approx(1 - 12 / 210)
    assert p == pytest.approx(12 / 720)
    assert how == "exact permutation"


def test_outside_load_that_separates_an_unclumped_split_ranks_before_its_mediator():
    # The figures of a CI run of the foreign-load server test: runs 2, 4, 6 with CPU burners.
    # The split misses α/2 (p ≈ 0.028), ρ of the foreign load is only −0.77, and the server's
    # own CPU (which falls because the burners take its cores) follows throughput exactly.
    tput = [12.09, 4.692, 11.94, 1.171, 12.76, 1.301]
    foreign = [0.0746, 0.968, 0.182, 0.967, 0.120, 0.993]
    server = [1.85, 0.67, 1.80, 0.50, 1.89, 0.55]
    a = analyze_values(tput, {"foreign_cpu_cores": foreign, "server_cpu_cores": server},
                       metric="aggregate_output_tok_s")
    assert not a.split.clumped and sorted(a.split.labels) == [0, 0, 0, 1, 1, 1]
    first, second = a.covariates
    assert (first.name, second.name) == ("foreign_cpu_cores", "server_cpu_cores")
    assert first.rho == pytest.approx(-0.771, abs=0.001) and abs(second.rho) == pytest.approx(1.0)
    assert first.separation == -1.0 and first.separation_p == pytest.approx(0.1)
