"""The metric registry: complete, directional, and the only list of metrics."""

from __future__ import annotations

import pytest

from tokcaliper.errors import InputError
from tokcaliper.load.summary import summarize
from tokcaliper.model.metrics import (
    METRICS,
    NOT_METRICS,
    get_metric,
    headline_metrics,
    run_scalars,
    scalar_series,
)
from tokcaliper.model.run import Percentiles, RequestRecord, RunMetrics


def _records() -> list[RequestRecord]:
    # Two requests, 11 tokens each: TTFT 0.1 / 0.3 s, 10 gaps of 0.02 / 0.04 s.
    return [
        RequestRecord(index=0, start_s=0.0, ttft_s=0.1, itl_s=[0.02] * 10, e2e_s=0.3,
                      output_tokens=11, token_count_source="usage"),
        RequestRecord(index=1, start_s=0.0, ttft_s=0.3, itl_s=[0.04] * 10, e2e_s=0.7,
                      output_tokens=11, token_count_source="usage"),
    ]


def test_every_numeric_field_of_the_summary_is_a_metric_or_excused():
    """A new RunMetrics field must be added to the registry or to NOT_METRICS."""
    m = summarize(_records())
    scalars = run_scalars(m)
    for field, info in RunMetrics.model_fields.items():
        ann = str(info.annotation)
        if "Percentiles" in ann:
            for stat in Percentiles.model_fields:
                if stat == "n":
                    continue
                hits = [name for name in METRICS if name.startswith(field.split("_")[0] + "_" + stat + "_")]
                assert len(hits) == 1, (field, stat, hits)
        elif ann in ("float", "int", "float | None", "int | None"):
            value = getattr(m, field)
            assert field in NOT_METRICS or any(v == value for v in scalars.values()), field


def test_values_and_units_on_known_data():
    s = run_scalars(summarize(_records()))
    assert s["aggregate_output_tok_s"] == pytest.approx(22 / 0.7)
    assert s["request_throughput_rps"] == pytest.approx(2 / 0.7)
    assert s["per_stream_decode_tok_s_mean"] == pytest.approx((10 / 0.2 + 10 / 0.4) / 2)
    assert s["ttft_mean_ms"] == pytest.approx(200.0)
    assert s["ttft_p50_ms"] == pytest.approx(200.0)
    assert s["itl_p50_ms"] == pytest.approx(30.0)
    assert s["tpot_mean_ms"] == pytest.approx(30.0)
    assert s["e2e_p90_s"] == pytest.approx(0.3 + 0.9 * 0.4)  # seconds, not ms


def test_directions_come_from_the_registry():
    for name, metric in METRICS.items():
        # shares where more is better: SLOs met, prompt tokens the cache saved
        expected = metric.unit in ("tok/s", "req/s") or name in ("slo_attainment_pct", "prefix_cache_hit_pct")
        assert metric.higher_is_better == expected, name
        assert metric.unit in metric.label and metric.computed and metric.description


def test_unknown_metric_lists_the_valid_ones():
    with pytest.raises(InputError, match="unknown metric 'tok_s'.*aggregate_output_tok_s"):
        get_metric("tok_s")


def test_scalar_series_keeps_only_metrics_present_in_every_run():
    with_data = summarize(_records())
    empty = summarize([])
    series = scalar_series([with_data, with_data])
    assert list(series) == [m.label for m in headline_metrics()]
    assert all(len(v) == 2 for v in series.values())
    assert scalar_series([with_data, empty]) == {}
    picked = scalar_series([with_data], names=["ttft_p90_ms"])
    assert picked == {"TTFT p90 (ms)": [pytest.approx(280.0)]}
