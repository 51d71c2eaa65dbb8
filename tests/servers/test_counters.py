"""Counter snapshots: parsed with prometheus_client, and when unreadable the reason is kept."""

from __future__ import annotations

import pytest
from aiohttp import web

from tokcaliper.servers.counters import (
    CounterRead,
    counter_delta,
    counters_error,
    parse_metrics,
    read_counters,
    sample_key,
    split_key,
)

LLAMA_TEXT = """# HELP llamacpp:tokens_predicted_total Number of generation tokens processed
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 120
# HELP llamacpp:predicted_tokens_seconds Average generation throughput in tokens/s
# TYPE llamacpp:predicted_tokens_seconds gauge
llamacpp:predicted_tokens_seconds 41.5
"""


def test_parse_metrics_splits_counters_and_gauges():
    counters, gauges = parse_metrics(LLAMA_TEXT)
    assert counters == {"llamacpp:tokens_predicted_total": 120.0}
    assert gauges == {"llamacpp:predicted_tokens_seconds": 41.5}


def test_sample_key_round_trip():
    labels = {"position": "2", "model_name": 'a "b" \\ c'}
    key = sample_key("vllm:x_total", labels)
    assert key == 'vllm:x_total{model_name="a \\"b\\" \\\\ c",position="2"}'
    assert split_key(key) == ("vllm:x_total", labels)
    assert split_key('vllm:x_total{engine="0",position="2"}') == ("vllm:x_total", {"engine": "0", "position": "2"})
    assert split_key("plain_total") == ("plain_total", {})


@pytest.fixture
async def metrics_server():  # type: ignore[no-untyped-def]
    """A tiny server: /ok serves llama.cpp text, /off answers 501 like llama-server without --metrics."""
    state = {"text": LLAMA_TEXT}

    async def metrics(request: web.Request) -> web.Response:
        mode = request.match_info["mode"]
        if mode == "off":
            return web.json_response({"error": {"code": 501, "message": "This server does not support metrics "
                                                "endpoint. Start it with `--metrics`"}}, status=501)
        if mode == "garbage":
            return web.Response(text="this is { not prometheus\n")
        if mode == "trt":  # trtllm-serve: /metrics is JSON iteration stats
            return web.json_response([{"iter": 1, "numActiveRequests": 0}])
        return web.Response(text=state["text"])

    async def prometheus(request: web.Request) -> web.Response:
        if request.match_info["mode"] != "trt":
            return web.Response(status=404, text="Not Found")
        return web.Response(text="# TYPE trtllm_prompt_tokens_total counter\ntrtllm_prompt_tokens_total 1200\n")

    app = web.Application()
    app.router.add_get("/{mode}/metrics", metrics)
    app.router.add_get("/{mode}/prometheus/metrics", prometheus)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", state
    await runner.cleanup()


async def test_read_counters_ok_and_delta(metrics_server):
    import asyncio

    base, state = metrics_server
    before = await asyncio.to_thread(read_counters, base + "/ok")
    state["text"] = LLAMA_TEXT.replace(" 120", " 245")
    after = await asyncio.to_thread(read_counters, base + "/ok")
    assert before.ok and before.error is None and before.gauges["llamacpp:predicted_tokens_seconds"] == 41.5
    assert counter_delta(before, after) == {"llamacpp:tokens_predicted_total": 125.0}
    assert counters_error(before, after) is None


async def test_unreadable_metrics_say_why(metrics_server):
    import asyncio

    base, _ = metrics_server
    off = await asyncio.to_thread(read_counters, base + "/off")
    assert not off.ok and "HTTP 501" in off.error and "--metrics" in off.error
    bad = await asyncio.to_thread(read_counters, base + "/garbage")
    assert not bad.ok and "not Prometheus text" in bad.error
    ok = await asyncio.to_thread(read_counters, base + "/ok")
    assert counter_delta(ok, off) == {}
    reason = counters_error(ok, off)
    assert reason.startswith("after the run: GET ") and "HTTP 501" in reason


async def test_trtllm_serve_is_read_on_its_own_path(metrics_server):
    import asyncio

    base, _ = metrics_server
    trt = await asyncio.to_thread(read_counters, base + "/trt")
    assert trt.ok and trt.values == {"trtllm_prompt_tokens_total": 1200.0}
    off = await asyncio.to_thread(read_counters, base + "/off")  # both paths fail: /metrics's reason is kept
    assert not off.ok and "/off/metrics → HTTP 501" in off.error


def test_refused_connection_says_why():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    read = read_counters(f"http://127.0.0.1:{port}", timeout_s=2)
    assert read.values is None and "ConnectError" in read.error
    assert counters_error(read, read).count("failed") == 2


def test_counters_going_backwards_is_a_reason():
    before = CounterRead({"a_total": 10.0, "b_total": 1.0})
    after = CounterRead({"a_total": 3.0, "b_total": 2.0})
    assert counters_error(before, after) == "counters went backwards (server restarted?): a_total"
    assert counters_error(CounterRead({}), after) == "before the run: /metrics lists no counters"


def test_series_created_during_the_run_counts_from_zero():
    before = CounterRead({"llamacpp:spec_decode_num_drafts_total": 0.0, "gone_total": 4.0})
    after = CounterRead({"llamacpp:spec_decode_num_drafts_total": 13.0,
                         'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"}': 13.0})
    assert counter_delta(before, after) == {
        "llamacpp:spec_decode_num_drafts_total": 13.0,
        'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"}': 13.0}
    assert counter_delta(CounterRead(None, error="x"), after) == {}
