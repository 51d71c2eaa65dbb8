"""Bits per weight by quantization name, with the source of each figure (A3).

* GGUF tensor types (Q4_0, Q8_0, Q4_K, IQ4_XS, MXFP4, NVFP4, BF16 …):
  ``block bytes × 8 / block size`` from ``gguf.GGML_QUANT_SIZES``.
* llama.cpp K-quant *mixes* (Q3_K_M, Q4_K_M …) mix tensor types; their typical
  bits per weight (:data:`KQUANT_MIX_BITS`, Q4_K_M ≈ 4.85 per issue #3) are
  approximate, from llama.cpp's quantize presets for a 7–8B model.
* Non-GGUF formats (:data:`OTHER_FORMATS`): payload bits plus scale overhead,
  e.g. AWQ/GPTQ 4-bit with group size 128 carry one 16-bit scale and a 4-bit
  zero point per 128 weights: 4 + 20/128 = 4.16 bits.

Names are matched after upper-casing and dropping decorations (``UD-``, ``GGUF``,
``(native)``). A hybrid name with several known parts (``MXFP8_NVFP4_NF3``) uses
the smallest known part — a generous (high) roofline — and is marked not
confident, so A3 will warn rather than fail on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class QuantFacts:
    """Bits per weight of one quantization name.

    Attributes:
        bits: bits per weight (bytes per weight = bits / 8).
        source: where the figure comes from.
        confident: False when the name was only partly recognised (A3 then
            never fails a record on this figure alone).
        matched: the table entry used, e.g. ``"Q4_K_M"``.
    """

    bits: float
    source: str
    confident: bool
    matched: str

    @property
    def bytes_per_param(self) -> float:
        """Bytes per weight (bits / 8)."""
        return self.bits / 8


#: Typical average bits/weight of llama.cpp K-quant mixes (quantize presets,
#: approximate; Q4_K_M ≈ 4.85 per issue #3). Unsloth "XL" variants are taken as
#: the "M" mix of the same base; Q8_K_XL as Q8_0.
KQUANT_MIX_BITS: dict[str, float] = {
    "Q2_K_S": 2.96, "Q2_K_M": 3.00, "Q2_K_L": 3.00, "Q2_K_XL": 3.00,
    "Q3_K_S": 3.50, "Q3_K_M": 3.91, "Q3_K_L": 4.27, "Q3_K_XL": 3.91,
    "Q4_K_S": 4.58, "Q4_K_M": 4.85, "Q4_K_L": 4.85, "Q4_K_XL": 4.85,
    "Q5_K_S": 5.54, "Q5_K_M": 5.69, "Q5_K_L": 5.69, "Q5_K_XL": 5.69,
    "Q6_K_XL": 6.5625, "Q8_K_XL": 8.5,
}

#: Formats outside GGUF: (bits per weight, derivation/source).
OTHER_FORMATS: dict[str, tuple[float, str]] = {
    "FP32": (32.0, "IEEE float32"),
    "FP16": (16.0, "IEEE float16"),
    "FLOAT16": (16.0, "IEEE float16"),
    "BFLOAT16": (16.0, "bfloat16"),
    "FP8": (8.0, "FP8 E4M3, per-tensor/block scales negligible"),
    "MXFP8": (8.25, "OCP MX spec: 8-bit elements + one 8-bit E8M0 scale per 32 = 8 + 8/32"),
    "INT8": (8.0, "INT8 weights (W8A8/W8A16), per-channel scales negligible"),
    "W8A8": (8.0, "INT8 weights, per-channel scales negligible"),
    "W8A16": (8.0, "INT8 weights, per-channel scales negligible"),
    "AWQ": (4 + 20 / 128, "AWQ 4-bit, group 128: 4 + (16-bit scale + 4-bit zero)/128"),
    "GPTQ": (4 + 20 / 128, "GPTQ 4-bit, group 128: 4 + (16-bit scale + 4-bit zero)/128"),
    "AUTOROUND": (4 + 20 / 128, "AutoRound W4A16 (GPTQ layout), group 128: 4 + 20/128"),
    "W4A16": (4 + 20 / 128, "W4A16 group 128: 4 + (16-bit scale + 4-bit zero)/128"),
    "INT4": (4 + 16 / 128, "INT4 symmetric, group 128: 4 + 16-bit scale/128"),
    "4BIT": (4 + 32 / 64, "MLX 4-bit, group 64: 4 + (16-bit scale + 16-bit bias)/64"),
    "8BIT": (8 + 32 / 64, "MLX 8-bit, group 64: 8 + (16-bit scale + 16-bit bias)/64"),
    "NF4": (4 + 8 / 64, "bitsandbytes NF4, block 64 with 8-bit double-quantised absmax"),
}

_ALIASES = {"F16": "F16", "BF16": "BF16", "F32": "F32", "FP4": "NVFP4"}


@lru_cache(maxsize=1)
def _gguf_bits() -> dict[str, float]:
    """Bits per weight of every GGUF tensor type, from gguf.GGML_QUANT_SIZES."""
    from gguf import GGML_QUANT_SIZES

    return {t.name: size * 8 / block for t, (block, size) in GGML_QUANT_SIZES.items()}


def _gguf_source(name: str) -> str:
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    block, size = GGML_QUANT_SIZES[GGMLQuantizationType[name]]
    return f"gguf.GGML_QUANT_SIZES[{name}] = ({block}, {size}): {size} B × 8 / {block} = {size * 8 / block:g} bits"


def _single(token: str) -> QuantFacts | None:
    gg = _gguf_bits()
    t = _ALIASES.get(token, token)
    if t in KQUANT_MIX_BITS:
        return QuantFacts(KQUANT_MIX_BITS[t], f"llama.cpp K-quant mix {t} ≈ {KQUANT_MIX_BITS[t]} bits "
                          "(quantize presets, approximate)", True, t)
    if t in gg and t not in ("I8", "I16", "I32", "I64"):
        return QuantFacts(gg[t], _gguf_source(t), True, t)
    if t in OTHER_FORMATS:
        bits, why = OTHER_FORMATS[t]
        return QuantFacts(bits, why, True, t)
    return None


@lru_cache(maxsize=512)
def bits_per_weight(name: str | None) -> QuantFacts | None:
    """Bits per weight for a quantization name, or None when unrecognised.

    Args:
        name: as published: ``"Q4_K_M"``, ``"UD-Q4_K_XL"``, ``"NVFP4"``,
            ``"AWQ-4bit"``, ``"Quark W8A8 INT8"``, ``"BF16 (native)"``.

    Returns:
        :class:`QuantFacts`, or None (the caller says "unknown quantization").
    """
    if not name:
        return None
    raw = name.strip().upper()
    cleaned = re.sub(r"\(.*?\)", " ", raw).replace("GGUF", " ").strip()
    cleaned = re.sub(r"^UD[-_ ]", "", cleaned)
    hit = _single(cleaned.replace("-", "_").replace(" ", "_"))
    if hit:
        return hit
    # K-quant or GGUF prefix with a vendor suffix: Q4_K_P, Q8_0_ROCMFPX, MXFP4_MOE.
    m = re.match(r"^(I?Q\d_K_[SML]|I?Q\d_K_XL|IQ\d_[A-Z]+|Q\d_K|Q\d_\d|MXFP4|NVFP4|BF16|F16)(?:[_\-].*)?$",
                 cleaned.replace(" ", "_"))
    if m:
        base = _single(m.group(1))
        if base:
            exact = m.group(0) == m.group(1)
            note = "" if exact else f" (suffix of {name!r} not recognised; base type used)"
            confident = exact or m.group(1) in ("MXFP4", "Q8_0")
            return QuantFacts(base.bits, base.source + note, confident, base.matched)
    # Free text: find every known token, take the smallest (generous bound).
    tokens = [t for t in re.split(r"[\s_\-+/,]+", cleaned) if t]
    found: list[QuantFacts] = []
    unknown: list[str] = []
    for t in tokens:
        q = _single(t)
        if q:
            found.append(q)
        elif re.fullmatch(r"(NF\d|FP\d|INT\d|Q\d.*)", t):
            unknown.append(t)
    if len(found) > 1:  # "AWQ-4bit": the bare "4bit" (MLX) only counts when alone
        found = [q for q in found if q.matched not in ("4BIT", "8BIT")] or found
    if not found:
        return None
    best = min(found, key=lambda q: q.bits)
    spread = max(q.bits for q in found) - best.bits
    confident = spread < 0.1 and not unknown
    note = ""
    if len({q.matched for q in found}) > 1 or unknown:
        note = (f"; {name!r} names {', '.join(sorted({q.matched for q in found} | set(unknown)))}: "
                f"smallest known part used (generous bound)")
    return QuantFacts(best.bits, best.source + note, confident, best.matched)
