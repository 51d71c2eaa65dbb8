"""Run one configuration R times with cool-downs, storing each run at once (M1).

Order of one repetition: server alive? → warm-up requests → counters before →
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
from datetime import datetime, timezone
from typing import Any, Protocol

from pydantic import BaseModel

from tokcaliper import __version__
from tokcaliper.errors import ServerError
from tokcaliper.load.driver import OnRequest, run_phase
from tokcaliper.load.prompts import Messages
from tokcaliper.load.summary import summarize
from tokcaliper.model.run import LoadConfig, Run
from tokcaliper.servers.counters import counter_delta, counters_error, read_counters
from tokcaliper.servers.managed import ManagedServer
from tokcaliper.store import Store


def utc_now() -> str:
    """Current UTC time, ISO 8601 with seconds."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Telemetry(Protocol):
    """What the runner needs from a telemetry sampler (e.g.
    :class:`tokcaliper.telemetry.TelemetrySampler`): a context manager around
    one run whose ``summary()`` returns a pydantic model."""

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: object) -> Any: ...

    def summary(self) -> BaseModel: ...


@dataclass
class RepeatSpec:
    """R identical runs of one arm.

    Attributes:
        load: what each run sends.
        prompts: the prompt set.
        repeat: number of runs (R ≥ 1).
        cooldown_s: rest between runs, seconds (none after the last).
        arm: label stored with each run.
        command_line: the exact tokcaliper command line (provenance).
        server: the managed server, if tokcaliper started it.
        server_version: version string of the server, if known.
        host: host information stored with every run.
        telemetry: factory of a fresh sampler per run, or None.
        unique_prompts: tag every request's prompt uniquely (see
            :func:`tokcaliper.load.driver.salted`) so that repetitions do not
            hit a prompt cache that earlier repetitions filled.
    """

    load: LoadConfig
    prompts: list[Messages]
    repeat: int
    cooldown_s: float = 0.0
    arm: str = "default"
    command_line: str = ""
    server: ManagedServer | None = None
    server_version: str | None = None
    host: dict[str, Any] = field(default_factory=dict)
    telemetry: Callable[[], Telemetry] | None = None
    unique_prompts: bool = True


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
        ServerError: the server died or stopped answering; earlier runs are stored.
    """
    session = uuid.uuid4().hex[:12]
    runs: list[Run] = []
    try:
        for rep in range(spec.repeat):
            runs.append(_one_run(spec, store, session, rep, on_request, on_cooldown))
            if on_run is not None:
                on_run(runs[-1])
    except ServerError as e:
        kept = f"runs {', '.join(f'#{r.id}' for r in runs)} stored" if runs else "no run stored"
        raise ServerError(f"{e} [run {len(runs) + 1}/{spec.repeat} lost; {kept} in {store.path}]") from None
    return runs


def _one_run(
    spec: RepeatSpec,
    store: Store,
    session: str,
    rep: int,
    on_request: OnRequest | None,
    on_cooldown: Callable[[float], None] | None,
) -> Run:
    """One repetition: warm-up, counters, telemetry, load, store."""
    if rep > 0 and spec.cooldown_s > 0:
        if on_cooldown is not None:
            on_cooldown(spec.cooldown_s)
        time.sleep(spec.cooldown_s)
    if spec.server is not None:
        spec.server.raise_if_dead()
    load = spec.load
    if spec.unique_prompts:
        load = load.model_copy(update={"prompt_salt": f"{session}.{rep}"})
    started = utc_now()
    warm = run_phase(load, spec.prompts, warmup=True)
    before = read_counters(load.base_url)
    sampler = spec.telemetry() if spec.telemetry else nullcontext()
    with sampler:
        try:
            records = warm + run_phase(load, spec.prompts, on_request=on_request)
        finally:
            if spec.server is not None:
                spec.server.raise_if_dead()
    finished = utc_now()
    after = read_counters(load.base_url)
    telemetry = None
    if spec.telemetry is not None:
        telemetry = sampler.summary().model_dump(mode="json")  # type: ignore[union-attr]
    run = Run(
        session=session, arm=spec.arm, repetition=rep, started_at=started,
        finished_at=finished, command_line=spec.command_line,
        server_command=spec.server.command_line if spec.server else None,
        server_version=spec.server_version, tool_version=__version__, host=spec.host,
        telemetry=telemetry, counters_delta=counter_delta(before, after),
        counters_error=counters_error(before, after),
        config=load, metrics=summarize(records), requests=records,
    )
    store.save_run(run)
    return run
