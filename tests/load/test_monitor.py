"""The self-monitor: the client reports its own event-loop lag and flags a run it limited."""

from __future__ import annotations

import time

from tokcaliper.load.driver import run_phase
from tokcaliper.load.monitor import LAG_BOUND_S
from tokcaliper.load.prompts import builtin_prompts
from tokcaliper.load.summary import summarize
from tokcaliper.model.metrics import run_scalars
from tokcaliper.model.run import LoadConfig

from .reference_server import RefServer, Timing


def test_a_deliberately_blocked_event_loop_is_flagged():
    def block(index: int) -> None:  # runs on the client's event loop after each request
        if index % 4 == 0:
            time.sleep(0.03)

    with RefServer(Timing(0.02, 0.002, 16)) as srv:
        cfg = LoadConfig(base_url=srv.base_url, concurrency=4, requests=32, max_tokens=16)
        phase = run_phase(cfg, builtin_prompts(), on_request=block)
    m = summarize(phase, client=phase.client)
    c = m.client
    assert c.loop_lag_max_s >= 0.025  # one 30 ms block, seen by the probe
    assert c.loop_lag_s.p99 > LAG_BOUND_S
    assert c.client_limited
    assert any(line.startswith("client event loop lagged p99") and "not resolved" in line for line in c.limits)
    assert run_scalars(m)["client_loop_lag_p99_ms"] == c.loop_lag_s.p99 * 1000
    assert 0 < c.cpu_share < 1.5 and c.cpu_s > 0 and c.loop_lag_s.n > 10
