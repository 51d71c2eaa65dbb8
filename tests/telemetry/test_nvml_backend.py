"""NVML back-end against a scripted fake NVML module, and against the real pynvml here."""

from __future__ import annotations

import pytest

from tokcaliper.model.telemetry import CLOCK_EVENT_REASON_BITS, decode_clock_event_reasons
from tokcaliper.telemetry import BackendUnavailable, NvmlBackend, summarize_device

from .fakes import FakeNVMLError, FakeNvml, h200


def drive(backend: NvmlBackend, fake: FakeNvml, times: list[float]) -> list:
    out: list = []
    for i, t in enumerate(times):
        fake.idx = i
        backend.sample(100.0 + t, 1.7e9 + t, out)
    return out


def test_scripted_gpu_summary_exact_values():
    fake = FakeNvml([h200()])
    backend = NvmlBackend(nvml=fake)
    (dev,) = backend.open()
    assert (dev.device, dev.kind, dev.name) == ("gpu0", "nvidia_gpu", "NVIDIA H200")
    assert dev.uuid.startswith("GPU-11111111")
    assert dev.unavailable == {}
    out = drive(backend, fake, [0.0, 0.5, 1.0, 1.5])
    s = summarize_device(dev, out)
    assert s.sample_count == 4 and s.duration_s == 1.5
    assert (s.clock_start_mhz, s.clock_end_mhz) == (1455, 1335)
    assert s.clock_mean_mhz == 1395.0 and s.clock_min_mhz == 1335 and s.clock_max_mhz == 1455
    assert s.mem_clock_mean_mhz == 2619
    assert s.power_mean_w == 212.5 and s.power_max_w == 250.0
    assert s.power_limit_start_w == s.power_limit_end_w == 700.0
    # counter delta: (1 300 000 − 1 000 000) mJ = 300 J; trapezoid: 112.5 + 125 + 100 = 337.5 J
    assert s.energy_source == "counter" and s.energy_j == pytest.approx(300.0)
    assert s.energy_power_integral_j == pytest.approx(337.5)
    assert (s.temperature_start_c, s.temperature_peak_c, s.temperature_end_c) == (60, 71, 69)
    assert s.utilization_mean_pct == 75.0
    assert s.throttle_samples == 4
    assert s.throttle_share == {"gpu_idle": 0.25, "sw_power_cap": 0.5, "sw_thermal_slowdown": 0.25}
    assert out[2].throttle_reasons == ["sw_power_cap", "sw_thermal_slowdown"]
    backend.close()
    assert fake.shutdowns == 1


def test_unsupported_reading_probed_once_and_energy_falls_back_to_integral():
    fake = FakeNvml([h200(), h200(energy_mj=None, name=b"NVIDIA A100-SXM4-80GB")])
    backend = NvmlBackend(nvml=fake)
    devs = backend.open()
    assert devs[1].name == "NVIDIA A100-SXM4-80GB"  # bytes decoded
    assert "Not Supported" in devs[1].unavailable["energy_j"]
    out = drive(backend, fake, [0.0, 0.5, 1.0, 1.5])
    assert fake.calls[("nvmlDeviceGetTotalEnergyConsumption", 1)] == 1  # the probe only
    assert fake.calls[("nvmlDeviceGetTotalEnergyConsumption", 0)] == 5  # probe + 4 ticks
    s0, s1 = (summarize_device(d, out) for d in devs)
    assert s0.sample_count == s1.sample_count == 4
    assert s1.energy_source == "power_integral" and s1.energy_j == pytest.approx(337.5)
    assert s0.energy_source == "counter"


def test_throttle_fallback_when_clocks_event_function_is_absent():
    fake = FakeNvml([h200()], absent={"nvmlDeviceGetCurrentClocksEventReasons"})
    backend = NvmlBackend(nvml=fake)
    (dev,) = backend.open()
    out = drive(backend, fake, [0.0, 1.0])
    assert [s.throttle_mask for s in out] == [0, 4]
    assert fake.calls[("nvmlDeviceGetCurrentClocksThrottleReasons", 0)] == 3
    assert "throttle_mask" not in dev.unavailable


def test_throttle_fallback_when_clocks_event_function_raises():
    # an older driver: pynvml has the function but libnvidia-ml lacks the symbol
    fake = FakeNvml(
        [h200()], raising={"nvmlDeviceGetCurrentClocksEventReasons": FakeNVMLError("Function Not Found")}
    )
    backend = NvmlBackend(nvml=fake)
    (dev,) = backend.open()
    out = drive(backend, fake, [0.0, 1.0, 2.0])
    assert [s.throttle_mask for s in out] == [0, 4, 0x24]
    assert fake.calls[("nvmlDeviceGetCurrentClocksEventReasons", 0)] == 1  # probed once, then never
    assert summarize_device(dev, out).throttle_share["sw_power_cap"] == pytest.approx(2 / 3)


def test_no_throttle_function_at_all_is_recorded():
    absent = {"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"}
    backend = NvmlBackend(nvml=FakeNvml([h200()], absent=absent))
    (dev,) = backend.open()
    assert "not in the NVML module" in dev.unavailable["throttle_mask"]
    out: list = []
    backend.sample(0.0, 0.0, out)
    assert out[0].throttle_mask is None and summarize_device(dev, out).throttle_share == {}


def test_reading_failing_mid_run_gives_none_and_reason():
    fake = FakeNvml([h200(power_mw=[200000, FakeNVMLError("GPU is lost"), 180000])])
    backend = NvmlBackend(nvml=fake)
    (dev,) = backend.open()
    out = drive(backend, fake, [0.0, 1.0, 2.0])
    assert [s.power_w for s in out] == [200.0, None, 180.0]
    assert [s.clock_mhz for s in out] == [1455, 1410, 1380]
    assert dev.unavailable["power_w"] == "failed during run: FakeNVMLError: GPU is lost"
    s = summarize_device(dev, out)
    assert s.power_mean_w == 190.0 and s.energy_power_integral_j is None  # no adjacent pair


def test_init_failure_and_zero_devices_are_reasons():
    with pytest.raises(BackendUnavailable, match=r"^no NVIDIA GPU: nvmlInit failed: FakeNVMLError: Driver Not Loaded$"):
        NvmlBackend(nvml=FakeNvml([], init_error=FakeNVMLError("Driver Not Loaded"))).open()
    with pytest.raises(BackendUnavailable, match=r"^no NVIDIA GPU: NVML reports 0 devices$"):
        NvmlBackend(nvml=FakeNvml([])).open()


def test_real_pynvml_without_gpu_raises_backend_unavailable():
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        pass
    else:
        pynvml.nvmlShutdown()
        pytest.skip("this machine has a working NVML")
    with pytest.raises(BackendUnavailable) as exc:
        NvmlBackend().open()
    assert str(exc.value).startswith("no NVIDIA GPU: nvmlInit failed: NVMLError_")


def test_decode_reasons():
    assert decode_clock_event_reasons(None) == []
    assert decode_clock_event_reasons(0) == []
    assert decode_clock_event_reasons(0x4 | 0x40) == ["sw_power_cap", "hw_thermal_slowdown"]
    assert decode_clock_event_reasons(0x80 | 0x8 | 0x800) == ["hw_slowdown", "hw_power_brake_slowdown", "unknown_0x800"]


def test_reason_table_matches_pynvml_constants():
    pynvml = pytest.importorskip("pynvml")
    expected = {
        "nvmlClocksEventReasonGpuIdle": "gpu_idle",
        "nvmlClocksEventReasonApplicationsClocksSetting": "applications_clocks_setting",
        "nvmlClocksEventReasonSwPowerCap": "sw_power_cap",
        "nvmlClocksEventReasonHwSlowdown": "hw_slowdown",
        "nvmlClocksEventReasonSyncBoost": "sync_boost",
        "nvmlClocksEventReasonSwThermalSlowdown": "sw_thermal_slowdown",
        "nvmlClocksEventReasonHwThermalSlowdown": "hw_thermal_slowdown",
        "nvmlClocksEventReasonHwPowerBrakeSlowdown": "hw_power_brake_slowdown",
        "nvmlClocksEventReasonDisplayClockSetting": "display_clock_setting",
    }
    for const, name in expected.items():
        assert CLOCK_EVENT_REASON_BITS[getattr(pynvml, const)] == name
        throttle = const.replace("ClocksEventReason", "ClocksThrottleReason")
        assert getattr(pynvml, throttle) == getattr(pynvml, const)
