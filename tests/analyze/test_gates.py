"""Telemetry gates: slowdown reasons and clock below 75% of the default clock flag a run."""

import pytest

from tokcaliper.errors import InputError
from tokcaliper.model.telemetry import DeviceSummary, TelemetrySummary
from tokcaliper.stats.gates import (
    clock_normalised, gate_telemetry, reference_clocks, run_mean_clock_mhz, unflagged)


def summary(clock_min=1400.0, clock_mean=1420.0, clock_max=1440.0, shares=None, device="gpu0"):
    return TelemetrySummary(interval_s=0.5, devices=[DeviceSummary(
        device=device, kind="nvidia_gpu", clock_start_mhz=clock_max, clock_min_mhz=clock_min,
        clock_mean_mhz=clock_mean, clock_max_mhz=clock_max, throttle_share=shares or {},
        throttle_samples=100)])


def test_thermal_slowdown_is_flagged_with_its_reason_and_a_clean_run_is_not():
    clean = summary(shares={"sw_power_cap": 0.4})
    hot = summary(shares={"hw_thermal_slowdown": 0.03})
    g = gate_telemetry([clean, hot, None], reference_clock_mhz=1500)
    assert not g[0].flagged and g[0].checked
    assert any("sw_power_cap" in n and "not a flag" in n for n in g[0].notes)
    assert g[1].flagged
    assert [r.code for r in g[1].reasons] == ["slowdown:hw_thermal_slowdown"]
    assert g[1].reasons[0].share == pytest.approx(0.03)
    assert not g[2].flagged and not g[2].checked


def test_clock_below_75_percent_of_default_is_flagged_with_share_bound():
    # default 1980 MHz → threshold 1485; min 1200 and mean 1400: share ≥ (1485−1400)/(1485−1200) = 0.298
    g = gate_telemetry([summary(1200, 1400, 1800), summary(1500, 1700, 1900)], reference_clock_mhz=1980)
    assert g[0].flagged and g[0].reasons[0].code == "clock_below_threshold"
    assert g[0].reasons[0].share_is_bound
    assert g[0].reasons[0].share == pytest.approx(85 / 285)
    assert not g[1].flagged


def test_reference_defaults_to_highest_clock_seen_and_explicit_share_wins():
    runs = [summary(1400, 1420, 1440), summary(1000, 1300, 1900)]
    assert reference_clocks(runs) == {"gpu0": 1900.0}
    g = gate_telemetry(runs)  # threshold 0.75·1900 = 1425: run 0 min 1400 < 1425 → flagged
    assert g[0].flagged and g[1].flagged
    assert "highest clock seen" in " ".join(g[0].notes)
    g2 = gate_telemetry(runs, clock_share_below=[{"gpu0": 0.0}, {"gpu0": 0.2}], max_share_below=0.1)
    assert not g2[0].flagged and g2[1].flagged and not g2[1].reasons[0].share_is_bound
    assert unflagged([10.0, 20.0], g2) == [10.0]


def test_clock_normalised_and_errors():
    assert clock_normalised(700.0, 1400.0) == pytest.approx(0.5)
    assert run_mean_clock_mhz(summary(clock_mean=1350.0)) == 1350.0
    with pytest.raises(InputError, match="positive"):
        clock_normalised(700.0, 0.0)
    with pytest.raises(InputError, match="threshold"):
        gate_telemetry([summary()], threshold=1.5)
