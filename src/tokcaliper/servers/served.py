"""Ask a server what it serves: model file, quantization, parameters (issue 25).

llama.cpp's ``llama-server`` answers ``GET /props`` with ``model_path``,
``model_ftype`` (``"Q4_1"``) and ``total_slots``, and ``GET /v1/models`` with
``meta.n_params`` and ``meta.size`` (bytes of the tensors). When the model file
is readable here its GGUF header gives exact counts, MoE experts included
(:func:`tokcaliper.audit.importers.read_model_file`, the audit's own reader).
Other servers (vLLM, SGLang) give the model id only: the model-facts table
then identifies it by name at audit time, and the quantization stays unknown
(``missing`` says so).

Never raises: a server that does not answer leaves the facts None, with the reason.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import httpx

from tokcaliper.errors import TokcaliperError
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


@lru_cache(maxsize=16)
def _gguf_params(path: str, size: int, mtime_ns: int) -> tuple[float | None, float | None, bool | None, str]:
    """Parameter counts from the GGUF header of ``path`` (cached by size and mtime)."""
    from tokcaliper.audit.importers.model_files import read_model_file

    pf = read_model_file(Path(path))
    return pf.total, pf.active, pf.is_moe, pf.total_source


def model_file_facts(path: str) -> tuple[float | None, float | None, bool | None, str | None, str | None]:
    """``(total, active, is_moe, source, why not)`` from a local GGUF file; why not when unreadable."""
    if not path.lower().endswith(".gguf"):
        return None, None, None, None, f"{path} is not a GGUF file"
    try:
        st = os.stat(path)
    except OSError as e:
        return None, None, None, None, f"model file {path} not readable here ({e.strerror})"
    try:
        total, active, moe, src = _gguf_params(path, st.st_size, st.st_mtime_ns)
    except TokcaliperError as e:
        return None, None, None, None, str(e)
    return total, active, moe, src, None


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
    why_file = None
    if out.path:
        total, active, moe, src, why_file = model_file_facts(out.path)
        if total:
            out.params_total, out.params_active, out.is_moe, out.params_source = total, active, moe, src
    n_params = meta.get("n_params")
    if out.params_total is None and isinstance(n_params, (int, float)) and not isinstance(n_params, bool) \
            and n_params > 0:
        out.params_total = float(n_params)
        out.params_source = f"{root}/v1/models meta.n_params" + (f" ({why_file})" if why_file else "")
    if out.quantization is None:
        out.missing["quantization"] = (why_props or "the server's /props gives no model_ftype "
                                       "(not llama.cpp): bytes per weight unknown")
    if out.params_total is None:
        out.missing["parameters"] = why_file or why_models or (
            "the server gives no parameter count: the model-facts table is tried by name")
    return out
