"""The client's timing against a server of exactly known delays, and injected faults.

The fake server runs in another thread of this process, so both share the
CPU; the tolerances below are what the client must hold even so.
"""

from __future__ import annotations

import statistics

import pytest

from tokcaliper.load.driver import run_phase
from tokcaliper.load.prompts import builtin_prompts
from tokcaliper.load.summary import summarize
from tokcaliper.model.run import LoadConfig

from .fake_server import FakeServer, FakeTiming


def test_ttft_and_itl_match_the_known_schedule():
    timing = FakeTiming(ttft_s=0.050, itl_s=0.010, tokens=20)
    with FakeServer(timing) as srv:
        cfg = LoadConfig(base_url=srv.base_url, concurrency=4, requests=16, max_tokens=20)
        records = run_phase(cfg, builtin_prompts())
    m = summarize(records)
    assert m.completed == 16 and m.token_count_source == "usage" and m.output_tokens == 320
    ttfts = [r.ttft_s for r in records]
    # Server-side TTFT is exactly 50 ms; loopback, connection set-up and both
    # event loops sharing this process's CPU add a little (the precise client
    # overhead is measured by benchmarks/, not asserted in a unit test).
    assert 0.050 <= min(ttfts) and statistics.median(ttfts) < 0.050 + 0.025
    itls = [x for r in records for x in r.itl_s]
    assert statistics.median(itls) == pytest.approx(0.010, abs=0.002)
    # E2E = TTFT + 19 gaps of 10 ms.
    assert statistics.median(r.e2e_s for r in records) == pytest.approx(0.050 + 0.190, abs=0.02)
    # Closed loop with C=4 and 16 requests: 4 waves of ~0.24 s.
    assert m.wall_s == pytest.approx(4 * 0.24, rel=0.15)


def test_http_errors_are_counted_not_fatal():
    with FakeServer(FakeTiming(ttft_s=0.005, itl_s=0.001, tokens=4, fail_every=3)) as srv:
        cfg = LoadConfig(base_url=srv.base_url, concurrency=2, requests=9, max_tokens=4)
        m = summarize(run_phase(cfg, builtin_prompts()))
    assert m.completed == 6 and m.failed == 3
    assert m.errors == {"HTTP 500: injected fault": 3}


def test_duration_mode_stops_issuing_after_deadline():
    with FakeServer(FakeTiming(ttft_s=0.01, itl_s=0.005, tokens=10)) as srv:
        cfg = LoadConfig(base_url=srv.base_url, concurrency=2, requests=None, duration_s=0.5, max_tokens=10)
        m = summarize(run_phase(cfg, builtin_prompts()))
    # Each request takes ~55 ms: about 2 × 0.5 / 0.055 ≈ 18 requests.
    assert 10 <= m.completed <= 22
    assert 0.5 <= m.wall_s < 0.5 + 0.2
