"""One published benchmark result (a *record*), validated (METHODS.md Part A).

A :class:`Record` is what every importer produces and every audit check reads.
All fields are optional except the structure itself: published numbers leave
things out, and the checks say "not applicable" or "warn" instead of guessing.

Units are in the field names: ``*_tok_s`` tokens per second, ``*_ms``
milliseconds, ``*_w`` watts, ``seconds`` seconds, ``params_*`` parameter
counts (not billions), ``memory_gb`` GB (1e9 bytes). Numbers must be finite;
rates must be > 0; counts must be ≥ 0. A record that breaks these is rejected
by pydantic with the path of the bad field (e.g. ``tok_s_decode``).

Number fields take numbers, and numeric text (CSV cells are text), but never
booleans: ``"tok_s_decode": true`` is an error, not 1 tok/s (:data:`Num`,
:data:`Int`). Rates are not capped: an absurd rate (1e308 tok/s) is a valid
*record* whose claim the checks then fail with the arithmetic (printed in
scientific notation, ``checks._common.num``) — rejecting it here would hide
the reason.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

_CFG = ConfigDict(extra="forbid", allow_inf_nan=False, str_strip_whitespace=False)


def _no_bool(v: Any) -> Any:
    """Reject JSON ``true``/``false`` where a number is expected (pydantic would read 1/0)."""
    if isinstance(v, bool):
        raise ValueError(f"expected a number, got {str(v).lower()}")
    return v


#: A float field that refuses booleans (numbers and numeric text are accepted).
Num = Annotated[float, BeforeValidator(_no_bool)]
#: An int field that refuses booleans.
Int = Annotated[int, BeforeValidator(_no_bool)]

SplitMode = Literal["none", "layer", "row", "tensor", "pipeline", "expert"]


class ModelInfo(BaseModel):
    """The model a record ran.

    Attributes:
        name: model name or Hugging Face id, e.g. ``"Qwen/Qwen3.6-35B-A3B"``.
        params_total: total parameters (count, e.g. ``27.8e9``).
        params_active: parameters read per token for a mixture-of-experts model.
        is_moe: True for mixture-of-experts, False for dense, None when unknown.
    """

    model_config = _CFG
    name: str | None = None
    params_total: Num | None = Field(default=None, gt=0)
    params_active: Num | None = Field(default=None, gt=0)
    is_moe: bool | None = None


class HardwareInfo(BaseModel):
    """Where a record ran.

    Attributes:
        gpu_name: accelerator name as published, e.g. ``"RTX 5090"``.
        gpu_count: number of accelerators (≥ 1).
        split_mode: how weights are split over several GPUs: ``layer``/``pipeline``
            (one stream visits GPUs in turn: no added bandwidth), ``row``/``tensor``
            (GPUs read their shares in parallel), ``none`` (one GPU).
        memory_gb: total accelerator memory over all GPUs, GB.
        power_limit_w: power cap per GPU in watts, when set.
        device_kind: ``"cpu"`` when the model ran on the host CPU (``gpu_name``
            then names the CPU; no GPU table is consulted), ``"gpu"`` or None.
        bandwidth_measured_gb_s: memory bandwidth measured on the machine, GB/s
            per device (tokcaliper's probe); A3 prefers it to the spec sheet
            unless ``--achievable-bandwidth`` is given.
        bandwidth_measured_source: how it was measured.
    """

    model_config = _CFG
    gpu_name: str | None = None
    gpu_count: Int = Field(default=1, ge=1)
    split_mode: SplitMode | None = None
    memory_gb: Num | None = Field(default=None, gt=0)
    power_limit_w: Num | None = Field(default=None, gt=0)
    device_kind: Literal["cpu", "gpu"] | None = None
    bandwidth_measured_gb_s: Num | None = Field(default=None, gt=0)
    bandwidth_measured_source: str | None = None


class EngineInfo(BaseModel):
    """Inference engine and its version string exactly as published."""

    model_config = _CFG
    name: str | None = None
    version: str | None = None


class QuantInfo(BaseModel):
    """Quantization of weights and KV cache.

    Attributes:
        weights: format name as published (``"Q4_K_M"``, ``"NVFP4"``, ``"AWQ"``…).
        kv_cache: KV-cache dtype (``"f16"``, ``"q8_0"``, ``"fp8"``…).
        bytes_per_param: bytes per weight when the publication states it; it
            overrides the quantization table (audit/facts/quant.py).
    """

    model_config = _CFG
    weights: str | None = None
    kv_cache: str | None = None
    bytes_per_param: Num | None = Field(default=None, gt=0, le=8)


class SpeculativeInfo(BaseModel):
    """Speculative-decoding settings and counters (METHODS.md A1, M6, M7).

    Attributes:
        method: e.g. ``"DFlash"``, ``"MTP"``, ``"draft-simple"``, ``"ngram"``.
        window_k: draft window k (num_draft_tokens / draft-max), ≥ 1.
        block_size: method block size, when it has one.
        drafted: drafted tokens counted by the server.
        accepted: accepted drafted tokens counted by the server.
        al: mean acceptance length (tokens per verification step) as published.
        al_min, al_max: a published range instead of a single AL.
        draft_model: draft model name or path, when one is used.
        claimed_speedup: the multiplier the publication credits to the method.
    """

    model_config = _CFG
    method: str | None = None
    window_k: Int | None = Field(default=None, ge=1)
    block_size: Int | None = Field(default=None, ge=1)
    drafted: Int | None = Field(default=None, ge=0)
    accepted: Int | None = Field(default=None, ge=0)
    al: Num | None = Field(default=None, gt=0)
    al_min: Num | None = Field(default=None, gt=0)
    al_max: Num | None = Field(default=None, gt=0)
    draft_model: str | None = None
    claimed_speedup: Num | None = Field(default=None, gt=0)


class Baseline(BaseModel):
    """A stored reference rate used as a denominator, with its conditions (A10).

    Attributes:
        tok_s: the reference per-stream decode rate, tok/s.
        description: what the reference is (``"same card, no speculation"``).
        power_cap_w: power cap in force when it was measured (W).
        warmed_up: whether the GPU was warmed up first.
        n_runs: repetitions behind the number.
        measured_at: ISO date of the measurement.
        source: where the number comes from.
    """

    model_config = _CFG
    tok_s: Num = Field(gt=0)
    description: str | None = None
    power_cap_w: Num | None = Field(default=None, gt=0)
    warmed_up: bool | None = None
    n_runs: Int | None = Field(default=None, ge=1)
    measured_at: str | None = None
    source: str | None = None


class Record(BaseModel):
    """One published benchmark result.

    Rates: ``tok_s_decode`` is the per-stream decode rate (what a batch-1
    leaderboard reports); ``tok_s_aggregate`` the aggregate output throughput
    over all streams; ``tok_s_prefill`` the prompt-processing rate.
    ``environment`` is the server's environment as published (``NAME=value``
    lines), when it is given apart from the launch command.
    ``requests`` is how many requests ``output_tokens`` and ``seconds`` add up
    over (a vllm bench run: ``completed``); None when unknown.
    ``power_w`` lists power readings in watts, one per GPU (or samples of one).
    ``provenance`` is filled by importers: importer name, file, index, the
    assumptions made while mapping fields (shown with the verdicts) and
    ``source_fields``, the source's own field for each value (record path →
    source path, e.g. ``{"tok_s_decode": "observedTokS"}``).

    Raises:
        pydantic.ValidationError: on a negative/zero rate, a negative count,
            NaN/inf, an unknown field, or accepted > drafted counts being
            negative; the error's ``loc`` names the field.
    """

    model_config = _CFG
    id: str | None = None
    submitter: str | None = None
    date: str | None = None
    model: ModelInfo = Field(default_factory=ModelInfo)
    hardware: HardwareInfo = Field(default_factory=HardwareInfo)
    engine: EngineInfo = Field(default_factory=EngineInfo)
    quantization: QuantInfo = Field(default_factory=QuantInfo)
    launch_command: str | None = None
    environment: str | None = None
    batch_size: Int | None = Field(default=None, ge=1)
    concurrency: Int | None = Field(default=None, ge=1)
    context_length: Int | None = Field(default=None, ge=1)
    prefix_cache: bool | None = None
    prompt_tokens: Int | None = Field(default=None, ge=0)
    output_tokens: Int | None = Field(default=None, ge=0)
    requests: Int | None = Field(default=None, ge=1)
    seconds: Num | None = Field(default=None, gt=0)
    tok_s_decode: Num | None = Field(default=None, gt=0)
    tok_s_aggregate: Num | None = Field(default=None, gt=0)
    tok_s_prefill: Num | None = Field(default=None, gt=0)
    ttft_ms: Num | None = Field(default=None, ge=0)
    power_w: list[Num] = Field(default_factory=list)
    temperature: Num | None = Field(default=None, ge=0)
    repetitions: Int | None = Field(default=None, ge=1)
    notes: str | None = None
    source_url: str | None = None
    speculative: SpeculativeInfo | None = None
    baseline: Baseline | None = None
    provenance: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _power_non_negative(self) -> Record:
        for i, w in enumerate(self.power_w):
            if w < 0:
                raise ValueError(f"power_w[{i}] is negative ({w} W)")
        return self

    def label(self) -> str:
        """Short human label: ``"runs.json#3 Qwen3.6-27B on 1× RTX 5090"``.

        The file's base name comes first when the record came from a file, so
        records from several files (each ``#0``) stay distinguishable.
        """
        idx = self.provenance.get("index")
        file = self.provenance.get("file")
        name = PurePath(str(file)).name if file else ""
        head = f"{name}#{idx} " if idx is not None else (f"{name} " if name else "")
        model = self.model.name or "unknown model"
        hw = self.hardware.gpu_name or "unknown hardware"
        return f"{head}{model} on {self.hardware.gpu_count}× {hw}"
