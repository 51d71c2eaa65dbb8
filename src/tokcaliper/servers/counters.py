"""Server-side cumulative counters, read before and after the load (M6).

The difference of two snapshots is what this run did, free of the server's
own rolling windows, which mix in history (METHODS.md M6). llama.cpp exposes
them with ``--metrics`` on ``/metrics`` in the Prometheus text format (vLLM,
SGLang and TGI too; TensorRT-LLM's ``trtllm-serve`` on ``/prometheus/metrics``,
tried when ``/metrics`` is not Prometheus text: the paths come from the server
families, :func:`tokcaliper.model.families.metrics_paths`), parsed with
``prometheus_client``'s own parser.

A snapshot that cannot be taken is not silently empty: :func:`read_counters`
returns a :class:`CounterRead` whose ``error`` says why (HTTP status, refused
connection, malformed text), and :func:`counters_error` turns the two reads
of a run into the one-line reason stored with the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import httpx

from tokcaliper.errors import InputError
from tokcaliper.model.families import kept_histograms, metrics_paths
from tokcaliper.model.metric_keys import sample_key, split_key  # noqa: F401  (split_key: re-exported)
from prometheus_client.parser import text_string_to_metric_families

def parse_metrics(text: str) -> tuple[dict[str, float], dict[str, float]]:
    """Counters and gauges of a Prometheus text exposition.

    Returns:
        ``(counters, gauges)``, each ``{sample_key: value}`` (see
        :func:`sample_key`). ``*_created`` samples are dropped; untyped
        samples are left out (neither can be differenced safely). Of a
        histogram a server family names (``ServerFamily.histograms``, e.g. TGI's
        ``tgi_request_skipped_tokens``) the cumulative ``_sum`` and ``_count``
        are kept as counters; other histograms are left out.

    Raises:
        MetricsTextError: (an InputError and a ValueError) on text prometheus_client cannot parse.
    """
    try:
        return _parse_metrics(text)
    except MetricsTextError:
        raise
    except Exception as e:  # prometheus_client raises ValueError, but also IndexError, TypeError, …
        reason = " ".join(str(e).split())[:160] or type(e).__name__
        raise MetricsTextError(f"not Prometheus text: {reason}") from None


class MetricsTextError(InputError, ValueError):
    """``/metrics`` text that prometheus_client cannot parse (one line; also a ValueError,
    which callers of :func:`parse_metrics` caught before)."""


def _parse_metrics(text: str) -> tuple[dict[str, float], dict[str, float]]:
    counters: dict[str, float] = {}
    gauges: dict[str, float] = {}
    histograms = kept_histograms()
    for family in text_string_to_metric_families(text):
        sums_only = family.type == "histogram" and family.name in histograms
        if family.type == "counter" or sums_only:
            out = counters
        elif family.type == "gauge":
            out = gauges
        else:
            continue
        for s in family.samples:
            if s.name.endswith("_created") or (sums_only and not s.name.endswith(("_sum", "_count"))):
                continue
            out[sample_key(s.name, s.labels)] = float(s.value)
    return counters, gauges


def parse_counters(text: str) -> dict[str, float]:
    """Counters from a Prometheus text exposition: ``{sample_key: value}``.

    Only samples of metric families typed ``counter`` are kept (gauges have
    no meaningful difference). Labelled samples get their labels appended,
    e.g. ``name{gpu="0"}``.

    Raises:
        ValueError: from ``prometheus_client`` on malformed text.
    """
    return parse_metrics(text)[0]


@dataclass
class CounterRead:
    """One snapshot of ``/metrics``: the values, or why there are none.

    Attributes:
        values: counters ``{sample_key: value}``; None when unreadable.
        gauges: gauges ``{sample_key: value}`` (empty when unreadable). Gauges
            are current values (often the server's own rolling averages), not
            differences; keep them apart from counters.
        error: None on success, else the reason in one line (e.g.
            ``"GET http://…/metrics → HTTP 501 (llama-server: start it with --metrics)"``).
    """

    values: dict[str, float] | None
    gauges: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the counters were read."""
        return self.values is not None


def read_counters(base_url: str, timeout_s: float = 10.0) -> CounterRead:
    """Snapshot of the server's Prometheus counters and gauges, with the reason when unreadable.

    ``/metrics`` first; when it gives no sample (an error, or text without
    metrics, as trtllm-serve's JSON there reads), each other path a server
    family declares (:func:`tokcaliper.model.families.metrics_paths`), until
    one does. Never raises: an unreachable server, an HTTP error status or
    malformed text give ``CounterRead(values=None, error=reason)``, the reason
    being ``/metrics``'s.
    """
    first: CounterRead | None = None
    for path in metrics_paths():
        read = _read_path(base_url.rstrip("/") + path, timeout_s)
        if read.values or read.gauges:
            return read
        first = first or read
        if " failed: " in (read.error or ""):  # the server does not answer at all
            break
    assert first is not None  # metrics_paths() always holds /metrics
    return first


def _read_path(url: str, timeout_s: float) -> CounterRead:
    try:
        r = httpx.get(url, timeout=timeout_s)
    except httpx.HTTPError as e:
        return CounterRead(None, error=f"GET {url} failed: {type(e).__name__}: {e}".rstrip(": "))
    if r.status_code != 200:
        hint = ""
        if r.status_code in (404, 501):
            hint = " (no metrics endpoint; llama-server needs --metrics)"
        body = " ".join(r.text.split())[:120]
        return CounterRead(None, error=f"GET {url} → HTTP {r.status_code}{hint}" + (f": {body}" if body else ""))
    try:
        counters, gauges = parse_metrics(r.text)
    except ValueError as e:
        return CounterRead(None, error=f"GET {url}: {e}")
    return CounterRead(counters, gauges)


def _values(read: CounterRead | Mapping[str, float] | None) -> Mapping[str, float] | None:
    if isinstance(read, CounterRead):
        return read.values
    return read


def counter_delta(before: CounterRead | Mapping[str, float] | None,
                  after: CounterRead | Mapping[str, float] | None) -> dict[str, float]:
    """after − before per counter (empty when either snapshot is unreadable).

    A series that first appears during the run counts from 0: servers create
    labelled series lazily (llama.cpp lists ``…_per_pos_total{position}`` only
    once something was accepted), and a Prometheus counter that does not yet
    exist has counted nothing. A series that vanished is left out.
    """
    b, a = _values(before), _values(after)
    if b is None or a is None or not a:
        return {}
    return {k: a[k] - b.get(k, 0.0) for k in a}


def counters_error(before: CounterRead | None, after: CounterRead | None) -> str | None:
    """Why a run's counter delta is empty or unusable, or None when it is sound.

    Reasons, joined by ``"; "``: a read that failed (``before the run: …`` /
    ``after the run: …``), an empty exposition, or counters that went
    backwards (the server restarted or reset them during the run).
    """
    reasons: list[str] = []
    for when, read in (("before the run", before), ("after the run", after)):
        if read is None:
            reasons.append(f"{when}: not read")
        elif read.error:
            reasons.append(f"{when}: {read.error}")
        elif not read.values:
            reasons.append(f"{when}: /metrics lists no counters")
    if not reasons and before is not None and after is not None:
        back = sorted(k for k, v in counter_delta(before, after).items() if v < 0)
        if back:
            more = f" (+{len(back) - 3} more)" if len(back) > 3 else ""
            reasons.append("counters went backwards (server restarted?): " + ", ".join(back[:3]) + more)
    return "; ".join(reasons) or None


def discover_model(base_url: str, timeout_s: float = 10.0) -> str | None:
    """The first model id served at ``/v1/models`` (None if not listed or not understood).

    The answer must be ``{"data": [{"id": "<string>"}, …]}`` (OpenAI API
    reference, "List models"); anything else — another shape, a non-string
    id, JSON nested past the decoder's limit — gives None, never an exception.
    """
    try:
        r = httpx.get(base_url.rstrip("/") + "/v1/models", timeout=timeout_s)
        body = r.json()
    except (httpx.HTTPError, ValueError, RecursionError):
        return None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not data or not isinstance(data[0], dict):
        return None
    model = data[0].get("id")
    return model if isinstance(model, str) and model and len(model) <= 500 else None
