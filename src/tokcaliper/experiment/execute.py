"""Execute an experiment file: arms in the declared order, read back, store as you go (M4, M8).

One experiment is a session of runs in the store: every run carries the
experiment id as its ``session``, its arm, its position in the run order, the
rest actually taken before it and what the read-back printed. Warm-up runs
after a switch are stored with ``warmup_run`` set and excluded from analysis.
What happens instead of a run (an arm that cannot start, a switch command that
fails, a read-back that does not show the setting, a server that dies) is
stored as an :class:`~tokcaliper.store.sqlite.Outcome` with its reason, and
the other arms go on (M8). Because every measured position is stored the
moment it finishes, :func:`execute_experiment` called again on the same id
(``experiment resume``) runs only the positions still missing.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from tokcaliper.errors import ExperimentStopped, InputError, Interrupted, ServerError, StoreError
from tokcaliper.experiment.commands import fill_command, readback_matches
from tokcaliper.experiment.analysis import sequential_decision
from tokcaliper.experiment.order import schedule
from tokcaliper.experiment.runner import SERVER_DIED, RunPlace, RunSetup, measure_run
from tokcaliper.experiment.spec import ArmSpec, ExperimentSpec
from tokcaliper.experiment.switch import MAX_READ_BYTES, run_command, short
from tokcaliper.load.driver import OnRequest
from tokcaliper.load.prompts import Messages, load_prompts
from tokcaliper.model.run import Run
from tokcaliper.model.timestamps import utc_now_iso
from tokcaliper.servers.counters import discover_model
from tokcaliper.servers.local import fill_local_placeholders, server_version
from tokcaliper.servers.managed import ManagedServer, check_reachable, free_port
from tokcaliper.servers.url import server_url
from tokcaliper.stats.sequential import SequentialDecision
from tokcaliper.store import Store
from tokcaliper.model.experiment import Outcome

__all__ = ["ExperimentEvents", "ExperimentResult", "Segment", "create_experiment",
           "execute_experiment", "segments"]

OnMismatch = Literal["stop", "continue"]


@dataclass
class ExperimentEvents:
    """Callbacks for a live display (all optional).

    Attributes:
        on_status: a short line on what happens now ("switching to arm B").
        on_run: a measured or warm-up run was stored.
        on_outcome: an outcome (failed start, mismatch, …) was stored.
        on_request: one measured request finished (progress within a run).
    """

    on_status: Callable[[str], None] = lambda _text: None
    on_run: Callable[[Run], None] = lambda _run: None
    on_outcome: Callable[[Outcome], None] = lambda _o: None
    on_request: OnRequest | None = None


@dataclass
class ExperimentResult:
    """What one call of :func:`execute_experiment` did.

    Attributes:
        experiment_id: the id (runs carry it as ``session``).
        runs: runs stored by this call, in order (warm-up runs included, flagged).
        outcomes: outcomes stored by this call.
        pending: measured positions still missing afterwards (arms that failed,
            or pairs not needed because the sequential rule decided).
        decision: the sequential rule's last decision (``until_decided`` only).
        already_decided: the rule had decided before this call, which measured nothing.
    """

    experiment_id: str
    runs: list[Run] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)
    decision: SequentialDecision | None = None
    already_decided: bool = False


@dataclass(frozen=True)
class Segment:
    """One stretch of the schedule on one arm: a switch, its warm-ups, its measured runs.

    Attributes:
        arm: the arm's name. warmups: warm-up runs after the switch.
        positions: measured positions in this stretch, in order.
    """

    arm: str
    warmups: int
    positions: tuple[int, ...]


def segments(spec: ExperimentSpec) -> list[Segment]:
    """The experiment's schedule cut at every switch (see :func:`tokcaliper.experiment.order.schedule`)."""
    out: list[Segment] = []
    arm, warm, positions = None, 0, []  # type: ignore[var-annotated]
    for step in schedule(spec.run_order(), spec.warmup_runs):
        if step.kind == "switch":
            if arm is not None:
                out.append(Segment(arm, warm, tuple(positions)))
            arm, warm, positions = step.arm, 0, []
        elif step.kind == "warmup":
            warm += 1
        else:
            positions.append(step.position)
    if arm is not None:
        out.append(Segment(arm, warm, tuple(positions)))
    return out


def create_experiment(spec: ExperimentSpec, source_text: str, store: Store,
                      base_dir: Path | None = None) -> str:
    """Store a new experiment (before any run) and return its id.

    A relative ``load.prompts`` is resolved here, once, against ``base_dir`` (the
    experiment file's folder; None: the current folder) and stored absolute, so that
    ``experiment resume`` from any folder reads the same file (issue 22 item 5).
    """
    exp_id = uuid.uuid4().hex[:12]
    prompts_path = None
    if spec.load.prompts is not None:
        p = Path(spec.load.prompts).expanduser()
        prompts_path = str((p if p.is_absolute() or base_dir is None else base_dir / p).absolute())
    store.create_experiment(exp_id, spec.name or "experiment", spec.model_dump(mode="json"),
                            source_text, utc_now_iso(), prompts_path=prompts_path)
    return exp_id


def prompts_digest(prompts: list[Messages]) -> str:
    """SHA-256 (hex) of a prompt set's canonical JSON: the same prompts give the same digest
    whatever the file's layout (key order, spacing, BOM)."""
    text = json.dumps(prompts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _experiment_prompts(exp_id: str, spec: ExperimentSpec, store: Store,
                        base_dir: Path | None) -> list[Messages]:
    """The prompts ``exp_id`` measures with: the file its first run resolved (or the built-in
    set), checked against the digest stored then; recorded at the first call.

    Raises:
        InputError: the prompts file cannot be read, or holds other prompts than when the
            experiment's first run read it.
    """
    row = store.get_experiment(exp_id)
    path = row.prompts_path
    if path is None and spec.load.prompts is not None:  # stored before schema v4
        p = Path(spec.load.prompts)
        path = str(p if p.is_absolute() or base_dir is None else base_dir / p)
    prompts = load_prompts(Path(path) if path else None)
    digest = prompts_digest(prompts)
    if row.prompts_sha256 is None:
        store.set_experiment_prompts(exp_id, path, digest)
    elif row.prompts_sha256 != digest:
        where = f"prompts file {path}" if path else "the built-in prompt set"
        raise InputError(
            f"experiment {exp_id}: {where} has changed since the experiment's first run "
            f"(prompts sha256 {row.prompts_sha256[:12]}…, now {digest[:12]}…); its runs would not "
            "be comparable: restore the file, or start a new experiment")
    return prompts


def _argv(template: str, arm: ArmSpec | None, *, port: int | None, host: str | None,
          shell: bool = False) -> list[str]:
    """argv of an experiment command; ``{llama_server}``/``{smollm2}`` name the local default."""
    template = fill_local_placeholders(template)
    return fill_command(template, value=None if arm is None else arm.value_text, port=port,
                        host=host, shell=shell)


class _Server:
    """The server the load goes to: a live URL, or a managed process we restart per arm."""

    def __init__(self, health_timeout_s: float) -> None:
        self.health_timeout_s = health_timeout_s
        self.managed: ManagedServer | None = None
        self.base_url: str | None = None
        self.version: str | None = None

    def use_url(self, url: str) -> None:
        self.base_url = server_url(url, what="url")
        check_reachable(self.base_url)

    def start(self, argv_for_port: Callable[[int], list[str]]) -> None:
        """(Re)start a managed server; raises ServerError when it does not come up."""
        self.stop()
        port = free_port()
        server = ManagedServer(argv_for_port(port), port=port, health_timeout_s=self.health_timeout_s)
        server.start()
        self.managed, self.base_url = server, server.base_url
        self.version = server_version(server.argv[0])

    def stop(self) -> None:
        if self.managed is not None:
            self.managed.stop()
        self.managed = None


def execute_experiment(
    exp_id: str,
    spec: ExperimentSpec,
    store: Store,
    *,
    base_dir: Path | None = None,
    on_mismatch: OnMismatch = "stop",
    events: ExperimentEvents | None = None,
    telemetry: Callable[[], object] | None = None,
    idle_power: Callable[[], dict[str, float]] | None = None,
    host: object | None = None,
    command_line: str | None = None,
) -> ExperimentResult:
    """Run every measured position of ``exp_id`` not yet stored, in the declared order.

    Args:
        exp_id: from :func:`create_experiment` (or a stored one, to resume).
        spec: the validated experiment file.
        store: where runs and outcomes go, each the moment it exists.
        base_dir: folder a relative prompts path is relative to, for an experiment stored
            before schema v4 (later ones keep the path :func:`create_experiment` resolved).
        on_mismatch: ``"stop"`` (default) ends the experiment at a read-back
            mismatch; ``"continue"`` stores that arm's runs as invalid and goes on.
        events: live-display callbacks.
        telemetry: factory of a fresh telemetry sampler per run (None: off).
        idle_power: measures idle power once, before the first run (M5).
        host: host information stored with every run, or a function giving it, called once
            the claim is held (its bandwidth probe takes ~1 s: a second process must not
            spend it before it learns that another one holds the experiment).
        command_line: provenance stored with every run.

    Returns:
        :class:`ExperimentResult`.

    An ``until_decided`` experiment whose rule has already decided measures nothing
    (``already_decided`` in the result).

    Raises:
        ExperimentBusy: another live process is measuring ``exp_id`` (its pid is named).
        ExperimentStopped: a read-back mismatch with ``on_mismatch="stop"``.
        ServerError: the live server (``url``) is unreachable or died; runs so far are stored.
        InputError: a command template cannot be filled, the prompts file is bad or has
            changed since the experiment's first run.
        Interrupted: Ctrl-C, SIGTERM or SIGHUP; the message says which runs are kept and
            gives the resume command.
    """
    ev = events or ExperimentEvents()
    result = ExperimentResult(experiment_id=exp_id)
    # One process measures an experiment at a time (a second `resume` refuses, naming
    # the holder's pid); what is done is read only once the claim is held.
    store.claim_experiment(exp_id)
    try:
        return _execute_claimed(exp_id, spec, store, result, ev, base_dir=base_dir,
                                on_mismatch=on_mismatch, telemetry=telemetry,
                                idle_power=idle_power, host=host, command_line=command_line)
    finally:
        try:
            store.release_experiment(exp_id)
        except StoreError:
            pass  # must not hide the outcome; a claim of a process that has ended is stale anyway


def _execute_claimed(
    exp_id: str, spec: ExperimentSpec, store: Store, result: ExperimentResult,
    ev: ExperimentEvents, *, base_dir: Path | None, on_mismatch: OnMismatch,
    telemetry: Callable[[], object] | None, idle_power: Callable[[], dict[str, float]] | None,
    host: object | None, command_line: str | None,
) -> ExperimentResult:
    """:func:`execute_experiment` once this process holds the experiment's claim."""
    if callable(host):
        host = host()
    prompts = _experiment_prompts(exp_id, spec, store, base_dir)
    command_line = command_line or shlex.join(["tokcaliper", *sys.argv[1:]])

    stored = store.session_runs(exp_id)
    if spec.until_decided:
        # Decided before: nothing to do (another pair would break the rule's error rates).
        decision = sequential_decision(spec, stored)
        if decision is not None and decision.decided:
            result.decision, result.already_decided = decision, True
            store.set_experiment_status(exp_id, "finished")
            return result
    done = {r.position for r in stored if not r.warmup_run and r.position is not None
            and not (r.invalid_reason or "").startswith(SERVER_DIED)}  # measure a crashed run again
    repetition = _repetitions(spec)
    previous_end: float | None = None
    failed_arms: set[str] = set()
    idle: dict[str, float] | None = None
    server = _Server(spec.load.health_timeout_s)
    # Switch and load arms share one server (a live URL or one started once).
    switch_arms = spec.arms[0].kind in ("switch", "load")
    load_arms = spec.arms[0].kind == "load"

    def outcome(position: int | None, arm: str, kind: str, reason: str) -> None:
        o = Outcome(position=position, arm=arm, kind=kind, reason=reason, at=utc_now_iso())
        store.save_outcome(exp_id, o)
        result.outcomes.append(o)
        ev.on_outcome(o)

    store.set_experiment_status(exp_id, "running")
    finished = False
    try:
        def start_shared() -> None:
            ev.on_status(f"starting server: {spec.server_cmd}")
            server.start(lambda port: _argv(spec.server_cmd, None, port=port,  # type: ignore[arg-type]
                                            host="127.0.0.1"))

        if switch_arms:
            if spec.url is not None:
                server.use_url(spec.url)
            else:
                start_shared()
        for seg in segments(spec):
            pending = [p for p in seg.positions if p not in done]
            if not pending:
                continue
            arm = spec.arm(seg.arm)
            if arm.name in failed_arms:
                continue
            ev.on_status(f"switching to arm {arm.name}")
            failure = _switch(arm, server, spec.command_timeout_s)
            if failure is not None:
                kind, reason = failure
                outcome(None, arm.name, kind, reason)
                failed_arms.add(arm.name)
                continue
            readback, valid, invalid_reason = None, True, None
            if arm.readback is not None:
                readback, valid, invalid_reason = _read_back(arm, server, spec.command_timeout_s)
                if not valid:
                    outcome(pending[0], arm.name, "readback_mismatch", invalid_reason or "")
                    if on_mismatch == "stop":
                        kept = len([r for r in stored if not r.warmup_run]) + len(
                            [r for r in result.runs if not r.warmup_run])
                        store.set_experiment_status(exp_id, "stopped")
                        raise ExperimentStopped(
                            f"experiment {exp_id} stopped: {invalid_reason}; {kept} measured run(s) "
                            f"kept in {store.path}; fix the setting and run `tokcaliper experiment "
                            f"resume {exp_id}` (or use --on-mismatch continue)")
            if idle is None:
                idle = idle_power() if idle_power is not None else {}
            base_url = server.base_url
            assert base_url is not None
            arm_load = spec.arm_load(arm.name)
            load = arm_load.to_load_config(base_url, model=discover_model(base_url))
            setup = RunSetup(
                load=load, prompts=prompts, command_line=command_line, server=server.managed,
                server_version=server.version, host=host, telemetry=telemetry,  # type: ignore[arg-type]
                idle_power_w=idle, idle_duration_s=None,
                unique_prompts=arm_load.unique_prompts, max_error_rate=arm_load.max_error_rate,
            )
            common = dict(session=exp_id, arm=arm.name, valid=valid, invalid_reason=invalid_reason,
                          readback=readback)
            try:
                for w in range(seg.warmups):
                    _rest(spec, ev, f"warm-up run {w + 1}/{seg.warmups} of arm {arm.name}")
                    run, previous_end = measure_run(
                        setup, RunPlace(repetition=w, position=None, warmup_run=True,
                                        previous_end=previous_end, **common), store)
                    result.runs.append(run)
                    ev.on_run(run)
                for pos in pending:
                    _rest(spec, ev, f"run at position {pos + 1} (arm {arm.name})")
                    run, previous_end = measure_run(
                        setup, RunPlace(repetition=repetition[pos], position=pos,
                                        previous_end=previous_end, **common),
                        store, on_request=ev.on_request)
                    done.add(pos)
                    result.runs.append(run)
                    ev.on_run(run)
                    if spec.until_decided:
                        result.decision = sequential_decision(spec, [*stored, *result.runs])
                        if result.decision is not None and result.decision.decided:
                            kind = "cap_reached" if result.decision.verdict == "inconclusive" else "decided"
                            outcome(pos, arm.name, kind, result.decision.reason)
                            raise _Decided
            except _Decided:
                break
            except ServerError as e:
                outcome(None, arm.name, "run_failed", str(e))
                if load_arms and server.managed is not None and arm_load.on_server_death == "restart":
                    start_shared()  # the segment's other runs are left to `experiment resume`
                    continue
                if server.managed is None or switch_arms:
                    raise  # the live server is gone: nothing else can run
                server.stop()  # the next segment restarts it
        finished = True
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP (see tokcaliper.cli.main): say what is kept
        raise Interrupted(_kept_note(exp_id, store, stored, result)) from None
    finally:
        server.stop()
        all_positions = {p for p, _arm in spec.run_order()}
        result.pending = sorted(all_positions - done)
        decided = result.decision is not None and result.decision.decided
        if finished:
            store.set_experiment_status(exp_id, "finished" if not result.pending or decided else "incomplete")
        elif store.get_experiment(exp_id).status == "running":
            store.set_experiment_status(exp_id, "stopped")
    return result


def _kept_note(exp_id: str, store: Store, stored: list[Run], result: ExperimentResult) -> str:
    """What an interrupted experiment keeps, and how to go on (as ``bench`` says it)."""
    measured = [r for r in [*stored, *result.runs] if not r.warmup_run]
    here = [r for r in result.runs if not r.warmup_run]
    ids = ", ".join(f"#{r.id}" for r in here)
    runs = (f"{len(measured)} measured run(s) of experiment {exp_id} kept in {store.path}"
            + (f" ({len(here)} from this call: {ids})" if here else " (none from this call)"))
    return (f"the run in progress is not stored; {runs}; continue with "
            f"`tokcaliper experiment resume {exp_id} --db {store.path}`")


class _Decided(Exception):
    """The sequential rule decided: stop adding pairs (not an error)."""


def _repetitions(spec: ExperimentSpec) -> dict[int, int]:
    """Position → 0-based index of that run within its arm."""
    seen: dict[str, int] = {}
    out: dict[int, int] = {}
    for pos, arm in spec.run_order():
        out[pos] = seen.get(arm, 0)
        seen[arm] = out[pos] + 1
    return out


def _switch(arm: ArmSpec, server: _Server, timeout_s: float) -> tuple[str, str] | None:
    """Put the system in ``arm``'s state; returns ``(kind, reason)`` when that fails (M8)."""
    if arm.kind == "load":  # only the load changes: nothing to switch
        return None
    if arm.kind == "server":
        try:
            server.start(lambda port: _argv(arm.server_cmd, arm, port=port,  # type: ignore[arg-type]
                                            host="127.0.0.1", shell=arm.shell))
        except (ServerError, InputError) as e:
            return "failed_start", f"arm {arm.name}: {e}"
        return None
    port, host_ = _port_host(server)
    res = run_command(_argv(arm.switch, arm, port=port, host=host_, shell=arm.shell),  # type: ignore[arg-type]
                      timeout_s)
    if not res.ok:
        return "switch_failed", f"arm {arm.name}: switch command {res.describe_failure()}"
    return None


def _read_back(arm: ArmSpec, server: _Server, timeout_s: float) -> tuple[str, bool, str | None]:
    """Run the read-back: (what it printed, cut to store; matches?; why not).

    The whole output is matched, never the stored copy (issue 22 item 7: 2100 × "x" then
    an error line passed ``expect_regex = "x+"`` on a 2000-character cut); output over
    :data:`~tokcaliper.experiment.switch.MAX_READ_BYTES` cannot be matched and is refused.
    """
    port, host_ = _port_host(server)
    res = run_command(_argv(arm.readback, arm, port=port, host=host_, shell=arm.shell),  # type: ignore[arg-type]
                      timeout_s)
    printed = short(res.stdout.strip())
    expected = arm.expect if arm.expect is not None else f"/{arm.expect_regex}/"
    if not res.ok:
        return printed, False, f"arm {arm.name}: read-back {res.describe_failure()}"
    if res.overflow:
        return printed, False, (f"arm {arm.name}: read-back {' '.join(res.argv)!r} printed more than "
                                f"{MAX_READ_BYTES:,} bytes, expected {expected!r}")
    if not readback_matches(res.stdout, arm.expect, arm.expect_regex):
        return printed, False, (f"arm {arm.name}: read-back {' '.join(res.argv)!r} printed "
                                f"{printed[:200]!r}, expected {expected!r}")
    return printed, True, None


def _port_host(server: _Server) -> tuple[int | None, str | None]:
    from urllib.parse import urlsplit

    if server.base_url is None:
        return None, None
    u = urlsplit(server.base_url)
    return u.port, u.hostname


def _rest(spec: ExperimentSpec, ev: ExperimentEvents, what: str) -> None:
    rest = spec.rest_before_run_s
    if rest > 0:
        ev.on_status(f"resting {rest:g} s before {what}")
        time.sleep(rest)
    ev.on_status(what)
