"""AMD GPUs through AMD SMI (the ``amdsmi`` Python module shipped with ROCm), best effort.

Used only when ``import amdsmi`` works; otherwise the back-end reports
``"no AMD GPU: amdsmi not installed"`` once and the run goes on.

Per GPU and tick one call, ``amdsmi_get_gpu_metrics_info(h)`` (the driver's
``gpu_metrics`` table, amdsmi_gpu_metrics_t), gives (key → sample field, unit):
``current_gfxclk`` (or the first of ``current_gfxclks`` on multi-XCD parts) →
``clock_mhz`` (MHz); ``current_uclk`` → ``mem_clock_mhz`` (MHz);
``current_socket_power`` (else ``average_socket_power``) → ``power_w`` (W);
``temperature_hotspot`` (else ``temperature_edge``) → ``temperature_c`` (°C);
``average_gfx_activity`` → ``utilization_pct``; ``energy_accumulator`` ×
15.259 µJ (the counter's resolution in amdsmi_gpu_metrics_t) → ``energy_j``.
``amdsmi_get_power_cap_info(h)["power_cap"]`` (µW) → ``power_limit_w``.
Values the driver does not fill come back as ``"N/A"`` or 0xFFFF and become ``None``.
``throttle_status`` is an ASIC-specific bit field with no common decoding, so
``throttle_mask`` stays ``None`` for AMD GPUs (recorded in ``unavailable``).
Name and UUID: ``amdsmi_get_gpu_asic_info(h)["market_name"]``,
``amdsmi_get_gpu_device_uuid(h)``.
"""

from __future__ import annotations

from typing import Any

from tokcaliper.model.telemetry import DeviceInfo, TelemetrySample
from tokcaliper.telemetry.backend import BackendUnavailable

__all__ = ["AMD_ENERGY_RESOLUTION_J", "AmdSmiBackend", "parse_amd_metrics"]

#: ``energy_accumulator`` counts in 15.259 µJ steps (amdsmi_gpu_metrics_t docs).
AMD_ENERGY_RESOLUTION_J = 15.259e-6
_NA = 0xFFFF


def _err(exc: BaseException) -> str:
    msg = str(exc)
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def _num(v: Any) -> float | None:
    if isinstance(v, (list, tuple)):
        v = next((x for x in v if _num(x) is not None), None)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    if v in (_NA, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF):
        return None
    return float(v)


def _first(m: dict[str, Any], *keys: str) -> float | None:
    for k in keys:
        v = _num(m.get(k))
        if v is not None:
            return v
    return None


def parse_amd_metrics(m: dict[str, Any]) -> dict[str, float | None]:
    """Sample fields from one ``amdsmi_get_gpu_metrics_info`` dict (key table in the module docstring).

    Raises:
        Nothing; absent or ``"N/A"`` keys give ``None``.
    """
    energy = _num(m.get("energy_accumulator"))
    return {
        "clock_mhz": _first(m, "current_gfxclk", "current_gfxclks", "average_gfxclk_frequency"),
        "mem_clock_mhz": _first(m, "current_uclk", "average_uclk_frequency"),
        "power_w": _first(m, "current_socket_power", "average_socket_power"),
        "temperature_c": _first(m, "temperature_hotspot", "temperature_edge"),
        "utilization_pct": _first(m, "average_gfx_activity"),
        "energy_j": None if energy is None else energy * AMD_ENERGY_RESOLUTION_J,
    }


class AmdSmiBackend:
    """Telemetry back-end for AMD GPUs (ids ``"amd<index>"``, kind ``"amd_gpu"``).

    Args:
        amdsmi: the ``amdsmi`` module (default: import it), injectable for tests.
    """

    name = "amdsmi"

    def __init__(self, amdsmi: Any = None) -> None:
        self._arg = amdsmi
        self._mod: Any = None
        self._gpus: list[tuple[DeviceInfo, Any]] = []
        self._limits: dict[str, float | None] = {}

    def open(self) -> list[DeviceInfo]:
        """``amdsmi_init`` and one :class:`DeviceInfo` per GPU handle.

        Raises:
            BackendUnavailable: amdsmi not importable, init failed, or no GPU
                (message starts with ``"no AMD GPU: "``).
        """
        mod = self._arg
        if mod is None:
            try:
                import amdsmi as mod  # type: ignore[import-not-found]
            except Exception as exc:  # ImportError, or the ROCm library missing
                raise BackendUnavailable(f"no AMD GPU: amdsmi not installed ({_err(exc)})") from None
        try:
            flags = getattr(getattr(mod, "AmdSmiInitFlags", None), "INIT_AMD_GPUS", None)
            mod.amdsmi_init(flags) if flags is not None else mod.amdsmi_init()
        except Exception as exc:
            raise BackendUnavailable(f"no AMD GPU: amdsmi_init failed: {_err(exc)}") from None
        try:
            handles = list(mod.amdsmi_get_processor_handles())
        except Exception as exc:
            self._shutdown(mod)
            raise BackendUnavailable(f"no AMD GPU: amdsmi_get_processor_handles failed: {_err(exc)}") from None
        if not handles:
            self._shutdown(mod)
            raise BackendUnavailable("no AMD GPU: amdsmi reports 0 GPUs")
        self._mod = mod
        self._gpus = []
        for i, h in enumerate(handles):
            info = DeviceInfo(device=f"amd{i}", kind="amd_gpu")
            try:
                info.name = str(mod.amdsmi_get_gpu_asic_info(h).get("market_name")) or None
            except Exception:
                pass
            try:
                info.uuid = str(mod.amdsmi_get_gpu_device_uuid(h))
            except Exception:
                pass
            info.unavailable["throttle_mask"] = "AMD throttle_status has no common decoding"
            try:
                cap = _num(mod.amdsmi_get_power_cap_info(h).get("power_cap"))
                self._limits[info.device] = None if cap is None else cap / 1e6
            except Exception as exc:
                self._limits[info.device] = None
                info.unavailable["power_limit_w"] = f"amdsmi_get_power_cap_info: {_err(exc)}"
            try:
                fields = parse_amd_metrics(mod.amdsmi_get_gpu_metrics_info(h))
                for k, v in fields.items():
                    if v is None:
                        info.unavailable[k] = "not in amdsmi_get_gpu_metrics_info on this GPU"
            except Exception as exc:
                info.unavailable["metrics"] = f"amdsmi_get_gpu_metrics_info: {_err(exc)}"
            self._gpus.append((info, h))
        return [g for g, _ in self._gpus]

    def sample(self, t_mono: float, t_wall: float, out: list[TelemetrySample]) -> None:
        """Append one sample per AMD GPU to ``out``.

        Raises:
            Nothing; a failed call gives ``None`` fields and its first error is recorded.
        """
        for info, h in self._gpus:
            try:
                f = parse_amd_metrics(self._mod.amdsmi_get_gpu_metrics_info(h))
            except Exception as exc:
                info.unavailable.setdefault("metrics", f"failed during run: {_err(exc)}")
                f = {}
            out.append(TelemetrySample.model_construct(
                device=info.device, t_mono_s=t_mono, t_wall_s=t_wall,
                clock_mhz=f.get("clock_mhz"), mem_clock_mhz=f.get("mem_clock_mhz"),
                power_w=f.get("power_w"), power_limit_w=self._limits.get(info.device),
                temperature_c=f.get("temperature_c"), utilization_pct=f.get("utilization_pct"),
                throttle_mask=None, energy_j=f.get("energy_j"), steal_pct=None,
                core_utilization_pct=None, cpu_time_s=None, rss_bytes=None,
            ))

    @staticmethod
    def _shutdown(mod: Any) -> None:
        try:
            mod.amdsmi_shut_down()
        except Exception:
            pass

    def close(self) -> None:
        """``amdsmi_shut_down`` (errors ignored)."""
        if self._mod is not None:
            self._shutdown(self._mod)
            self._mod = None
