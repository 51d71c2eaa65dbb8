"""A llama-server ``/v1/chat/completions`` response (non-streaming) with ``timings``.

Reads ``timings`` (``prompt_n``, ``predicted_n``, ``predicted_ms``,
``predicted_per_second``, ``prompt_ms``, and with speculation ``draft_n`` /
``draft_n_accepted``). The draft window k and method come from the server's
launch arguments when known (``--spec-draft-n-max``/``--draft-max``,
``--spec-type``, ``-md``). TTFT is taken as ``prompt_ms`` (prompt processing
time; assumption recorded).
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from tokcaliper.audit.importers.base import FieldError, RecordBuilder, show
from tokcaliper.audit.launch import parse_launch
from tokcaliper.model.record import Record


class LlamaServerImporter:
    """A saved llama-server chat-completion response (launch arguments unknown)."""

    name = "llama_server"

    def detect(self, row: Any) -> bool:
        """True for an object with ``timings`` and ``choices`` or ``content``."""
        return isinstance(row, dict) and "timings" in row and ("choices" in row or "content" in row)

    def to_record(self, row: dict[str, Any], *, filename: str | None = None) -> Record:
        """See :func:`record_from_llama_server_response` (without launch arguments)."""
        return record_from_llama_server_response(row, None)


def record_from_llama_server_response(resp: dict[str, Any], launch_args: list[str] | None, *,
                                      request: dict[str, Any] | None = None,
                                      gpu_name: str | None = None, gpu_count: int = 1,
                                      engine_version: str | None = None) -> Record:
    """A record from one non-streaming llama-server ``/v1/chat/completions`` response.

    Args:
        resp: parsed JSON response.
        launch_args: argv the server was started with (None when unknown).
        request: the request body (for temperature).
        gpu_name, gpu_count: hardware, when known (None: CPU / unknown).
        engine_version: from ``/props`` ``build_info``, when known.

    Raises:
        FieldError: no ``timings`` object, or a bad field (``output_tokens (from timings.predicted_n)``).
    """
    t = resp.get("timings")
    if not isinstance(t, dict):
        raise FieldError("timings", f"expected an object with fields, got {show(t)}")
    k = parse_launch(launch_args) if launch_args else None
    b = RecordBuilder()
    if "draft_n" in t or (k and k.spec_method):
        b.put("speculative.method", (k.spec_method if k else None) or "draft")
        b.put("speculative.window_k", k.draft_max if k else None, "launch_command")
        b.put("speculative.draft_model", k.draft_model if k else None, "launch_command")
        b.take(resp, "speculative.drafted", "timings.draft_n")
        b.take(resp, "speculative.accepted", "timings.draft_n_accepted")
    if launch_args and "-m" in launch_args and launch_args.index("-m") + 1 < len(launch_args):
        b.put("model.name", os.path.basename(launch_args[launch_args.index("-m") + 1]), "launch_command")
    else:
        b.take(resp, "model.name", "model")
    b.take(resp, "id", "id")
    b.put("hardware.gpu_name", gpu_name)
    b.put("hardware.gpu_count", gpu_count)
    b.put("engine.name", "llama.cpp")
    b.put("engine.version", engine_version)
    b.put("launch_command", shlex.join(launch_args) if launch_args else None)
    b.put("batch_size", 1)
    b.put("concurrency", 1)
    b.put("context_length", k.context_length if k else None, "launch_command")
    b.take(resp, "prompt_tokens", "timings.prompt_n")
    b.take(resp, "output_tokens", "timings.predicted_n")
    pms = t.get("predicted_ms")
    if pms:
        if isinstance(pms, bool) or not isinstance(pms, (int, float)):
            raise FieldError("timings.predicted_ms", f"expected a number, got {show(pms)}")
        b.put("seconds", pms / 1000, "timings.predicted_ms")
    if t.get("predicted_per_second"):
        b.take(resp, "tok_s_decode", "timings.predicted_per_second")
    b.take(resp, "ttft_ms", "timings.prompt_ms")
    b.put("temperature", (request or {}).get("temperature"), "request.temperature")
    b.assumptions += ["TTFT taken as timings.prompt_ms",
                      "drafted/accepted from timings.draft_n / draft_n_accepted"]
    rec = b.build()
    rec.provenance = {"importer": "llama_server", **rec.provenance}
    return rec
