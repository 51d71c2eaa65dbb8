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
DONE = b"data: [DONE]\n\n"


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
    raw = ev(delta("hello")) + DONE
    r = parse_stream([raw[:7], raw[7:]], [1.0, 1.5], index=0, issued=0.5, ended=1.6, run_start=0.0)
    assert r.ttft_s == pytest.approx(1.0)
    assert r.output_tokens == 1 and r.token_count_source == "chunks"


def test_without_usage_counts_chunks_and_says_so():
    chunks = [ev(delta("x")), ev(delta("y")) + DONE]
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
        ([ev(ROLE) + DONE], "stream ended without any generated token"),
    ],
)
def test_errors_are_recorded_not_raised(chunks, expected):
    r = parse_stream(chunks, [1.0] * len(chunks), index=0, issued=0.0, ended=1.0, run_start=0.0)
    assert not r.ok and r.error.startswith(expected)


def test_transport_error_wins():
    r = parse_stream([], [], index=0, issued=0.0, ended=1.0, run_start=0.0, error="request timed out")
    assert r.error == "request timed out" and r.e2e_s == pytest.approx(1.0)


def test_stream_cut_without_done_is_an_error_of_its_own_class():
    # a connection reset after one token used to count as a success
    r = parse_stream([ev(ROLE), ev(delta("a"))], [1.0, 1.1], index=0, issued=0.0, ended=1.2, run_start=0.0)
    assert not r.ok and r.error_class == "no_done"
    assert r.error == "stream ended without data: [DONE] (cut short)"
    assert r.content_chunks == 1  # what arrived is still recorded


BAD_EVENTS = [
    ({"choices": "abc"}, "malformed_event", "choices is not a list: 'abc'"),
    ({"choices": [1, 2]}, "malformed_event", "a choice is not an object: 1"),
    ({"choices": [{"delta": "hello"}]}, "malformed_event", "delta is not an object: 'hello'"),
    ({"choices": [{"delta": {"content": 5}}]}, "malformed_event", "delta.content is not a string: 5"),
    ({"choices": [], "usage": 7}, "bad_usage", "usage is not an object: 7"),
    ({"choices": [], "usage": {"completion_tokens": -4641}}, "bad_usage",
     "usage.completion_tokens is not a token count: -4641"),
    ({"choices": [], "usage": {"completion_tokens": True}}, "bad_usage",
     "usage.completion_tokens is not a token count: True"),
    ({"choices": [], "usage": {"completion_tokens": 2.5}}, "bad_usage",
     "usage.completion_tokens is not a token count: 2.5"),
    ({"choices": [], "usage": {"completion_tokens": 10**30}}, "bad_usage",
     f"usage.completion_tokens is not a token count: {10**30}"),
    ({"choices": [], "usage": {"completion_tokens": 3, "prompt_tokens": "11"}}, "bad_usage",
     "usage.prompt_tokens is not a token count: '11'"),
    ({"choices": [], "timings": [1, 2]}, "malformed_event", "timings is not an object: [1, 2]"),
    ([1, 2, 3], "malformed_event", "SSE event is not a JSON object: [1, 2, 3]"),
]


@pytest.mark.parametrize("bad, cls, message", BAD_EVENTS)
def test_each_malformed_field_fails_the_request_with_its_class(bad, cls, message):
    chunks = [ev(delta("a")), ev(delta("b")), ev(bad) + DONE]
    r = parse_stream(chunks, [1.0, 1.1, 1.2], index=0, issued=0.0, ended=1.3, run_start=0.0)
    assert not r.ok
    assert (r.error_class, r.error) == (cls, message)
    assert r.output_tokens == 2 and r.token_count_source == "chunks"  # never the bad count


def test_deeply_nested_json_is_a_malformed_event_not_a_crash():
    deep = b"data: " + b"[" * 200_000 + b"]" * 200_000 + b"\n\n"
    r = parse_stream([ev(delta("a")), deep + DONE], [1.0, 1.1], index=0, issued=0.0, ended=1.2, run_start=0.0)
    assert r.error_class == "malformed_event" and r.error.startswith("malformed SSE event: b'[[[[")


def test_usage_contradicting_the_stream_is_rejected():
    zero = {"choices": [], "usage": {"completion_tokens": 0}}
    r = parse_stream([ev(delta("a")), ev(zero) + DONE], [1.0, 1.1], index=0, issued=0.0, ended=1.2, run_start=0.0)
    assert r.error_class == "bad_usage" and "is fewer than the 1 chunks that carried text" in r.error
    many = {"choices": [], "usage": {"completion_tokens": 500}}
    r = parse_stream([ev(delta("a")), ev(many) + DONE], [1.0, 1.1], index=0, issued=0.0, ended=1.2,
                     run_start=0.0, max_tokens=128)
    assert r.error == "usage.completion_tokens 500 exceeds max_tokens 128"


def test_timings_keep_only_finite_numbers():
    final = {"choices": [], "timings": {"draft_n": 8, "odd": "x", "nested": {"a": 1}, "flag": True}}
    r = parse_stream([ev(delta("a")), ev(final) + DONE], [1.0, 1.1], index=0, issued=0.0, ended=1.2,
                     run_start=0.0)
    assert r.ok and r.server_timings == {"draft_n": 8}


def test_empty_completion_has_its_class():
    r = parse_stream([ev(ROLE) + ev(USAGE | {"usage": {"completion_tokens": 0}}) + DONE], [1.0], index=0,
                     issued=0.0, ended=1.0, run_start=0.0)
    assert r.error_class == "empty_completion"
