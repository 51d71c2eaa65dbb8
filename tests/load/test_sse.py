"""parse_stream: timing and token counting from raw SSE bytes."""

import json

import pytest

from tokcaliper.load.sse import parse_stream


def ev(obj) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def delta(text: str) -> dict:
    return {"choices": [{"index": 0, "delta": {"content": text}}]}


ROLE = {"choices": [{"index": 0, "delta": {"role": "assistant"}}]}
USAGE = {"choices": [], "usage": {"completion_tokens": 3, "prompt_tokens": 11}}


def test_ttft_itl_e2e_from_arrival_times():
    chunks = [ev(ROLE), ev(delta("a")), ev(delta("b")), ev(delta("c")) + ev(USAGE) + b"data: [DONE]\n\n"]
    stamps = [10.05, 10.10, 10.13, 10.20]
    r = parse_stream(chunks, stamps, index=4, issued=10.0, ended=10.21, run_start=9.0)
    assert r.ok
    assert r.start_s == pytest.approx(1.0)
    assert r.ttft_s == pytest.approx(0.10)  # role-only chunk does not count
    assert r.itl_s == pytest.approx([0.03, 0.07])
    assert r.e2e_s == pytest.approx(0.21)
    assert r.output_tokens == 3 and r.token_count_source == "usage"
    assert r.prompt_tokens == 11 and r.content_chunks == 3


def test_event_split_across_chunks_takes_completing_chunk_time():
    raw = ev(delta("hello"))
    r = parse_stream([raw[:7], raw[7:]], [1.0, 1.5], index=0, issued=0.5, ended=1.6, run_start=0.0)
    assert r.ttft_s == pytest.approx(1.0)
    assert r.output_tokens == 1 and r.token_count_source == "chunks"


def test_without_usage_counts_chunks_and_says_so():
    chunks = [ev(delta("x")), ev(delta("y"))]
    r = parse_stream(chunks, [1.0, 2.0], index=0, issued=0.0, ended=2.0, run_start=0.0)
    assert r.output_tokens == 2 and r.token_count_source == "chunks"


def test_reasoning_content_counts_as_generated():
    chunks = [ev({"choices": [{"delta": {"reasoning_content": "hmm"}}]}), ev(delta("ok"))]
    r = parse_stream(chunks, [1.0, 2.0], index=0, issued=0.0, ended=2.0, run_start=0.0)
    assert r.ttft_s == pytest.approx(1.0) and r.content_chunks == 2


def test_llama_cpp_timings_are_kept():
    final = {"choices": [], "usage": {"completion_tokens": 1},
             "timings": {"draft_n": 8, "draft_n_accepted": 8}}
    r = parse_stream([ev(delta("a")), ev(final)], [1.0, 1.1], index=0, issued=0.0, ended=1.2, run_start=0.0)
    assert r.server_timings == {"draft_n": 8, "draft_n_accepted": 8}


@pytest.mark.parametrize(
    "chunks, expected",
    [
        ([ev({"error": {"message": "context full"}})], "server error event: context full"),
        ([b"data: {not json\n\n"], "malformed SSE event"),
        ([ev(ROLE)], "stream ended without any generated token"),
    ],
)
def test_errors_are_recorded_not_raised(chunks, expected):
    r = parse_stream(chunks, [1.0] * len(chunks), index=0, issued=0.0, ended=1.0, run_start=0.0)
    assert not r.ok and r.error.startswith(expected)


def test_transport_error_wins():
    r = parse_stream([], [], index=0, issued=0.0, ended=1.0, run_start=0.0, error="request timed out")
    assert r.error == "request timed out" and r.e2e_s == pytest.approx(1.0)
