"""The sampler thread, idle power, and the pure summary arithmetic."""

from __future__ import annotations

import time

import pytest

from tokcaliper.model.telemetry import DeviceInfo, TelemetrySample
from tokcaliper.telemetry import (
    BackendUnavailable,
    CpuBackend,
    NvmlBackend,
    TelemetrySampler,
    summarize_device,
)

from .fakes import FakeNvml, h200


def _nvml_works() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        return True
    except Exception:
        return False


def test_start_and_end_samples_carry_the_run_edges():
    """M2's covariates: clock at start 1455 MHz, at end 1335 MHz, read at the run's edges."""
    fake = FakeNvml([h200(sm=[1455, 1335], power_mw=[240000, 200000], temp=[58, 71],
                          reasons=[0x0, 0x4], energy_mj=[5_000_000, 5_150_000])])
    sampler = TelemetrySampler(interval_s=3600, backends=[NvmlBackend(nvml=fake)])
    with sampler:
        fake.idx = 1  # the load ran; the next reading is the end sample
    summary = sampler.summary()
    assert summary.gpu_unavailable_reason is None and summary.backend_errors == {}
    assert summary.ticks == 2 and summary.missed_ticks == 0
    g = summary.device("gpu0")
    assert g.sample_count == 2
    assert (g.clock_start_mhz, g.clock_end_mhz, g.clock_min_mhz, g.clock_mean_mhz) == (1455, 1335, 1335, 1395)
    assert g.throttle_share == {"sw_power_cap": 0.5}
    assert g.energy_source == "counter" and g.energy_j == pytest.approx(150.0)
    assert (g.power_mean_w, g.power_max_w) == (220.0, 240.0)
    assert (g.temperature_start_c, g.temperature_peak_c) == (58, 71)
    assert fake.inits == 1 and fake.shutdowns == 1
    assert [s.device for s in sampler.samples] == ["gpu0", "gpu0"]
    with pytest.raises(KeyError):
        summary.device("gpu1")


def test_thread_samples_at_the_interval():
    fake = FakeNvml([h200()])
    sampler = TelemetrySampler(interval_s=0.02, backends=[NvmlBackend(nvml=fake)])
    with sampler:
        time.sleep(0.3)
    ss = sampler.samples
    # 1 start + ~15 thread ticks + 1 end; generous bounds for a loaded 2-core CI box
    assert 8 <= len(ss) <= 18
    monos = [s.t_mono_s for s in ss]
    assert monos == sorted(monos) and len(set(monos)) == len(monos)
    assert abs((ss[-1].t_wall_s - ss[0].t_wall_s) - (monos[-1] - monos[0])) < 0.05
    summary = sampler.summary()
    assert summary.ticks == len(ss)
    assert 0.29 <= summary.duration_s < 0.6
    assert summary.sample_cost_ms_mean is not None and summary.sample_cost_ms_mean < 20


def test_no_gpu_here_reason_recorded_and_cpu_backend_used():
    if _nvml_works():
        pytest.skip("this machine has a working NVML")
    import psutil

    sampler = TelemetrySampler(interval_s=0.05)  # default back-ends: NVML, AMD SMI, CPU, client
    with sampler:
        time.sleep(0.2)
    summary = sampler.summary()
    assert summary.gpu_unavailable_reason.startswith("no NVIDIA GPU: nvmlInit failed: NVMLError_")
    assert summary.backend_errors["nvml"] == summary.gpu_unavailable_reason
    assert summary.backend_errors["amdsmi"].startswith("no AMD GPU: ")
    assert summary.backends == ["cpu", "process:client"]  # the ones that sampled, listed in the record
    assert [d.device for d in summary.devices] == ["cpu", "client"]
    assert summary.client_saturated is False  # this test sleeps: far below one core
    cpu = summary.device("cpu")
    assert cpu.sample_count >= 3
    freqs = psutil.cpu_freq(percpu=True)
    if freqs and any(f.current for f in freqs):
        assert cpu.clock_start_mhz > 0 and cpu.clock_min_mhz <= cpu.clock_mean_mhz <= cpu.clock_max_mhz
    else:
        assert "clock_mhz" in cpu.unavailable
    assert sampler.samples[0].utilization_pct is None  # no interval before the first sample
    assert cpu.utilization_mean_pct is not None and 0 <= cpu.utilization_mean_pct <= 100


def test_measure_idle_counter_and_power_mean():
    t0 = time.monotonic()
    fake = FakeNvml([
        h200(power_mw=[55200], energy_mj=None),                           # mean of power readings
        h200(power_mw=[90000], energy_mj=lambda: int(84_300 * (time.monotonic() - t0)) + 10**6),  # counter
    ])
    sampler = TelemetrySampler(interval_s=0.05, backends=[NvmlBackend(nvml=fake)])
    idle = sampler.measure_idle(0.4)
    assert idle["gpu0"] == pytest.approx(55.2)
    assert idle["gpu1"] == pytest.approx(84.3, rel=0.02)  # from the counter, not the 90 W readings
    assert fake.shutdowns == 1  # idle opened and closed the back-end
    with sampler:
        pass
    summary = sampler.summary()
    assert summary.idle_power_w == idle and 0.4 <= summary.idle_duration_s < 0.6
    assert summary.ticks == 2  # idle ticks are not counted as run ticks


def test_backend_failures_do_not_stop_sampling():
    class Broken:
        name = "broken"

        def open(self):
            return [DeviceInfo(device="x", kind="other")]

        def sample(self, t_mono, t_wall, out):
            raise RuntimeError("boom")

        def close(self):
            pass

    class Absent:
        name = "amdsmi"

        def open(self):
            raise BackendUnavailable("no AMD GPU: amdsmi not installed")

    class Crashing:
        name = "crash"

        def open(self):
            raise OSError("weird")

    fake = FakeNvml([h200()])
    sampler = TelemetrySampler(3600, backends=[Broken(), Absent(), Crashing(), NvmlBackend(nvml=fake)])
    with sampler:
        pass
    s = sampler.summary()
    assert s.backend_errors == {
        "broken": "sample failed: RuntimeError: boom",
        "amdsmi": "no AMD GPU: amdsmi not installed",
        "crash": "open failed: OSError: weird",
    }
    assert s.device("gpu0").sample_count == 2
    assert s.device("x").sample_count == 0 and s.device("x").unavailable["samples"]
    assert s.gpu_unavailable_reason is None


def test_overrunning_ticks_are_skipped_not_burst():
    class Slow:
        name = "slow"

        def open(self):
            return [DeviceInfo(device="slow", kind="other")]

        def sample(self, t_mono, t_wall, out):
            time.sleep(0.05)
            out.append(TelemetrySample(device="slow", t_mono_s=t_mono, t_wall_s=t_wall))

        def close(self):
            pass

    sampler = TelemetrySampler(interval_s=0.01, backends=[Slow()])
    with sampler:
        time.sleep(0.3)
    s = sampler.summary()
    assert s.missed_ticks > 5
    assert s.ticks <= 0.4 / 0.05 + 3  # never more ticks than the slow reads allow
    assert s.sample_cost_ms_max >= 50


def test_no_gpu_reason_without_nvml_backend_and_errors():
    sampler = TelemetrySampler(0.5, backends=[])
    with pytest.raises(RuntimeError):
        sampler.summary()
    with sampler:
        with pytest.raises(RuntimeError):
            sampler.measure_idle(0.1)
        with pytest.raises(RuntimeError):
            sampler.start()
    assert sampler.summary().gpu_unavailable_reason == "no NVIDIA GPU: NVML back-end not in use"
    with pytest.raises(ValueError):
        TelemetrySampler(0)
    with pytest.raises(ValueError):
        sampler.measure_idle(0)


def test_summary_counter_reset_falls_back_to_integral():
    info = DeviceInfo(device="gpu0", kind="nvidia_gpu")
    ss = [
        TelemetrySample(device="gpu0", t_mono_s=t, t_wall_s=t, power_w=p, energy_j=e)
        for t, p, e in [(0.0, 100.0, 500.0), (1.0, 200.0, 600.0), (2.0, 300.0, 10.0)]
    ]
    s = summarize_device(info, ss)
    assert s.energy_source == "power_integral" and s.energy_j == 400.0  # 150 + 250
    assert "reset" in s.unavailable["energy_counter"]


def test_cpu_backend_with_real_psutil_in_sampler():
    sampler = TelemetrySampler(interval_s=3600, backends=[CpuBackend()])
    with sampler:
        pass
    cpu = sampler.summary().device("cpu")
    assert cpu.sample_count == 2 and cpu.kind == "cpu"
