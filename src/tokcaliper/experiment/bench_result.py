"""What ``tokcaliper bench`` reports: a session's runs and noise floor, or a sweep's levels (M1).

The results (:class:`BenchResult`, :class:`SweepResult`) are built here from the
stored runs, once; :mod:`tokcaliper.report.bench_view` draws them and ``--json``
dumps them. Every figure the text view prints comes from these builders: the
noise floor of each level (:func:`level_noise_floor`), the restart-level and
run-level split of ``--restarts``, each level's roofline, a trace replay's
figures and the sweep table's means. The rooflines are the audit's
(:func:`tokcaliper.audit.run_roofline.arm_rooflines`), which this layer may not
import: the caller passes that function (``roofline_of``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from tokcaliper.errors import ServerError
from tokcaliper.experiment.analysis import ArmComparison, analyze_experiment, split_by_restart
from tokcaliper.experiment.show import no_valid_measured_run
from tokcaliper.experiment.spec import ExperimentSpec
from tokcaliper.load.trace import ReplayFigures, replay_figures
from tokcaliper.model import warnings as W
from tokcaliper.model.experiment import Outcome
from tokcaliper.model.metrics import METRICS, headline_metrics, scalar_series
from tokcaliper.model.roofline import ArmRoofline, RooflineOf
from tokcaliper.model.run import LoadConfig, Run, RunMetrics
from tokcaliper.model.stored import run_caveats
from tokcaliper.model.warnings import Caveat
from tokcaliper.stats.covariates import run_covariates
from tokcaliper.stats.noise import NoiseFloorReport, noise_floor
from tokcaliper.stats.variance_components import RestartSplit
from tokcaliper.store import Store

__all__ = ["BenchLevel", "BenchResult", "BenchRunRow", "LevelMean", "SweepResult", "SweepRow",
           "bench_result", "level_noise_floor", "no_valid_run", "sweep_result", "sweep_rows"]


class BenchRunRow(BaseModel):
    """One stored run as the JSON lists it.

    Attributes:
        id: its id in the store. repetition: 0-based within its arm. restart: 0-based
            server start (``--restarts``; None otherwise). position: 0-based place in a
            sweep's interleaved order (None in a plain session).
        valid / invalid_reason: whether it counts in the noise floor, and why not.
        metrics: every figure of the run.
    """

    id: int | None
    repetition: int
    restart: int | None = None
    position: int | None = None
    valid: bool
    invalid_reason: str | None
    metrics: RunMetrics


class BenchLevel(BaseModel):
    """One arm's (a sweep level's) runs, noise floor and rooflines.

    Attributes:
        arm: its label. level: the sweep level (concurrency, or rate req/s; None in a plain
            session). config: the load its first run ran (None: no run stored). runs: its
            measured runs in repetition order.
        noise_floor: of its valid runs (None: none valid). roofline: its fraction of the
            memory-bandwidth roofline (one entry, or none when no run was valid).
        stored: the stored runs themselves, which the text view draws (runs table, client,
            SLO, lengths, telemetry); not in the JSON, which has ``runs``.
    """

    arm: str
    level: int | float | None = None
    config: LoadConfig | None
    runs: list[BenchRunRow]
    noise_floor: NoiseFloorReport | None
    roofline: list[ArmRoofline] = []
    stored: list[Run] = Field(default=[], exclude=True, repr=False)


class BenchResult(BenchLevel):
    """``tokcaliper bench`` of one configuration: its runs and their noise floor (``--json`` dumps it).

    Attributes (besides :class:`BenchLevel`'s):
        session / db: where the runs are stored. server_command / server_version: the server
            (command None with ``--url``). idle_power_w: device → idle power, W (``{}``: no power
            source; None: not measured). idle_seconds: length of that measurement, s.
        repeat: runs per server start. server_starts: ``--restarts`` K. cooldown_s: rest between runs.
        restarts: the restart-level against run-level split per metric (K ≥ 2; else empty).
        trace: a trace replay's figures per run (None: not a replay).
        warnings: the caveats (runs left out, no power source, …).
    """

    config: LoadConfig
    session: str
    db: str
    server_command: str | None
    server_version: str | None
    idle_power_w: dict[str, float] | None
    idle_seconds: float
    repeat: int
    server_starts: int = 1
    cooldown_s: float = 0.0
    restarts: list[RestartSplit] = []
    trace: list[ReplayFigures] | None = None
    warnings: list[Caveat] = []


class LevelMean(BaseModel):
    """A mean over a level's valid runs that have the figure: mean, sample sd (None with n = 1), n."""

    mean: float
    sd: float | None
    n: int


class SweepRow(BaseModel):
    """One line of the sweep table: a level's means over its valid runs (``render_sweep``).

    Attributes:
        level: concurrency, or offered rate req/s. valid_runs: runs the means are over.
        achieved_rps: achieved arrival rate, req/s (open loop only). output_tok_s: aggregate
            output rate, tok/s. ttft_p50_ms: TTFT p50 counted from the send, ms.
        ttft_from_schedule_p99_ms: TTFT p99 counted from the scheduled arrival, ms.
        dispatch_p99_ms: p99 of send − schedule, ms. client_limited: runs the load client limited.
    """

    level: int | float
    valid_runs: int
    achieved_rps: LevelMean | None
    output_tok_s: LevelMean | None
    ttft_p50_ms: LevelMean | None
    ttft_from_schedule_p99_ms: LevelMean | None
    dispatch_p99_ms: LevelMean | None
    client_limited: int


class SweepResult(BaseModel):
    """``tokcaliper bench --concurrency 1,4,16`` (or ``--rate``): a sweep run as an experiment.

    Attributes:
        experiment / db: the stored experiment. axis: ``"concurrency"`` or ``"rate_rps"``.
        spec: the experiment. sweep: each level, in the spec's arm order. table: the sweep
            table's rows, same order. outcomes: what happened instead of runs. comparisons:
            each level against the first (paired over the interleaved runs).
        failure: the exit-3 reason when no measured run is valid (None otherwise).
        warnings: the caveats.
    """

    experiment: str
    db: str
    axis: str
    spec: ExperimentSpec
    sweep: list[BenchLevel]
    table: list[SweepRow]
    outcomes: list[Outcome]
    comparisons: list[ArmComparison]
    failure: str | None = None
    warnings: list[Caveat] = []


def level_noise_floor(runs: Sequence[Run], metrics: Sequence[str] | None = None, *,
                      slo: str | None = None, steady_state: float | None = None,
                      effect: float | None = None) -> NoiseFloorReport | None:
    """The noise floor (METHODS.md M1) of one level's valid runs; None when none is valid.

    Metrics: ``metrics`` (``--metric``), else the headline metrics plus the SLO and
    steady-state metrics when ``slo`` / ``steady_state`` were asked for; a shared-prefix or
    multi-turn workload adds the prefix-cache hit rate. The runs' covariates go with it, so
    the floor can name what made it wide (:func:`tokcaliper.stats.noise.noise_floor`).
    """
    names = list(metrics) if metrics else None
    if names is None and (slo is not None or steady_state is not None):  # the figures asked for, too
        asked = {o for o, v in (("--slo", slo), ("--steady-state", steady_state)) if v is not None}
        names = [m.name for m in headline_metrics()] + [n for n, m in METRICS.items() if m.needs in asked]
    cfg = runs[0].config if runs else None
    if cfg is not None and (cfg.shared_prefix is not None or cfg.turns > 1):
        # the hit rate is what shared-prefix and session workloads are about
        names = [*(names or [m.name for m in headline_metrics()]), "prefix_cache_hit_pct"]
    valid = [r for r in runs if r.valid]
    if not valid:
        return None
    return noise_floor(scalar_series([r.metrics for r in valid], names=names), effect=effect,
                       covariates=run_covariates(valid))


def _rows(runs: Sequence[Run]) -> list[BenchRunRow]:
    return [BenchRunRow(id=r.id, repetition=r.repetition, restart=r.restart, position=r.position,
                        valid=r.valid, invalid_reason=r.invalid_reason, metrics=r.metrics) for r in runs]


def _level_caveats(arm: str, runs: Sequence[Run], floor: NoiseFloorReport | None,
                   label: str = "") -> list[Caveat]:
    """A level's caveats for the warning sink: each run's own (client bounds, streams,
    lengths; ``label`` before "run N"), the noise floor's, then the runs left out of it."""
    out = run_caveats(runs, label=label)
    out += [W.caveat_of(w, label) for w in (floor.warnings if floor else [])]
    out += [W.RUN_LEFT_OUT.caveat(arm=arm, repetition=r.repetition + 1, run_id=r.id, reason=r.invalid_reason)
            for r in runs if not r.valid]
    if floor is None:
        out.append(W.NO_NOISE_FLOOR.caveat(arm=arm))
    return out


def no_valid_run(runs: Sequence[Run], db: Path | str) -> str:
    """The one-line reason for exit 3 when every run of a bench was invalid.

    Names the runs, why the first one is invalid, and the most common error
    over all runs (status and body, truncated to 200 characters), which usually
    tells what to fix. ``runs`` is not empty.
    """
    errors: Counter[str] = Counter()
    for r in runs:
        errors.update(r.metrics.errors)
    ids = ", ".join(f"#{r.id}" for r in runs)
    msg = f"no valid run: every run ({ids}, stored in {db}) is invalid: {runs[0].invalid_reason}"
    if errors:
        text, count = errors.most_common(1)[0]
        total = sum(r.metrics.completed + r.metrics.failed for r in runs)
        msg += f". Most common error over all runs ({count} of {total} requests): {text[:200]}"
    return msg


def bench_result(runs: Sequence[Run], *, db: Path | str, roofline_of: RooflineOf,
                 metrics: Sequence[str] | None = None, slo: str | None = None,
                 steady_state: float | None = None, effect: float | None = None,
                 idle_power_w: dict[str, float] | None = None, idle_seconds: float = 0.0,
                 repeat: int | None = None, server_starts: int = 1, cooldown_s: float = 0.0,
                 warnings: Sequence[Caveat] = ()) -> BenchResult:
    """The result of one bench session from its stored runs (one arm).

    Args:
        runs: the session's measured runs, in repetition order (not empty).
        db: the store. roofline_of: :func:`tokcaliper.audit.run_roofline.arm_rooflines`.
        metrics / slo / steady_state / effect: as :func:`level_noise_floor`.
        idle_power_w / idle_seconds: the idle measurement before the first run (None: not made).
        repeat: runs per server start (default: all runs over ``server_starts``).
        server_starts: ``--restarts`` K; with K ≥ 2 each metric's variance is split into its
            restart-level and run-level parts (:func:`tokcaliper.experiment.analysis.split_by_restart`).
        warnings: caveats raised while measuring (e.g. the server restarted), kept first.

    Raises:
        ServerError: every run is invalid (exit 3; :func:`no_valid_run` gives the reason).
    """
    if not any(r.valid for r in runs):
        raise ServerError(no_valid_run(runs, db))
    first = runs[0]
    floor = level_noise_floor(runs, metrics, slo=slo, steady_state=steady_state, effect=effect)
    splits: list[RestartSplit] = []
    if server_starts > 1:  # where the variance lives (issue 17 item 7)
        valid = [r for r in runs if r.valid]
        groups = [[r for r in valid if r.restart == k] for k in range(server_starts)]
        names = list(metrics) if metrics else [m.name for m in headline_metrics()]
        splits = [split_by_restart(groups, arm=first.arm, metric=name) for name in names]
    caveats = list(warnings) + _level_caveats(first.arm, runs, floor)
    if idle_power_w == {}:
        caveats.append(W.NO_POWER_SOURCE.caveat())
    return BenchResult(
        arm=first.arm, config=first.config, runs=_rows(runs), noise_floor=floor,
        roofline=roofline_of(runs, ()), stored=list(runs),
        session=first.session, db=str(db), server_command=first.server_command,
        server_version=first.server_version, idle_power_w=idle_power_w, idle_seconds=idle_seconds,
        repeat=repeat if repeat is not None else len(runs) // max(1, server_starts),
        server_starts=server_starts, cooldown_s=cooldown_s, restarts=splits,
        trace=replay_figures(runs) if first.config.trace is not None else None,
        warnings=caveats)


def _mean(values: Sequence[float | None], scale: float = 1.0) -> LevelMean | None:
    v = [scale * x for x in values if x is not None]
    if not v:
        return None
    m = sum(v) / len(v)
    sd = (sum((x - m) ** 2 for x in v) / (len(v) - 1)) ** 0.5 if len(v) > 1 else None
    return LevelMean(mean=m, sd=sd, n=len(v))


def sweep_rows(levels: Sequence[BenchLevel]) -> list[SweepRow]:
    """The sweep table: per level, the means over its valid runs of achieved arrivals, throughput,
    TTFT from the send and from the schedule, and the dispatch delay (each with its own n: a run
    without the figure is not counted), and how many runs the client limited."""
    out = []
    for lv in levels:
        ms = [r.metrics for r in lv.runs if r.valid]
        out.append(SweepRow(
            level=lv.level if lv.level is not None else float("nan"), valid_runs=len(ms),
            achieved_rps=_mean([m.arrivals.achieved_rate_rps if m.arrivals else None for m in ms]),
            output_tok_s=_mean([m.aggregate_output_tok_s for m in ms]),
            ttft_p50_ms=_mean([m.ttft_s.p50 for m in ms], 1000),
            ttft_from_schedule_p99_ms=_mean([m.ttft_from_schedule_s.p99 for m in ms], 1000),
            dispatch_p99_ms=_mean([m.dispatch_s.p99 for m in ms], 1000),
            client_limited=sum(1 for m in ms if m.client and m.client.client_limited)))
    return out


def sweep_result(store: Store, exp_id: str, spec: ExperimentSpec, axis: str, *, db: Path | str,
                 roofline_of: RooflineOf, metrics: Sequence[str] | None = None, slo: str | None = None,
                 steady_state: float | None = None, effect: float | None = None) -> SweepResult:
    """The result of a finished (or stopped) sweep experiment ``exp_id`` read from ``store``.

    Per level (the spec's arms, in order): its measured runs by repetition, their noise floor
    (:func:`level_noise_floor`) and roofline; the sweep table (:func:`sweep_rows`); the
    experiment's outcomes and each level against the first
    (:func:`tokcaliper.experiment.analysis.analyze_experiment`).

    Raises:
        InputError: no such experiment. StoreError: a stored run no longer validates.
    """
    analysis = analyze_experiment(store, exp_id)
    runs = [r for r in store.session_runs(exp_id) if not r.warmup_run]
    levels: list[BenchLevel] = []
    caveats: list[Caveat] = []
    for a in spec.arms:
        rr = sorted((r for r in runs if r.arm == a.name), key=lambda r: r.repetition)
        floor = level_noise_floor(rr, metrics, slo=slo, steady_state=steady_state, effect=effect)
        levels.append(BenchLevel(arm=a.name, level=(a.load or {})[axis], config=rr[0].config if rr else None,
                                 runs=_rows(rr), noise_floor=floor, roofline=roofline_of(rr, (a.name,)),
                                 stored=rr))
        caveats += _level_caveats(a.name, rr, floor, label=f"{a.name} ")
    return SweepResult(experiment=exp_id, db=str(db), axis=axis, spec=spec, sweep=levels,
                       table=sweep_rows(levels), outcomes=analysis.outcomes,
                       comparisons=analysis.comparisons, failure=no_valid_measured_run(exp_id, store),
                       warnings=caveats)
