"""summarize: per-run metrics from request records."""

import pytest

from tokcaliper.load.summary import decode_rate, judge_client, summarize
from tokcaliper.model.metrics import run_scalars
from tokcaliper.model.run import ClientHealth, Percentiles, RequestRecord


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


def _health(lag_p99_s: float, kernel: int, loop: int) -> ClientHealth:
    return ClientHealth(loop_lag_s=Percentiles(n=100, p99=lag_p99_s), reads_kernel_stamped=kernel,
                        reads_loop_stamped=loop, cpu_share=0.3)


def test_loop_lag_bound_depends_on_which_clock_stamped_arrivals():
    none = Percentiles(n=0)
    # Loop-stamped: 4 ms of lag is 4 ms of error in every read time.
    loop = judge_client(_health(0.004, 0, 500), none, itl_p50_s=0.005)
    assert loop.client_limited and loop.limits == [
        "client event loop lagged p99 4.00 ms (bound 3.00 ms): latencies below that are not resolved"]
    # Kernel-stamped, tokens 5 ms apart: 4 ms late never merges two tokens.
    assert not judge_client(_health(0.004, 500, 0), none, itl_p50_s=0.005).client_limited
    # … but 6 ms late does, and the warning says so with the bound it used.
    late = judge_client(_health(0.006, 500, 0), none, itl_p50_s=0.005)
    assert late.client_limited and "bound 5.00 ms" in late.limits[0] and "share one stamp" in late.limits[0]
    # Mixed clocks (some reads fell back): the strict bound.
    assert judge_client(_health(0.004, 400, 100), none, itl_p50_s=0.005).client_limited
    # Kernel-stamped with fast tokens: never below 3 ms.
    assert judge_client(_health(0.0035, 500, 0), none, itl_p50_s=0.001).client_limited


def test_a_late_dispatch_blames_the_client_only_when_its_own_figures_show_it():
    """Issue 21 item 5: 7.36 ms late at p99 while the client used 1.5 % of a core and its
    loop was on time is the host's doing (a saturated host), not the client's."""
    late = Percentiles(n=100, p99=0.00736)
    idle = ClientHealth(loop_lag_s=Percentiles(n=100, p99=0.0012), cpu_share=0.015)
    host = judge_client(idle, late)
    assert not host.client_limited and host.limits == []
    assert len(host.host_limits) == 1
    assert host.host_limits[0].startswith("requests left 7.36 ms after their scheduled time at p99")
    assert "1.50 % of a core" in host.host_limits[0] and "the host was" in host.host_limits[0]
    assert "the client, not the server" not in host.host_limits[0]
    # The client's own loop lagged: the late sends are its own.
    lagged = judge_client(idle.model_copy(update={"loop_lag_s": Percentiles(n=100, p99=0.008)}), late)
    assert lagged.client_limited and lagged.host_limits == []
    assert any("the client, not the server, limited this run" in x for x in lagged.limits)
    # … or it was saturated.
    busy = judge_client(idle.model_copy(update={"cpu_share": 0.95}), late)
    assert busy.client_limited and any("the client, not the server" in x for x in busy.limits)


def test_a_late_dispatch_the_in_flight_cap_explains_names_the_cap():
    """Issue 21: open-loop arrivals that waited for a slot under the cap are late because of
    it, not because of the client or the host; the cap is named once its waits alone reach
    the p99 (at least 1 % of the requests)."""
    late = Percentiles(n=200, p99=0.310)
    idle = ClientHealth(loop_lag_s=Percentiles(n=100, p99=0.0012), cpu_share=0.015, cap=2, cap_waits=150)
    capped = judge_client(idle.model_copy(update={"cap_late": 140}), late)
    assert not capped.client_limited and capped.host_limits == [] and capped.limits == []
    assert capped.cap_limits == [
        "requests left 310 ms after their scheduled time at p99 (bound 5.00 ms): 140 of 200 arrivals found "
        "the in-flight cap (2 streams) reached and waited for a slot past the bound — the arrival rate was "
        "beyond what 2 streams serve; the cap, not the client or the host, delayed them (see the TTFT "
        "from schedule)"]
    # Two in 200 (1 %) alone reach the p99: the cap is named …
    assert judge_client(idle.model_copy(update={"cap_late": 2}), late).cap_limits[0].startswith(
        "requests left 310 ms after their scheduled time at p99 (bound 5.00 ms): 2 of 200 arrivals")
    # … one late wait in 200 (0.5 %) cannot make it: the host is named, as without a cap.
    few = judge_client(idle.model_copy(update={"cap_late": 1}), late)
    assert few.cap_limits == [] and len(few.host_limits) == 1
    # A closed loop has no cap to blame.
    assert judge_client(idle.model_copy(update={"cap": None, "cap_late": 140}), late).cap_limits == []


def test_a_late_idle_loop_on_a_host_other_processes_held_is_the_hosts_doing():
    """Issue 21: at load 10 on 2 cores the idle client's loop ran 5–33 ms late (its CPU 0.3–0.4 %)
    while other processes held 1.6–1.7 cores: the late sends are the host's, not the client's."""
    late = Percentiles(n=100, p99=0.0130)
    lagged = ClientHealth(loop_lag_s=Percentiles(n=100, p99=0.013), cpu_share=0.012)
    host = judge_client(lagged, late, foreign_cores=1.69)
    assert len(host.host_limits) == 1 and host.host_limits[0].startswith("requests left 13.0 ms")
    assert not any("the client, not the server" in x for x in host.limits)
    assert host.limits == ["client event loop lagged p99 13.0 ms (bound 3.00 ms): latencies below that are "
                           "not resolved"]  # the timestamps' caveat stays
    # Without foreign load the lag is the client's own, as before; and a busy client stays blamed.
    assert any("the client, not the server" in x for x in judge_client(lagged, late, foreign_cores=0.1).limits)
    busy = lagged.model_copy(update={"cpu_share": 0.95})
    assert any("the client, not the server" in x for x in judge_client(busy, late, foreign_cores=1.69).limits)
