"""llama.cpp ``llama-server`` (started with ``--metrics``): counters and per-response ``timings``.

Counters (``/metrics``, Prometheus text): ``llamacpp:spec_decode_num_drafts_total``,
``…num_draft_tokens_total``, ``…num_accepted_tokens_total`` and
``…num_accepted_tokens_per_pos_total{position="i"}`` (llama.cpp
``tools/server/server-task.cpp``). Per response, the final chunk's ``timings``
object carries ``draft_n`` and ``draft_n_accepted`` when a draft was made and
``cache_n``, the prompt tokens taken from the slot's cache
(``tools/server/server-common.cpp``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tokcaliper.model.families._base import ResponseField, ServerFamily, spec_decode_totals
from tokcaliper.model.specdec import RequestAcceptance, SpecCounts, request_acceptance

PREFIX = "llamacpp:"


def counts_from_counters(counters: Mapping[str, float]) -> SpecCounts | None:
    """Speculative counts from llama-server counters (None when it exposes none)."""
    return spec_decode_totals(counters, PREFIX, "llamacpp /metrics")


def request_from_timings(timings: Mapping[str, Any], output_tokens: int) -> RequestAcceptance | None:
    """One response's acceptance from ``timings.draft_n`` / ``timings.draft_n_accepted``.

    Args:
        timings: the ``timings`` entries of the final response/chunk.
        output_tokens: generated tokens, used when ``timings.predicted_n`` is absent
            (the server's own count, from the same slot as the draft counts, comes first).

    Returns:
        None when the response carries no draft counts (no speculation, or
        nothing drafted). AL = output tokens / (output tokens − accepted).
    """
    if "draft_n" not in timings or "draft_n_accepted" not in timings:
        return None
    n = int(timings.get("predicted_n") or output_tokens)
    return request_acceptance(n, draft_tokens=int(timings["draft_n"]), accepted=int(timings["draft_n_accepted"]))


FAMILY = ServerFamily(
    name="llamacpp", label="llama.cpp llama-server",
    source="llama.cpp tools/server/server-task.cpp (counters), tools/server/server-common.cpp (timings)",
    prefixes=(PREFIX,), counts=counts_from_counters, request=request_from_timings,
    response_fields=(ResponseField("timings"),), cached_tokens_key="cache_n",
)
