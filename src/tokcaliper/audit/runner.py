"""Run every check over records and summarise a batch (pure; no file access).

``audit_records(records)`` → :class:`AuditReport`: per-record verdicts (A1,
A2, A3, A4 of the record's group, A5, A6, A10, A11), the batch curves (A4),
counts of fail/warn per check, what could not be checked, and the exit code
(0 all pass/warn, 10 any fail, 2 records skipped as malformed and none failed,
12 none failed but a check that applies could not run).

Two batch views keep the warnings meaningful:

* *source-wide findings*: a warning with the same finding on every record of a
  source (the same importer and file, at least :data:`SOURCE_WIDE_MIN` records —
  e.g. A5 on a leaderboard that never publishes token counts and seconds) is
  said once for the source (:class:`SourceFinding`); it stays in each record's
  verdicts, marked in ``RecordAudit.source_wide``, but no longer sets the
  record's status nor counts as a per-record warning;
* *ranked suspects*: records with a fail, or an A1/A2/A3/A11 warning, ordered by
  failures first and then by how far beyond a bound they claim (claim ÷
  roofline, speculative or offload roofline when it applies), each with the
  basis of its bound (:class:`Suspect`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from pydantic import BaseModel, Field, JsonValue

from tokcaliper.errors import EXIT_AUDIT_FAIL, EXIT_AUDIT_INCOMPLETE
from tokcaliper.audit.checks import RECORD_CHECKS, CheckContext, a3_roofline, a4_batch_curve
from tokcaliper.audit.checks.a3_roofline import Roofline
from tokcaliper.audit.constants import A4_MIN_N, DEFAULT_HOST_BANDWIDTH_GB_S, DEFAULT_HOST_BANDWIDTH_SOURCE
from tokcaliper.audit.checks._common import na, worst
from tokcaliper.audit.facts.gpus import GPUFacts, GPUOverrides, UnknownGPUError, lookup_gpu
from tokcaliper.audit.facts.params import ParamFacts, resolve_params
from tokcaliper.audit.facts.quant import bits_per_weight
from tokcaliper.audit.launch import parse_launch
from tokcaliper.model.record import Record
from tokcaliper.model.verdict import Finding, Status, Verdict
from tokcaliper.model.warnings import Caveat
from tokcaliper.numbers import compact

CHECK_ORDER = ("A1", "A2", "A3", "A4", "A5", "A6", "A10", "A11")
#: A finding on every record of a source with at least this many records is said once for the source.
SOURCE_WIDE_MIN = 3
#: Checks whose warnings put a record on the ranked list (bounds and impossible figures).
RANKED_CHECKS = ("A1", "A2", "A3", "A11")
#: Ranked records shown in the text view (all are in --json).
RANK_SHOWN = 10


@dataclass
class AuditOptions:
    """Overrides given on the command line.

    Attributes:
        gpu: ``--bandwidth`` / ``--achievable-bandwidth`` / ``--tdp``.
        model_file: parameters read from ``--model-file`` (GGUF or config.json).
        host_bandwidth_gb_s: ``--host-bandwidth`` (GB/s) for offloaded weights; None → the default
            (:data:`tokcaliper.audit.constants.DEFAULT_HOST_BANDWIDTH_GB_S`).
    """

    gpu: GPUOverrides = field(default_factory=GPUOverrides)
    model_file: ParamFacts | None = None
    host_bandwidth_gb_s: float | None = None


class RecordAudit(BaseModel):
    """Verdicts for one record, with what the importer assumed.

    ``roofline`` is A3's typed result (None when A3 could not compute a bound), which the
    ranked list reads; it is not part of the JSON, whose A3 verdict carries the same figures.
    ``source_wide``: checks whose every finding on this record holds for its whole source.
    """

    label: str
    file: str | None = None
    index: int | str | None = None
    status: Status
    verdicts: list[Verdict]
    assumptions: list[str] = Field(default_factory=list)
    facts: dict[str, JsonValue] = Field(default_factory=dict)
    source_wide: list[str] = Field(default_factory=list)
    roofline: Roofline | None = Field(default=None, exclude=True)


class CheckCount(BaseModel):
    """How many records got each status from one check."""

    check: str
    title: str
    fail: int = 0
    warn: int = 0
    passed: int = Field(0, alias="pass")
    na: int = 0
    source_wide: int = 0

    model_config = {"populate_by_name": True}


class Suspect(BaseModel):
    """A record on the ranked list, with the reasons.

    Attributes:
        rank: 1 = look at first. over_bound: claim ÷ the bound that applies
            (None when A3 could not compute one). bound: that bound and its
            basis (parameters read, bytes per weight, bandwidth, model identification).
        fails, warns: counts (source-wide warnings excluded). reasons: one line per finding.
    """

    label: str
    fails: int
    warns: int
    reasons: list[str]
    rank: int = 0
    over_bound: float | None = None
    bound: str | None = None


class SourceFinding(BaseModel):
    """A finding that holds for every record of one source, said once."""

    source: str
    check: str
    status: Status
    summary: str
    records: int


class SkippedRecord(BaseModel):
    """A record the importer skipped as malformed (:class:`~tokcaliper.audit.importers.base.Problem`).

    Attributes:
        file: the file as given. index: its position in the file (with ``" (line N)"``
            for a line that could not be parsed). field: the field at fault (empty: the
            record as a whole). message: why, in plain words.
    """

    file: str
    index: int | str
    field: str
    message: str


class AuditReport(BaseModel):
    """Everything ``tokcaliper audit`` prints, text or JSON.

    ``unchecked``: one line per record for each check that applies but could not run
    (an unknown or ambiguous GPU, an unknown model), naming what to give; any of them
    and no failure → exit :data:`~tokcaliper.errors.EXIT_AUDIT_INCOMPLETE`.
    """

    records: list[RecordAudit]
    curves: list[Verdict]
    summary: list[CheckCount]
    suspects: list[Suspect]
    source_findings: list[SourceFinding] = Field(default_factory=list)
    skipped: list[SkippedRecord] = Field(default_factory=list)
    warnings: list[Caveat] = Field(default_factory=list)
    unchecked: list[str] = Field(default_factory=list)
    exit_code: int = 0


def build_context(record: Record, options: AuditOptions | None = None) -> CheckContext:
    """Resolve facts for one record (GPU specs, bits per weight, parameters).

    An unknown GPU is not an exception here: ``gpu_error`` carries the
    message ("unknown GPU 'X': give --bandwidth") and A2/A3 say n/a with it.
    A record's measured bandwidth (``hardware.bandwidth_measured_gb_s``) is the
    achievable figure unless ``--achievable-bandwidth`` is given, and stands even
    when the GPU's spec sheet is not found; ``device_kind == "cpu"`` never
    consults the GPU tables (:func:`_cpu_facts`).
    """
    opts = options or AuditOptions()
    gpu, err = None, None
    hw = record.hardware
    if hw.device_kind == "cpu":
        gpu, err = _cpu_facts(record, opts.gpu)
    else:
        try:
            gpu = lookup_gpu(hw.gpu_name, opts.gpu)
        except UnknownGPUError as e:
            err = str(e)
        measured_src = hw.bandwidth_measured_source or "measured, stated in the record"
        if gpu is not None and hw.bandwidth_measured_gb_s and gpu.achievable_gb_s is None:
            gpu = replace(gpu, achievable_gb_s=hw.bandwidth_measured_gb_s, achievable_source=measured_src)
        elif gpu is None and hw.bandwidth_measured_gb_s:  # the measured figure stands; the spec sheet is unknown
            gpu = GPUFacts(name=hw.gpu_name or "unnamed GPU", bandwidth_gb_s=None,
                           bandwidth_source=f"no spec sheet ({err})", achievable_gb_s=hw.bandwidth_measured_gb_s,
                           achievable_source=measured_src, memory_gb=hw.memory_gb)
            err = None
    host_bw, host_src = DEFAULT_HOST_BANDWIDTH_GB_S, f"default: {DEFAULT_HOST_BANDWIDTH_SOURCE}"
    if opts.host_bandwidth_gb_s is not None:
        host_bw, host_src = opts.host_bandwidth_gb_s, "--host-bandwidth"
    return CheckContext(record=record, gpu=gpu, gpu_error=err, quant=bits_per_weight(record.quantization.weights),
                        params=resolve_params(record, opts.model_file), launch=parse_launch(record.launch_command),
                        host_bandwidth_gb_s=host_bw, host_bandwidth_source=host_src)


def _cpu_facts(record: Record, ov: GPUOverrides) -> tuple[GPUFacts | None, str | None]:
    """The host CPU as the device: its bandwidth from ``--achievable-bandwidth`` / ``--bandwidth``
    or the record's measured figure, never from the GPU tables (a CPU name must not match a GPU row)."""
    hw = record.hardware
    name = hw.gpu_name or "host CPU"
    spec = ov.get(ov.bandwidth, name)
    ach = ov.get(ov.achievable, name)
    ach_src = "--achievable-bandwidth"
    if ach is None and hw.bandwidth_measured_gb_s:
        ach, ach_src = hw.bandwidth_measured_gb_s, hw.bandwidth_measured_source or "measured, stated in the record"
    if spec is None and ach is None:
        return None, (f"no memory bandwidth known for the host CPU {name!r}: no spec-sheet table for CPUs and "
                      "no measured figure (give --achievable-bandwidth)")
    return GPUFacts(name=name, bandwidth_gb_s=spec,
                    bandwidth_source="user override --bandwidth" if spec is not None
                    else "no spec-sheet table for CPUs (host memory)",
                    achievable_gb_s=ach, achievable_source=ach_src, memory_gb=hw.memory_gb), None


def audit_record(record: Record, options: AuditOptions | None = None) -> list[Verdict]:
    """The per-record verdicts (A4 excluded: it needs the batch)."""
    return _record_verdicts(build_context(record, options))[0]


def _record_verdicts(ctx: CheckContext) -> tuple[list[Verdict], Roofline | None]:
    """The per-record verdicts in :data:`RECORD_CHECKS` order, and A3's roofline (computed once)."""
    roof, why = a3_roofline.compute_roofline(ctx)
    verdicts = [a3_roofline.verdict(roof, why) if mod is a3_roofline else mod.check(ctx) for mod in RECORD_CHECKS]
    return verdicts, roof


def _facts(ctx: CheckContext) -> dict[str, JsonValue]:
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
        "importer": ctx.record.provenance.get("importer"),
    }


def audit_records(records: list[Record], options: AuditOptions | None = None,
                  skipped: list[SkippedRecord] | None = None) -> AuditReport:
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
    unchecked: list[str] = []
    for i, rec in enumerate(records):
        ctx = build_context(rec, options)
        unchecked.extend(not_checked(rec, ctx))
        verdicts, roof = _record_verdicts(ctx)
        a4 = by_member.get(i) or na("A4", a4_batch_curve.TITLE,
                                    f"fewer than {A4_MIN_N} rated records in group {a4_batch_curve.group_key(rec)}")
        verdicts.insert(3, a4)
        audits.append(RecordAudit(
            label=rec.label(), file=rec.provenance.get("file"), index=rec.provenance.get("index"),
            status=worst([v.status for v in verdicts]), verdicts=verdicts,
            assumptions=list(rec.provenance.get("assumptions", [])) + ctx.params.notes, facts=_facts(ctx),
            roofline=roof))
    source_findings = _lift_source_wide(audits)
    summary = []
    for code in CHECK_ORDER:
        cc = None
        for a in audits:
            v = next(v for v in a.verdicts if v.check == code)
            if cc is None:
                cc = CheckCount(check=code, title=v.title)
            if code in a.source_wide:
                cc.source_wide += 1
            elif v.status == Status.FAIL:
                cc.fail += 1
            elif v.status == Status.WARN:
                cc.warn += 1
            elif v.status == Status.PASS:
                cc.passed += 1
            else:
                cc.na += 1
        if cc is not None:
            summary.append(cc)
    top = rank_suspects(audits)
    any_fail = any(a.status == Status.FAIL for a in audits) or any(c.verdict.status == Status.FAIL for c in curves)
    exit_code = (EXIT_AUDIT_FAIL if any_fail else 2 if skipped
                 else EXIT_AUDIT_INCOMPLETE if unchecked else 0)
    opts = options or AuditOptions()
    warnings = opts.gpu.unmatched([r.hardware.gpu_name for r in records])
    return AuditReport(records=audits, curves=[c.verdict for c in curves], summary=summary, suspects=top,
                       source_findings=source_findings, skipped=skipped or [], warnings=warnings,
                       unchecked=unchecked, exit_code=exit_code)


def not_checked(record: Record, ctx: CheckContext) -> list[str]:
    """What could not be checked for ``record`` and why, in words (issue 26).

    A2 needs the GPU's TDP when the record publishes power; A3 needs its bandwidth and
    the model's parameters when it publishes a decode rate. An unknown model is named
    with the nearest names of the model-facts table.

    Returns:
        e.g. ``["r.json#0: unknown GPU 'H100 SXM6' (nearest known: H100 SXM5 80 GB …): give
        the full name, or --bandwidth (GB/s) and --tdp (W) — A2 power ÷ TDP, A3 roofline
        not checked"]``; empty when every applicable check had its facts.
    """
    out = []
    label = record.label()
    claims_rate = record.tok_s_decode is not None
    if ctx.gpu_error is not None:
        lost = ([] if not record.power_w else ["A2 power ÷ TDP"]) + (["A3 roofline"] if claims_rate else [])
        if lost:
            out.append(f"{label}: {ctx.gpu_error} — {', '.join(lost)} not checked")
    if claims_rate and ctx.params.total is None and ctx.params.active is None:
        from tokcaliper.audit.facts.models import nearest_model_names

        name = record.model.name
        near = nearest_model_names(name) if name else []
        hint = f" (nearest known: {', '.join(near)})" if near else ""
        what = f"unknown model {name!r}{hint}" if name else "the record names no model"
        out.append(f"{label}: {what}: give model.params_total or --model-file — A3 roofline not checked")
    return out


def _source_key(a: RecordAudit, rec_importer: str | None) -> str:
    from pathlib import PurePath
    name = PurePath(a.file).name if a.file else "records in memory"
    return f"{name} ({rec_importer})" if rec_importer else name


def _lift_source_wide(audits: list[RecordAudit]) -> list[SourceFinding]:
    """Lift findings that hold for every record of a source; recompute each record's status without them.

    A finding (same code and text, :meth:`~tokcaliper.model.verdict.Finding.same`)
    present in the WARN verdict of one check on every record of the source is
    source-wide. It is removed from each record's findings and summary (its text kept
    in the verdict's ``inputs["source_wide_findings"]``); a verdict left with no finding
    of its own keeps them and is marked in ``RecordAudit.source_wide``. Findings are
    compared whole, so one whose text contains ``"; "`` is lifted intact.
    """
    groups: dict[str, list[RecordAudit]] = {}
    for a in audits:
        groups.setdefault(_source_key(a, a.facts.get("importer")), []).append(a)
    found: list[SourceFinding] = []
    for src, members in groups.items():
        if len(members) < SOURCE_WIDE_MIN:
            continue
        for code in CHECK_ORDER:
            vs = [next((v for v in a.verdicts if v.check == code), None) for a in members]
            if any(v is None or v.status != Status.WARN for v in vs):
                continue
            common = [f for f in vs[0].findings if all(_holds(f, v.findings) for v in vs[1:])]
            if not common:
                continue
            for c in common:
                found.append(SourceFinding(source=src, check=code, status=Status.WARN, summary=c.text,
                                           records=len(members)))
            for a, v in zip(members, vs, strict=True):
                rest = [f for f in v.findings if not _holds(f, common)]
                v.inputs["source_wide_findings"] = [c.text for c in common]
                if rest:
                    v.set_findings(rest)
                else:
                    a.source_wide.append(code)
    for a in audits:
        if a.source_wide:
            a.status = worst([v.status for v in a.verdicts if v.check not in a.source_wide]) \
                if any(v.check not in a.source_wide for v in a.verdicts) else Status.NA
    return found


def _holds(f: Finding, among: list[Finding]) -> bool:
    """True when ``among`` has a finding saying the same as ``f``."""
    return any(f.same(g) for g in among)


def _bound_text(roof: Roofline | None) -> tuple[float | None, str | None]:
    """claim ÷ the bound A3 used, and that bound with its basis in words; (None, None) without one."""
    if roof is None:
        return None, None
    text = (f"{roof.kind} {compact(roof.effective_bound, 3)} tok/s: {compact(roof.params_read / 1e9, 3)}e9 params "
            f"[{roof.params_basis}] × {compact(roof.bytes_per_param, 3)} B per weight, "
            f"{compact(roof.bandwidth_gb_s, 4)} GB/s × {roof.parallel}")
    if roof.host_fraction is not None:
        text += f", {compact(roof.host_fraction * 100, 3)}% of the weights read from host memory"
    if roof.al_realistic:
        text += f", × AL {compact(roof.al_realistic, 3)}"
    return roof.over_bound, text


def rank_suspects(audits: list[RecordAudit]) -> list[Suspect]:
    """Records a human should look at first, ordered by fails, then by claim ÷ bound.

    A record is listed when it has a fail, or a warning from :data:`RANKED_CHECKS`
    that is not source-wide. Ties keep input order.
    """
    rows = []
    for pos, a in enumerate(audits):
        own = [v for v in a.verdicts if v.check not in a.source_wide]
        fails = [v for v in own if v.status == Status.FAIL]
        warns = [v for v in own if v.status == Status.WARN]
        if not fails and not any(v.check in RANKED_CHECKS for v in warns):
            continue
        ratio, bound = _bound_text(a.roofline)
        memory_fail = bool(a.roofline is not None and a.roofline.memory_fail)
        if memory_fail:
            ratio = ratio if ratio is not None else 0.0
        order = {c: k for k, c in enumerate(RANKED_CHECKS)}
        warns.sort(key=lambda v: order.get(v.check, 9))
        reasons = [f"{v.check}: {v.summary}" for v in fails + warns]
        key = (len(fails) > 0, memory_fail, ratio or 0.0, len(warns))
        rows.append((key, pos, Suspect(label=a.label, fails=len(fails), warns=len(warns), reasons=reasons,
                                       over_bound=ratio, bound=bound)))
    rows.sort(key=lambda r: (tuple(-x if isinstance(x, (int, float)) else x for x in r[0]), r[1]))
    out = []
    for k, (_, _, s) in enumerate(rows, 1):
        s.rank = k
        out.append(s)
    return out
