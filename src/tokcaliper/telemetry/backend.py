"""The telemetry back-end protocol and its error (METHODS.md M5).

Its own module so that the back-ends (:mod:`~tokcaliper.telemetry.nvml`,
:mod:`~tokcaliper.telemetry.cpu`) and the sampler that drives them
(:mod:`~tokcaliper.telemetry.sampler`) all import it, and none imports another:
the data path reads back-end → sampler, one way.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from tokcaliper.model.telemetry import DeviceInfo, TelemetrySample

__all__ = ["Backend", "BackendUnavailable"]


class BackendUnavailable(Exception):
    """A back-end cannot sample on this machine; ``str(exc)`` is the reason shown to users
    (for NVML it is :data:`tokcaliper.model.warnings.NO_GPU`: ``"no NVIDIA GPU: …"``)."""


@runtime_checkable
class Backend(Protocol):
    """What the sampler needs from a telemetry source.

    ``open`` is called once before sampling and raises :class:`BackendUnavailable`
    with a reason when the source is absent. ``sample`` appends one sample per device
    to ``out`` and must not raise for a single failed reading (it records the reason
    in the device's ``unavailable`` instead). ``close`` releases the source.
    """

    name: str

    def open(self) -> list[DeviceInfo]: ...

    def sample(self, t_mono: float, t_wall: float, out: list[TelemetrySample]) -> None: ...

    def close(self) -> None: ...
