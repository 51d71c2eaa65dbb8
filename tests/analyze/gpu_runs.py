"""Stored runs with GPU telemetry for the analyze tests (synthetic)."""

from __future__ import annotations

from tokcaliper.load.summary import summarize
from tokcaliper.model.run import LoadConfig, RequestRecord, Run
from tokcaliper.model.telemetry import DeviceSummary, TelemetrySummary

__all__ = ["make_run"]


def make_run(i: int, tok_s: float, clock: float, throttle: dict | None = None, position: int | None = None) -> Run:
    """Stored run ``i``: ``tok_s`` per stream over 2 s, a GPU at ``clock`` MHz; at ``position`` (default ``i``)."""
    recs = [RequestRecord(index=0, start_s=0.0, ttft_s=0.1, e2e_s=2.0, output_tokens=int(round(2 * tok_s)),
                          token_count_source="usage", itl_s=[0.1])]
    tel = TelemetrySummary(interval_s=0.5, devices=[DeviceSummary(
        device="gpu0", kind="nvidia_gpu", clock_start_mhz=clock, clock_mean_mhz=clock - 60,
        clock_min_mhz=clock - 120, clock_max_mhz=clock, temperature_start_c=50.0 + 3 * (i % 4),
        throttle_share=throttle or {}, throttle_samples=40)])
    return Run(session="base", position=i if position is None else position, rest_s=30.0 + 5 * (i % 3),
               started_at="2026-01-01T00:00:00+00:00",
               finished_at="2026-01-01T00:00:02+00:00", command_line="tokcaliper bench",
               tool_version="0.1.0", config=LoadConfig(base_url="http://127.0.0.1:1"),
               metrics=summarize(recs), requests=recs, telemetry=tel)
