"""``tokcaliper metrics``: the metric registry as a result (names for ``--metric``)."""

from __future__ import annotations

from pydantic import BaseModel

from tokcaliper.model.metrics import METRICS, Better

__all__ = ["MetricInfo", "MetricList", "metric_list"]


class MetricInfo(BaseModel):
    """One registry metric (:class:`tokcaliper.model.metrics.Metric` without its extractor).

    Attributes:
        name: identifier (``"ttft_p50_ms"``). label: with its unit. unit: ``"tok/s"``, ``"ms"`` ….
        better: ``"higher"`` or ``"lower"``. headline: compared by default.
        computed: how it is computed. description: what it tells a user.
        noise_abs: its known resolution in ``unit`` (compared on b − a then), or ``None``.
        needs: the load option without which a run has no value for it, or ``None``.
    """

    name: str
    label: str
    unit: str
    better: Better
    headline: bool
    computed: str
    description: str
    noise_abs: float | None
    needs: str | None


class MetricList(BaseModel):
    """Every per-run metric, in registry order."""

    metrics: list[MetricInfo]


def metric_list() -> MetricList:
    """The registry (:data:`tokcaliper.model.metrics.METRICS`) as a :class:`MetricList`."""
    return MetricList(metrics=[
        MetricInfo(name=m.name, label=m.label, unit=m.unit, better=m.better, headline=m.headline,
                   computed=m.computed, description=m.description, noise_abs=m.noise_abs, needs=m.needs)
        for m in METRICS.values()])
