"""Drift over run order (Mann–Kendall): a trend is flagged with the interleave advice; noise is not."""

import numpy as np
import pytest

from tokcaliper.errors import InputError
from tokcaliper.stats.spread import analyze_values
from tokcaliper.stats.drift import INTERLEAVE_ADVICE, mann_kendall


def test_monotonic_trend_over_10_runs_is_flagged_with_advice():
    rng = np.random.default_rng(7)
    vals = 700 * (1 - 0.02 * np.arange(10)) * (1 + 0.01 * rng.standard_normal(10))  # −2%/run
    d = mann_kendall(vals, alpha=0.025)
    assert d.drifting and d.direction == "down" and d.advice == INTERLEAVE_ADVICE
    assert d.slope_per_run_rel == pytest.approx(-0.02, abs=0.006)
    a = analyze_values(vals.tolist(), {"position": list(range(10))}, metric="tok_s")
    assert "Drift over run order" in a.sentence
    assert any("interleave" in x for x in a.advice)


def test_mann_kendall_s_by_hand():
    # pairs (i<j): sign(x_j − x_i) for 1,3,2,4,5 → +1+1+1+1 −1+1+1 +1+1 +1 = 8
    assert mann_kendall([1, 3, 2, 4, 5]).s == 8


def test_noise_false_positive_rate_is_at_most_alpha():
    rng = np.random.default_rng(11)
    alpha = 0.05
    flagged = sum(mann_kendall(rng.normal(100, 10, 10), alpha=alpha).drifting for _ in range(1000))
    # exact test: size ≤ α; allow 2 binomial standard errors of 1000 draws
    assert flagged / 1000 <= alpha + 2 * (alpha * (1 - alpha) / 1000) ** 0.5


def test_bad_input():
    with pytest.raises(InputError, match="needs ≥ 5 runs"):
        mann_kendall([1, 2, 3])
    with pytest.raises(InputError, match="share a run position"):
        mann_kendall([1, 2, 3, 4, 5], positions=[0, 1, 1, 2, 3])
