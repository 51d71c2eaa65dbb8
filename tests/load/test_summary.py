"""summarize: per-run metrics from request records."""

import pytest

from tokcaliper.load.summary import decode_rate, summarize
from tokcaliper.model.metrics import run_scalars
from tokcaliper.model.run import RequestRecord


def rec(i, start, ttft, e2e, tokens, warmup=False, error=None, itl=()):
    return RequestRecord(index=i, start_s=start, ttft_s=ttft, e2e_s=e2e, output_tokens=tokens,
                         token_count_source="usage", warmup=warmup, error=error, itl_s=list(itl))


def test_aggregate_throughput_is_tokens_over_wall_time():
    records = [
        rec(0, 0.0, 0.1, 1.1, 11, warmup=True),
        rec(1, 0.0, 0.2, 2.2, 21, itl=[0.1] * 20),
        rec(2, 0.5, 0.3, 2.5, 23, itl=[0.1] * 22),  # ends at 3.0
        rec(3, 1.0, None, 0.5, 0, error="HTTP 500: boom"),
    ]
    m = summarize(records)
    assert m.excluded_warmup == 1 and m.completed == 2 and m.failed == 1
    assert m.wall_s == pytest.approx(3.0)
    assert m.output_tokens == 44
    assert m.aggregate_output_tok_s == pytest.approx(44 / 3.0)
    assert m.request_throughput_rps == pytest.approx(2 / 3.0)
    assert m.per_stream_decode_tok_s_mean == pytest.approx(((20 / 2.0) + (22 / 2.2)) / 2)
    assert m.ttft_s.p50 == pytest.approx(0.25)
    assert m.itl_s.n == 42 and m.itl_s.mean == pytest.approx(0.1)
    assert m.errors == {"HTTP 500: boom": 1}
    assert m.token_count_source == "usage"
    s = run_scalars(m)
    assert s["ttft_p50_ms"] == pytest.approx(250.0)


def test_decode_rate_needs_two_tokens():
    assert decode_rate(rec(0, 0, 0.1, 0.2, 1)) is None
    assert decode_rate(rec(0, 0, 0.1, 1.1, 11)) == pytest.approx(10.0)


def test_empty_run():
    m = summarize([])
    assert m.completed == 0 and m.aggregate_output_tok_s is None and m.ttft_s.n == 0
