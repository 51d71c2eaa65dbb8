"""Speculative-decoding readers, one per server family (METHODS.md M6).

Each reader turns what an engine exposes into :class:`tokcaliper.model.specdec.SpecCounts`
(differences of cumulative counters over a run) or
:class:`tokcaliper.model.specdec.RequestAcceptance` (one response):

- :mod:`.llamacpp` — ``llamacpp:spec_decode_*_total`` on ``/metrics``; per
  response ``timings.draft_n`` / ``timings.draft_n_accepted``.
- :mod:`.vllm` — the same counter family under ``vllm:``; offline, the
  periodic "SpecDecoding metrics: …" log line.
- :mod:`.sglang` — ``sglang:spec_accept_length`` / ``sglang:spec_accept_rate``
  gauges (server-wide, not window-scoped) and per-request ``meta_info``.

The family is detected from metric names (:func:`detect_server_kind`) or given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, get_args

from tokcaliper.errors import InputError
from tokcaliper.servers.spec_readers import llamacpp, sglang, vllm
from tokcaliper.model.specdec import RequestAcceptance, SpecCounts

ServerKind = Literal["llamacpp", "vllm", "sglang"]
SERVER_KINDS: tuple[str, ...] = get_args(ServerKind)

_PREFIXES: dict[str, str] = {"llamacpp": llamacpp.PREFIX, "vllm": vllm.PREFIX, "sglang": sglang.PREFIX}


def detect_server_kind(names: Iterable[str]) -> ServerKind | None:
    """The server family whose metric prefix (``llamacpp:``, ``vllm:``, ``sglang:``) most names carry.

    Args:
        names: metric or sample keys, e.g. the keys of a counter snapshot.

    Returns:
        The family, or None when no name carries a known prefix.
    """
    hits = {kind: 0 for kind in _PREFIXES}
    for name in names:
        for kind, prefix in _PREFIXES.items():
            if name.startswith(prefix):
                hits[kind] += 1
    best = max(hits, key=lambda k: hits[k])
    return best if hits[best] else None  # type: ignore[return-value]


def check_server_kind(kind: str | None) -> ServerKind | None:
    """Validate a ``--server-kind`` value.

    Raises:
        InputError: not one of :data:`SERVER_KINDS`.
    """
    if kind is None:
        return None
    if kind not in SERVER_KINDS:
        raise InputError(f"--server-kind {kind!r}: expected one of {', '.join(SERVER_KINDS)}")
    return kind  # type: ignore[return-value]


def spec_counts(counters: Mapping[str, float], kind: ServerKind | None = None) -> SpecCounts | None:
    """Speculative counts from a counter snapshot or difference.

    Args:
        counters: ``{sample_key: value}`` as stored in ``Run.counters_delta``.
        kind: server family; detected from the names when None.

    Returns:
        The counts, or None when the family exposes no such counters
        (SGLang publishes gauges only; a server without speculation has none).
    """
    kind = kind or detect_server_kind(counters)
    if kind == "llamacpp":
        return llamacpp.counts_from_counters(counters)
    if kind == "vllm":
        return vllm.counts_from_counters(counters)
    return None


def request_acceptance(kind: ServerKind | None, response_fields: Mapping[str, Any] | None,
                       output_tokens: int) -> RequestAcceptance | None:
    """Acceptance of one response from the fields its engine returns.

    Args:
        kind: server family (llama.cpp reads ``timings``, SGLang ``meta_info``);
            None tries both.
        response_fields: llama.cpp's ``timings`` or SGLang's ``meta_info`` dict.
        output_tokens: tokens generated for the request (usage.completion_tokens).
    """
    if not response_fields:
        return None
    if kind in (None, "llamacpp"):
        r = llamacpp.request_from_timings(response_fields, output_tokens)
        if r is not None or kind == "llamacpp":
            return r
    if kind in (None, "sglang"):
        return sglang.request_from_meta_info(response_fields, output_tokens)
    return None


__all__ = ["SERVER_KINDS", "ServerKind", "check_server_kind", "detect_server_kind", "request_acceptance",
           "spec_counts"]
