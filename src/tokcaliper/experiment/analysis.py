"""Read a stored experiment back and compare its arms (M3, M4, M9; no I/O beyond the store).

The plan comes from the stored experiment file, what ran from its runs and
outcomes, and the comparison from :mod:`tokcaliper.stats.ab`: every other arm
against the first (the baseline), on the primary metric plus TTFT and ITL,
Holm-corrected across those metrics. Interleaved runs are paired by block of
the run order (:func:`tokcaliper.experiment.samples.samples_from_runs`), so the
paired analysis decides; warm-up runs and invalid runs never enter it.
"""

from __future__ import annotations

import math

from pydantic import BaseModel

from tokcaliper.errors import InputError
from tokcaliper.experiment.samples import samples_from_runs
from tokcaliper.experiment.spec import ExperimentSpec
from tokcaliper.model.metrics import get_metric
from tokcaliper.model.run import Run
from tokcaliper.model.telemetry import FOREIGN_CPU_BOUND_CORES, FOREIGN_GPU_SM_BOUND_PCT
from tokcaliper.numbers import num
from tokcaliper.stats.ab import MultiComparison, analyze_samples, compare_metrics
from tokcaliper.stats.covariates import CovariateRank, run_covariates
from tokcaliper.stats.describe import Description, describe
from tokcaliper.stats.noise import explain_spread
from tokcaliper.stats.outliers import RunTags
from tokcaliper.stats.sequential import SequentialDecision, sequential_step
from tokcaliper.stats.variance_components import RestartSplit, restart_split
from tokcaliper.store import Store
from tokcaliper.model.experiment import Outcome

__all__ = ["ArmComparison", "ArmSummary", "ExperimentAnalysis", "RunLine", "analyze_experiment",
           "analysed_runs", "comparison_metrics", "experiment_closing", "governing_verdict", "metric_triples",
           "restart_splits", "run_cause", "sequential_decision", "split_by_restart"]

#: Latency metrics compared beside a throughput primary (and Holm-corrected with it).
SECONDARY_METRICS = ("ttft_p50_ms", "itl_p50_ms")


class RunLine(BaseModel):
    """One stored run of the experiment as the report lists it."""

    id: int
    position: int | None
    arm: str
    warmup_run: bool
    valid: bool
    invalid_reason: str | None
    rest_s: float | None
    readback: str | None
    value: float | None


class ArmSummary(BaseModel):
    """An arm's measured, valid runs on the primary metric (n, mean, sd, CV).

    ``explained_by`` / ``explanation``: the covariate its runs carry that goes with
    the spread of the primary metric over them, and the noise floor's sentence saying
    so (:func:`tokcaliper.stats.noise.explain_spread`; None when none reaches its bound).
    """

    arm: str
    n: int
    planned: int
    description: Description | None
    explained_by: CovariateRank | None = None
    explanation: str | None = None


class ArmComparison(BaseModel):
    """One candidate arm against the baseline, over the compared metrics.

    Attributes:
        baseline / candidate: arm names. metrics: the analyses (Holm across
            them), primary metric first; ``None`` with ``error`` when the runs
            cannot be compared yet (e.g. fewer than 2 valid runs in an arm).
    """

    baseline: str
    candidate: str
    metrics: MultiComparison | None = None
    error: str | None = None


class ExperimentAnalysis(BaseModel):
    """Everything ``experiment show`` prints: plan, what ran, the comparison.

    ``restarts``: for each managed-server arm (restarted at every segment), its
    primary metric's restart-level and run-level variance with the allocation
    advice (:func:`restart_splits`).

    ``governs`` (until-decided experiments only) says which verdict is the
    experiment's: the sequential decision, not the fixed-n comparison.

    ``closing``: the plain ``result:``/``next:`` lines that end the report, one
    pair per candidate arm (:func:`experiment_closing`).
    """

    id: str
    name: str
    status: str
    created_at: str
    spec: ExperimentSpec
    planned: list[tuple[int, str]]
    runs: list[RunLine]
    outcomes: list[Outcome]
    arms: list[ArmSummary]
    comparisons: list[ArmComparison]
    sequential: SequentialDecision | None = None
    restarts: list[RestartSplit] = []
    governs: str | None = None
    closing: list[str] = []


def comparison_metrics(primary: str) -> list[str]:
    """The primary metric, then TTFT and ITL p50 when the primary is not one of them."""
    return [primary, *(m for m in SECONDARY_METRICS if m != primary)]


def _value(run: Run, metric: str) -> float | None:
    return get_metric(metric).extract(run.metrics)


def analysed_runs(runs: list[Run]) -> list[Run]:
    """The runs an analysis may use: measured (not warm-up), valid, with a position."""
    return [r for r in runs if not r.warmup_run and r.valid and r.position is not None]


def metric_triples(runs: list[Run], metric: str) -> list[tuple[int, str, float]]:
    """``(position, arm, value)`` of the analysed runs that have a value of ``metric``
    (the input of :func:`tokcaliper.experiment.samples.samples_from_runs`)."""
    m = get_metric(metric)
    return [(r.position, r.arm, v) for r in analysed_runs(runs)  # type: ignore[misc]
            if (v := m.extract(r.metrics)) is not None]


def sequential_decision(spec: ExperimentSpec, runs: list[Run]) -> SequentialDecision | None:
    """The sequential rule on the complete pairs of ``runs`` (``until_decided`` experiments).

    Pairs are the blocks of the run order holding a valid measured run of both
    arms (:func:`tokcaliper.experiment.samples.samples_from_runs`); ``None``
    before the first complete pair.
    """
    triples = [t for t in metric_triples(runs, spec.metric) if t[2] > 0]
    names = (spec.arms[0].name, spec.arms[1].name)
    try:
        pairs = samples_from_runs(triples, names, spec.order, len(spec.arms), metric=spec.metric)
    except InputError:
        return None  # no complete pair yet
    log_ratios = [math.log(b / a) for a, b in zip(pairs.a, pairs.b)]
    return sequential_step(log_ratios, alpha=spec.alpha, noise_band=spec.noise_band,
                           margin=spec.equivalence_margin,
                           higher_is_better=get_metric(spec.metric).higher_is_better,
                           max_pairs=spec.runs_per_arm, effect=spec.effect)


def _seconds(a: str, b: str) -> float:
    """b − a in seconds for two stored UTC ISO timestamps."""
    from datetime import datetime

    return (datetime.fromisoformat(b.replace("Z", "+00:00"))
            - datetime.fromisoformat(a.replace("Z", "+00:00"))).total_seconds()


def split_by_restart(groups: list[list[Run]], *, arm: str, metric: str,
                     session_runs: list[Run] | None = None) -> RestartSplit:
    """:func:`tokcaliper.stats.variance_components.restart_split` of runs grouped by server start.

    Costs from the runs' own timestamps: a run costs the median of its
    ``finished_at − started_at``; a restart costs the median gap between the
    session's last run before a group (any arm; a warm-up run of the same arm
    belongs to the group) and the group's first run: stop, start, health and
    warm-up until the first measured run. Runs without a value of ``metric``
    are left out of the values.

    Args:
        groups: the runs of each server start, in run order (measured, valid).
        arm, metric: the arm's name and a registry metric name.
        session_runs: every run of the session (warm-ups, other arms); default
            the runs of ``groups``.
    """
    import statistics

    m = get_metric(metric)
    values = [[v for r in g if (v := m.extract(r.metrics)) is not None] for g in groups]
    runs = [r for g in groups for r in g]
    run_s = statistics.median(_seconds(r.started_at, r.finished_at) for r in runs) if runs else None
    everyone = sorted(session_runs if session_runs is not None else runs, key=lambda r: r.started_at)
    gaps = []
    for g in groups:
        if not g:
            continue
        before = [r for r in everyone if r.started_at < g[0].started_at
                  and not (r.warmup_run and r.arm == arm)]
        if before and before[-1].arm != arm or before and session_runs is None:
            gaps.append(_seconds(before[-1].finished_at, g[0].started_at))
    restart_s = statistics.median(gaps) if gaps else None
    return restart_split(values, arm=arm, metric=metric, restart_s=restart_s, run_s=run_s)


def restart_splits(spec: ExperimentSpec, runs: list[Run]) -> list[RestartSplit]:
    """Restart-level against run-level variance of each managed-server arm (issue 17 item 7).

    A managed-server arm's server is restarted at every segment of the run
    order (:func:`tokcaliper.experiment.execute.segments`), so its measured runs
    are nested in restarts: one group per segment. Switch arms against a live
    server are not restarted and get no split. A segment cut by a resume counts
    as one restart (an approximation: resume restarts the server mid-segment).
    """
    from tokcaliper.experiment.execute import segments

    measured = {r.position: r for r in analysed_runs(runs)}
    out = []
    for arm in spec.arms:
        if arm.server_cmd is None:
            continue
        groups = [[measured[p] for p in seg.positions if p in measured]
                  for seg in segments(spec) if seg.arm == arm.name]
        out.append(split_by_restart(groups, arm=arm.name, metric=spec.metric, session_runs=runs))
    return out


def analyze_experiment(store: Store, exp_id: str) -> ExperimentAnalysis:
    """The stored experiment ``exp_id``, its runs and outcomes, and its comparison.

    Raises:
        InputError: no such experiment.
        StoreError: a stored run no longer validates.
    """
    row = store.get_experiment(exp_id)
    spec = ExperimentSpec.model_validate(row.spec)
    runs = store.session_runs(row.id)
    primary = spec.metric
    lines = [
        RunLine(id=r.id or 0, position=r.position, arm=r.arm, warmup_run=r.warmup_run, valid=r.valid,
                invalid_reason=r.invalid_reason, rest_s=r.rest_s, readback=r.readback,
                value=_value(r, primary))
        for r in runs
    ]
    measured = analysed_runs(runs)
    arms = []
    for a in spec.arms:
        arm_runs = [r for r in measured if r.arm == a.name and _value(r, primary) is not None]
        values = [_value(r, primary) for r in arm_runs]
        d = describe(values, a.name) if values else None  # type: ignore[arg-type]
        why, sentence = explain_spread(primary, values, run_covariates(arm_runs),  # type: ignore[arg-type]
                                       None if d is None else d.cv)
        arms.append(ArmSummary(arm=a.name, n=len(values), planned=spec.runs_per_arm, description=d,
                               explained_by=why, explanation=sentence))
    baseline = spec.arms[0].name
    comparisons = [_compare(spec, measured, baseline, a.name) for a in spec.arms[1:]]
    sequential = governs = None
    if spec.until_decided:
        sequential = sequential_decision(spec, runs)
        governs = governing_verdict(sequential, comparisons, spec.order)
    return ExperimentAnalysis(
        id=row.id, name=row.name, status=row.status, created_at=row.created_at, spec=spec,
        planned=spec.run_order(), runs=lines, outcomes=store.outcomes(row.id), arms=arms,
        comparisons=comparisons, sequential=sequential, governs=governs,
        restarts=restart_splits(spec, runs),
        closing=experiment_closing(spec, comparisons, sequential),
    )


def experiment_closing(spec: ExperimentSpec, comparisons: list[ArmComparison],
                       sequential: SequentialDecision | None) -> list[str]:
    """The closing lines of an experiment (issue 26): the sequential rule's when it governs
    (until-decided), else each candidate's primary-metric comparison
    (:func:`tokcaliper.stats.closing.closing_lines`); a comparison not possible yet says why."""
    from tokcaliper.stats.closing import closing_lines, sequential_closing

    if spec.until_decided and sequential is not None:
        return sequential_closing(sequential, (spec.arms[0].name, spec.arms[1].name), spec.metric)
    out: list[str] = []
    for c in comparisons:
        if c.metrics is None or not c.metrics.metrics:
            out.append(f"result: {c.candidate} against {c.baseline}: not comparable yet — {c.error}")
            out.append("next: measure at least 2 valid runs per arm (experiment resume)")
        else:
            out.extend(closing_lines(c.metrics.metrics[0]))
    return out


def governing_verdict(sq: SequentialDecision | None, comparisons: list[ArmComparison],
                      order: str = "random-blocks") -> str:
    """Which verdict an until-decided experiment reports, in one sentence (issue 17 item 4).

    The sequential rule's error rates hold at its data-dependent stopping time;
    a fixed-n test read at that time does not keep α (it is what peeking
    does), so the fixed-n comparison is shown for its figures only.
    """
    fixed = None
    if comparisons and comparisons[0].metrics is not None and comparisons[0].metrics.metrics:
        fixed = comparisons[0].metrics.metrics[0].verdict
    if sq is None:
        return ("the sequential rule governs this experiment, but no complete pair exists yet: "
                "no verdict")
    caveat = ""
    if order == "alternate":
        caveat = ("; caution: in alternate order the rule reads pair ratios that each carry one "
                  "run-step of drift (A/A with 1.5%/run drift: false decisions in 10% of "
                  "experiments at 20 pairs, docs/calibration.md) — prefer random-blocks or abba")
    clash = ""
    if fixed is not None and sq.verdict is not None and fixed != sq.verdict:
        clash = f" (the fixed-n comparison reads '{fixed}': not this experiment's verdict)"
    if sq.decided:
        return (f"the sequential decision governs: '{sq.verdict}' after {sq.pairs_used} of at "
                f"most {sq.max_pairs} pairs{clash}; the fixed-n comparison below is shown for its "
                "figures — its p and CI assume the number of pairs was fixed in advance, which "
                "stopping when decided is not" + caveat)
    return (f"not decided yet ({sq.pairs_used} of at most {sq.max_pairs} pairs): the sequential "
            "rule governs once it decides; the fixed-n comparison below reads the pairs so far "
            "and is not this experiment's verdict" + caveat)


def run_cause(run: Run) -> str | None:
    """A known reason a run may be off, from its error rate, client health or telemetry.

    Failed requests, a load generator that limited itself (``client.limits``)
    or saturated its core, other processes holding ≥ ``FOREIGN_CPU_BOUND_CORES``
    cores of the host or ≥ ``FOREIGN_GPU_SM_BOUND_PCT`` % of a GPU's SM time, and GPU clock-event reasons other than idle seen in
    at least 10% of the samples; ``None`` when none is known.
    """
    m = run.metrics
    why = []
    total = m.completed + m.failed
    if m.failed:
        top = max(m.errors.items(), key=lambda kv: kv[1])[0] if m.errors else None
        why.append(f"{m.failed} of {total} requests failed" + (f" ({top})" if top else ""))
    if m.client is not None and m.client.client_limited:
        why.append("client-limited" + (f": {'; '.join(m.client.limits)}" if m.client.limits else ""))
    if m.client is not None and m.client.host_limits:
        why.append("host-delayed: " + "; ".join(m.client.host_limits))
    if m.client is not None and m.client.cap_limits:
        why.append("cap-limited: " + "; ".join(m.client.cap_limits))
    tel = run.telemetry
    if tel is not None:
        if tel.client_saturated:
            why.append("load generator saturated its core")
        if tel.foreign_cpu_cores_mean is not None and tel.foreign_cpu_cores_mean >= FOREIGN_CPU_BOUND_CORES:
            why.append(f"other processes used {num(tel.foreign_cpu_cores_mean)} cores")
        for d in tel.devices:
            if d.foreign_sm_mean_pct is not None and d.foreign_sm_mean_pct >= FOREIGN_GPU_SM_BOUND_PCT:
                why.append(f"other processes took {num(d.foreign_sm_mean_pct)} % of {d.device}'s SM time")
            hot = sorted(k for k, v in d.throttle_share.items() if v >= 0.1 and "idle" not in k.lower())
            if hot:
                why.append(f"{d.device} clock events: {', '.join(hot)}")
    return "; ".join(why) or None


def _tags(measured: list[Run], arm: str, positions: list[float] | None) -> RunTags:
    """Run ids, known causes and 1-based positions (as ``experiment show`` numbers them)."""
    by_pos = {r.position: r for r in measured if r.arm == arm}
    runs = [by_pos.get(int(p)) for p in positions or []]
    return RunTags(positions=None if positions is None else [p + 1 for p in positions],
                   ids=[str(r.id) if r and r.id is not None else "?" for r in runs],
                   causes=[run_cause(r) if r else None for r in runs])


def _compare(spec: ExperimentSpec, measured: list[Run], baseline: str, candidate: str) -> ArmComparison:
    analyses = []
    try:
        for name in comparison_metrics(spec.metric):
            metric = get_metric(name)
            samples = samples_from_runs(metric_triples(measured, name), (baseline, candidate), spec.order, len(spec.arms),
                                        metric=name)
            tags = (_tags(measured, baseline, samples.pos_a), _tags(measured, candidate, samples.pos_b))
            analyses.append(analyze_samples(
                samples.a, samples.b, (baseline, candidate), paired=samples.paired, metric=name,
                unit=metric.unit, higher_is_better=metric.higher_is_better, alpha=spec.alpha,
                noise_band=spec.noise_band, margin=spec.equivalence_margin, effect=spec.effect,
                noise_abs=metric.noise_abs,  # difference scale where the resolution is known
                tags=tags, design=spec.order,
            ))
    except InputError as e:
        if not analyses:
            return ArmComparison(baseline=baseline, candidate=candidate, error=str(e))
        # A secondary metric that cannot be compared must not hide the primary one.
    why = "the first arm of the experiment file (every other arm is compared with it)"
    analyses = [x.model_copy(update={"control_reason": why}) for x in analyses]
    return ArmComparison(baseline=baseline, candidate=candidate, metrics=compare_metrics(analyses))
