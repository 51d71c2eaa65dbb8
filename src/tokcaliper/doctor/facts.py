"""Gather the facts the machine check judges (issue 21): all the I/O of ``doctor``.

Nothing here judges; :mod:`tokcaliper.doctor.checks` turns these facts into
findings. Each source that cannot be read leaves its field ``None`` and the
reason in ``missing`` (gathering never raises for a missing source).

Sources (Linux; elsewhere the fields stay ``None`` with the reason):

* CPU frequency: ``/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor``;
  boost: ``/sys/devices/system/cpu/cpufreq/boost`` (acpi-cpufreq, amd-pstate; 1 = on)
  or ``/sys/devices/system/cpu/intel_pstate/no_turbo`` (1 = off).
* SMT: ``/sys/devices/system/cpu/smt/control`` (``on``/``off``/``forceoff``/
  ``notsupported``/``notimplemented``).
* CPUs: ``os.cpu_count()``, ``os.sched_getaffinity(0)``; cgroup quota:
  v2 ``/sys/fs/cgroup/<path>/cpu.max`` (``quota period`` or ``max``), v1
  ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (quota −1 = none).
* Load: ``os.getloadavg()``; host busy cores and steal over a short window from two
  ``/proc/stat`` readings (:func:`tokcaliper.telemetry.procfs.interval_shares`);
  per-process CPU over the same window from ``psutil.Process.cpu_times()``.
* Memory: ``psutil.virtual_memory()`` / ``psutil.swap_memory()``; THP:
  ``/sys/kernel/mm/transparent_hugepage/enabled`` (the bracketed value).
* GPU (NVML, injectable module): ``nvmlDeviceGetPersistenceMode``,
  ``nvmlDeviceGetApplicationsClock`` / ``nvmlDeviceGetDefaultApplicationsClock``,
  ``nvmlDeviceGetClockInfo`` / ``nvmlDeviceGetMaxClockInfo``,
  ``nvmlDeviceGetEnforcedPowerLimit`` / ``nvmlDeviceGetPowerManagementDefaultLimit`` /
  ``nvmlDeviceGetPowerManagementLimitConstraints``, ``nvmlDeviceGetEccMode``,
  ``nvmlDeviceGetMigMode``, ``nvmlDeviceGetCurrentClocksEventReasons``,
  ``nvmlDeviceGetComputeRunningProcesses`` / ``…GraphicsRunningProcesses``,
  ``nvmlDeviceGetTemperature`` / ``nvmlDeviceGetTemperatureThreshold`` (slowdown).
* Server: ``GET /metrics`` (:func:`tokcaliper.servers.counters.read_counters`),
  ``GET /props`` (llama-server: ``cache_prompt``), the launch command's flags
  (:func:`tokcaliper.audit.launch.parse_launch`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokcaliper.telemetry.procfs import interval_shares, parse_proc_stat

__all__ = [
    "GpuFacts",
    "HostFacts",
    "ProcessCpu",
    "ServerFacts",
    "gather_gpus",
    "gather_host",
    "gather_server",
    "server_tree",
]

CPU_SYSFS = Path("/sys/devices/system/cpu")
THP_PATH = Path("/sys/kernel/mm/transparent_hugepage/enabled")
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Processes listed per check (the most CPU first).
TOP_PROCESSES = 5
#: Process CPU below this many cores over the window is left out of the list.
MIN_LISTED_CORES = 0.02


def _err(exc: BaseException) -> str:
    msg = str(exc)
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


@dataclass
class ProcessCpu:
    """One process's CPU use over the sampling window.

    Attributes:
        pid: process id.
        name: command name.
        cores: CPU time ÷ window (1.0 = one core busy all the window).
        cmdline: its command line, cut to 120 characters.
    """

    pid: int
    name: str
    cores: float
    cmdline: str = ""


@dataclass
class HostFacts:
    """What was read about the host (units in the names; ``missing``: field → why not)."""

    governor: str | None = None
    boost: bool | None = None
    boost_path: str | None = None
    smt: str | None = None
    cpus_logical: int | None = None
    cpus_allowed: int | None = None
    cgroup_quota_cores: float | None = None
    cgroup_source: str | None = None
    loadavg: tuple[float, float, float] | None = None
    window_s: float | None = None
    busy_cores: float | None = None
    steal_pct: float | None = None
    foreign: list[ProcessCpu] = field(default_factory=list)
    foreign_cores: float | None = None
    own_cores: float | None = None
    server_cores: float | None = None
    server_pids: list[int] = field(default_factory=list)
    server_threads: int | None = None
    mem_total_bytes: int | None = None
    mem_available_bytes: int | None = None
    swap_total_bytes: int | None = None
    swap_used_bytes: int | None = None
    thp: str | None = None
    missing: dict[str, str] = field(default_factory=dict)


@dataclass
class GpuFacts:
    """What NVML says about one GPU (clocks MHz, power W, temperatures °C)."""

    index: int
    name: str | None = None
    persistence: bool | None = None
    app_clock_mhz: float | None = None
    default_app_clock_mhz: float | None = None
    sm_clock_mhz: float | None = None
    max_sm_clock_mhz: float | None = None
    power_limit_w: float | None = None
    default_power_limit_w: float | None = None
    max_power_limit_w: float | None = None
    ecc: tuple[bool, bool] | None = None
    mig: tuple[bool, bool] | None = None
    reasons_mask: int | None = None
    foreign: list[tuple[int, str, float | None]] = field(default_factory=list)  # pid, name, MiB
    temperature_c: float | None = None
    slowdown_c: float | None = None
    missing: dict[str, str] = field(default_factory=dict)


@dataclass
class ServerFacts:
    """What was learnt about the server under test.

    Attributes:
        target: the URL or the launch command checked (None: no server given).
        metrics: True when ``/metrics`` answered with counters; None: not checked.
        metrics_detail: the reason when it did not.
        prefix_cache: True when a prompt/prefix cache is on; None: not known.
        prefix_detail: where that came from.
        engine: ``"llama.cpp"``, ``"vllm"``, ``"sglang"`` or None.
        threads: the server's ``-t``/``--threads`` when the command says.
    """

    target: str | None = None
    metrics: bool | None = None
    metrics_detail: str | None = None
    prefix_cache: bool | None = None
    prefix_detail: str | None = None
    engine: str | None = None
    threads: int | None = None


def _read(path: Path) -> str:
    return path.read_text().strip()


def _cgroup_quota(root: Path, proc_cgroup: Path = Path("/proc/self/cgroup")) -> tuple[float | None, str]:
    """CPU quota of this process's cgroup, cores (None: no quota) and the file read.

    Raises:
        OSError/LookupError: no quota file found.
    """
    lines = proc_cgroup.read_text().splitlines() if proc_cgroup.exists() else []
    v2 = next((ln.split(":", 2)[2] for ln in lines if ln.startswith("0::")), None)
    v1 = next((ln.split(":", 2)[2] for ln in lines
               if len(ln.split(":", 2)) == 3 and "cpu" in ln.split(":", 2)[1].split(",")), None)
    if v2 is not None:
        for d in (root / v2.lstrip("/"), root):
            p = d / "cpu.max"
            if p.exists():
                quota, _, period = _read(p).partition(" ")
                return (None if quota == "max" else int(quota) / int(period or 100000)), str(p)
    for d in ([root / "cpu" / v1.lstrip("/"), root / "cpu"] if v1 is not None else [root / "cpu"]):
        q, per = d / "cpu.cfs_quota_us", d / "cpu.cfs_period_us"
        if q.exists() and per.exists():
            quota = int(_read(q))
            return (None if quota < 0 else quota / int(_read(per))), str(q)
    raise LookupError(f"no cpu.max or cpu.cfs_quota_us under {root}")


def server_tree(pids: Collection[int], psutil_module: Any = None) -> list[int]:
    """``pids`` and all their descendants (a server started through a shell, or with
    worker processes). Unknown pids are dropped.

    Raises:
        Nothing.
    """
    ps = psutil_module
    if ps is None:
        import psutil as ps
    out: list[int] = []
    for pid in pids:
        try:
            p = ps.Process(pid)
            out.append(p.pid)
            out.extend(c.pid for c in p.children(recursive=True))
        except Exception:
            continue
    return sorted(set(out))


def gather_host(window_s: float = 0.5, server_pids: Collection[int] = (), client_pid: int | None = None,
                cpu_root: str | Path = CPU_SYSFS, thp_path: str | Path = THP_PATH,
                cgroup_root: str | Path = CGROUP_ROOT, proc_stat: str | Path = "/proc/stat",
                psutil_module: Any = None, top: int = TOP_PROCESSES) -> HostFacts:
    """Read the host facts, sampling CPU use over ``window_s`` seconds.

    Args:
        window_s: seconds between the two CPU readings (0.25 at the start of a bench).
        server_pids: the server under test (its process tree is counted as the server).
        client_pid: the load generator (default: this process; its children other than
            the server count as foreign, as in the per-run figure).
        cpu_root / thp_path / cgroup_root / proc_stat: sysfs and procfs locations (tests
            pass a tmp dir).
        psutil_module: psutil-like module (default ``psutil``).
        top: how many foreign processes to list (the most CPU first).

    Returns:
        :class:`HostFacts`; ``foreign`` lists the processes outside the server and
        client trees using the most CPU, ``foreign_cores`` = host busy cores − server
        − own (the same arithmetic as the per-run foreign load,
        :func:`tokcaliper.telemetry.sampler.foreign_cpu`).

    Raises:
        Nothing for a missing source.
    """
    ps = psutil_module
    if ps is None:
        import psutil as ps
    f = HostFacts()
    root = Path(cpu_root)
    from tokcaliper.telemetry.host import read_cpu_governor

    try:
        f.governor = read_cpu_governor(root)
    except Exception as exc:
        f.missing["governor"] = _err(exc)
    for rel, on_when in (("cpufreq/boost", "1"), ("intel_pstate/no_turbo", "0")):
        p = root / rel
        if p.exists():
            try:
                f.boost, f.boost_path = _read(p) == on_when, str(p)
                break
            except OSError as exc:
                f.missing["boost"] = _err(exc)
    else:
        f.missing.setdefault("boost", f"neither {root}/cpufreq/boost nor {root}/intel_pstate/no_turbo exists "
                                      "(the kernel does not expose boost here)")
    try:
        f.smt = _read(root / "smt" / "control")
    except OSError as exc:
        f.missing["smt"] = _err(exc)
    f.cpus_logical = os.cpu_count()
    try:
        f.cpus_allowed = len(os.sched_getaffinity(0))
    except (AttributeError, OSError) as exc:
        f.missing["cpus_allowed"] = _err(exc)
    try:
        f.cgroup_quota_cores, f.cgroup_source = _cgroup_quota(Path(cgroup_root))
    except Exception as exc:
        f.missing["cgroup_quota"] = _err(exc)
    try:
        la = os.getloadavg()
        f.loadavg = (la[0], la[1], la[2])
    except (AttributeError, OSError) as exc:
        f.missing["loadavg"] = _err(exc)
    try:
        vm, sw = ps.virtual_memory(), ps.swap_memory()
        f.mem_total_bytes, f.mem_available_bytes = int(vm.total), int(vm.available)
        f.swap_total_bytes, f.swap_used_bytes = int(sw.total), int(sw.used)
    except Exception as exc:
        f.missing["memory"] = _err(exc)
    try:
        text = _read(Path(thp_path))
        f.thp = text[text.index("[") + 1:text.index("]")] if "[" in text else text
    except (OSError, ValueError) as exc:
        f.missing["thp"] = _err(exc)

    me = os.getpid() if client_pid is None else client_pid
    server = set(server_tree(server_pids, ps))
    own = {me} - server  # the client is this process (as in the sampler); its other children are foreign
    f.server_pids = sorted(server)

    def cpu_times() -> dict[int, tuple[float, str, str]]:
        out: dict[int, tuple[float, str, str]] = {}
        for p in ps.process_iter(["pid", "name", "cpu_times"]):
            try:
                t = p.info["cpu_times"]
                if t is not None:
                    out[p.info["pid"]] = (float(t.user + t.system), p.info["name"] or "?", "")
            except Exception:
                continue
        return out

    stat_path = Path(proc_stat)
    try:
        s0 = parse_proc_stat(stat_path.read_text())
    except (OSError, ValueError) as exc:
        s0 = None
        f.missing["busy_cores"] = _err(exc)
    t0, c0 = time.perf_counter(), cpu_times()
    time.sleep(max(0.0, window_s))
    t1, c1 = time.perf_counter(), cpu_times()
    f.window_s = t1 - t0
    if s0 is not None:
        try:
            s1 = parse_proc_stat(stat_path.read_text())
            sh = interval_shares(s0, s1)
            n = len(s1.cores) or f.cpus_logical or 1
            if sh.utilization_pct is not None:
                f.busy_cores = sh.utilization_pct / 100.0 * n
            f.steal_pct = sh.steal_pct
        except (OSError, ValueError) as exc:
            f.missing["busy_cores"] = _err(exc)
    shares = {pid: (c1[pid][0] - c0[pid][0]) / f.window_s for pid in c1.keys() & c0.keys()
              if f.window_s > 0 and c1[pid][0] >= c0[pid][0]}
    f.own_cores = sum(v for pid, v in shares.items() if pid in own)
    f.server_cores = sum(v for pid, v in shares.items() if pid in server) if server else None
    listed = sorted(((v, pid) for pid, v in shares.items()
                     if pid not in own and pid not in server and v >= MIN_LISTED_CORES), reverse=True)
    for v, pid in listed[:top]:
        cmd = ""
        try:
            cmd = " ".join(ps.Process(pid).cmdline())[:120]
        except Exception:
            pass
        f.foreign.append(ProcessCpu(pid=pid, name=c1[pid][1], cores=v, cmdline=cmd))
    if f.busy_cores is not None:
        f.foreign_cores = max(0.0, f.busy_cores - f.own_cores - (f.server_cores or 0.0))
    else:
        f.foreign_cores = sum(v for v, _ in listed)
    if server:
        try:
            f.server_threads = sum(ps.Process(pid).num_threads() for pid in server)
        except Exception as exc:
            f.missing["server_threads"] = _err(exc)
    return f


def _call(mod: Any, fn: str, *args: Any) -> Any:
    return getattr(mod, fn)(*args)


def gather_gpus(nvml: Any = None, server_pids: Collection[int] = ()) -> tuple[list[GpuFacts], str | None]:
    """Read the GPU facts through NVML.

    Args:
        nvml: NVML module object (default ``pynvml``), injectable for tests.
        server_pids: pids counted as the server under test (not foreign).

    Returns:
        ``(gpus, reason)``: ``reason`` is ``"no NVIDIA GPU: …"`` when NVML is absent or
        finds none (``gpus`` empty then).

    Raises:
        Nothing.
    """
    from tokcaliper.telemetry.nvml import _init, load_nvml  # the one NVML loader

    mod, reason = load_nvml(nvml)
    if mod is None:
        from tokcaliper.model import warnings as W

        return [], W.NO_GPU.text(reason=reason)
    reason = _init(mod)
    if reason is not None:
        return [], reason
    sm = getattr(mod, "NVML_CLOCK_SM", 1)
    slowdown = getattr(mod, "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN", 1)
    ours = set(server_pids) | {os.getpid()}
    out: list[GpuFacts] = []
    try:
        count = int(mod.nvmlDeviceGetCount())
        for i in range(count):
            g = GpuFacts(index=i)
            try:
                h = mod.nvmlDeviceGetHandleByIndex(i)
            except Exception as exc:
                g.missing["handle"] = _err(exc)
                out.append(g)
                continue

            def get(attr: str, fn: str, *args: Any, conv: Any = None, g: GpuFacts = g, h: Any = h) -> None:
                try:
                    v = _call(mod, fn, h, *args)
                    setattr(g, attr, conv(v) if conv else v)
                except Exception as exc:
                    g.missing[attr] = f"{fn}: {_err(exc)}"

            get("name", "nvmlDeviceGetName", conv=lambda v: v.decode() if isinstance(v, bytes) else str(v))
            get("persistence", "nvmlDeviceGetPersistenceMode", conv=lambda v: int(v) == 1)
            get("app_clock_mhz", "nvmlDeviceGetApplicationsClock", sm, conv=float)
            get("default_app_clock_mhz", "nvmlDeviceGetDefaultApplicationsClock", sm, conv=float)
            get("sm_clock_mhz", "nvmlDeviceGetClockInfo", sm, conv=float)
            get("max_sm_clock_mhz", "nvmlDeviceGetMaxClockInfo", sm, conv=float)
            get("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit", conv=lambda v: v / 1000.0)
            get("default_power_limit_w", "nvmlDeviceGetPowerManagementDefaultLimit", conv=lambda v: v / 1000.0)
            get("max_power_limit_w", "nvmlDeviceGetPowerManagementLimitConstraints",
                conv=lambda v: v[1] / 1000.0)
            get("ecc", "nvmlDeviceGetEccMode", conv=lambda v: (int(v[0]) == 1, int(v[1]) == 1))
            get("mig", "nvmlDeviceGetMigMode", conv=lambda v: (int(v[0]) == 1, int(v[1]) == 1))
            try:
                g.reasons_mask = int(mod.nvmlDeviceGetCurrentClocksEventReasons(h))
            except Exception:
                get("reasons_mask", "nvmlDeviceGetCurrentClocksThrottleReasons", conv=int)
            get("temperature_c", "nvmlDeviceGetTemperature", getattr(mod, "NVML_TEMPERATURE_GPU", 0), conv=float)
            get("slowdown_c", "nvmlDeviceGetTemperatureThreshold", slowdown, conv=float)
            procs: dict[int, float | None] = {}
            for fn in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
                try:
                    for p in _call(mod, fn, h) or []:
                        mem = getattr(p, "usedGpuMemory", None)
                        procs[int(p.pid)] = None if mem is None else mem / 2**20
                except Exception as exc:
                    g.missing.setdefault("processes", f"{fn}: {_err(exc)}")
            for pid, mib in sorted(procs.items()):
                if pid in ours:
                    continue
                name = "?"
                try:
                    import psutil

                    name = psutil.Process(pid).name()
                except Exception:
                    pass
                g.foreign.append((pid, name, mib))
            out.append(g)
    finally:
        try:
            mod.nvmlShutdown()
        except Exception:
            pass
    return out, None


def gather_server(url: str | None = None, server_cmd: str | None = None, timeout_s: float = 2.0) -> ServerFacts:
    """Read what the server exposes: ``/metrics`` and its prompt-cache setting.

    Args:
        url: base URL of a running server (``/metrics`` and ``/props`` are read).
        server_cmd: its launch command (flags are read, nothing is started).
        timeout_s: per-request timeout, s.

    Raises:
        Nothing.
    """
    from tokcaliper.audit.launch import parse_launch

    s = ServerFacts(target=url or server_cmd)
    if server_cmd:
        k = parse_launch(server_cmd)
        low = server_cmd.lower()
        s.engine = ("llama.cpp" if "llama" in low else "vllm" if "vllm" in low
                    else "sglang" if "sglang" in low else None)
        flags = set(k.flags_seen)
        if s.engine == "llama.cpp":
            s.metrics = "--metrics" in flags or k.env.get("LLAMA_ARG_ENDPOINT_METRICS") in ("1", "true")
            s.metrics_detail = "launch command " + ("has" if s.metrics else "lacks") + " --metrics"
            # llama-server keeps each slot's prompt (cache_prompt defaults to true per request).
            s.prefix_cache = k.prefix_cache if k.prefix_cache is not None else True
            s.prefix_detail = ("launch command: " + ("--cache-reuse / prompt cache on" if s.prefix_cache
                                                     else "--no-cache-prompt")
                               if k.prefix_cache is not None
                               else "llama-server reuses a slot's cached prompt by default (cache_prompt)")
        elif s.engine in ("vllm", "sglang"):
            s.metrics = True
            s.metrics_detail = f"{s.engine} serves /metrics by default"
            s.prefix_cache = k.prefix_cache
            s.prefix_detail = "launch command flags" if k.prefix_cache is not None else None
        for flag in ("-t", "--threads"):
            if flag in flags:
                try:
                    toks = server_cmd.split()
                    s.threads = int(toks[toks.index(flag) + 1])
                except (ValueError, IndexError):
                    pass
    if url:
        from tokcaliper.servers.counters import read_counters

        read = read_counters(url, timeout_s=timeout_s)
        s.metrics = read.error is None and bool(read.values)
        s.metrics_detail = read.error or f"GET {url.rstrip('/')}/metrics: {len(read.values or {})} counters"
        try:
            import httpx

            r = httpx.get(url.rstrip("/") + "/props", timeout=timeout_s)
            if r.status_code == 200:
                found = _find_key(r.json(), "cache_prompt")
                if found is not None:
                    s.engine = s.engine or "llama.cpp"
                    s.prefix_cache = bool(found)
                    s.prefix_detail = f"GET /props: cache_prompt = {str(bool(found)).lower()}"
        except Exception:
            pass
    return s


def _find_key(obj: Any, key: str) -> Any:
    """The first value of ``key`` anywhere in a JSON value (depth-first), else None."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            r = _find_key(v, key)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj:
            r = _find_key(v, key)
            if r is not None:
                return r
    return None
