"""One phase of load: warm-up, a closed loop of C workers, or open-loop arrivals.

Structure (each piece in its own module, so fault handling can be added at
one place):

* :mod:`tokcaliper.load.http` — one HTTP/1.1 connection; arrival times from
  the kernel's receive stamps (:mod:`tokcaliper.load.stamped`);
* :mod:`tokcaliper.load.pool` — connections opened before the clock starts,
  reused when the server keeps them (learned per server);
* :mod:`tokcaliper.load.client` — one request: send, wait, retry once on a
  dead reused connection, fill a :class:`~tokcaliper.load.sse.RawStream`;
* this module — *when* requests are sent: :func:`_closed_loop` (C workers,
  each sends its next request as soon as its previous one ends) or
  :func:`_open_loop` (arrivals at scheduled times from
  :mod:`tokcaliper.load.arrivals`, at most C in flight);
* :mod:`tokcaliper.load.monitor` — the client's own loop lag and CPU share.

Every request records when it was scheduled and when it was really sent; the
gap is its dispatch delay. Request bodies are encoded before the clock starts
(count mode) and SSE parsing waits for the end of the phase, so neither
delays another stream's timestamps.
"""

from __future__ import annotations

import asyncio
import hashlib
import signal
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from time import perf_counter

from tokcaliper.errors import ServerError
from tokcaliper.load.arrivals import arrival_offsets, arrival_stats
from tokcaliper.load.client import Endpoint, ServerGone, chat_body, endpoint, send_now, stream_chat
from tokcaliper.load.http import ConnectFailed
from tokcaliper.load.monitor import DISPATCH_BOUND_S, LoopMonitor
from tokcaliper.load.pool import ConnectionPool
from tokcaliper.load.prompts import Messages
from tokcaliper.load.sessions import SharedPrefixes, session_loop
from tokcaliper.load.sse import RawStream
from tokcaliper.load.summary import percentiles
from tokcaliper.load.timer import ArrivalTimer
from tokcaliper.load.datasets import DatasetWorkload
from tokcaliper.load.synthetic import SyntheticWorkload
from tokcaliper.load.trace import TraceWorkload
from tokcaliper.model.run import ArrivalStats, ClientHealth, LoadConfig, RequestRecord

__all__ = ["OPEN_LOOP_PREFILL", "OnRequest", "Phase", "PhaseAborted", "Share", "Workload", "interrupt_phase",
           "make_workload", "prepare_requests",
           "run_phase",
           "run_phase_async", "salted"]

#: What plans a run's requests (``prepare``, ``plan``, ``close``, ``method``, ``template_tokens``).
Workload = SyntheticWorkload | DatasetWorkload | TraceWorkload

#: Called after each request ends, with the request's index (progress bars).
OnRequest = Callable[[int], None]

#: Parse the kept streams early once they hold this many bytes (a stall that
#: bounds memory; at ~300 B per token it takes ~200k tokens in one phase).
PARSE_BACKLOG_BYTES = 64 * 2**20

#: Open loop: connections opened before the clock (more open on demand; a
#: server with few HTTP threads, like llama-server, would hold idle ones).
OPEN_LOOP_PREFILL = 16


class Phase(list[RequestRecord]):
    """The records of one phase, in issue order (a list), and the client's own figures.

    Attributes:
        client: loop lag, CPU share and connection figures
            (:class:`~tokcaliper.model.run.ClientHealth`, bounds not yet
            judged: :func:`tokcaliper.load.summary.summarize` does).
        arrivals: open-loop arrival statistics (None in a closed loop).
        lengths_method / template_tokens: how synthetic prompts were sized
            (:class:`~tokcaliper.load.synthetic.SyntheticWorkload`), None without them.
        prefix_method: how shared prefixes were sized
            (:class:`~tokcaliper.load.sessions.SharedPrefixes`), None without them.
        run_start: ``perf_counter()`` time its clock started (``start_s`` = 0).
        start_late_s: how much later than ``Share.start_at`` the phase really began, s.
        invalid_reason: why the phase cannot be analysed although it ended (a
            load worker died: :mod:`tokcaliper.load.distributed`), else None.
    """

    client: ClientHealth | None = None
    arrivals: ArrivalStats | None = None
    lengths_method: str | None = None
    template_tokens: float | None = None
    prefix_method: str | None = None
    run_start: float | None = None
    start_late_s: float = 0.0
    invalid_reason: str | None = None


@dataclass(frozen=True)
class Share:
    """One process's part of a measured phase run by several (:mod:`tokcaliper.load.distributed`).

    Attributes:
        count: its requests (None: until ``cfg.duration_s`` ends).
        positions: its requests' places in the run, 0-based after the warm-up:
            a list (request i is ``positions[i]``), or ``(j, n)`` for every
            n-th place from j (a duration-bounded phase, count unknown).
        offsets: its slice of the open-loop schedule, s from the common start
            (None in a closed loop).
        start_at: ``perf_counter()`` time, on this process's clock, at which
            its phase clock starts (None: at once, after its connections open).
    """

    count: int | None
    positions: list[int] | tuple[int, int]
    offsets: list[float] | None = None
    start_at: float | None = None

    def position(self, i: int) -> int:
        """The run place of this share's request ``i``."""
        if isinstance(self.positions, tuple):
            j, n = self.positions
            return j + n * i
        return self.positions[i]


class PhaseAborted(ServerError):
    """The server stopped accepting connections part-way through a phase.

    Attributes:
        records: the requests that ended before it did (failed ones included),
            in issue order, so the run can be stored as failed with them.
    """

    def __init__(self, message: str, records: list[RequestRecord]) -> None:
        super().__init__(message)
        self.records = records


def salted(messages: Messages, tag: str) -> Messages:
    """``messages`` with ``tag`` put before the last user message's text.

    A unique tag per request stops a server's prompt cache from serving a
    repetition's prompts from an earlier repetition, which would make run 1
    (cold cache) systematically slower than the rest. Earlier turns stay
    untouched, so a conversation's shared history is still cacheable, as in
    real chat traffic.
    """
    out = [dict(m) for m in messages]
    for m in reversed(out):
        if m.get("role") == "user":
            m["content"] = tag + m["content"]
            break
    return out


class _Requests:
    """Request bytes by request index (encoded ahead when the count is known).

    With synthetic lengths (``cfg.input_tokens`` / ``output_tokens``) each
    request's prompt and ``max_tokens`` come from
    :class:`~tokcaliper.load.synthetic.SyntheticWorkload`, sized before the
    clock (the unique tag is part of the counted prompt). With shared
    prefixes each request's messages start with its group's system prompt
    (:class:`~tokcaliper.load.sessions.SharedPrefixes`).
    """

    def __init__(self, cfg: LoadConfig, prompts: list[Messages], ep: Endpoint, offset: int,
                 count: int | None, synth: Workload | None = None,
                 prefixes: SharedPrefixes | None = None,
                 positions: Callable[[int], int] | None = None) -> None:
        self.cfg, self.prompts, self.ep, self.offset = cfg, prompts, ep, offset
        self.synth = synth
        self.prefixes = prefixes
        self.position = positions or (lambda i: i)
        self.lengths: dict[int, tuple[int, int | None, int | None]] = {}
        self.groups: dict[int, int] = {}
        mine = make_workload(cfg) if synth is None else None
        owned = mine is not None
        if mine is not None:
            self.synth = mine
            mine.prepare()
        try:
            self._ready = [self._build(i) for i in range(count)] if count is not None else None
        finally:
            if owned and count is not None:
                self.synth.close()  # type: ignore[union-attr]

    def _build(self, i: int) -> bytes:
        at = self.offset + self.position(i)  # the request's place in the run (one worker's share: its own)
        messages = self.prompts[at % len(self.prompts)]
        tag = "" if self.cfg.prompt_salt is None else f"[{self.cfg.prompt_salt}.{at}] "
        if tag:
            messages = salted(messages, tag)
        if self.synth is None:
            return self.ep.request(chat_body(self.cfg, self._prefixed(i, messages)))
        plan = self.synth.plan(at, tag, messages)
        self.lengths[i] = (plan.max_tokens, plan.input_tokens, plan.output_tokens)
        return self.ep.request(chat_body(self.cfg, self._prefixed(i, plan.messages), max_tokens=plan.max_tokens,
                                         min_tokens=plan.output_tokens))

    def _prefixed(self, i: int, messages: Messages) -> Messages:
        if self.prefixes is None:
            return messages
        self.groups[i], messages = self.prefixes.apply(self.offset + i, messages)
        return messages

    def __getitem__(self, i: int) -> bytes:
        return self._ready[i] if self._ready is not None else self._build(i)

    def stream(self, i: int, *, index: int, warmup: bool, scheduled: float) -> RawStream:
        """The empty :class:`RawStream` of request ``i`` (its budget and requested lengths set)."""
        group = self.groups.get(i)
        if i not in self.lengths:
            return RawStream(index=index, warmup=warmup, scheduled=scheduled, max_tokens=self.cfg.max_tokens,
                             prefix_group=group)
        budget, req_in, req_out = self.lengths[i]
        return RawStream(index=index, warmup=warmup, scheduled=scheduled, max_tokens=budget,
                         requested_prompt_tokens=req_in, requested_output_tokens=req_out,
                         prefix_group=group)


class _Collector:
    """Finished streams; parses them at the end (or when the backlog is large)."""

    def __init__(self, on_request: OnRequest | None) -> None:
        self.records: list[RequestRecord] = []
        self.backlog: list[RawStream] = []
        self.nbytes = 0
        self.run_start = 0.0
        self.on_request = on_request
        self.cap_waits = 0  # open loop: arrivals that found the in-flight cap reached
        self.cap_late = 0  # … and whose wait for a slot passed DISPATCH_BOUND_S

    def add(self, raw: RawStream) -> None:
        self.backlog.append(raw)
        self.nbytes += raw.nbytes
        if self.nbytes > PARSE_BACKLOG_BYTES:
            self.flush()
        if self.on_request is not None:
            self.on_request(raw.index)

    def flush(self) -> None:
        self.records.extend(r.parse(self.run_start) for r in self.backlog)
        self.backlog.clear()
        self.nbytes = 0

    @property
    def count(self) -> int:
        return len(self.records) + len(self.backlog)


async def run_workers(worker: Callable[[], Awaitable[None]], n: int) -> None:
    """Run ``n`` copies of ``worker`` until all return; on an error or a cancel, cancel the
    others and wait for them, so no stream outlives its phase."""
    tasks = [asyncio.create_task(worker()) for _ in range(n)]
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _closed_loop(pool: ConnectionPool, cfg: LoadConfig, reqs: _Requests, out: _Collector, *,
                       count: int | None, duration_s: float | None, warmup: bool, index_offset: int) -> None:
    next_index = 0
    deadline = out.run_start + duration_s if duration_s else None
    workers = min(cfg.concurrency, count) if count is not None else cfg.concurrency

    async def worker() -> None:
        nonlocal next_index
        while True:
            now = perf_counter()
            if (count is not None and next_index >= count) or (deadline is not None and now >= deadline):
                return
            i = next_index
            next_index += 1
            request = reqs[i]  # built (lazily) before its stream, so its lengths are known
            raw = reqs.stream(i, index=index_offset + i, warmup=warmup, scheduled=now)
            out.add(await stream_chat(pool, request, raw, timeout_s=cfg.request_timeout_s,
                                      first_token_timeout_s=cfg.first_token_timeout_s,
                                      token_timeout_s=cfg.token_timeout_s))

    await run_workers(worker, workers)


def make_workload(cfg: LoadConfig) -> Workload | None:
    """The workload that plans ``cfg``'s requests (trace, dataset or synthetic lengths), or None
    for the prompt set as it is. Call its ``prepare()`` before the clock."""
    if cfg.trace:
        return TraceWorkload(cfg)
    if cfg.dataset:
        return DatasetWorkload(cfg)
    if cfg.input_tokens or cfg.output_tokens:
        return SyntheticWorkload(cfg)
    return None


def _seed(cfg: LoadConfig) -> int | None:
    if cfg.arrival_seed is not None:
        return cfg.arrival_seed
    if cfg.prompt_salt is None:
        return None
    return int.from_bytes(hashlib.sha256(cfg.prompt_salt.encode()).digest()[:8], "big")


async def _open_loop(pool: ConnectionPool, cfg: LoadConfig, reqs: _Requests, out: _Collector, *,
                     offsets: list[float], index_offset: int) -> None:
    """Send request k at ``run_start + offsets[k]``, at most ``cfg.concurrency`` in flight.

    Each arrival is a timer callback (a ``timerfd`` where there is one:
    :mod:`tokcaliper.load.timer`) that sends at once on an idle connection (no
    task start in between); an arrival over the in-flight cap, or with no
    connection ready, waits, and the wait shows as its dispatch delay.
    """
    loop = asyncio.get_running_loop()
    timer = ArrivalTimer(loop)
    n = len(offsets)
    cap = cfg.concurrency
    in_flight = 0
    fired = 0
    waiting: deque[RawStream] = deque()
    finished = loop.create_future()
    failure: list[BaseException] = []
    tasks: set[asyncio.Task[RawStream]] = set()

    def start(raw: RawStream) -> None:
        nonlocal in_flight
        in_flight += 1
        k = raw.index - index_offset
        started = send_now(pool, reqs[k], loop)
        task = loop.create_task(stream_chat(pool, reqs[k], raw, timeout_s=cfg.request_timeout_s,
                                            first_token_timeout_s=cfg.first_token_timeout_s,
                                            token_timeout_s=cfg.token_timeout_s, started=started))
        tasks.add(task)
        task.add_done_callback(done)

    def done(task: asyncio.Task[RawStream]) -> None:
        nonlocal in_flight
        tasks.discard(task)
        in_flight -= 1
        if task.cancelled():
            return
        if task.exception() is not None:
            failure.append(task.exception())  # type: ignore[arg-type]
            if not finished.done():
                finished.set_result(None)
            return
        out.add(task.result())
        if waiting and not failure:
            raw = waiting.popleft()  # it waited for the cap: late past the bound because of it?
            out.cap_late += perf_counter() - raw.scheduled > DISPATCH_BOUND_S
            start(raw)
        if fired == n and in_flight == 0 and not finished.done():
            finished.set_result(None)

    def fire(k: int) -> None:
        """Send arrival k and every later one already due (a burst at one instant leaves
        back to back, not one loop pass apart), then arm the timer for the next."""
        nonlocal fired
        while True:
            fired += 1
            raw = reqs.stream(k, index=index_offset + k, warmup=False, scheduled=out.run_start + offsets[k])
            if in_flight < cap and not failure:
                start(raw)
            else:
                out.cap_waits += in_flight >= cap  # waited for the in-flight cap
                waiting.append(raw)
            k += 1
            if k == n:
                return
            due = out.run_start + offsets[k]
            if due > perf_counter():
                timer.at(due, partial(fire, k))
                return

    timer.at(out.run_start + offsets[0], partial(fire, 0))
    try:
        await finished
    finally:
        timer.close()
        for t in list(tasks):
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    if failure:
        raise failure[0]


async def run_phase_async(
    cfg: LoadConfig,
    prompts: list[Messages],
    *,
    warmup: bool = False,
    on_request: OnRequest | None = None,
    synth: Workload | None = None,
    prepared: _Requests | None = None,
    prefixes: SharedPrefixes | None = None,
    share: Share | None = None,
) -> Phase:
    """Run one phase: ``cfg.warmup`` warm-up requests, or the measured load.

    ``synth``: a prepared :class:`~tokcaliper.load.synthetic.SyntheticWorkload`
    (probed once per run) to size the prompts with; ``prepared``: the measured
    phase's requests already built (:func:`prepare_requests`), so that no
    sizing call falls inside the run's counter and telemetry window;
    ``prefixes``: the run's shared prefixes, built once per run (built here,
    before the clock, when ``cfg.shared_prefix`` is set and none is given).
    With ``cfg.turns`` > 1 the phase is multi-turn sessions
    (:func:`tokcaliper.load.sessions.session_loop`).

    Warm-up requests use prompt indices ``0 … warmup−1`` and measured ones
    continue from there, so no measured request reuses a warm-up prompt.
    Warm-up is always a closed loop; the measured phase is an open loop when
    ``cfg.rate_rps`` is set.

    ``share``: this process's part of a measured phase spread over several
    (:mod:`tokcaliper.load.distributed`): its request count, positions in the
    run (prompts, tags and record indices follow them), its slice of the
    open-loop schedule, and when its clock starts.

    Returns:
        The phase's records in issue order (``start_s`` relative to the
        phase's start, after its connections were opened), with the client's
        own figures (:class:`Phase`).

    Raises:
        PhaseAborted: the server refused connections (it is down); carries
            the records of the requests that had ended.
    """
    ep = endpoint(cfg.base_url)
    phase_late = 0.0
    # A connect is bounded like the wait for a first byte (a full listen queue drops handshakes).
    pool = ep.pool(connect_timeout_s=cfg.first_token_timeout_s or cfg.request_timeout_s)
    out = _Collector(on_request)
    monitor = LoopMonitor()
    if warmup:
        count, duration, offset = cfg.warmup, None, 0
    else:
        count, duration, offset = cfg.requests, cfg.duration_s, cfg.warmup
    if share is not None:
        count = share.count
    open_loop = not warmup and (cfg.rate_rps is not None or cfg.trace is not None)
    offsets: list[float] = []
    if open_loop and share is not None:
        offsets = list(share.offsets or [])
        count = len(offsets)
    elif open_loop and cfg.trace is not None:  # the trace's own times ÷ the speed-up
        tw = synth if isinstance(synth, TraceWorkload) else TraceWorkload(cfg)
        offsets = tw.offsets
        count = len(offsets)
    elif open_loop:
        offsets = arrival_offsets(cfg.rate_rps, cfg.arrival, burstiness=cfg.burstiness,  # type: ignore[arg-type]
                                  count=count, duration_s=None if count else duration,
                                  seed=_seed(cfg)).tolist()
        count = len(offsets)
    if prefixes is None and cfg.shared_prefix:
        prefixes = SharedPrefixes(cfg)
        prefixes.prepare()
    sessions = cfg.turns > 1
    reqs: _Requests | None
    if prepared is not None and not warmup:
        reqs = prepared
    elif sessions:
        reqs = None  # each turn's body is built when the previous answer is in
    else:
        reqs = _Requests(cfg, prompts, ep, offset, count, synth=synth, prefixes=prefixes,
                         positions=None if share is None else share.position)
    first_wave = min(cfg.concurrency, count if count is not None else cfg.concurrency)
    if open_loop:
        first_wave = min(first_wave, OPEN_LOOP_PREFILL)
    try:
        try:
            await pool.prefill(first_wave)  # off the clock
        except ConnectFailed as e:
            raise ServerGone(str(e)) from None
        if share is not None and share.start_at is not None:
            await asyncio.sleep(max(0.0, share.start_at - perf_counter()))
        monitor.start()
        out.run_start = perf_counter()
        if share is not None and share.start_at is not None:  # the common start, even if late:
            phase_late = out.run_start - share.start_at  # then its arrivals show the lateness as dispatch delay
            out.run_start = share.start_at
        if sessions:
            await session_loop(pool, cfg, prompts, ep, out, count=count, duration_s=duration,
                               warmup=warmup, index_offset=offset,
                               session_offset=0 if warmup else -(-cfg.warmup // cfg.turns),
                               prefixes=prefixes)
        elif open_loop and not offsets:
            pass  # a worker with no arrival in its slice of the schedule
        elif open_loop:
            await _open_loop(pool, cfg, reqs, out, offsets=offsets, index_offset=offset)  # type: ignore[arg-type]
        else:
            await _closed_loop(pool, cfg, reqs, out, count=count, duration_s=duration,  # type: ignore[arg-type]
                               warmup=warmup, index_offset=offset)
        health = monitor.stop()
        await pool.settle()  # after the clock: learn keep-alive for the next phase
    except ServerGone as e:
        pool.close()
        out.flush()
        raise PhaseAborted(
            f"server at {cfg.base_url} stopped answering after {out.count} requests: {e}",
            sorted(out.records, key=lambda r: r.index),
        ) from None
    finally:
        pool.close()
    out.flush()
    phase = Phase(sorted(out.records, key=lambda r: r.index))
    phase.run_start, phase.start_late_s = out.run_start, phase_late
    if share is not None:  # the phase's own numbering → the request's place in the run
        for r in phase:
            r.index = offset + share.position(r.index - offset)
    st, ka = pool.stats, pool.keepalive
    phase.client = health.model_copy(update={
        "connections_opened": st.opened, "connections_prefilled": st.prefilled,
        "requests_reused": st.reused, "connect_s": percentiles(st.connect_s),
        "server_keeps_alive": {"keeps": True, "closes": False}.get(ka.mode),
        "reads_kernel_stamped": st.kernel_reads, "reads_loop_stamped": st.loop_reads,
        "cap": cfg.concurrency if open_loop else None, "cap_waits": out.cap_waits, "cap_late": out.cap_late,
    })
    if prefixes is not None:
        phase.prefix_method = prefixes.method
    if reqs is not None and reqs.synth is not None:
        if synth is None and prepared is None:
            reqs.synth.close()
        phase.lengths_method, phase.template_tokens = reqs.synth.method, reqs.synth.template_tokens
    if open_loop and share is None:  # a share's stats are the union's (its driver's)
        sent = [r.start_s for r in phase if r.start_s is not None]
        sched = [r.scheduled_s for r in phase if r.scheduled_s is not None]
        if cfg.trace is not None:  # the trace's mean rate; no renewal-process CI
            span = offsets[-1] - offsets[0] if len(offsets) > 1 else 0.0
            phase.arrivals = arrival_stats(sent, sched, (len(offsets) - 1) / span if span > 0 else 0.0, "trace")
        else:
            phase.arrivals = arrival_stats(sent, sched, cfg.rate_rps, cfg.arrival, cfg.burstiness)  # type: ignore[arg-type]
    return phase


def prepare_requests(cfg: LoadConfig, prompts: list[Messages],
                     synth: Workload | None,
                     prefixes: SharedPrefixes | None = None) -> _Requests | None:
    """The measured phase's requests, built now (prompts sized by ``synth``), or None.

    None without synthetic lengths, in sessions (``cfg.turns`` > 1), or when
    the count is not known ahead (``duration_s``); then the phase builds its
    requests itself.
    """
    if synth is None or cfg.requests is None or cfg.duration_s is not None or cfg.turns > 1:
        return None
    return _Requests(cfg, prompts, endpoint(cfg.base_url), cfg.warmup, cfg.requests, synth=synth,
                     prefixes=prefixes)


def run_phase(
    cfg: LoadConfig,
    prompts: list[Messages],
    *,
    warmup: bool = False,
    on_request: OnRequest | None = None,
    synth: Workload | None = None,
    prepared: _Requests | None = None,
    prefixes: SharedPrefixes | None = None,
) -> Phase:
    """Synchronous wrapper of :func:`run_phase_async` (its own event loop)."""
    if warmup and cfg.warmup == 0:
        return Phase()
    runner = asyncio.Runner()
    here = _RunningPhase()

    async def main() -> Phase:
        here.loop, here.task = asyncio.get_running_loop(), asyncio.current_task()
        return await run_phase_async(cfg, prompts, warmup=warmup, on_request=on_request,
                                     synth=synth, prepared=prepared, prefixes=prefixes)

    main_thread = threading.current_thread() is threading.main_thread()
    try:
        with _sigint_deferred():
            runner.get_loop()  # builds the event loop
        if main_thread:
            _RUNNING.append(here)
        try:
            return runner.run(main())
        except asyncio.CancelledError:
            if here.interrupted:
                raise KeyboardInterrupt from None
            raise
        finally:
            if main_thread:
                _RUNNING.remove(here)
    finally:
        runner.close()


class _RunningPhase:
    """The event loop and main task of a phase running in the main thread."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[Phase] | None = None
        self.interrupted = False


#: Phases running now in the main thread (innermost last); see :func:`interrupt_phase`.
_RUNNING: list[_RunningPhase] = []


def interrupt_phase() -> bool:
    """Stop the phase running in the main thread as asyncio's own Ctrl-C handler does:
    cancel its main task (the requests in flight are cancelled and the connections
    closed), wake the loop, and make :func:`run_phase` raise KeyboardInterrupt.

    For a stop signal (SIGTERM, SIGHUP) received when Python has no SIGINT handler to
    hand it to (SIGINT inherited as ignored): raising KeyboardInterrupt inside a
    running loop instead leaves its tasks destroyed mid-step ("Task exception was
    never retrieved" tracebacks). Call from the main thread (a signal handler).

    Returns:
        True when a phase was running and is now being cancelled; False otherwise.
    """
    for here in reversed(_RUNNING):
        if here.loop is not None and here.task is not None and not here.task.done():
            here.interrupted = True
            here.task.cancel()
            here.loop.call_soon_threadsafe(lambda: None)  # select() may be waiting long
            return True
    return False


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold Ctrl-C until the block ends, then raise it.

    A KeyboardInterrupt inside ``new_event_loop()`` leaves a half-built loop
    whose finalizer prints a traceback; the interrupt is delivered right
    after instead. Outside the main thread signals cannot be handled, so
    nothing changes there.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt
