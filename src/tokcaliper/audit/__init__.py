"""Audit published benchmark numbers (METHODS.md Part A).

Data path: files → :mod:`~tokcaliper.audit.importers` → :class:`~tokcaliper.model.record.Record`
→ checks (pure, with :mod:`~tokcaliper.audit.facts`) → :class:`~tokcaliper.model.verdict.Verdict` s
→ ``report.audit_view``. Public entry points:

* :func:`audit_files` — import files and audit them (the CLI's one call);
* :func:`~tokcaliper.audit.runner.audit_records` — audit records already in memory;
* :func:`diff_files` / :func:`~tokcaliper.audit.diff.diff_records` — A7;
* :func:`~tokcaliper.audit.explain.explain` — ``--explain CHECK``.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from tokcaliper.audit.attribution import AttributionPlan
from tokcaliper.audit.diff import DiffResult, diff_records
from tokcaliper.audit.importers import (
    DEFAULT_MAX_BYTES,
    check_max_bytes,
    load_records,
    parse_record_ref,
    read_model_file,
)
from tokcaliper.audit.runner import AuditOptions, AuditReport, SkippedRecord, audit_records
from tokcaliper.errors import InputError
from tokcaliper.model.record import Record
from tokcaliper.model.warnings import Caveat

__all__ = ["load_record_ref", "audit_files", "audit_records", "diff_files", "diff_records", "AuditOptions", "AuditReport",
           "DiffResult", "load_records", "plan_files"]


def audit_files(paths: list[Path], options: AuditOptions | None = None,
                max_bytes: int = DEFAULT_MAX_BYTES, model_file: Path | None = None) -> AuditReport:
    """Import every file/folder in ``paths`` and audit the records.

    Raises:
        InputError: unreadable/unparseable files, or no valid record at all
            (the message lists the first problems by file, index and field).
    """
    check_max_bytes(max_bytes)
    opts = options or AuditOptions()
    if model_file is not None:
        opts.model_file = read_model_file(model_file)
    result = load_records(paths, max_bytes=max_bytes)
    if not result.records:
        first = "; ".join(str(p) for p in result.problems[:3])
        raise InputError(f"no valid record in {', '.join(result.files) or 'input'}" + (f": {first}" if first else ""))
    report = audit_records(result.records, opts, skipped=[SkippedRecord(**asdict(p)) for p in result.problems])
    report.warnings = result.warnings + report.warnings
    return report


def _one(ref: str, max_bytes: int, warnings: list[Caveat]) -> Record:
    path, idx = parse_record_ref(ref)
    result = load_records([path], max_bytes=max_bytes)
    warnings += result.warnings
    if idx is None:
        if len(result.records) != 1:
            raise InputError(f"{ref}: holds {len(result.records)} valid records; pick one with {path}#INDEX")
        return result.records[0]
    for r in result.records:
        if str(r.provenance.get("index")) == str(idx):
            return r
    bad = [p for p in result.problems if str(p.index).split(" ")[0] == str(idx)]
    raise InputError(str(bad[0]) if bad else f"{ref}: no record with index {idx}")


def load_record_ref(ref: str, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[Record, list[Caveat]]:
    """One record from ``FILE`` or ``FILE#INDEX``, with the importer's warnings.

    Raises:
        InputError: unreadable file, ambiguous or missing record.
    """
    warnings: list[Caveat] = []
    return _one(ref, max_bytes, warnings), warnings


def diff_files(ref_a: str, ref_b: str, max_bytes: int = DEFAULT_MAX_BYTES) -> DiffResult:
    """Load one record from each reference (``FILE`` or ``FILE#INDEX``) and diff them (A7).

    Raises:
        InputError: unreadable file, ambiguous or missing record.
    """
    warnings: list[Caveat] = []
    d = diff_records(_one(ref_a, max_bytes, warnings), _one(ref_b, max_bytes, warnings))
    d.warnings = warnings
    return d


def plan_files(ref_a: str, ref_b: str, out: Path, *, runs_per_arm: int | None = None, cv: float = 0.05,
               effect: float = 0.05, metric: str | None = None,
               max_bytes: int = DEFAULT_MAX_BYTES) -> AttributionPlan:
    """``diff --plan``: load one record from each reference and write their attribution plan (A8).

    See :func:`tokcaliper.audit.attribution.write_plan` for the runs per arm.

    Raises:
        InputError: unreadable file, ambiguous or missing record, nothing to plan,
            ``out`` not writable.
    """
    from tokcaliper.audit.attribution import write_plan

    warnings: list[Caveat] = []
    a, b = _one(ref_a, max_bytes, warnings), _one(ref_b, max_bytes, warnings)
    return write_plan(a, b, out, runs_per_arm=runs_per_arm, cv=cv, effect=effect, metric=metric,
                      warnings=warnings)
