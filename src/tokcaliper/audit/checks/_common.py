"""What every check receives: a record plus its resolved facts (pure data)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tokcaliper.audit.facts.gpus import GPUFacts
from tokcaliper.audit.facts.params import ParamFacts
from tokcaliper.audit.facts.quant import QuantFacts
from tokcaliper.audit.launch import LaunchKnobs
from tokcaliper.model.record import Record
from tokcaliper.model.verdict import Finding, Status, Verdict


@dataclass
class CheckContext:
    """A record with the facts resolved for it (built by ``audit.runner``).

    Attributes:
        record: the record under audit.
        gpu: GPU specs, or None with ``gpu_error`` saying why.
        quant: bits per weight, or None when unknown and the record gives none.
        params: parameters with sources.
        launch: knobs parsed from the launch command.
        host_bandwidth_gb_s: host memory bandwidth for offloaded weights (A3),
            with ``host_bandwidth_source`` saying whether it is the default or ``--host-bandwidth``.
    """

    record: Record
    gpu: GPUFacts | None
    gpu_error: str | None
    quant: QuantFacts | None
    params: ParamFacts
    launch: LaunchKnobs
    extra_sources: list[str] = field(default_factory=list)
    host_bandwidth_gb_s: float = 102.4
    host_bandwidth_source: str = "default"


#: Magnitudes at or above this print in scientific notation (``1.00e+308``), not 300 digits.
SCI_ABOVE = 1e9


def num(x: float | None, digits: int = 3) -> str:
    """``x`` with ``digits`` significant figures (no thousands separator); None → "—".

    Integers below 1e7 print whole; magnitudes ≥ :data:`SCI_ABOVE` (or
    below 1e-4) print in scientific notation, so an absurd published rate
    (1e308 tok/s) reads ``1.00e+308`` rather than 309 digits.
    """
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "—"
    if x == 0:
        return "0"
    if abs(x) >= SCI_ABOVE or abs(x) < 1e-4:
        return f"{x:.{max(digits - 1, 0)}e}"
    if float(x).is_integer() and abs(x) < 1e7:
        return str(int(x))
    mag = math.floor(math.log10(abs(x)))
    decimals = max(0, digits - 1 - mag)
    out = f"{x:.{decimals}f}"
    return out.rstrip("0").rstrip(".") if "." in out else out


def fixed(x: float, decimals: int = 3) -> str:
    """``x`` with fixed ``decimals`` (ratios: ``0.172``), scientific at or above :data:`SCI_ABOVE`."""
    if not math.isfinite(x):
        return "—"
    if abs(x) >= SCI_ABOVE:
        return num(x, 3)  # scientific, three significant digits
    return f"{x:.{decimals}f}"


def worst(statuses: list[Status]) -> Status:
    """The most severe status: fail > warn > pass > n/a."""
    order = [Status.FAIL, Status.WARN, Status.PASS, Status.NA]
    for s in order:
        if s in statuses:
            return s
    return Status.NA


def na(check: str, title: str, why: str, inputs: dict | None = None, sources: list[str] | None = None) -> Verdict:
    """A not-applicable verdict that says why (one finding, code ``"<check>.not_applicable"``)."""
    return Verdict(check=check, title=title, status=Status.NA, summary=why,
                   findings=[Finding(code=f"{check}.not_applicable", status=Status.NA, text=why)],
                   arithmetic=[], inputs=inputs or {}, sources=sources or [])
