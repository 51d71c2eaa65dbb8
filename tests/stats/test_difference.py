"""Difference-scale comparisons for metrics that can be 0 or sit at resolution (issue 17 item 5)."""

import json
import math

import numpy as np
import pytest
from scipy import stats as st

from tokcaliper.cli import main
from tokcaliper.errors import InputError
from tokcaliper.model.metrics import METRICS
from tokcaliper.stats.ab import analyze_samples, compare_metrics

LAG_A = [0.0, 0.5, 1.0, 0.0, 0.5]  # ms: an idle loop reads 0–1 ms (epoll rounding)
LAG_B = [1.0, 2.0, 1.5, 2.5, 2.0]


def test_registry_knows_the_loop_lag_resolution():
    assert METRICS["client_loop_lag_p99_ms"].noise_abs == 1.0
    assert METRICS["aggregate_output_tok_s"].noise_abs is None


def test_paired_differences_match_scipy_and_the_gate_uses_the_absolute_floor():
    an = analyze_samples(LAG_A, LAG_B, paired=True, unit="ms", higher_is_better=False, noise_abs=1.0)
    d = np.subtract(LAG_B, LAG_A)
    ref = st.ttest_rel(LAG_B, LAG_A)
    assert an.scale == "difference" and an.differences == list(d)
    assert an.difference == pytest.approx(d.mean()) and an.p_raw == pytest.approx(ref.pvalue)
    half = st.t.ppf(0.975, 4) * d.std(ddof=1) / math.sqrt(5)
    assert an.difference_ci == pytest.approx((d.mean() - half, d.mean() + half))
    # significant (p = 0.013) but the CI reaches into ±1 ms: inconclusive, with the floor named
    assert an.verdict == "inconclusive" and an.p_raw < 0.05
    assert "reaches into the ±1.00 ms noise floor" in an.report.summary
    assert "changes below ±1.66 ms (noise floor ±1.00 ms + MDE ±0.663 ms)" in an.report.summary
    # with a floor of 0.25 ms the same runs are called slower (lower is better)
    assert analyze_samples(LAG_A, LAG_B, paired=True, higher_is_better=False,
                           noise_abs=0.25).verdict == "slower"


def test_unpaired_difference_is_welch_and_a_clear_change_is_called():
    b = [3.0, 4.0, 3.5, 4.5, 4.0]
    an = analyze_samples(LAG_A, b, unit="ms", higher_is_better=False, noise_abs=1.0)
    ref = st.ttest_ind(LAG_A, b, equal_var=False)
    assert an.p_raw == pytest.approx(ref.pvalue) and an.verdict == "slower"
    assert an.report.summary.startswith("slower by 3.40 ms (b − a = +3.40 ms")


def test_zero_without_a_floor_is_an_error_that_names_the_fix():
    with pytest.raises(InputError, match="ratios need positive values, got 0; compare on the "
                                         "difference scale with --noise-abs X"):
        analyze_samples(LAG_A, LAG_B)


def test_difference_scale_is_holm_corrected_with_ratio_metrics():
    lag = analyze_samples(LAG_A, LAG_B, higher_is_better=False, noise_abs=1.0, metric="lag")
    tput = analyze_samples([100, 101, 99], [110, 111, 112], metric="tput")
    mc = compare_metrics([lag, tput])
    assert mc.holm and mc.metrics[0].scale == "difference" and mc.metrics[0].holm_m == 2
    assert mc.metrics[0].p_used >= lag.p_raw and mc.metrics[1].verdict == "faster"


def test_cli_zero_containing_metric_compares_on_the_difference_scale(tmp_path, capsys):
    """client_loop_lag_p99_ms was a hard error ("ratios need positive values")."""
    rows = ["arm,value,pair"] + [f"{arm},{v},{k}" for k, (x, y) in enumerate(zip(LAG_A, LAG_B))
                                 for arm, v in (("A", x), ("B", y))]
    p = tmp_path / "lag.csv"
    p.write_text("\n".join(rows) + "\n", encoding="utf-8")
    rc = main(["compare", "--csv", str(p), "--metric", "client_loop_lag_p99_ms", "--unit", "ms"])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    out = " ".join(cap.out.split())
    assert "difference scale (paired differences): B − A = +1.40 ms" in out
    assert "noise floor ±1.00 ms" in out and "ratios need positive" not in out
    rc = main(["compare", "--csv", str(p), "--metric", "client_loop_lag_p99_ms", "--noise-abs",
               "0.25", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and data["scale"] == "difference" and data["noise_abs"] == 0.25
    assert data["verdict"] == "slower"
    rc = main(["compare", "--a", "1,2", "--b", "2,3", "--noise-abs", "-1"])
    assert rc == 2 and "--noise-abs must be a number ≥ 0" in capsys.readouterr().err
