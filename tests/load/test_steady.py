"""The steady-state window from per-request timelines: exact windows on synthetic runs."""

from __future__ import annotations

import pytest

from tokcaliper.experiment.spec import LoadSpec
from tokcaliper.errors import InputError
from tokcaliper.load.steady import in_flight_steps, steady_window
from tokcaliper.load.summary import summarize
from tokcaliper.model.metrics import run_scalars
from tokcaliper.model.run import RequestRecord


def rec(i, start, end, tokens=0, ttft=None, itl=None, warmup=False):
    """A request in flight over [start, end); with tokens, one chunk per token from start + ttft."""
    if tokens:
        gap = (end - start - ttft) / (tokens - 1) if tokens > 1 else 0.0
        itl = [gap] * (tokens - 1) if itl is None else itl
    return RequestRecord(index=i, start_s=start, e2e_s=end - start, ttft_s=ttft, output_tokens=tokens,
                         itl_s=itl or [], token_count_source="usage", warmup=warmup)


# In flight: [0,1) 1, [1,2) 2, [2,3) 3, [3,4) 4, [4,8) 3, [8,9) 2, [9,10) 1.
STAIRS = [rec(0, 0, 10), rec(1, 1, 9), rec(2, 2, 8), rec(3, 3, 4)]


def test_in_flight_steps():
    assert in_flight_steps(STAIRS) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 3), (8, 2), (9, 1), (10, 0)]
    # Half-open intervals: one request ending as the next starts is one in flight, not two.
    assert in_flight_steps([rec(0, 0, 1), rec(1, 1, 2)]) == [(0, 1), (1, 1), (2, 0)]


@pytest.mark.parametrize("share, window, peak", [
    (0.75, (2, 8), 4),   # threshold 3: from the first 3 in flight to the last
    (0.9, (3, 4), 4),    # threshold 3.6: only while all 4 are in flight
    (0.5, (1, 9), 4),    # threshold 2
    (0.25, (0, 10), 4),  # threshold 1: the whole run
])
def test_exact_window_on_a_staircase(share, window, peak):
    w = steady_window(STAIRS, share)
    assert (w.start_s, w.end_s, w.length_s, w.peak) == (*window, window[1] - window[0], peak)
    assert w.threshold == share * peak and w.at_threshold_share == 1.0


def test_dips_inside_the_window_stay_in_it_and_are_reported():
    # Two closed-loop streams: stream B is idle over [4, 5) between its requests.
    runs = [rec(0, 0, 10), rec(1, 1, 4), rec(2, 5, 9)]
    w = steady_window(runs, 0.9)  # peak 2, threshold 1.8
    assert (w.start_s, w.end_s) == (1, 9)
    assert w.at_threshold_share == pytest.approx(7 / 8)


def test_figures_inside_the_window_leave_ramp_up_and_drain_out():
    # Closed loop of 2 streams, 1 s ttft then 10 tokens over 1 s each …
    runs = [
        rec(0, 0.0, 2.0, tokens=10, ttft=1.0),   # ramp-up alone: 1 in flight over [0, 1)
        rec(1, 1.0, 3.0, tokens=10, ttft=1.0),
        rec(2, 2.0, 4.0, tokens=10, ttft=0.5),
        rec(3, 3.0, 7.0, tokens=10, ttft=3.0),   # drain alone over [4, 7)
    ]
    w = steady_window(runs, 1.0)  # peak 2: window [1, 4)
    assert (w.start_s, w.end_s, w.length_s) == (1.0, 4.0, 3.0)
    # TTFT of the requests issued in the window: 1, 2 and 3 (start 1.0, 2.0, 3.0).
    assert w.requests == 3 and w.ttft_s.n == 3 and w.ttft_s.p50 == 1.0
    # Tokens arriving in [1, 4]: request 0 all 10 (1.0…2.0), request 1 all 10 (2.0…3.0),
    # request 2 all 10 (2.5…4.0), request 3 none (its first token at 6.0).
    assert w.output_tokens == 30 and w.output_tok_s == 10.0
    assert w.itl_s.n == 27  # the 9 gaps of each of requests 0–2
    m = summarize(runs, steady_share=1.0)
    s = run_scalars(m)
    assert s["steady_output_tok_s"] == 10.0 and s["steady_ttft_p50_ms"] == 1000.0
    assert s["aggregate_output_tok_s"] == pytest.approx(40 / 7)  # the whole run, drain included


def test_warm_up_requests_and_runs_without_the_option():
    runs = [rec(0, 0, 5, warmup=True), *STAIRS]
    assert summarize(runs, steady_share=0.75).steady.peak == 4  # the warm-up request is not counted
    assert summarize(runs).steady is None and run_scalars(summarize(runs))["steady_output_tok_s"] is None
    assert summarize([], steady_share=0.9).steady is None


@pytest.mark.parametrize("value, needle", [(0.0, "--steady-state must be > 0"),
                                           (1.5, "--steady-state must be ≤ 1"),
                                           (float("nan"), "--steady-state must be a finite number")])
def test_bad_share_is_one_line_naming_the_option(value, needle):
    with pytest.raises(InputError, match=needle):
        LoadSpec.from_options(steady_state=value)
