"""Host CPU telemetry: utilisation and steal (/proc/stat), frequency and temperature
(psutil), package energy (RAPL).

Sources:

* ``/proc/stat`` — utilisation (system-wide and per logical CPU), steal time and
  iowait over the interval since the previous sample
  (:func:`tokcaliper.telemetry.procfs.interval_shares`; ``None`` in the first sample
  after open, which covers no interval). Where ``/proc/stat`` is not readable
  (not Linux): ``psutil.cpu_percent(interval=None)``, system-wide only, no steal.
* ``psutil.cpu_freq(percpu=True)`` — current frequency of each logical CPU, MHz;
  the sample holds their mean.
* ``psutil.sensors_temperatures()`` — hottest reading of a CPU chip (``coretemp``,
  ``k10temp``, ``zenpower``, ``cpu_thermal``…), °C.
* Linux powercap RAPL: ``/sys/class/powercap/intel-rapl:<N>/energy_uj`` (µJ counter of
  package ``N``; also used for AMD CPUs), which wraps at ``max_energy_range_uj``. Only
  zones whose ``name`` starts with ``package`` are summed (``psys`` and sub-zones would
  double count). Since Linux 5.10 ``energy_uj`` is readable by root only
  (CVE-2020-8694); the reason is then recorded.
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path
from typing import Any

from tokcaliper.model.telemetry import DeviceInfo, TelemetrySample
from tokcaliper.telemetry.backend import BackendUnavailable
from tokcaliper.telemetry.procfs import ProcStat, interval_shares, parse_proc_stat

__all__ = ["CpuBackend", "RaplZone", "find_rapl_zones", "read_cpu_model"]

POWERCAP_ROOT = Path("/sys/class/powercap")
CPU_SENSOR_CHIPS = ("coretemp", "k10temp", "zenpower", "x86_pkg_temp", "cpu_thermal", "cpu-thermal", "soc_thermal")
_PACKAGE_ZONE = re.compile(r"^intel-rapl:\d+$")


def _err(exc: BaseException) -> str:
    msg = str(exc)
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def read_cpu_model(cpuinfo: str | Path = "/proc/cpuinfo") -> str | None:
    """CPU model name: ``model name`` (x86) / ``Model``/``Hardware`` (Arm) in
    ``/proc/cpuinfo``, else ``platform.processor()``; ``None`` when neither says.

    Raises:
        Nothing.
    """
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            found: dict[str, str] = {}
            for line in f:
                key, sep, value = line.partition(":")
                if sep:
                    found.setdefault(key.strip().lower(), value.strip())
        for key in ("model name", "model", "hardware", "cpu model", "processor"):
            v = found.get(key)
            if v and not v.isdigit():
                return v
    except OSError:
        pass
    return platform.processor() or None


class RaplZone:
    """One RAPL package zone with wraparound-corrected accumulation.

    Args:
        path: zone directory, e.g. ``/sys/class/powercap/intel-rapl:0``.

    Raises:
        OSError: from :meth:`read_uj` when ``energy_uj`` is unreadable.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = (path / "name").read_text().strip() if (path / "name").exists() else path.name
        try:
            self.max_range_uj: int | None = int((path / "max_energy_range_uj").read_text())
        except (OSError, ValueError):
            self.max_range_uj = None
        self._fd: int | None = None
        self.last_uj: int | None = None
        self.total_uj = 0
        self.wraps = 0

    def read_uj(self) -> int:
        """Current raw counter, µJ (``os.pread`` on a kept-open ``energy_uj``)."""
        if self._fd is None:
            self._fd = os.open(self.path / "energy_uj", os.O_RDONLY)
        return int(os.pread(self._fd, 32, 0))

    def update(self, raw_uj: int) -> None:
        """Add the delta since the previous raw reading, correcting one wraparound
        (``raw < last`` → ``raw + max_energy_range_uj − last``)."""
        if self.last_uj is not None:
            delta = raw_uj - self.last_uj
            if delta < 0:
                self.wraps += 1
                delta = raw_uj + self.max_range_uj - self.last_uj if self.max_range_uj else 0
            self.total_uj += delta
        self.last_uj = raw_uj

    def close(self) -> None:
        """Close the ``energy_uj`` file descriptor."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def find_rapl_zones(root: str | Path = POWERCAP_ROOT) -> list[RaplZone]:
    """Package-level RAPL zones under ``root`` (``intel-rapl:<N>`` with a ``package*`` name).

    Raises:
        Nothing (an absent ``root`` gives ``[]``).
    """
    root = Path(root)
    try:
        entries = sorted(p for p in root.iterdir() if _PACKAGE_ZONE.match(p.name))
    except OSError:
        return []
    zones = [RaplZone(p) for p in entries]
    return [z for z in zones if z.name.startswith("package")]


class CpuBackend:
    """Telemetry back-end for the host CPU (device id ``"cpu"``, kind ``"cpu"``).

    Sample fields: ``clock_mhz`` (mean current core frequency, MHz), ``utilization_pct``,
    ``core_utilization_pct`` and ``steal_pct`` (percent), ``temperature_c`` (°C, hottest
    CPU sensor), ``energy_j`` (J, RAPL package
    energy summed over packages since :meth:`open`, wraparound-corrected). Each source is
    probed once in :meth:`open`; missing ones are listed in ``DeviceInfo.unavailable``.

    Args:
        powercap_root: RAPL sysfs root (default ``/sys/class/powercap``; tests pass a tmp dir).
        psutil_module: psutil-like module (default ``psutil``), injectable for tests.
        cpuinfo: path of ``/proc/cpuinfo`` (for the device name).
        proc_stat: path of ``/proc/stat``; when it cannot be read, utilisation comes from
            ``psutil.cpu_percent`` and steal/per-core are unavailable.
    """

    name = "cpu"

    def __init__(
        self,
        powercap_root: str | Path = POWERCAP_ROOT,
        psutil_module: Any = None,
        cpuinfo: str | Path = "/proc/cpuinfo",
        proc_stat: str | Path = "/proc/stat",
    ) -> None:
        self._root = Path(powercap_root)
        self._proc_stat_path = Path(proc_stat)
        self._stat_fd: int | None = None
        self._last_stat: ProcStat | None = None
        self._ps_arg = psutil_module
        self._cpuinfo = cpuinfo
        self._ps: Any = None
        self._info: DeviceInfo | None = None
        self._freq = self._pct = False
        self._pct_primed = False
        self._temp_chips: tuple[str, ...] = ()
        self._zones: list[RaplZone] = []

    def open(self) -> list[DeviceInfo]:
        """Probe psutil and RAPL; returns ``[DeviceInfo(device="cpu", kind="cpu")]``.

        Raises:
            BackendUnavailable: psutil cannot be imported.
        """
        if self._ps_arg is not None:
            ps = self._ps_arg
        else:
            try:
                import psutil as ps
            except ImportError as exc:  # pragma: no cover - declared dependency
                raise BackendUnavailable(f"psutil not installed: {_err(exc)}") from None
        self._ps = ps
        info = DeviceInfo(device="cpu", kind="cpu", name=read_cpu_model(self._cpuinfo))
        un = info.unavailable

        try:
            freqs = ps.cpu_freq(percpu=True)
            self._freq = bool(freqs) and any(f.current for f in freqs)
            if not self._freq:
                un["clock_mhz"] = "psutil.cpu_freq() reports no current frequency"
        except Exception as exc:
            un["clock_mhz"] = f"psutil.cpu_freq failed: {_err(exc)}"

        self._last_stat = None
        try:
            self._stat_fd = os.open(self._proc_stat_path, os.O_RDONLY)
            self._last_stat = parse_proc_stat(self._read_stat())
            self._pct_primed = True
        except (OSError, ValueError) as exc:
            self.close_stat()
            why = f"{self._proc_stat_path} not readable: {_err(exc)}"
            un["steal_pct"] = why
            un["core_utilization_pct"] = why
            try:
                ps.cpu_percent(interval=None)  # primes the counter; first value is meaningless
                self._pct = True
                self._pct_primed = True
            except Exception as exc2:
                un["utilization_pct"] = f"{why}; psutil.cpu_percent failed: {_err(exc2)}"

        sensors = getattr(ps, "sensors_temperatures", None)
        if sensors is None:
            un["temperature_c"] = "psutil.sensors_temperatures not available on this OS"
        else:
            try:
                chips = sensors() or {}
            except Exception as exc:
                chips = {}
                un["temperature_c"] = f"psutil.sensors_temperatures failed: {_err(exc)}"
            picked = tuple(c for c in chips if c in CPU_SENSOR_CHIPS) or tuple(
                c for c in chips if c == "acpitz"
            )
            self._temp_chips = picked
            if not picked and "temperature_c" not in un:
                un["temperature_c"] = (
                    f"no CPU temperature sensor (psutil.sensors_temperatures chips: {sorted(chips) or 'none'})"
                )

        self._zones = []
        zones = find_rapl_zones(self._root)
        if not zones:
            un["energy_j"] = f"no RAPL package zones under {self._root}"
        for z in zones:
            try:
                z.update(z.read_uj())
                self._zones.append(z)
            except (OSError, ValueError) as exc:
                z.close()
                un.setdefault("energy_j", f"RAPL {z.path / 'energy_uj'} not readable: {_err(exc)}")
        if self._zones and len(self._zones) != len(zones):
            # partial package coverage would under-count: use none
            for z in self._zones:
                z.close()
            self._zones = []
        self._info = info
        return [info]

    def sample(self, t_mono: float, t_wall: float, out: list[TelemetrySample]) -> None:
        """Append one ``cpu`` :class:`TelemetrySample` to ``out``.

        Raises:
            Nothing; a failed reading is ``None`` and its first error is recorded.
        """
        ps, info = self._ps, self._info
        if info is None:
            return
        clock = pct = temp = energy = steal = None
        cores: list[float | None] | None = None
        if self._stat_fd is not None:
            try:
                now = parse_proc_stat(self._read_stat())
                if self._pct_primed:  # first sample covers ~0 s since open: not a reading
                    self._pct_primed = False
                elif self._last_stat is not None:
                    sh = interval_shares(self._last_stat, now)
                    pct, steal = sh.utilization_pct, sh.steal_pct
                    cores = sh.core_utilization_pct
                self._last_stat = now
            except (OSError, ValueError) as exc:
                info.unavailable.setdefault("utilization_pct", f"failed during run: {_err(exc)}")
        if self._freq:
            try:
                freqs = ps.cpu_freq(percpu=True)
                clock = sum(f.current for f in freqs) / len(freqs)
            except Exception as exc:
                info.unavailable.setdefault("clock_mhz", f"failed during run: {_err(exc)}")
        if self._pct:
            try:
                pct = float(ps.cpu_percent(interval=None))
                if self._pct_primed:  # first value covers ~0 s since open: not a reading
                    self._pct_primed = False
                    pct = None
            except Exception as exc:
                info.unavailable.setdefault("utilization_pct", f"failed during run: {_err(exc)}")
        if self._temp_chips:
            try:
                chips = ps.sensors_temperatures()
                temp = max(
                    (e.current for c in self._temp_chips for e in chips.get(c, ()) if e.current is not None),
                    default=None,
                )
            except Exception as exc:
                info.unavailable.setdefault("temperature_c", f"failed during run: {_err(exc)}")
        if self._zones:
            try:
                for z in self._zones:
                    z.update(z.read_uj())
                energy = sum(z.total_uj for z in self._zones) / 1e6
            except (OSError, ValueError) as exc:
                info.unavailable.setdefault("energy_j", f"failed during run: {_err(exc)}")
        out.append(
            TelemetrySample.model_construct(
                device="cpu",
                t_mono_s=t_mono,
                t_wall_s=t_wall,
                clock_mhz=clock,
                mem_clock_mhz=None,
                power_w=None,
                power_limit_w=None,
                temperature_c=temp,
                utilization_pct=pct,
                throttle_mask=None,
                energy_j=energy,
                steal_pct=steal,
                core_utilization_pct=cores,
                cpu_time_s=None,
                rss_bytes=None,
            )
        )

    def _read_stat(self) -> str:
        assert self._stat_fd is not None
        chunks, off = [], 0
        while True:  # /proc/stat can exceed one page on many-core hosts
            b = os.pread(self._stat_fd, 65536, off)
            if not b:
                return b"".join(chunks).decode("ascii", "replace")
            chunks.append(b)
            off += len(b)

    def close_stat(self) -> None:
        """Close the kept-open ``/proc/stat`` descriptor."""
        if self._stat_fd is not None:
            os.close(self._stat_fd)
            self._stat_fd = None

    def close(self) -> None:
        """Close the RAPL and ``/proc/stat`` file descriptors."""
        for z in self._zones:
            z.close()
        self._zones = []
        self.close_stat()
