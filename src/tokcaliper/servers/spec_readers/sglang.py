"""SGLang: ``sglang:spec_accept_length`` / ``sglang:spec_accept_rate`` gauges and per-request ``meta_info``.

The gauges are *not* window-scoped: they are the server's own running values
(server-wide, and under data parallelism one per worker), so a run's
acceptance cannot be differenced from them; they are reported beside it,
flagged. Per request, ``meta_info`` may carry ``spec_verify_ct`` (target
verification passes; AL = completion_tokens ÷ spec_verify_ct) and, in newer
versions, ``spec_accept_length``, ``spec_accept_rate``,
``spec_num_correct_drafts`` / ``spec_num_proposed_drafts``. A run's figure
sums the counts over its requests (never a mean of per-request ratios).
Source: SGLang ``python/sglang/srt/metrics/collector.py`` and the scheduler's
``meta_info``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from tokcaliper.servers.counters import split_key
from tokcaliper.model.specdec import RequestAcceptance, request_acceptance

PREFIX = "sglang:"
ACCEPT_LENGTH = "sglang:spec_accept_length"
ACCEPT_RATE = "sglang:spec_accept_rate"

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


def _int(meta: Mapping[str, Any], key: str) -> int | None:
    v = meta.get(key)
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def request_from_meta_info(meta: Mapping[str, Any], output_tokens: int) -> RequestAcceptance | None:
    """One response's acceptance from SGLang's ``meta_info``.

    Args:
        meta: the response's ``meta_info`` dict.
        output_tokens: completion tokens; ``meta_info.completion_tokens`` is used when present.

    Returns:
        None without ``spec_verify_ct``. AL = completion_tokens / spec_verify_ct;
        acceptance rate = spec_num_correct_drafts / spec_num_proposed_drafts where given.
    """
    steps = _int(meta, "spec_verify_ct")
    if not steps:
        return None
    n = _int(meta, "completion_tokens") or output_tokens
    engine_al = meta.get("spec_accept_length")
    return request_acceptance(n, draft_tokens=_int(meta, "spec_num_proposed_drafts"),
                              accepted=_int(meta, "spec_num_correct_drafts"), verify_steps=steps,
                              engine_al=float(engine_al) if isinstance(engine_al, (int, float)) else None)
