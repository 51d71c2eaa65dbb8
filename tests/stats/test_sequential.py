"""The sequential rule of ``--until-decided`` (stats/sequential.py): verdicts and error rates."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, stats

from tokcaliper.errors import InputError
from tokcaliper.stats.sequential import (
    boundary_t,
    confidence_sequence,
    mixture_bf,
    mixture_scale,
    sequential_step,
)


def run_until_decided(d, **kw):
    """What the runner does: one call after every new pair, stop when decided."""
    for k in range(1, len(d) + 1):
        r = sequential_step(d[:k], **kw)
        if r.decided:
            return r
    raise AssertionError("never decided, not even at max_pairs")


def test_bayes_factor_is_the_mixture_of_noncentral_t_likelihood_ratios():
    # independent check of the closed form: ∫ nct(t; ν, δ√n) N(δ; 0, g) dδ / t(t; ν)
    for t, n, g in [(1.0, 5, 0.5), (2.5, 10, 0.2), (3.0, 20, 1.0)]:
        num, _ = integrate.quad(lambda d: stats.nct.pdf(t, n - 1, d * math.sqrt(n))
                                * stats.norm.pdf(d, 0, math.sqrt(g)), -50, 50, limit=200)
        assert float(mixture_bf(t, n, g)) == pytest.approx(num / stats.t.pdf(t, n - 1), rel=1e-7)


def test_boundary_is_where_the_bayes_factor_reaches_one_over_alpha():
    g = mixture_scale(20)
    for n in (8, 10, 40, 200):
        c = float(boundary_t(n, g, 0.05))
        assert math.isfinite(c)
        assert float(mixture_bf(c, n, g)) == pytest.approx(20.0, rel=1e-9)
    assert math.isinf(float(boundary_t(2, g, 0.05)))  # one df: cannot reach 1/α
    assert math.isinf(float(boundary_t(5, g, 0.05)))  # BF ≤ (1 + 5g)² < 20 at this g


def test_mixture_scale_makes_the_sequence_narrowest_at_the_design():
    g = mixture_scale(30)
    c = float(boundary_t(30, g, 0.05))
    assert c < float(boundary_t(30, g * 3, 0.05)) and c < float(boundary_t(30, g / 3, 0.05))


@pytest.mark.parametrize("higher, expected", [(True, "faster"), (False, "slower")])
def test_known_effect_stops_early_with_the_right_verdict(higher, expected):
    rng = np.random.default_rng(11)
    d = rng.normal(math.log(1.10), 0.05, 60)  # +10%, per-pair noise 5%
    r = run_until_decided(d, max_pairs=60, higher_is_better=higher, effect=0.05)
    assert r.verdict == expected
    assert r.pairs_used < 15 and r.cs is not None and r.cs[0] > 1.01
    assert r.fixed_design_pairs is not None and r.fixed_design_pairs > r.pairs_used
    assert any("confidence sequence" in line for line in r.arithmetic)


def test_equivalence_with_a_margin_and_inconclusive_at_the_cap():
    rng = np.random.default_rng(12)
    d = rng.normal(0.0, 0.02, 80)
    r = run_until_decided(d, max_pairs=80, margin=0.03)
    assert r.verdict == "equivalent" and r.pairs_used < 80
    assert 0.97 < r.cs[0] < 1 < r.cs[1] < 1.03
    r = run_until_decided(d, max_pairs=20)  # no margin: nothing to conclude
    assert r.verdict == "inconclusive" and r.pairs_used == 20


def test_undecided_before_the_cap_says_run_another_pair():
    r = sequential_step([0.01, -0.02, 0.03], max_pairs=30)
    assert not r.decided and r.verdict is None and "another pair" in r.reason
    r = sequential_step([0.01], max_pairs=30)
    assert not r.decided and r.pairs_used == 1


def test_aa_false_positive_rate_stays_below_alpha_where_peeking_does_not():
    rng = np.random.default_rng(13)
    reps, cap, alpha = 4000, 60, 0.05
    d = rng.normal(0.0, 0.05, (reps, cap))
    g = mixture_scale(cap // 3, alpha)
    m, sd, lo, hi, p = confidence_sequence(d, g, alpha)
    band = math.log(1.01)
    decided = ((p < alpha) & ((lo > band) | (hi < -band))).any(-1)
    fpr = decided.mean()
    assert fpr <= alpha  # always-valid: ≤ α at any stopping time
    # the same paths read by a fixed-n t-test after every pair (peeking) break α badly
    k = np.arange(1, cap + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = m / (sd / np.sqrt(k))
    p_fixed = 2 * stats.t.sf(np.abs(t[:, 2:]), k[2:] - 1)
    assert (p_fixed < alpha).any(-1).mean() > 3 * alpha


def test_aa_false_positive_rate_of_the_step_function_itself():
    # the function the runner calls, on 300 A/A experiments of up to 30 pairs
    rng = np.random.default_rng(14)
    hits = 0
    for _ in range(300):
        r = run_until_decided(rng.normal(0, 0.08, 30), max_pairs=30)
        hits += r.verdict in ("faster", "slower")
    assert hits / 300 <= 0.05


def test_the_array_rule_and_the_step_function_agree():
    rng = np.random.default_rng(15)
    d = rng.normal(0.04, 0.06, (25, 40))
    g = mixture_scale(40 // 3)
    _, _, lo, hi, p = confidence_sequence(d, g, 0.05)
    for i in range(25):
        r = sequential_step(d[i, :17], max_pairs=40)
        assert r.cs is None or (math.log(r.cs[0]) == pytest.approx(lo[i, 16])
                                and math.log(r.cs[1]) == pytest.approx(hi[i, 16]))
        assert r.p_always_valid == pytest.approx(p[i, 16])


@pytest.mark.parametrize("kw, msg", [
    (dict(max_pairs=2), "--max-pairs"),
    (dict(max_pairs=3, log_ratios=[0.1] * 4), "4 pairs given"),
    (dict(max_pairs=10, log_ratios=[0.1, float("nan")]), "pair 2"),
    (dict(max_pairs=10, alpha=0.7), "--alpha"),
    (dict(max_pairs=10, design_pairs=20), "design pairs"),
    (dict(max_pairs=10, margin=1.5), "--margin"),
])
def test_bad_settings_name_the_culprit(kw, msg):
    kw.setdefault("log_ratios", [0.1, 0.2])
    with pytest.raises(InputError, match=msg):
        sequential_step(kw.pop("log_ratios"), **kw)
