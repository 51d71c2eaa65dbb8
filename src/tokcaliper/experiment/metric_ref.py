"""Which metrics an experiment or comparison may name, and which way is better.

Transitional: the names come from :data:`tokcaliper.load.summary.RUN_SCALARS`
until the metric registry (``tokcaliper.model.metrics``, with a ``better``
direction per metric) replaces it; only this module needs to change then.
"""

from __future__ import annotations

from tokcaliper.errors import InputError

__all__ = ["DEFAULT_METRIC", "higher_is_better", "known_metrics", "metric_label", "validate_metric"]

#: The primary metric by default: aggregate output throughput (tok/s over all streams).
DEFAULT_METRIC = "aggregate_output_tok_s"


def known_metrics() -> dict[str, str]:
    """Metric name → label, e.g. ``"ttft_p50_ms" → "TTFT p50 (ms)"``."""
    from tokcaliper.load.summary import RUN_SCALARS

    return dict(RUN_SCALARS)


def validate_metric(name: str) -> str:
    """Return ``name`` if it is a known metric.

    Raises:
        InputError: unknown name (the message lists the known ones).
    """
    known = known_metrics()
    if name not in known:
        raise InputError(f"unknown metric {name!r}; known: {', '.join(known)}")
    return name


def higher_is_better(name: str) -> bool:
    """True for rates (``*_tok_s``, ``*_rps``: throughput), False for latencies (ms, s).

    Raises:
        InputError: unknown metric.
    """
    validate_metric(name)
    return name.endswith(("_tok_s", "_rps"))


def metric_label(name: str) -> str:
    """Human label of a known metric ("aggregate output tok/s")."""
    return known_metrics()[validate_metric(name)]
