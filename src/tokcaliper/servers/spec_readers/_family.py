"""The ``spec_decode_*_total`` counter family shared by llama.cpp and vLLM.

Names (prefix ``llamacpp:`` or ``vllm:``):
``spec_decode_num_drafts_total`` (verification steps with a draft),
``spec_decode_num_draft_tokens_total``, ``spec_decode_num_accepted_tokens_total``
and ``spec_decode_num_accepted_tokens_per_pos_total{position="i"}``.
Samples with other labels (vLLM's ``engine``, ``model_name``) are summed.
"""

from __future__ import annotations

from collections.abc import Mapping

from tokcaliper.servers.counters import split_key
from tokcaliper.model.specdec import SpecCounts

DRAFTS = "spec_decode_num_drafts_total"
DRAFT_TOKENS = "spec_decode_num_draft_tokens_total"
ACCEPTED = "spec_decode_num_accepted_tokens_total"
ACCEPTED_PER_POS = "spec_decode_num_accepted_tokens_per_pos_total"


def counts_with_prefix(counters: Mapping[str, float], prefix: str, source: str) -> SpecCounts | None:
    """:class:`SpecCounts` from ``{sample_key: value}`` for metric names ``prefix + …``.

    Returns:
        None when the drafts, draft-token or accepted counter is missing.

    Raises:
        ValueError: a ``position`` label that is not a non-negative integer.
    """
    totals: dict[str, float] = {}
    per_pos: dict[int, float] = {}
    for key, value in counters.items():
        name, labels = split_key(key)
        if not name.startswith(prefix):
            continue
        base = name[len(prefix):]
        if base == ACCEPTED_PER_POS:
            pos = labels.get("position", "")
            if not pos.isdigit():
                raise ValueError(f"{key}: position label must be a non-negative integer")
            per_pos[int(pos)] = per_pos.get(int(pos), 0.0) + value
        elif base in (DRAFTS, DRAFT_TOKENS, ACCEPTED):
            totals[base] = totals.get(base, 0.0) + value
    if not all(b in totals for b in (DRAFTS, DRAFT_TOKENS, ACCEPTED)):
        return None
    positions = [per_pos.get(i, 0.0) for i in range(max(per_pos) + 1)] if per_pos else []
    return SpecCounts(drafts=totals[DRAFTS], draft_tokens=totals[DRAFT_TOKENS], accepted=totals[ACCEPTED],
                      accepted_per_pos=positions, source=source)
