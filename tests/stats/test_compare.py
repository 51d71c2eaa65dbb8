import itertools
import math

import pytest

from tokcaliper.errors import InputError
from tokcaliper.model.verdict import Status
from tokcaliper.stats.compare import (
    compare_arms,
    f_test_from_summary,
    pair_ratios,
    single_number_comparison,
    variance_test,
    welch,
    welch_from_summary,
)


@pytest.fixture
def power_cap(seed):
    case = seed["power_cap_ab"]
    return case["arms"]["200W"], case["arms"]["180W"], case["expected"]


def test_welch_power_cap_matches_published(power_cap, tol):
    a, b, exp = power_cap
    w = welch(a, b)
    assert abs(w.t - exp["welch_t"]) <= tol(exp["welch_t"], decimals=2)  # published "0.90"
    assert (w.p < 0.05) is exp["significant_at_0.05"]
    assert abs(w.ratio - exp["ratio_180_over_200"]) <= tol(exp["ratio_180_over_200"])
    assert w.ratio_ci95[0] < w.ratio < w.ratio_ci95[1]
    assert w.ratio_ci95[0] < 1 < w.ratio_ci95[1]  # not significant ⇒ CI spans 1
    assert w.df == pytest.approx(7.73, abs=0.01)
    assert w.diff == pytest.approx(w.mean_b - w.mean_a)


def test_pair_ratios_match_published(power_cap, tol):
    a, b, exp = power_cap
    steps = pair_ratios(a, b)
    published = exp["pair_ratios_180_over_200"]
    assert [s.k for s in steps] == [1, 2, 3, 4, 5]
    for s, r in zip(steps, published):
        assert abs(s.ratio - r) <= tol(r)
    # METHODS.md M4: "the first two pairs said −21%"; the full run says ~ (no difference)
    assert round(steps[1].cum_ratio - 1, 2) == -0.21
    assert steps[0].t is None and steps[0].change == "insufficient data"
    assert steps[-1].change == "no significant difference"
    assert steps[-1].p == pytest.approx(welch(a, b).p)
    # "the last three said +4%"
    assert round(welch(a[2:], b[2:]).ratio - 1, 2) == 0.04


def test_compare_arms_power_cap_verdict(power_cap):
    a, b, _ = power_cap
    c = compare_arms(a, b, names=("200W", "180W"), unit="tok/s")
    assert c.change == "no significant difference"
    assert c.verdict.status is Status.NA
    assert c.verdict.summary.startswith("~ no significant difference: 180W/200W = 0.932")
    assert "(p=0.39, n=5+5)" in c.verdict.summary
    assert c.stably_worse is None
    text = "\n".join(c.verdict.arithmetic)
    assert "0.835 0.744 1.112 1.049 0.982" in text
    assert "= 0.90, df = 7.7" in text
    assert "CV 12.9%" in text and "CV 11.5%" in text


def test_summary_welch_logits_chunk(seed):
    case = seed["summary_stat_comparisons"]["logits_chunk"]
    (m64, s64), (m128, s128) = case["64"], case["128"]
    w = welch_from_summary(m64, s64, 4, m128, s128, 4)
    # From the rounded summary the exact value is −1.859; inputs rounded to 0.1
    # allow only −1.866…−1.853, so the published −1.84 came from the unpublished
    # raw runs. Accept the published value within 0.03 and pin our own exactly.
    assert w.t == pytest.approx(-1.859, abs=1e-3)
    assert abs(w.t - case["welch_t_64_vs_128"]) < 0.03
    assert w.p > 0.05  # "did not pass the significance line"
    # M9: test the variances too — the F-test does see the narrow band
    f = f_test_from_summary(s64, 4, s128, 4)
    assert f.f_p < 0.05 and f.sd_ratio == pytest.approx(50.2 / 6.9)


def test_summary_welch_layer_split_max_abs_t(seed, tol):
    case = seed["summary_stat_comparisons"]["layer_split"]
    arms = {k: v for k, v in case.items() if k != "max_abs_welch_t"}
    ts = [welch_from_summary(*arms[x], 4, *arms[y], 4).t for x, y in itertools.combinations(arms, 2)]
    assert len(ts) == 3
    assert abs(max(map(abs, ts)) - case["max_abs_welch_t"]) <= tol(case["max_abs_welch_t"])


STABLE = [446.0, 452.0, 458.0, 462.0]
NOISY = [450.0, 470.0, 510.0, 571.0]


def test_stably_worse_flag_when_t_not_significant():
    c = compare_arms(NOISY, STABLE, names=("128", "64"), unit="tok/s")
    assert c.welch.p > 0.05
    assert c.change == "no significant difference"
    assert c.stably_worse == "64"
    assert c.verdict.status is Status.WARN
    assert "64 is stably worse" in c.verdict.summary
    assert min(p for p in (c.variance.bf_p, c.variance.f_p) if p is not None) < 0.05


def test_no_flag_when_low_variance_arm_is_better():
    c = compare_arms(NOISY, [s + 200 for s in STABLE], names=("128", "64"))
    assert c.stably_worse is None
    # and for latencies (lower is better) a narrow band *above* is the bad one
    lat = compare_arms([100.0, 80.0, 130.0, 95.0], [141.0, 139.0, 140.0, 142.0],
                       names=("old", "new"), higher_is_better=False)
    assert lat.stably_worse == "new"


def test_improved_and_regressed():
    base = [100.0, 101.0, 99.0, 100.5, 99.5]
    up = [110.0, 111.0, 109.0, 110.5, 109.5]
    c = compare_arms(base, up)
    assert c.change == "improved" and c.verdict.status is Status.PASS
    assert c.verdict.summary.startswith("improved: B/A = 1.100 (+10.0%)")
    assert c.welch.ratio_ci95[0] > 1
    r = compare_arms(base, up, higher_is_better=False)
    assert r.change == "regressed" and r.verdict.status is Status.FAIL


def test_insufficient_data_single_runs():
    c = compare_arms([100.0], [120.0])
    assert c.change == "insufficient data" and c.welch is None
    assert c.verdict.status is Status.NA and "n=1+1" in c.verdict.summary


def test_variance_test_uses_brown_forsythe():
    from scipy.stats import levene

    v = variance_test(NOISY, STABLE)
    ref = levene(NOISY, STABLE, center="median")
    assert v.bf_w == pytest.approx(ref.statistic) and v.bf_p == pytest.approx(ref.pvalue)


def test_errors():
    with pytest.raises(InputError, match="at least 2 runs"):
        welch([1.0], [1.0, 2.0])
    with pytest.raises(InputError, match="equal run counts"):
        pair_ratios([1.0, 2.0], [1.0])
    with pytest.raises(InputError):
        welch([], [1.0, 2.0])
    with pytest.raises(InputError):
        welch_from_summary(1.0, -1.0, 4, 1.0, 1.0, 4)


def test_single_number_comparison_m10():
    v = single_number_comparison(190.0, 212.7, 0.15)
    assert v.status is Status.WARN and v.summary.startswith("anecdote")
    assert "42%" in v.summary or any("42%" in a for a in v.arithmetic)
    assert single_number_comparison(100.0, 150.0, 0.15).status is Status.PASS
    assert math.isclose(v.inputs["local_cv"], 0.15)


def test_latencies_in_seconds_keep_their_digits():
    # TTFT in seconds: the arithmetic used to print "ratio new/old = 0.0 / 0.0 = 1.077"
    old = [0.0114, 0.0116, 0.0112, 0.0115, 0.0113]
    new = [0.0123, 0.0121, 0.0125, 0.0122, 0.0124]
    c = compare_arms(old, new, names=("old", "new"), unit="s", higher_is_better=False)
    text = "\n".join(c.verdict.arithmetic)
    assert "0.0 /" not in text and "= 0.0 " not in text
    assert "ratio new/old = 12.30 ms / 11.40 ms = 1.079 (+7.9%)" in text
    assert "old: mean 11.40 ms (n=5, CV 1.4%, min 11.2, max 11.6)" in text
    assert "Welch t (in ms) = (11.40 − 12.30) / √(0.158²/5 + 0.158²/5) = -0.900 / 0.100 = -9.00" in text
    assert c.change == "regressed"
    assert c.verdict.summary.startswith("regressed: new/old = 1.079 (+7.9%)")
    single = compare_arms([0.0114], [0.0123], names=("old", "new"), unit="s")
    assert "ratio new/old = 12.30 ms / 11.40 ms = 1.079" in single.verdict.arithmetic
