"""Property-based tests (hypothesis): no server bytes crash the SSE parser or the response validation.

Whatever a server sends — random bytes in random network chunks, any JSON
value as an event, chunk objects whose fields have any type — parsing
returns a record (an error of a documented class, or a success whose counts
are sound) and the validator raises nothing but its own StreamError.
Derandomised and bounded by the ``tokcaliper`` hypothesis profile
(tests/conftest.py: fixed seed, 300 examples, no deadline); ``scripts/fuzz.sh``
runs them with random seeds and 10⁴ examples each.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokcaliper.load.sse import MAX_TOKEN_COUNT, StreamError, parse_stream, read_event
from tokcaliper.model.run import ERROR_CLASSES

SETTINGS = settings(suppress_health_check=[HealthCheck.too_slow])  # examples, seed: the profile (conftest)

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
# Chunk objects near the real shape, each field of any type.
deltas = st.one_of(json_values, st.fixed_dictionaries({}, optional={
    "content": json_values | st.text(max_size=10), "role": json_values,
    "reasoning_content": json_values | st.text(max_size=10)}))
choices = st.one_of(json_values, st.lists(st.one_of(json_values, st.fixed_dictionaries(
    {}, optional={"index": json_values, "delta": deltas, "finish_reason": json_values})), max_size=3))
usages = st.one_of(json_values, st.fixed_dictionaries({}, optional={
    "completion_tokens": json_values | st.integers(-10, 10**12),
    "prompt_tokens": json_values | st.integers(-10, 10**12)}))
events = st.fixed_dictionaries({}, optional={
    "choices": choices, "usage": usages, "timings": json_values, "error": json_values})


def check_record(r, max_tokens=None) -> None:
    if r.ok:
        assert r.error_class is None
        assert r.content_chunks >= 1 and r.ttft_s is not None
        assert type(r.output_tokens) is int and 0 < r.output_tokens <= MAX_TOKEN_COUNT
        if max_tokens is not None and r.token_count_source == "usage":
            assert r.output_tokens <= max_tokens
        assert r.prompt_tokens is None or (type(r.prompt_tokens) is int and r.prompt_tokens >= 0)
        assert len(r.itl_s) == r.content_chunks - 1
    else:
        assert r.error_class in ERROR_CLASSES and r.error
    json.dumps(r.model_dump())  # storable


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)])]


@SETTINGS
@given(st.lists(st.binary(max_size=200), max_size=8))
def test_random_bytes_never_crash(chunks):
    r = parse_stream(chunks, [float(i) for i in range(len(chunks))], index=0, issued=0.0,
                     ended=float(len(chunks)), run_start=0.0)
    check_record(r)


@SETTINGS
@given(st.lists(events | json_values, min_size=1, max_size=6), st.booleans(),
       st.lists(st.integers(0, 10**6), max_size=5), st.integers(1, 64))
def test_any_events_give_a_sound_record(evs, done, cuts, max_tokens):
    data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in evs)
    if done:
        data += b"data: [DONE]\n\n"
    chunks = split(data, cuts)
    r = parse_stream(chunks, [1.0 + i for i in range(len(chunks))], index=0, issued=0.0,
                     ended=10.0, run_start=0.0, max_tokens=max_tokens)
    check_record(r, max_tokens)
    if not done:
        assert not r.ok


@SETTINGS
@given(events | json_values)
def test_validation_raises_only_its_own_error(event):
    try:
        has_text, usage, timings = read_event(event)
    except StreamError as e:
        assert e.error_class in ERROR_CLASSES
        return
    assert isinstance(has_text, bool)
    for v in (usage or {}).values():
        assert v is None or (type(v) is int and 0 <= v <= MAX_TOKEN_COUNT)
    assert timings is None or all(type(v) in (int, float) for v in timings.values())
