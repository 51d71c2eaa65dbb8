"""Pure arithmetic on Linux ``/proc`` readings: CPU utilisation, steal time, process CPU share.

No I/O here: the back-ends (:mod:`~tokcaliper.telemetry.cpu`,
:mod:`~tokcaliper.telemetry.process`) read the files and pass their text in, so
every formula is tested on known input.

Sources
- ``/proc/stat`` (proc(5), "cpu" lines): cumulative time per CPU in USER_HZ ticks,
  columns ``user nice system idle iowait irq softirq steal guest guest_nice``
  (``steal`` since Linux 2.6.11, ``guest`` 2.6.24, ``guest_nice`` 2.6.33). ``guest``
  and ``guest_nice`` are already counted in ``user`` and ``nice``, so the total
  leaves them out (as ``psutil.cpu_percent`` does on Linux).
- ``/proc/<pid>/stat`` (proc(5)): field 14 ``utime`` and 15 ``stime`` (clock ticks,
  all threads), field 24 ``rss`` (pages), field 4 ``ppid``. Field 2 ``comm`` is in parentheses and may
  hold spaces or ``)``, so fields are counted after the *last* ``)``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CpuTimes",
    "IntervalShares",
    "ProcStat",
    "interval_shares",
    "parse_pid_stat",
    "parse_ppid",
    "parse_proc_stat",
    "process_cpu_share",
]

_COLUMNS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice")


@dataclass(frozen=True)
class CpuTimes:
    """One ``cpu`` line of ``/proc/stat``, in ticks (missing trailing columns are 0)."""

    user: int = 0
    nice: int = 0
    system: int = 0
    idle: int = 0
    iowait: int = 0
    irq: int = 0
    softirq: int = 0
    steal: int = 0
    guest: int = 0
    guest_nice: int = 0

    @property
    def total(self) -> int:
        """All time, ticks: user + nice + system + idle + iowait + irq + softirq + steal
        (guest time is inside user/nice already)."""
        return (self.user + self.nice + self.system + self.idle + self.iowait
                + self.irq + self.softirq + self.steal)

    @property
    def idle_all(self) -> int:
        """Idle time, ticks: idle + iowait (psutil's definition of not busy on Linux)."""
        return self.idle + self.iowait


@dataclass(frozen=True)
class ProcStat:
    """The ``cpu`` lines of one ``/proc/stat`` reading.

    Attributes:
        total: the aggregate ``cpu`` line.
        cores: ``cpu0``, ``cpu1``, … in index order.
    """

    total: CpuTimes
    cores: tuple[CpuTimes, ...]


def parse_proc_stat(text: str) -> ProcStat:
    """Parse the ``cpu`` lines of ``/proc/stat``.

    Raises:
        ValueError: no aggregate ``cpu`` line, or a non-integer column.
    """
    total: CpuTimes | None = None
    cores: dict[int, CpuTimes] = {}
    for line in text.splitlines():
        if not line.startswith("cpu"):
            continue
        name, *cols = line.split()
        values = dict(zip(_COLUMNS, (int(c) for c in cols[: len(_COLUMNS)])))
        times = CpuTimes(**values)
        if name == "cpu":
            total = times
        else:
            cores[int(name[3:])] = times
    if total is None:
        raise ValueError("no aggregate 'cpu' line in /proc/stat")
    return ProcStat(total=total, cores=tuple(cores[i] for i in sorted(cores)))


@dataclass(frozen=True)
class IntervalShares:
    """CPU use between two ``/proc/stat`` readings, percent of the interval's CPU time.

    Attributes:
        utilization_pct: (Δtotal − Δidle − Δiowait) / Δtotal × 100 (steal counts as
            busy, as in ``psutil.cpu_percent``); ``None`` when Δtotal = 0.
        steal_pct: Δsteal / Δtotal × 100.
        iowait_pct: Δiowait / Δtotal × 100.
        core_utilization_pct: the same utilisation per core (``None`` for a core with
            Δtotal = 0, e.g. offline).
    """

    utilization_pct: float | None
    steal_pct: float | None
    iowait_pct: float | None
    core_utilization_pct: list[float | None]


def _util(a: CpuTimes, b: CpuTimes) -> tuple[float | None, float | None, float | None]:
    dt = b.total - a.total
    if dt <= 0:
        return None, None, None
    busy = dt - (b.idle_all - a.idle_all)
    clamp = lambda x: min(100.0, max(0.0, x))  # noqa: E731 - counters can step back by a tick
    return (clamp(100.0 * busy / dt), clamp(100.0 * (b.steal - a.steal) / dt),
            clamp(100.0 * (b.iowait - a.iowait) / dt))


def interval_shares(before: ProcStat, after: ProcStat) -> IntervalShares:
    """Utilisation, steal and iowait between two readings (formulas in :class:`IntervalShares`).

    Raises:
        Nothing; cores present in only one reading are left out.
    """
    util, steal, iowait = _util(before.total, after.total)
    cores = [_util(a, b)[0] for a, b in zip(before.cores, after.cores)]
    return IntervalShares(utilization_pct=util, steal_pct=steal, iowait_pct=iowait,
                          core_utilization_pct=cores)


def parse_pid_stat(text: str, clk_tck: int, page_size: int) -> tuple[float, int]:
    """A process's cumulative CPU time and RSS from its ``/proc/<pid>/stat`` line.

    Args:
        text: the file's one line.
        clk_tck: ``os.sysconf("SC_CLK_TCK")`` (ticks per second, usually 100).
        page_size: ``os.sysconf("SC_PAGE_SIZE")``, bytes.

    Returns:
        ``(cpu_time_s, rss_bytes)``: (utime + stime) / clk_tck, rss × page_size.

    Raises:
        ValueError: the line is too short or not numeric where it must be.
    """
    rest = text[text.rindex(")") + 1:].split()
    # rest[0] is field 3 (state): field k is rest[k - 3].
    if len(rest) < 22:
        raise ValueError(f"/proc/<pid>/stat has {len(rest) + 2} fields, expected ≥ 24")
    utime, stime, rss = int(rest[11]), int(rest[12]), int(rest[21])
    return (utime + stime) / clk_tck, rss * page_size


def parse_ppid(text: str) -> int:
    """A process's parent pid from its ``/proc/<pid>/stat`` line (field 4, proc(5)).

    Raises:
        ValueError: the line is too short or field 4 is not an integer.
    """
    rest = text[text.rindex(")") + 1:].split()
    if len(rest) < 2:
        raise ValueError(f"/proc/<pid>/stat has {len(rest) + 2} fields, expected ≥ 4")
    return int(rest[1])


def process_cpu_share(cpu_time_before_s: float, cpu_time_after_s: float, elapsed_s: float) -> float | None:
    """Cores a process used over an interval: ΔCPU time / Δwall time (1.0 = one full core).

    Returns:
        The share, or ``None`` when ``elapsed_s`` ≤ 0.

    Raises:
        Nothing; a negative ΔCPU (a different process reusing the pid) gives ``None``.
    """
    if elapsed_s <= 0:
        return None
    d = cpu_time_after_s - cpu_time_before_s
    return None if d < 0 else d / elapsed_s

