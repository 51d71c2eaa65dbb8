"""Run every check over records and summarise a batch (pure; no file access).

``audit_records(records)`` → :class:`AuditReport`: per-record verdicts (A1,
A2, A3, A4 of the record's group, A5, A6, A10, A11), the batch curves (A4),
counts of fail/warn per check, the most suspicious records, and the exit code
(0 all pass/warn, 1 any fail, 2 records skipped as malformed and none failed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from tokcaliper.audit.checks import RECORD_CHECKS, CheckContext, a4_batch_curve
from tokcaliper.audit.checks._common import na, worst
from tokcaliper.audit.facts.gpus import GPUOverrides, UnknownGPUError, lookup_gpu
from tokcaliper.audit.facts.params import ParamFacts, resolve_params
from tokcaliper.audit.facts.quant import bits_per_weight
from tokcaliper.audit.launch import parse_launch
from tokcaliper.audit.memory import DEFAULT_HOST_BANDWIDTH_GB_S
from tokcaliper.model.record import Record
from tokcaliper.model.verdict import Status, Verdict

CHECK_ORDER = ("A1", "A2", "A3", "A4", "A5", "A6", "A10", "A11")


@dataclass
class AuditOptions:
    """Overrides given on the command line.

    Attributes:
        gpu: ``--bandwidth`` / ``--achievable-bandwidth`` / ``--tdp``.
        model_file: parameters read from ``--model-file`` (GGUF or config.json).
        host_bandwidth_gb_s: ``--host-bandwidth`` (GB/s) for offloaded weights; None → the default
            (:data:`tokcaliper.audit.memory.DEFAULT_HOST_BANDWIDTH_GB_S`).
    """

    gpu: GPUOverrides = field(default_factory=GPUOverrides)
    model_file: ParamFacts | None = None
    host_bandwidth_gb_s: float | None = None


class RecordAudit(BaseModel):
    """Verdicts for one record, with what the importer assumed."""

    label: str
    file: str | None = None
    index: Any = None
    status: Status
    verdicts: list[Verdict]
    assumptions: list[str] = Field(default_factory=list)
    facts: dict[str, Any] = Field(default_factory=dict)


class CheckCount(BaseModel):
    """How many records got each status from one check."""

    check: str
    title: str
    fail: int = 0
    warn: int = 0
    passed: int = Field(0, alias="pass")
    na: int = 0

    model_config = {"populate_by_name": True}


class Suspect(BaseModel):
    """A record ranked among the most suspicious, with the reasons."""

    label: str
    fails: int
    warns: int
    reasons: list[str]


class AuditReport(BaseModel):
    """Everything ``tokcaliper audit`` prints, text or JSON."""

    records: list[RecordAudit]
    curves: list[Verdict]
    summary: list[CheckCount]
    suspects: list[Suspect]
    skipped: list[dict[str, Any]] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    exit_code: int = 0


def build_context(record: Record, options: AuditOptions | None = None) -> CheckContext:
    """Resolve facts for one record (GPU specs, bits per weight, parameters).

    An unknown GPU is not an exception here: ``gpu_error`` carries the
    message ("unknown GPU 'X': give --bandwidth") and A2/A3 say n/a with it.
    """
    opts = options or AuditOptions()
    gpu, err = None, None
    try:
        gpu = lookup_gpu(record.hardware.gpu_name, opts.gpu)
    except UnknownGPUError as e:
        err = str(e)
    host_bw, host_src = DEFAULT_HOST_BANDWIDTH_GB_S, "default: dual-channel DDR5-6400, 2 × 8 B × 6400 MT/s"
    if opts.host_bandwidth_gb_s is not None:
        host_bw, host_src = opts.host_bandwidth_gb_s, "--host-bandwidth"
    return CheckContext(record=record, gpu=gpu, gpu_error=err, quant=bits_per_weight(record.quantization.weights),
                        params=resolve_params(record, opts.model_file), launch=parse_launch(record.launch_command),
                        host_bandwidth_gb_s=host_bw, host_bandwidth_source=host_src)


def audit_record(record: Record, options: AuditOptions | None = None) -> list[Verdict]:
    """The per-record verdicts (A4 excluded: it needs the batch)."""
    ctx = build_context(record, options)
    return [mod.check(ctx) for mod in RECORD_CHECKS]


def _facts(ctx: CheckContext) -> dict[str, Any]:
    return {
        "gpu": ctx.gpu.name if ctx.gpu else None,
        "gpu_error": ctx.gpu_error,
        "bandwidth_gb_s": ctx.gpu.used_bandwidth_gb_s if ctx.gpu else None,
        "tdp_w": ctx.gpu.tdp_w if ctx.gpu else None,
        "bits_per_weight": ctx.quant.bits if ctx.quant else None,
        "params_total": ctx.params.total, "params_total_source": ctx.params.total_source,
        "params_active": ctx.params.active, "params_active_source": ctx.params.active_source,
        "is_moe": ctx.params.is_moe, "is_moe_source": ctx.params.moe_source,
        "model_match": ctx.params.match, "model_facts_row": ctx.params.row.id if ctx.params.row else None,
        "notes": ctx.params.notes,
    }


def audit_records(records: list[Record], options: AuditOptions | None = None,
                  skipped: list[dict[str, Any]] | None = None) -> AuditReport:
    """Audit a batch.

    Args:
        records: validated records, in input order.
        options: overrides.
        skipped: malformed records the importer skipped (file, index, field, message).

    Returns:
        :class:`AuditReport`; ``warnings`` lists named GPU overrides
        (``--bandwidth 'Foo'=…``) that matched no record's GPU.
    """
    curves = a4_batch_curve.check_batch(records)
    by_member: dict[int, Verdict] = {}
    for c in curves:
        for i in c.members:
            by_member[i] = c.verdict
    audits: list[RecordAudit] = []
    for i, rec in enumerate(records):
        ctx = build_context(rec, options)
        verdicts = [mod.check(ctx) for mod in RECORD_CHECKS]
        a4 = by_member.get(i) or na("A4", a4_batch_curve.TITLE,
                                    f"fewer than {3} rated records in group {a4_batch_curve.group_key(rec)}")
        verdicts.insert(3, a4)
        audits.append(RecordAudit(
            label=rec.label(), file=rec.provenance.get("file"), index=rec.provenance.get("index"),
            status=worst([v.status for v in verdicts]), verdicts=verdicts,
            assumptions=list(rec.provenance.get("assumptions", [])) + ctx.params.notes, facts=_facts(ctx)))
    summary = []
    for code in CHECK_ORDER:
        cc = None
        for a in audits:
            v = next(v for v in a.verdicts if v.check == code)
            if cc is None:
                cc = CheckCount(check=code, title=v.title)
            if v.status == Status.FAIL:
                cc.fail += 1
            elif v.status == Status.WARN:
                cc.warn += 1
            elif v.status == Status.PASS:
                cc.passed += 1
            else:
                cc.na += 1
        if cc is not None:
            summary.append(cc)
    suspects = []
    weight = {"A3": 0, "A1": 1, "A2": 2, "A11": 3, "A4": 4, "A10": 5, "A6": 6, "A5": 7}
    for a in audits:
        fails = [v for v in a.verdicts if v.status == Status.FAIL]
        warns = sorted((v for v in a.verdicts if v.status == Status.WARN), key=lambda v: weight.get(v.check, 9))
        if fails or warns:
            a3 = next(v for v in a.verdicts if v.check == "A3")
            over = (a3.inputs.get("claim_over_spec_roofline") or a3.inputs.get("claim_over_roofline") or 0)
            suspects.append(((len(fails), len(warns) + min(over, 50.0)), a, fails, warns))
    suspects.sort(key=lambda s: s[0], reverse=True)
    top = [Suspect(label=a.label, fails=len(f), warns=len(w), reasons=[f"{v.check}: {v.summary}" for v in (f + w)][:3])
           for _, a, f, w in suspects[:5]]
    any_fail = any(a.status == Status.FAIL for a in audits) or any(c.verdict.status == Status.FAIL for c in curves)
    exit_code = 1 if any_fail else (2 if skipped else 0)
    opts = options or AuditOptions()
    warnings = opts.gpu.unmatched([r.hardware.gpu_name for r in records])
    return AuditReport(records=audits, curves=[c.verdict for c in curves], summary=summary, suspects=top,
                       skipped=skipped or [], warnings=warnings, exit_code=exit_code)
