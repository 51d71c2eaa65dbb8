"""Describe the machine a run happens on (:class:`~tokcaliper.model.telemetry.HostInfo`)."""

from __future__ import annotations

import platform
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tokcaliper.model.telemetry import HostInfo
from tokcaliper.model.timestamps import utc_now_iso
from tokcaliper.telemetry.cpu import read_cpu_model
from tokcaliper.telemetry.nvml import query_gpus

__all__ = ["collect_host_info", "read_cpu_governor"]

CPU_SYSFS = Path("/sys/devices/system/cpu")


def read_cpu_governor(cpu_root: str | Path = CPU_SYSFS) -> str | None:
    """Distinct ``cpu*/cpufreq/scaling_governor`` values under ``cpu_root``, sorted and
    joined by ``,`` (e.g. ``"performance"`` or ``"powersave,schedutil"``).

    Raises:
        OSError/LookupError: no governor file is readable (the caller records why).
    """
    root = Path(cpu_root)
    values = set()
    for p in root.glob("cpu[0-9]*/cpufreq/scaling_governor"):
        try:
            values.add(p.read_text().strip())
        except OSError:
            continue
    if not values:
        raise LookupError(f"no readable {root}/cpu*/cpufreq/scaling_governor (no cpufreq driver or container)")
    return ",".join(sorted(values))


def collect_host_info(nvml: Any = None, cpu_root: str | Path = CPU_SYSFS, bandwidth: bool = False) -> HostInfo:
    """Collect a :class:`HostInfo` snapshot of this machine.

    Sources: ``socket.gethostname``; ``platform`` (system, release, Python version);
    ``platform.freedesktop_os_release`` (``/etc/os-release``); ``/proc/cpuinfo``;
    ``psutil.cpu_count`` and ``psutil.virtual_memory``; cpufreq sysfs for the governor;
    NVML for the GPUs and driver (see :func:`tokcaliper.telemetry.nvml.query_gpus`).

    Args:
        nvml: NVML module object (default ``pynvml``), injectable for tests.
        cpu_root: cpufreq sysfs root (default ``/sys/devices/system/cpu``).
        bandwidth: also probe the host's and each GPU's memory bandwidth
            (:func:`tokcaliper.telemetry.bandwidth.probe_machine`, < ~1 s), stored in ``bandwidth``.

    Returns:
        The snapshot; a field that cannot be read is ``None`` with its reason in
        ``missing``; with no GPU, ``gpus == []`` and ``gpu_unavailable_reason`` says
        ``"no NVIDIA GPU: <reason>"``.

    Raises:
        Nothing for a missing source.
    """
    info = HostInfo(timestamp_utc=utc_now_iso())

    def fill(field: str, fn: Callable[[], Any]) -> None:
        try:
            value = fn()
        except Exception as exc:
            info.missing[field] = f"{type(exc).__name__}: {exc}"
            return
        if value is None or value == "":
            info.missing.setdefault(field, "source returned nothing")
            return
        setattr(info, field, value)

    def psutil_mod() -> Any:
        import psutil

        return psutil

    def version() -> str:
        from tokcaliper import __version__

        return __version__

    fill("hostname", socket.gethostname)
    fill("os", platform.system)
    fill("os_release", lambda: platform.freedesktop_os_release().get("PRETTY_NAME"))
    fill("kernel", platform.release)
    fill("python_version", platform.python_version)
    fill("tokcaliper_version", version)
    fill("cpu_model", read_cpu_model)
    fill("cpu_logical_cores", lambda: psutil_mod().cpu_count(logical=True))
    fill("cpu_physical_cores", lambda: psutil_mod().cpu_count(logical=False))
    fill("memory_total_bytes", lambda: int(psutil_mod().virtual_memory().total))
    fill("cpu_governor", lambda: read_cpu_governor(cpu_root))

    q = query_gpus(nvml)
    info.gpus = q.gpus
    info.gpu_driver_version = q.driver_version
    info.cuda_driver_version = q.cuda_driver_version
    info.gpu_unavailable_reason = q.reason
    info.missing.update(q.missing)
    if q.reason is not None:
        for f in ("gpu_driver_version", "cuda_driver_version"):
            if getattr(info, f) is None:
                info.missing.setdefault(f, q.reason)
    if bandwidth:
        from tokcaliper.telemetry.bandwidth import probe_machine

        info.bandwidth = probe_machine(info)
    return info
