"""What every check receives: a record plus its resolved facts (pure data)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tokcaliper.audit.constants import DEFAULT_HOST_BANDWIDTH_GB_S
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
    host_bandwidth_gb_s: float = DEFAULT_HOST_BANDWIDTH_GB_S
    host_bandwidth_source: str = "default"


@dataclass
class FindingLog:
    """A check's findings as it makes them, and the status they add up to.

    ``add("ttft_empty", Status.WARN, "TTFT empty: …")`` records the finding
    ``"<check>.ttft_empty"`` with its figures (keyword arguments); ``note(status)``
    counts a status that needs no sentence of its own. :attr:`status` is the worst.
    """

    check: str
    findings: list[Finding] = field(default_factory=list)
    statuses: list[Status] = field(default_factory=list)

    def add(self, code: str, status: Status, text: str, **figures: object) -> None:
        """Record finding ``<check>.<code>`` with ``status``, its sentence and its figures."""
        self.statuses.append(status)
        self.findings.append(Finding(code=f"{self.check}.{code}", status=status, text=text, figures=figures))

    def note(self, status: Status) -> None:
        """Count ``status`` without a finding (a passed sub-check that says nothing)."""
        self.statuses.append(status)

    @property
    def status(self) -> Status:
        """The most severe status recorded (:func:`worst`)."""
        return worst(self.statuses)


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
