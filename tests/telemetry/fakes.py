"""A fake NVML module and a fake psutil for telemetry tests.

``FakeNvml`` implements the pynvml functions tokcaliper uses. Each sampled value comes
from a per-GPU script indexed by ``fake.idx`` (the test advances it between samples;
past the end the last value holds). A script entry that is an exception is raised.

Processes on a GPU: ``procs`` is a fixed list of ``(pid, used bytes)`` (``used`` None:
NVML does not give it), ``procs_script`` the same per tick; ``proc_util`` is a per-tick
script of ``[(pid, smUtil %), …]`` returned as samples stamped ``1000 × (idx + 1)`` µs,
so a second call in the same tick finds none newer (NVML_ERROR_NOT_FOUND, as an
empty list does). A key left out raises "Not Supported".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any


class FakeNVMLError(Exception):
    """Stands in for pynvml.NVMLError (``value``: the nvml.h return code, when given)."""

    def __init__(self, msg: str, value: int | None = None) -> None:
        super().__init__(msg)
        self.value = value


class FakeNvml:
    NVML_CLOCK_SM = 1
    NVML_CLOCK_MEM = 2
    NVML_TEMPERATURE_GPU = 0

    def __init__(
        self,
        gpus: list[dict[str, Any]],
        driver: Any = "550.54.15",
        cuda: int = 12040,
        init_error: Exception | None = None,
        absent: set[str] = frozenset(),
        raising: dict[str, Exception] | None = None,
    ) -> None:
        self.gpus = gpus
        self.driver = driver
        self.cuda = cuda
        self.init_error = init_error
        self.absent = set(absent)
        self.raising = dict(raising or {})  # function name → exception it always raises
        self.idx = 0
        self.calls: Counter[tuple[str, int]] = Counter()  # (function, gpu index) → calls
        self.inits = 0
        self.shutdowns = 0

    # attribute access: functions in ``absent`` do not exist; those in ``raising`` raise
    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name in self.raising:
            exc = self.raising[name]

            def fail(*args: Any) -> Any:
                self.calls[(name, args[0] if args else -1)] += 1
                raise exc

            return fail
        if name.startswith("nvml") and name not in self.absent:
            impl = getattr(type(self), "_" + name, None)
            if impl is not None:
                return impl.__get__(self)
        raise AttributeError(name)

    def _value(self, h: int, key: str, fn: str) -> Any:
        self.calls[(fn, h)] += 1
        v = self.gpus[h].get(key)
        if v is None:
            raise FakeNVMLError("Not Supported")
        if isinstance(v, list):
            v = v[min(self.idx, len(v) - 1)]
        if isinstance(v, Exception):
            raise v
        return v

    def _nvmlInit(self) -> None:
        if self.init_error is not None:
            raise self.init_error
        self.inits += 1

    def _nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def _nvmlSystemGetDriverVersion(self) -> Any:
        return self.driver

    def _nvmlSystemGetCudaDriverVersion(self) -> int:
        return self.cuda

    def _nvmlDeviceGetCount(self) -> int:
        return len(self.gpus)

    def _nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def _nvmlDeviceGetName(self, h: int) -> Any:
        return self._value(h, "name", "nvmlDeviceGetName")

    def _nvmlDeviceGetUUID(self, h: int) -> Any:
        return self._value(h, "uuid", "nvmlDeviceGetUUID")

    def _nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        return SimpleNamespace(total=self._value(h, "mem_total", "nvmlDeviceGetMemoryInfo"))

    def _nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return self._value(h, "limit_mw", "nvmlDeviceGetEnforcedPowerLimit")

    def _nvmlDeviceGetPowerManagementDefaultLimit(self, h: int) -> int:
        return self._value(h, "default_limit_mw", "nvmlDeviceGetPowerManagementDefaultLimit")

    def _nvmlDeviceGetClockInfo(self, h: int, kind: int) -> int:
        key = {1: "sm", 2: "mem"}[kind]
        return self._value(h, key, f"nvmlDeviceGetClockInfo[{key}]")

    def _nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return self._value(h, "power_mw", "nvmlDeviceGetPowerUsage")

    def _nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        assert sensor == 0
        return self._value(h, "temp", "nvmlDeviceGetTemperature")

    def _nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        return SimpleNamespace(gpu=self._value(h, "util", "nvmlDeviceGetUtilizationRates"), memory=0)

    def _nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> int:
        return self._value(h, "reasons", "nvmlDeviceGetCurrentClocksEventReasons")

    def _nvmlDeviceGetCurrentClocksThrottleReasons(self, h: int) -> int:
        return self._value(h, "reasons", "nvmlDeviceGetCurrentClocksThrottleReasons")

    def _nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int:
        v = self.gpus[h].get("energy_mj")
        if callable(v):  # energy as a function of time
            self.calls[("nvmlDeviceGetTotalEnergyConsumption", h)] += 1
            return v()
        return self._value(h, "energy_mj", "nvmlDeviceGetTotalEnergyConsumption")

    def _nvmlDeviceGetComputeRunningProcesses(self, h: int) -> Any:
        self.calls[("nvmlDeviceGetComputeRunningProcesses", h)] += 1
        g = self.gpus[h]
        procs = g.get("procs")
        if "procs_script" in g:
            procs = g["procs_script"][min(self.idx, len(g["procs_script"]) - 1)]
        if procs is None:
            raise FakeNVMLError("Not Supported")
        return [SimpleNamespace(pid=pid, usedGpuMemory=mem) for pid, mem in procs]

    def _nvmlDeviceGetGraphicsRunningProcesses(self, h: int) -> Any:
        return []

    def _nvmlDeviceGetProcessUtilization(self, h: int, last_seen_us: int) -> Any:
        self.calls[("nvmlDeviceGetProcessUtilization", h)] += 1
        script = self.gpus[h].get("proc_util")
        if script is None:
            raise FakeNVMLError("Not Supported", 3)
        ts = 1000 * (self.idx + 1)
        rows = script[min(self.idx, len(script) - 1)]
        if isinstance(rows, Exception):
            raise rows
        if ts <= last_seen_us or not rows:
            raise FakeNVMLError("Not Found", 6)
        return [SimpleNamespace(pid=pid, timeStamp=ts, smUtil=sm, memUtil=0, encUtil=0, decUtil=0)
                for pid, sm in rows]


def h200(**over: Any) -> dict[str, Any]:
    """A GPU whose clocks sink under a power cap (the M2 story: 1455 → 1335 MHz)."""
    gpu: dict[str, Any] = {
        "name": "NVIDIA H200",
        "uuid": "GPU-11111111-2222-3333-4444-555555555555",
        "mem_total": 150754820096,
        "limit_mw": 700000,
        "default_limit_mw": 700000,
        "sm": [1455, 1410, 1380, 1335],
        "mem": [2619],
        "power_mw": [200000, 250000, 250000, 150000],
        "temp": [60, 66, 71, 69],
        "util": [0, 100, 100, 100],
        "reasons": [0x0, 0x4, 0x4 | 0x20, 0x1],
        "energy_mj": [1_000_000, 1_100_000, 1_200_000, 1_300_000],
        "procs": [],
        "proc_util": [[]],
    }
    gpu.update(over)
    return gpu


class FakePsutil:
    """psutil stand-in: per-core frequencies, cpu_percent sequence, temperature chips."""

    def __init__(self, freqs: list[float], percents: list[float], temps: dict[str, list[float]]):
        self.freqs = freqs
        self.percents = list(percents)
        self.temps = temps

    def cpu_freq(self, percpu: bool = False) -> Any:
        assert percpu
        return [SimpleNamespace(current=f, min=0.0, max=0.0) for f in self.freqs]

    def cpu_percent(self, interval: Any = None) -> float:
        return self.percents.pop(0)

    def sensors_temperatures(self) -> dict[str, list[Any]]:
        return {c: [SimpleNamespace(label="", current=t, high=None, critical=None) for t in ts]
                for c, ts in self.temps.items()}


class FakeNvmlDoctor(FakeNvml):
    """:class:`FakeNvml` plus the NVML functions ``tokcaliper doctor`` reads (issue 21).

    Extra per-GPU keys: ``persistence`` (0/1), ``app_sm`` / ``default_app_sm`` (MHz),
    ``max_sm`` (MHz), ``limit_range_mw`` ((min, max)), ``ecc`` / ``mig`` ((current,
    pending)), ``slowdown_c`` (``procs`` is :class:`FakeNvml`'s). A key left out raises
    "Not Supported", as NVML does.
    """

    NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1

    def _nvmlDeviceGetPersistenceMode(self, h: int) -> int:
        return self._value(h, "persistence", "nvmlDeviceGetPersistenceMode")

    def _nvmlDeviceGetApplicationsClock(self, h: int, kind: int) -> int:
        return self._value(h, "app_sm", "nvmlDeviceGetApplicationsClock")

    def _nvmlDeviceGetDefaultApplicationsClock(self, h: int, kind: int) -> int:
        return self._value(h, "default_app_sm", "nvmlDeviceGetDefaultApplicationsClock")

    def _nvmlDeviceGetMaxClockInfo(self, h: int, kind: int) -> int:
        return self._value(h, "max_sm", "nvmlDeviceGetMaxClockInfo")

    def _nvmlDeviceGetPowerManagementLimitConstraints(self, h: int) -> Any:
        return self._value(h, "limit_range_mw", "nvmlDeviceGetPowerManagementLimitConstraints")

    def _nvmlDeviceGetEccMode(self, h: int) -> Any:
        return self._value(h, "ecc", "nvmlDeviceGetEccMode")

    def _nvmlDeviceGetMigMode(self, h: int) -> Any:
        return self._value(h, "mig", "nvmlDeviceGetMigMode")

    def _nvmlDeviceGetTemperatureThreshold(self, h: int, kind: int) -> int:
        assert kind == 1
        return self._value(h, "slowdown_c", "nvmlDeviceGetTemperatureThreshold")
