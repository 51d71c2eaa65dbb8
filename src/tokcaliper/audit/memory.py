"""Memory fit: do the weights (and the KV cache) fit the GPUs the record names? (METHODS.md A3)

Pure arithmetic over a record, its launch knobs and its model facts:

* weights = total parameters × bytes per weight (GB = 1e9 bytes);
* KV cache = 2 × KV layers × KV heads × head dim × bytes per element × context
  (model-facts row; only where the row has those figures: not for MLA or
  hybrid attention), with the KV dtype from the record/launch (f16 when unsaid);
* GPU memory = the larger of the record's ``memory_gb`` and the spec sheet's
  memory × GPU count — the generous reading, since leaderboards mix per-GPU
  and total figures;
* placement: *all layers on the GPU* when llama.cpp is asked for ``-ngl`` ≥
  the model's layers (or ≥ 99, or ``all``) with no ``-ot …=CPU`` /
  ``--n-cpu-moe`` / ``--cpu-moe``, or for vLLM/SGLang without
  ``--cpu-offload-gb`` (their default keeps every weight on the GPU);
  *partial offload* when ``-ngl N`` is below the layer count (host fraction
  (L − N) / L) or an offload flag is given (host fraction at least
  1 − memory / weights, the least that cannot fit).

A record asking for every layer on the GPU whose weights exceed its GPU memory
by more than :data:`FIT_TOLERANCE` contradicts itself. With partial offload a
token reads the host part at host bandwidth: time per token = GPU bytes ÷
GPU bandwidth + host bytes ÷ host bandwidth
(:data:`tokcaliper.audit.constants.DEFAULT_HOST_BANDWIDTH_GB_S` unless ``--host-bandwidth``
says otherwise).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tokcaliper.model.record import Record
from tokcaliper.numbers import num, percent

#: Weights above GPU memory × (1 + this) cannot fit (bits per weight are approximate).
FIT_TOLERANCE = 0.05

#: Bytes per KV-cache element by dtype name (llama.cpp block sizes: q8_0 34 B / 32, q4_0 18 B / 32).
KV_BYTES = {"f32": 4.0, "f16": 2.0, "bf16": 2.0, "fp16": 2.0, "auto": 2.0, "q8_0": 34 / 32, "fp8": 1.0,
            "fp8_e4m3": 1.0, "fp8_e5m2": 1.0, "q5_1": 24 / 32, "q5_0": 22 / 32, "q4_1": 20 / 32, "q4_0": 18 / 32,
            "iq4_nl": 18 / 32}

_LLAMA_ALL = 99


@dataclass
class Placement:
    """Where the weights live, from the launch command.

    Attributes:
        all_on_gpu: True when the command asks for every layer on the GPU,
            False for partial offload, None when it does not say.
        host_fraction: fraction of the weights read from host memory (0 when all on GPU), or None.
        exact: True when host_fraction comes from ``-ngl N`` of L layers; False when it is a lower bound.
        why: the flag(s) that decided it.
    """

    all_on_gpu: bool | None
    host_fraction: float | None
    exact: bool
    why: str


@dataclass
class MemoryFit:
    """The memory arithmetic for one record (GB = 1e9 bytes)."""

    weights_gb: float
    kv_gb: float | None
    memory_gb: float
    placement: Placement
    arithmetic: list[str] = field(default_factory=list)

    @property
    def weights_fit(self) -> bool:
        """Weights ≤ memory × (1 + tolerance)."""
        return self.weights_gb <= self.memory_gb * (1 + FIT_TOLERANCE)

    @property
    def all_fit(self) -> bool | None:
        """Weights + KV ≤ memory × (1 + tolerance); None when the KV size is unknown."""
        if self.kv_gb is None:
            return None
        return self.weights_gb + self.kv_gb <= self.memory_gb * (1 + FIT_TOLERANCE)

    @property
    def contradiction(self) -> bool:
        """All layers asked on the GPU, yet the weights cannot fit."""
        return self.placement.all_on_gpu is True and not self.weights_fit


def _engine(record: Record, cmd: str) -> str:
    name = (record.engine.name or "").lower()
    if "vllm" in name or re.search(r"\bvllm\b", cmd):
        return "vllm"
    if "sglang" in name or "sglang" in cmd:
        return "sglang"
    if "llama" in name or "llama-server" in cmd or "llama-cli" in cmd:
        return "llama.cpp"
    return name


def placement(record: Record, knobs, layers: int | None, weights_gb: float, memory_gb: float) -> Placement:
    """Decide the weights' placement from the launch knobs (see the module docstring).

    Args:
        record: the record (engine name, launch command).
        knobs: :class:`~tokcaliper.audit.launch.LaunchKnobs` of its command.
        layers: the model's layer count, or None.
        weights_gb, memory_gb: for the least host fraction when offload is partial.
    """
    cmd = record.launch_command or ""
    least = max(0.0, 1.0 - memory_gb / weights_gb) if weights_gb > 0 else 0.0
    engine = _engine(record, cmd)
    ngl = knobs.gpu_layers
    if knobs.offload:
        return Placement(False, least, False, f"{knobs.offload}: host part at least 1 − memory / weights")
    if engine == "llama.cpp" and ngl is not None:
        n = None
        try:
            n = int(ngl)
        except ValueError:
            if ngl.strip().lower() == "all":
                return Placement(True, 0.0, True, f"-ngl {ngl}: every layer on the GPU")
            return Placement(None, None, False, f"-ngl {ngl}: placement not stated")
        if n >= _LLAMA_ALL or (layers is not None and n >= layers):
            return Placement(True, 0.0, True, f"-ngl {ngl}: every layer on the GPU")
        if layers is not None:
            f = (layers - max(n, 0)) / layers
            return Placement(False, f, True, f"-ngl {n} of {layers} layers: {layers - n} layers in host memory")
        return Placement(False, least, False, f"-ngl {n} with the layer count unknown: host part at least "
                                               "1 − memory / weights")
    if engine in ("vllm", "sglang") and cmd:
        return Placement(True, 0.0, True, f"{engine} without --cpu-offload-gb keeps every weight on the GPU")
    return Placement(None, None, False, "the launch command does not say where the weights live")


def kv_bytes_per_element(record: Record, knobs) -> tuple[float, str]:
    """KV-cache bytes per element and the dtype it came from (f16 when unsaid)."""
    for name in (record.quantization.kv_cache, knobs.kv_cache_k):
        if name and name.lower() in KV_BYTES:
            return KV_BYTES[name.lower()], name.lower()
    return 2.0, "f16 (not stated; the engines' default)"


def memory_fit(record: Record, knobs, row, total_params: float, bytes_per_param: float,
               gpu_memory_gb: float | None, gpu_count: int) -> MemoryFit | None:
    """The memory arithmetic, or None when no GPU memory is known.

    Args:
        record: the record. knobs: its launch knobs. row: its model-facts row or None.
        total_params: parameters (count). bytes_per_param: bytes per weight.
        gpu_memory_gb: spec-sheet memory per GPU (GB) or None. gpu_count: GPUs.
    """
    mem_candidates = [m for m in (record.hardware.memory_gb, (gpu_memory_gb or 0) * gpu_count) if m]
    if not mem_candidates:
        return None
    mem = max(mem_candidates)
    weights_gb = total_params * bytes_per_param / 1e9
    arith = [f"weights = {num(total_params / 1e9, 4, trim=True)}e9 params × {num(bytes_per_param, 3, trim=True)} B = "
             f"{num(weights_gb, 3, trim=True)} GB; "
             f"GPU memory = {num(mem, 4, trim=True)} GB (larger of "
             + ("the record's: not given" if record.hardware.memory_gb is None
                else f"the record's {num(record.hardware.memory_gb, 4, trim=True)} GB")
             + " and " + ("the spec sheet's: unknown" if gpu_memory_gb is None
                          else f"{gpu_count} × {num(gpu_memory_gb, 4, trim=True)} GB spec") + ")"]
    kv_gb = None
    ctx_len = record.context_length or knobs.context_length
    if row is not None and ctx_len:
        per_el, dtype = kv_bytes_per_element(record, knobs)
        per_tok = row.kv_bytes_per_token(per_el)
        if per_tok is not None:
            kv_gb = per_tok * ctx_len / 1e9
            layers = row.kv_layers or row.layers
            arith.append(f"KV cache = 2 × {layers} layers × {row.kv_heads} KV heads × {row.head_dim} × "
                         f"{num(per_el, 3, trim=True)} B ({dtype}) × {ctx_len} tokens = {num(kv_gb, 3, trim=True)} GB")
    pl = placement(record, knobs, row.layers if row is not None else None, weights_gb, mem)
    arith.append(f"placement: {pl.why}")
    fit = MemoryFit(weights_gb, kv_gb, mem, pl, arith)
    need = weights_gb + (kv_gb or 0)
    verdict = "fit" if need <= mem * (1 + FIT_TOLERANCE) else "do not fit"
    arith.append(f"weights{' + KV' if kv_gb is not None else ''} = {num(need, 3, trim=True)} GB vs "
                 f"{num(mem, 4, trim=True)} GB GPU memory: {verdict} (tolerance {percent(FIT_TOLERANCE, decimals=0)})")
    return fit


def offload_roofline(weight_gb: float, gpu_bw_gb_s: float, host_fraction: float, host_bw_gb_s: float) -> float:
    """tok/s when ``host_fraction`` of the bytes per token come from host memory.

    time per token = (1 − f) × bytes / GPU bandwidth + f × bytes / host bandwidth
    (layers are read in turn, so the two times add). ``weight_gb`` is GB read per token.
    """
    t = (1 - host_fraction) * weight_gb / gpu_bw_gb_s + host_fraction * weight_gb / host_bw_gb_s
    return 1.0 / t
