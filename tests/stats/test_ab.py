"""A/B analysis: paired log ratios, TOST, Holm, the verdict gate, single numbers.

Reference numbers: tests/stats/data/ab_reference.json (provenance inside).
"""

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as st
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import ttost_ind

from tokcaliper.errors import InputError
from tokcaliper.model.verdict import Status
from tokcaliper.stats.ab import (
    analyze_samples,
    analyze_summary,
    compare_metrics,
    n_pairs_power,
    single_numbers,
)
from tokcaliper.stats.equivalence import tost_paired, tost_ratio_of_means
from tokcaliper.stats.multiple import holm
from tokcaliper.stats.paired import paired_log_ratio
from tokcaliper.stats.verdict_gate import gate, reading

REF = json.loads((Path(__file__).parent / "data" / "ab_reference.json").read_text(encoding="utf-8"))


@pytest.fixture
def power_cap():
    case = REF["power_cap_ab"]
    return case["arms"]["200W"], case["arms"]["180W"], case["expected"]


# ---------------------------------------------------------------- power-cap A/B (M4)


def test_power_cap_ab_paired(power_cap):
    a, b, exp = power_cap
    an = analyze_samples(a, b, ("200W", "180W"), paired=True, unit="tok/s")
    # Welch shown beside the paired analysis
    assert an.welch.t == pytest.approx(exp["welch_t"], abs=0.01)
    assert an.welch.p == pytest.approx(0.39, abs=0.01)
    assert an.ratio_of_means == pytest.approx(exp["ratio_180_over_200"], abs=5e-4)
    assert an.decided_by == "paired"
    assert an.verdict == "inconclusive"
    assert [round(r, 3) for r in an.paired.ratios] == exp["pair_ratios_180_over_200"]
    # paired t on log ratios, computed independently
    d = np.log(b) - np.log(a)
    t_ref = -d.mean() / (d.std(ddof=1) / math.sqrt(5))
    assert an.paired.t == pytest.approx(t_ref, rel=1e-12)
    assert an.paired.p == pytest.approx(2 * st.t.sf(abs(t_ref), 4), rel=1e-9)
    assert an.paired.ratio == pytest.approx(math.exp(d.mean()))
    # the running verdict: after two pairs it read "slower by 21%", at the end −6.6%
    steps = an.running
    assert [s.k for s in steps] == [1, 2, 3, 4, 5]
    assert steps[0].verdict == "insufficient data"
    assert steps[1].reading == "slower by 21.2%"
    assert steps[-1].reading == "slower by 6.6%"
    assert steps[1].text != steps[-1].text
    assert steps[1].cum_ratio == pytest.approx(math.sqrt(0.835 * 0.744), abs=1e-3)
    assert steps[-1].p == pytest.approx(an.paired.p)
    # never "no difference"; says what these runs can resolve and what it would take
    s = an.report.summary
    assert "no difference" not in s and "no significant" not in s
    assert "changes below ±15.9% (noise band ±1.0% + MDE ±14.9%) cannot be called with these runs" in s
    assert f"about {an.runs_needed} pairs would be needed for a verdict on ±6.6%" in s
    assert an.mde == pytest.approx(2 * d.std(ddof=1) / math.sqrt(5))
    assert an.report.status is Status.NA
    assert an.stably_slow is None
    text = "\n".join(an.report.arithmetic)
    assert "0.835 0.744 1.112 1.049 0.982" in text and "= 0.90, df = 7.7" in text


def test_power_cap_unpaired_same_tests(power_cap):
    a, b, _ = power_cap
    an = analyze_samples(a, b, ("200W", "180W"))
    assert an.decided_by == "welch" and an.paired is None and an.running is None
    assert an.p_used == pytest.approx(st.ttest_ind(a, b, equal_var=False).pvalue)
    assert an.verdict == "inconclusive"
    # Brown–Forsythe from scipy
    assert an.variance.bf_p == pytest.approx(st.levene(a, b, center="median").pvalue)
    # MDE = 2·√(CV_a²/5 + CV_b²/5)
    assert an.mde == pytest.approx(2 * math.sqrt((an.a.cv**2 + an.b.cv**2) / 5))


# ---------------------------------------------------------------- summary statistics (M9)


def test_layer_splits_from_summary_small_t():
    case = REF["summary_stat_comparisons"]["layer_split"]
    arms = {k: v for k, v in case.items() if "/" in k}
    ts = []
    for (na, (ma, sa)), (nb, (mb, sb)) in itertools.combinations(arms.items(), 2):
        an = analyze_summary((ma, sa, 4), (mb, sb, 4), (na, nb))
        ts.append(abs(an.welch.t))
        assert an.verdict == "inconclusive"
        assert an.stably_slow is None
    assert len(ts) == 3
    assert max(ts) <= case["max_abs_welch_t"] + 0.005
    assert max(ts) == pytest.approx(case["max_abs_welch_t"], abs=0.01)


def test_logits_chunk_64_is_stably_slow():
    case = REF["summary_stat_comparisons"]["logits_chunk"]
    (m64, s64), (m128, s128), (m256, s256) = case["64"], case["128"], case["256"]
    an = analyze_summary((m64, s64, 4), (m128, s128, 4), ("64", "128"))
    assert an.welch.t == pytest.approx(case["welch_t_64_vs_128"], abs=0.03)
    assert an.verdict == "inconclusive"  # t not significant…
    assert an.stably_slow == "64"  # …but the narrow band below the others is flagged
    assert an.report.status is Status.WARN and "64 is stably slow" in an.report.summary
    assert an.variance.f_p == pytest.approx(0.0085, abs=5e-4) and an.variance.bf_p is None
    # flagged whichever arm is the baseline, and against the 256 arm too
    assert analyze_summary((m128, s128, 4), (m64, s64, 4), ("128", "64")).stably_slow == "64"
    assert analyze_summary((m256, s256, 4), (m64, s64, 4), ("256", "64")).stably_slow == "64"
    # for a lower-is-better metric a narrow band of *low* values is not "slow"
    assert analyze_summary((m64, s64, 4), (m128, s128, 4), ("64", "128"),
                           higher_is_better=False).stably_slow is None


# ---------------------------------------------------------------- the verdict gate


def _clear_ab(effect: float, cv: float = 0.01, n: int = 5):
    rng = np.random.default_rng(7)
    a = 100 * (1 + cv * rng.standard_normal(n))
    b = 100 * (1 + effect) * (1 + cv * rng.standard_normal(n))
    return a, b


@pytest.mark.parametrize("paired", [False, True])
def test_clear_effect_direction_follows_the_metric(paired):
    a, b = _clear_ab(0.10)
    up = analyze_samples(a, b, paired=paired, higher_is_better=True)
    down = analyze_samples(a, b, paired=paired, higher_is_better=False)
    assert up.verdict == "faster" and down.verdict == "slower"
    assert up.report.status is Status.PASS and down.report.status is Status.FAIL
    assert up.gate.summary.startswith("faster by 1")
    assert up.decision_ci[0] > 1.01
    # the mirror image: b 10% lower
    a2, b2 = _clear_ab(-0.10)
    assert analyze_samples(a2, b2, paired=paired, higher_is_better=True).verdict == "slower"
    assert analyze_samples(a2, b2, paired=paired, higher_is_better=False).verdict == "faster"


def test_significant_but_inside_noise_band_is_inconclusive():
    # a 0.5% change measured very precisely: p tiny, but the CI lies inside ±1%
    a, b = _clear_ab(0.005, cv=0.0005, n=10)
    an = analyze_samples(a, b)
    assert an.p_used < 1e-6
    assert an.verdict == "inconclusive"
    assert "noise band" in an.gate.summary
    # with a band of 0.1% the same data are "faster"
    assert analyze_samples(a, b, noise_band=0.001).verdict == "faster"


def test_gate_rules_directly():
    kw = dict(alpha=0.05, higher_is_better=True, noise_band=0.01)
    assert gate(ratio=1.05, ci=(1.02, 1.08), p=0.001, **kw).verdict == "faster"
    assert gate(ratio=1.05, ci=(1.005, 1.08), p=0.001, **kw).verdict == "inconclusive"
    assert gate(ratio=1.05, ci=(1.02, 1.08), p=0.06, **kw).verdict == "inconclusive"
    assert gate(ratio=0.95, ci=(0.92, 0.98), p=0.001, **kw).verdict == "slower"
    g = gate(ratio=1.0, ci=(0.9, 1.1), p=0.9, mde=0.12, runs_needed=40, target_effect=0.05, **kw)
    assert g.summary.endswith("changes below ±13.0% (noise band ±1.0% + MDE ±12.0%) cannot be called "
                              "with these runs; about 40 runs per arm would be needed to resolve ±5.0%")
    assert reading(0.789, True, 0.01) == "slower by 21.1%"
    assert reading(0.789, False, 0.01) == "faster by 21.1%"
    assert reading(1.004, True, 0.01) == "within the ±1.0% noise band"


# ---------------------------------------------------------------- TOST (Schuirmann 1987)


def _tight(n: int = 8, cv: float = 0.002, seed: int = 3):
    rng = np.random.default_rng(seed)
    return 100 * (1 + cv * rng.standard_normal(n)), 100 * (1 + cv * rng.standard_normal(n))


def test_tost_passes_on_tight_identical_data_and_fails_on_wide():
    a, b = _tight()
    for paired in (False, True):
        an = analyze_samples(a, b, paired=paired, margin=0.02)
        assert an.verdict == "equivalent", paired
        assert an.tost.p < 0.05 and an.tost.bounds == (0.98, 1.02)
        assert an.gate.summary.startswith("equivalent within ±2.0%")
    wa, wb = _tight(cv=0.15)
    for paired in (False, True):
        an = analyze_samples(wa, wb, paired=paired, margin=0.02)
        assert an.tost.p > 0.05 and an.verdict == "inconclusive"
    # no margin → never "equivalent", whatever the data
    assert analyze_samples(a, b).verdict == "inconclusive"


def test_tost_paired_matches_statsmodels_on_logs_and_the_90pct_ci():
    a, b = _tight(cv=0.01)
    t = tost_paired(a, b, 0.02)
    # duality: TOST passes ⇔ the 90% CI lies inside the bounds
    assert t.equivalent == (t.bounds[0] < t.ci[0] and t.ci[1] < t.bounds[1])
    pr = paired_log_ratio(a, b)
    q = st.t.ppf(0.95, pr.df)
    assert t.ci[0] == pytest.approx(math.exp(pr.mean_log - q * pr.se_log))
    p_low = st.t.sf((pr.mean_log - math.log(0.98)) / pr.se_log, pr.df)
    p_upp = st.t.cdf((pr.mean_log - math.log(1.02)) / pr.se_log, pr.df)
    assert t.p == pytest.approx(max(p_low, p_upp), rel=1e-9)


def test_tost_ratio_of_means_close_to_statsmodels_on_logs():
    # The delta method on the ratio of means and a Welch TOST on ln values
    # estimate nearly the same thing for small CVs.
    a, b = _tight(n=10, cv=0.01, seed=5)
    mine = tost_ratio_of_means(a.mean(), a.std(ddof=1), 10, b.mean(), b.std(ddof=1), 10, 0.01)
    p_sm = ttost_ind(np.log(b), np.log(a), math.log(0.99), math.log(1.01), usevar="unequal")[0]
    assert mine.p == pytest.approx(p_sm, abs=0.01)


# ---------------------------------------------------------------- Holm (1979)


def test_holm_matches_statsmodels_and_the_hand_formula():
    ps = [0.01, 0.04, 0.03, 0.005]
    assert holm(ps) == pytest.approx(list(multipletests(ps, method="holm")[1]))
    # by hand: sorted 0.005·4, 0.01·3, 0.03·2, max(0.04·1, 0.06) → original order
    assert holm(ps) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    rng = np.random.default_rng(1)
    ps = list(rng.uniform(0, 0.2, 7))
    assert holm(ps) == pytest.approx(list(multipletests(ps, method="holm")[1]))
    with pytest.raises(InputError):
        holm([0.1, 1.5])


def test_several_metrics_are_holm_corrected():
    a, b = _clear_ab(0.10)
    x, y = _clear_ab(0.0, cv=0.05)
    m1 = analyze_samples(a, b, metric="aggregate_output_tok_s")
    m2 = analyze_samples(x, y, metric="ttft_p50_ms", higher_is_better=False)
    mc = compare_metrics([m1, m2])
    assert mc.holm and "Holm" in mc.note
    adj = multipletests([m1.p_raw, m2.p_raw], method="holm")[1]
    assert [m.p_used for m in mc.metrics] == pytest.approx(list(adj))
    assert all(m.holm_m == 2 for m in mc.metrics)
    assert "Holm, 2 metrics" in mc.metrics[0].gate.summary
    assert mc.metrics[0].verdict == "faster"
    # a borderline p that passes alone fails after the correction
    gate_alone = gate(ratio=1.05, ci=(1.02, 1.08), p=0.03, alpha=0.05, higher_is_better=True)
    assert gate_alone.verdict == "faster"
    border = m1.model_copy(update={"p_raw": 0.03})
    other = m2.model_copy(update={"p_raw": 0.04})
    out = compare_metrics([border, other])
    assert out.metrics[0].p_used == pytest.approx(0.06) and out.metrics[0].verdict == "inconclusive"


# ---------------------------------------------------------------- single numbers (M10)


def test_single_numbers_never_get_a_verdict():
    sn = single_numbers(500, 560, 0.15)
    assert sn.verdict is None
    assert sn.mde_1 == pytest.approx(2 * 0.15 * math.sqrt(2))
    assert sn.exceeds_mde is False and "42%" in sn.report.summary
    assert single_numbers(500, 800, 0.15).exceeds_mde is True
    no_cv = single_numbers(500, 560)
    assert no_cv.mde_1 is None and no_cv.verdict is None and "CV is unknown" in no_cv.report.summary
    with pytest.raises(InputError):
        single_numbers(0, 560)


# ---------------------------------------------------------------- inputs


def test_bad_inputs_raise_input_error():
    with pytest.raises(InputError, match="at least 2 runs"):
        analyze_samples([1.0], [2.0, 3.0])
    with pytest.raises(InputError, match="equal run counts"):
        analyze_samples([1.0, 2.0], [2.0, 3.0, 4.0], paired=True)
    with pytest.raises(InputError, match="positive"):
        analyze_samples([1.0, -2.0], [2.0, 3.0])
    with pytest.raises(InputError, match="--margin"):
        analyze_samples([1.0, 2.0], [2.0, 3.0], margin=1.5)
    with pytest.raises(InputError, match="do not vary"):
        analyze_samples([100.0, 100.0], [100.0, 100.0])
    with pytest.raises(InputError, match="do not vary"):
        analyze_summary((100.0, 0.0, 4), (110.0, 0.0, 4))
    with pytest.raises(InputError, match="pair ratios are equal"):
        analyze_samples([100.0, 90.0, 95.0], [110.0, 99.0, 104.5], paired=True)
    with pytest.raises(InputError, match="n must be an integer"):
        analyze_summary((1.0, 0.1, 1), (1.0, 0.1, 4))


def test_pairs_needed_matches_statsmodels_power():
    from statsmodels.stats.power import TTestPower

    n = n_pairs_power(0.1664, 0.066)
    d = math.log(1.066) / 0.1664
    assert TTestPower().power(d, n, 0.05) >= 0.8 > TTestPower().power(d, n - 1, 0.05)


def test_two_runs_per_arm_get_no_brown_forsythe_test():
    """At n = 2 both deviations from the median are equal: W is infinite and p ≈ 1e-32,
    which would flag a 'stably slow' arm from nothing. The test is skipped instead."""
    an = analyze_samples([30.0, 59.57], [13.56, 75.13], ("A", "B"), paired=True, margin=0.2,
                         metric="aggregate_output_tok_s", unit="tok/s")
    assert an.verdict == "inconclusive"
    assert an.variance.bf_w is None and an.variance.bf_p is None
    assert an.stably_slow is None


# ---------------------------------------------------------------- runs needed count the gate (issue 17 item 3)


def test_zero_variance_arm_gets_sensible_runs_needed():
    """`--a 100,100,100 --b 101.5,102,102.5` advised "about 2 runs per arm" with 3 there."""
    an = analyze_samples([100, 100, 100], [101.5, 102, 102.5])
    assert an.verdict == "inconclusive"
    assert an.runs_needed is not None and an.runs_needed > 3
    assert f"about {an.runs_needed} runs per arm would be needed for a verdict on ±2.0%" in an.report.summary
    assert any("arm A did not vary (sd 0 over 3 runs)" in n for n in an.notes)


def test_runs_needed_is_the_n_at_which_the_gated_verdict_has_power_08():
    """Issue 17: for a true +1.2% over 10 pairs it said "about 15 runs" — 7.6% gated power there."""
    from tokcaliper.stats.resolution import ratio_distance, verdict_power

    rng = np.random.default_rng(5)
    a = 100 * (1 + 0.01 * rng.standard_normal(10))
    b = 101.2 * (1 + 0.01 * rng.standard_normal(10))
    an = analyze_samples(list(a), list(b), paired=True, effect=0.012)
    n = an.runs_needed
    assert n is not None and n > 15
    dist = ratio_distance(an.target_effect, 0.01)
    assert verdict_power(dist, an.paired.sd_log, n) >= 0.8 > verdict_power(dist, an.paired.sd_log, n - 1)
    assert "cannot be called with these runs" in an.report.summary


def test_observed_change_inside_the_band_says_no_verdict_is_reachable():
    rng = np.random.default_rng(6)
    a = 100 * (1 + 0.02 * rng.standard_normal(8))
    b = a * (1 + 0.004 * rng.standard_normal(8)) * 1.002
    an = analyze_samples(list(a), list(b), paired=True)
    assert abs(an.decision_ratio - 1) < 0.01 and an.verdict == "inconclusive"
    assert "no faster/slower verdict is reachable at any n for ±1.0%" in an.report.summary
    assert "--margin E" in an.report.summary
    eff = analyze_samples(list(a), list(b), paired=True, effect=0.03)
    assert f"about {eff.runs_needed} pairs would be needed" in eff.report.summary or \
        "already give a verdict" in eff.report.summary
