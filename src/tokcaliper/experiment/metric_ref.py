"""Which metrics an experiment or comparison may name, and which way is better.

A thin adapter over the metric registry (:mod:`tokcaliper.model.metrics`), so
experiment files and comparisons name metrics exactly as the store does.
"""

from __future__ import annotations

from tokcaliper.errors import InputError

__all__ = ["DEFAULT_METRIC", "higher_is_better", "known_metrics", "metric_label", "validate_metric"]

#: The primary metric by default: aggregate output throughput (tok/s over all streams).
DEFAULT_METRIC = "aggregate_output_tok_s"


def known_metrics() -> dict[str, str]:
    """Metric name → label, e.g. ``"ttft_p50_ms" → "TTFT p50 (ms)"`` (from the registry)."""
    from tokcaliper.model.metrics import METRICS

    return {name: m.label for name, m in METRICS.items()}


def validate_metric(name: str) -> str:
    """Return ``name`` if it is a registry metric.

    Raises:
        InputError: unknown name (the message lists the known ones).
    """
    from tokcaliper.model.metrics import get_metric

    return get_metric(name).name


def higher_is_better(name: str) -> bool:
    """The registry's direction of ``name`` (throughputs: higher; latencies: lower).

    Raises:
        InputError: unknown metric.
    """
    from tokcaliper.model.metrics import get_metric

    return get_metric(name).higher_is_better


def metric_label(name: str) -> str:
    """Human label of a known metric ("aggregate output tok/s")."""
    from tokcaliper.model.metrics import get_metric

    return get_metric(name).label
