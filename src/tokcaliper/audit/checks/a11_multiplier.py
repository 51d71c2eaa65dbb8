"""A11 — the method's plausible multiplier, reported apart from the claimed one (METHODS.md A11).

* plausible: real lossless speculative decoding is documented at 2.7–4.6×
  (METHODS.md A11; DFlash 3.43× on GSM8K at AL 5.46), and can never exceed
  the realistic AL (each verification step costs at least one target forward
  pass): ceiling = min(k + 1, claimed AL, 5.46) (``audit.claims.realistic_al``).
* claimed: the record's ``claimed_speedup``; else claim ÷ baseline when a
  baseline is stored; else a *lower bound*: claim ÷ roofline without
  speculation (the plain rate cannot beat the roofline, A3).

Verdict: claimed > ceiling fail; claimed > 4.6 warn; else pass.
"""

from __future__ import annotations

from tokcaliper.audit.checks._common import CheckContext, na
from tokcaliper.audit.checks.a3_roofline import compute_roofline
from tokcaliper.audit.claims import realistic_al, record_rate
from tokcaliper.audit.constants import DFLASH_SPEEDUP_GSM8K, REALISTIC_AL, SPEC_SPEEDUP_RANGE
from tokcaliper.model.verdict import Finding, Status, Verdict
from tokcaliper.numbers import compact

CHECK, TITLE = "A11", "mechanism vs multiplier"


def check(ctx: CheckContext) -> Verdict:
    """A11 verdict: n/a without speculative decoding or without any way to get the claimed multiplier."""
    rec = ctx.record
    spec = rec.speculative
    if spec is None:
        return na(CHECK, TITLE, "no speculative decoding in this record")
    lo, hi = SPEC_SPEEDUP_RANGE
    ral = realistic_al(spec)
    ceiling = ral.al
    arith = [f"plausible multiplier: {lo}–{hi}× documented; ceiling = {ral.arithmetic}×"]
    claim = record_rate(rec, "per_stream")
    claimed: float | None = None
    kind = ""
    if spec.claimed_speedup:
        claimed, kind = spec.claimed_speedup, "as published"
        arith.append(f"claimed multiplier (published) = {compact(claimed, 3)}×")
    if rec.baseline and claim:
        m = claim / rec.baseline.tok_s
        arith.append(f"claimed multiplier = claim / baseline = {compact(claim, 5)} / {compact(rec.baseline.tok_s, 4)} "
                     f"= {compact(m, 3)}×")
        if claimed is None:
            claimed, kind = m, "claim ÷ baseline"
    roof, _ = compute_roofline(ctx)
    if roof is not None and claim:
        lb = claim / roof.bound_tok_s
        arith.append(f"lower bound = claim / roofline without speculation = {compact(claim, 5)} / "
                     f"{compact(roof.bound_tok_s, 4)} = {compact(lb, 3)}×")
        if claimed is None:
            claimed, kind = lb, "at least (claim ÷ roofline)"
    inputs = {"plausible_range": [lo, hi], "ceiling": ceiling, "claimed_multiplier": claimed, "basis": kind}
    if claimed is None:
        return na(CHECK, TITLE, "no baseline, published multiplier or roofline to derive the claimed multiplier",
                  inputs)
    if claimed > ceiling:
        status, code = Status.FAIL, "above_ceiling"
        text = (f"method plausibly gives {lo}–{hi}× (≤ {compact(ceiling, 3)}×); the record is credited with "
                f"{compact(claimed, 3)}× ({kind})")
    elif claimed > hi:
        status, code = Status.WARN, "above_documented"
        text = f"claimed {compact(claimed, 3)}× ({kind}) is above the documented {lo}–{hi}×"
    else:
        status, code = Status.PASS, "plausible"
        text = f"claimed {compact(claimed, 3)}× ({kind}) is within what the method plausibly gives ({lo}–{hi}×)"
    finding = Finding(code=f"{CHECK}.{code}", status=status, text=text,
                      figures={"claimed_multiplier": claimed, "ceiling": ceiling})
    return Verdict(check=CHECK, title=TITLE, status=status, findings=[finding], arithmetic=arith, inputs=inputs,
                   sources=[f"METHODS.md A11: 2.7–4.6× documented; DFlash {DFLASH_SPEEDUP_GSM8K}× at AL {REALISTIC_AL:g} (GSM8K)"])
