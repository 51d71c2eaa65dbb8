"""Measure one run and store it at once; repeat one configuration R times (M1).

:func:`measure_run` is the one place a run is measured (``bench`` and the
experiment runner both call it). Order of one run: server alive? → warm-up requests → counters before →
telemetry on → measured load → telemetry off → counters after → summarise →
store (one transaction). Counters and telemetry thus cover exactly the
measured requests. A server that dies mid-run raises :class:`ServerError`; every
run finished before it is already in the store.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, Protocol

from tokcaliper import __version__
from tokcaliper.errors import Interrupted, ServerError
from tokcaliper.load.driver import OnRequest, Phase, PhaseAborted, make_workload, prepare_requests, run_phase
from tokcaliper.load.trace import TraceWorkload
from tokcaliper.load.lengths import length_report
from tokcaliper.load.prefix_cache import prefix_cache_report
from tokcaliper.load.sessions import SharedPrefixes
from tokcaliper.load.prompts import Messages
from tokcaliper.load.summary import MAX_ERROR_RATE, error_rate_reason, summarize
from tokcaliper.model.run import LoadConfig, Run
from tokcaliper.model.telemetry import HostInfo, TelemetrySummary
from tokcaliper.model.timestamps import utc_now_iso
from tokcaliper.servers.counters import counter_delta, counters_error, read_counters
from tokcaliper.servers.managed import ManagedServer
from tokcaliper.processes import listening_pid
from tokcaliper.servers.served import read_served
from tokcaliper.store import Store

if TYPE_CHECKING:
    from tokcaliper.telemetry import TelemetrySampler


class Telemetry(Protocol):
    """What the runner needs from a telemetry sampler (e.g.
    :class:`tokcaliper.telemetry.TelemetrySampler`): a context manager around
    one run whose ``summary()`` returns the run's telemetry summary. Optional:
    ``watch_process(pid, role)`` (the runner passes the managed server's pid) and
    ``samples`` (the raw samples, stored with the run)."""

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: object) -> Any: ...

    def summary(self) -> TelemetrySummary: ...


def worker_host_sampler(interval_s: float = 0.1) -> TelemetrySampler:
    """The sampler of a load worker's own host, made in the worker process (issue 23 item 3).

    Host CPU (utilisation, steal; ``/proc/stat``) and the worker process itself
    (``/proc/self/stat``) every ``interval_s`` seconds (the run's own sampler's
    interval; default 0.1 s = 10 Hz); no GPU back-end: the driver's sampler
    reads the server's devices. Ray sends this function to the workers by name
    (:func:`tokcaliper.load.distributed.run_phase`).
    """
    from tokcaliper.telemetry import CpuBackend, ProcessBackend, TelemetrySampler

    return TelemetrySampler(interval_s=interval_s, backends=[CpuBackend(), ProcessBackend(role="client")])


@dataclass(kw_only=True)
class RunSetup:
    """Everything a run needs besides its place in a session.

    Attributes:
        load: what each run sends.
        prompts: the prompt set.
        command_line: the exact tokcaliper command line (provenance).
        server: the managed server, if tokcaliper started it.
        server_version: version string of the server, if known.
        host: host information stored with every run.
        telemetry: factory of a fresh sampler per run, or None.
        idle_power_w / idle_duration_s: idle power per device measured once
            before the first run (M5); copied into every run's telemetry
            summary, its one home.
        unique_prompts: tag every request's prompt uniquely (see
            :func:`tokcaliper.load.driver.salted`) so that repetitions do not
            hit a prompt cache that earlier repetitions filled.
        max_error_rate: a run with a larger share of failed measured
            requests (or none completed) is stored invalid
            (:func:`tokcaliper.load.summary.error_rate_reason`).
    """

    load: LoadConfig
    prompts: list[Messages]
    command_line: str = ""
    server: ManagedServer | None = None
    server_version: str | None = None
    host: HostInfo | None = None
    telemetry: Callable[[], Telemetry] | None = None
    idle_power_w: dict[str, float] = field(default_factory=dict)
    idle_duration_s: float | None = None
    unique_prompts: bool = True
    max_error_rate: float = MAX_ERROR_RATE


@dataclass(kw_only=True)
class RepeatSpec(RunSetup):
    """R identical runs of one arm (``tokcaliper bench``).

    Attributes:
        repeat: number of runs (R ≥ 1).
        cooldown_s: rest between runs, seconds (none before the first).
        arm: label stored with each run.
        on_server_death: a managed server that dies during a run (the run is
            stored as failed with its last log lines): ``"stop"`` the
            repetitions (raise), or ``"restart"`` it and go on with the next run.
        on_restart: called with a one-line note before a restart.
        restarts: K ≥ 1 server starts: with K > 1 the managed server is stopped
            and started again before every block of ``repeat`` runs after the
            first, and each run stores its block as ``restart`` (0..K−1), so
            restart-level and run-level variance can be split (issue 17 item 7).
            ``repeat`` is then the runs per restart. on_planned_restart: called
            with a one-line note before each of those restarts.
        (the rest: see :class:`RunSetup`)
    """

    repeat: int
    cooldown_s: float = 0.0
    arm: str = "default"
    on_server_death: Literal["stop", "restart"] = "stop"
    on_restart: Callable[[str], None] | None = None
    restarts: int = 1
    on_planned_restart: Callable[[str], None] | None = None


#: ``invalid_reason`` of a run during which the server died starts with this
#: (an experiment's resume measures that position again).
SERVER_DIED = "server died during the run: "

#: Server log lines kept in a failed run's reason.
LOG_TAIL_LINES = 5


class ServerDied(ServerError):
    """The server died (or stopped answering) during a run; the run is stored as failed.

    Attributes:
        run: the stored failed run (``valid`` False, ``invalid_reason`` with
            the exit status and the server's last log lines).
    """

    def __init__(self, message: str, run: Run) -> None:
        super().__init__(message)
        self.run = run


def log_tail(server: ManagedServer | None, n: int = LOG_TAIL_LINES) -> list[str]:
    """The last ``n`` non-empty lines of a managed server's log (empty when unreadable)."""
    if server is None:
        return []
    try:
        data = server.log_path.read_bytes()[-16384:]
    except OSError:
        return []
    lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
    return [ln[:300] for ln in lines[-n:]]


@dataclass(frozen=True, kw_only=True)
class RunPlace:
    """Where a run sits in its session, and what the session knows about it.

    Attributes:
        session: session or experiment id.
        arm: arm label. repetition: 0-based index within the arm.
        position: 0-based position in the run order (None for a warm-up run).
        previous_end: monotonic time the session's previous run ended (None: first).
        warmup_run: a settling run after a switch, stored and excluded from analysis.
        valid / invalid_reason: whether the run may be analysed, and why not.
        readback: what the read-back printed before this run.
        restart: 0-based server start the run runs under (``bench --restarts``), else None.
    """

    session: str
    arm: str
    repetition: int
    position: int | None
    previous_end: float | None = None
    warmup_run: bool = False
    valid: bool = True
    invalid_reason: str | None = None
    readback: str | None = None
    restart: int | None = None


def attach_energy_per_token(telemetry: TelemetrySummary, output_tokens: int) -> None:
    """Set ``joules_per_output_token`` = ``energy_j`` / ``output_tokens`` on every device
    of ``telemetry`` that measured energy (J/token; M5's energy per token, per device).

    ``output_tokens`` is the measured requests' total (``RunMetrics.output_tokens``);
    the sampler is on during exactly the measured load (warm-up requests run before
    it starts), so energy and tokens cover the same span. Energy includes what the
    device draws at idle; subtract ``idle_power_w × duration`` for the marginal figure.

    Raises:
        Nothing; with ``output_tokens`` ≤ 0 nothing is set.
    """
    if output_tokens <= 0:
        return
    for d in telemetry.devices:
        if d.energy_j is not None:
            d.joules_per_output_token = d.energy_j / output_tokens


def run_repetitions(
    spec: RepeatSpec,
    store: Store,
    *,
    on_request: OnRequest | None = None,
    on_run: Callable[[Run], None] | None = None,
    on_cooldown: Callable[[float], None] | None = None,
) -> list[Run]:
    """Execute ``spec`` and store each run the moment it finishes.

    Returns:
        The stored runs, in order (``id`` set).

    Raises:
        ServerError: the server died or stopped answering (the broken run is
            stored as failed; with ``on_server_death="restart"`` a managed
            server is restarted instead), or did not come back after a restart.
        Interrupted: Ctrl-C (or SIGTERM/SIGHUP); earlier runs are stored, the message lists them.
    """
    session = uuid.uuid4().hex[:12]
    runs: list[Run] = []
    previous_end: float | None = None
    total = spec.repeat * spec.restarts
    if spec.restarts > 1 and spec.server is None:
        raise ServerError("restarts need a server tokcaliper starts (not --url)")
    try:
        for rep in range(total):
            restart = rep // spec.repeat if spec.restarts > 1 else None
            if restart and rep % spec.repeat == 0:  # a new block: restart the managed server
                assert spec.server is not None
                if spec.on_planned_restart is not None:
                    spec.on_planned_restart(f"restart {restart + 1}/{spec.restarts}: stopping and "
                                            "starting the server")
                spec.server.stop()
                spec.server.start()  # raises ServerError if it does not come back
            elif rep > 0 and spec.cooldown_s > 0:
                if on_cooldown is not None:
                    on_cooldown(spec.cooldown_s)
                time.sleep(spec.cooldown_s)
            place = RunPlace(session=session, arm=spec.arm, repetition=rep, position=rep,
                             previous_end=previous_end, restart=restart)
            try:
                run, previous_end = measure_run(spec, place, store, on_request=on_request)
            except ServerDied as died:
                runs.append(died.run)
                if on_run is not None:
                    on_run(died.run)
                kept = ", ".join(f"#{r.id}" for r in runs)
                if spec.on_server_death == "restart" and spec.server is not None and rep + 1 < total:
                    if spec.on_restart is not None:
                        spec.on_restart(f"run {rep + 1}/{total} stored as failed (#{died.run.id}): "
                                        f"{died}; restarting the server")
                    spec.server.stop()
                    spec.server.start()  # raises ServerError if it does not come back
                    previous_end = time.monotonic()
                    continue
                raise ServerDied(f"{died} [run {rep + 1}/{total} stored as failed #{died.run.id}; "
                                 f"runs {kept} in {store.path}]", died.run) from None
            runs.append(run)
            if on_run is not None:
                on_run(run)
    except ServerDied:
        raise
    except ServerError as e:
        raise ServerError(f"{e} [run {len(runs) + 1}/{total} lost; {_kept(runs, store)}]") from None
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP (see tokcaliper.cli.main): say what is kept
        raise Interrupted(f"run {len(runs) + 1}/{total} not stored; {_kept(runs, store)}") from None
    return runs


def _kept(runs: list[Run], store: Store) -> str:
    stored = f"runs {', '.join(f'#{r.id}' for r in runs)} stored" if runs else "no run stored"
    return f"{stored} in {store.path}"


def measure_run(
    setup: RunSetup,
    place: RunPlace,
    store: Store,
    *,
    on_request: OnRequest | None = None,
) -> tuple[Run, float]:
    """Measure one run and store it in one transaction before returning.

    Order: server alive? → warm-up requests → counters before → telemetry on →
    measured load → telemetry off → counters after → summarise → store.

    Returns:
        The stored run (``id`` set) and the monotonic time its load ended.

    Raises:
        ServerDied: the server died or stopped answering during the measured
            load; the run is stored first, invalid, with the reason and the
            server's last log lines.
        ServerError: the managed server was dead before the run, or the
            warm-up failed to connect.
        StoreError: the run could not be written.
    """
    if setup.server is not None:
        setup.server.raise_if_dead()
    load = setup.load
    if setup.unique_prompts:
        tag = place.repetition if place.position is None else place.position
        kind = "w" if place.warmup_run else ""
        load = load.model_copy(update={"prompt_salt": f"{place.session}.{place.arm}.{kind}{tag}"})
    started = utc_now_iso()
    start_mono = time.monotonic()
    # Synthetic lengths, a dataset or a trace: probe the server once per run, before its warm-up.
    synth = make_workload(load)
    if synth is not None:
        synth.prepare()
        if isinstance(synth, TraceWorkload):  # the block size the run used, stored with its config
            load = load.model_copy(update=synth.config_update())
    prefixes = None  # shared prefixes: sized once per run (tokenize calls), before its warm-up
    if load.shared_prefix:
        prefixes = SharedPrefixes(load)
        prefixes.prepare()
    try:
        warm = run_phase(load, setup.prompts, warmup=True, synth=synth, prefixes=prefixes)
        # Sized before the counters are read and telemetry starts: no tokenize call in the window.
        prepared = prepare_requests(load, setup.prompts, synth, prefixes)
    finally:
        if synth is not None:
            synth.close()
    served = read_served(load.base_url, load.model)  # model file and quantization, for the roofline (issue 25)
    before = read_counters(load.base_url)
    sampler = setup.telemetry() if setup.telemetry else nullcontext()
    proc = getattr(setup.server, "proc", None)
    server_pid = proc.pid if proc is not None else listening_pid(load.base_url)  # --url on loopback
    if server_pid is not None and hasattr(sampler, "watch_process"):
        # watched so that its CPU is not counted as other processes' (foreign load, issue 21)
        sampler.watch_process(server_pid, "server")  # type: ignore[union-attr]
    death: str | None = None
    with sampler:
        try:
            if load.workers > 1:  # spread over Ray workers (Ray imported only then)
                from tokcaliper.load import distributed

                interval = getattr(sampler, "interval_s", None)  # the workers sample as often as the driver
                host = None if setup.telemetry is None else (
                    partial(worker_host_sampler, interval) if interval else worker_host_sampler)
                phase = distributed.run_phase(load, setup.prompts, on_request=on_request, host_sampler=host)
            else:
                phase = run_phase(load, setup.prompts, on_request=on_request, synth=synth, prepared=prepared,
                                  prefixes=prefixes)
        except PhaseAborted as e:
            phase, death = Phase(e.records), str(e)
        if setup.server is not None:
            try:
                setup.server.raise_if_dead()
            except ServerError as e:
                death = str(e)
        if death is not None and setup.server is not None:
            tail = log_tail(setup.server)
            if tail:
                death += "; server's last log lines: " + " | ".join(tail)
    records = warm + phase
    finished = utc_now_iso()
    end_mono = time.monotonic()
    after = read_counters(load.base_url)
    telemetry = None
    samples = None
    if setup.telemetry is not None:
        telemetry = sampler.summary()  # type: ignore[union-attr]
        telemetry.idle_power_w = dict(setup.idle_power_w)
        telemetry.idle_duration_s = setup.idle_duration_s
        samples = getattr(sampler, "samples", None)
    metrics = summarize(records, client=phase.client, arrivals=phase.arrivals,  # other processes' load
                        slo_s=load.slo_s, steady_share=load.steady_state,  # tells the client's blame
                        foreign_cores=None if telemetry is None else telemetry.foreign_cpu_cores_mean)
    metrics.lengths = length_report(records, phase.lengths_method, phase.template_tokens)
    metrics.prefix_cache = prefix_cache_report(records, counter_delta(before, after), after.gauges,
                                               phase.prefix_method)
    if telemetry is not None:
        attach_energy_per_token(telemetry, metrics.output_tokens)
    valid, invalid_reason = place.valid, place.invalid_reason
    failing = error_rate_reason(metrics, setup.max_error_rate)
    if death is not None:
        valid, invalid_reason = False, SERVER_DIED + death
    elif phase.invalid_reason is not None:  # a load worker died: its requests are missing
        valid, invalid_reason = False, phase.invalid_reason
    elif failing is not None and valid:
        valid, invalid_reason = False, failing
    run = Run(
        session=place.session, arm=place.arm, repetition=place.repetition, position=place.position,
        rest_s=None if place.previous_end is None else start_mono - place.previous_end,
        warmup_run=place.warmup_run, valid=valid, invalid_reason=invalid_reason,
        readback=place.readback, restart=place.restart, served=served, started_at=started, finished_at=finished,
        command_line=setup.command_line,
        server_command=setup.server.command_line if setup.server else None,
        server_version=setup.server_version, tool_version=__version__, host=setup.host,
        telemetry=telemetry, counters_delta=counter_delta(before, after),
        counters_error=counters_error(before, after),
        config=load, metrics=metrics, requests=records,
    )
    store.save_run(run, samples)
    if death is not None:
        raise ServerDied(death, run)
    return run, end_mono
