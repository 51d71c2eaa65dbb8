"""What ``tokcaliper report`` draws for an experiment, read from the store once (issue 19 item 3).

The renderer (:mod:`tokcaliper.report.html`) computes nothing: the analysis,
the per-request latencies, the telemetry and the provenance are gathered here.
"""

from __future__ import annotations

from pydantic import BaseModel

from tokcaliper.experiment.analysis import ExperimentAnalysis, analysed_runs, analyze_experiment
from tokcaliper.model.telemetry import HostInfo, TelemetrySample
from tokcaliper.store import Store

__all__ = ["ExperimentReport", "gather_experiment_report"]

#: Most telemetry samples drawn per report (evenly thinned beyond it): a long
#: experiment samples at 10 Hz for hours, and a lane plot cannot show more points.
MAX_SAMPLES = 20_000


class ExperimentReport(BaseModel):
    """Everything the experiment report shows.

    Attributes:
        analysis: the experiment's analysis (the numbers and verdicts, as `experiment show`).
        ttft_ms, itl_ms: per arm, every measured request's TTFT and every token
            gap of the analysed runs, ms (the ECDFs).
        marks: per arm, per analysed run in run order, the outlier mark or ``None``.
        values: per arm, the primary metric of its analysed runs in run order.
        samples: telemetry samples of the experiment's runs (thinned to :data:`MAX_SAMPLES`).
        spans: ``(start, end, "arm pos")`` of each run on the samples' clock, s.
        host: where it ran (the first run's host). tool_versions, server_versions:
            the distinct versions seen. command_lines: the distinct tokcaliper
            command lines. server_commands: arm → the command that started its server.
        roofline_lines: each arm's fraction of its memory-bandwidth roofline and the
            first computed run's arithmetic (issue 25; filled by the caller, which may
            read the audit's facts: :func:`tokcaliper.audit.run_roofline.arm_rooflines`).
    """

    analysis: ExperimentAnalysis
    ttft_ms: dict[str, list[float]]
    itl_ms: dict[str, list[float]]
    marks: dict[str, list[str | None]]
    values: dict[str, list[float]]
    samples: list[TelemetrySample]
    spans: list[tuple[float, float, str]]
    host: HostInfo | None
    tool_versions: list[str]
    server_versions: list[str]
    command_lines: list[str]
    server_commands: dict[str, str]
    roofline_lines: list[str] = []


def gather_experiment_report(store: Store, exp_id: str) -> ExperimentReport:
    """Read experiment ``exp_id`` and what its report draws.

    Raises:
        InputError: no such experiment. StoreError: a stored run no longer validates.
    """
    analysis = analyze_experiment(store, exp_id)
    runs = store.session_runs(analysis.id, with_requests=True)
    measured = analysed_runs(runs)
    from tokcaliper.model.metrics import get_metric

    metric = get_metric(analysis.spec.metric)
    outliers: set[tuple[str, int]] = set()  # (arm, 1-based position) of flagged runs
    for c in analysis.comparisons:
        for an in (c.metrics.metrics if c.metrics is not None else []):
            if an.metric == analysis.spec.metric and an.outliers is not None:
                outliers |= {(f.arm, int(f.position)) for f in an.outliers.runs
                             if f.position is not None}
    ttft: dict[str, list[float]] = {}
    itl: dict[str, list[float]] = {}
    values: dict[str, list[float]] = {}
    marks: dict[str, list[str | None]] = {}
    for r in measured:
        live = [q for q in r.requests if not q.warmup and q.error is None]
        ttft.setdefault(r.arm, []).extend(q.ttft_s * 1000 for q in live if q.ttft_s is not None)
        itl.setdefault(r.arm, []).extend(g * 1000 for q in live for g in q.itl_s)
        v = metric.extract(r.metrics)
        if v is not None:
            values.setdefault(r.arm, []).append(v)
            flagged = r.position is not None and (r.arm, r.position + 1) in outliers
            marks.setdefault(r.arm, []).append("outlier" if flagged else None)
    samples: list[TelemetrySample] = []
    spans = []
    for r in runs:
        if r.id is None or r.warmup_run:
            continue
        got = store.telemetry_samples(r.id)
        if got:
            samples += got
            spans.append((min(s.t_mono_s for s in got), max(s.t_mono_s for s in got),
                          f"{r.arm} {'' if r.position is None else r.position + 1}"))
    if len(samples) > MAX_SAMPLES:
        step = len(samples) / MAX_SAMPLES
        samples = [samples[int(i * step)] for i in range(MAX_SAMPLES)]
    return ExperimentReport(
        analysis=analysis, ttft_ms=ttft, itl_ms=itl, marks=marks, values=values,
        samples=samples, spans=spans, host=runs[0].host if runs else None,
        tool_versions=sorted({r.tool_version for r in runs}),
        server_versions=sorted({r.server_version for r in runs if r.server_version}),
        command_lines=list(dict.fromkeys(r.command_line for r in runs)),
        server_commands={a.name: (a.server_cmd or a.switch or "") for a in analysis.spec.arms},
    )
