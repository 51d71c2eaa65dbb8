"""TensorRT-LLM's ``trtllm-serve``: ``trtllm_*`` counters on ``/prometheus/metrics``.

Metric names from TensorRT-LLM ``tensorrt_llm/metrics/collector.py``
(``MetricsCollector``, prefix ``trtllm_``; Dynamo re-exports them as ``trtllm:``);
``trtllm-serve`` serves the Prometheus text on ``/prometheus/metrics``
(``examples/serve/prometheus_metrics.py``), its ``/metrics`` being JSON
iteration statistics.

* Acceptance (per-request counters, with ``return_perf_metrics``):
  ``trtllm_spec_decode_drafted_tokens_total{token_position="i"}`` and
  ``trtllm_spec_decode_accepted_tokens_total{token_position="i"}``, 0-based
  positions. Every draft drafts position 0, so Δdrafted[0] is the number of
  drafts, Σ Δdrafted the drafted tokens and Σ Δaccepted the accepted ones.
  The iteration-level ``trtllm_spec_decode_num_draft_tokens_total`` /
  ``…num_accepted_tokens_total`` lack the number of drafts and are not used.
* Prefix cache: Δ``trtllm_prompt_cached_tokens_total`` ÷ Δ``trtllm_prompt_tokens_total``.
"""

from __future__ import annotations

from collections.abc import Mapping

from tokcaliper.model.families._base import ServerFamily, per_position_counts, positions
from tokcaliper.model.metric_keys import metric_name
from tokcaliper.model.specdec import SpecCounts

PREFIXES = ("trtllm_", "trtllm:")
DRAFTED_PER_POS = "spec_decode_drafted_tokens_total"
ACCEPTED_PER_POS = "spec_decode_accepted_tokens_total"


def counts_from_counters(counters: Mapping[str, float]) -> SpecCounts | None:
    """Speculative counts from the per-position counters (None when they are absent)."""
    for prefix in PREFIXES:
        if not any(metric_name(k) == prefix + DRAFTED_PER_POS for k in counters):
            continue
        drafted = per_position_counts(counters, prefix + DRAFTED_PER_POS, "token_position")
        accepted = per_position_counts(counters, prefix + ACCEPTED_PER_POS, "token_position")
        return SpecCounts(drafts=drafted.get(0, 0.0), draft_tokens=sum(drafted.values()),
                          accepted=sum(accepted.values()), accepted_per_pos=positions(accepted),
                          source="trtllm /prometheus/metrics (per-position counters)")
    return None


FAMILY = ServerFamily(
    name="trtllm", label="TensorRT-LLM trtllm-serve", source="TensorRT-LLM tensorrt_llm/metrics/collector.py",
    prefixes=PREFIXES, metrics_path="/prometheus/metrics", counts=counts_from_counters,
    cache_counters=("trtllm_prompt_cached_tokens_total", "trtllm_prompt_tokens_total"),
)
