"""Acceptance metrics of stored runs, one by one and across repetitions (METHODS.md M6).

Per run: the counter difference stored with the run (``Run.counters_delta``)
read by the server family's reader (:mod:`tokcaliper.model.families`), the
per-request acceptance from each response's kept fields
(``RequestRecord.server_timings``: llama.cpp's ``timings``, SGLang's
``meta_info``), and the red flags.
Across runs: mean, CV and the quick MDE (:func:`tokcaliper.stats.mde_quick`,
``2·CV·√(2/n)``) of AL, acceptance rate, k_eff, AL/(k+1) and aggregate
throughput, so that AL's resolution can be set beside throughput's.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from tokcaliper.model.families import (
    ServerKind,
    detect_server_kind,
    family,
    request_acceptance,
    spec_counts,
    step_acceptance,
)
from tokcaliper.model.run import Run
from tokcaliper.numbers import num, percent
from tokcaliper.model.specdec import (
    LIMIT,
    AcceptanceMetrics,
    RequestAcceptance,
    acceptance_metrics,
    pooled_request_acceptance,
)
from tokcaliper.model.specdec_flags import RedFlag, predictable_by_construction
from tokcaliper.stats import Description, describe, mde_quick


class RunAcceptance(BaseModel):
    """Acceptance of one stored run.

    Attributes:
        run_id, session, arm: the run.
        server_kind: family whose reader was used (given or detected).
        metrics: from the counter difference; None when unavailable.
        unavailable: why ``metrics`` is None (e.g. the run's ``counters_error``).
        k: window the red flag compares AL with (given, else k_eff).
        requests: per measured request with draft counts.
        request_al: distribution of per-request AL (n = requests).
        pooled_requests: the requests' counts summed (ratios of sums).
        step_counters: tokens per target step from counters, for a family that
            counts steps and accepted tokens but not drafts (TGI); None otherwise.
        aggregate_output_tok_s: the run's aggregate throughput, tok/s.
        red_flags: :func:`tokcaliper.model.specdec_flags.predictable_by_construction` on the counters
            (or on the pooled requests when there are no counters).
    """

    run_id: int | None
    session: str
    arm: str
    server_kind: str | None
    metrics: AcceptanceMetrics | None
    unavailable: str | None = None
    k: float | None = None
    requests: list[RequestAcceptance] = Field(default_factory=list)
    request_al: Description | None = None
    pooled_requests: RequestAcceptance | None = None
    step_counters: RequestAcceptance | None = None
    aggregate_output_tok_s: float | None = None
    red_flags: list[RedFlag] = Field(default_factory=list)


def run_acceptance(run: Run, kind: ServerKind | None = None, k: float | None = None) -> RunAcceptance:
    """Acceptance metrics of one stored run.

    Args:
        run: a stored run (with its requests for the per-request figures).
        kind: server family; detected from the counter names when None
            (the per-request fields are then read by whichever family's reader knows them).
        k: configured draft window for the red flag AL = k + 1 (k_eff when None).
    """
    kind = kind or detect_server_kind(run.counters_delta)
    counts = spec_counts(run.counters_delta, kind) if run.counters_delta else None
    steps = step_acceptance(run.counters_delta, kind) if run.counters_delta else None
    metrics = acceptance_metrics(counts) if counts is not None else None
    unavailable = None
    if metrics is None:
        err = getattr(run, "counters_error", None)
        if err:
            unavailable = f"server counters unreadable: {err}"
        elif not run.counters_delta:
            unavailable = "no server counters stored with this run (was /metrics enabled?)"
        elif kind is not None and family(kind).no_counts_note:
            unavailable = family(kind).no_counts_note
        else:
            unavailable = f"no speculative-decoding counters among the run's {len(run.counters_delta)} counters"
    reqs: list[RequestAcceptance] = []
    for rec in run.requests:
        if rec.warmup or not rec.ok:
            continue
        r = request_acceptance(kind, rec.server_timings, rec.output_tokens)
        if r is not None:
            reqs.append(r)
    als = [r.al for r in reqs if r.al is not None]
    pooled = pooled_request_acceptance(reqs)
    k_flag = k if k is not None else (metrics.k_eff if metrics is not None else None)
    if metrics is not None and metrics.counts.drafts > 0:
        flags = predictable_by_construction(al=metrics.al, k=k_flag, drafted=metrics.counts.draft_tokens,
                                            accepted=metrics.counts.accepted)
    elif pooled is not None:
        flags = predictable_by_construction(drafted=pooled.draft_tokens, accepted=pooled.accepted)
    else:
        flags = []
    return RunAcceptance(run_id=run.id, session=run.session, arm=run.arm, server_kind=kind, metrics=metrics,
                         unavailable=unavailable, k=k_flag, requests=reqs,
                         request_al=describe(als, "per-request AL") if als else None, pooled_requests=pooled,
                         step_counters=steps,
                         aggregate_output_tok_s=run.metrics.aggregate_output_tok_s, red_flags=flags)


class MetricAcrossRuns(BaseModel):
    """One metric over repeated runs.

    Attributes:
        name: metric name (``"AL"``, ``"acceptance rate"``, …).
        n: runs with a value.
        mean, cv: mean and CV (fraction; None when n = 1).
        mde: quick MDE of two arms of n runs each, fraction of the mean
            (``2·CV·√(2/n)``, METHODS.md M3); 0 when the runs do not vary.
        values: the per-run values.
    """

    name: str
    n: int
    mean: float
    cv: float | None
    mde: float | None
    values: list[float]


class AcceptanceAcrossRuns(BaseModel):
    """Acceptance of several runs with mean/CV/MDE per metric.

    Attributes:
        runs: each run's :class:`RunAcceptance`.
        metrics: AL, acceptance rate, k_eff, AL/(k+1), aggregate throughput across runs.
        ruler: AL's MDE beside throughput's, in words (None without both).
        limit: :data:`tokcaliper.model.specdec.LIMIT`.
    """

    runs: list[RunAcceptance]
    metrics: list[MetricAcrossRuns]
    ruler: str | None
    limit: str = LIMIT
    by_arm: list["AcceptanceAcrossRuns"] = Field(default_factory=list)
    arm: str | None = None


def _across(name: str, values: Sequence[float | None]) -> MetricAcrossRuns | None:
    xs = [float(v) for v in values if v is not None]
    if not xs:
        return None
    d = describe(xs, name)
    mde: float | None = None
    if d.cv is not None:
        mde = 0.0 if d.cv == 0 else mde_quick(d.cv, d.n)
    return MetricAcrossRuns(name=name, n=d.n, mean=d.mean, cv=d.cv, mde=mde, values=xs)


def across_runs(runs: Sequence[RunAcceptance]) -> AcceptanceAcrossRuns:
    """Mean, CV and quick MDE of each acceptance metric over ``runs`` (and of throughput).

    Runs of different arms or server kinds (k = 2 and k = 4, two servers) are never
    pooled into one mean and CV (issue 26): then ``metrics`` is empty and ``by_arm``
    holds one summary per (arm, server kind), in order of first appearance.
    """
    groups: dict[tuple[str, str | None], list[RunAcceptance]] = {}
    for r in runs:
        groups.setdefault((r.arm, r.server_kind), []).append(r)
    if len(groups) > 1:
        parts = [_across_one(g).model_copy(update={"arm": f"{arm} ({kind or 'unknown server'})"})
                 for (arm, kind), g in groups.items()]
        return AcceptanceAcrossRuns(runs=list(runs), metrics=[], ruler=None, by_arm=parts)
    return _across_one(runs)


def _across_one(runs: Sequence[RunAcceptance]) -> AcceptanceAcrossRuns:
    def col(attr: str) -> list[float | None]:
        return [getattr(r.metrics, attr) if r.metrics is not None else None for r in runs]

    rows = [
        _across("AL", col("al")),
        _across("acceptance rate", col("acceptance_rate")),
        _across("k_eff", col("k_eff")),
        _across("AL/(k+1)", col("tokens_per_position")),
        _across("aggregate throughput (tok/s)", [r.aggregate_output_tok_s for r in runs]),
    ]
    metrics = [m for m in rows if m is not None]
    al, tp = rows[0], rows[4]
    ruler = None
    if al is not None and tp is not None and al.mde is not None and tp.mde is not None:
        n = min(al.n, tp.n)
        if tp.mde > 0 and al.mde < tp.mde:
            finer = (f"×{num(tp.mde / al.mde, 2, min_decimals=1)} finer" if al.mde > 0
                     else "no run-to-run variation in AL")
            ruler = (f"with n = {n} runs per arm, AL resolves differences of {percent(al.mde)} "
                     f"(CV {percent(al.cv or 0)}), throughput only {percent(tp.mde)} "
                     f"(CV {percent(tp.cv or 0)}): AL is the finer ruler ({finer})")
        else:
            ruler = (f"with n = {n} runs per arm, AL resolves {percent(al.mde)} and throughput "
                     f"{percent(tp.mde)}: AL is not the finer ruler here")
    return AcceptanceAcrossRuns(runs=list(runs), metrics=metrics, ruler=ruler)
