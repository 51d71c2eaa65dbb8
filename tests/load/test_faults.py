"""One test per injected server fault: the stored record's class and message, and the run's counts.

The fault server (fake_server.py) misbehaves on request; tokcaliper must turn
every fault into an error of its own class on that request (never a crash,
never a success) and keep measuring.
"""

from __future__ import annotations

import time

import pytest

from tokcaliper.load.driver import run_phase
from tokcaliper.load.prompts import builtin_prompts
from tokcaliper.load.summary import error_rate_reason, summarize
from tokcaliper.model.run import ERROR_CLASSES, LoadConfig

from .fake_server import FakeServer, FakeTiming

N = 4


def run(timing: FakeTiming, **cfg_fields):
    with FakeServer(timing) as srv:
        cfg = LoadConfig(base_url=srv.base_url, concurrency=2, requests=N, warmup=0, max_tokens=8,
                         **cfg_fields)
        t0 = time.perf_counter()
        phase = run_phase(cfg, builtin_prompts())
        run.elapsed = time.perf_counter() - t0
    return list(phase), summarize(phase)


def fast(**kw) -> FakeTiming:
    return FakeTiming(ttft_s=0.005, itl_s=0.002, tokens=8, **kw)


MALFORMED = [
    ("garbage", "malformed_event", "malformed SSE event: b'{this is not json'"),
    ("choices_not_list", "malformed_event", "choices is not a list: 'abc'"),
    ("choices_not_objects", "malformed_event", "a choice is not an object: 1"),
    ("delta_string", "malformed_event", "delta is not an object: 'hello'"),
    ("content_number", "malformed_event", "delta.content is not a string: 5"),
    ("usage_number", "bad_usage", "usage is not an object: 7"),
    ("usage_negative", "bad_usage", "usage.completion_tokens is not a token count: -4641"),
    ("usage_true", "bad_usage", "usage.completion_tokens is not a token count: True"),
    ("usage_huge", "bad_usage", f"usage.completion_tokens is not a token count: {10**30}"),
    ("usage_float", "bad_usage", "usage.completion_tokens is not a token count: 3.5"),
    ("timings_list", "malformed_event", "timings is not an object: [1, 2, 3]"),
    ("deep_json", "malformed_event", "malformed SSE event: b'{\"a\":{\"a\":"),
    ("done_only", "empty_completion", "stream ended without any generated token"),
    ("empty", "empty_completion", "stream ended without any generated token"),
    ("no_done", "no_done", "stream ended without data: [DONE] (cut short)"),
]


@pytest.mark.parametrize("fault, cls, message", MALFORMED)
def test_malformed_stream_fails_each_request_with_its_class(fault, cls, message):
    records, m = run(fast(fault=fault))
    assert [r.error_class for r in records] == [cls] * N
    assert all(r.error.startswith(message) for r in records), records[0].error
    assert (m.completed, m.failed, m.output_tokens) == (0, N, 0)
    assert m.error_classes == {cls: N}
    assert error_rate_reason(m).startswith(f"{N} of {N} measured requests failed (100 % > 10 % allowed)")


def test_every_other_request_malformed_keeps_the_good_ones():
    records, m = run(fast(fault="usage_negative", fault_every=2))
    assert (m.completed, m.failed) == (N // 2, N // 2)
    assert m.output_tokens == (N // 2) * 8  # never −4641
    assert m.aggregate_output_tok_s > 0
    assert sorted(r.error_class or "ok" for r in records) == ["bad_usage", "bad_usage", "ok", "ok"]


@pytest.mark.parametrize("status", [429, 500, 503])
@pytest.mark.parametrize("retry_after", [None, "7"])
def test_http_error_status(status, retry_after):
    records, m = run(fast(fault=f"http_{status}", retry_after=retry_after))
    expected = f"HTTP {status}: injected {status}: server busy"
    if retry_after:
        expected += " (Retry-After: 7)"
    assert [(r.error_class, r.error) for r in records] == [("http_status", expected)] * N
    assert m.errors == {expected: N} and m.failed == N


def test_close_mid_stream_is_not_a_success():
    records, m = run(fast(fault="close_mid_stream"))
    assert {r.error_class for r in records} == {"closed_mid_stream"}
    assert all(r.error.startswith("connection closed mid-response") for r in records)
    assert all(r.content_chunks == 2 for r in records)  # what arrived is kept
    assert m.completed == 0 and m.output_tokens == 0


def test_connection_reset_after_tokens_is_not_a_success():
    records, m = run(fast(fault="reset"))
    assert {r.error_class for r in records} == {"closed_mid_stream"}
    assert m.completed == 0 and m.failed == N


def test_headers_that_never_come_time_out_at_the_first_token_timeout():
    records, m = run(fast(fault="no_headers", stall_s=3.0), first_token_timeout_s=0.3)
    assert run.elapsed < 2  # two waves of 0.3 s, not a hang
    assert {r.error_class for r in records} == {"timeout_first_token"}
    assert records[0].error == "no answer within 0.3 s of sending (first-token timeout)"
    assert all(0.3 <= r.e2e_s < 1.0 for r in records)


def test_stall_before_first_token_times_out():
    records, _ = run(fast(fault="stall_first", stall_s=3.0), first_token_timeout_s=0.3)
    assert {r.error_class for r in records} == {"timeout_first_token"}
    assert all(r.headers_s is not None for r in records)  # headers came, the stream did not


def test_stall_between_tokens_times_out():
    records, m = run(fast(fault="stall_between", stall_s=3.0), token_timeout_s=0.3)
    assert {r.error_class for r in records} == {"timeout_between_tokens"}
    assert records[0].error == "stream stalled: no data for 0.3 s (token timeout)"
    assert all(r.content_chunks == 1 and 0.3 <= r.e2e_s < 1.0 for r in records)


def test_total_timeout():
    slow = FakeTiming(ttft_s=0.005, itl_s=0.1, tokens=8)
    records, _ = run(slow, request_timeout_s=0.35)
    assert {r.error_class for r in records} == {"timeout_total"}
    assert records[0].error == "request timed out after 0.35 s (request timeout)"


def test_every_class_the_fault_server_produces_is_documented():
    produced = {c for _, c, _ in MALFORMED} | {"http_status", "closed_mid_stream", "timeout_first_token",
                                                 "timeout_between_tokens", "timeout_total"}
    assert produced <= set(ERROR_CLASSES)


def test_experiment_load_spec_carries_the_timeouts_and_the_error_rate():
    from pydantic import ValidationError

    from tokcaliper.experiment.spec import LoadSpec

    spec = LoadSpec(first_token_timeout_s=5, token_timeout_s=2, max_error_rate=0.2)
    cfg = spec.to_load_config("http://127.0.0.1:1")
    assert (cfg.first_token_timeout_s, cfg.token_timeout_s) == (5, 2)
    assert LoadSpec().max_error_rate == 0.10
    for bad in ({"token_timeout_s": 0}, {"first_token_timeout_s": float("inf")}, {"max_error_rate": 1.0}):
        with pytest.raises(ValidationError):
            LoadSpec(**bad)
