"""What ``tokcaliper doctor`` found about the machine (issue 21): data only.

A :class:`Finding` is one checked item — what was found, why it matters for
noise, and the exact command that would change it (tokcaliper changes nothing
itself). A :class:`MachineCheck` is every finding of one check, stored with
each run of a session (:attr:`tokcaliper.model.telemetry.HostInfo.machine_check`).
The checks themselves are :mod:`tokcaliper.doctor.checks` (pure) over the facts
:mod:`tokcaliper.doctor.facts` gathers (I/O).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from tokcaliper.model.warnings import MACHINE_CHECK_FINDING, Caveat

__all__ = ["Finding", "MachineCheck", "Status"]

#: ``ok``: nothing to do; ``warn``: this can make runs differ (printed before
#: measuring); ``info``: a fact worth knowing, not a cause of noise by itself;
#: ``unknown``: the source is not exposed here (the reason is the finding).
Status = Literal["ok", "warn", "info", "unknown"]


class Finding(BaseModel):
    """One item of the machine check.

    Attributes:
        code: stable name, e.g. ``"cpu-governor"``, ``"foreign-cpu"``, ``"gpu0-power-limit"``.
        area: ``"host"``, ``"gpu"`` or ``"server"``.
        status: see :data:`Status`.
        found: what was read, with its figures (one line).
        why: why it matters for noise (one line).
        fix: the exact command that would change it (None when nothing to do or no
            command exists, e.g. steal time on a shared VM).
    """

    code: str
    area: Literal["host", "gpu", "server"]
    status: Status
    found: str
    why: str = ""
    fix: str | None = None


class MachineCheck(BaseModel):
    """Every finding of one machine check.

    Attributes:
        quick: True for the check at the start of ``bench`` / ``experiment run``
            (short CPU sampling window), False for ``tokcaliper doctor``.
        window_s: seconds over which process CPU and steal were sampled.
        findings: in order host, GPU, server.
    """

    quick: bool = False
    window_s: float | None = None
    findings: list[Finding] = Field(default_factory=list)

    @property
    def warnings(self) -> list[Finding]:
        """The findings with status ``warn``."""
        return [f for f in self.findings if f.status == "warn"]

    def caveats(self) -> list[Caveat]:
        """One :data:`~tokcaliper.model.warnings.MACHINE_CHECK_FINDING` caveat per ``warn``
        finding: its code, what was found and the command that would change it."""
        return [MACHINE_CHECK_FINDING.caveat(code=f.code, found=f.found, fix=f" — {f.fix}" if f.fix else "")
                for f in self.warnings]
