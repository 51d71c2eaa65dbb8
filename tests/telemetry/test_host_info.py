"""collect_host_info on this machine (no GPU) and with a fake NVML."""

from __future__ import annotations

import platform
import socket
from datetime import datetime, timezone
from pathlib import Path

import psutil
import pytest

import tokcaliper
from tokcaliper.telemetry import collect_host_info
from tokcaliper.telemetry.host import read_cpu_governor

from .fakes import FakeNVMLError, FakeNvml, h200


def test_this_machine():
    info = collect_host_info()
    assert info.hostname == socket.gethostname()
    assert info.os == platform.system() and info.kernel == platform.release()
    assert info.python_version == platform.python_version()
    assert info.tokcaliper_version == tokcaliper.__version__
    assert info.cpu_logical_cores == psutil.cpu_count()
    assert info.memory_total_bytes == psutil.virtual_memory().total
    assert (info.cpu_governor is None) == ("cpu_governor" in info.missing)
    ts = datetime.fromisoformat(info.timestamp_utc.replace("Z", "+00:00"))
    assert info.timestamp_utc.endswith("Z")
    assert abs((datetime.now(timezone.utc) - ts).total_seconds()) < 60
    try:
        import pynvml

        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
    except Exception:
        assert info.gpus == []
        assert info.gpu_unavailable_reason.startswith("no NVIDIA GPU: nvmlInit failed: NVMLError_")
        assert info.gpu_driver_version is None and info.missing["gpu_driver_version"]
    else:
        assert info.gpus and info.gpu_unavailable_reason is None
    # stored as JSON with every run: the round trip gives back the same host description
    again = type(info).model_validate_json(info.model_dump_json())
    assert again == info and again.missing == info.missing


def test_fake_gpus():
    fake = FakeNvml(
        [h200(), h200(name=b"NVIDIA H200", uuid=b"GPU-2", limit_mw=500000, default_limit_mw=None)],
        driver=b"550.54.15",
        cuda=12040,
    )
    info = collect_host_info(nvml=fake)
    assert info.gpu_unavailable_reason is None
    assert info.gpu_driver_version == "550.54.15" and info.cuda_driver_version == "12.4"
    g0, g1 = info.gpus
    assert (g0.index, g0.name, g0.memory_total_mib, g0.power_limit_w) == (0, "NVIDIA H200", 143771.0, 700.0)
    assert (g1.name, g1.uuid, g1.power_limit_w, g1.power_limit_default_w) == ("NVIDIA H200", "GPU-2", 500.0, None)
    assert g1.missing == {"power_limit_default_w": "FakeNVMLError: Not Supported"}
    assert fake.inits == fake.shutdowns == 1


def test_fake_nvml_init_failure():
    info = collect_host_info(nvml=FakeNvml([], init_error=FakeNVMLError("Driver Not Loaded")))
    assert info.gpus == []
    assert info.gpu_unavailable_reason == "no NVIDIA GPU: nvmlInit failed: FakeNVMLError: Driver Not Loaded"


def test_governor(tmp_path: Path):
    for cpu, gov in [("cpu0", "performance"), ("cpu1", "powersave"), ("cpu2", "performance")]:
        (tmp_path / cpu / "cpufreq").mkdir(parents=True)
        (tmp_path / cpu / "cpufreq" / "scaling_governor").write_text(gov + "\n")
    assert read_cpu_governor(tmp_path) == "performance,powersave"
    assert collect_host_info(nvml=FakeNvml([]), cpu_root=tmp_path).cpu_governor == "performance,powersave"
    with pytest.raises(LookupError):
        read_cpu_governor(tmp_path / "none")
    info = collect_host_info(nvml=FakeNvml([]), cpu_root=tmp_path / "none")
    assert info.cpu_governor is None and "scaling_governor" in info.missing["cpu_governor"]
    assert info.gpu_unavailable_reason == "no NVIDIA GPU: NVML reports 0 devices"
