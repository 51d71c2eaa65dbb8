"""Telemetry during runs (METHODS.md M5): host description, sampler thread, back-ends.

* :func:`collect_host_info` — where a run happened (:class:`~tokcaliper.model.telemetry.HostInfo`).
* :class:`TelemetrySampler` — a background thread (10 Hz by default) sampling GPUs
  (NVML, AMD SMI), the host CPU (/proc/stat, psutil, RAPL) and processes (the load
  generator, the managed server) around one run; ``.summary()`` gives a
  :class:`~tokcaliper.model.telemetry.TelemetrySummary`; ``.measure_idle(s)`` measures
  idle power before the load.
* :class:`NvmlBackend`, :class:`AmdSmiBackend`, :class:`CpuBackend`,
  :class:`ProcessBackend` — back-ends; the GPU ones take an injectable module object
  so everything is testable without a GPU.
* :func:`summarize` / :func:`summarize_device` / :func:`client_saturation` — the pure
  per-run arithmetic; :mod:`~tokcaliper.telemetry.procfs` — the /proc arithmetic.
* :func:`pack_samples` / :func:`unpack_samples` — the compact raw-sample blob the store keeps.
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
from tokcaliper.telemetry.amd import AmdSmiBackend
from tokcaliper.telemetry.backend import Backend, BackendUnavailable
from tokcaliper.telemetry.cpu import CpuBackend
from tokcaliper.telemetry.host import collect_host_info
from tokcaliper.telemetry.nvml import NvmlBackend, query_gpus
from tokcaliper.telemetry.process import ProcessBackend
from tokcaliper.telemetry.raw import pack_samples, unpack_samples
from tokcaliper.telemetry.sampler import (
    DEFAULT_INTERVAL_S,
    TelemetrySampler,
    client_saturation,
    default_backends,
    foreign_cpu,
    measure_idle,
    summarize,
    summarize_device,
)

__all__ = [
    "DEFAULT_INTERVAL_S",
    "AmdSmiBackend",
    "Backend",
    "BackendUnavailable",
    "CpuBackend",
    "DeviceInfo",
    "DeviceSummary",
    "GpuInfo",
    "HostInfo",
    "NvmlBackend",
    "ProcessBackend",
    "TelemetrySample",
    "TelemetrySampler",
    "TelemetrySummary",
    "client_saturation",
    "collect_host_info",
    "decode_clock_event_reasons",
    "default_backends",
    "foreign_cpu",
    "measure_idle",
    "pack_samples",
    "query_gpus",
    "summarize",
    "summarize_device",
    "unpack_samples",
]
