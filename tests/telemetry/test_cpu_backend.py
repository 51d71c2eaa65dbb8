"""CPU back-end: psutil readings and RAPL energy with wraparound (fake sysfs)."""

from __future__ import annotations

import platform
import re
from pathlib import Path

import pytest

from tokcaliper.telemetry import CpuBackend, summarize_device
from tokcaliper.telemetry.cpu import find_rapl_zones, read_cpu_model

from .fakes import FakePsutil

MAX = 262143328850  # a real max_energy_range_uj


def make_zone(root: Path, zone: str, name: str, energy: int, max_range: int = MAX) -> Path:
    d = root / zone
    d.mkdir(parents=True)
    (d / "name").write_text(name + "\n")
    (d / "max_energy_range_uj").write_text(f"{max_range}\n")
    (d / "energy_uj").write_text(f"{energy}\n")
    return d


def set_energy(zone: Path, uj: int) -> None:
    (zone / "energy_uj").write_text(f"{uj}\n")


def test_rapl_sums_packages_and_handles_wraparound(tmp_path: Path):
    p0 = make_zone(tmp_path, "intel-rapl:0", "package-0", MAX - 40_000_000)
    p1 = make_zone(tmp_path, "intel-rapl:1", "package-1", 1_000_000)
    make_zone(tmp_path, "intel-rapl:0:0", "core", 0)  # sub-zone: ignored
    make_zone(tmp_path, "intel-rapl:2", "psys", 0)  # platform: ignored (would double count)
    assert [z.name for z in find_rapl_zones(tmp_path)] == ["package-0", "package-1"]

    ps = FakePsutil([2000.0, 3000.0], [0.0, 40.0, 60.0, 80.0], {"k10temp": [55.0, 61.5], "nvme": [80.0]})
    # No /proc/stat (as off Linux): utilisation falls back to psutil.cpu_percent.
    backend = CpuBackend(powercap_root=tmp_path, psutil_module=ps, cpuinfo=tmp_path / "nope",
                         proc_stat=tmp_path / "no-stat")
    (dev,) = backend.open()
    assert dev.device == "cpu" and set(dev.unavailable) == {"steal_pct", "core_utilization_pct"}
    assert dev.unavailable["steal_pct"].startswith(f"{tmp_path / 'no-stat'} not readable: FileNotFoundError")
    out: list = []
    backend.sample(10.0, 1e9, out)  # open read the baseline; no energy yet
    set_energy(p0, 60_000_000)  # wrapped: (MAX − (MAX − 40e6)) + 60e6 = 100 J
    set_energy(p1, 51_000_000)  # +50 J
    backend.sample(11.0, 1e9 + 1, out)
    set_energy(p0, 160_000_000)  # +100 J
    set_energy(p1, 101_000_000)  # +50 J
    backend.sample(12.0, 1e9 + 2, out)
    backend.close()

    assert [s.energy_j for s in out] == [0.0, 150.0, 300.0]
    assert [s.clock_mhz for s in out] == [2500.0] * 3
    assert [s.temperature_c for s in out] == [61.5] * 3  # hottest CPU chip; nvme ignored
    assert [s.utilization_pct for s in out] == [None, 60.0, 80.0]
    s = summarize_device(dev, out)
    assert s.energy_source == "counter" and s.energy_j == 300.0
    assert s.power_mean_w == 150.0  # 300 J over 2 s
    assert s.utilization_mean_pct == 70.0 and s.temperature_peak_c == 61.5


def test_unreadable_rapl_is_a_reason_not_an_error(tmp_path: Path):
    d = tmp_path / "intel-rapl:0"
    d.mkdir()
    (d / "name").write_text("package-0\n")
    (d / "energy_uj").mkdir()  # reading it fails like a root-only file would
    ps = FakePsutil([1000.0], [0.0, 5.0], {})
    backend = CpuBackend(powercap_root=tmp_path, psutil_module=ps)
    (dev,) = backend.open()
    assert dev.unavailable["energy_j"].startswith(f"RAPL {d / 'energy_uj'} not readable: IsADirectoryError")
    assert "no CPU temperature sensor" in dev.unavailable["temperature_c"]
    out: list = []
    backend.sample(0.0, 0.0, out)
    assert out[0].energy_j is None and out[0].clock_mhz == 1000.0


def test_no_powercap_dir(tmp_path: Path):
    backend = CpuBackend(powercap_root=tmp_path / "absent", psutil_module=FakePsutil([1.0], [0.0], {}))
    (dev,) = backend.open()
    assert dev.unavailable["energy_j"] == f"no RAPL package zones under {tmp_path / 'absent'}"


def test_real_cpu_backend_on_this_machine():
    import psutil

    backend = CpuBackend()
    (dev,) = backend.open()
    out: list = []
    backend.sample(0.0, 0.0, out)
    backend.close()
    freqs = psutil.cpu_freq(percpu=True)
    if freqs and any(f.current for f in freqs):
        assert out[0].clock_mhz == pytest.approx(sum(f.current for f in freqs) / len(freqs), rel=0.5)
    # The device name, checked against the kernel's own text rather than the parser that produced it.
    cpuinfo = Path("/proc/cpuinfo")
    text = cpuinfo.read_text(errors="replace") if cpuinfo.is_file() else ""
    x86 = re.search(r"^model name\s*:\s*(.+?)\s*$", text, flags=re.MULTILINE)
    if x86:  # x86: the "model name" line, not the numeric "model" line above it
        assert dev.name == x86.group(1)
    elif dev.name is not None:  # Arm and others: a non-numeric value the kernel or platform reports
        assert not dev.name.isdigit()
        assert re.search(rf":\s*{re.escape(dev.name)}\s*$", text, flags=re.MULTILINE) or dev.name == platform.processor()
    else:
        assert not platform.processor()


def test_read_cpu_model_variants(tmp_path: Path):
    x86 = tmp_path / "x86"
    x86.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel\t\t: 17\nmodel name\t: AMD EPYC 9654\n")
    assert read_cpu_model(x86) == "AMD EPYC 9654"
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nBogoMIPS\t: 48.00\n\nHardware\t: BCM2835\nModel\t: Raspberry Pi 4\n")
    assert read_cpu_model(arm) == "Raspberry Pi 4"
