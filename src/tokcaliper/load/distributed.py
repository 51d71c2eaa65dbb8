"""One measured phase spread over several load processes (Ray actors), on one clock.

For deployments one client process cannot saturate (issue 23). The driver
(this process) splits the load, the workers each run the ordinary async
client (:func:`tokcaliper.load.driver.run_phase_async`) on their share, and the
driver merges their raw records onto its own timeline:

* **split** — closed loop: the C streams split as evenly as possible
  (:func:`split_concurrency`), the N requests in proportion, in contiguous
  blocks of run places (:func:`split_count`); with ``duration_s`` worker j
  takes places j, j+W, j+2W, …. Open loop: the driver draws the arrival
  schedule once (:func:`tokcaliper.load.arrivals.arrival_offsets`) and deals
  it round-robin (:func:`split_schedule`), so the union of the workers'
  arrivals is exactly the requested process; the in-flight cap is split like C.
* **one clock** — before and after the phase each worker's clock offset is
  estimated from several round trips, keeping the one of least round trip
  (:func:`estimate_offset`, NTP's rule; AIPerf does the same); the bound is half
  that round trip, the drift the change between the two estimates. The driver
  names a common start on its clock; each worker starts its phase clock at
  that instant converted to its own clock, and its records are moved onto the
  driver's timeline by its estimated offset (:func:`to_driver_timeline`).
* **raw records** — shipped back in batches (:data:`BATCH`), never percentiles;
  the run's metrics are computed once over the merged records, so aggregate
  throughput uses the union window (first send → last end of any worker).
* **health** — each worker's self-monitor is kept (:class:`WorkerHealth`); the
  run's client figures are their union (:func:`merge_health`), so one worker
  over a bound marks the run client-limited. Kernel receive stamps stay per
  worker (each stamps its own sockets).
* **host telemetry** — each worker samples its own host (host CPU, steal, its own
  process; :class:`HostWatch` around its phase, with a sampler the caller hands
  in: this layer does not import the telemetry package) and ships the summary
  back (:class:`~tokcaliper.model.run.WorkerHost`), stored per worker: on a
  remote node the driver's host telemetry says nothing about the worker's machine.
* **faults** — a worker that dies makes the phase invalid with the reason
  (``Phase.invalid_reason``); the other workers' records are kept. A cluster
  that cannot be reached is a :class:`~tokcaliper.errors.ServerError` (exit 3).

Ray is an optional extra (``pip install 'tokcaliper[ray]'``), imported only
here and only when a run asks for workers. Workers run with ``num_cpus=0`` and
Ray's SPREAD strategy, so on a cluster they land on different nodes.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Sequence
from time import perf_counter
from typing import Any, Protocol

from tokcaliper.errors import InputError, ServerError
from tokcaliper.load.arrivals import arrival_offsets, arrival_stats
from tokcaliper.load.driver import OnRequest, Phase, PhaseAborted, Share, _seed
from tokcaliper.load.prompts import Messages
from tokcaliper.model.run import ClientHealth, ClockOffset, LoadConfig, RequestRecord, WorkerHealth, WorkerHost
from tokcaliper.model.telemetry import TelemetrySummary

__all__ = ["BATCH", "CONNECT_TIMEOUT_S", "OFFSET_SAMPLES", "SAMPLER_LEAD_S", "START_MARGIN_S", "HostSampler",
           "HostWatch", "WorkerPool", "estimate_offset", "import_ray",
           "merge_health", "plan_shares", "reachable", "run_phase", "shutdown", "split_concurrency", "split_count", "split_schedule",
           "to_driver_timeline", "worker_pool"]

#: Records per batch shipped from a worker to the driver.
BATCH = 2000
#: Round trips per offset estimate (AIPerf takes 20 one-way samples; the
#: least of 16 round trips is within ~0.1 ms of the floor on a loaded host).
OFFSET_SAMPLES = 16
#: The common start is this long after the driver hands out the shares, s:
#: time for every worker to build its requests and open its connections.
START_MARGIN_S = 1.0
#: A worker's host sampler starts this long before the common start, s: its first
#: tick (opening /proc, psutil, RAPL) is then done when the load begins.
SAMPLER_LEAD_S = 0.1
#: The fields of :class:`RequestRecord` that are instants on the run's clock
#: (moved by a worker's offset); the rest are durations.
INSTANTS = ("start_s", "scheduled_s", "connected_s", "written_s", "headers_s", "first_byte_s",
            "first_token_s", "last_token_s")

RAY_MISSING = "--workers needs Ray, an optional extra: pip install 'tokcaliper[ray]'"


def import_ray() -> Any:
    """The ``ray`` module, imported now.

    Raises:
        InputError: Ray is not installed (one line naming the extra).
    """
    try:
        import ray
    except ImportError:
        raise InputError(RAY_MISSING) from None
    return ray


# --- the split (pure) ------------------------------------------------------------------------


def split_concurrency(concurrency: int, workers: int) -> list[int]:
    """``concurrency`` streams over ``workers`` as evenly as possible (the first get one more).

    Raises:
        InputError: fewer streams than workers (a worker would have none).
    """
    if workers < 1 or concurrency < workers:
        raise InputError(f"--workers {workers} needs --concurrency ≥ {workers} (one stream per worker "
                         f"at least), got {concurrency}")
    q, r = divmod(concurrency, workers)
    return [q + (j < r) for j in range(workers)]


def split_count(count: int, shares: Sequence[int]) -> list[list[int]]:
    """Run places ``0 … count−1`` in contiguous blocks, sized in proportion to ``shares``.

    Block sizes: ``count × share ÷ Σ shares`` rounded down, the remainder one
    each to the largest fractional parts (Hamilton's method; ties to the
    earlier worker). Returns one list of places per share.
    """
    total = sum(shares)
    exact = [count * s / total for s in shares]
    sizes = [int(x) for x in exact]
    for j in sorted(range(len(shares)), key=lambda j: (-(exact[j] - sizes[j]), j))[:count - sum(sizes)]:
        sizes[j] += 1
    out, at = [], 0
    for n in sizes:
        out.append(list(range(at, at + n)))
        at += n
    return out


def split_schedule(offsets: Sequence[float], workers: int) -> list[list[int]]:
    """Arrival k to worker ``k mod workers``: the places of each worker's arrivals.

    The union of the slices is the whole schedule, each arrival once, so the
    requested process holds exactly for the union (each worker sees a thinned
    copy of it).
    """
    return [list(range(j, len(offsets), workers)) for j in range(workers)]


# --- one clock (pure) ------------------------------------------------------------------------


def estimate_offset(samples: Sequence[tuple[float, float, float]]) -> ClockOffset:
    """A worker's clock offset from round trips ``(t0, w, t1)`` (driver, worker, driver clocks, s).

    Keeps the sample of least round trip ``t1 − t0`` (NTP's clock filter): its
    offset is ``w − (t0 + t1)/2`` and the true offset lies within ``± (t1 − t0)/2``
    of it, however the round trip splits between the two legs (``w`` was read
    between ``t0`` and ``t1``).

    Raises:
        ValueError: no sample, or a sample with ``t1 < t0``.
    """
    if not samples:
        raise ValueError("no round trip to estimate a clock offset from")
    if any(t1 < t0 for t0, _, t1 in samples):
        raise ValueError("a round trip ended before it started (t1 < t0)")
    t0, w, t1 = min(samples, key=lambda s: s[2] - s[0])
    rtt = t1 - t0
    return ClockOffset(offset_s=w - (t0 + t1) / 2, bound_s=rtt / 2, rtt_s=rtt, samples=len(samples))


def to_driver_timeline(records: Sequence[RequestRecord], shift_s: float) -> list[RequestRecord]:
    """``records`` with every instant (:data:`INSTANTS`) moved by ``shift_s``; durations kept.

    ``shift_s`` = (the worker's phase start, on its clock − its offset) − the
    driver's start: the worker's phase start on the driver's timeline.
    """
    out = []
    for r in records:
        update = {f: v + shift_s for f in INSTANTS if (v := getattr(r, f)) is not None}
        out.append(r.model_copy(update=update))
    return out


def merge_health(workers: Sequence[WorkerHealth]) -> ClientHealth:
    """The run's client figures from its workers' own (:attr:`ClientHealth.workers`).

    Loop lag and CPU share: those of the worst worker (a timestamp may trail
    its event by the worst worker's lag; one saturated worker limits the run);
    CPU time, connections, stamped reads and the open loop's in-flight cap with
    its waits and late waits: summed (each worker holds its share of the cap);
    wall time: the longest. Dead workers (no figures) are skipped.
    """
    cs = [w.client for w in workers if w.client is not None]
    if not cs:
        return ClientHealth(workers=list(workers))
    worst_lag = max(cs, key=lambda c: c.loop_lag_s.p99 if c.loop_lag_s.p99 is not None else -1.0)
    shares = [c.cpu_share for c in cs if c.cpu_share is not None]
    walls = [c.wall_s for c in cs if c.wall_s is not None]
    lag_max = [c.loop_lag_max_s for c in cs if c.loop_lag_max_s is not None]
    caps = [c.cap for c in cs if c.cap is not None]
    from tokcaliper.load.summary import percentiles

    return ClientHealth(
        loop_lag_s=worst_lag.loop_lag_s, loop_lag_max_s=max(lag_max) if lag_max else None,
        probe_interval_s=worst_lag.probe_interval_s,
        cpu_s=sum(c.cpu_s or 0.0 for c in cs), wall_s=max(walls) if walls else None,
        cpu_share=max(shares) if shares else None,
        connections_opened=sum(c.connections_opened for c in cs),
        connections_prefilled=sum(c.connections_prefilled for c in cs),
        requests_reused=sum(c.requests_reused for c in cs),
        connect_s=percentiles([]) if not cs else max(cs, key=lambda c: c.connect_s.n).connect_s,
        server_keeps_alive=next((c.server_keeps_alive for c in cs if c.server_keeps_alive is not None), None),
        reads_kernel_stamped=sum(c.reads_kernel_stamped for c in cs),
        reads_loop_stamped=sum(c.reads_loop_stamped for c in cs),
        cap=sum(caps) if caps else None,
        cap_waits=sum(c.cap_waits for c in cs), cap_late=sum(c.cap_late for c in cs),
        workers=list(workers),
    )


# --- a worker's own host -------------------------------------------------------------------


class HostSampler(Protocol):
    """What a worker needs from a host sampler (e.g. :class:`tokcaliper.telemetry.TelemetrySampler`)."""

    def start(self) -> Any: ...

    def stop(self) -> None: ...

    def summary(self) -> TelemetrySummary: ...


def _loadavg() -> tuple[float, float, float] | None:
    try:
        a, b, c = os.getloadavg()
    except OSError:  # not available on this OS
        return None
    return (a, b, c)


def _why(e: BaseException) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"


class HostWatch:
    """This process's host sampled from :data:`SAMPLER_LEAD_S` before ``start_at`` until :meth:`finish`.

    Runs in a load worker around its phase: a timer thread starts the sampler
    made by ``factory`` shortly before the common start (``start_at``, on
    ``time.perf_counter``), so the window is the phase, not the time the
    worker spends building its requests. Host name, CPU count and the load
    average (``os.getloadavg``, at the sampler's start and at the end) are
    read here.

    Raises:
        Nothing: a sampler that fails leaves ``WorkerHost.telemetry`` None with
        the reason in ``WorkerHost.error``; the load is never stopped by it.
    """

    def __init__(self, factory: Callable[[], HostSampler], start_at: float) -> None:
        self.host = WorkerHost(hostname=socket.gethostname(), cpus=os.cpu_count())
        self.sampler: HostSampler | None = None
        self.started = False
        try:
            self.sampler = factory()
        except Exception as e:
            self.host.error = f"no host sampler: {_why(e)}"
        self.timer = threading.Timer(max(0.0, start_at - SAMPLER_LEAD_S - perf_counter()), self._start)
        self.timer.daemon = True
        self.timer.start()

    def _start(self) -> None:
        self.host.load_average_start = _loadavg()
        if self.sampler is None:
            return
        try:
            self.sampler.start()
            self.started = True
        except Exception as e:
            self.host.error = f"host sampler did not start: {_why(e)}"

    def finish(self) -> WorkerHost:
        """Stop sampling; the host's figures over the phase."""
        self.timer.cancel()
        self.timer.join()
        if self.started:
            try:
                self.sampler.stop()  # type: ignore[union-attr]
                self.host.telemetry = self.sampler.summary()  # type: ignore[union-attr]
            except Exception as e:
                self.host.error = f"host sampler failed: {_why(e)}"
        elif self.host.error is None:
            self.host.error = "the phase ended before its common start: nothing sampled"
        self.host.load_average_end = _loadavg()
        return self.host


# --- the workers (Ray) -----------------------------------------------------------------------


class _Worker:
    """One load process (a Ray actor; the class is wrapped by ``ray.remote`` on first use).

    ``skew_s`` is added to its clock (tests inject an offset with it).
    """

    def __init__(self, skew_s: float = 0.0) -> None:
        self.skew_s = skew_s
        self.phase: Phase | None = None

    def clock(self) -> float:
        """This worker's clock, s."""
        return perf_counter() + self.skew_s

    def where(self) -> dict[str, Any]:
        """Node id, host name and pid."""
        import ray

        return {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
                "pid": os.getpid()}

    def run(self, cfg: LoadConfig, prompts: list[Messages], share: Share,
            start_on_worker_clock: float,
            host_sampler: Callable[[], HostSampler] | None = None) -> dict[str, Any]:
        """Run this worker's share; keep the records here for :meth:`records`.

        ``host_sampler``: a factory, called here, of the sampler of this worker's
        host (:class:`HostWatch`); None: the host is not sampled.

        Returns: ``{"n", "start", "late", "client", "aborted", "host"}``: records
        kept, the phase clock's start on this worker's clock, how late it
        started, its own figures, the reason if the server stopped answering
        (its records up to then are kept), its host (:class:`WorkerHost` or None).
        """
        import asyncio

        from tokcaliper.load.driver import run_phase_async

        share = Share(count=share.count, positions=share.positions, offsets=share.offsets,
                      start_at=start_on_worker_clock - self.skew_s)
        watch = None if host_sampler is None else HostWatch(host_sampler, share.start_at)  # type: ignore[arg-type]
        aborted = None
        try:
            self.phase = asyncio.run(run_phase_async(cfg, prompts, share=share))
        except PhaseAborted as e:
            self.phase, aborted = Phase(e.records), str(e)
            self.phase.run_start = share.start_at
        finally:
            host = None if watch is None else watch.finish()
        assert self.phase.run_start is not None
        return {"n": len(self.phase), "start": self.phase.run_start + self.skew_s,
                "late": max(0.0, self.phase.start_late_s), "client": self.phase.client,
                "aborted": aborted, "host": host}

    def records(self, lo: int, hi: int) -> list[RequestRecord]:
        """Kept records ``lo … hi−1`` (one batch)."""
        assert self.phase is not None
        return list(self.phase[lo:hi])


#: Seconds a Ray head's port is given to accept a TCP connection before the
#: cluster is called unreachable (ray.init itself retries for minutes).
CONNECT_TIMEOUT_S = 5.0


def reachable(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Check that the Ray head at ``address`` (``host:port`` or ``ray://host:port``) accepts a connection.

    ``auto`` and other forms are left to Ray.

    Raises:
        ServerError: nothing accepts a TCP connection there within ``timeout_s`` (one line).
    """
    hostport = address.removeprefix("ray://")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise ServerError(f"could not reach the Ray cluster at {address}: {e.strerror or e} "
                          f"(is `ray start --head` running there?)") from None


class WorkerPool:
    """W load workers on a Ray cluster (local unless ``address``), reused across runs.

    Use :func:`worker_pool` (one pool per process). ``skews_s``: per-worker clock
    skew to inject (tests only).

    Raises:
        InputError: Ray is not installed.
        ServerError: the cluster at ``address`` cannot be reached, or the
            workers did not start (one line; exit 3).
    """

    def __init__(self, workers: int, address: str | None = None,
                 skews_s: Sequence[float] | None = None) -> None:
        ray = import_ray()
        self.ray, self.n, self.address = ray, workers, address
        self.broken = False
        import logging

        if address is not None and not ray.is_initialized():
            reachable(address)
        try:
            if not ray.is_initialized():
                if address is None:
                    ray.init(num_cpus=max(2, workers), include_dashboard=False, log_to_driver=False,
                             logging_level=logging.WARNING, configure_logging=False)
                else:
                    ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING,
                             configure_logging=False)
        except Exception as e:  # ConnectionError, TimeoutError, RuntimeError, ValueError
            text = " ".join(str(e).split())[:200]
            where = f"the Ray cluster at {address}" if address else "a local Ray cluster"
            raise ServerError(f"could not reach {where}: {type(e).__name__}: {text}") from None
        remote = ray.remote(num_cpus=0, max_restarts=0, scheduling_strategy="SPREAD")(_Worker)
        skews = list(skews_s or [0.0] * workers)
        try:
            self.actors = [remote.remote(skews[j]) for j in range(workers)]
            self.where = ray.get([a.where.remote() for a in self.actors], timeout=120)
        except Exception as e:
            raise ServerError(f"the {workers} Ray load workers did not start: {type(e).__name__}: "
                              f"{' '.join(str(e).split())[:200]}") from None

    def offsets(self) -> list[ClockOffset | None]:
        """Each worker's clock offset now (:func:`estimate_offset`); None for a dead worker."""
        out: list[ClockOffset | None] = []
        for a in self.actors:
            try:
                samples = []
                for _ in range(OFFSET_SAMPLES):
                    t0 = perf_counter()
                    w = self.ray.get(a.clock.remote(), timeout=30)
                    samples.append((t0, w, perf_counter()))
                out.append(estimate_offset(samples))
            except Exception:
                out.append(None)
        return out

    def close(self) -> None:
        """Kill the workers (the cluster stays; :func:`shutdown` ends a local one)."""
        for a in self.actors:
            try:
                self.ray.kill(a)
            except Exception:
                pass


_POOL: list[WorkerPool] = []


def worker_pool(workers: int, address: str | None = None) -> WorkerPool:
    """This process's pool of ``workers`` load workers, started on first use and reused.

    A pool of another size or address, or one that lost a worker, is replaced.
    """
    if _POOL:
        p = _POOL[0]
        if p.n == workers and p.address == address and not p.broken:
            return p
        p.close()
        _POOL.clear()
    _POOL.append(WorkerPool(workers, address))
    return _POOL[0]


def shutdown() -> None:
    """Kill the pool's workers and disconnect from Ray (a local cluster stops)."""
    if _POOL:
        _POOL[0].close()
        _POOL.clear()
    if "ray" in __import__("sys").modules:
        import ray

        if ray.is_initialized():
            ray.shutdown()


# --- one phase over the pool -----------------------------------------------------------------


def plan_shares(cfg: LoadConfig, workers: int) -> tuple[list[int], list[Share]]:
    """Each worker's concurrency and :class:`Share` of the measured phase (``start_at`` unset).

    Open loop: the schedule drawn once, as one process would
    (:func:`tokcaliper.load.arrivals.arrival_offsets`), dealt by :func:`split_schedule`.
    """
    conc = split_concurrency(cfg.concurrency, workers)
    if cfg.rate_rps is not None:
        offsets = arrival_offsets(cfg.rate_rps, cfg.arrival, burstiness=cfg.burstiness, count=cfg.requests,
                                  duration_s=None if cfg.requests else cfg.duration_s,
                                  seed=_seed(cfg)).tolist()
        places = split_schedule(offsets, workers)
        return conc, [Share(count=len(p), positions=p, offsets=[offsets[k] for k in p]) for p in places]
    if cfg.requests is None or cfg.duration_s is not None:
        return conc, [Share(count=None, positions=(j, workers)) for j in range(workers)]
    return conc, [Share(count=len(p), positions=p) for p in split_count(cfg.requests, conc)]


def run_phase(cfg: LoadConfig, prompts: list[Messages], *, on_request: OnRequest | None = None,
              pool: WorkerPool | None = None, host_sampler: Callable[[], HostSampler] | None = None,
              **_ignored: Any) -> Phase:
    """The measured phase of ``cfg`` over ``cfg.workers`` Ray workers, merged (see the module).

    Same contract as :func:`tokcaliper.load.driver.run_phase`: records in
    index order, ``start_s`` from the phase's start on this process's clock,
    the client's figures (the union, with each worker's), open-loop arrival
    statistics over the union. ``on_request`` is called per record once the
    records are back (no progress mid-run). A dead worker sets
    ``invalid_reason``; the others' records are kept. ``host_sampler``: a
    factory each worker calls to sample its own host during its phase (Ray
    pickles it; a module-level function travels by name), stored as
    ``WorkerHealth.host_telemetry``; None: no worker samples its host.

    Raises:
        PhaseAborted: the server stopped answering (every worker's records so far kept).
        ServerError: the cluster could not be reached.
    """
    pool = pool or worker_pool(cfg.workers, cfg.ray_address)
    ray = pool.ray
    conc, shares = plan_shares(cfg, pool.n)
    before = pool.offsets()
    dead: dict[int, str] = {j: "unreachable before the run" for j, o in enumerate(before) if o is None}
    # Synthetic lengths: each worker sizes its prompts with the server's tokenizer first.
    start = perf_counter() + START_MARGIN_S * (3 if cfg.input_tokens or cfg.output_tokens else 1)
    refs: dict[Any, int] = {}
    for j, (a, share) in enumerate(zip(pool.actors, shares)):
        if j in dead:
            continue
        wcfg = cfg.model_copy(update={"concurrency": conc[j], "requests": share.count, "workers": 1})
        refs[a.run.remote(wcfg, prompts, share, start + before[j].offset_s,  # type: ignore[union-attr]
                          host_sampler)] = j
    results: dict[int, dict[str, Any]] = {}
    pending = list(refs)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            j = refs[ready[0]]
            try:
                results[j] = ray.get(ready[0])
            except Exception as e:  # the actor died (killed, OOM, node lost) or raised
                dead[j] = f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"
    except BaseException:  # Ctrl-C: stop every worker, the pool is rebuilt next time
        pool.broken = True
        pool.close()
        raise
    after = pool.offsets()
    merged: list[RequestRecord] = []
    health: list[WorkerHealth] = []
    aborted: list[str] = []
    for j in range(pool.n):
        where = pool.where[j]
        h = WorkerHealth(worker=j, node=where.get("node"), host=where.get("host"), pid=where.get("pid"),
                         concurrency=conc[j], offset_before=before[j], offset_after=after[j],
                         drift_s=None if before[j] is None or after[j] is None
                         else after[j].offset_s - before[j].offset_s,  # type: ignore[union-attr]
                         error=dead.get(j))
        if j in results:
            res = results[j]
            recs: list[RequestRecord] = []
            try:
                for lo in range(0, res["n"], BATCH):
                    recs.extend(ray.get(pool.actors[j].records.remote(lo, lo + BATCH), timeout=120))
            except Exception as e:
                dead[j] = h.error = f"records lost: {type(e).__name__}"
                recs = []
            shift = (res["start"] - before[j].offset_s) - start  # type: ignore[union-attr]
            recs = to_driver_timeline(recs, shift)
            merged.extend(recs)
            h = h.model_copy(update={"client": None if res["client"] is None else _judged(res["client"], recs),
                                     "start_late_s": res["late"], "requests": len(recs),
                                     "host_telemetry": res.get("host"),
                                     "failed": sum(1 for r in recs if not r.ok)})
            if res["aborted"]:
                aborted.append(res["aborted"])
        health.append(h)
    merged.sort(key=lambda r: r.index)
    phase = Phase(merged)
    phase.run_start = start
    phase.client = merge_health(health)
    if cfg.rate_rps is not None:
        sent = [r.start_s for r in merged if r.start_s is not None]
        sched = [r.scheduled_s for r in merged if r.scheduled_s is not None]
        if sent:
            phase.arrivals = arrival_stats(sent, sched, cfg.rate_rps, cfg.arrival, cfg.burstiness)
    if dead:
        pool.broken = True
        kept = sum(h.requests for h in health)
        phase.invalid_reason = "; ".join(
            f"load worker {j + 1} of {pool.n} (host {pool.where[j].get('host')}, pid {pool.where[j].get('pid')}) "
            f"died mid-run: {why}" for j, why in sorted(dead.items())
        ) + f"; the other workers' {kept} requests are kept"
    if on_request is not None:
        for r in merged:
            on_request(r.index)
    if aborted:
        raise PhaseAborted(aborted[0], merged)
    return phase


def _judged(client: ClientHealth, mine: list[RequestRecord]) -> ClientHealth:
    """A worker's own figures judged against the bounds over its own requests."""
    from tokcaliper.load.summary import judge_client, percentiles

    dispatch = percentiles([d for r in mine if (d := r.dispatch_delay_s) is not None])
    itl = percentiles([x for r in mine if r.ok for x in r.itl_s])
    return judge_client(client, dispatch, itl.p50)
