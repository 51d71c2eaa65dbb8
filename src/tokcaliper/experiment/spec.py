"""The experiment file: a TOML file that declares two or more arms (M3, M4).

Example::

    name = "power cap 200 W against 180 W"
    url = "http://127.0.0.1:8080"     # the live server the switch arms run against
    runs_per_arm = 5
    warmup_runs = 1                   # after each switch; stored, excluded from analysis
    rest_s = 30                       # before each run
    order = "abba"                    # random-blocks (default; seed drawn) | alternate | abba | blocked
    metric = "aggregate_output_tok_s"
    effect = 0.05                     # the effect you care about (fraction)

    [load]                            # everything `tokcaliper bench` takes
    concurrency = 64
    requests = 256
    max_tokens = 128

    [[arms]]
    name = "200W"
    switch = "nvidia-smi -pl {value}"
    value = "200"
    readback = "nvidia-smi --query-gpu=power.limit --format=csv,noheader"
    expect = "200.00 W"

    [[arms]]
    name = "180W"
    switch = "nvidia-smi -pl {value}"
    value = "180"
    readback = "nvidia-smi --query-gpu=power.limit --format=csv,noheader"
    expect_regex = "180(\\.0+)? W"

An arm is either a managed server (``server_cmd``; restarted when the arm
changes), a ``switch`` command run against a live system (``url`` or a
top-level ``server_cmd`` started once), or a *load arm* that differs only in
its ``load`` (``load = {concurrency = 16}``) against that one server. A sweep,
``[sweep] concurrency = [1, 4, 16]`` (or ``rate_rps = [1, 2, 4]``) in place of
``[[arms]]``, is one load arm per level (:func:`sweep_arms`;
:mod:`tokcaliper.experiment.load_sweep` builds the same for ``bench`` and
``capacity``). Commands run without a shell unless
the arm says ``shell = true`` (see :mod:`tokcaliper.experiment.commands`).

Validation is pydantic with unknown keys forbidden and no type coercion
(``runs_per_arm = "5"`` is an error); :func:`parse_experiment` reports the
first error as one line naming the key path and its line in the file, e.g.
``exp.toml line 7: arms[1].value: Input should be a valid string, got [180]``.
"""

from __future__ import annotations

import math
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tokcaliper.errors import InputError
from tokcaliper.fileio import read_text
from tokcaliper.experiment.commands import PLACEHOLDERS, placeholders
from tokcaliper.experiment.order import OrderName, run_order
from tokcaliper.model.bounds import MAX_DURATION_S, MAX_INTERVAL_S, MAX_TIMEOUT_S
from tokcaliper.model.metrics import DEFAULT_METRIC, get_metric
from tokcaliper.model.run import LoadConfig
from tokcaliper.servers.url import server_url
from tokcaliper.validation import Problem, and_more, describe, problems

__all__ = ["LOCAL_PLACEHOLDERS", "SWEEP_AXES", "ArmSpec", "ExperimentSpec", "LoadSpec", "key_lines",
           "load_experiment", "parse_experiment", "read_experiment", "sweep_arm_name", "sweep_arms"]


class KeyedValueError(ValueError):
    """A validation error about one key of the table being validated.

    Raised inside model validators so that the loader can point at the key's
    line rather than at its table's header.
    """

    def __init__(self, key: str, message: str, cli: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        #: The same problem in the words of ``tokcaliper bench``'s options (None: derive it).
        self.cli = cli


class _Strict(BaseModel):
    # allow_inf_nan=False: TOML (and the CLI) accept inf and nan as floats; no
    # duration, timeout, interval or effect may be either.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


#: Upper bounds of counts: beyond them a value is a typo (2**63 runs would exhaust memory
#: building the run order, and overflow SQLite's integers).
MAX_RUNS_PER_ARM = 10_000
MAX_WARMUP_RUNS = 1_000
MAX_ARMS = 1_000
#: Seeds of ``numpy.random.default_rng``: non-negative; kept below 2**63 so SQLite stores them.
MAX_SEED = 2**63 - 1

#: Most load workers (Ray actors) one run may spread its load over.
MAX_WORKERS = 1024


class LoadSpec(_Strict):
    """The load of every run: the options of ``tokcaliper bench`` (see :class:`LoadConfig`).

    Attributes:
        model: model name to request (``None``: the server's first model).
        concurrency: closed-loop streams (≥ 1). requests: measured requests per
            run (default 8 × concurrency); duration_s: seconds per run instead.
        warmup: warm-up *requests* per run (default = concurrency), excluded from metrics.
        max_tokens, temperature, ignore_eos: generation settings.
        prompts: JSONL prompts file (``None``: built-in set).
        unique_prompts: tag each request's prompt so no run hits a cache an earlier one filled.
        request_timeout_s, health_timeout_s: timeouts, seconds.
        first_token_timeout_s, token_timeout_s: per-request timeouts to the first body byte and
            between body reads, seconds.
        max_error_rate: a run with a larger share of failed measured requests is stored invalid.
        telemetry_interval_s: sampling interval, s (0 = off; default 0.1 = 10 Hz). idle_seconds: idle
            power measurement before the first run (0 = off).
        slo: service-level objectives, e.g. ``"ttft=200ms,tpot=50ms,e2e=10s"``
            (kinds ttft, tpot, itl, e2e; units ms or s; :func:`tokcaliper.load.slo.parse_slo`):
            each run's attainment and goodput. steady_state: share of the peak in flight
            bounding each run's steady-state window, in (0, 1] (:mod:`tokcaliper.load.steady`).
        input_tokens, output_tokens: synthetic length distributions (``fixed:N``, ``normal:MEAN,SD``,
            ``lognormal:MEDIAN,SIGMA``, ``uniform:LO,HI``, ``empirical:FILE``;
            :mod:`tokcaliper.load.lengths`); input lengths need ``requests``. length_seed: their seed.
        dataset: ShareGPT- or OpenAI-style JSONL (:mod:`tokcaliper.load.datasets`); dataset_seed:
            its order; min_input_tokens / max_input_tokens: length filters (the server's /tokenize).
        trace: Mooncake JSONL replayed as an open loop (:mod:`tokcaliper.load.trace`);
            trace_speedup: its times are divided by this; trace_block_tokens: tokens per hash block
            (default: 512 scaled to fit the server's context). ``requests``: its first N records.
        rate_rps: open loop: mean arrivals per second (``None``: closed loop); ``concurrency``
            then caps the requests in flight (default 256). arrival: ``poisson`` | ``gamma`` |
            ``constant`` (open loop only); burstiness: gamma shape k (CV of the gaps 1/√k; gamma only).
        cooldown_s: rest between runs, seconds (an experiment file's ``rest_s`` does the same:
            give one of them). on_server_death: a started server that dies during a run:
            ``stop`` (resume later) or ``restart`` it and go on.

    Defaults that depend on other options are resolved by the properties
    :attr:`streams`, :attr:`warmup_requests` and :attr:`measured_requests`, the one
    home of those rules (closed loop: 4 streams, warm-up = streams, 8 requests per
    stream; open loop: ≤ 256 in flight, 4 warm-up requests, ~10 s of arrivals, at
    least 32). A field left ``None`` stays unresolved in the stored spec, so that an
    arm's override (:meth:`with_overrides`) recomputes the defaults of its level.

    Adding an option: one field here (bounds in ``Field``), its flag in
    :data:`CLI_FLAGS`, and its :class:`LoadConfig` field in :meth:`to_load_config`.
        shared_prefix: ``groups=G,tokens=P``, G system prompts of P tokens shared by the
            requests of each group; turns: requests per multi-turn session (history carried);
            think_time_s: pause between a session's answer and its next turn, s
            (:mod:`tokcaliper.load.sessions`). Neither goes with input_tokens.
        workers: load processes (Ray actors) the measured load is spread over (1: this one;
            :mod:`tokcaliper.load.distributed`); ray_address: their Ray cluster (None: a local one).
    """

    model: str | None = None
    concurrency: int | None = Field(None, ge=1)
    requests: int | None = Field(None, ge=1)
    duration_s: float | None = Field(None, gt=0, le=MAX_DURATION_S)
    warmup: int | None = Field(None, ge=0)
    max_tokens: int = Field(128, ge=1)
    temperature: float = Field(0.0, ge=0, le=100)
    ignore_eos: bool = True
    prompts: str | None = None
    unique_prompts: bool = True
    request_timeout_s: float = Field(300.0, gt=0, le=MAX_TIMEOUT_S)
    first_token_timeout_s: float = Field(120.0, gt=0, le=MAX_TIMEOUT_S)
    token_timeout_s: float = Field(30.0, gt=0, le=MAX_TIMEOUT_S)
    max_error_rate: float = Field(0.10, ge=0, lt=1)
    health_timeout_s: float = Field(180.0, gt=0, le=MAX_TIMEOUT_S)
    telemetry_interval_s: float = Field(0.1, ge=0, le=MAX_INTERVAL_S)
    idle_seconds: float = Field(3.0, ge=0, le=MAX_INTERVAL_S)
    slo: str | None = None
    steady_state: float | None = Field(None, gt=0, le=1)

    @field_validator("slo")
    @classmethod
    def _slo(cls, v: str | None) -> str | None:
        if v is not None:
            from tokcaliper.load.slo import parse_slo

            parse_slo(v)  # ValueError names the bad item
        return v

    @property
    def slo_s(self) -> dict[str, float] | None:
        """The SLO bounds by kind, seconds (None without ``slo``)."""
        from tokcaliper.load.slo import parse_slo

        return None if self.slo is None else parse_slo(self.slo)
    input_tokens: str | None = None
    output_tokens: str | None = None
    length_seed: int = Field(0, ge=0, le=2**63 - 1)
    rate_rps: float | None = None
    arrival: str = "poisson"
    burstiness: float = 1.0
    cooldown_s: float = 0.0
    on_server_death: str = "stop"

    @field_validator("cooldown_s", mode="before")
    @classmethod
    def _cooldown(cls, v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not (
                math.isfinite(v) and 0 <= v <= MAX_TIMEOUT_S):
            raise ValueError(f"must be a number of seconds in [0, {MAX_TIMEOUT_S:g}], got {v:g}")
        return v

    @field_validator("rate_rps", "burstiness", mode="before")
    @classmethod
    def _positive(cls, v: Any) -> Any:
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not (math.isfinite(v) and v > 0):
            raise ValueError(f"must be > 0, got {v:g}")
        return v

    @field_validator("arrival")
    @classmethod
    def _arrival(cls, v: str) -> str:
        if v not in ARRIVALS:
            raise ValueError(f"must be poisson, gamma or constant, got {v!r}")
        return v

    @field_validator("on_server_death")
    @classmethod
    def _death(cls, v: str) -> str:
        if v not in ("stop", "restart"):
            raise ValueError(f"must be stop or restart, got {v!r}")
        return v

    @property
    def streams(self) -> int:
        """Concurrent streams (closed loop, default 4) or the cap in flight (open loop — a
        rate or a trace replay — default 256)."""
        if self.concurrency is not None:
            return self.concurrency
        return 4 if self._closed_loop else 256

    @property
    def _closed_loop(self) -> bool:
        return self.rate_rps is None and self.trace is None

    @property
    def warmup_requests(self) -> int:
        """Warm-up requests per run: given, else one per stream (closed) or 4 (open loop)."""
        if self.warmup is not None:
            return self.warmup
        return self.streams if self._closed_loop else 4

    @property
    def measured_requests(self) -> int | None:
        """Measured requests per run: given, else every record of a trace, 8 per stream
        (closed) or ~10 s of arrivals, at least 32 (open); None with ``duration_s``."""
        if self.requests is not None or self.duration_s is not None:
            return self.requests
        if self.trace is not None:
            from tokcaliper.load.trace import load_trace

            return len(load_trace(self.trace))
        return 8 * self.streams if self.rate_rps is None else max(32, math.ceil(10 * self.rate_rps))

    def with_overrides(self, changes: dict[str, Any], where: str = "load") -> LoadSpec:
        """This load with ``changes`` (field → value) applied and validated again: one
        sweep level or one arm's ``load``. Defaults left ``None`` follow the new values.

        Raises:
            ValueError: ``"<where>.<field>: what is wrong"`` (an unknown field included).
        """
        try:
            return LoadSpec.model_validate({**self.model_dump(exclude_defaults=True), **changes})
        except ValidationError as e:
            loc, msg = _message(problems(e)[0])
            raise KeyedValueError(".".join(map(str, loc)), msg) from None
    shared_prefix: str | None = None
    turns: int = Field(1, ge=1, le=1000)  # = load.sessions.MAX_TURNS (not imported: start-up time)
    think_time_s: float = Field(0.0, ge=0, le=3600.0)  # = load.sessions.MAX_THINK_TIME_S

    @field_validator("shared_prefix")
    @classmethod
    def _shared_prefix(cls, v: str | None) -> str | None:
        if v is not None:
            from tokcaliper.load.sessions import parse_shared_prefix

            parse_shared_prefix(v)  # ValueError names the bad item
        return v
    workers: int = Field(1, ge=1, le=MAX_WORKERS)
    ray_address: str | None = None

    @field_validator("input_tokens", "output_tokens")
    @classmethod
    def _length_spec(cls, v: str | None, info: Any) -> str | None:
        if v is None:
            return v
        from tokcaliper.errors import InputError
        from tokcaliper.load.lengths import parse_length_spec

        flag = CLI_FLAGS[info.field_name]
        try:
            parse_length_spec(v, flag)
        except InputError as e:
            raise ValueError(str(e).removeprefix(flag + " ")) from None
        return v

    dataset: str | None = None
    dataset_seed: int = Field(0, ge=0, le=2**63 - 1)
    min_input_tokens: int | None = Field(None, ge=1)
    max_input_tokens: int | None = Field(None, ge=1)
    trace: str | None = None
    trace_speedup: float = Field(1.0, gt=0, le=1e6)
    trace_block_tokens: int | None = Field(None, ge=1, le=512)

    @field_validator("trace")
    @classmethod
    def _trace_file(cls, v: str | None) -> str | None:
        if v is not None:
            from tokcaliper.load.trace import load_trace

            load_trace(v)  # InputError names file:line
        return v

    @model_validator(mode="after")
    def _workloads(self) -> LoadSpec:
        given = [k for k in ("prompts", "input_tokens", "dataset", "trace") if getattr(self, k) is not None]
        if len(given) > 1 and ("dataset" in given or "trace" in given):
            raise KeyedValueError(given[-1], f"give one of {' or '.join(given)}, not several (each is "
                                  "the run's prompts)", cli=f"give one of {' or '.join(CLI_FLAGS[k] for k in given)}, "
                                  "not several (each is the run's prompts)")
        if self.trace is not None:
            for k in ("output_tokens", "duration_s"):
                if getattr(self, k) is not None:
                    why = "(the trace gives the lengths and the request count)"
                    raise KeyedValueError("trace", f"trace and {k} exclude each other {why}",
                                          cli=f"--trace and {CLI_FLAGS[k]} exclude each other {why}")
            from tokcaliper.load.trace import load_trace

            n = len(load_trace(self.trace))
            if self.requests is not None and self.requests > n:
                raise KeyedValueError("requests", f"requests {self.requests} is more than the trace's {n} records",
                                      cli=f"--requests {self.requests} is more than the trace's {n} records")
        if self.dataset is None and (self.min_input_tokens is not None or self.max_input_tokens is not None):
            raise KeyedValueError("min_input_tokens", "min_input_tokens/max_input_tokens filter a dataset",
                                  cli="--min-input-tokens/--max-input-tokens filter a --dataset")
        lo, hi = self.min_input_tokens, self.max_input_tokens
        if lo is not None and hi is not None and lo > hi:
            raise KeyedValueError("min_input_tokens", f"min_input_tokens {lo} is above max_input_tokens {hi}",
                                  cli=f"--min-input-tokens {lo} is above --max-input-tokens {hi}")
        return self

    @model_validator(mode="after")
    def _one_stop_rule(self) -> LoadSpec:
        if self.requests is not None and self.duration_s is not None:
            raise KeyedValueError("duration_s", "give either requests or duration_s, not both")
        if self.input_tokens is not None and self.prompts is not None:
            raise KeyedValueError("input_tokens", "give either input_tokens or prompts, not both "
                                  "(synthetic prompts replace the prompt set)")
        if self.workers > self.streams:
            raise KeyedValueError("workers", f"workers ({self.workers}) must not exceed concurrency "
                                  f"({self.streams}): each worker needs a stream")
        if self.ray_address is not None and self.workers == 1:
            raise KeyedValueError("workers", "ray_address needs workers ≥ 2")
        if self.workers > 1 and self.trace is not None:
            raise KeyedValueError("workers", "workers ≥ 2 does not replay a trace (trace needs workers = 1)")
        if self.input_tokens is not None and self.duration_s is not None:
            raise KeyedValueError("input_tokens", "input_tokens needs requests, not duration_s "
                                  "(prompts are sized by the server's tokenizer before the clock)")
        if self.burstiness != 1.0 and self.arrival != "gamma":
            raise KeyedValueError("burstiness", "burstiness needs arrival = \"gamma\"",
                                  cli="--burstiness needs --arrival gamma")
        if self.rate_rps is None and self.arrival != "poisson":
            raise KeyedValueError("arrival", "arrival needs rate_rps (open loop)",
                                  cli="--arrival needs --rate (open loop)")
        if self.rate_rps is not None:  # a run that would last for ages, or draw too many arrivals
            from tokcaliper.load.arrivals import open_loop_problem

            problem = open_loop_problem(
                self.rate_rps, None if self.duration_s is not None else self.measured_requests,
                self.duration_s)
            if problem is not None:
                raise KeyedValueError("rate_rps", problem, cli=problem)
        if self.input_tokens is not None and (self.turns > 1 or self.shared_prefix is not None):
            raise KeyedValueError("turns" if self.turns > 1 else "shared_prefix",
                                  "give either input_tokens or turns/shared_prefix, not both (a session's "
                                  "prompts hold its history and prefix, whose lengths input_tokens does not set)")
        if self.think_time_s > 0 and self.turns == 1:
            raise KeyedValueError("think_time_s", "think_time_s needs turns ≥ 2 (the pause "
                                  "between one answer of a session and its next request)")
        return self

    @classmethod
    def from_options(cls, **options: Any) -> LoadSpec:
        """Validate ``tokcaliper bench``'s options through this model (the same checks as an
        experiment file's ``[load]``); errors name the command-line option.

        ``options`` are field names (``request_timeout_s=…``); ``None`` means the default.

        Raises:
            InputError: one line, e.g. ``--request-timeout must be a finite number, got inf``.
        """
        given = {k: v for k, v in options.items() if v is not None}
        try:
            return cls.model_validate(given)
        except ValidationError as e:
            first = problems(e)[0]
            ctx_err = (first.err.get("ctx") or {}).get("error")
            if isinstance(ctx_err, KeyedValueError) and ctx_err.cli is not None:
                raise InputError(ctx_err.cli) from None
            if isinstance(ctx_err, KeyedValueError) and ctx_err.key == "input_tokens":
                raise InputError(str(ctx_err).replace("input_tokens", "--input-tokens")
                                 .replace("duration_s", "--duration").replace("requests", "--requests")
                                 .replace("prompts", "--prompts", 1)) from None
            if isinstance(ctx_err, KeyedValueError) and ctx_err.key == "workers":
                raise InputError(str(ctx_err).replace("workers", "--workers", 1).replace(
                    "ray_address", "--ray-address").replace("concurrency", "--concurrency", 1)) from None
            if isinstance(ctx_err, KeyedValueError) and ctx_err.cli is not None:
                raise InputError(ctx_err.cli) from None
            if isinstance(ctx_err, KeyedValueError) and ctx_err.key in ("turns", "shared_prefix", "think_time_s"):
                raise InputError(re.sub(r"\b(input_tokens|turns|shared_prefix|think_time_s)\b",
                                        lambda m: CLI_FLAGS[m.group(1)], str(ctx_err))) from None
            if isinstance(ctx_err, KeyedValueError):
                raise InputError("give either --requests or --duration, not both") from None
            field = str(first.loc[0]) if first.loc else ""
            raise InputError(f"{CLI_FLAGS.get(field, field)} {describe(first.err)}") from None

    def to_load_config(self, base_url: str, model: str | None = None) -> LoadConfig:
        """The :class:`LoadConfig` of one run against ``base_url``: the one builder of a
        run's load configuration (``bench``, experiments, sweeps and ``capacity``).

        ``model``: the server's first model, used when the spec names none.
        """
        return LoadConfig(
            base_url=base_url, model=self.model or model or "default",
            concurrency=self.streams, requests=self.measured_requests, duration_s=self.duration_s,
            warmup=self.warmup_requests,
            max_tokens=self.max_tokens, temperature=self.temperature, ignore_eos=self.ignore_eos,
            prompts_source=self.prompts or "builtin", request_timeout_s=self.request_timeout_s,
            first_token_timeout_s=self.first_token_timeout_s, token_timeout_s=self.token_timeout_s,
            rate_rps=self.rate_rps, arrival=self.arrival, burstiness=self.burstiness,  # type: ignore[arg-type]
            slo_s=self.slo_s, steady_state=self.steady_state,
            input_tokens=self.input_tokens, output_tokens=self.output_tokens, length_seed=self.length_seed,
            dataset=self.dataset, dataset_seed=self.dataset_seed, min_input_tokens=self.min_input_tokens,
            max_input_tokens=self.max_input_tokens, trace=self.trace, trace_speedup=self.trace_speedup,
            trace_block_tokens=self.trace_block_tokens,
            shared_prefix=self.shared_prefix, turns=self.turns, think_time_s=self.think_time_s,
            workers=self.workers, ray_address=self.ray_address)


#: Open-loop arrival processes (:mod:`tokcaliper.load.arrivals`).
ARRIVALS = ("poisson", "gamma", "constant")


#: LoadSpec field → the ``tokcaliper bench`` option that sets it.
CLI_FLAGS = {
    "model": "--model", "concurrency": "--concurrency", "requests": "--requests",
    "duration_s": "--duration", "warmup": "--warmup", "max_tokens": "--max-tokens",
    "temperature": "--temperature", "ignore_eos": "--ignore-eos", "prompts": "--prompts",
    "unique_prompts": "--unique-prompts", "request_timeout_s": "--request-timeout",
    "first_token_timeout_s": "--first-token-timeout", "token_timeout_s": "--token-timeout",
    "max_error_rate": "--max-error-rate",
    "health_timeout_s": "--health-timeout", "telemetry_interval_s": "--telemetry-interval",
    "idle_seconds": "--idle-seconds", "slo": "--slo", "steady_state": "--steady-state",
    "input_tokens": "--input-tokens", "output_tokens": "--output-tokens", "length_seed": "--length-seed",
    "rate_rps": "--rate", "arrival": "--arrival", "burstiness": "--burstiness", "cooldown_s": "--cooldown",
    "on_server_death": "--on-server-death",
    "dataset": "--dataset", "dataset_seed": "--dataset-seed", "min_input_tokens": "--min-input-tokens",
    "max_input_tokens": "--max-input-tokens", "trace": "--trace", "trace_speedup": "--trace-speedup",
    "trace_block_tokens": "--trace-block-tokens",
    "shared_prefix": "--shared-prefix", "turns": "--turns", "think_time_s": "--think-time",
    "workers": "--workers", "ray_address": "--ray-address",
}


#: The load options a sweep may vary, one arm per level.
SWEEP_AXES = ("concurrency", "rate_rps")


def sweep_arm_name(axis: str, level: int | float, prefix: str = "") -> str:
    """The arm of one sweep level: ``c=16`` or ``2rps`` (after ``prefix@`` when given)."""
    name = f"c={level}" if axis == "concurrency" else f"{level:g}rps"
    return f"{prefix}@{name}" if prefix else name


def sweep_arms(axis: str, levels: list[Any], prefix: str = "") -> list[dict[str, Any]]:
    """One load arm per level of ``axis`` (:data:`SWEEP_AXES`): ``{"name", "load": {axis: level}}``.

    Raises:
        KeyedValueError: fewer than 2 levels, a level given twice, a level of the wrong type
            (the arm's load validation then names the bound).
    """
    if len(levels) < 2:
        raise KeyedValueError(f"sweep.{axis}", f"a sweep needs at least 2 levels, got {len(levels)}")
    if len(set(map(repr, levels))) != len(levels):
        raise KeyedValueError(f"sweep.{axis}", "each level once")
    out = []
    for v in levels:
        ok = isinstance(v, int) if axis == "concurrency" else isinstance(v, (int, float))
        if isinstance(v, bool) or not ok:
            raise KeyedValueError(f"sweep.{axis}", f"levels must be "
                                  f"{'whole numbers' if axis == 'concurrency' else 'numbers'}, got {v!r}")
        out.append({"name": sweep_arm_name(axis, v, prefix),
                    "load": {axis: float(v) if axis == "rate_rps" else v}})
    return out


#: Placeholders a server command may use besides {value}/{port}/{host}: the
#: embedded default llama-server binary and SmolLM2 model, filled in by the
#: runner (scripts/setup-llama-server.sh builds them).
LOCAL_PLACEHOLDERS = frozenset({"llama_server", "smollm2"})
_ARM_SERVER = PLACEHOLDERS | LOCAL_PLACEHOLDERS
_TOP_SERVER = frozenset({"port", "host"}) | LOCAL_PLACEHOLDERS


def _check_command(key: str, template: str, allowed: frozenset[str], shell: bool = False) -> set[str]:
    """The placeholders of a command template, checked as it will be run: without a shell
    its words must split (balanced quotes), so a bad command fails with the file, not mid-run."""
    if not template.strip():
        raise KeyedValueError(key, "command is empty")
    try:
        used = placeholders(template, allowed)
    except InputError as e:
        raise KeyedValueError(key, str(e)) from None
    if not shell:
        try:
            shlex.split(template)
        except ValueError as e:
            raise KeyedValueError(key, f"command {template!r} cannot be split into words ({e}); "
                                       "balance its quotes") from None
    return used


class ArmSpec(_Strict):
    """One arm: a managed server command, or a switch command against a live system.

    Attributes:
        name: unique label (stored with every run).
        server_cmd: command that starts this arm's server ({port}, {host},
            {value} filled; {llama_server} and {smollm2} name the embedded
            default server and model); the server is restarted when the arm changes.
        switch: command that puts the live system into this arm's state
            (e.g. ``nvidia-smi -pl {value}``).
        value: what ``{value}`` stands for (from this file only).
        readback: command whose output must show the setting took effect;
            expect (exact, stripped) or expect_regex (full match) says what it must show.
        shell: run the commands through ``/bin/sh -c`` (values shell-quoted).
        load: this arm's changes to the experiment's ``[load]`` (e.g. ``{concurrency = 16}``).
            An arm with ``load`` and neither ``server_cmd`` nor ``switch`` is a *load arm*:
            every arm runs against the one server (``url`` or top-level ``server_cmd``) and
            differs only in its load (a sweep over concurrency or rate).
    """

    name: str = Field(min_length=1)
    load: dict[str, Any] | None = None
    server_cmd: str | None = None
    switch: str | None = None
    value: str | int | float | None = None
    readback: str | None = None
    expect: str | None = None
    expect_regex: str | None = None
    shell: bool = False

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if v != v.strip() or "," in v:
            raise ValueError("arm names must not have surrounding spaces or commas")
        return v

    @field_validator("expect_regex")
    @classmethod
    def _regex(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as e:
                raise ValueError(f"not a valid regular expression: {e}") from None
        return v

    @model_validator(mode="after")
    def _kind(self) -> ArmSpec:
        if self.server_cmd is None and self.switch is None and self.load:
            if self.readback is not None:
                raise KeyedValueError("readback", "a load arm (load without server_cmd or switch) "
                                                  "has nothing to read back")
            return self
        if (self.server_cmd is None) == (self.switch is None):
            raise KeyedValueError("switch" if self.switch is not None else "server_cmd",
                                  "an arm needs exactly one of server_cmd (managed server) or "
                                  "switch (command against a live system), or only load "
                                  "(a load arm)")
        used: set[str] = set()
        if self.server_cmd is not None:
            used |= _check_command("server_cmd", self.server_cmd, _ARM_SERVER, self.shell)
        if self.switch is not None:
            used |= _check_command("switch", self.switch, PLACEHOLDERS, self.shell)
        if self.readback is not None:
            used |= _check_command("readback", self.readback, PLACEHOLDERS, self.shell)
            if (self.expect is None) == (self.expect_regex is None):
                raise KeyedValueError("readback", "a readback needs exactly one of expect "
                                                  "(exact string) or expect_regex")
        elif self.expect is not None or self.expect_regex is not None:
            raise KeyedValueError("expect" if self.expect is not None else "expect_regex",
                                  "expect/expect_regex need a readback command")
        if "value" in used and self.value is None:
            raise KeyedValueError("value", "the commands use {value} but the arm has no value")
        if isinstance(self.value, float) and not math.isfinite(self.value):
            raise KeyedValueError("value", f"value must be finite, got {self.value}")
        return self

    @property
    def kind(self) -> str:
        """``"server"`` (managed server), ``"switch"``, or ``"load"`` (only its load differs)."""
        if self.server_cmd is not None:
            return "server"
        return "switch" if self.switch is not None else "load"

    @property
    def value_text(self) -> str | None:
        """``value`` as the text put into ``{value}`` (``None`` when unset)."""
        return None if self.value is None else str(self.value)


class ExperimentSpec(_Strict):
    """A whole experiment file.

    Attributes:
        name: free text. url: the live server switch arms run against;
            server_cmd: or a server tokcaliper starts once for the switch arms.
        load: the load of every run. arms: two or more arms, unique names, all
            of one kind.
        runs_per_arm: measured runs per arm (≥ 2). warmup_runs: runs after each
            switch, stored and excluded from analysis. rest_s: seconds before each run.
        order: random-blocks (default) | alternate | abba | blocked; seed: for
            random-blocks only — drawn (and stored with the experiment) when the
            file gives none, so that the order is reproducible.
        metric: primary metric (default aggregate output throughput).
        effect: the relative effect you care about (fraction, e.g. 0.05).
        equivalence_margin: E for an "equivalent within ±E" verdict (TOST).
        noise_band: changes whose CI reaches within ±band are not called faster/slower.
        alpha: two-sided significance level.
        until_decided: add pairs only until the sequential rule decides
            (:mod:`tokcaliper.stats.sequential`); ``runs_per_arm`` is then the
            cap. Two arms, interleaved order only.
        command_timeout_s: how long one switch or read-back command may run (s).
    """

    name: str | None = None
    url: str | None = None
    server_cmd: str | None = None
    load: LoadSpec = Field(default_factory=LoadSpec)
    arms: list[ArmSpec] = Field(min_length=2, max_length=MAX_ARMS)
    runs_per_arm: int = Field(5, ge=2, le=MAX_RUNS_PER_ARM)
    warmup_runs: int = Field(1, ge=0, le=MAX_WARMUP_RUNS)
    rest_s: float = Field(0.0, ge=0, le=MAX_TIMEOUT_S)
    order: OrderName = "random-blocks"
    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    metric: str = DEFAULT_METRIC
    effect: float | None = Field(None, gt=0, lt=1)
    equivalence_margin: float | None = Field(None, gt=0, lt=1)
    noise_band: float = Field(0.01, ge=0, lt=1)
    alpha: float = Field(0.05, gt=0, lt=0.5)
    until_decided: bool = False
    command_timeout_s: float = Field(120.0, gt=0, le=MAX_TIMEOUT_S)

    @field_validator("url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is None:
            return None
        try:
            return server_url(v, what="url")
        except InputError as e:
            raise ValueError(str(e).removeprefix("url ")) from None

    @field_validator("metric")
    @classmethod
    def _metric(cls, v: str) -> str:
        try:
            return get_metric(v).name
        except InputError as e:
            raise ValueError(str(e)) from None

    @model_validator(mode="before")
    @classmethod
    def _sweep(cls, data: Any) -> Any:
        """``[sweep]`` with one list (``concurrency = [1, 4, 16]`` or ``rate_rps = [1, 2, 4]``):
        one load arm per level (:func:`sweep_arms`), in place of ``[[arms]]``."""
        if not isinstance(data, dict) or "sweep" not in data:
            return data
        sweep = data["sweep"]
        if "arms" in data:
            raise KeyedValueError("sweep", "give either [sweep] or [[arms]], not both")
        if not isinstance(sweep, dict) or len(sweep) != 1:
            raise KeyedValueError("sweep", "[sweep] takes one key, concurrency or rate_rps, with a "
                                           "list of levels (e.g. concurrency = [1, 4, 16])")
        (key, levels), = sweep.items()
        if key not in SWEEP_AXES:
            raise KeyedValueError(f"sweep.{key}", f"cannot sweep {key!r}; sweep "
                                                  f"{' or '.join(SWEEP_AXES)}")
        if not isinstance(levels, list):
            raise KeyedValueError(f"sweep.{key}", "expected a list of levels, e.g. [1, 4, 16]")
        rest = {k: v for k, v in data.items() if k != "sweep"}
        load = rest.get("load")
        if key == "rate_rps" and levels and (load is None or isinstance(load, dict)) \
                and "rate_rps" not in (load or {}):
            # [load] is an open loop too (its arrival and burstiness need a rate): the first level's.
            rest["load"] = {**(load or {}), "rate_rps": levels[0]}
        return {**rest, "arms": sweep_arms(key, levels)}

    @model_validator(mode="before")
    @classmethod
    def _draw_seed(cls, data: Any) -> Any:
        """random-blocks without a seed: draw one (stored with the spec, shown in the plan).

        Why random-blocks is the default: each block's order is a fair coin,
        so a drift of β per run adds ±β to each pair ratio with mean 0 — no
        bias, only spread that the paired CI counts — whereas ``alternate``
        puts +β into every pair (issue 17; docs/calibration.md).
        """
        if isinstance(data, dict) and data.get("order", "random-blocks") == "random-blocks" \
                and data.get("seed") is None:
            import secrets

            data = {**data, "seed": secrets.randbelow(2**31)}
        return data

    @model_validator(mode="after")
    def _whole(self) -> ExperimentSpec:
        names = [a.name for a in self.arms]
        for i, n in enumerate(names):
            if n in names[:i]:
                raise KeyedValueError(f"arms.{i}.name", f"arm name {n!r} is used twice")
        kinds = {a.kind for a in self.arms}
        if len(kinds) > 1:
            raise KeyedValueError("arms", "all arms must be managed servers (server_cmd), all "
                                          "switch arms (switch) or all load arms, not a mix")
        if kinds & {"switch", "load"}:
            if (self.url is None) == (self.server_cmd is None):
                raise KeyedValueError("url", f"{kinds.pop()} arms need exactly one of url (a live "
                                             "server) or server_cmd (a server started once)")
        elif self.url is not None or self.server_cmd is not None:
            raise KeyedValueError("url" if self.url is not None else "server_cmd",
                                  "managed-server arms bring their own server_cmd; remove the "
                                  "top-level url/server_cmd")
        if self.server_cmd is not None:
            _check_command("server_cmd", self.server_cmd, _TOP_SERVER)
        if self.until_decided and (len(self.arms) != 2 or self.order == "blocked"):
            raise KeyedValueError("until_decided", "until_decided needs exactly 2 arms in an "
                                                   "interleaved order (not blocked)")
        if self.until_decided and self.runs_per_arm < 3:
            raise KeyedValueError("runs_per_arm", "until_decided needs runs_per_arm ≥ 3 (the cap)")
        for i, a in enumerate(self.arms):  # each arm's load must be a valid load
            if a.load:
                try:
                    self.load.with_overrides(a.load)
                except KeyedValueError as e:
                    raise KeyedValueError(f"arms.{i}.load.{e.key}", str(e)) from None
        if self.rest_s > 0 and self.load.cooldown_s > 0:
            raise KeyedValueError("rest_s", "give either rest_s or [load] cooldown_s, not both "
                                            "(both are the rest before each run)")
        if self.order != "random-blocks" and self.seed is not None:
            raise KeyedValueError("seed", f"seed is used only by order = random-blocks, "
                                          f"not {self.order}")
        return self

    @property
    def higher_is_better(self) -> bool:
        """Direction of the primary metric (throughput: higher; latency: lower)."""
        return get_metric(self.metric).higher_is_better

    def run_order(self) -> list[tuple[int, str]]:
        """The measured runs as ``(position, arm name)`` (see :func:`tokcaliper.experiment.order.run_order`)."""
        return run_order([a.name for a in self.arms], self.runs_per_arm, self.order, self.seed)

    def arm_load(self, name: str) -> LoadSpec:
        """The load of arm ``name``: ``[load]`` with the arm's own ``load`` changes."""
        arm = self.arm(name)
        return self.load.with_overrides(arm.load) if arm.load else self.load

    @property
    def rest_before_run_s(self) -> float:
        """Seconds of rest before each run: ``rest_s``, else ``[load] cooldown_s``."""
        return self.rest_s or self.load.cooldown_s

    @property
    def max_streams(self) -> int:
        """The most concurrent streams any arm opens (for the descriptor check)."""
        return max(self.arm_load(a.name).streams for a in self.arms)

    def arm(self, name: str) -> ArmSpec:
        """The arm called ``name``. Raises InputError when there is none."""
        for a in self.arms:
            if a.name == name:
                return a
        raise InputError(f"no arm named {name!r}")


# ---------------------------------------------------------------- loading

_BARE = r"[A-Za-z0-9_-]+"
_KEY_PART = rf'(?:{_BARE}|"(?:[^"\\]|\\.)*"|\'[^\']*\')'
_KEY = rf"{_KEY_PART}(?:\s*\.\s*{_KEY_PART})*"
_AOT_RE = re.compile(rf"^\[\[\s*({_KEY})\s*\]\]")
_TABLE_RE = re.compile(rf"^\[\s*({_KEY})\s*\]")
_ASSIGN_RE = re.compile(rf"^({_KEY})\s*=")
_PART_RE = re.compile(_KEY_PART)


def _split_key(text: str) -> tuple[str, ...]:
    parts = []
    for m in _PART_RE.finditer(text):
        p = m.group(0)
        if p[0] in "\"'":
            p = p[1:-1]
        parts.append(p)
    return tuple(parts)


def key_lines(text: str) -> dict[tuple[str | int, ...], int]:
    """Map each key path of a TOML document to its 1-based line number.

    tomllib keeps no positions, so this scans the text: table headers
    (``[load]`` → ``("load",)``), arrays of tables (the second ``[[arms]]`` →
    ``("arms", 1)``) and ``key = value`` lines, including dotted keys. Lines
    inside multi-line strings are skipped. Only the first line of a key counts.
    """
    lines: dict[tuple[str | int, ...], int] = {}
    table: tuple[str | int, ...] = ()
    counts: dict[tuple[str, ...], int] = {}
    in_ml: str | None = None
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if in_ml is not None:
            if line.count(in_ml) % 2 == 1:
                in_ml = None
            continue
        if not line or line.startswith("#"):
            continue
        if m := _AOT_RE.match(line):
            key = _split_key(m.group(1))
            counts[key] = counts.get(key, -1) + 1
            table = (*key, counts[key])
            lines.setdefault(table, no)
        elif m := _TABLE_RE.match(line):
            table = _split_key(m.group(1))
            lines.setdefault(table, no)
        elif m := _ASSIGN_RE.match(line):
            key = (*table, *_split_key(m.group(1)))
            lines.setdefault(key, no)
            rest = line[m.end():]
            for q in ('"""', "'''"):
                if rest.count(q) % 2 == 1:
                    in_ml = q
                    break
    return lines


def _path_text(loc: tuple[str | int, ...]) -> str:
    out = ""
    for p in loc:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def _line_of(loc: tuple[str | int, ...], lines: dict[tuple[str | int, ...], int]) -> int:
    """The line of ``loc``, else of its nearest ancestor; a key only seen through its
    children (``arms`` of ``[[arms]]``) is at its first child's line."""
    for k in range(len(loc), 0, -1):
        if loc[:k] in lines:
            return lines[loc[:k]]
        below = [n for key, n in lines.items() if key[:k] == loc[:k]]
        if below:
            return min(below)
    return 1


def _message(prob: Problem) -> tuple[tuple[str | int, ...], str]:
    """A problem's key path (a validator's :class:`KeyedValueError` points below its table)
    and its sentence (:func:`tokcaliper.validation.describe`)."""
    ctx_err = (prob.err.get("ctx") or {}).get("error")
    if isinstance(ctx_err, KeyedValueError):
        extra: tuple[str | int, ...] = tuple(
            int(p) if p.isdigit() else p for p in ctx_err.key.split("."))
        return prob.loc + extra, str(ctx_err)
    return prob.loc, describe(prob.err)


def parse_experiment(text: str, source: str = "experiment file") -> ExperimentSpec:
    """Parse and validate the TOML text of an experiment file.

    Args:
        text: TOML document. source: name used in error messages (the path).

    Returns:
        :class:`ExperimentSpec`.

    Raises:
        InputError: invalid TOML (tomllib's line and column), or the first
            validation error as ``"<source> line N: key.path: what is wrong"``
            (with "(and K more)" when there are several).
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{source}: invalid TOML: {e}") from None
    except RecursionError:
        raise InputError(f"{source}: arrays or tables nested too deeply (an experiment file needs "
                         "a few levels)") from None
    try:
        return ExperimentSpec.model_validate(data)
    except ValidationError as e:
        probs = problems(e)
        lines = key_lines(text)
        loc, msg = _message(probs[0])
        # A missing key has no line of its own: point at its table.
        line = _line_of(loc, lines)
        raise InputError(f"{source} line {line}: {_path_text(loc)}: {msg}{and_more(len(probs) - 1)}") from None


def with_until_decided(spec: ExperimentSpec, source: str = "experiment file") -> ExperimentSpec:
    """``spec`` with ``until_decided = true`` (``--until-decided``), validated again.

    Raises:
        InputError: the experiment cannot stop early (see :class:`ExperimentSpec`).
    """
    try:
        return ExperimentSpec.model_validate({**spec.model_dump(), "until_decided": True})
    except ValidationError as e:
        loc, msg = _message(problems(e)[0])
        raise InputError(f"{source}: --until-decided: {_path_text(loc)}: {msg}") from None


#: Largest experiment file read (bytes): a real one is a few kB.
MAX_EXPERIMENT_BYTES = 1_000_000


def read_experiment(path: Path | str) -> tuple[ExperimentSpec, str]:
    """Read an experiment file once (:func:`tokcaliper.fileio.read_text`) and validate it.

    Returns:
        ``(spec, text)``: the text is what is stored with the experiment.

    Raises:
        InputError: a missing or unreadable file, not a regular file (a FIFO, ``/dev/zero``),
            over :data:`MAX_EXPERIMENT_BYTES`, not UTF-8, invalid TOML or invalid content.
    """
    p = Path(path)
    text = read_text(p, MAX_EXPERIMENT_BYTES, what=f"experiment file {p}")
    return parse_experiment(text, str(p)), text


def load_experiment(path: Path | str) -> ExperimentSpec:
    """Read and validate an experiment file (see :func:`read_experiment`).

    Raises:
        InputError: as :func:`read_experiment`.
    """
    return read_experiment(path)[0]
