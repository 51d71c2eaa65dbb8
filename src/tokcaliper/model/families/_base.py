"""What one server family declares (:class:`ServerFamily`), and the counter arithmetic two share.

Pure declarations and pure arithmetic, no I/O: the load layer reads the
per-response fields to keep from here, the counter reader the histograms to
keep, and the acceptance and prefix-cache figures are computed from here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tokcaliper.model.metric_keys import split_key
from tokcaliper.model.specdec import RequestAcceptance, SpecCounts

#: Counters → acceptance counts over the run's window (None: the family exposes none).
CountsReader = Callable[[Mapping[str, float]], "SpecCounts | None"]
#: Kept per-response fields, output tokens → one request's acceptance (None: none reported).
RequestReader = Callable[[Mapping[str, Any], int], "RequestAcceptance | None"]


@dataclass(frozen=True)
class ResponseField:
    """An object of a streamed response whose numeric entries a run keeps (``RequestRecord.server_timings``).

    The SSE parser looks for it at the event's top level and in each of its
    ``choices``, in the events that carry no generated text (the final and the
    usage chunk) and in the last one that does — never in every token's event.

    Attributes:
        obj: the object's key, e.g. ``"timings"`` (llama.cpp) or ``"meta_info"`` (SGLang).
        keys: the entries to keep; None keeps every finite int/float entry.
    """

    obj: str
    keys: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ServerFamily:
    """One inference engine: how it is recognised and how its figures are read.

    Attributes:
        name: the ``--server-kind`` value, e.g. ``"llamacpp"``.
        label: the engine in words.
        source: where the metric and field names come from (file or page).
        prefixes: metric-name prefixes that identify it on ``/metrics``.
        metrics_path: the path of its Prometheus text (``/metrics`` unless it says otherwise).
        counts: counter difference → :class:`~tokcaliper.model.specdec.SpecCounts`.
        step_acceptance: counter difference → totals per target step
            (a :class:`~tokcaliper.model.specdec.RequestAcceptance` of the whole
            run), for an engine that counts steps and accepted tokens but not drafts.
        request: kept response fields → one request's acceptance.
        response_fields: the per-response objects to keep.
        cached_tokens_key: entry of the kept fields holding the prompt tokens served
            from the prefix cache (used when ``usage`` does not say).
        cache_counters: (cached prompt tokens, prompt tokens) counters whose
            differences give the run's prefix-cache hit share.
        cache_gauge: a hit-rate gauge (the engine's running value, not the run's).
        cache_gauge_note: what the gauge is not, printed with it.
        histograms: histogram families whose ``_sum`` / ``_count`` (cumulative,
            so differenceable) are kept as counters.
        no_counts_note: why the counters give no acceptance, when they never do.
    """

    name: str
    label: str
    source: str
    prefixes: tuple[str, ...]
    metrics_path: str = "/metrics"
    counts: CountsReader | None = None
    step_acceptance: Callable[[Mapping[str, float]], RequestAcceptance | None] | None = None
    request: RequestReader | None = None
    response_fields: tuple[ResponseField, ...] = ()
    cached_tokens_key: str | None = None
    cache_counters: tuple[str, str] | None = None
    cache_gauge: str | None = None
    cache_gauge_note: str | None = None
    histograms: tuple[str, ...] = ()
    no_counts_note: str | None = None


def int_entry(fields: Mapping[str, Any], *keys: str) -> int | None:
    """The first of ``keys`` whose value is a number (bool excluded), as an int; None if none is."""
    for key in keys:
        v = fields.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return int(v)
    return None


def per_position_counts(counters: Mapping[str, float], name: str, label: str) -> dict[int, float]:
    """``{position: Σ value}`` of metric ``name`` by its integer ``label`` (other labels summed).

    Raises:
        ValueError: a position label that is not a non-negative integer.
    """
    out: dict[int, float] = {}
    for key, value in counters.items():
        base, labels = split_key(key)
        if base != name:
            continue
        pos = labels.get(label, "")
        if not pos.isdigit():
            raise ValueError(f"{key}: {label} label must be a non-negative integer")
        out[int(pos)] = out.get(int(pos), 0.0) + value
    return out


def positions(per_pos: Mapping[int, float]) -> list[float]:
    """``per_pos`` as a list over 0 … max position (absent positions 0)."""
    return [per_pos.get(i, 0.0) for i in range(max(per_pos) + 1)] if per_pos else []


# The ``spec_decode_*_total`` family shared by llama.cpp and vLLM (vLLM
# ``vllm/v1/spec_decode/metrics.py``; llama.cpp ``tools/server/server-task.cpp``).
DRAFTS = "spec_decode_num_drafts_total"
DRAFT_TOKENS = "spec_decode_num_draft_tokens_total"
ACCEPTED = "spec_decode_num_accepted_tokens_total"
ACCEPTED_PER_POS = "spec_decode_num_accepted_tokens_per_pos_total"


def spec_decode_totals(counters: Mapping[str, float], prefix: str, source: str) -> SpecCounts | None:
    """:class:`SpecCounts` from the ``prefix + spec_decode_*_total`` counters (labels summed).

    Returns:
        None when the drafts, draft-token or accepted counter is missing.

    Raises:
        ValueError: a ``position`` label that is not a non-negative integer.
    """
    totals: dict[str, float] = {}
    for key, value in counters.items():
        name, _ = split_key(key)
        if name.startswith(prefix) and name[len(prefix):] in (DRAFTS, DRAFT_TOKENS, ACCEPTED):
            base = name[len(prefix):]
            totals[base] = totals.get(base, 0.0) + value
    if not all(b in totals for b in (DRAFTS, DRAFT_TOKENS, ACCEPTED)):
        return None
    per_pos = per_position_counts(counters, prefix + ACCEPTED_PER_POS, "position")
    return SpecCounts(drafts=totals[DRAFTS], draft_tokens=totals[DRAFT_TOKENS], accepted=totals[ACCEPTED],
                      accepted_per_pos=positions(per_pos), source=source)
