"""Steal time over a block of test code: on a VM, the share of CPU time the hypervisor took back.

A timing test that fails while the hypervisor held the CPUs says nothing about the client;
it skips with the figure instead (read with the telemetry's own ``/proc/stat`` parser and
judged against ``tokcaliper doctor``'s bound)."""

from __future__ import annotations

from pathlib import Path

from tokcaliper.doctor.checks import STEAL_BOUND_PCT
from tokcaliper.telemetry.procfs import ProcStat, interval_shares, parse_proc_stat

__all__ = ["STEAL_BOUND_PCT", "StealMeter"]


def _read() -> ProcStat | None:
    try:
        return parse_proc_stat(Path("/proc/stat").read_text())
    except (OSError, ValueError):
        return None


class StealMeter:
    """``with StealMeter() as m: …`` then ``m.pct``: steal, percent of the block's CPU time
    (``None`` where ``/proc/stat`` is not readable, e.g. not Linux)."""

    def __init__(self) -> None:
        self.pct: float | None = None
        self._before: ProcStat | None = None

    def __enter__(self) -> StealMeter:
        self._before = _read()
        return self

    def __exit__(self, *exc: object) -> None:
        after = _read()
        if self._before is not None and after is not None:
            self.pct = interval_shares(self._before, after).steal_pct
