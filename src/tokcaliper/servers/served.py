"""Ask a server what it serves: model file, quantization, parameters (issue 25).

llama.cpp's ``llama-server`` answers ``GET /props`` with ``model_path``,
``model_ftype`` (``"Q4_1"``) and ``total_slots``, and ``GET /v1/models`` with
``meta.n_params`` (Σ tensor elements) and ``meta.size`` (bytes of the tensors).
The GGUF header of the file (MoE experts included) is read at audit time by the
audit's own reader, where the file is readable (:mod:`tokcaliper.audit.run_roofline`).
Other servers (vLLM, SGLang) give the model id only: the model-facts table
then identifies it by name at audit time, and the quantization stays unknown
(``missing`` says so).

Never raises: a server that does not answer leaves the facts None, with the reason.
"""

from __future__ import annotations

from typing import Any

import httpx

from tokcaliper.model.served import ServedModel


def _get_json(url: str, timeout_s: float) -> tuple[Any, str | None]:
    try:
        r = httpx.get(url, timeout=timeout_s)
    except httpx.HTTPError as e:
        return None, f"{url}: {type(e).__name__}"
    if r.status_code != 200:
        return None, f"{url} answered HTTP {r.status_code}"
    try:
        return r.json(), None
    except (ValueError, RecursionError):
        return None, f"{url} did not answer JSON"


def read_served(base_url: str, model: str | None = None, timeout_s: float = 5.0) -> ServedModel:
    """What the server at ``base_url`` serves (module docstring).

    Args:
        base_url: server root. model: the model id the run requests (its
            ``/v1/models`` entry is used; the first entry when absent).
        timeout_s: per request, s.

    Returns:
        :class:`ServedModel`; each fact that could not be read is None with
        its reason in ``missing``.
    """
    root = base_url.rstrip("/")
    out = ServedModel(name=model)
    props, why_props = _get_json(root + "/props", timeout_s)
    models, why_models = _get_json(root + "/v1/models", timeout_s)
    entry: dict[str, Any] | None = None
    if isinstance(models, dict) and isinstance(models.get("data"), list):
        rows = [m for m in models["data"] if isinstance(m, dict)]
        entry = next((m for m in rows if m.get("id") == model), rows[0] if rows else None)
    if entry is not None and out.name in (None, "default") and isinstance(entry.get("id"), str):
        out.name = entry["id"]
    meta = entry.get("meta") if entry is not None and isinstance(entry.get("meta"), dict) else {}
    if isinstance(props, dict) and ("model_path" in props or "total_slots" in props):
        out.engine = "llama.cpp"
        path = props.get("model_path")
        out.path = path if isinstance(path, str) and path else None
        ftype = props.get("model_ftype") or meta.get("ftype")
        out.quantization = ftype if isinstance(ftype, str) and ftype else None
        slots = props.get("total_slots")
        out.slots = slots if isinstance(slots, int) and not isinstance(slots, bool) and slots > 0 else None
    size = meta.get("size")
    if isinstance(size, int) and not isinstance(size, bool) and size > 0:
        out.size_bytes = size
    n_params = meta.get("n_params")
    if isinstance(n_params, (int, float)) and not isinstance(n_params, bool) and n_params > 0:
        out.params_total = float(n_params)
        out.params_source = "/v1/models meta.n_params (llama.cpp: Σ tensor elements of the loaded file)"
    if out.quantization is None:
        out.missing["quantization"] = (why_props or "the server's /props gives no model_ftype "
                                       "(not llama.cpp): bytes per weight unknown")
    if out.params_total is None:
        out.missing["parameters"] = why_models or (
            "the server gives no parameter count: the model-facts table is tried by name")
    return out
