"""What ``tokcaliper report`` draws, read from the store once (issue 19 item 3).

Three reportable results are built here, one per kind of stored measurement:

- :class:`ExperimentReport` (:func:`gather_experiment_report`): an interleaved A/B(/n) experiment;
- :class:`SessionReport` (:func:`gather_session_report`): the runs of a bench session and
  their noise floor (METHODS.md M1, M3);
- :class:`SweepReport` (:func:`gather_sweep_report`): a load sweep (an experiment whose
  arms differ only in concurrency or rate, :mod:`tokcaliper.experiment.load_sweep`),
  each level's throughput and latency with 95% CIs over its runs, against an SLO.

:func:`gather_store_report` picks the kind from the id. The renderers
(:mod:`tokcaliper.report.formats`) compute nothing: every figure, the choice of
the peak and of the last level within the SLO, and the caveats (named warnings,
:mod:`tokcaliper.model.warnings`) are made here. The roofline lines need the audit's
facts, which this layer may not import: the caller passes a function that makes them
(:func:`tokcaliper.report.formats.roofline.roofline_lines`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel

from tokcaliper.errors import InputError
from tokcaliper.experiment.analysis import ExperimentAnalysis, analysed_runs, analyze_experiment
from tokcaliper.model import warnings as W
from tokcaliper.model.metrics import get_metric, headline_metrics, scalar_series
from tokcaliper.model.run import LoadConfig, Run
from tokcaliper.model.telemetry import HostInfo, TelemetrySample
from tokcaliper.model.warnings import Caveat
from tokcaliper.numbers import percent
from tokcaliper.stats.describe import Description, describe
from tokcaliper.stats.noise import NoiseFloorReport, noise_floor
from tokcaliper.store import Store

__all__ = ["ArmFloor", "ExperimentReport", "RooflineLines", "SessionReport", "SessionRun",
           "SweepLevel", "SweepReport", "TelemetryRow", "gather_experiment_report",
           "gather_session_report", "gather_store_report", "gather_sweep_report", "is_sweep",
           "telemetry_rows"]

#: Most telemetry samples drawn per report (evenly thinned beyond it): a long
#: experiment samples at 10 Hz for hours, and a lane plot cannot show more points.
MAX_SAMPLES = 20_000

#: ``(runs, arm names) → lines``: each arm's fraction of its memory-bandwidth roofline and
#: the first computed run's arithmetic (issue 25), made by a layer that may read the audit's facts.
RooflineLines = Callable[[Sequence[Run], Sequence[str]], list[str]]

#: The series of the telemetry summary: (sample attribute, label with unit).
TELEMETRY_SERIES = (("clock_mhz", "clock (MHz)"), ("power_w", "power (W)"),
                    ("temperature_c", "temperature (°C)"), ("utilization_pct", "utilisation (%)"),
                    ("steal_pct", "steal (%)"))


class TelemetryRow(BaseModel):
    """One device's one series over a report's samples.

    Attributes:
        device: the device id. series: the label with its unit. n: samples with a value.
        mean, min, max: over those samples, in the series' unit.
    """

    device: str
    series: str
    n: int
    mean: float
    min: float
    max: float


def telemetry_rows(samples: Sequence[TelemetrySample]) -> list[TelemetryRow]:
    """The telemetry summary: per device and series (:data:`TELEMETRY_SERIES`) n, mean, min, max.

    Pure. Series without any value on a device are left out; empty input → ``[]``.
    """
    out = []
    devices = sorted({s.device for s in samples})
    for dev in devices:
        for attr, label in TELEMETRY_SERIES:
            vals = [float(v) for s in samples if s.device == dev and (v := getattr(s, attr)) is not None]
            if vals:
                out.append(TelemetryRow(device=dev, series=label, n=len(vals), mean=sum(vals) / len(vals),
                                        min=min(vals), max=max(vals)))
    return out


class _Provenance(BaseModel):
    """Where the runs ran and how (shared by every store report).

    Attributes:
        host: the first run's host. tool_versions, server_versions: the distinct versions seen.
        command_lines: the distinct tokcaliper command lines. samples: telemetry samples of
        the measured runs (thinned to :data:`MAX_SAMPLES`). spans: ``(start, end, label)``
        of each run on the samples' clock, s. telemetry: :func:`telemetry_rows` of all samples.
        roofline_lines: see :data:`RooflineLines` (empty when not asked for).
        caveats: what the methods require the reader to know, named warnings.
    """

    host: HostInfo | None
    tool_versions: list[str]
    server_versions: list[str]
    command_lines: list[str]
    samples: list[TelemetrySample]
    spans: list[tuple[float, float, str]]
    telemetry: list[TelemetryRow] = []
    roofline_lines: list[str] = []
    caveats: list[Caveat] = []


def _provenance(store: Store, runs: Sequence[Run]) -> dict:
    samples: list[TelemetrySample] = []
    spans = []
    for r in runs:
        if r.id is None or r.warmup_run:
            continue
        got = store.telemetry_samples(r.id)
        if got:
            samples += got
            pos = r.repetition if r.position is None else r.position
            spans.append((min(s.t_mono_s for s in got), max(s.t_mono_s for s in got), f"{r.arm} {pos + 1}"))
    rows = telemetry_rows(samples)
    if len(samples) > MAX_SAMPLES:
        step = len(samples) / MAX_SAMPLES
        samples = [samples[int(i * step)] for i in range(MAX_SAMPLES)]
    return dict(samples=samples, spans=spans, telemetry=rows, host=runs[0].host if runs else None,
                tool_versions=sorted({r.tool_version for r in runs}),
                server_versions=sorted({r.server_version for r in runs if r.server_version}),
                command_lines=list(dict.fromkeys(r.command_line for r in runs)))


def _latencies(runs: Sequence[Run]) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Per arm every measured request's TTFT and every token gap (ms) of ``runs``."""
    ttft: dict[str, list[float]] = {}
    itl: dict[str, list[float]] = {}
    for r in runs:
        live = [q for q in r.requests if not q.warmup and q.error is None]
        ttft.setdefault(r.arm, []).extend(q.ttft_s * 1000 for q in live if q.ttft_s is not None)
        itl.setdefault(r.arm, []).extend(g * 1000 for q in live for g in q.itl_s)
    return ttft, itl


def _common_caveats(samples: Sequence[TelemetrySample], invalid: Sequence[tuple[int | None, str | None]]
                    ) -> list[Caveat]:
    out = [W.REPORT_CLIENT_SIDE.caveat()]
    if not samples:
        out.append(W.REPORT_NO_TELEMETRY.caveat())
    if invalid:
        out.append(W.REPORT_RUNS_LEFT_OUT.caveat(
            n=len(invalid), which="; ".join(f"run {i} ({why})" for i, why in invalid[:5])))
    return out


class ExperimentReport(_Provenance):
    """Everything the experiment report shows.

    Attributes:
        analysis: the experiment's analysis (the numbers and verdicts, as `experiment show`).
        ttft_ms, itl_ms: per arm, every measured request's TTFT and every token
            gap of the analysed runs, ms (the ECDFs).
        marks: per arm, per analysed run in run order, the outlier mark or ``None``.
        values: per arm, the primary metric of its analysed runs in run order.
        server_commands: arm → the command that started its server.
        (and the provenance of :class:`_Provenance`).
    """

    analysis: ExperimentAnalysis
    ttft_ms: dict[str, list[float]]
    itl_ms: dict[str, list[float]]
    marks: dict[str, list[str | None]]
    values: dict[str, list[float]]
    server_commands: dict[str, str]


def gather_experiment_report(store: Store, exp_id: str, roofline: RooflineLines | None = None,
                             analysis: ExperimentAnalysis | None = None) -> ExperimentReport:
    """Read experiment ``exp_id`` and what its report draws.

    Args:
        roofline: makes :attr:`ExperimentReport.roofline_lines` (None: none).
        analysis: the experiment's analysis when the caller has it (not read twice).

    Raises:
        InputError: no such experiment. StoreError: a stored run no longer validates.
    """
    analysis = analysis or analyze_experiment(store, exp_id)
    runs = store.session_runs(analysis.id, with_requests=True)
    measured = analysed_runs(runs)
    metric = get_metric(analysis.spec.metric)
    outliers: set[tuple[str, int]] = set()  # (arm, 1-based position) of flagged runs
    for c in analysis.comparisons:
        for an in (c.metrics.metrics if c.metrics is not None else []):
            if an.metric == analysis.spec.metric and an.outliers is not None:
                outliers |= {(f.arm, int(f.position)) for f in an.outliers.runs
                             if f.position is not None}
    values: dict[str, list[float]] = {}
    marks: dict[str, list[str | None]] = {}
    for r in measured:
        v = metric.extract(r.metrics)
        if v is not None:
            values.setdefault(r.arm, []).append(v)
            flagged = r.position is not None and (r.arm, r.position + 1) in outliers
            marks.setdefault(r.arm, []).append("outlier" if flagged else None)
    ttft, itl = _latencies(measured)
    prov = _provenance(store, runs)
    caveats = []
    for c in analysis.comparisons:
        for m in (c.metrics.metrics if c.metrics is not None else [])[:1]:
            if m.mde is not None:
                caveats.append(W.REPORT_SMALLEST_CHANGE.caveat(
                    candidate=c.candidate, baseline=c.baseline, smallest=percent(m.mde + m.noise_band),
                    band=percent(m.noise_band), mde=percent(m.mde), metric=m.metric))
    if analysis.spec.until_decided:
        caveats.append(W.REPORT_UNTIL_DECIDED.caveat())
    caveats += _common_caveats(prov["samples"], [(r.id, r.invalid_reason) for r in analysis.runs
                                                 if not r.valid])
    arms = [a.name for a in analysis.spec.arms]
    return ExperimentReport(
        analysis=analysis, ttft_ms=ttft, itl_ms=itl, marks=marks, values=values,
        server_commands={a.name: (a.server_cmd or a.switch or analysis.spec.server_cmd or "")
                         for a in analysis.spec.arms},
        roofline_lines=[] if roofline is None else roofline(runs, arms), caveats=caveats, **prov)


class SessionRun(BaseModel):
    """One run of a session as the report lists it.

    Attributes:
        id: store id. arm, repetition: as stored. valid, invalid_reason: whether it counts.
        values: the headline metrics of the run, by registry name (None: no data).
    """

    id: int | None
    arm: str
    repetition: int
    valid: bool
    invalid_reason: str | None
    values: dict[str, float | None]


class ArmFloor(BaseModel):
    """One arm's noise floor: its n valid runs and :class:`~tokcaliper.stats.noise.NoiseFloorReport`."""

    arm: str
    n: int
    noise: NoiseFloorReport | None


class SessionReport(_Provenance):
    """Everything the report of a bench session shows.

    Attributes:
        session: the session id. metric: the primary metric (registry name), first in the sentence.
        floors: per arm, the noise floor of its valid runs over the headline metrics
            (:func:`tokcaliper.stats.noise.noise_floor`, covariates from
            :func:`tokcaliper.stats.covariates.run_covariates`).
        runs: the measured runs. values: per arm the primary metric of its valid runs, in order.
        ttft_ms, itl_ms: per arm every measured request's TTFT and token gap, ms.
        config: the load of the first run. server_command: the command that started the
            server (None: a live server, ``--url``).
    """

    session: str
    metric: str
    floors: list[ArmFloor]
    runs: list[SessionRun]
    values: dict[str, list[float]]
    ttft_ms: dict[str, list[float]]
    itl_ms: dict[str, list[float]]
    config: LoadConfig
    server_command: str | None


def gather_session_report(store: Store, session: str, metric: str = "aggregate_output_tok_s",
                          roofline: RooflineLines | None = None) -> SessionReport:
    """The runs of bench session ``session`` and their noise floor per arm.

    Raises:
        InputError: no runs in the session, or an unknown ``metric``.
    """
    from tokcaliper.stats.covariates import run_covariates

    primary = get_metric(metric)
    runs = [r for r in store.session_runs(session, with_requests=True) if not r.warmup_run]
    if not runs:
        raise InputError(f"no runs in session {session!r} (see `tokcaliper runs`)")
    arms = list(dict.fromkeys(r.arm for r in runs))
    names = [m.name for m in headline_metrics()]
    floors = []
    values: dict[str, list[float]] = {}
    for arm in arms:
        valid = [r for r in runs if r.arm == arm and r.valid]
        noise = noise_floor(scalar_series([r.metrics for r in valid], names=names),
                            covariates=run_covariates(valid)) if valid else None
        floors.append(ArmFloor(arm=arm, n=len(valid), noise=noise))
        values[arm] = [v for r in valid if (v := primary.extract(r.metrics)) is not None]
    valid_runs = [r for r in runs if r.valid]
    ttft, itl = _latencies(valid_runs)
    prov = _provenance(store, runs)
    return SessionReport(
        session=session, metric=metric, floors=floors, values=values, ttft_ms=ttft, itl_ms=itl,
        runs=[SessionRun(id=r.id, arm=r.arm, repetition=r.repetition, valid=r.valid,
                         invalid_reason=r.invalid_reason,
                         values={m.name: m.extract(r.metrics) for m in headline_metrics()}) for r in runs],
        config=runs[0].config, server_command=runs[0].server_command,
        roofline_lines=[] if roofline is None else roofline(runs, arms),
        caveats=_common_caveats(prov["samples"], [(r.id, r.invalid_reason) for r in runs if not r.valid]),
        **prov)


class SweepLevel(BaseModel):
    """One level of a sweep: its valid runs' figures, each a :class:`Description` over runs.

    Attributes:
        arm: the level's arm (``c=4``, ``2rps``). level: the concurrency or rate.
        n: valid runs. throughput: aggregate output tok/s. latency: the sweep's latency
            metric (:attr:`SweepReport.latency_metric`), ms. ttft_p50_ms, itl_p50_ms: as named.
        meets_slo: the latency CI's upper end (or the mean, n = 1) is below the SLO;
            None without an SLO or a latency.
    """

    arm: str
    level: float
    n: int
    throughput: Description | None
    latency: Description | None
    ttft_p50_ms: Description | None
    itl_p50_ms: Description | None
    meets_slo: bool | None = None


class SweepReport(_Provenance):
    """Everything the report of a load sweep shows.

    Attributes:
        analysis: the sweep's experiment analysis (each level against the first).
        axis: ``"concurrency"`` or ``"rate_rps"``. levels: in the sweep's order.
        latency_metric: the latency drawn against throughput (``ttft_p99_ms``).
        slo_ms: the TTFT bound of the sweep's ``slo`` (ms), None without one.
        peak: the arm with the highest mean throughput. within_slo: the highest level
            that meets the SLO (None: no SLO, or no level meets it).
        server_command: the one server every level ran against.
    """

    analysis: ExperimentAnalysis
    axis: str
    levels: list[SweepLevel]
    latency_metric: str
    slo_ms: float | None
    peak: str | None
    within_slo: str | None
    server_command: str | None


def is_sweep(analysis: ExperimentAnalysis) -> str | None:
    """The axis when every arm of the experiment is a load arm varying one sweep axis, else None."""
    from tokcaliper.experiment.spec import SWEEP_AXES

    arms = analysis.spec.arms
    if len(arms) < 2 or any(a.server_cmd or a.switch or not a.load for a in arms):
        return None
    for axis in SWEEP_AXES:
        if all(set(a.load or {}) == {axis} for a in arms):
            return axis
    return None


def _describe(values: list[float], name: str) -> Description | None:
    return describe(values, name) if values else None


def gather_sweep_report(store: Store, exp_id: str, latency_metric: str = "ttft_p99_ms",
                        roofline: RooflineLines | None = None,
                        analysis: ExperimentAnalysis | None = None) -> SweepReport:
    """Read sweep experiment ``exp_id``: each level's figures over its valid runs.

    Args:
        latency_metric: the latency drawn against throughput (registry name, ms).
        roofline: see :data:`RooflineLines`. analysis: the experiment's analysis, when read.

    Raises:
        InputError: no such experiment, or it is not a sweep (arms not load arms of one axis).
    """
    analysis = analysis or analyze_experiment(store, exp_id)
    axis = is_sweep(analysis)
    if axis is None:
        raise InputError(f"experiment {analysis.id} is not a load sweep (its arms differ in more than "
                         "concurrency or rate): report it as an experiment")
    runs = store.session_runs(analysis.id, with_requests=False)
    measured = analysed_runs(runs)
    slo_s = analysis.spec.load.slo_s
    slo_ms = None if not slo_s or "ttft" not in slo_s else slo_s["ttft"] * 1000
    lat, tp = get_metric(latency_metric), get_metric("aggregate_output_tok_s")
    ttft50, itl50 = get_metric("ttft_p50_ms"), get_metric("itl_p50_ms")
    levels = []
    for a in analysis.spec.arms:
        rr = [r for r in measured if r.arm == a.name and r.valid]

        def col(m, rr=rr) -> list[float]:  # type: ignore[no-untyped-def]
            return [v for r in rr if (v := m.extract(r.metrics)) is not None]

        latency = _describe(col(lat), f"{a.name} {lat.name}")
        meets = None
        if slo_ms is not None and latency is not None:
            top = latency.ci95[1] if latency.ci95 is not None else latency.mean
            meets = top < slo_ms
        levels.append(SweepLevel(arm=a.name, level=float((a.load or {})[axis]), n=len(rr),
                                 throughput=_describe(col(tp), f"{a.name} {tp.name}"), latency=latency,
                                 ttft_p50_ms=_describe(col(ttft50), f"{a.name} ttft p50"),
                                 itl_p50_ms=_describe(col(itl50), f"{a.name} itl p50"), meets_slo=meets))
    with_tp = [lv for lv in levels if lv.throughput is not None]
    peak = max(with_tp, key=lambda lv: lv.throughput.mean).arm if with_tp else None  # type: ignore[union-attr]
    ok = [lv for lv in levels if lv.meets_slo]
    within = max(ok, key=lambda lv: lv.level).arm if ok else None
    prov = _provenance(store, runs)
    caveats = [W.REPORT_SWEEP_PERCENTILES.caveat(metric=lat.label)]
    if slo_ms is None:
        caveats.append(W.REPORT_NO_SLO.caveat())
    caveats += _common_caveats(prov["samples"], [(r.id, r.invalid_reason) for r in analysis.runs
                                                 if not r.valid])
    return SweepReport(
        analysis=analysis, axis=axis, levels=levels, latency_metric=latency_metric, slo_ms=slo_ms,
        peak=peak, within_slo=within, server_command=analysis.spec.server_cmd,
        roofline_lines=[] if roofline is None else roofline(runs, [a.name for a in analysis.spec.arms]),
        caveats=caveats, **prov)


def gather_store_report(store: Store, target: str, *, session: bool = False,
                        roofline: RooflineLines | None = None
                        ) -> ExperimentReport | SessionReport | SweepReport:
    """The report of ``target``: a sweep or an experiment by id, else a bench session.

    Args:
        target: an experiment id (or unique prefix) or a session id.
        session: ``target`` is a session (``--session``): no experiment lookup.
        roofline: passed on (see :data:`RooflineLines`).

    Raises:
        InputError: neither an experiment nor a session with runs, naming ``target``.
    """
    if not session:
        try:
            row = store.get_experiment(target)
        except InputError:
            if not store.session_ids(target):
                raise InputError(f"no experiment or session {target!r} in {store.path} "
                                 "(`tokcaliper experiment list`, `tokcaliper runs`)") from None
        else:
            analysis = analyze_experiment(store, row.id)
            if is_sweep(analysis) is not None:
                return gather_sweep_report(store, row.id, roofline=roofline, analysis=analysis)
            return gather_experiment_report(store, row.id, roofline=roofline, analysis=analysis)
    return gather_session_report(store, target, roofline=roofline)
