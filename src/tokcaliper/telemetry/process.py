"""One process's CPU time and memory: the load generator itself, the managed server.

Source: ``/proc/<pid>/stat`` (utime + stime over all threads, rss;
:func:`tokcaliper.telemetry.procfs.parse_pid_stat`), one ``pread`` per tick on a
kept-open descriptor. Where ``/proc`` is absent (not Linux), ``psutil.Process(pid)``
``.cpu_times()`` and ``.memory_info().rss``.

Why the client: a load generator that uses a whole core delays its own reading of
the stream, and every latency it reports grows (the run is then flagged,
:data:`tokcaliper.model.telemetry.CLIENT_SATURATION_CORES`). Why the server: its CPU
time per output token shows host-side overhead (tokenising, sampling, HTTP).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tokcaliper.model.telemetry import DeviceInfo, TelemetrySample
from tokcaliper.telemetry.backend import BackendUnavailable
from tokcaliper.telemetry.procfs import parse_pid_stat

__all__ = ["ProcessBackend"]


def _err(exc: BaseException) -> str:
    msg = str(exc)
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


class ProcessBackend:
    """Telemetry back-end for one process (kind ``"process"``, device id = ``role``).

    Sample fields: ``cpu_time_s`` (cumulative user + system CPU time, s) and
    ``rss_bytes`` (resident set, bytes). The summary turns them into the CPU share
    (cores) and the peak RSS (:func:`tokcaliper.telemetry.sampler.summarize_device`).

    Args:
        pid: process id (default: this process, i.e. the load generator).
        role: device id, ``"client"`` (this process) or ``"server"`` (managed server).
        proc_root: ``/proc`` (tests pass a directory holding ``<pid>/stat``).
        psutil_module: psutil-like module for the fallback (default ``psutil``).
        clk_tck / page_size: ``SC_CLK_TCK`` and ``SC_PAGE_SIZE`` (default: ``os.sysconf``).
    """

    def __init__(
        self,
        pid: int | None = None,
        role: str = "client",
        proc_root: str | Path = "/proc",
        psutil_module: Any = None,
        clk_tck: int | None = None,
        page_size: int | None = None,
    ) -> None:
        self.pid = os.getpid() if pid is None else int(pid)
        self.role = role
        self.name = f"process:{role}"
        self._stat_path = Path(proc_root) / str(self.pid) / "stat"
        self._ps_arg = psutil_module
        self._clk = clk_tck
        self._page = page_size
        self._fd: int | None = None
        self._proc: Any = None  # psutil.Process in the fallback
        self._info: DeviceInfo | None = None

    def _read(self) -> tuple[float, int]:
        if self._fd is not None:
            text = os.pread(self._fd, 4096, 0).decode("ascii", "replace")
            if not text:
                raise ProcessLookupError(f"process {self.pid} has exited")
            return parse_pid_stat(text, self._clk, self._page)  # type: ignore[arg-type]
        t = self._proc.cpu_times()
        return float(t.user + t.system), int(self._proc.memory_info().rss)

    def open(self) -> list[DeviceInfo]:
        """Open ``/proc/<pid>/stat`` (else ``psutil.Process``) and take a first reading.

        Returns:
            ``[DeviceInfo(device=role, kind="process", name="<comm> (pid N)")]``.

        Raises:
            BackendUnavailable: the process does not exist or cannot be read.
        """
        comm = None
        try:
            self._fd = os.open(self._stat_path, os.O_RDONLY)
            if self._clk is None:
                self._clk = os.sysconf("SC_CLK_TCK")
            if self._page is None:
                self._page = os.sysconf("SC_PAGE_SIZE")
            text = os.pread(self._fd, 4096, 0).decode("ascii", "replace")
            comm = text[text.find("(") + 1:text.rfind(")")] or None
            parse_pid_stat(text, self._clk, self._page)
        except (OSError, ValueError) as exc:
            self.close()
            proc_error = _err(exc)
            try:
                ps = self._ps_arg
                if ps is None:
                    import psutil as ps
                self._proc = ps.Process(self.pid)
                comm = self._proc.name()
                self._read()
            except Exception as exc2:
                self._proc = None
                raise BackendUnavailable(
                    f"{self.role} process {self.pid} not readable: {self._stat_path}: {proc_error}; "
                    f"psutil: {_err(exc2)}") from None
        self._info = DeviceInfo(device=self.role, kind="process",
                                name=f"{comm} (pid {self.pid})" if comm else f"pid {self.pid}")
        return [self._info]

    def sample(self, t_mono: float, t_wall: float, out: list[TelemetrySample]) -> None:
        """Append one sample of the process to ``out``.

        Raises:
            Nothing; a failed reading (e.g. the process exited) gives ``None`` fields
            and its first error is recorded in ``DeviceInfo.unavailable``.
        """
        if self._info is None:
            return
        cpu = rss = None
        try:
            cpu, rss = self._read()
        except Exception as exc:
            self._info.unavailable.setdefault("cpu_time_s", f"failed during run: {_err(exc)}")
        out.append(TelemetrySample.model_construct(
            device=self.role, t_mono_s=t_mono, t_wall_s=t_wall, clock_mhz=None,
            mem_clock_mhz=None, power_w=None, power_limit_w=None, temperature_c=None,
            utilization_pct=None, throttle_mask=None, energy_j=None, steal_pct=None,
            core_utilization_pct=None, cpu_time_s=cpu, rss_bytes=rss,
        ))

    def close(self) -> None:
        """Close the ``/proc/<pid>/stat`` descriptor."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
