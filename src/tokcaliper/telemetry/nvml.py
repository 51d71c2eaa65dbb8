"""NVIDIA GPUs through NVML (the ``pynvml`` module of the ``nvidia-ml-py`` package).

Every entry point takes the NVML module as an argument (default: ``import pynvml``)
so tests pass a fake object implementing the few functions used:

``nvmlInit``, ``nvmlShutdown``, ``nvmlDeviceGetCount``, ``nvmlDeviceGetHandleByIndex``,
``nvmlDeviceGetName``, ``nvmlDeviceGetUUID``, ``nvmlDeviceGetMemoryInfo``,
``nvmlSystemGetDriverVersion``, ``nvmlSystemGetCudaDriverVersion``,
``nvmlDeviceGetEnforcedPowerLimit``, ``nvmlDeviceGetPowerManagementDefaultLimit``,
``nvmlDeviceGetClockInfo``, ``nvmlDeviceGetPowerUsage``, ``nvmlDeviceGetTemperature``,
``nvmlDeviceGetUtilizationRates``, ``nvmlDeviceGetCurrentClocksEventReasons`` (fallback
``nvmlDeviceGetCurrentClocksThrottleReasons``), ``nvmlDeviceGetTotalEnergyConsumption``,
``nvmlDeviceGetComputeRunningProcesses``, ``nvmlDeviceGetGraphicsRunningProcesses``,
``nvmlDeviceGetProcessUtilization``.
Constants ``NVML_CLOCK_SM`` (1), ``NVML_CLOCK_MEM`` (2), ``NVML_TEMPERATURE_GPU`` (0)
are read from the module when present, else the nvml.h values are used.

NVML units: clocks MHz, power and limits mW, energy mJ (since driver load), temperature
°C, utilisation percent; this module converts to W and J.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokcaliper.model.telemetry import DeviceInfo, GpuInfo, TelemetrySample
from tokcaliper.model import warnings as W
from tokcaliper.telemetry.backend import BackendUnavailable

__all__ = ["GpuQuery", "NvmlBackend", "load_nvml", "query_gpus", "read_ppid"]

NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_TEMPERATURE_GPU = 0
#: nvml.h ``NVML_ERROR_NOT_FOUND``: ``nvmlDeviceGetProcessUtilization`` has no sample
#: newer than the timestamp asked for (no process ran kernels since): a reading of 0.
NVML_ERROR_NOT_FOUND = 6
_PROC_LISTS = ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses")


def _err(exc: BaseException) -> str:
    msg = str(exc)
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def _s(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def load_nvml(nvml: Any = None) -> tuple[Any, str | None]:
    """Return ``(module, None)`` or ``(None, reason)``.

    Args:
        nvml: an NVML module object to use as is; ``None`` imports ``pynvml``.

    Raises:
        Nothing; an ImportError becomes the reason ``"pynvml not installed: …"``.
    """
    if nvml is not None:
        return nvml, None
    try:
        import pynvml
    except ImportError as exc:  # pragma: no cover - it is a declared dependency
        return None, f"pynvml not installed: {_err(exc)}"
    return pynvml, None


def _init(nvml: Any) -> str | None:
    """``nvmlInit``; returns ``None`` or a ``"no NVIDIA GPU: …"`` reason."""
    try:
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...
        return W.NO_GPU.text(reason=f"nvmlInit failed: {_err(exc)}")
    return None


def _shutdown(nvml: Any) -> None:
    try:
        nvml.nvmlShutdown()
    except Exception:
        pass


@dataclass
class GpuQuery:
    """Result of :func:`query_gpus`.

    Attributes:
        gpus: one :class:`GpuInfo` per device.
        driver_version: ``nvmlSystemGetDriverVersion``.
        cuda_driver_version: ``nvmlSystemGetCudaDriverVersion`` as ``"major.minor"``.
        reason: ``"no NVIDIA GPU: …"`` when ``gpus`` is empty.
        missing: field → reason for the system-level fields left ``None``.
    """

    gpus: list[GpuInfo] = field(default_factory=list)
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    reason: str | None = None
    missing: dict[str, str] = field(default_factory=dict)


def query_gpus(nvml: Any = None) -> GpuQuery:
    """Describe every NVIDIA GPU once (for :class:`~tokcaliper.model.telemetry.HostInfo`).

    Sources: ``nvmlSystemGetDriverVersion``, ``nvmlSystemGetCudaDriverVersion``,
    ``nvmlDeviceGetCount``, ``nvmlDeviceGetHandleByIndex``, ``nvmlDeviceGetName``,
    ``nvmlDeviceGetUUID``, ``nvmlDeviceGetMemoryInfo`` (bytes → MiB),
    ``nvmlDeviceGetEnforcedPowerLimit`` and ``nvmlDeviceGetPowerManagementDefaultLimit``
    (mW → W).

    Args:
        nvml: NVML module object (default ``pynvml``).

    Raises:
        Nothing: a missing library/driver/device gives ``reason``; a failed per-GPU
        field is ``None`` with its reason in ``GpuInfo.missing``.
    """
    mod, reason = load_nvml(nvml)
    if mod is None:
        return GpuQuery(reason=W.NO_GPU.text(reason=reason))
    reason = _init(mod)
    if reason is not None:
        return GpuQuery(reason=reason)
    q = GpuQuery()
    try:
        try:
            q.driver_version = _s(mod.nvmlSystemGetDriverVersion())
        except Exception as exc:
            q.missing["gpu_driver_version"] = _err(exc)
        try:
            v = int(mod.nvmlSystemGetCudaDriverVersion())
            q.cuda_driver_version = f"{v // 1000}.{(v % 1000) // 10}"
        except Exception as exc:
            q.missing["cuda_driver_version"] = _err(exc)
        try:
            count = int(mod.nvmlDeviceGetCount())
        except Exception as exc:
            q.reason = W.NO_GPU.text(reason=f"nvmlDeviceGetCount failed: {_err(exc)}")
            return q
        if count == 0:
            q.reason = W.NO_GPU.text(reason="NVML reports 0 devices")
            return q
        for i in range(count):
            g = GpuInfo(index=i)
            try:
                h = mod.nvmlDeviceGetHandleByIndex(i)
            except Exception as exc:
                g.missing["handle"] = _err(exc)
                q.gpus.append(g)
                continue
            readers: list[tuple[str, Callable[[], Any]]] = [
                ("name", lambda: _s(mod.nvmlDeviceGetName(h))),
                ("uuid", lambda: _s(mod.nvmlDeviceGetUUID(h))),
                ("memory_total_mib", lambda: mod.nvmlDeviceGetMemoryInfo(h).total / 2**20),
                ("power_limit_w", lambda: mod.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0),
                (
                    "power_limit_default_w",
                    lambda: mod.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1000.0,
                ),
            ]
            for name, fn in readers:
                try:
                    setattr(g, name, fn())
                except Exception as exc:
                    g.missing[name] = _err(exc)
            q.gpus.append(g)
        return q
    finally:
        _shutdown(mod)


# Sample fields an NVML device fills, in TelemetrySample order.
_FIELDS = (
    "clock_mhz",
    "mem_clock_mhz",
    "power_w",
    "power_limit_w",
    "temperature_c",
    "utilization_pct",
    "throttle_mask",
    "energy_j",
)


class _Gpu:
    __slots__ = ("info", "handle", "readers", "buf", "proc_lists", "proc_util", "util_ts", "ours_seen")

    def __init__(self, info: DeviceInfo, handle: Any) -> None:
        self.info = info
        self.handle = handle
        self.readers: list[tuple[int, Callable[[Any], Any]]] = []  # (slot, fn(handle))
        self.buf: list[Any] = [None] * len(_FIELDS)  # reused every tick
        self.proc_lists: list[Callable[[Any], Any]] = []  # the running-process lists NVML gives
        self.proc_util: Callable[[Any, int], Any] | None = None  # per-process utilisation
        self.util_ts = 0  # the newest per-process utilisation sample seen, µs (NVML's clock)
        self.ours_seen = False  # the server or the client appeared on it: NVML's pids are ours


def _not_found(exc: BaseException) -> bool:
    """No per-process sample: NVML's NOT_FOUND (pynvml ``NVMLError_NotFound``: ``value`` 6,
    "Not Found"), or pynvml's ``NVMLError(NVML_SUCCESS)`` ("Success"), which its
    ``nvmlDeviceGetProcessUtilization`` raises when the sizing call finds no sample at all."""
    value = getattr(exc, "value", None)
    return value in (0, NVML_ERROR_NOT_FOUND) or str(exc).strip().lower() in ("not found", "success")


def read_ppid(pid: int) -> int | None:
    """The parent of ``pid`` from ``/proc/<pid>/stat``, or None (no such process here)."""
    from tokcaliper.telemetry.procfs import parse_ppid

    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return parse_ppid(f.read())
    except (OSError, ValueError):
        return None


class NvmlBackend:
    """Telemetry back-end for NVIDIA GPUs via NVML.

    Per device and tick it reads (NVML function → sample field, unit):
    ``nvmlDeviceGetClockInfo(h, NVML_CLOCK_SM)`` → ``clock_mhz`` (MHz);
    ``nvmlDeviceGetClockInfo(h, NVML_CLOCK_MEM)`` → ``mem_clock_mhz`` (MHz);
    ``nvmlDeviceGetPowerUsage`` → ``power_w`` (mW → W; on recent GPUs the driver
    averages this over ~1 s); ``nvmlDeviceGetEnforcedPowerLimit`` → ``power_limit_w``
    (mW → W); ``nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU)`` →
    ``temperature_c`` (°C); ``nvmlDeviceGetUtilizationRates().gpu`` →
    ``utilization_pct``; ``nvmlDeviceGetCurrentClocksEventReasons`` (or, on drivers
    without it, ``nvmlDeviceGetCurrentClocksThrottleReasons``) → ``throttle_mask``;
    ``nvmlDeviceGetTotalEnergyConsumption`` (Volta and later) → ``energy_j`` (mJ → J).

    Other processes' use of each GPU (issue 21): ``nvmlDeviceGetComputeRunningProcesses``
    and ``…GraphicsRunningProcesses`` list the processes holding a context; those that
    are neither the client (``own_pids(client=…)``) nor the server or one of its
    descendants (``own_pids(server=…)``; a parent chain through ``/proc/<pid>/stat``,
    cached per pid) are *foreign*: their count → ``foreign_procs``, their
    ``usedGpuMemory`` summed → ``foreign_mem_bytes``. ``nvmlDeviceGetProcessUtilization``
    (samples newer than the last seen, NVML_ERROR_NOT_FOUND = none, a reading of 0)
    gives each process's ``smUtil`` over NVML's last sample period; the mean per
    foreign pid, summed → ``foreign_sm_pct``. A pid this host's ``/proc`` does not
    show cannot be placed: once the server or the client has been seen on that GPU,
    NVML's pids are this pid namespace's and an unplaced one is another container's
    (foreign); before that, NVML may be reporting the host's pids for our own server
    (a container without the host's pid namespace), so the tick's readings are None
    (unknown), not a false "shared". Either is said once in
    ``DeviceInfo.unavailable["foreign_pids"]``.

    Each reading is probed once in :meth:`open`; an unsupported one is never called
    again and its reason lands in ``DeviceInfo.unavailable``. A reading that fails
    later gives ``None`` for that sample and its first error is recorded.

    Args:
        nvml: NVML module object (default ``pynvml``), injectable for tests.
        indices: GPU indices to sample (default: all).
        ppid_of: pid → parent pid or None (default :func:`read_ppid`), injectable for tests.
    """

    name = "nvml"

    def __init__(self, nvml: Any = None, indices: Sequence[int] | None = None,
                 ppid_of: Callable[[int], int | None] = read_ppid) -> None:
        self._nvml_arg = nvml
        self._indices = list(indices) if indices is not None else None
        self._mod: Any = None
        self._gpus: list[_Gpu] = []
        self._ppid_of = ppid_of
        self._server: frozenset[int] = frozenset()
        self._client: frozenset[int] = frozenset()
        self._ours: dict[int, str] = {}

    def own_pids(self, server: Collection[int] = (), client: Collection[int] = ()) -> None:
        """Say which GPU processes are not foreign: the server's tree and the client itself.

        Args:
            server: the server's pid(s); their descendants count as the server too (a
                server's GPU workers are often its children).
            client: the load generator's pid (itself only: the other children of the
                process that runs the benchmark are foreign, as in the CPU figure).
        """
        self._server, self._client = frozenset(server), frozenset(client)
        self._ours = {}

    def _place(self, pid: int) -> str:
        """``"ours"`` (the client, the server or a descendant), ``"foreign"``, or
        ``"unplaced"`` (not in this host's /proc); cached per pid."""
        if pid in self._ours:
            return self._ours[pid]
        where, p, seen = "ours" if pid in self._client else "foreign", pid, 0
        while where == "foreign" and p is not None and p > 1 and seen < 64:  # the parent chain
            if p in self._server:
                where = "ours"
                break
            q = self._ppid_of(p)
            if q is None and p == pid:
                where = "unplaced"
            p, seen = q, seen + 1
        self._ours[pid] = where
        return where

    def _foreign_pids(self, pids: Collection[int], gpu: _Gpu) -> set[int] | None:
        """The foreign ones among ``pids`` (see the class docstring), or None when
        unplaced pids cannot be told from our own server's."""
        places = {pid: self._place(pid) for pid in pids}
        gpu.ours_seen = gpu.ours_seen or "ours" in places.values()
        unplaced = sorted(pid for pid, w in places.items() if w == "unplaced")
        if unplaced and not gpu.ours_seen:
            gpu.info.unavailable.setdefault(
                "foreign_pids", f"pids {unplaced} hold the GPU but are not in this host's /proc, and "
                                "neither the server nor the client was seen on it: NVML may show another "
                                "pid namespace's pids (a container), so other processes' use is unknown")
            return None
        if unplaced:
            gpu.info.unavailable.setdefault(
                "foreign_pids", f"pids {unplaced} are not in this host's /proc while the server's are: "
                                "counted as other processes (another container)")
        return {pid for pid, w in places.items() if w != "ours"}

    def open(self) -> list[DeviceInfo]:
        """Initialise NVML and probe each GPU's readings.

        Returns:
            One :class:`DeviceInfo` per GPU (ids ``"gpu<index>"``, kind ``"nvidia_gpu"``).

        Raises:
            BackendUnavailable: pynvml missing, ``nvmlInit`` failed (e.g.
                ``NVMLError_LibraryNotFound`` on a machine without the driver), or no
                device; the message starts with ``"no NVIDIA GPU: "``.
        """
        mod, reason = load_nvml(self._nvml_arg)
        if mod is None:
            raise BackendUnavailable(W.NO_GPU.text(reason=reason))
        reason = _init(mod)
        if reason is not None:
            raise BackendUnavailable(reason)
        try:
            count = int(mod.nvmlDeviceGetCount())
        except Exception as exc:
            _shutdown(mod)
            raise BackendUnavailable(W.NO_GPU.text(reason=f"nvmlDeviceGetCount failed: {_err(exc)}")) from None
        indices = self._indices if self._indices is not None else list(range(count))
        if not indices:
            _shutdown(mod)
            raise BackendUnavailable(W.NO_GPU.text(reason="NVML reports 0 devices"))
        self._mod = mod
        self._gpus = []
        for i in indices:
            info = DeviceInfo(device=f"gpu{i}", kind="nvidia_gpu")
            try:
                h = mod.nvmlDeviceGetHandleByIndex(i)
            except Exception as exc:
                info.unavailable["device"] = f"nvmlDeviceGetHandleByIndex({i}) failed: {_err(exc)}"
                self._gpus.append(_Gpu(info, None))
                continue
            for attr, fn in (("name", mod.nvmlDeviceGetName), ("uuid", mod.nvmlDeviceGetUUID)):
                try:
                    setattr(info, attr, _s(fn(h)))
                except Exception:
                    pass
            gpu = _Gpu(info, h)
            self._probe(gpu)
            self._gpus.append(gpu)
        return [g.info for g in self._gpus]

    def _probe(self, gpu: _Gpu) -> None:
        mod = self._mod
        sm = getattr(mod, "NVML_CLOCK_SM", NVML_CLOCK_SM)
        mem = getattr(mod, "NVML_CLOCK_MEM", NVML_CLOCK_MEM)
        tgpu = getattr(mod, "NVML_TEMPERATURE_GPU", NVML_TEMPERATURE_GPU)

        def fn_or_none(name: str) -> Callable[..., Any] | None:
            return getattr(mod, name, None)

        clock, power, limit = (
            fn_or_none("nvmlDeviceGetClockInfo"),
            fn_or_none("nvmlDeviceGetPowerUsage"),
            fn_or_none("nvmlDeviceGetEnforcedPowerLimit"),
        )
        temp, util, energy = (
            fn_or_none("nvmlDeviceGetTemperature"),
            fn_or_none("nvmlDeviceGetUtilizationRates"),
            fn_or_none("nvmlDeviceGetTotalEnergyConsumption"),
        )
        candidates: list[tuple[str, list[tuple[str, Callable[[Any], Any] | None]]]] = [
            ("clock_mhz", [("nvmlDeviceGetClockInfo", clock and (lambda h: float(clock(h, sm))))]),
            ("mem_clock_mhz", [("nvmlDeviceGetClockInfo", clock and (lambda h: float(clock(h, mem))))]),
            ("power_w", [("nvmlDeviceGetPowerUsage", power and (lambda h: power(h) / 1000.0))]),
            (
                "power_limit_w",
                [("nvmlDeviceGetEnforcedPowerLimit", limit and (lambda h: limit(h) / 1000.0))],
            ),
            ("temperature_c", [("nvmlDeviceGetTemperature", temp and (lambda h: float(temp(h, tgpu))))]),
            (
                "utilization_pct",
                [("nvmlDeviceGetUtilizationRates", util and (lambda h: float(util(h).gpu)))],
            ),
            (
                "throttle_mask",
                [
                    (n, (lambda f: f and (lambda h: int(f(h))))(fn_or_none(n)))
                    for n in (
                        "nvmlDeviceGetCurrentClocksEventReasons",
                        "nvmlDeviceGetCurrentClocksThrottleReasons",
                    )
                ],
            ),
            (
                "energy_j",
                [
                    (
                        "nvmlDeviceGetTotalEnergyConsumption",
                        energy and (lambda h: energy(h) / 1000.0),
                    )
                ],
            ),
        ]
        for fname in _PROC_LISTS:
            fn = fn_or_none(fname)
            if fn is None:
                continue
            try:
                fn(gpu.handle)
            except Exception as exc:
                gpu.info.unavailable.setdefault("foreign_procs", f"{fname}: {_err(exc)}")
                continue
            gpu.proc_lists.append(fn)
        if gpu.proc_lists:
            gpu.info.unavailable.pop("foreign_procs", None)
        elif "foreign_procs" not in gpu.info.unavailable:
            gpu.info.unavailable["foreign_procs"] = "no running-process list in the NVML module"
        pu = fn_or_none("nvmlDeviceGetProcessUtilization")
        if pu is None:
            gpu.info.unavailable["foreign_sm_pct"] = "nvmlDeviceGetProcessUtilization: not in the NVML module"
        else:
            try:
                self._proc_samples(pu, gpu)
                gpu.proc_util = pu
            except Exception as exc:
                gpu.info.unavailable["foreign_sm_pct"] = f"nvmlDeviceGetProcessUtilization: {_err(exc)}"
        for fld, options in candidates:
            slot = _FIELDS.index(fld)
            errors = []
            for fname, reader in options:
                if reader is None:
                    errors.append(f"{fname}: not in the NVML module")
                    continue
                try:
                    reader(gpu.handle)
                except Exception as exc:
                    errors.append(f"{fname}: {_err(exc)}")
                    continue
                gpu.readers.append((slot, reader))
                break
            else:
                gpu.info.unavailable[fld] = "; ".join(errors)

    def _proc_samples(self, fn: Callable[[Any, int], Any], gpu: _Gpu) -> list[Any]:
        """Per-process utilisation samples newer than the last seen ([] on NOT_FOUND)."""
        try:
            got = list(fn(gpu.handle, gpu.util_ts) or [])
        except Exception as exc:
            if _not_found(exc):
                return []
            raise
        for x in got:
            gpu.util_ts = max(gpu.util_ts, int(getattr(x, "timeStamp", 0) or 0))
        return got

    def _foreign(self, gpu: _Gpu) -> tuple[int | None, int | None, float | None]:
        """(foreign processes, their memory in bytes, their SM share in percent) of one tick."""
        n = mem = None
        if gpu.proc_lists:
            procs: dict[int, int] = {}
            for fn in gpu.proc_lists:
                try:
                    for p in fn(gpu.handle) or []:
                        used = getattr(p, "usedGpuMemory", None)
                        procs[int(p.pid)] = max(procs.get(int(p.pid), 0), int(used or 0))
                except Exception as exc:
                    gpu.info.unavailable.setdefault("foreign_procs", f"failed during run: {_err(exc)}")
            others = self._foreign_pids(procs, gpu)
            if others is not None:
                n, mem = len(others), sum(procs[pid] for pid in others)
        sm = None
        if gpu.proc_util is not None:
            try:
                per: dict[int, list[float]] = {}
                for x in self._proc_samples(gpu.proc_util, gpu):
                    per.setdefault(int(x.pid), []).append(float(x.smUtil))
                others = self._foreign_pids(per, gpu)
                sm = None if others is None else sum(sum(v) / len(v) for pid, v in per.items() if pid in others)
            except Exception as exc:
                gpu.info.unavailable.setdefault("foreign_sm_pct", f"failed during run: {_err(exc)}")
        return n, mem, sm

    def sample(self, t_mono: float, t_wall: float, out: list[TelemetrySample]) -> None:
        """Append one :class:`TelemetrySample` per GPU to ``out``.

        Args:
            t_mono: ``time.monotonic()`` of the tick, s.
            t_wall: ``time.time()`` of the tick, s.
            out: list to append to.

        Raises:
            Nothing; a failed reading is ``None`` and its first error is recorded in
            ``DeviceInfo.unavailable`` as ``"failed during run: …"``.
        """
        for gpu in self._gpus:
            if gpu.handle is None:
                continue
            buf, h = gpu.buf, gpu.handle
            for slot, reader in gpu.readers:
                try:
                    buf[slot] = reader(h)
                except Exception as exc:
                    buf[slot] = None
                    gpu.info.unavailable.setdefault(_FIELDS[slot], f"failed during run: {_err(exc)}")
            n, mem, sm = self._foreign(gpu)
            out.append(
                TelemetrySample.model_construct(
                    device=gpu.info.device,
                    t_mono_s=t_mono,
                    t_wall_s=t_wall,
                    clock_mhz=buf[0],
                    mem_clock_mhz=buf[1],
                    power_w=buf[2],
                    power_limit_w=buf[3],
                    temperature_c=buf[4],
                    utilization_pct=buf[5],
                    throttle_mask=buf[6],
                    energy_j=buf[7],
                    foreign_procs=n,
                    foreign_mem_bytes=mem,
                    foreign_sm_pct=sm,
                )
            )

    def close(self) -> None:
        """``nvmlShutdown`` (errors ignored)."""
        if self._mod is not None:
            _shutdown(self._mod)
            self._mod = None
