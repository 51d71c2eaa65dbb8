"""What ``tokcaliper report --audit FILE`` draws: an audit of record files (issue 19 item 3).

:func:`gather_audit_report` runs the audit (:func:`tokcaliper.audit.audit_files`,
the same call as ``tokcaliper audit FILE``) and adds what the report page shows
first and draws: the records per status, the first finding of the first-ranked
suspect, and each record's claimed per-stream decode rate against its roofline
bound (A3's :class:`~tokcaliper.audit.checks.a3_roofline.Roofline`). Pure apart
from reading the files; the renderers (:mod:`tokcaliper.report.formats`) compute nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel

from tokcaliper import __version__
from tokcaliper.audit import AuditOptions, AuditReport, audit_files
from tokcaliper.audit.importers import DEFAULT_MAX_BYTES
from tokcaliper.model import warnings as W
from tokcaliper.model.verdict import Status
from tokcaliper.model.warnings import Caveat

__all__ = ["AuditFileReport", "ClaimBound", "gather_audit_report"]


class ClaimBound(BaseModel):
    """One record's claim against its roofline (A3).

    Attributes:
        label: the record's label. status: the record's worst status.
        claimed_tok_s: the per-stream decode rate under test, tok/s (None: none published).
        bound_tok_s: the bound A3 used (speculative- or offload-scaled when that applies),
            tok/s; None when A3 could not compute one (``why_no_bound`` says why).
        bound_kind: ``roofline``, ``speculative roofline`` or ``offload roofline``.
        over_bound: claim ÷ bound. firm: False when an input of the bound is uncertain.
    """

    label: str
    status: Status
    claimed_tok_s: float | None
    bound_tok_s: float | None
    bound_kind: str | None
    over_bound: float | None
    firm: bool | None
    why_no_bound: str | None = None


class AuditFileReport(BaseModel):
    """An audit of record files, as the report page shows it.

    Attributes:
        files: the files audited, as given. audit: the full result of ``tokcaliper audit``.
        records: records audited. fail, warn, passed, na: records by their worst status.
        top_finding: the first reason of the first-ranked suspect (``"LABEL — A3: …"``),
            None when no record is suspect.
        claims: one :class:`ClaimBound` per record, in input order.
        exit_code: ``tokcaliper audit``'s exit code for these files (0, 10, 12, 2).
        tool_version: tokcaliper's version. command: the audit command that gives the same result.
        caveats: what the reader must know (named warnings).
    """

    files: list[str]
    audit: AuditReport
    records: int
    fail: int
    warn: int
    passed: int
    na: int
    top_finding: str | None
    claims: list[ClaimBound]
    exit_code: int
    tool_version: str
    command: str
    caveats: list[Caveat]


def gather_audit_report(paths: Sequence[Path], options: AuditOptions | None = None,
                        max_bytes: int = DEFAULT_MAX_BYTES) -> AuditFileReport:
    """Audit the record files ``paths`` and gather what the report shows.

    Raises:
        InputError: unreadable or unparseable files, or no valid record (as ``tokcaliper audit``).
    """
    rep = audit_files(list(paths), options, max_bytes=max_bytes)
    count = {s: sum(1 for a in rep.records if a.status == s) for s in Status}
    top = None
    if rep.suspects:
        s = rep.suspects[0]
        top = f"{s.label} — {s.reasons[0]}" if s.reasons else s.label
    claims = []
    for a in rep.records:
        roof = a.roofline
        a3 = next((v for v in a.verdicts if v.check == "A3"), None)
        claims.append(ClaimBound(
            label=a.label, status=a.status,
            claimed_tok_s=None if roof is None else roof.claim_tok_s,
            bound_tok_s=None if roof is None else roof.effective_bound,
            bound_kind=None if roof is None else roof.kind,
            over_bound=None if roof is None else roof.over_bound,
            firm=None if roof is None else roof.firm,
            why_no_bound=None if roof is not None or a3 is None else a3.summary))
    caveats = [W.REPORT_AUDIT_BOUNDS.caveat()] + [W.REPORT_AUDIT_UNCHECKED.caveat(what=u)
                                                  for u in rep.unchecked]
    return AuditFileReport(
        files=[str(p) for p in paths], audit=rep, records=len(rep.records), fail=count[Status.FAIL],
        warn=count[Status.WARN], passed=count[Status.PASS], na=count[Status.NA], top_finding=top,
        claims=claims, exit_code=rep.exit_code, tool_version=__version__,
        command=shlex.join(["tokcaliper", "audit", *map(str, paths)]), caveats=caveats)
