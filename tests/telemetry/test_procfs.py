"""Steal time, host utilisation and process CPU share from /proc readings on known input."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tokcaliper.model.telemetry import DeviceInfo, TelemetrySample
from tokcaliper.telemetry import CpuBackend, ProcessBackend, TelemetrySampler, summarize_device
from tokcaliper.telemetry.procfs import (
    interval_shares,
    parse_pid_stat,
    parse_proc_stat,
    process_cpu_share,
)

from .fakes import FakePsutil

# Two /proc/stat readings of a 2-vCPU VM 1 s apart (USER_HZ 100: 200 ticks in all).
# Columns: user nice system idle iowait irq softirq steal guest guest_nice.
STAT_A = """cpu  1000 0 500 8000 100 0 50 350 40 0
cpu0 500 0 250 4000 50 0 25 175 40 0
cpu1 500 0 250 4000 50 0 25 175 0 0
intr 1269667 0 0
ctxt 1387355
"""
# Δ: cpu0 user 60 system 10 idle 10 iowait 0 steal 20 (=100 ticks); guest +30 (inside user)
#    cpu1 user 20 system 5 idle 60 iowait 10 steal 5 (=100 ticks)
STAT_B = """cpu  1080 0 515 8070 110 0 50 375 70 0
cpu0 560 0 260 4010 50 0 25 195 70 0
cpu1 520 0 255 4060 60 0 25 180 0 0
intr 1269999 0 0
"""


def test_interval_shares_steal_and_utilisation_known_input():
    a, b = parse_proc_stat(STAT_A), parse_proc_stat(STAT_B)
    assert a.total.steal == 350 and a.total.guest == 40 and len(a.cores) == 2
    assert b.total.total - a.total.total == 200  # guest (+30) is not counted twice
    sh = interval_shares(a, b)
    # busy = 200 − Δidle 70 − Δiowait 10 = 120 → 60 %; steal 25/200 = 12.5 %; iowait 5 %
    assert sh.utilization_pct == pytest.approx(60.0)
    assert sh.steal_pct == pytest.approx(12.5)
    assert sh.iowait_pct == pytest.approx(5.0)
    # cpu0: 100 − 10 idle = 90 %; cpu1: 100 − 60 − 10 = 30 %
    assert sh.core_utilization_pct == pytest.approx([90.0, 30.0])
    # no time passed: nothing to report rather than a division by zero
    assert interval_shares(a, a).utilization_pct is None


def test_old_kernel_stat_without_steal_columns():
    a = parse_proc_stat("cpu 10 0 10 80\n")
    b = parse_proc_stat("cpu 20 0 20 160\n")
    sh = interval_shares(a, b)
    assert sh.steal_pct == 0.0 and sh.utilization_pct == pytest.approx(20.0)
    with pytest.raises(ValueError):
        parse_proc_stat("intr 1 2 3\n")


def _pid_stat(comm: str, utime: int, stime: int, rss_pages: int) -> str:
    # fields 3.. : state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
    #              utime stime cutime cstime priority nice threads itrealvalue starttime vsize rss
    rest = ["S", "1", "1", "1", "0", "-1", "4194560", "10", "0", "0", "0",
            str(utime), str(stime), "7", "3", "20", "0", "4", "0", "12345", "999999", str(rss_pages)]
    return f"4242 ({comm}) " + " ".join(rest) + " 18446744073709551615 1 1 0 0 0\n"


def test_pid_stat_with_awkward_comm_and_cpu_share():
    # comm may contain spaces and ')' — fields are counted after the last ')'
    text = _pid_stat("llama) server x", utime=250, stime=50, rss_pages=1000)
    cpu, rss = parse_pid_stat(text, clk_tck=100, page_size=4096)
    assert cpu == 3.0  # (250 + 50) / 100; cutime/cstime (children) not included
    assert rss == 4_096_000
    assert process_cpu_share(3.0, 3.97, 1.0) == pytest.approx(0.97)
    assert process_cpu_share(3.0, 5.0, 0.0) is None
    assert process_cpu_share(3.0, 1.0, 1.0) is None  # pid reused by another process
    with pytest.raises(ValueError):
        parse_pid_stat("4242 (x) S 1 1", 100, 4096)


def test_cpu_backend_reads_steal_from_proc_stat(tmp_path: Path):
    stat = tmp_path / "stat"
    stat.write_text(STAT_A)
    ps = FakePsutil([2000.0], [], {})  # cpu_percent is not called when /proc/stat works
    backend = CpuBackend(powercap_root=tmp_path / "none", psutil_module=ps, proc_stat=stat)
    (dev,) = backend.open()
    assert "steal_pct" not in dev.unavailable and "utilization_pct" not in dev.unavailable
    out: list[TelemetrySample] = []
    backend.sample(0.0, 0.0, out)  # start sample: covers ~0 s since open → no reading
    stat.write_text(STAT_B)
    backend.sample(1.0, 1.0, out)
    # Third interval (3 s long): 300 ticks with 30 of steal = 10 %, 150 busy = 50 %
    stat.write_text(STAT_B.replace("cpu  1080 0 515 8070 110 0 50 375", "cpu  1170 0 545 8220 110 0 50 405"))
    backend.sample(4.0, 4.0, out)
    backend.close()
    assert out[0].steal_pct is None and out[0].utilization_pct is None
    assert out[1].steal_pct == pytest.approx(12.5) and out[2].steal_pct == pytest.approx(10.0)
    assert out[2].utilization_pct == pytest.approx(50.0)
    s = summarize_device(dev, out)
    # weighted by interval length: (12.5·1 + 10·3) / 4 = 10.625 % → 0.10625
    assert s.steal_share == pytest.approx(0.10625)
    assert s.utilization_mean_pct == pytest.approx((60.0 * 1 + 50.0 * 3) / 4)
    assert s.core_utilization_mean_pct[0] == pytest.approx(90.0)  # cores unchanged in the 3rd read: None


def test_process_backend_on_fake_proc_and_summary(tmp_path: Path):
    pid_dir = tmp_path / "4242"
    pid_dir.mkdir()
    stat = pid_dir / "stat"
    readings = [(100, 20, 500), (150, 30, 800), (230, 40, 700)]  # utime, stime, rss pages
    stat.write_text(_pid_stat("llama-server", *readings[0]))
    b = ProcessBackend(pid=4242, role="server", proc_root=tmp_path, clk_tck=100, page_size=4096)
    (dev,) = b.open()
    assert (dev.device, dev.kind, dev.name) == ("server", "process", "llama-server (pid 4242)")
    out: list[TelemetrySample] = []
    for t, r in zip((0.0, 1.0, 2.0), readings):
        stat.write_text(_pid_stat("llama-server", *r))
        b.sample(t, t, out)
    stat.write_text("")  # the process exits (reads come back empty): a reason, not an exception
    b.sample(3.0, 3.0, out)
    b.close()
    assert [s.cpu_time_s for s in out] == [1.2, 1.8, 2.7, None]
    assert "failed during run" in dev.unavailable["cpu_time_s"]
    s = summarize_device(dev, out)
    assert s.cpu_time_s == pytest.approx(1.5)
    assert s.cpu_share_mean == pytest.approx(0.75)  # 1.5 s CPU over 2 s
    assert s.cpu_share_max == pytest.approx(0.9)  # the 1 s window 1.8 → 2.7
    assert (s.rss_peak_bytes, s.rss_end_bytes) == (800 * 4096, 700 * 4096)


def test_process_backend_for_a_missing_pid_is_a_reason(tmp_path: Path):
    from tokcaliper.telemetry import BackendUnavailable

    class NoPsutil:
        class NoSuchProcess(Exception):
            pass

        def Process(self, pid):  # noqa: N802 - psutil's name
            raise self.NoSuchProcess(f"process PID not found (pid={pid})")

    with pytest.raises(BackendUnavailable, match="server process 999999 not readable"):
        ProcessBackend(pid=999999, role="server", proc_root=tmp_path, psutil_module=NoPsutil()).open()


def test_real_process_backend_on_this_process():
    b = ProcessBackend()
    (dev,) = b.open()
    assert dev.device == "client" and str(os.getpid()) in dev.name
    out: list[TelemetrySample] = []
    b.sample(0.0, 0.0, out)
    t_cpu0 = os.times()
    x = 0
    while os.times().user + os.times().system - t_cpu0.user - t_cpu0.system < 0.05:
        x += 1  # burn ≥ 50 ms of CPU
    b.sample(1.0, 1.0, out)
    b.close()
    used = os.times().user + os.times().system - t_cpu0.user - t_cpu0.system
    d = out[1].cpu_time_s - out[0].cpu_time_s
    assert 0.04 <= d <= used + 0.02  # /proc agrees with os.times() to a tick or two
    assert out[0].rss_bytes > 10_000_000  # a Python process with numpy and pydantic loaded


def test_client_saturation_flag_from_injected_readings():
    info_c = DeviceInfo(device="client", kind="process")
    info_h = DeviceInfo(device="cpu", kind="cpu")

    def samples(share: float) -> list[TelemetrySample]:
        return [TelemetrySample(device="client", t_mono_s=t, t_wall_s=t, cpu_time_s=5.0 + share * t)
                for t in (0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)]

    from tokcaliper.telemetry import summarize

    busy = summarize(samples(0.97), [info_c, info_h], 0.5)
    assert busy.device("client").cpu_share_mean == pytest.approx(0.97)
    assert busy.client_saturated is True
    assert "0.970 cores" in busy.client_saturation and "≥ 0.9: saturated" in busy.client_saturation
    assert "2.91 s / 3.00 s = 0.970 cores" in busy.client_saturation  # the arithmetic, shown
    calm = summarize(samples(0.30), [info_c], 0.5)
    assert calm.client_saturated is False and "< 0.9: not saturated" in calm.client_saturation
    # no client sampled → unknown, not "fine"
    assert summarize([], [info_h], 0.5).client_saturated is None


def test_client_saturation_through_the_sampler(tmp_path: Path):
    """The flag on a real sampler: a fake /proc/<pid>/stat whose CPU time grows 1 s per s."""
    import time

    pid_dir = tmp_path / "77"
    pid_dir.mkdir()
    stat = pid_dir / "stat"
    t0 = time.perf_counter()

    class Clocked(ProcessBackend):
        def _read(self):  # CPU time = wall time since t0: exactly one core busy
            stat.write_text(_pid_stat("python", int(100 * (time.perf_counter() - t0)), 0, 100))
            return super()._read()

    stat.write_text(_pid_stat("python", 0, 0, 100))
    sampler = TelemetrySampler(interval_s=0.05, backends=[Clocked(pid=77, role="client", proc_root=tmp_path,
                                                                  clk_tck=100, page_size=4096)])
    with sampler:
        time.sleep(0.4)
    s = sampler.summary()
    assert s.client_saturated is True, s.client_saturation
    assert s.device("client").cpu_share_mean == pytest.approx(1.0, abs=0.1)  # 10 ms ticks over 0.4 s


def test_saturated_client_flags_the_run_in_the_gate_and_steal_is_a_covariate():
    from tokcaliper.stats.gates import gate_telemetry
    from tokcaliper.telemetry import summarize

    info = [DeviceInfo(device="client", kind="process")]
    busy = summarize([TelemetrySample(device="client", t_mono_s=t, t_wall_s=t, cpu_time_s=0.95 * t)
                      for t in (0.0, 1.0, 2.0)], info, 1.0)
    calm = summarize([TelemetrySample(device="client", t_mono_s=t, t_wall_s=t, cpu_time_s=0.2 * t)
                      for t in (0.0, 1.0, 2.0)], info, 1.0)
    g_busy, g_calm = gate_telemetry([busy, calm])
    assert g_busy.flagged and [r.code for r in g_busy.reasons] == ["client_saturated"]
    assert "0.950 cores" in g_busy.reasons[0].detail
    assert not g_calm.flagged


def test_steal_share_and_process_devices_in_run_covariates():
    from tokcaliper.model.run import LoadConfig, Run
    from tokcaliper.model.telemetry import DeviceSummary, TelemetrySummary
    from tokcaliper.stats.covariates import covariate_label, run_covariates

    def run(steal: float, clock: float) -> Run:
        tel = TelemetrySummary(interval_s=0.1, devices=[
            DeviceSummary(device="gpu0", kind="nvidia_gpu", clock_start_mhz=clock),
            DeviceSummary(device="cpu", kind="cpu", steal_share=steal),
            DeviceSummary(device="client", kind="process", cpu_share_mean=0.3),
            DeviceSummary(device="server", kind="process", cpu_share_mean=1.7)])
        return Run.model_construct(position=None, rest_s=None, telemetry=tel,
                                   config=LoadConfig(base_url="http://x:1"))

    cov = run_covariates([run(0.01, 1980.0), run(0.07, 1755.0)])
    assert cov["steal_share"] == [0.01, 0.07]
    # processes are not GPUs: the single GPU keeps the bare covariate names
    assert cov["sm_clock_start_mhz"] == [1980.0, 1755.0]
    assert not any(k.endswith(("_client", "_server")) for k in cov)
    assert covariate_label("steal_share") == ("CPU steal share", "outside")  # the hypervisor ran other work
