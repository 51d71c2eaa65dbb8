"""Telemetry types: host description, one sample, and the per-run summary (METHODS.md M5).

Pure data, no I/O. The back-ends in :mod:`tokcaliper.telemetry` fill these;
:mod:`tokcaliper.stats` (clumps, M2) reads ``clock_start_mhz`` and
``temperature_start_c`` from :class:`DeviceSummary` as covariates.

Units are in the field names: MHz, W, °C (``_c``), J, s, bytes, MiB, percent.
"""

from __future__ import annotations

from pydantic import BaseModel, Field, computed_field

from tokcaliper.model.doctor import MachineCheck

from tokcaliper.model.timestamps import UtcTimestamp

#: ``DeviceInfo.kind`` of GPUs (NVML and AMD SMI back-ends); ``"cpu"`` is the host,
#: ``"process"`` a watched process (the load generator itself, the managed server).
GPU_KINDS: frozenset[str] = frozenset({"nvidia_gpu", "amd_gpu"})

#: A load generator whose mean CPU share over a run reaches this many cores is
#: flagged as saturated: the Python client runs one asyncio event loop (one core
#: under the GIL), so near 1.0 its own scheduling delays inflate every latency it
#: reports. 0.9 leaves room for the sampler thread's own ~1% at 10 Hz.
CLIENT_SATURATION_CORES = 0.9
#: Mean cores other processes may use during a run (host busy − server − client)
#: before the run is flagged as sharing its host (issue 21; the gate of
#: :mod:`tokcaliper.stats.gates` and ``tokcaliper doctor``). Half a core: on the
#: 2-core host of the issue the slow runs lost 0.8–0.9 cores to other work.
FOREIGN_CPU_BOUND_CORES = 0.5

#: Mean share of a GPU's SM time (percent, NVML per-process ``smUtil`` summed over the
#: processes other than the server's) at which a run is flagged as sharing its GPU
#: (issue 21; :mod:`tokcaliper.stats.gates`). Contexts of different processes on one GPU
#: without MPS are time-sliced (NVIDIA Multi-Process Service docs, "Introduction"), so
#: another process's kernels on the SMs x % of the time can slow the server by up to
#: x %; the bound is ``compare``'s default noise band (±1 %,
#: :data:`tokcaliper.stats.verdict_gate.DEFAULT_NOISE_BAND`), the smallest effect a
#: verdict calls, and NVML's smallest non-zero reading.
FOREIGN_GPU_SM_BOUND_PCT = 1.0

# Bit → name table for NVML clock-event (formerly "clocks throttle") reasons.
# Source: nvml.h ``nvmlClocksEventReason*`` / ``nvmlClocksThrottleReason*``
# (identical bit values; pynvml exposes both spellings). Bits 0x200
# (board_limit) and 0x400 (reliability) exist in some NVML versions only.
CLOCK_EVENT_REASON_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
    0x200: "board_limit",
    0x400: "reliability",
}


def decode_clock_event_reasons(mask: int | None) -> list[str]:
    """Decode an NVML clock-event/throttle-reason bitmask to names, lowest bit first.

    Args:
        mask: value returned by ``nvmlDeviceGetCurrentClocksEventReasons`` (or the
            older ``nvmlDeviceGetCurrentClocksThrottleReasons``); ``None`` = not read.

    Returns:
        Names from :data:`CLOCK_EVENT_REASON_BITS`; an unknown bit becomes
        ``"unknown_0x…"``. ``0`` and ``None`` give ``[]``.

    Raises:
        Nothing.
    """
    if not mask:
        return []
    names = []
    bit = 1
    while bit <= mask:
        if mask & bit:
            names.append(CLOCK_EVENT_REASON_BITS.get(bit, f"unknown_{bit:#x}"))
        bit <<= 1
    return names


class GpuInfo(BaseModel):
    """One NVIDIA GPU as NVML describes it at host-info time.

    Attributes:
        index: NVML device index.
        name: marketing name (``nvmlDeviceGetName``).
        uuid: ``GPU-…`` identifier (``nvmlDeviceGetUUID``).
        memory_total_mib: framebuffer size in MiB (``nvmlDeviceGetMemoryInfo().total``).
        power_limit_w: enforced power limit in W (``nvmlDeviceGetEnforcedPowerLimit``).
        power_limit_default_w: default limit in W (``nvmlDeviceGetPowerManagementDefaultLimit``).
        missing: field name → reason for every field left ``None``.
    """

    index: int
    name: str | None = None
    uuid: str | None = None
    memory_total_mib: float | None = None
    power_limit_w: float | None = None
    power_limit_default_w: float | None = None
    missing: dict[str, str] = Field(default_factory=dict)


class BandwidthProbe(BaseModel):
    """One memory-bandwidth measurement of this machine (:mod:`tokcaliper.telemetry.bandwidth`).

    Attributes:
        device: ``"host"`` (system memory) or ``"gpu0"``… (device memory).
        name: the device's model name (CPU model, NVML GPU name), if known.
        method: what was timed, e.g. ``"numpy copy of 2 × 128 MiB float64, 2 threads"``.
        bytes_per_rep: bytes moved per repetition (read + write), bytes.
        repetitions: timed repetitions (one untimed warm-up before them).
        gb_s: the figure used: the fastest repetition, GB/s (1e9 bytes/s;
            STREAM's convention: the best rate is the achievable one).
        gb_s_median / gb_s_min: the median and the slowest repetition, GB/s.
        spread: ``(gb_s − gb_s_min) ÷ gb_s``, the stated relative spread.
        seconds: wall time of the whole probe, s.
        skipped: why the probe did not run (then every figure is None).
    """

    device: str
    name: str | None = None
    method: str | None = None
    bytes_per_rep: int | None = None
    repetitions: int = 0
    gb_s: float | None = None
    gb_s_median: float | None = None
    gb_s_min: float | None = None
    spread: float | None = None
    seconds: float | None = None
    skipped: str | None = None


class HostInfo(BaseModel):
    """Where a run happened. Every field that could not be read is ``None`` and
    its reason is in ``missing`` (collection never raises for a missing source).

    Attributes:
        timestamp_utc: ISO 8601 UTC time of collection, e.g. ``2025-01-31T12:00:00.000Z``.
        hostname: ``socket.gethostname()``.
        os: ``platform.system()``, e.g. ``Linux``.
        os_release: distribution name from ``/etc/os-release`` (``PRETTY_NAME``).
        kernel: ``platform.release()``.
        python_version: ``platform.python_version()``.
        tokcaliper_version: ``tokcaliper.__version__``.
        cpu_model: ``model name`` from ``/proc/cpuinfo`` (fallback ``platform.processor()``).
        cpu_logical_cores / cpu_physical_cores: ``psutil.cpu_count()``.
        memory_total_bytes: ``psutil.virtual_memory().total``.
        cpu_governor: ``/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor`` (distinct
            values joined by ``,``).
        gpu_driver_version: ``nvmlSystemGetDriverVersion``.
        cuda_driver_version: ``nvmlSystemGetCudaDriverVersion`` as ``"12.4"``.
        gpus: one :class:`GpuInfo` per NVML device (empty when none).
        gpu_unavailable_reason: ``"no NVIDIA GPU: <reason>"`` when ``gpus`` is empty.
        bandwidth: memory-bandwidth probes made with the host info (host, then each
            GPU; a GPU probe that cannot run is kept with its ``skipped`` reason);
            empty when none was asked for (older runs).
        missing: field name → reason.
        machine_check: the quick machine check made before the session measured
            (``tokcaliper doctor``'s items; :func:`tokcaliper.doctor.machine_check`),
            None when none was made.
    """

    timestamp_utc: UtcTimestamp
    hostname: str | None = None
    os: str | None = None
    os_release: str | None = None
    kernel: str | None = None
    python_version: str | None = None
    tokcaliper_version: str | None = None
    cpu_model: str | None = None
    cpu_logical_cores: int | None = None
    cpu_physical_cores: int | None = None
    memory_total_bytes: int | None = None
    cpu_governor: str | None = None
    gpu_driver_version: str | None = None
    cuda_driver_version: str | None = None
    gpus: list[GpuInfo] = Field(default_factory=list)
    gpu_unavailable_reason: str | None = None
    bandwidth: list[BandwidthProbe] = Field(default_factory=list)
    missing: dict[str, str] = Field(default_factory=dict)
    machine_check: MachineCheck | None = None

    def bandwidth_of(self, device: str) -> BandwidthProbe | None:
        """The stored probe of ``device`` (``"host"``, ``"gpu0"``…) that has a figure, or None."""
        return next((p for p in self.bandwidth if p.device == device and p.gb_s is not None), None)


class DeviceInfo(BaseModel):
    """A device a telemetry back-end samples.

    Attributes:
        device: id used in samples, e.g. ``"gpu0"`` or ``"cpu"``.
        kind: ``"nvidia_gpu"``, ``"amd_gpu"``, ``"cpu"`` (the host) or ``"process"``
            (a watched process: ``"client"`` = the load generator, ``"server"`` = the
            managed server).
        name: model name where known (for a process: its command name and pid).
        uuid: NVML UUID for GPUs.
        unavailable: metric → reason it is not sampled on this device (probed once at open).
    """

    device: str
    kind: str
    name: str | None = None
    uuid: str | None = None
    unavailable: dict[str, str] = Field(default_factory=dict)


class TelemetrySample(BaseModel):
    """One reading of one device. ``None`` = not available on this device.

    Attributes:
        device: device id (see :class:`DeviceInfo`).
        t_mono_s: ``time.perf_counter()`` at the tick, s: the load generator's clock
            (``RequestRecord`` times come from it; on Linux it is ``CLOCK_MONOTONIC``,
            the same as ``time.monotonic()``). Use it for durations and alignment.
        t_wall_s: ``time.time()`` at the tick, s since the Unix epoch (use to align with logs).
        clock_mhz: GPU SM clock (``nvmlDeviceGetClockInfo(h, NVML_CLOCK_SM)``), or for the
            CPU the mean of ``psutil.cpu_freq(percpu=True)[i].current``, MHz.
        mem_clock_mhz: GPU memory clock (``NVML_CLOCK_MEM``), MHz.
        power_w: GPU board power (``nvmlDeviceGetPowerUsage``), W. ``None`` for the CPU
            (its power comes from energy deltas).
        power_limit_w: enforced power limit (``nvmlDeviceGetEnforcedPowerLimit``), W.
        temperature_c: GPU core (``nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU)``) or
            hottest CPU sensor (``psutil.sensors_temperatures``), °C.
        utilization_pct: GPU utilisation (``nvmlDeviceGetUtilizationRates().gpu``) or
            host CPU utilisation over the interval since the previous sample (``/proc/stat``:
            (Δtotal − Δidle − Δiowait) / Δtotal, as ``psutil.cpu_percent``; elsewhere
            ``psutil.cpu_percent()``), percent.
        throttle_mask: raw clock-event/throttle-reason bitmask (GPU only).
        energy_j: cumulative energy counter, J, arbitrary origin: GPU
            ``nvmlDeviceGetTotalEnergyConsumption`` (mJ since driver load) / 1000; CPU: RAPL
            package energy summed over packages, wraparound-corrected, since back-end open.
        steal_pct: host CPU steal time over the interval since the previous sample,
            Δsteal / Δtotal of ``/proc/stat``, percent (time the hypervisor ran something
            else while this VM's vCPUs wanted to run).
        core_utilization_pct: per logical CPU (``cpuN`` lines of ``/proc/stat``), percent.
        cpu_time_s: a process's cumulative CPU time, user + system, all threads
            (``/proc/<pid>/stat`` utime + stime / ``SC_CLK_TCK``), s.
        rss_bytes: a process's resident set size (``/proc/<pid>/stat`` rss × page size), bytes.
        foreign_procs: GPU only: processes other than the server (its process tree) and
            the client holding a context on this GPU (``nvmlDeviceGetComputeRunningProcesses``
            and ``…GraphicsRunningProcesses``).
        foreign_mem_bytes: GPU memory those processes use (their ``usedGpuMemory``
            summed; a process whose figure NVML does not give counts 0), bytes.
        foreign_sm_pct: the share of SM time their kernels took since the previous
            tick (``nvmlDeviceGetProcessUtilization`` ``smUtil`` summed over them),
            percent; ``None`` where NVML does not give per-process utilisation.
    """

    device: str
    t_mono_s: float
    t_wall_s: float
    clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    temperature_c: float | None = None
    utilization_pct: float | None = None
    throttle_mask: int | None = None
    energy_j: float | None = None
    steal_pct: float | None = None
    core_utilization_pct: list[float | None] | None = None
    cpu_time_s: float | None = None
    rss_bytes: int | None = None
    foreign_procs: int | None = None
    foreign_mem_bytes: int | None = None
    foreign_sm_pct: float | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def throttle_reasons(self) -> list[str]:
        """Names of the bits set in ``throttle_mask`` (see :func:`decode_clock_event_reasons`)."""
        return decode_clock_event_reasons(self.throttle_mask)


class DeviceSummary(BaseModel):
    """Per-run summary of one device (M5). ``clock`` is the SM clock for a GPU and the
    mean core frequency for the CPU.

    Attributes:
        device, kind, name, uuid: see :class:`DeviceInfo`.
        sample_count: samples of this device in the run.
        duration_s: first to last sample, s (monotonic clock).
        clock_start_mhz / clock_end_mhz: first / last sample's clock, MHz.
        clock_mean_mhz / clock_min_mhz / clock_max_mhz: over all samples, MHz.
        clock_drop_mhz: ``clock_start_mhz − clock_end_mhz`` (positive = the clock fell
            during the run; the M2 pattern), MHz.
        clock_drop_pct: that drop as a fraction of ``clock_start_mhz``.
        mem_clock_mean_mhz: GPU memory clock mean, MHz.
        power_mean_w / power_max_w: over samples of ``power_w``, W; for the CPU the
            mean is energy / duration when RAPL was readable (max stays ``None``).
        power_limit_start_w / power_limit_end_w: enforced limit, W (a change means the
            run's setting did not hold).
        energy_j: energy over the run, J (see ``energy_source``).
        energy_source: ``"counter"`` (last − first energy counter) or
            ``"power_integral"`` (trapezoidal integral of ``power_w`` over ``t_mono_s``).
        energy_power_integral_j: the trapezoidal integral even when the counter was used
            (a cross-check), J.
        temperature_start_c / temperature_end_c / temperature_peak_c: °C.
        utilization_mean_pct: percent.
        joules_per_output_token: ``energy_j`` / the run's output tokens, J/token (set by
            the runner, :func:`tokcaliper.experiment.runner.attach_energy_per_token`,
            where both are known).
        steal_share: host CPU steal time as a fraction of CPU time over the run, weighted
            by each interval's length (see ``TelemetrySample.steal_pct``).
        core_utilization_mean_pct: per logical CPU, mean utilisation over the run, percent.
        cpu_time_s: a process's CPU time during the run (last − first sample), s.
        cpu_share_mean: ``cpu_time_s`` / duration: mean cores the process used (1.0 = one
            full core).
        cpu_share_max: the highest share over one sampling interval, cores.
        rss_peak_bytes / rss_end_bytes: a process's largest / last resident set, bytes.
        throttle_share: reason → fraction of the samples (with a readable mask) that
            had it set; samples are evenly spaced, so this estimates the time share.
        throttle_samples: samples with a readable mask (denominator of the shares).
        foreign_procs_max: GPU: the most other processes seen on it in one tick.
        foreign_mem_mean_mib / foreign_mem_peak_mib: GPU memory those processes held,
            mean and largest over the samples, MiB (issue 21).
        foreign_sm_mean_pct / foreign_sm_max_pct: their share of SM time, mean and
            largest over the samples, percent (``None`` where NVML does not give it).
        unavailable: metric → reason it was not measured.
    """

    device: str
    kind: str
    name: str | None = None
    uuid: str | None = None
    sample_count: int = 0
    duration_s: float | None = None
    clock_start_mhz: float | None = None
    clock_end_mhz: float | None = None
    clock_mean_mhz: float | None = None
    clock_min_mhz: float | None = None
    clock_max_mhz: float | None = None
    mem_clock_mean_mhz: float | None = None
    power_mean_w: float | None = None
    power_max_w: float | None = None
    power_limit_start_w: float | None = None
    power_limit_end_w: float | None = None
    energy_j: float | None = None
    energy_source: str | None = None
    energy_power_integral_j: float | None = None
    temperature_start_c: float | None = None
    temperature_end_c: float | None = None
    temperature_peak_c: float | None = None
    utilization_mean_pct: float | None = None
    clock_drop_mhz: float | None = None
    clock_drop_pct: float | None = None
    joules_per_output_token: float | None = None
    steal_share: float | None = None
    core_utilization_mean_pct: list[float | None] | None = None
    cpu_time_s: float | None = None
    cpu_share_mean: float | None = None
    cpu_share_max: float | None = None
    rss_peak_bytes: int | None = None
    rss_end_bytes: int | None = None
    throttle_share: dict[str, float] = Field(default_factory=dict)
    throttle_samples: int = 0
    foreign_procs_max: int | None = None
    foreign_mem_mean_mib: float | None = None
    foreign_mem_peak_mib: float | None = None
    foreign_sm_mean_pct: float | None = None
    foreign_sm_max_pct: float | None = None
    unavailable: dict[str, str] = Field(default_factory=dict)


class TelemetrySummary(BaseModel):
    """Telemetry of one run (M5), plus the idle power measured before it.

    Attributes:
        interval_s: requested sampling interval, s.
        started_at_utc / ended_at_utc: ISO 8601 UTC of the first / last sample.
        duration_s: monotonic time from first to last sample, s.
        devices: one :class:`DeviceSummary` per sampled device.
        gpu_unavailable_reason: ``"no NVIDIA GPU: <reason>"`` when no GPU was sampled.
        backends: the back-ends that sampled this run, in order (e.g. ``["nvml", "cpu",
            "process"]``).
        backend_errors: back-end name → reason it was not used or failed.
        idle_power_w: device → mean idle power, W, measured before the session's
            first run by :meth:`tokcaliper.telemetry.TelemetrySampler.measure_idle`
            (empty if not measured). This is the one home of idle power (M5).
        idle_duration_s: length of that idle measurement, s.
        ticks: sampling ticks taken (each tick samples every device).
        missed_ticks: ticks skipped because sampling overran the interval.
        sample_cost_ms_mean / sample_cost_ms_max: time one tick spent reading all
            devices, ms (sampler overhead).
        client_saturated: the load generator's own mean CPU share reached
            :data:`CLIENT_SATURATION_CORES` of one core (its latencies are inflated);
            ``None`` when the client process was not sampled.
        client_saturation: the arithmetic behind ``client_saturated``, one line.
        foreign_cpu_cores_mean: cores used by processes other than the server and the
            client during the run: host busy cores − server − client (issue 21;
            :func:`tokcaliper.telemetry.sampler.foreign_cpu`); ``None`` when the host
            CPU was not sampled.
        foreign_cpu_cores_max: the same over the busiest window of ≥ 1 s.
        foreign_cpu: the arithmetic behind the mean, one line.
    """

    interval_s: float
    started_at_utc: UtcTimestamp | None = None
    ended_at_utc: UtcTimestamp | None = None
    duration_s: float | None = None
    devices: list[DeviceSummary] = Field(default_factory=list)
    gpu_unavailable_reason: str | None = None
    backends: list[str] = Field(default_factory=list)
    backend_errors: dict[str, str] = Field(default_factory=dict)
    idle_power_w: dict[str, float] = Field(default_factory=dict)
    idle_duration_s: float | None = None
    ticks: int = 0
    missed_ticks: int = 0
    sample_cost_ms_mean: float | None = None
    sample_cost_ms_max: float | None = None
    client_saturated: bool | None = None
    client_saturation: str | None = None
    foreign_cpu_cores_mean: float | None = None
    foreign_cpu_cores_max: float | None = None
    foreign_cpu: str | None = None

    def device(self, device: str) -> DeviceSummary:
        """Return the summary of ``device`` (e.g. ``"gpu0"``).

        Raises:
            KeyError: no such device was sampled.
        """
        for d in self.devices:
            if d.device == device:
                return d
        raise KeyError(device)
