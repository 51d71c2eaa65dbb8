"""A7 — comparable or not: list every knob that differs before any ratio (METHODS.md A7).

Two records that differ in speculative method, context length, prefix cache,
KV-cache dtype, quantization, engine version or power limit are not
comparable; neither are ones on different models, GPUs, GPU counts/splits or
batch/concurrency. The verdict says "not comparable" first, lists the knobs,
and only then shows the ratio (marked as not a like-for-like figure). The
source once doubted a 212.7 tok/s record with a 65–74 tok/s public number four
knobs away; its like-for-like re-measurement was 185–193 (9 % off). M10: a
single cross-machine number needs ≥ 42 % difference at CV 15 %.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from tokcaliper.audit.claims import record_rate
from tokcaliper.audit.launch import parse_launch
from tokcaliper.model.record import Record
from tokcaliper.model.verdict import Finding, Status, Verdict
from tokcaliper.model.warnings import Caveat
from tokcaliper.numbers import compact, fixed


#: A knob's value as a record states it: a name, a number, a flag, or ``None`` (not given).
KnobValue = str | bool | int | float | None


class Knob(BaseModel):
    """One setting of both records.

    Attributes:
        name: the knob (``"context length"``, ``"launch flag threads"`` …).
        a, b: its value in record A and B (``None``: the record does not give it).
        differs: the values differ (after normalising case and ``-``/``_``).
        matters: a difference makes a ratio of the two records meaningless (A7).
    """

    name: str
    a: KnobValue
    b: KnobValue
    differs: bool
    matters: bool


class DiffResult(BaseModel):
    """``tokcaliper diff`` output: knobs, the verdict, then the ratio."""

    a_label: str
    b_label: str
    knobs: list[Knob]
    comparable: bool
    verdict: Verdict
    ratio_b_over_a: float | None
    warnings: list[Caveat] = []


def _norm(v: Any) -> Any:
    if isinstance(v, str):
        return v.strip().lower().replace("_", "").replace("-", "")
    return v


def knobs_of(r: Record) -> dict[str, Any]:
    """Every knob A7 compares, read from the record and its launch command."""
    k = parse_launch(r.launch_command)
    spec = r.speculative
    return {
        "model": r.model.name,
        "GPU": r.hardware.gpu_name,
        "GPU count": r.hardware.gpu_count,
        "split mode": r.hardware.split_mode,
        "speculative method": spec.method if spec else "none",
        "draft window k": spec.window_k if spec else None,
        "context length": r.context_length or k.context_length,
        "prefix cache": r.prefix_cache if r.prefix_cache is not None else k.prefix_cache,
        "KV cache dtype": r.quantization.kv_cache or ("/".join(x for x in (k.kv_cache_k, k.kv_cache_v) if x) or None),
        "quantization": r.quantization.weights,
        "engine": r.engine.name,
        "engine version": r.engine.version,
        "power limit (W)": r.hardware.power_limit_w,
        "batch": r.batch_size,
        "concurrency": r.concurrency,
        "temperature": r.temperature,
    }


#: Knobs whose difference makes a ratio meaningless (A7 plus the obvious).
MATTERS = {"model", "GPU", "GPU count", "split mode", "speculative method", "draft window k", "context length",
           "prefix cache", "KV cache dtype", "quantization", "engine", "engine version", "power limit (W)",
           "batch", "concurrency"}


#: Launch-command knobs (as ``diff --plan`` names them) already compared under a record knob.
_COVERED_BY = {"model file": "quantization", "quantization": "quantization", "draft model": "speculative method",
               "KV cache dtype": "KV cache dtype", "context length": "context length",
               "draft window": "draft window k", "split mode": "split mode"}


def launch_flag_knobs(a: Record, b: Record, known: set[str]) -> list[Knob]:
    """The launch-command knobs A and B differ in that no record knob already lists (issue 26):
    the flags ``diff --plan`` gives an arm each (``-np``, ``-t``, ``--batch-size`` …), so plain
    ``diff`` lists every knob ``--plan`` finds. Both commands needed; they count as mattering."""
    if not (a.launch_command and b.launch_command):
        return []
    from tokcaliper.audit.attribution import _knob_values, _parse_cmd, _show

    va, vb = _knob_values(_parse_cmd(a.launch_command)), _knob_values(_parse_cmd(b.launch_command))
    out = []
    for k in dict.fromkeys([*va, *vb]):
        if va.get(k) == vb.get(k) or _COVERED_BY.get(k, k) in known:
            continue
        out.append(Knob(name=f"launch flag {k}", a=_show(va.get(k)), b=_show(vb.get(k)), differs=True,
                        matters=True))
    return out


def diff_records(a: Record, b: Record) -> DiffResult:
    """Compare two records knob by knob (pure).

    A knob unknown on one side and known on the other counts as differing
    (nobody can tell they match). Both unknown → not differing, but listed.

    Returns:
        :class:`DiffResult`; ``verdict.status`` is fail ("not comparable") when a
        knob that matters differs, pass otherwise.
    """
    ka, kb = knobs_of(a), knobs_of(b)
    knobs = []
    for name in ka:
        va, vb = ka[name], kb[name]
        differs = _norm(va) != _norm(vb)
        knobs.append(Knob(name=name, a=va, b=vb, differs=differs, matters=name in MATTERS))
    knobs += launch_flag_knobs(a, b, {k.name for k in knobs})
    differing = [k for k in knobs if k.differs and k.matters]
    ra, rb = record_rate(a, "claimed"), record_rate(b, "claimed")
    ratio = rb / ra if ra and rb else None
    arith = [f"{k.name}: {k.a!r} vs {k.b!r}" for k in differing]
    if ratio is not None:
        arith.append(f"ratio B / A = {compact(rb, 4)} / {compact(ra, 4)} = {fixed(ratio)}"
                     + (" (not a like-for-like figure)" if differing else ""))
    if differing:
        status = Status.FAIL
        findings = [Finding(code="A7.not_comparable", status=status, figures={"differing": len(differing)},
                            text=f"not comparable: {len(differing)} knob(s) differ "
                                 f"({', '.join(k.name for k in differing)}); measure like for like before "
                                 "quoting a ratio")]
    else:
        status = Status.PASS
        findings = [Finding(code="A7.comparable", status=status, text="comparable: no knob that matters differs")]
        if ratio is not None:
            findings.append(Finding(code="A7.ratio", status=status, figures={"ratio_b_over_a": ratio},
                                    text=f"B/A = {fixed(ratio)} (a single cross-machine pair needs ≥ 42% at "
                                         "CV 15%, M10)"))
    v = Verdict(check="A7", title="comparable or not", status=status, findings=findings, arithmetic=arith,
                inputs={"differing": [k.name for k in differing]},
                sources=["METHODS.md A7 (knobs), M10 (42% at CV 15% for single numbers)"])
    return DiffResult(a_label=a.label(), b_label=b.label(), knobs=knobs, comparable=not differing, verdict=v,
                      ratio_b_over_a=ratio)
