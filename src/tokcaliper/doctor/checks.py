"""The machine check's judgements (issue 21): pure functions from facts to findings.

Each finding says what was found, why it matters for noise, and the exact command
that would change it; tokcaliper changes nothing itself. The facts come from
:mod:`tokcaliper.doctor.facts`. What each item guards against (pyperf's
``system show`` checks the same host items for CPU benchmarks):

* CPU governor other than ``performance`` and boost/turbo: the core clock follows
  load and temperature, so the same work takes a different time run to run.
* SMT: the two hardware threads of a core share its execution units; a server
  thread and another process on the sibling slow each other.
* Usable CPUs (affinity, cgroup quota) and load: a server with more threads than
  the cores it can get, or other processes holding those cores, is descheduled
  mid-token (seen: 1.04–1.15 of 2 cores in the slow runs, 1.94 in the fast one).
* Swap in use, transparent huge pages ``always``: page faults and khugepaged
  compaction stall a run at random moments. Steal time: a VM's host takes the CPU.
* GPU: persistence off (driver state torn down between runs), clocks locked or an
  application clock, a power limit below the default, MIG, ECC (bandwidth; a pending
  change applies at reboot), current clock far below max, clock-event reasons now,
  other processes on the GPU, temperature near the slowdown threshold.
* Server: ``/metrics`` off (no server counters), a prompt/prefix cache that makes
  repetition 2 cheaper than repetition 1 unless prompts differ per run.
"""

from __future__ import annotations

from tokcaliper.doctor.facts import GpuFacts, HostFacts, ServerFacts
from tokcaliper.model.doctor import Finding
from tokcaliper.model.telemetry import FOREIGN_CPU_BOUND_CORES, decode_clock_event_reasons
from tokcaliper.numbers import num, percent

__all__ = [
    "FOREIGN_CPU_BOUND_CORES",
    "STEAL_BOUND_PCT",
    "check_gpu",
    "check_host",
    "check_server",
    "usable_cores",
]

#: Steal time share, percent, above which the VM's host is taking CPU back.
STEAL_BOUND_PCT = 1.0
#: GPU temperature margin below the slowdown threshold that warns, °C.
TEMPERATURE_MARGIN_C = 5.0
#: Clock-event reasons that are not a slowdown.
_BENIGN_REASONS = {"gpu_idle", "applications_clocks_setting", "display_clock_setting"}


def usable_cores(f: HostFacts) -> float | None:
    """Cores this process can get: the smallest of logical CPUs, affinity and cgroup quota."""
    vals = [v for v in (f.cpus_logical, f.cpus_allowed, f.cgroup_quota_cores) if v is not None]
    return float(min(vals)) if vals else None


def _unknown(code: str, area: str, what: str, why: str) -> Finding:
    why = why.split(": ", 1)[1] if why.startswith(("LookupError: ", "FileNotFoundError: ")) else why
    return Finding(code=code, area=area, status="unknown", found=f"{what}: not exposed ({why})")  # type: ignore[arg-type]


def check_host(f: HostFacts, threads: int | None = None) -> list[Finding]:
    """Findings for the host (pure).

    Args:
        f: the host facts.
        threads: the server's configured thread count when its command says
            (else the live thread count in ``f.server_threads`` is used).

    Returns:
        One finding per item, in a fixed order; codes ``cpu-governor``, ``cpu-boost``,
        ``smt``, ``cpus``, ``load``, ``foreign-cpu``, ``steal``, ``memory``, ``swap``,
        ``thp``, ``server-threads`` (the last only when the server is known).

    Raises:
        Nothing.
    """
    out: list[Finding] = []
    if f.governor is None:
        out.append(_unknown("cpu-governor", "host", "CPU frequency governor", f.missing.get("governor", "?")))
    else:
        ok = set(f.governor.split(",")) == {"performance"}
        out.append(Finding(
            code="cpu-governor", area="host", status="ok" if ok else "warn",
            found=f"CPU frequency governor: {f.governor}",
            why="" if ok else "the core clock follows the load, so the same work takes a different time run to run",
            fix=None if ok else "sudo cpupower frequency-set -g performance"))
    if f.boost is None:
        out.append(_unknown("cpu-boost", "host", "CPU boost/turbo", f.missing.get("boost", "?")))
    else:
        intel = bool(f.boost_path and "intel_pstate" in f.boost_path)
        fix = (f"echo 1 | sudo tee {f.boost_path}" if intel else f"echo 0 | sudo tee {f.boost_path}")
        out.append(Finding(
            code="cpu-boost", area="host", status="warn" if f.boost else "ok",
            found=f"CPU boost/turbo: {'on' if f.boost else 'off'} ({f.boost_path})",
            why="boost clocks depend on temperature and on how many cores are busy" if f.boost else "",
            fix=fix if f.boost else None))
    if f.smt is None:
        out.append(_unknown("smt", "host", "SMT (hyper-threading)", f.missing.get("smt", "?")))
    else:
        on = f.smt == "on"
        out.append(Finding(
            code="smt", area="host", status="info" if on else "ok", found=f"SMT: {f.smt}",
            why="sibling hardware threads share a core: a server thread and another process on its "
                "sibling slow each other" if on else "",
            fix="echo off | sudo tee /sys/devices/system/cpu/smt/control" if on else None))
    usable = usable_cores(f)
    quota = ("no cgroup CPU quota" if f.cgroup_quota_cores is None and "cgroup_quota" not in f.missing
             else f"cgroup quota {num(f.cgroup_quota_cores)} cores" if f.cgroup_quota_cores is not None
             else "cgroup quota not readable")
    out.append(Finding(code="cpus", area="host", status="info",
                       found=f"{f.cpus_logical} logical CPUs, {f.cpus_allowed} allowed by affinity, {quota}: "
                             f"{num(usable)} usable"))
    if f.loadavg is not None:
        high = usable is not None and f.loadavg[0] > usable
        out.append(Finding(
            code="load", area="host", status="warn" if high else "ok",
            found=f"load average {num(f.loadavg[0])} / {num(f.loadavg[1])} / {num(f.loadavg[2])} "
                  f"(1/5/15 min) on {num(usable)} usable cores",
            why="more runnable threads than cores: the server waits for a core" if high else ""))
    if f.foreign_cores is not None:
        over = f.foreign_cores >= FOREIGN_CPU_BOUND_CORES
        top = ", ".join(f"{p.name} (pid {p.pid}) {num(p.cores)}" for p in f.foreign[:3])
        pids = " ".join(str(p.pid) for p in f.foreign[:3])
        out.append(Finding(
            code="foreign-cpu", area="host", status="warn" if over else "ok",
            found=(f"other processes used {num(f.foreign_cores)} cores over {num(f.window_s)} s "
                   f"(host busy {num(f.busy_cores)} − this client {num(f.own_cores)}"
                   + (f" − server {num(f.server_cores)}" if f.server_cores is not None else "")
                   + f"; bound {num(FOREIGN_CPU_BOUND_CORES)})" + (f"; most: {top}" if top else "")),
            why="cores other processes hold are cores the server does not get: runs differ with their load"
                if over else "",
            fix=(f"pause them while measuring: kill -STOP {pids} (afterwards kill -CONT {pids}), "
                 "or measure on an idle host" if over and pids else None)))
    if f.steal_pct is not None:
        over = f.steal_pct > STEAL_BOUND_PCT
        out.append(Finding(
            code="steal", area="host", status="warn" if over else "ok",
            found=f"CPU steal {num(f.steal_pct)} % over {num(f.window_s)} s (bound {num(STEAL_BOUND_PCT)} %)",
            why="the hypervisor gives this VM's CPUs to other guests" if over else "",
            fix="a dedicated (not over-committed) instance; no command inside the guest changes it"
                if over else None))
    if f.mem_total_bytes is not None and f.mem_available_bytes is not None:
        share = f.mem_available_bytes / f.mem_total_bytes if f.mem_total_bytes else None
        low = share is not None and share < 0.1
        out.append(Finding(
            code="memory", area="host", status="warn" if low else "ok",
            found=f"memory available {num(f.mem_available_bytes / 2**30)} GiB of "
                  f"{num(f.mem_total_bytes / 2**30)} GiB ({percent(share)})",
            why="under 10 % free the kernel reclaims pages during the run" if low else ""))
    if f.swap_used_bytes is not None:
        used = f.swap_used_bytes > 0
        out.append(Finding(
            code="swap", area="host", status="warn" if used else "ok",
            found=f"swap in use {num(f.swap_used_bytes / 2**20)} MiB of {num((f.swap_total_bytes or 0) / 2**20)} MiB",
            why="a page swapped in during a run stalls it for milliseconds" if used else "",
            fix="sudo swapoff -a && sudo swapon -a" if used else None))
    if f.thp is None:
        out.append(_unknown("thp", "host", "transparent huge pages", f.missing.get("thp", "?")))
    else:
        always = f.thp == "always"
        out.append(Finding(
            code="thp", area="host", status="info" if always else "ok",
            found=f"transparent huge pages: {f.thp}",
            why="khugepaged may compact memory during a run (latency spikes)" if always else "",
            fix="echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled" if always else None))
    n_threads = threads
    if n_threads is not None and usable is not None:
        over = n_threads > usable
        out.append(Finding(
            code="server-threads", area="host", status="warn" if over else "ok",
            found=f"server threads (-t) {n_threads} on {num(usable)} usable cores",
            why="compute threads beyond the cores it can get wait for each other every token" if over else "",
            fix=f"start the server with -t {int(usable)} (llama-server --threads)" if over else None))
    elif f.server_threads is not None and usable is not None:
        out.append(Finding(code="server-threads", area="host", status="info",
                           found=f"server process tree runs {f.server_threads} threads on {num(usable)} "
                                 "usable cores (threads include idle HTTP workers)"))
    return out


def check_gpu(g: GpuFacts) -> list[Finding]:
    """Findings for one GPU (pure). Codes are ``gpu<N>-<item>``: ``persistence``,
    ``clocks``, ``power-limit``, ``ecc``, ``mig``, ``clock-now``, ``throttle``,
    ``processes``, ``temperature``.

    Raises:
        Nothing.
    """
    p = f"gpu{g.index}"
    out: list[Finding] = []

    def unk(item: str, what: str, attr: str) -> None:
        out.append(_unknown(f"{p}-{item}", "gpu", f"{p} {what}", g.missing.get(attr, "not read")))

    if g.persistence is None:
        unk("persistence", "persistence mode", "persistence")
    else:
        out.append(Finding(
            code=f"{p}-persistence", area="gpu", status="ok" if g.persistence else "warn",
            found=f"{p} persistence mode {'on' if g.persistence else 'off'}",
            why="" if g.persistence else "the driver tears the GPU state down when no client holds it: "
                                         "the first run after a pause starts slower",
            fix=None if g.persistence else f"sudo nvidia-smi -i {g.index} -pm 1"))
    locked = "applications_clocks_setting" in decode_clock_event_reasons(g.reasons_mask)
    app_set = (g.app_clock_mhz is not None and g.default_app_clock_mhz is not None
               and g.app_clock_mhz != g.default_app_clock_mhz)
    if g.app_clock_mhz is None and g.reasons_mask is None:
        unk("clocks", "application/locked clocks", "app_clock_mhz")
    elif locked or app_set:
        below = g.max_sm_clock_mhz is not None and g.app_clock_mhz is not None and g.app_clock_mhz < g.max_sm_clock_mhz
        out.append(Finding(
            code=f"{p}-clocks", area="gpu", status="warn",
            found=f"{p} clocks locked or set: application clock {num(g.app_clock_mhz)} MHz (default "
                  f"{num(g.default_app_clock_mhz)}, max {num(g.max_sm_clock_mhz)})"
                  + ("; clock-event reason applications_clocks_setting active" if locked else ""),
            why=("a fixed clock below the maximum: steadier runs, but figures this GPU does not give by default"
                 if below else "a fixed clock: runs differ from the GPU's default behaviour"),
            fix=f"sudo nvidia-smi -i {g.index} -rgc && sudo nvidia-smi -i {g.index} -rac (to reset)"))
    else:
        out.append(Finding(
            code=f"{p}-clocks", area="gpu", status="info",
            found=f"{p} clocks not locked (application clock {num(g.app_clock_mhz)} MHz = default)",
            why="the clock boosts with temperature and power headroom",
            fix=f"sudo nvidia-smi -i {g.index} -lgc {num(g.max_sm_clock_mhz, 6, grouping=False, trim=True)} "
                "(lock it for steadier runs)" if g.max_sm_clock_mhz else None))
    if g.power_limit_w is None:
        unk("power-limit", "power limit", "power_limit_w")
    else:
        low = g.default_power_limit_w is not None and g.power_limit_w < g.default_power_limit_w
        out.append(Finding(
            code=f"{p}-power-limit", area="gpu", status="warn" if low else "ok",
            found=f"{p} power limit {num(g.power_limit_w)} W (default {num(g.default_power_limit_w)} W, "
                  f"max {num(g.max_power_limit_w)} W)",
            why="below the default the clock is capped under load" if low else "",
            fix=f"sudo nvidia-smi -i {g.index} -pl {num(g.default_power_limit_w, 6, grouping=False, trim=True)}"
                if low else None))
    if g.ecc is not None:
        cur, pend = g.ecc
        out.append(Finding(
            code=f"{p}-ecc", area="gpu", status="warn" if cur != pend else "info",
            found=f"{p} ECC {'on' if cur else 'off'}" + (f", {'on' if pend else 'off'} after reboot"
                                                          if cur != pend else ""),
            why="ECC costs some memory bandwidth; a pending change alters it at the next reboot"
                if cur != pend else "ECC on costs some memory bandwidth" if cur else ""))
    if g.mig is not None:
        cur, _ = g.mig
        out.append(Finding(
            code=f"{p}-mig", area="gpu", status="warn" if cur else "ok",
            found=f"{p} MIG {'on' if cur else 'off'}",
            why="a MIG slice has a share of the GPU's SMs and bandwidth" if cur else "",
            fix=f"sudo nvidia-smi -i {g.index} -mig 0" if cur else None))
    if g.sm_clock_mhz is not None and g.max_sm_clock_mhz:
        out.append(Finding(code=f"{p}-clock-now", area="gpu", status="info",
                           found=f"{p} SM clock now {num(g.sm_clock_mhz)} MHz of max {num(g.max_sm_clock_mhz)} "
                                 f"({percent(g.sm_clock_mhz / g.max_sm_clock_mhz)})"))
    if g.reasons_mask is not None:
        active = [r for r in decode_clock_event_reasons(g.reasons_mask) if r not in _BENIGN_REASONS]
        out.append(Finding(
            code=f"{p}-throttle", area="gpu", status="warn" if active else "ok",
            found=f"{p} clock-event reasons now: {', '.join(decode_clock_event_reasons(g.reasons_mask)) or 'none'}",
            why="the GPU is slowing itself now (power, thermal or a hardware brake)" if active else ""))
    if "processes" in g.missing and not g.foreign:
        unk("processes", "processes", "processes")
    else:
        listed = ", ".join(f"{name} (pid {pid}, {num(mib)} MiB)" for pid, name, mib in g.foreign)
        pids = " ".join(str(pid) for pid, _, _ in g.foreign)
        out.append(Finding(
            code=f"{p}-processes", area="gpu", status="warn" if g.foreign else "ok",
            found=f"{p} other processes: {listed or 'none'}",
            why="another process on the GPU shares its SMs, memory and power" if g.foreign else "",
            fix=f"stop them while measuring (kill -STOP {pids}; afterwards kill -CONT {pids})" if g.foreign else None))
    if g.temperature_c is not None and g.slowdown_c is not None:
        near = g.temperature_c >= g.slowdown_c - TEMPERATURE_MARGIN_C
        out.append(Finding(
            code=f"{p}-temperature", area="gpu", status="warn" if near else "ok",
            found=f"{p} temperature {num(g.temperature_c)} °C, slowdown at {num(g.slowdown_c)} °C",
            why="within 5 °C of the slowdown threshold the clock drops during a run" if near else "",
            fix="let it cool (tokcaliper bench --cooldown S) or improve cooling" if near else None))
    return out


def check_server(s: ServerFacts, unique_prompts: bool | None = None) -> list[Finding]:
    """Findings for the server under test (pure). Codes ``server-metrics``, ``prompt-cache``.

    Args:
        s: what was learnt about the server.
        unique_prompts: whether tokcaliper salts every run's prompts (``bench``'s
            default); None when not known (``doctor``).

    Raises:
        Nothing.
    """
    out: list[Finding] = []
    if s.target is None:
        return out
    if s.metrics is not None:
        out.append(Finding(
            code="server-metrics", area="server", status="ok" if s.metrics else "info",
            found=f"/metrics {'on' if s.metrics else 'off'}: {s.metrics_detail}",
            why="" if s.metrics else "no server counters: tokens and prefill time cannot be cross-checked",
            fix=None if s.metrics else "start llama-server with --metrics"))
    if s.prefix_cache:
        salted = unique_prompts is True
        out.append(Finding(
            code="prompt-cache", area="server", status="ok" if salted else "warn",
            found=f"prompt/prefix cache on ({s.prefix_detail})"
                  + ("; tokcaliper salts each run's prompts" if salted else ""),
            why="" if salted else "a prompt seen in repetition 1 is not prefilled again in repetition 2: "
                                  "the second run is cheaper than the first",
            fix=None if salted else "keep tokcaliper's per-run prompt salt on (--unique-prompts, the default)"))
    elif s.prefix_cache is False:
        out.append(Finding(code="prompt-cache", area="server", status="ok",
                           found=f"prompt/prefix cache off ({s.prefix_detail})"))
    return out
