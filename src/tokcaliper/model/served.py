"""What a server said it serves: the model, its file, quantization and parameters (issue 25).

Pure data, filled by :func:`tokcaliper.servers.served.read_served` before each
run and stored with the run, so that a later read can bound the run by its
roofline (:mod:`tokcaliper.audit.run_roofline`) without the server or the file.
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class ServedModel(BaseModel):
    """The model a run was served by, each figure with its source.

    Attributes:
        engine: ``"llama.cpp"`` when ``/props`` answered as llama-server does, else None.
        name: the model id requested (``/v1/models``).
        path: the model file the server loaded (llama.cpp ``/props`` ``model_path``).
        quantization: the weights' format (llama.cpp ``model_ftype``, e.g. ``"Q4_1"``).
        params_total / params_active: parameters (count); active only for MoE.
        is_moe: True / False / None (unknown).
        params_source: where the counts came from (the GGUF header, or ``/v1/models`` ``meta.n_params``).
        size_bytes: bytes of the model's tensors (llama.cpp ``/v1/models`` ``meta.size``).
        slots: parallel decode slots (llama.cpp ``/props`` ``total_slots``), the most
            streams one batch step serves.
        missing: fact → why it is not known.
    """

    engine: str | None = None
    name: str | None = None
    path: str | None = None
    quantization: str | None = None
    params_total: float | None = None
    params_active: float | None = None
    is_moe: bool | None = None
    params_source: str | None = None
    size_bytes: int | None = None
    slots: int | None = None
    missing: dict[str, str] = Field(default_factory=dict)
