"""The client's own error against a reference server of known timing, beside the floor.

The reference server (reference_server.py) runs in its own process and logs,
on the host's monotonic clock, when it parsed each request and wrote each
token: that log is the truth. The floor (floor_client.py) is the least a
client can add on this machine; tokcaliper must stay within 2× of it.
These machines are shared, so each comparison interleaves repetitions and
compares medians.
"""

from __future__ import annotations

import asyncio
import statistics

import pytest

from tokcaliper.load.driver import run_phase
from tokcaliper.load.pool import KNOWN
from tokcaliper.load.prompts import builtin_prompts
from tokcaliper.load.stamped import kernel_stamps_work
from tokcaliper.load.summary import summarize
from tokcaliper.model.run import LoadConfig

from .floor_client import floor_run
from .reference_server import RefServer, Timing, emission_errors

TIMING = Timing(ttft_s=0.050, itl_s=0.005, tokens=64)


def _truth_ttft(entry: dict) -> float:
    return entry["written"][0] - entry["parsed"]


def _tokcaliper_error(srv: RefServer, concurrency: int, salt: str) -> float:
    cfg = LoadConfig(base_url=srv.base_url, concurrency=concurrency, requests=3 * concurrency,
                     warmup=concurrency, max_tokens=TIMING.tokens, prompt_salt=salt)
    run_phase(cfg, builtin_prompts(), warmup=True)
    srv.truth()
    records = run_phase(cfg, builtin_prompts())
    by_tag = {e["tag"]: e for e in srv.truth()}
    assert all(r.ok for r in records)
    return statistics.mean(r.ttft_s - _truth_ttft(by_tag[f"{salt}.{r.index}"]) for r in records)


def _floor_error(srv: RefServer, concurrency: int, tag: str) -> float:
    recs = asyncio.run(floor_run("127.0.0.1", srv.port, concurrency=concurrency, requests=3 * concurrency,
                                 max_tokens=TIMING.tokens, tag=tag))
    by_tag = {e["tag"]: e for e in srv.truth()}
    return statistics.mean((r["stamps"][0] - r["sent"]) - _truth_ttft(by_tag[r["tag"]]) for r in recs)


@pytest.mark.timing
def test_reference_server_keeps_its_schedule():
    """Its own emission error (token written − scheduled) is measured, and small."""
    with RefServer(TIMING, nice=-5) as srv:
        cfg = LoadConfig(base_url=srv.base_url, concurrency=4, requests=16, max_tokens=TIMING.tokens)
        assert all(r.ok for r in run_phase(cfg, builtin_prompts()))
        truth = srv.truth()
    errors = emission_errors(truth, TIMING)
    assert len(errors) == 16 * TIMING.tokens
    assert min(errors) >= 0  # never early
    # Without the spin selector, epoll's 1 ms rounding puts the median near 0.5 ms.
    assert statistics.median(errors) < 0.25e-3, statistics.median(errors)


@pytest.mark.timing
def test_ttft_error_at_concurrency_16_is_within_twice_the_floor():
    tok, floor = [], []
    with RefServer(TIMING, nice=-5) as srv:
        for rep in range(3):  # interleaved
            tok.append(_tokcaliper_error(srv, 16, f"t{rep}"))
            floor.append(_floor_error(srv, 16, f"f{rep}"))
    t, f = statistics.median(tok), statistics.median(floor)
    assert t > 0 and f > 0  # both really measured something (a client cannot be early)
    # 2× the floor, plus 0.3 ms for scheduler jitter when the floor itself is tiny.
    assert t <= 2 * f + 0.3e-3, (tok, floor)


@pytest.mark.parametrize("closes", [False, True])
def test_keep_alive_is_learned_per_server(closes):
    """A server that keeps connections gets them reused; one that closes them (like
    llama-server, despite its Keep-Alive header) gets a fresh one each time, and no
    request fails."""
    with RefServer(Timing(0.005, 0.001, 8, close_after_stream=closes)) as srv:
        KNOWN.pop(f"127.0.0.1:{srv.port}", None)
        cfg = LoadConfig(base_url=srv.base_url, concurrency=4, requests=48, warmup=4, max_tokens=8)
        run_phase(cfg, builtin_prompts(), warmup=True)
        phase = run_phase(cfg, builtin_prompts())
    m = summarize(phase, client=phase.client)
    assert m.completed == 48 and m.failed == 0, m.errors
    assert m.client.server_keeps_alive is (not closes)
    if closes:
        assert m.client.requests_reused == 0 and m.client.connections_opened == 48
    else:
        assert m.client.requests_reused == 48 - 4 and m.client.connections_opened == 4
    # Arrivals were stamped by the kernel wherever the host gives stamps.
    if kernel_stamps_work():
        assert phase.client.reads_kernel_stamped > 0 and phase.client.reads_loop_stamped == 0
    else:
        assert phase.client.reads_kernel_stamped == 0 and phase.client.reads_loop_stamped > 0
    # Every request carries its whole timeline, in order.
    for r in phase:
        # (written_s is our clock after send() returned; on loopback the
        # kernel-stamped answer can arrive before that return.)
        assert r.scheduled_s <= r.start_s <= r.first_byte_s <= r.headers_s
        assert r.start_s <= r.written_s
        assert r.headers_s <= r.first_token_s <= r.last_token_s <= r.start_s + r.e2e_s
        assert r.connected_s <= r.start_s and r.connect_s > 0
        # The first wave goes out on connections opened before the clock.
        assert r.connection_reused is (not closes and r.index >= 4 + 4)


def test_several_server_processes_share_one_port_and_their_truths_merge():
    # benchmarks/scale_out.py runs the server as several processes so that it is not the limit.
    fast = Timing(ttft_s=0.005, itl_s=0.001, tokens=4)
    with RefServer(fast, processes=2) as srv:
        assert len(srv.procs) == 2 and len(set(srv.controls)) == 2 and srv.port not in srv.controls
        cfg = LoadConfig(base_url=srv.base_url, concurrency=32, requests=64, max_tokens=4, prompt_salt="m")
        records = run_phase(cfg, builtin_prompts())
        truth = srv.truth()
        assert srv.truth() == []  # each process's log was taken and cleared
    assert all(r.ok for r in records)
    assert sorted(e["tag"] for e in truth) == sorted(f"m.{i}" for i in range(64))  # each request once
    # 32 connections dealt by a hash of their ports: both processes served (all on one: p = 2^-31).
    served = {p: sum(1 for e in truth if e["process"] == p) for p in (0, 1)}
    assert min(served.values()) > 0, served
    assert [e["parsed"] for e in truth] == sorted(e["parsed"] for e in truth)  # one clock, merged in order
    assert all(len(e["written"]) == 4 for e in truth)
