"""Load over several processes (issue 23), the parts that need no Ray: the split, the clock, the merge.

The Ray-backed tests (a local cluster, a real server) are in test_ray.py.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
from time import perf_counter

import pytest

from tokcaliper.errors import InputError
from tokcaliper.experiment.spec import LoadSpec
from tokcaliper.load.arrivals import arrival_offsets
from tokcaliper.load.distributed import (
    SAMPLER_LEAD_S, HostWatch, estimate_offset, import_ray, merge_health, plan_shares, split_concurrency,
    split_count, split_schedule, to_driver_timeline)
from tokcaliper.load.driver import _seed
from tokcaliper.load.summary import judge_client
from tokcaliper.model.run import ClientHealth, LoadConfig, Percentiles, RequestRecord, WorkerHealth, WorkerHost
from tokcaliper.model.telemetry import DeviceSummary, TelemetrySummary
from tokcaliper.report.run_view import worker_host_lines


def test_closed_loop_split_covers_every_stream_and_request_once():
    assert split_concurrency(7, 3) == [3, 2, 2]
    assert split_concurrency(4, 4) == [1, 1, 1, 1]
    with pytest.raises(InputError, match="--concurrency ≥ 3"):
        split_concurrency(2, 3)
    blocks = split_count(100, [3, 2, 2])
    assert [len(b) for b in blocks] == [43, 29, 28]  # 42.86, 28.57, 28.57: largest remainders first
    assert [x for b in blocks for x in b] == list(range(100))


def test_open_loop_schedule_is_drawn_once_and_its_union_is_the_requested_process():
    cfg = LoadConfig(base_url="http://x", concurrency=8, requests=101, rate_rps=50.0, prompt_salt="s")
    conc, shares = plan_shares(cfg, 3)
    assert conc == [3, 3, 2]
    one = arrival_offsets(50.0, "poisson", count=101, seed=_seed(cfg)).tolist()  # what one process sends
    union = sorted((p, o) for s in shares for p, o in zip(s.positions, s.offsets))
    assert [p for p, _ in union] == list(range(101))
    assert [o for _, o in union] == one
    assert split_schedule(one, 2) == [list(range(0, 101, 2)), list(range(1, 101, 2))]


def test_duration_bounded_closed_loop_strides_the_places():
    cfg = LoadConfig(base_url="http://x", concurrency=4, requests=None, duration_s=5.0)
    _, shares = plan_shares(cfg, 2)
    assert [s.count for s in shares] == [None, None]
    assert [shares[1].position(i) for i in range(3)] == [1, 3, 5]


def test_offset_estimate_recovers_an_injected_offset_within_its_bound():
    """A worker clock 3.7 s ahead; each leg of a round trip delayed 0.1–5 ms at random (asymmetric)."""
    rng = random.Random(4)
    injected = 3.7
    t, samples = 1000.0, []
    for _ in range(16):
        t0 = t
        w = t0 + rng.uniform(1e-4, 5e-3) + injected  # read on the worker after the first leg
        t1 = w - injected + rng.uniform(1e-4, 5e-3)
        samples.append((t0, w, t1))
        t = t1 + 0.01
    est = estimate_offset(samples)
    assert abs(est.offset_s - injected) <= est.bound_s
    assert est.bound_s == pytest.approx(min(b - a for a, _, b in samples) / 2)
    assert est.samples == 16
    with pytest.raises(ValueError):
        estimate_offset([])


def test_records_move_onto_the_driver_timeline_durations_kept():
    r = RequestRecord(index=3, start_s=0.5, scheduled_s=0.4, first_token_s=0.6, ttft_s=0.1, e2e_s=0.3,
                      itl_s=[0.01])
    (m,) = to_driver_timeline([r], 2.0)
    assert (m.start_s, m.scheduled_s, m.first_token_s) == (2.5, 2.4, 2.6)
    assert (m.ttft_s, m.e2e_s, m.itl_s, m.index, m.written_s) == (0.1, 0.3, [0.01], 3, None)


def test_one_saturated_worker_marks_the_run_client_limited():
    calm = ClientHealth(loop_lag_s=Percentiles(n=10, p99=0.001), cpu_s=1.0, wall_s=10.0, cpu_share=0.1)
    busy = ClientHealth(loop_lag_s=Percentiles(n=10, p99=0.002), cpu_s=9.5, wall_s=10.0, cpu_share=0.95)
    none = Percentiles(n=0)
    workers = [WorkerHealth(worker=0, client=judge_client(calm, none)),
               WorkerHealth(worker=1, client=judge_client(busy, none))]
    union = merge_health(workers)
    assert union.cpu_share == 0.95 and union.cpu_s == 10.5 and union.loop_lag_s.p99 == 0.002
    judged = judge_client(union, none)
    assert judged.client_limited
    assert len(judged.limits) == 1 and judged.limits[0].startswith("load worker 2: ")
    assert not judge_client(merge_health(workers[:1]), none).client_limited


def test_workers_in_load_spec_and_bench_options():
    assert LoadSpec(workers=2, concurrency=4).to_load_config("http://x").workers == 2
    with pytest.raises(InputError, match="--workers"):
        LoadSpec.from_options(workers=8, concurrency=4)
    with pytest.raises(InputError, match="--ray-address needs --workers"):
        LoadSpec.from_options(ray_address="10.0.0.1:6379")


def test_missing_ray_is_one_line_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    with pytest.raises(InputError, match=r"tokcaliper\[ray\]"):
        import_ray()


def test_the_single_process_path_does_not_import_ray():
    code = ("import sys; import tokcaliper.cli, tokcaliper.cli.bench, tokcaliper.experiment.runner, "
            "tokcaliper.load.driver, tokcaliper.load.distributed; "
            "assert 'ray' not in sys.modules, 'ray imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


class FakeSampler:
    """Records when it was started and stopped; its summary says one client device."""

    def __init__(self) -> None:
        self.started_at: float | None = None
        self.stopped = False
        self.up = threading.Event()

    def start(self) -> None:
        self.started_at = perf_counter()
        self.up.set()

    def stop(self) -> None:
        self.stopped = True

    def summary(self) -> TelemetrySummary:
        return TelemetrySummary(interval_s=0.1, ticks=3, duration_s=0.2, devices=[
            DeviceSummary(device="client", kind="process", cpu_share_mean=0.25, cpu_share_max=0.5)])


def test_a_workers_host_is_sampled_from_just_before_the_common_start_to_its_end():
    fake = FakeSampler()
    start_at = perf_counter() + 0.3
    watch = HostWatch(lambda: fake, start_at)
    assert fake.started_at is None  # not while the worker builds its requests
    assert fake.up.wait(5)
    host = watch.finish()
    assert fake.started_at >= start_at - SAMPLER_LEAD_S - 0.002 and fake.stopped
    assert host.telemetry.devices[0].cpu_share_mean == 0.25 and host.error is None
    assert host.cpus == os.cpu_count() and len(host.load_average_end) == 3
    assert host.load_average_start is not None


def test_a_failing_or_unstarted_host_sampler_never_stops_the_load():
    def broken() -> FakeSampler:
        raise OSError("no /proc")

    host = HostWatch(broken, perf_counter()).finish()
    assert host.telemetry is None and host.error == "no host sampler: OSError: no /proc"
    late = FakeSampler()
    host = HostWatch(lambda: late, perf_counter() + 60).finish()  # the phase ended first
    assert late.started_at is None and host.telemetry is None and "before its common start" in host.error


def test_show_gives_each_workers_own_host_within_100_columns():
    t = TelemetrySummary(interval_s=0.1, ticks=34, duration_s=3.4, foreign_cpu_cores_mean=0.82, devices=[
        DeviceSummary(device="cpu", kind="cpu", utilization_mean_pct=95.3, steal_share=0.012),
        DeviceSummary(device="client", kind="process", cpu_share_mean=0.31, cpu_share_max=0.4)])
    w = WorkerHealth(worker=1, host="node-b", host_telemetry=WorkerHost(
        hostname="node-b.internal", cpus=64, load_average_start=(1.31, 1.0, 0.5),
        load_average_end=(1.52, 1.1, 0.5), telemetry=t))
    lines = worker_host_lines(w)
    assert lines == ["worker 2 on node-b.internal (64 CPUs): load average 1.31 → 1.52 (1 min); "
                     "34 samples over 3.40 s",
                     "  host CPU 95.3 % busy, steal 1.20 %; this worker 0.310 cores (max 0.400); others 0.820 cores"]
    assert all(len("    " + x) <= 100 for x in lines)
    assert worker_host_lines(WorkerHealth(worker=0, error="ActorDiedError: x")) == [
        "worker 1: host not sampled (ActorDiedError: x)"]


def test_the_in_flight_cap_and_its_waits_are_the_workers_summed():
    a = ClientHealth(cap=3, cap_waits=40, cap_late=2)
    b = ClientHealth(cap=2, cap_waits=25, cap_late=1)
    union = merge_health([WorkerHealth(worker=0, client=a), WorkerHealth(worker=1, client=b)])
    assert (union.cap, union.cap_waits, union.cap_late) == (5, 65, 3)
    closed = merge_health([WorkerHealth(worker=0, client=ClientHealth())])
    assert (closed.cap, closed.cap_waits, closed.cap_late) == (None, 0, 0)
