"""Telemetry during runs (METHODS.md M5): host description, sampler thread, back-ends.

* :func:`collect_host_info` — where a run happened (:class:`~tokcaliper.model.telemetry.HostInfo`).
* :class:`TelemetrySampler` — a background thread sampling GPU (NVML) and host CPU
  (psutil, RAPL) around one run; ``.summary()`` gives a
  :class:`~tokcaliper.model.telemetry.TelemetrySummary`; ``.measure_idle(s)`` measures
  idle power before the load.
* :class:`NvmlBackend`, :class:`CpuBackend` — back-ends; NVML takes an injectable module
  object so everything is testable without a GPU.
* :func:`summarize` / :func:`summarize_device` — the pure per-run arithmetic.
"""

from tokcaliper.model.telemetry import (
    DeviceInfo,
    DeviceSummary,
    GpuInfo,
    HostInfo,
    TelemetrySample,
    TelemetrySummary,
    decode_clock_event_reasons,
)
from tokcaliper.telemetry.backend import Backend, BackendUnavailable
from tokcaliper.telemetry.cpu import CpuBackend
from tokcaliper.telemetry.host import collect_host_info
from tokcaliper.telemetry.nvml import NvmlBackend, query_gpus
from tokcaliper.telemetry.sampler import (
    TelemetrySampler,
    default_backends,
    measure_idle,
    summarize,
    summarize_device,
)

__all__ = [
    "Backend",
    "BackendUnavailable",
    "CpuBackend",
    "DeviceInfo",
    "DeviceSummary",
    "GpuInfo",
    "HostInfo",
    "NvmlBackend",
    "TelemetrySample",
    "TelemetrySampler",
    "TelemetrySummary",
    "collect_host_info",
    "decode_clock_event_reasons",
    "default_backends",
    "measure_idle",
    "query_gpus",
    "summarize",
    "summarize_device",
]
