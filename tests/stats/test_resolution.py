import math

import pytest
from statsmodels.stats.power import TTestIndPower

from tokcaliper.errors import InputError
from tokcaliper.model.verdict import Status
from tokcaliper.stats.resolution import (
    achieved_power_of_quick_formula,
    mde_power,
    mde_quick,
    n_power,
    n_quick,
    n_quick_raw,
    plan,
    power_at,
)


def test_mde_examples_all_seven(seed, tol):
    cases = seed["mde_examples"]["cases"]
    assert len(cases) == 7
    for c in cases:
        if "mde" in c:
            got = mde_quick(c["cv"], c["n"])
            assert abs(got - c["mde"]) <= tol(c["mde"]), c
        else:
            raw = n_quick_raw(c["cv"], c["delta"])
            # the source rounds 8·(4/5)² = 5.12 to "≈ 5"; the planning n is the ceiling
            assert round(raw) == c["n_needed"], c
            assert n_quick(c["cv"], c["delta"]) == math.ceil(raw - 1e-9)


def test_quick_n_exact_values_survive_float_error():
    assert n_quick(0.15, 0.10) == 18  # 17.999999999999996 in floats
    assert n_quick(0.15, 0.05) == 72
    assert n_quick(0.04, 0.05) == 6


@pytest.mark.parametrize("cv,delta", [(0.15, 0.05), (0.15, 0.10), (0.04, 0.05), (0.009, 0.02), (0.3, 0.1)])
@pytest.mark.parametrize("alpha,power", [(0.05, 0.8), (0.01, 0.9)])
def test_power_n_agrees_with_statsmodels_and_exceeds_quick(cv, delta, alpha, power):
    expected = math.ceil(TTestIndPower().solve_power(effect_size=delta / cv, alpha=alpha, power=power,
                                                     ratio=1.0, alternative="two-sided"))
    n = n_power(cv, delta, alpha, power)
    assert n == max(2, expected)
    assert n > n_quick(cv, delta)
    assert power_at(cv, delta, n, alpha) >= power
    if n > 2:
        assert power_at(cv, delta, n - 1, alpha) < power


def test_power_n_reference_value():
    # d = 1/3, alpha 0.05, power 0.8 → 142.2 per arm (standard two-sample table value)
    assert n_power(0.15, 0.05) == 143


def test_power_n_huge_effect_falls_back_to_two():
    assert n_power(0.01, 0.5) == 2  # statsmodels' root finder returns NaN here
    assert power_at(0.01, 0.5, 2) == pytest.approx(1.0)


def test_quick_formula_has_about_half_power():
    p = achieved_power_of_quick_formula(0.15, 0.05)
    assert 0.45 < p < 0.56
    assert p == pytest.approx(power_at(0.15, 0.05, 72))


def test_mde_power_round_trips_and_exceeds_quick():
    m = mde_power(0.15, 5)
    assert m == pytest.approx(0.3037, abs=5e-4)
    assert m > mde_quick(0.15, 5)
    assert power_at(0.15, m, 5) == pytest.approx(0.8, abs=1e-6)


@pytest.mark.parametrize(
    "call,option",
    [
        (lambda: mde_quick(-1, 5), "--cv"),
        (lambda: mde_quick(0.1, 0), "--n"),
        (lambda: n_quick(0.1, 0), "--effect"),
        (lambda: n_power(0.1, 0.05, alpha=1.2), "--alpha"),
        (lambda: n_power(0.1, 0.05, power=0), "--power"),
        (lambda: mde_power(0.1, 1), "--n"),
        (lambda: plan(0.1, 0.05, run_seconds=-3), "--run-seconds"),
        (lambda: plan(0.1, 0.05, cooldown=-1), "--cooldown"),
    ],
)
def test_validation_names_the_option(call, option):
    with pytest.raises(InputError, match=f"^{option} "):
        call()


def test_cv_error_message_text():
    with pytest.raises(InputError) as e:
        mde_quick(-1, 5)
    assert str(e.value) == "--cv must be > 0, got -1"


def test_plan_dont_run_case():
    p = plan(0.15, 0.05, n=5, run_seconds=60)
    assert p.verdict.status is Status.FAIL
    assert p.mde_quick_n == pytest.approx(0.1897, abs=1e-4)
    assert (p.n_quick, p.n_power) == (72, 143)
    assert p.budget_seconds_n == 2 * 5 * 60
    assert p.budget_seconds_quick == 2 * 72 * 60
    assert p.budget_seconds_power == 2 * 143 * 60
    s = p.verdict.summary
    assert s.startswith("don't run: a 5% effect is below what 5 runs per arm can call at CV 15% "
                        "(noise band 1% + MDE 19.0% = 20.0%)")
    assert "a verdict needs 234 runs per arm" in s and "143" in s and "72" in s and "7.8 h" in s
    assert any("2 × 0.15 × √(2/5) = 0.190" in line for line in p.verdict.arithmetic)
    assert any("50% power" in w.message for w in p.warnings)
    assert [w.code for w in p.warnings] == ["quick-formula-power", "independent-runs-assumed"]


def test_plan_underpowered_and_go():
    under = plan(0.15, 0.25, n=5)
    assert under.mde_quick_n < 0.25 and under.n_power > 5
    assert under.verdict.status is Status.WARN
    assert under.budget_seconds_n is None
    go = plan(0.04, 0.05, n=20, run_seconds=30, cooldown=10)
    assert go.verdict.status is Status.PASS
    assert go.n_power <= 20 and go.power_at_n >= 0.8
    assert go.budget_seconds_n == 2 * 20 * 40


def test_plan_single_run_mentions_m10():
    p = plan(0.15, 0.05, n=1)
    assert p.mde_power_n is None and p.power_at_n is None
    assert p.mde_quick_1 == pytest.approx(0.4243, abs=1e-4)
    assert any("M10" in w.message for w in p.warnings)


def test_plan_warns_when_cv_from_few_runs():
    assert any("only 3 runs" in w.message for w in plan(0.1, 0.05, cv_n=3).warnings)
    assert not any("only" in w and "runs (fewer" in w for w in plan(0.1, 0.05, cv_n=8).warnings)


def test_plan_also_gives_the_runs_a_gated_verdict_needs():
    """The calibration found the verdict gate (CI outside ±1%) reaching only 50–66% of the
    requested power at plan's n: the plan's n for a verdict is the gated power's (issue 17)."""
    from tokcaliper.stats.resolution import n_verdict, ratio_distance, sd_diff_from_cv

    p = plan(0.15, 0.05, n=5)
    assert p.n_power == 143
    assert p.n_power_gated == n_verdict(ratio_distance(0.05, 0.01), sd_diff_from_cv(0.15)) == 234
    assert any("noise band" in line and str(p.n_power_gated) in line for line in p.verdict.arithmetic)
    assert plan(0.15, 0.01, n=5).n_power_gated is None  # Δ inside the band: no verdict possible
    assert plan(0.15, 0.05, n=5, noise_band=0.0).n_power_gated > 143  # paired df, log scale


def _simulated_gated_power(cv, effect, n, band=0.01, alpha=0.05, reps=20000, paired=True):
    """Share of simulated experiments (normal runs) whose gated verdict is "faster":
    the paired log-ratio CI (or the Welch delta-method CI) lies wholly above 1 + band."""
    import numpy as np
    from scipy import stats as st

    rng = np.random.default_rng(17)
    a = 100 * (1 + cv * rng.standard_normal((reps, n)))
    b = 100 * (1 + effect) * (1 + cv * rng.standard_normal((reps, n)))
    if paired:
        d = np.log(b) - np.log(a)
        lo = d.mean(1) - st.t.ppf(1 - alpha / 2, n - 1) * d.std(1, ddof=1) / np.sqrt(n)
    else:
        ma, mb, va, vb = a.mean(1), b.mean(1), a.var(1, ddof=1), b.var(1, ddof=1)
        se2 = va / (n * ma**2) + vb / (n * mb**2)
        df = se2**2 / ((va / (n * ma**2)) ** 2 / (n - 1) + (vb / (n * mb**2)) ** 2 / (n - 1))
        lo = np.log(mb / ma) - st.t.ppf(1 - alpha / 2, df) * np.sqrt(se2)
    return float((lo > np.log1p(band)).mean())


@pytest.mark.parametrize("cv, effect, n, paired", [
    (0.02, 0.02, 17, True), (0.02, 0.02, 67, True), (0.05, 0.05, 12, True), (0.03, 0.04, 20, False)])
def test_verdict_power_matches_the_gated_verdict_by_simulation(cv, effect, n, paired):
    """verdict_power (noncentral t) against 20000 simulated experiments with the gate's rule;
    MC sd ≤ 0.35 points, the log-normal approximation of normal runs adds about 1 point."""
    from tokcaliper.stats.resolution import ratio_distance, sd_diff_from_cv, verdict_power

    design = "paired" if paired else "independent"
    exact = verdict_power(ratio_distance(effect, 0.01), sd_diff_from_cv(cv), n, design=design)
    assert exact == pytest.approx(_simulated_gated_power(cv, effect, n, paired=paired), abs=0.02)


def test_plan_cv2_effect2_n17_does_not_pass():
    """Issue 17: "go … power 81%" while the gated verdict calls it in 27–28% of experiments."""
    p = plan(0.02, 0.02, n=17)
    assert p.verdict.status is not Status.PASS
    assert p.power_gated_n == pytest.approx(0.27, abs=0.01)
    assert p.power_gated_n == pytest.approx(_simulated_gated_power(0.02, 0.02, 17), abs=0.02)
    assert p.n_power_gated == 67
    assert "a verdict needs 67 runs per arm" in p.verdict.summary


def test_plan_effect_equal_to_band_says_no_verdict_is_reachable():
    p = plan(0.02, 0.01, n=17)
    assert p.verdict.status is Status.FAIL and not p.verdict_reachable
    s = p.verdict.summary
    assert s.startswith("no faster/slower verdict is reachable at any n")
    assert "--noise-band" in s and "margin" in s
    assert "runs per arm" not in s  # no run count is quoted for an unreachable verdict
    assert plan(0.02, 0.01, n=17, noise_band=0.005).verdict_reachable
