"""A4 — the curve a batch of records draws by itself (METHODS.md A4).

Records are grouped by (submitter, model, GPU, GPU count). Inside a group of
at least 3 records, the Spearman rank correlation ρ of tok/s against every knob
that varies (draft window k, context length, batch, concurrency, temperature)
is computed with :func:`tokcaliper.stats.covariates.spearman`, the one the noise
floor ranks covariates with. Its p-value is exact for n ≤ 8 — the share of all n!
orderings of the rates whose |ρ| is at least the observed one (n = 3, ρ = ±1:
p = 2/6 = 0.33, not the t-approximation's 0) — and scipy's approximation above that. When tok/s rises with the draft
window (ρ ≥ 0.9 fail, ≥ 0.7 warn) the records measure the window, not the
model (source: 512 → 4691, 256 → 4547, 56 → 2104, 24 → 1074 tok/s: ρ = 1).
Other knobs are reported for context only.

Rigor against magnitude: each record scores one point per sign of care —
temperature 0, best of N / repetitions > 1, a cool-down — read from fields and
notes. When the single most careful record is also the slowest, warn.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePath

from tokcaliper import numbers as fmt
from tokcaliper.audit.checks._common import worst
from tokcaliper.audit.claims import record_rate
from tokcaliper.audit.constants import A4_FAIL_RHO, A4_MIN_N, A4_WARN_RHO
from tokcaliper.model.record import Record
from tokcaliper.model.verdict import Finding, Status, Verdict, summary_of
from tokcaliper.numbers import compact

CHECK, TITLE = "A4", "curve drawn by the batch (rank correlation)"


@dataclass
class Curve:
    """One group's verdict and the positions of its records in the batch."""

    key: str
    members: list[int]
    verdict: Verdict
    rhos: dict[str, float] = field(default_factory=dict)


def _rho(rho: float) -> str:
    """Spearman ρ, signed, to three decimals (``+1.000``)."""
    return fmt.num(rho, 3, min_decimals=3, signed=True)


def _rate(r: Record) -> float | None:
    """The record's headline rate (:func:`~tokcaliper.audit.claims.record_rate` ``"claimed"``)."""
    return record_rate(r, "claimed")


def rigor_score(r: Record) -> tuple[int, list[str]]:
    """Signs of a careful run: temperature 0, best of N / repetitions, cool-down.

    Returns:
        ``(score, reasons)``.
    """
    text = " ".join(x for x in (r.notes, r.speculative.method if r.speculative else None) if x).lower()
    reasons = []
    if r.temperature == 0 or re.search(r"temperature\s*=?\s*0(\.0+)?\b", text):
        reasons.append("temperature 0")
    if (r.repetitions and r.repetitions > 1) or re.search(r"best\s+of\s+\d+", text):
        reasons.append("best of N")
    if re.search(r"cool[\s-]?down", text):
        reasons.append("cool-down")
    return len(reasons), reasons


def _knobs(r: Record) -> dict[str, float | None]:
    return {
        "draft window k": float(r.speculative.window_k) if r.speculative and r.speculative.window_k else None,
        "context length": r.context_length,
        "batch": r.batch_size,
        "concurrency": r.concurrency,
        "temperature": r.temperature,
    }


#: How A4's arithmetic names the two ways :func:`tokcaliper.stats.covariates.spearman` gets p.
_P_METHOD = {"exact permutation": "exact", "t approximation": "t-approx."}


def _where(r: Record, fallback: int) -> str:
    """``file.json#3`` (base name) or ``#3`` for a record in arithmetic lines."""
    idx = r.provenance.get("index", fallback)
    file = r.provenance.get("file")
    return f"{PurePath(str(file)).name}#{idx}" if file else f"#{idx}"


def group_key(r: Record) -> str:
    """``"submitter | model | N× GPU"`` (submitter omitted when unknown)."""
    parts = [r.submitter] if r.submitter else []
    parts += [r.model.name or "?", f"{r.hardware.gpu_count}× {r.hardware.gpu_name or '?'}"]
    return " | ".join(parts)


def check_batch(records: list[Record]) -> list[Curve]:
    """A4 verdicts for every group of ≥ 3 records with a rate (pure).

    Args:
        records: the batch, in input order.

    Returns:
        One :class:`Curve` per group with ≥ 3 rated records; ``members`` are
        indices into ``records``.
    """
    from tokcaliper.stats.covariates import spearman  # lazy: stats loads scipy, needed only here

    groups: dict[str, list[int]] = {}
    for i, r in enumerate(records):
        if _rate(r) is not None:
            groups.setdefault(group_key(r), []).append(i)
    curves: list[Curve] = []
    for key, idx in groups.items():
        if len(idx) < A4_MIN_N:
            continue
        rates = [_rate(records[i]) for i in idx]
        arith: list[str] = []
        statuses: list[Status] = []
        findings: list[Finding] = []
        rhos: dict[str, float] = {}
        for knob in _knobs(records[idx[0]]):
            pairs = [(_knobs(records[i])[knob], rt) for i, rt in zip(idx, rates) if _knobs(records[i])[knob] is not None]
            if len(pairs) < A4_MIN_N or len({p[0] for p in pairs}) < 2:
                continue
            xs, ys = [p[0] for p in pairs], [p[1] for p in pairs]
            rho, pval, method = spearman(xs, ys)
            if rho != rho:  # NaN: constant input
                continue
            how = _P_METHOD.get(method, method)
            rhos[knob] = rho
            order = sorted(pairs)
            arith.append(f"ρ(tok/s, {knob}) = {_rho(rho)} ({how} p = {fmt.num(pval, 2)}, n = {len(pairs)}): "
                         + ", ".join(f"{compact(x, 4)} → {compact(y, 4)}" for x, y in order))
            if knob == "draft window k":
                if rho >= A4_FAIL_RHO:
                    statuses.append(Status.FAIL)
                    findings.append(Finding(code="A4.window_curve", status=Status.FAIL, figures={"rho": rho},
                                            text=f"tok/s rises with the draft window (ρ = {_rho(rho)}): the records "
                                                 "measure the window, not the model"))
                elif rho >= A4_WARN_RHO:
                    statuses.append(Status.WARN)
                    findings.append(Finding(code="A4.window_trend", status=Status.WARN, figures={"rho": rho},
                                            text=f"tok/s tends to rise with the draft window (ρ = {_rho(rho)})"))
                else:
                    statuses.append(Status.PASS)
        scores = [(rigor_score(records[i]), i) for i in idx]
        top = max(s[0][0] for s in scores)
        best = [i for (sc, _), i in scores if sc == top]
        if top > 0 and len(best) == 1:
            slowest = min(idx, key=lambda i: _rate(records[i]))
            reasons = rigor_score(records[best[0]])[1]
            arith.append(f"most careful record: {_where(records[best[0]], best[0])} "
                         f"({', '.join(reasons)}) at {compact(_rate(records[best[0]]), 4)} tok/s; slowest in group: "
                         f"{compact(_rate(records[slowest]), 4)} tok/s")
            if slowest == best[0]:
                statuses.append(Status.WARN)
                findings.append(Finding(code="A4.rigor_slowest", status=Status.WARN,
                                        text="the most carefully run record is the slowest (rigor against magnitude)"))
        if not statuses:
            statuses.append(Status.PASS)
        if not findings:
            findings.append(Finding(code="A4.no_curve", status=Status.PASS,
                                    text="no knob draws the curve by itself"
                                         + (f" (ρ shown for {', '.join(rhos)})" if rhos else "")))
        v = Verdict(check=CHECK, title=TITLE, status=worst(statuses), findings=findings,
                    summary=f"group {key}: " + summary_of(findings),
                    arithmetic=arith, inputs={"group": key, "n": len(idx), "rho": rhos,
                                              "tok_s": rates},
                    sources=["scipy.stats.spearmanr", "METHODS.md A4 (fail ρ ≥ 0.9, warn ρ ≥ 0.7 on the draft window)"])
        curves.append(Curve(key, idx, v, rhos))
    return curves
