"""Wrong numbers believed (issue 22, items 9, 11, 25): figures that overflow, rates over
zero-length intervals, streams that contradict their own usage, verdicts that contradict
their own figures. Each test fails on the code before its fix.
"""

from __future__ import annotations

import sys

import pytest

from tokcaliper import numbers


# ---------------------------------------------------------------- 25: the formatter at the float's edge
@pytest.mark.parametrize("x", [1.7975000000000001e308, sys.float_info.max, -sys.float_info.max, 9.9999e307])
@pytest.mark.parametrize("sig", [1, 2, 3, 4, 6])
def test_num_near_the_largest_float_does_not_overflow(x, sig):
    """Rounding 1.7975e308 to 4 digits gives 1.798e308, past the largest float: the
    exponent is read from the text, never from a float (was OverflowError)."""
    text = numbers.num(x, sig)
    assert text == f"{x:.{sig - 1}e}"


def test_num_of_the_reported_value():
    assert numbers.num(1.7975000000000001e308, 4) == "1.798e+308"


@pytest.mark.parametrize("fn", [numbers.ratio, numbers.statistic, numbers.seconds, numbers.p_value,
                                lambda x: numbers.with_uncertainty(x, x / 10, n=3),
                                lambda x: numbers.quantity(x, "tok/s")])
def test_every_formatter_takes_the_largest_float(fn):
    assert fn(sys.float_info.max)


def test_percent_of_a_huge_fraction_is_infinite_not_inf_text():
    """100 × 1e307 overflows to inf: printed as the formatter's ∞, not Python's 'inf'."""
    assert "inf" not in numbers.percent(1e307)
    assert numbers.percent(sys.float_info.max) == "∞%"


# ---------------------------------------------------------------- 9: streams that contradict their usage
def _bench_fake(fault: str):  # type: ignore[no-untyped-def]
    from tokcaliper.load.driver import run_phase
    from tokcaliper.load.prompts import builtin_prompts
    from tokcaliper.load.summary import summarize
    from tokcaliper.model.run import LoadConfig

    from tests.load.fake_server import FakeServer, FakeTiming

    with FakeServer(FakeTiming(ttft_s=0.005, itl_s=0.003, tokens=8, fault=fault)) as srv:
        cfg = LoadConfig(base_url=srv.base_url, concurrency=2, requests=4, warmup=0, max_tokens=8)
        records = list(run_phase(cfg, builtin_prompts()))
    return records, summarize(records)


@pytest.mark.parametrize("fault", ["one_chunk", "empty_then_one"])
def test_text_at_one_instant_has_no_decode_rate(fault):
    """All 8 tokens in one text chunk (after empty ones or not): the decode interval is
    zero-length, so decode rate and TPOT are undefined, not 7 tokens over the stream's tail
    (was 307.6 tok/s, TPOT 7.2 ms; after empty chunks 49,115 tok/s)."""
    from tokcaliper.load.summary import decode_rate

    records, m = _bench_fake(fault)
    assert all(r.ok and r.output_tokens == 8 and r.content_chunks == 1 for r in records)
    assert [decode_rate(r) for r in records] == [None] * 4
    assert m.per_stream_decode_tok_s_mean is None and m.per_stream_decode_tok_s_median is None
    assert m.tpot_s.n == 0 and m.tpot_s.mean is None
    assert m.stream_warnings == [
        "4 of 4 completed requests delivered all their text at one instant (one text chunk, or every "
        "text chunk in one read): their decode rate and TPOT are undefined and left out"]
    assert m.aggregate_output_tok_s is not None and m.aggregate_output_tok_s > 0  # wall time > 0


def test_more_text_chunks_than_usage_tokens_fails_the_request():
    """8 chunks that each carried text, usage says 1 token: impossible (a chunk of text is at
    least one token), so the request fails with ``bad_usage`` (was: 1 token per request)."""
    records, m = _bench_fake("chunks_over_usage")
    assert [r.error_class for r in records] == ["bad_usage"] * 4
    assert records[0].error == ("usage.completion_tokens 1 is fewer than the 8 chunks that carried "
                                "text (each carries at least one token)")
    assert (m.completed, m.failed, m.output_tokens) == (0, 4, 0)


def test_decode_rate_over_a_zero_length_interval_is_undefined():
    from tokcaliper.load.summary import decode_rate
    from tokcaliper.model.run import RequestRecord

    same = RequestRecord(index=0, start_s=0.0, ttft_s=0.1, e2e_s=0.2, output_tokens=8, content_chunks=3,
                         first_token_s=0.1, last_token_s=0.1, token_count_source="usage", itl_s=[0.0, 0.0])
    assert decode_rate(same) is None
    assert decode_rate(same.model_copy(update={"last_token_s": 0.15})) == pytest.approx(70.0)
    # a record stored before the token stamps existed: the chunk count alone decides
    old = same.model_copy(update={"first_token_s": None, "last_token_s": None, "content_chunks": 1})
    assert decode_rate(old) is None
    assert decode_rate(old.model_copy(update={"e2e_s": 0.1, "content_chunks": 2})) is None  # E2E = TTFT


def test_many_tokens_per_chunk_flags_the_run():
    """Usage counting more tokens per text chunk than a speculative step can deliver (bound 16):
    the run says its ITL is between bunches of tokens, with the arithmetic."""
    from tokcaliper.load.summary import MAX_TOKENS_PER_CHUNK, summarize
    from tokcaliper.model.run import RequestRecord

    def rec(i: int, tokens: int, chunks: int) -> RequestRecord:
        return RequestRecord(index=i, start_s=0.0, ttft_s=0.1, e2e_s=1.0, output_tokens=tokens,
                             content_chunks=chunks, first_token_s=0.1, last_token_s=0.9,
                             token_count_source="usage", itl_s=[0.8 / (chunks - 1)] * (chunks - 1))

    assert MAX_TOKENS_PER_CHUNK == 16
    assert summarize([rec(0, 32, 2), rec(1, 32, 2)]).stream_warnings == []  # exactly 16: within
    flagged = summarize([rec(0, 64, 2), rec(1, 36, 2)]).stream_warnings
    assert flagged == ["usage counts 25.0 tokens per text chunk (100 tokens in 4 chunks; bound 16): the "
                       "server sends tokens in bunches, so ITL is the gap between bunches, not tokens"]


# ---------------------------------------------------------------- 11: verdicts that contradict their own figures
def test_analyze_refuses_values_that_overflow(cli, tmp_path):
    """Values near the largest float: the mean and the squares overflow, so the verdict
    would read "mean ∞ … p = 5.0e-05 ≥ 0.025". Refused, naming the value and the bound."""
    csv = tmp_path / "big.csv"
    csv.write_text("tok_s\n" + "".join(f"{1.7e308 - i * 1e305!r}\n" for i in range(10)), encoding="utf-8")
    code, out, err = cli("analyze", "--csv", str(csv), "--value", "tok_s")
    assert code == 2, out + err
    assert err.startswith("tokcaliper: error: tok_s: 1.7e+308 at position 1 is beyond ±1e+100"), err
    assert err.count("\n") == 1 and "∞" not in out + err and "Warning" not in err


def test_the_bound_still_takes_large_finite_figures(cli, tmp_path):
    csv = tmp_path / "ok.csv"
    csv.write_text("tok_s\n" + "".join(f"{1e99 * (1 + i / 100)!r}\n" for i in range(10)), encoding="utf-8")
    code, out, err = cli("analyze", "--csv", str(csv), "--value", "tok_s", "--json")
    assert code == 0, err
    assert "Infinity" not in out and "NaN" not in out


def test_require_finite_values_bounds_the_magnitude():
    from tokcaliper.errors import InputError
    from tokcaliper.stats.describe import MAX_MAGNITUDE, require_finite_values

    assert MAX_MAGNITUDE == 1e100
    assert list(require_finite_values([-1e100, 1e100])) == [-1e100, 1e100]
    with pytest.raises(InputError, match=r"arm a: -1e\+101 at position 2 is beyond ±1e\+100"):
        require_finite_values([1.0, -1e101], "arm a")


def test_spec_table_refuses_an_infinite_al(cli, tmp_path):
    """AL = inf (YAML .inf, JSON Infinity) was accepted: "×∞ tokens per verified position"."""
    f = tmp_path / "t.json"
    f.write_text('{"2": 2.5, "3": Infinity}', encoding="utf-8")
    code, out, err = cli("spec", "table", str(f))
    assert code == 2, out
    assert err.startswith("tokcaliper: error: ") and "3" in err and "finite" in err, err
    assert "∞" not in out


def test_spec_table_best_k_leaves_out_impossible_rows():
    """AL 5 at k = 2 is impossible (> k + 1 = 3): it was picked as best k by AL and by AL/(k+1)."""
    from tokcaliper.specdec.table import KInput, window_table

    t = window_table([KInput(k=2, al=5.0), KInput(k=3, al=2.9), KInput(k=5, al=3.2), KInput(k=7, al=0.5)])
    by_k = {r.k: r for r in t.rows}
    assert by_k[2].impossible and by_k[7].impossible and not by_k[3].impossible
    assert "AL 5 > k + 1 = 3: impossible" in by_k[2].notes[0]
    assert (t.best_k_by_al, t.best_k_by_al_per_position) == (5, 3)
    assert by_k[2].relative_to_best is None and by_k[7].relative_to_best is None
    assert any("k=2, k=7 left out of the best k: impossible AL" in line for line in t.arithmetic)
    assert not any("over k=2" in line or "over k=7" in line for line in t.arithmetic)


def test_spec_table_with_only_impossible_rows_has_no_best():
    from tokcaliper.specdec.table import KInput, window_table

    t = window_table([KInput(k=2, al=5.0), KInput(k=3, al=7.5)])
    assert (t.best_k_by_al, t.best_k_by_al_per_position, t.warnings) == (None, None, [])
