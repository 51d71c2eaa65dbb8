"""The telemetry sampler thread and the per-run summary (M5).

One background thread wakes every ``interval_s`` (default 0.1 s = 10 Hz), scheduled
on ``time.perf_counter`` — the load generator's clock (:mod:`tokcaliper.load.driver`),
so sample times and request times share one time axis — asks each back-end to append one :class:`~tokcaliper.model.telemetry.TelemetrySample`
per device, and sleeps again. A sample is also taken synchronously when the run
starts and when it ends, so "clock at start" and "clock at end" (M2 covariates)
are read at the run's edges even for runs shorter than one interval.

The summary arithmetic (:func:`summarize_device`, :func:`summarize`) is pure and
works on any list of samples.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable, Sequence

from tokcaliper.model import warnings as W
from tokcaliper.model.timestamps import utc_iso
from tokcaliper.numbers import num
from tokcaliper.model.telemetry import (
    CLIENT_SATURATION_CORES,
    GPU_KINDS,
    DeviceInfo,
    DeviceSummary,
    TelemetrySample,
    TelemetrySummary,
)
from tokcaliper.telemetry.amd import AmdSmiBackend
from tokcaliper.telemetry.backend import Backend, BackendUnavailable
from tokcaliper.telemetry.cpu import CpuBackend
from tokcaliper.telemetry.nvml import NvmlBackend
from tokcaliper.telemetry.process import ProcessBackend
from tokcaliper.telemetry.procfs import process_cpu_share

#: The sampler's clock: the load generator's (``time.perf_counter``).
clock = time.perf_counter
#: Default sampling interval, s (10 Hz; cost per tick in docs/telemetry.md).
DEFAULT_INTERVAL_S = 0.1
#: Shortest window over which ``cpu_share_max`` is taken, s: /proc CPU times count in
#: 10 ms ticks (USER_HZ = 100), so one 0.1 s interval would be ±0.1 core.
CPU_SHARE_WINDOW_S = 1.0

__all__ = [
    "Backend",  # re-exported from telemetry.backend, where it is defined
    "BackendUnavailable",
    "DEFAULT_INTERVAL_S",
    "TelemetrySampler",
    "client_saturation",
    "default_backends",
    "foreign_cpu",
    "measure_idle",
    "summarize",
    "summarize_device",
]

def default_backends() -> list[Backend]:
    """The default back-ends, in order: NVML (NVIDIA GPUs, ``pynvml``), AMD SMI (AMD GPUs,
    ``amdsmi`` when it imports), the host CPU (/proc/stat, psutil, RAPL), and this
    process (the load generator, ``/proc/self``). The managed server is added per run
    with :meth:`TelemetrySampler.watch_process`."""
    return [NvmlBackend(), AmdSmiBackend(), CpuBackend(), ProcessBackend(role="client")]


def _mean(xs: Sequence[float]) -> float | None:
    return math.fsum(xs) / len(xs) if xs else None


def _at(xs: list[float | None] | None, i: int) -> float | None:
    return xs[i] if xs is not None and i < len(xs) else None


def _interval_mean(ss: Sequence[TelemetrySample], get) -> float | None:  # type: ignore[no-untyped-def]
    """Mean of a per-interval reading weighted by each interval's length: sample i
    covers (t[i-1], t[i]]; the first sample covers no known interval and is skipped."""
    num = den = 0.0
    for a, b in zip(ss, ss[1:]):
        v = get(b)
        dt = b.t_mono_s - a.t_mono_s
        if v is not None and dt > 0:
            num += v * dt
            den += dt
    if den > 0:
        return num / den
    vals = [get(x) for x in ss if get(x) is not None]
    return _mean(vals)


def _summarize_process(ss: Sequence[TelemetrySample], out: DeviceSummary) -> None:
    """CPU time, share and RSS of a process device (no-op for devices without them)."""
    cpu = [s for s in ss if s.cpu_time_s is not None]
    if len(cpu) >= 2:
        out.cpu_time_s = cpu[-1].cpu_time_s - cpu[0].cpu_time_s  # type: ignore[operator]
        out.cpu_share_mean = process_cpu_share(cpu[0].cpu_time_s, cpu[-1].cpu_time_s,  # type: ignore[arg-type]
                                               cpu[-1].t_mono_s - cpu[0].t_mono_s)
        best: float | None = None
        j = 0
        for i, a in enumerate(cpu):  # every window of ≥ CPU_SHARE_WINDOW_S between samples
            j = max(j, i + 1)
            while j < len(cpu) and cpu[j].t_mono_s - a.t_mono_s < CPU_SHARE_WINDOW_S:
                j += 1
            if j == len(cpu):
                break
            share = process_cpu_share(a.cpu_time_s, cpu[j].cpu_time_s,  # type: ignore[arg-type]
                                      cpu[j].t_mono_s - a.t_mono_s)
            if share is not None and (best is None or share > best):
                best = share
        out.cpu_share_max = best if best is not None else out.cpu_share_mean
    rss = [s.rss_bytes for s in ss if s.rss_bytes is not None]
    if rss:
        out.rss_peak_bytes, out.rss_end_bytes = max(rss), rss[-1]


def _summarize_foreign_gpu(ss: Sequence[TelemetrySample], out: DeviceSummary) -> None:
    """Other processes on a GPU over the run: most of them at once, their memory (mean and
    peak, MiB) and SM share (mean and max of the per-tick readings, percent)."""
    n = [s.foreign_procs for s in ss if s.foreign_procs is not None]
    if n:
        out.foreign_procs_max = max(n)
    mem = [s.foreign_mem_bytes / 2**20 for s in ss if s.foreign_mem_bytes is not None]
    if mem:
        out.foreign_mem_mean_mib, out.foreign_mem_peak_mib = _mean(mem), max(mem)
    sm = [s.foreign_sm_pct for s in ss if s.foreign_sm_pct is not None]
    if sm:
        out.foreign_sm_mean_pct, out.foreign_sm_max_pct = _mean(sm), max(sm)


def client_saturation(
    devices: Sequence[DeviceSummary], threshold_cores: float = CLIENT_SATURATION_CORES
) -> tuple[bool | None, str | None]:
    """Was the load generator itself saturated? (pure)

    Args:
        devices: a run's device summaries; the one with ``device == "client"`` and
            ``kind == "process"`` is the load generator.
        threshold_cores: flag at a mean CPU share ≥ this many cores (default
            :data:`~tokcaliper.model.telemetry.CLIENT_SATURATION_CORES` = 0.9).

    Returns:
        ``(flag, line)``: ``flag`` None when the client was not sampled; ``line`` gives
        the arithmetic, e.g. ``"client CPU 9.60 s / 10.0 s = 0.960 cores … ≥ 0.9: saturated: …"``.

    Raises:
        Nothing.
    """
    for d in devices:
        if d.device == "client" and d.kind == "process" and d.cpu_share_mean is not None:
            flag = d.cpu_share_mean >= threshold_cores
            dur = d.cpu_time_s / d.cpu_share_mean if d.cpu_share_mean > 0 else None  # type: ignore[operator]
            span = f"{num(d.cpu_time_s)} s / {num(dur)} s = " if dur else ""
            peak = ("" if d.cpu_share_max is None
                    else f" (max over {CPU_SHARE_WINDOW_S:g} s windows {num(d.cpu_share_max)})")
            verdict = "saturated: its latencies are inflated" if flag else "not saturated"
            return flag, (f"client CPU {span}{num(d.cpu_share_mean)} cores{peak} "
                          f"{'≥' if flag else '<'} {threshold_cores:g}: {verdict}")
    return None, None


def foreign_cpu(samples: Sequence[TelemetrySample], n_cores: int | None = None,
                window_s: float = CPU_SHARE_WINDOW_S) -> tuple[float | None, float | None, str | None]:
    """Cores other processes used during a run: host busy cores − server − client (pure; issue 21).

    Per tick (the samples of one tick share ``t_mono_s``): the host's busy cores over
    the interval since the previous tick are ``utilization_pct / 100 × n_cores``
    (``/proc/stat``); the server's and the client's are their CPU-time deltas over the
    same interval (``/proc/<pid>/stat``). Cumulated over ticks, any span [a, b] gives
    ``foreign = (ΔB − ΔS − ΔC) / (b − a)`` with B, S, C the cumulative busy, server and
    client CPU seconds. A process that was not sampled counts 0 (its CPU is then in
    the foreign figure: with ``--url`` the server is found by its listening port).

    Args:
        samples: one run's samples, time order.
        n_cores: logical CPUs behind ``utilization_pct`` (default: the width of
            ``core_utilization_pct``).
        window_s: shortest span of the max (as the process share's max).

    Returns:
        ``(mean, max, line)`` in cores (clamped at 0: tick rounding can make the
        difference slightly negative); all ``None`` without host CPU samples.

    Raises:
        Nothing.
    """
    ticks: dict[float, dict[str, TelemetrySample]] = {}
    for s in samples:
        if s.device in ("cpu", "server", "client"):
            ticks.setdefault(s.t_mono_s, {})[s.device] = s
    times = sorted(ticks)
    width = n_cores or max((len(s.core_utilization_pct or ()) for s in samples if s.device == "cpu"),
                           default=0)
    if len(times) < 2 or not width or not any("cpu" in ticks[t] for t in times):
        return None, None, None
    busy, proc = [0.0], {"server": [0.0], "client": [0.0]}
    last_cpu: dict[str, float | None] = {r: None for r in proc}
    for r in proc:
        first = ticks[times[0]].get(r)
        last_cpu[r] = first.cpu_time_s if first is not None else None
    seen = {r: False for r in proc}
    for a, b in zip(times, times[1:]):
        host = ticks[b].get("cpu")
        u = host.utilization_pct if host is not None else None
        busy.append(busy[-1] + (0.0 if u is None else u / 100.0 * width * (b - a)))
        for r in proc:
            s = ticks[b].get(r)
            v = s.cpu_time_s if s is not None else None
            d = 0.0
            if v is not None and last_cpu[r] is not None and v >= last_cpu[r]:  # type: ignore[operator]
                d = v - last_cpu[r]  # type: ignore[operator]
                seen[r] = True
            if v is not None:
                last_cpu[r] = v
            proc[r].append(proc[r][-1] + d)

    def span(i: int, j: int) -> float:
        dt = times[j] - times[i]
        fb = busy[j] - busy[i] - sum(proc[r][j] - proc[r][i] for r in proc)
        return max(0.0, fb / dt)

    n = len(times) - 1
    mean = span(0, n)
    best: float | None = None
    j = 0
    for i in range(n):
        j = max(j, i + 1)
        while j < n and times[j] - times[i] < window_s:
            j += 1
        if times[j] - times[i] < window_s and best is not None:
            break
        v = span(i, j)
        best = v if best is None or v > best else best
    dur = times[n] - times[0]
    parts = [f"host busy {num(busy[n] / dur)}"]
    parts += [f"{r} {num(proc[r][n] / dur)}" if seen[r] else f"{r} not sampled" for r in proc]
    line = (f"other processes {num(mean)} cores = {' − '.join(parts)} (mean over {num(dur)} s, "
            f"{width} CPUs)")
    return mean, best, line


def summarize_device(info: DeviceInfo, samples: Iterable[TelemetrySample]) -> DeviceSummary:
    """Summarise one device's samples of one run (pure; METHODS.md M5).

    Args:
        info: the device (its ``unavailable`` reasons are carried over).
        samples: that device's samples; other devices' samples are ignored. Order by
            ``t_mono_s`` is assumed (the sampler appends in time order).

    Returns:
        :class:`DeviceSummary`: clocks (MHz) at start/end/mean/min/max; power (W)
        mean/max; energy (J) from the cumulative-counter delta (``energy_source =
        "counter"``) or else the trapezoidal integral of power over monotonic time
        (``"power_integral"``); temperatures (°C) at start/end/peak; the share of
        samples showing each throttle reason; the clock drop start → end. Where a
        device reports energy but not power (CPU via RAPL), ``power_mean_w`` = energy
        / duration. Host CPU (kind ``"cpu"``): utilisation, per-core utilisation and
        steal share are means weighted by each sample's interval. Processes (kind
        ``"process"``): CPU time, mean share (ΔCPU / Δt, cores), the highest share
        over any window of ≥ :data:`CPU_SHARE_WINDOW_S`, peak and last RSS. GPUs:
        other processes' count (max), memory (mean, peak; MiB) and SM share (mean,
        max; percent) from the per-tick ``foreign_*`` readings.

    Raises:
        Nothing; metrics with no data stay ``None``.
    """
    ss = [s for s in samples if s.device == info.device]
    out = DeviceSummary(
        device=info.device,
        kind=info.kind,
        name=info.name,
        uuid=info.uuid,
        sample_count=len(ss),
        unavailable=dict(info.unavailable),
    )
    if not ss:
        out.unavailable.setdefault("samples", "no samples were taken")
        return out
    out.duration_s = ss[-1].t_mono_s - ss[0].t_mono_s

    clocks = [s.clock_mhz for s in ss if s.clock_mhz is not None]
    if clocks:
        out.clock_start_mhz, out.clock_end_mhz = clocks[0], clocks[-1]
        out.clock_mean_mhz = _mean(clocks)
        out.clock_min_mhz, out.clock_max_mhz = min(clocks), max(clocks)
        out.clock_drop_mhz = clocks[0] - clocks[-1]
        if clocks[0] > 0:
            out.clock_drop_pct = out.clock_drop_mhz / clocks[0]
    out.mem_clock_mean_mhz = _mean([s.mem_clock_mhz for s in ss if s.mem_clock_mhz is not None])

    powers = [s.power_w for s in ss if s.power_w is not None]
    if powers:
        out.power_mean_w = _mean(powers)
        out.power_max_w = max(powers)
    limits = [s.power_limit_w for s in ss if s.power_limit_w is not None]
    if limits:
        out.power_limit_start_w, out.power_limit_end_w = limits[0], limits[-1]

    # Trapezoidal integral of power over monotonic time (pairs with both readings).
    integral, have_pair = 0.0, False
    for a, b in zip(ss, ss[1:]):
        if a.power_w is not None and b.power_w is not None:
            integral += 0.5 * (a.power_w + b.power_w) * (b.t_mono_s - a.t_mono_s)
            have_pair = True
    if have_pair:
        out.energy_power_integral_j = integral

    energies = [s for s in ss if s.energy_j is not None]
    counter_ok = len(energies) >= 2 and energies[-1].energy_j >= energies[0].energy_j  # type: ignore[operator]
    if counter_ok:
        out.energy_j = energies[-1].energy_j - energies[0].energy_j  # type: ignore[operator]
        out.energy_source = "counter"
        span = energies[-1].t_mono_s - energies[0].t_mono_s
        if not powers and span > 0:
            out.power_mean_w = out.energy_j / span
    elif have_pair:
        out.energy_j = integral
        out.energy_source = "power_integral"
        if len(energies) >= 2:
            out.unavailable.setdefault("energy_counter", "energy counter went backwards (reset?)")

    temps = [s.temperature_c for s in ss if s.temperature_c is not None]
    if temps:
        out.temperature_start_c, out.temperature_end_c = temps[0], temps[-1]
        out.temperature_peak_c = max(temps)
    if info.kind == "cpu":
        # Host readings cover the interval since the previous sample: weight by it.
        out.utilization_mean_pct = _interval_mean(ss, lambda s: s.utilization_pct)
        steal = _interval_mean(ss, lambda s: s.steal_pct)
        out.steal_share = None if steal is None else steal / 100.0
        width = max((len(s.core_utilization_pct) for s in ss if s.core_utilization_pct), default=0)
        if width:
            out.core_utilization_mean_pct = [
                _interval_mean(ss, lambda s, i=i: _at(s.core_utilization_pct, i)) for i in range(width)
            ]
    else:
        out.utilization_mean_pct = _mean([s.utilization_pct for s in ss if s.utilization_pct is not None])
    _summarize_process(ss, out)
    _summarize_foreign_gpu(ss, out)

    masks = [s.throttle_mask for s in ss if s.throttle_mask is not None]
    out.throttle_samples = len(masks)
    if masks:
        counts: dict[str, int] = {}
        for s in ss:
            if s.throttle_mask:
                for name in s.throttle_reasons:
                    counts[name] = counts.get(name, 0) + 1
        out.throttle_share = {k: v / len(masks) for k, v in sorted(counts.items())}
    return out


def summarize(
    samples: Sequence[TelemetrySample],
    devices: Sequence[DeviceInfo],
    interval_s: float,
) -> TelemetrySummary:
    """Summarise one run's samples over all devices (pure).

    Args:
        samples: all samples of the run, in time order.
        devices: the devices sampled (one :class:`DeviceSummary` each).
        interval_s: the sampling interval used, s.

    Returns:
        :class:`TelemetrySummary` with ``devices`` filled, the client-saturation flag
        (:func:`client_saturation`), and run start/end/duration taken from the first and
        last sample; sampler bookkeeping fields keep their defaults.

    Raises:
        Nothing.
    """
    summary = TelemetrySummary(
        interval_s=interval_s,
        devices=[summarize_device(d, samples) for d in devices],
    )
    summary.client_saturated, summary.client_saturation = client_saturation(summary.devices)
    (summary.foreign_cpu_cores_mean, summary.foreign_cpu_cores_max,
     summary.foreign_cpu) = foreign_cpu(samples)
    if samples:
        summary.started_at_utc = None if samples[0].t_wall_s is None else utc_iso(samples[0].t_wall_s)
        summary.ended_at_utc = None if samples[-1].t_wall_s is None else utc_iso(samples[-1].t_wall_s)
        summary.duration_s = samples[-1].t_mono_s - samples[0].t_mono_s
    return summary


class TelemetrySampler:
    """Sample GPU/CPU telemetry in one background thread around one run (M5).

    Usage::

        sampler = TelemetrySampler()        # 10 Hz
        sampler.measure_idle(10)          # optional, before the load
        with sampler:
            run_the_load()
        summary = sampler.summary()       # TelemetrySummary
        samples = sampler.samples         # list[TelemetrySample]

    The thread reads every device once per tick; ticks are scheduled on
    ``time.perf_counter()`` (wall time via ``time.time()`` is recorded alongside) and a
    tick that overruns skips the missed ones (counted in ``missed_ticks``) rather than
    bursting. Only the sample records are allocated per tick.

    Args:
        interval_s: seconds between ticks (> 0; default 0.1 = 10 Hz).
        backends: back-ends to use; ``None`` = :func:`default_backends` (NVML, AMD SMI,
            host CPU, the client process).
            A back-end whose ``open`` raises :class:`BackendUnavailable` is skipped
            and its reason kept (``summary().backend_errors``; for NVML also
            ``gpu_unavailable_reason``).

    Raises:
        ValueError: ``interval_s`` is not positive.
    """

    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S, backends: Sequence[Backend] | None = None) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s!r}")
        self.interval_s = float(interval_s)
        self._backend_arg = list(backends) if backends is not None else None
        self._backends: list[Backend] | None = None  # opened back-ends
        self._devices: list[DeviceInfo] = []
        self._backend_errors: dict[str, str] = {}
        self._gpu_reason: str | None = None
        self._samples: list[TelemetrySample] = []
        self._idle_power: dict[str, float] = {}
        self._idle_duration: float | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._opened_once = False
        self._extra: list[Backend] = []
        self._backend_names: list[str] = []
        self._reset_counters()

    def watch_process(self, pid: int, role: str = "server") -> None:
        """Also sample process ``pid`` (CPU time, RSS) as device ``role`` from the next start.

        The runner calls this with the managed server's pid.

        Raises:
            RuntimeError: the sampler is running.
        """
        if self._thread is not None:
            raise RuntimeError("watch_process must be called before the sampler starts")
        self._extra.append(ProcessBackend(pid=pid, role=role))
        self._close()  # reopen with the new back-end at the next start

    # -- lifecycle -------------------------------------------------------------------

    def _reset_counters(self) -> None:
        self._ticks = 0
        self._missed = 0
        self._cost_sum = 0.0
        self._cost_max = 0.0

    def _open(self) -> bool:
        """Open back-ends once; returns True if this call opened them."""
        if self._backends is not None:
            return False
        backends = self._backend_arg if self._backend_arg is not None else default_backends()
        backends = [*backends, *self._extra]
        watched = [b for b in backends if isinstance(b, ProcessBackend)]
        for b in backends:  # a GPU back-end tells other processes' GPU use from the run's own
            if hasattr(b, "own_pids"):
                b.own_pids(server=[w.pid for w in watched if w.role == "server"],  # type: ignore[attr-defined]
                           client=[w.pid for w in watched if w.role == "client"])
        opened: list[Backend] = []
        self._devices = []
        self._backend_errors = {}
        for b in backends:
            name = getattr(b, "name", type(b).__name__)
            try:
                devs = b.open()
            except BackendUnavailable as exc:
                self._backend_errors[name] = str(exc)
                continue
            except Exception as exc:  # a broken source must not stop the run
                self._backend_errors[name] = f"open failed: {type(exc).__name__}: {exc}"
                continue
            opened.append(b)
            self._devices.extend(devs)
        self._backends = opened
        self._backend_names = [getattr(b, "name", type(b).__name__) for b in opened]
        self._opened_once = True
        if any(d.kind in GPU_KINDS for d in self._devices):
            self._gpu_reason = None
        elif "nvml" in self._backend_errors:
            reason = self._backend_errors["nvml"]
            no_gpu = W.NO_GPU.text(reason="")
            self._gpu_reason = reason if reason.startswith(no_gpu) else W.NO_GPU.text(reason=reason)
        else:
            self._gpu_reason = W.NO_GPU.text(reason="NVML back-end not in use")
        return True

    def _close(self) -> None:
        for b in self._backends or []:
            try:
                b.close()
            except Exception:
                pass
        self._backends = None

    def _tick(self, out: list[TelemetrySample]) -> None:
        t_mono = clock()
        t_wall = time.time()
        for b in self._backends or ():
            try:
                b.sample(t_mono, t_wall, out)
            except Exception as exc:  # keep sampling the other back-ends
                self._backend_errors.setdefault(
                    getattr(b, "name", type(b).__name__), f"sample failed: {type(exc).__name__}: {exc}"
                )
        cost = clock() - t_mono
        self._ticks += 1
        self._cost_sum += cost
        if cost > self._cost_max:
            self._cost_max = cost

    def _loop(self, t_first: float) -> None:
        interval = self.interval_s
        next_t = t_first + interval
        while not self._stop.wait(max(0.0, next_t - clock())):
            self._tick(self._samples)
            next_t += interval
            now = clock()
            if next_t < now:
                skipped = int((now - next_t) // interval) + 1
                self._missed += skipped
                next_t += skipped * interval

    def start(self) -> TelemetrySampler:
        """Open back-ends, take the start sample, and start the sampling thread.

        Raises:
            RuntimeError: already running.
        """
        if self._thread is not None:
            raise RuntimeError("TelemetrySampler is already running")
        self._open()
        self._samples = []
        self._reset_counters()
        self._stop.clear()
        t_first = clock()
        self._tick(self._samples)
        self._thread = threading.Thread(
            target=self._loop, args=(t_first,), name="tokcaliper-telemetry", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the thread, take the end sample, and close the back-ends. Idempotent."""
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        self._tick(self._samples)
        self._close()

    def __enter__(self) -> TelemetrySampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- idle power ------------------------------------------------------------------

    def measure_idle(self, seconds: float) -> dict[str, float]:
        """Measure idle power before the load (M5: a setting can raise idle power, which
        costs headroom on a power-capped machine). Blocks the caller for ``seconds``,
        sampling every ``interval_s`` on the calling thread.

        Args:
            seconds: how long to sample, s (> 0).

        Returns:
            device → mean power, W: energy-counter delta / elapsed time where the device
            has an energy counter (NVML ``nvmlDeviceGetTotalEnergyConsumption``, RAPL
            ``energy_uj``), else the mean of ``nvmlDeviceGetPowerUsage`` readings.
            Devices with neither are left out. Also stored for :meth:`summary`.

        Raises:
            ValueError: ``seconds`` is not positive.
            RuntimeError: called while the sampler is running.
        """
        if not seconds > 0:
            raise ValueError(f"seconds must be > 0, got {seconds!r}")
        if self._thread is not None:
            raise RuntimeError("measure_idle must run before the sampler starts")
        opened_here = self._open()
        saved = (self._ticks, self._missed, self._cost_sum, self._cost_max)
        samples: list[TelemetrySample] = []
        t0 = clock()
        end = t0 + seconds
        next_t = t0
        try:
            while True:
                self._tick(samples)
                now = clock()
                if now >= end:
                    break
                next_t = min(next_t + self.interval_s, end)
                time.sleep(max(0.0, next_t - now))
        finally:
            self._ticks, self._missed, self._cost_sum, self._cost_max = saved
            if opened_here:
                self._close()
        idle: dict[str, float] = {}
        for d in self._devices:
            s = summarize_device(d, samples)
            if s.energy_source == "counter" and s.duration_s:
                idle[d.device] = s.energy_j / s.duration_s  # type: ignore[operator]
            elif s.power_mean_w is not None:
                idle[d.device] = s.power_mean_w
        self._idle_power = idle
        self._idle_duration = clock() - t0
        return dict(idle)

    # -- results ---------------------------------------------------------------------

    @property
    def samples(self) -> list[TelemetrySample]:
        """A copy of the samples of the current/last run, in time order."""
        return list(self._samples)

    @property
    def devices(self) -> list[DeviceInfo]:
        """Devices sampled by the opened back-ends (empty before the first start)."""
        return list(self._devices)

    def summary(self) -> TelemetrySummary:
        """Per-run summary of the samples so far (callable during or after the run).

        Returns:
            :class:`TelemetrySummary` (see :func:`summarize`) plus the GPU/back-end
            reasons, idle power, tick counts and sampling cost.

        Raises:
            RuntimeError: the sampler was never started.
        """
        if not self._opened_once:
            raise RuntimeError("TelemetrySampler has not been started")
        snapshot = list(self._samples)
        summary = summarize(snapshot, self._devices, self.interval_s)
        summary.gpu_unavailable_reason = self._gpu_reason
        summary.backends = list(self._backend_names)
        summary.backend_errors = dict(self._backend_errors)
        summary.idle_power_w = dict(self._idle_power)
        summary.idle_duration_s = self._idle_duration
        summary.ticks = self._ticks
        summary.missed_ticks = self._missed
        if self._ticks:
            summary.sample_cost_ms_mean = 1000.0 * self._cost_sum / self._ticks
            summary.sample_cost_ms_max = 1000.0 * self._cost_max
        return summary


def measure_idle(
    seconds: float, interval_s: float = DEFAULT_INTERVAL_S, backends: Sequence[Backend] | None = None
) -> dict[str, float]:
    """Idle power per device, W, over ``seconds`` (see :meth:`TelemetrySampler.measure_idle`).

    Raises:
        ValueError: ``seconds`` or ``interval_s`` is not positive.
    """
    return TelemetrySampler(interval_s=interval_s, backends=backends).measure_idle(seconds)
