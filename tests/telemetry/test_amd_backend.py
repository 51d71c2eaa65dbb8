"""AMD SMI back-end against a stand-in for the ``amdsmi`` module (no AMD GPU here)."""

from __future__ import annotations

import pytest

from tokcaliper.telemetry import AmdSmiBackend, BackendUnavailable, TelemetrySampler, summarize_device
from tokcaliper.telemetry.amd import AMD_ENERGY_RESOLUTION_J, parse_amd_metrics


class FakeAmdSmi:
    """The few amdsmi functions used; metrics dicts are served in order per call."""

    def __init__(self, metrics: list[dict], fail_init: bool = False) -> None:
        self.metrics = metrics
        self.i = 0
        self.fail_init = fail_init
        self.shut = 0

    def amdsmi_init(self, flags=None):
        if self.fail_init:
            raise RuntimeError("AMDSMI_STATUS_DRIVER_NOT_LOADED")

    def amdsmi_shut_down(self):
        self.shut += 1

    def amdsmi_get_processor_handles(self):
        return ["h0"]

    def amdsmi_get_gpu_asic_info(self, h):
        return {"market_name": "AMD Instinct MI300X"}

    def amdsmi_get_gpu_device_uuid(self, h):
        return "1fff74a1-0000-1000-80d7-b7c1a5f2c3d4"

    def amdsmi_get_power_cap_info(self, h):
        return {"power_cap": 750_000_000}  # µW

    def amdsmi_get_gpu_metrics_info(self, h):
        m = self.metrics[min(self.i, len(self.metrics) - 1)]
        self.i += 1
        return m


def _m(clk, power, energy, temp=70, act=99):
    return {"current_gfxclks": [clk, 0xFFFF], "current_uclk": 1300, "current_socket_power": power,
            "average_socket_power": "N/A", "temperature_hotspot": temp, "temperature_edge": 50,
            "average_gfx_activity": act, "energy_accumulator": energy, "throttle_status": 0}


def test_amd_metrics_flow_into_the_summary():
    # energy counts in 15.259 µJ steps: 6,553,600 steps ≈ 100.0 J
    fake = FakeAmdSmi([_m(2100, 400, 10**7), _m(2100, 400, 10**7), _m(1900, 600, 10**7 + 6_553_600, temp=80)])
    b = AmdSmiBackend(amdsmi=fake)
    (dev,) = b.open()
    assert (dev.device, dev.kind, dev.name) == ("amd0", "amd_gpu", "AMD Instinct MI300X")
    assert "throttle_mask" in dev.unavailable and "clock_mhz" not in dev.unavailable
    out: list = []
    b.sample(0.0, 0.0, out)
    b.sample(1.0, 1.0, out)
    b.close()
    assert fake.shut == 1
    s = summarize_device(dev, out)
    assert (s.clock_start_mhz, s.clock_end_mhz, s.clock_drop_mhz) == (2100.0, 1900.0, 200.0)
    assert s.power_limit_start_w == 750.0 and s.power_mean_w == 500.0
    assert s.energy_source == "counter" and s.energy_j == pytest.approx(6_553_600 * AMD_ENERGY_RESOLUTION_J)
    assert s.energy_j == pytest.approx(100.0, rel=1e-3)
    assert s.temperature_peak_c == 80.0 and s.mem_clock_mean_mhz == 1300.0


def test_na_values_become_none():
    f = parse_amd_metrics({"current_gfxclk": 0xFFFF, "current_socket_power": "N/A", "average_socket_power": 120})
    assert f["clock_mhz"] is None and f["power_w"] == 120.0 and f["energy_j"] is None


def test_missing_or_broken_amdsmi_is_a_reason_once():
    with pytest.raises(BackendUnavailable, match="^no AMD GPU: amdsmi_init failed"):
        AmdSmiBackend(amdsmi=FakeAmdSmi([], fail_init=True)).open()
    sampler = TelemetrySampler(3600, backends=[AmdSmiBackend(amdsmi=FakeAmdSmi([], fail_init=True))])
    with sampler:
        pass
    assert sampler.summary().backend_errors["amdsmi"].startswith("no AMD GPU: ")
