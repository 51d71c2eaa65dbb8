"""Server-side cumulative counters, read before and after the load (M6).

The difference of two snapshots is what this run did, free of the server's
own rolling windows, which mix in history (METHODS.md M6). llama.cpp exposes
them with ``--metrics`` on ``/metrics`` in the Prometheus text format, parsed
with ``prometheus_client``'s own parser.
"""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families


def parse_counters(text: str) -> dict[str, float]:
    """Counters from a Prometheus text exposition: ``{sample_name: value}``.

    Only samples of metric families typed ``counter`` are kept (gauges have
    no meaningful difference). Labelled samples get their labels appended,
    e.g. ``name{gpu="0"}``.

    Raises:
        ValueError: from ``prometheus_client`` on malformed text.
    """
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        if family.type != "counter":
            continue
        for s in family.samples:
            if s.name.endswith("_created"):
                continue
            key = s.name
            if s.labels:
                key += "{" + ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items())) + "}"
            out[key] = float(s.value)
    return out


def read_counters(base_url: str, timeout_s: float = 10.0) -> dict[str, float] | None:
    """Snapshot of ``/metrics`` counters, or None when the server has none."""
    try:
        r = httpx.get(base_url.rstrip("/") + "/metrics", timeout=timeout_s)
        if r.status_code != 200:
            return None
        return parse_counters(r.text)
    except (httpx.HTTPError, ValueError):
        return None


def counter_delta(before: dict[str, float] | None, after: dict[str, float] | None) -> dict[str, float]:
    """after − before for counters present in both (empty when either is None)."""
    if not before or not after:
        return {}
    return {k: after[k] - before[k] for k in after if k in before}


def discover_model(base_url: str, timeout_s: float = 10.0) -> str | None:
    """The first model id served at ``/v1/models`` (None if not listed)."""
    try:
        r = httpx.get(base_url.rstrip("/") + "/v1/models", timeout=timeout_s)
        data = r.json().get("data") or []
        return str(data[0]["id"]) if data else None
    except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError):
        return None
