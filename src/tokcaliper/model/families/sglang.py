"""SGLang: acceptance gauges on ``/metrics`` and per-request ``meta_info``.

Gauges ``sglang:spec_accept_length`` / ``sglang:spec_accept_rate`` and the
prefix cache's ``sglang:cache_hit_rate`` (SGLang
``python/sglang/srt/metrics/collector.py``) are *not* window-scoped: they are the
server's own running values (server-wide, and under data parallelism one per
worker), so a run's acceptance cannot be differenced from them; they are
reported beside it, flagged.

Per request, ``meta_info`` carries ``spec_verify_ct`` (target verification
passes; AL = completion_tokens ÷ spec_verify_ct, SGLang's own
``spec_accept_length``) and the drafted and accepted token counts, whose names
changed across versions (SGLang ``python/sglang/srt/managers/tokenizer_manager.py``
and its spec-decoding metrics helper): ``spec_num_proposed_drafts`` /
``spec_num_correct_drafts`` (newest), ``spec_proposed_drafts`` /
``spec_accepted_drafts`` (their aliases), ``spec_draft_token_num`` /
``spec_accept_token_num`` (earlier); ``cached_tokens`` is the prompt tokens
served from the radix cache. SGLang returns ``meta_info`` from its native
``/generate`` and in a non-streamed chat choice; its OpenAI stream chunk has
no such field upstream (``ChatCompletionResponseStreamChoice`` in
``entrypoints/openai/protocol.py``; sgl-project/sglang PR 20703, which would have
added it, was closed), so a stream carries it only from a server or proxy that
adds it to its final chunk — which is where it is looked for. A run's figure
sums the counts over its requests (never a mean of per-request ratios).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from tokcaliper.model.families._base import ResponseField, ServerFamily, int_entry
from tokcaliper.model.metric_keys import split_key
from tokcaliper.model.specdec import RequestAcceptance, request_acceptance

PREFIX = "sglang:"
ACCEPT_LENGTH = "sglang:spec_accept_length"
ACCEPT_RATE = "sglang:spec_accept_rate"
CACHE_HIT_GAUGE = "sglang:cache_hit_rate"

#: (proposed, accepted) drafted-token counts in ``meta_info``, newest names first.
DRAFT_COUNT_KEYS = (("spec_num_proposed_drafts", "spec_num_correct_drafts"),
                    ("spec_proposed_drafts", "spec_accepted_drafts"),
                    ("spec_draft_token_num", "spec_accept_token_num"))

#: The ``meta_info`` entries a run keeps.
META_INFO_KEYS = ("spec_verify_ct", "spec_accept_length", "spec_accept_rate",
                  *(k for pair in DRAFT_COUNT_KEYS for k in pair), "completion_tokens", "cached_tokens")

#: Why the gauges are not a run's figure.
NOT_WINDOW_SCOPED = ("server-wide gauges, not window-scoped (they include traffic before this run; "
                     "under data parallelism one value per worker)")


class SGLangGauges(BaseModel):
    """SGLang's acceptance gauges at one instant.

    Attributes:
        accept_length: per worker (label set → value) AL as SGLang reports it.
        accept_rate: per worker acceptance rate.
        window_scoped: always False (see :data:`NOT_WINDOW_SCOPED`).
        note: :data:`NOT_WINDOW_SCOPED`.
    """

    accept_length: dict[str, float]
    accept_rate: dict[str, float]
    window_scoped: bool = False
    note: str = NOT_WINDOW_SCOPED


def gauges(values: Mapping[str, float]) -> SGLangGauges | None:
    """The acceptance gauges from ``{sample_key: value}`` (None when absent)."""
    length: dict[str, float] = {}
    rate: dict[str, float] = {}
    for key, value in values.items():
        name, labels = split_key(key)
        worker = ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k != "model_name") or "all"
        if name == ACCEPT_LENGTH:
            length[worker] = value
        elif name == ACCEPT_RATE:
            rate[worker] = value
    if not length and not rate:
        return None
    return SGLangGauges(accept_length=length, accept_rate=rate)


def request_from_meta_info(meta: Mapping[str, Any], output_tokens: int) -> RequestAcceptance | None:
    """One response's acceptance from SGLang's ``meta_info`` entries.

    Args:
        meta: the kept ``meta_info`` entries.
        output_tokens: completion tokens; ``meta_info.completion_tokens`` is used when present.

    Returns:
        None without ``spec_verify_ct``. AL = completion_tokens / spec_verify_ct;
        acceptance rate = accepted / proposed drafted tokens where given
        (:data:`DRAFT_COUNT_KEYS`, the first pair present).
    """
    steps = int_entry(meta, "spec_verify_ct")
    if not steps:
        return None
    n = int_entry(meta, "completion_tokens") or output_tokens
    proposed = accepted = None
    for p_key, a_key in DRAFT_COUNT_KEYS:
        if int_entry(meta, p_key) is not None and int_entry(meta, a_key) is not None:
            proposed, accepted = int_entry(meta, p_key), int_entry(meta, a_key)
            break
    engine_al = meta.get("spec_accept_length")
    return request_acceptance(n, draft_tokens=proposed, accepted=accepted, verify_steps=steps,
                              engine_al=float(engine_al) if isinstance(engine_al, (int, float)) else None)


FAMILY = ServerFamily(
    name="sglang", label="SGLang",
    source="SGLang python/sglang/srt/metrics/collector.py (gauges), srt/managers/tokenizer_manager.py (meta_info)",
    prefixes=(PREFIX,), request=request_from_meta_info,
    response_fields=(ResponseField("meta_info", META_INFO_KEYS),), cached_tokens_key="cached_tokens",
    cache_gauge=CACHE_HIT_GAUGE,
    cache_gauge_note="SGLang's running cache-hit gauge after the run, not scoped to it (earlier traffic included)",
    no_counts_note="SGLang exposes acceptance as gauges only, not counters; per-request meta_info is used",
)
