"""The CI regression gate: new runs against a named baseline (issue 19 item 5).

A baseline is the runs of one arm (:class:`~tokcaliper.model.baseline.Baseline`);
the gate compares a new set of runs of the same configuration with it, metric
by metric, with the usual unpaired analysis and M9 verdict
(:func:`tokcaliper.stats.ab.analyze_samples`, Holm across the metrics) and
turns the verdicts into one of three outcomes:

- ``regression``: at least one metric's verdict is ``slower`` — p below α
  after Holm *and* the CI of the ratio outside the noise band, so a shift the
  noise floor can produce is never a regression;
- ``pass``: no metric is slower and every one is ``faster`` or ``equivalent``
  (TOST inside the equivalence margin; without ``margin`` no TOST is run, so
  an unchanged metric is inconclusive, not a pass);
- ``inconclusive``: no metric is slower, but at least one could be neither
  shown faster nor shown equivalent: the runs cannot tell a regression of the
  size the user cares about from none. The CLI exits 0 for it by default
  (documented) and with its own code under ``--fail-on-inconclusive``; the
  summary always says so, with the runs that would decide.

The baseline and new runs are separate sessions, so they are not paired:
drift between them is part of what the gate sees (the docs say to rerun the
baseline on the same machine when the host changes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from tokcaliper.errors import InputError
from tokcaliper.model.baseline import Baseline, BaselineRun
from tokcaliper.model.metrics import get_metric, headline_metrics, run_scalars
from tokcaliper.model.run import Run
from tokcaliper.model.warnings import GATE_LOAD_DIFFERS, Caveat
from tokcaliper.numbers import percent
from tokcaliper.stats.ab import MultiComparison, analyze_samples, compare_metrics
from tokcaliper.stats.describe import Description, describe
from tokcaliper.stats.verdict_gate import DEFAULT_NOISE_BAND

if TYPE_CHECKING:
    from tokcaliper.store import Store

__all__ = ["BaselineDetail", "BaselineList", "BaselineMetric", "GateOutcome", "GateReport", "baseline_from_runs",
           "describe_baseline", "gate_on_baseline", "load_arm_runs", "runs_of_arm"]

GateOutcome = Literal["pass", "regression", "inconclusive"]


def runs_of_arm(runs: Sequence[Run], arm: str | None, what: str) -> tuple[str, list[Run]]:
    """The measured, valid runs of one arm of ``runs`` (warm-up runs excluded).

    Args:
        runs: an experiment's or a session's runs. arm: the arm, or ``None``
            when there is only one. what: names the runs in errors.

    Returns:
        ``(arm, runs)``.

    Raises:
        InputError: several arms and no ``arm``, an unknown arm, or fewer than
            2 usable runs (a spread needs two).
    """
    usable = [r for r in runs if not r.warmup_run and r.valid]
    arms = list(dict.fromkeys(r.arm for r in usable))
    if arm is None:
        if len(arms) != 1:
            raise InputError(f"{what} has arms {', '.join(arms) or '(none valid)'}: "
                             "choose one with --arm")
        arm = arms[0]
    elif arm not in arms:
        raise InputError(f"{what} has no valid runs of arm {arm!r} (arms: {', '.join(arms) or 'none'})")
    chosen = [r for r in usable if r.arm == arm]
    if len(chosen) < 2:
        raise InputError(f"{what} arm {arm!r} has {len(chosen)} valid run(s): a baseline needs ≥ 2")
    return arm, chosen


def load_arm_runs(store: Store, experiment: str | None, session: str | None,
                  arm: str | None) -> tuple[str, str, list[Run]]:
    """``(source words, arm, runs)`` of an experiment's or a session's arm, read from ``store``.

    The source words name the runs (``"session S arm A"``, ``"experiment ID arm A"``);
    the runs are :func:`runs_of_arm`'s.

    Raises:
        InputError: neither or both of ``experiment`` and ``session``, no such experiment,
            a session without runs, or as :func:`runs_of_arm`.
    """
    if (experiment is None) == (session is None):
        raise InputError("give --experiment ID or --session NAME (one of them)")
    if experiment is not None:
        row = store.get_experiment(experiment)
        what = f"experiment {row.id}"
        runs = store.session_runs(row.id)
    else:
        what = f"session {session}"
        runs = store.session_runs(str(session))
        if not runs:
            raise InputError(f"no runs in session {session!r} (see `tokcaliper runs`)")
    arm, chosen = runs_of_arm(runs, arm, what)
    return f"{what} arm {arm}", arm, chosen


def baseline_from_runs(name: str, runs: Sequence[Run], *, arm: str, source: str,
                       created_at: str, commit: str | None = None) -> Baseline:
    """A :class:`Baseline` named ``name`` holding ``runs`` (one arm's, ≥ 2) and their provenance.

    Raises:
        InputError: an empty name or fewer than 2 runs.
    """
    if not name.strip():
        raise InputError("a baseline needs a name")
    if len(runs) < 2:
        raise InputError(f"baseline {name!r} needs ≥ 2 runs, got {len(runs)}")
    first = runs[0]
    return Baseline(
        name=name, created_at=created_at, source=source, arm=arm, commit=commit,
        tool_version=first.tool_version, server_command=first.server_command,
        server_version=first.server_version,
        host=first.host.model_dump(mode="json") if first.host is not None else {},
        config=first.config.model_dump(mode="json"),
        runs=[BaselineRun(run_id=r.id, started_at=r.started_at, values=run_scalars(r.metrics))
              for r in runs],
    )


class BaselineMetric(BaseModel):
    """One headline metric of a baseline's runs: its unit and their description.

    Attributes:
        metric: the registry name. unit: its unit. description: n, mean, sd, CV and the
            95% CI of the mean over the runs that have a value
            (:func:`tokcaliper.stats.describe.describe`).
    """

    metric: str
    unit: str
    description: Description


class BaselineDetail(Baseline):
    """``tokcaliper baseline show``: the baseline and its headline metrics described.

    Attributes:
        summary: one :class:`BaselineMetric` per headline metric with ≥ 2 values.
    """

    summary: list[BaselineMetric] = Field(default_factory=list)


def describe_baseline(baseline: Baseline) -> BaselineDetail:
    """``baseline`` with its headline metrics described (those with ≥ 2 values; a spread needs two)."""
    summary = []
    for m in headline_metrics():
        vals = [v for r in baseline.runs if (v := r.values.get(m.name)) is not None]
        if len(vals) >= 2:
            summary.append(BaselineMetric(metric=m.name, unit=m.unit, description=describe(vals, m.name)))
    return BaselineDetail(**dict(baseline), summary=summary)


class BaselineList(BaseModel):
    """``tokcaliper baseline list``: the database read and its baselines, by name."""

    db: str
    baselines: list[Baseline]


class GateReport(BaseModel):
    """The gate's result.

    Attributes:
        baseline: the baseline's name. new_source: the new runs, in words.
        outcome: ``pass``, ``regression`` or ``inconclusive`` (module docstring).
        because: the one sentence that justifies the outcome.
        comparison: the per-metric analyses (baseline = arm A, new = arm B),
            Holm across them.
        described: per metric, ``(baseline, new)`` descriptions (mean, sd, CV,
            95% CI of the mean by Student's t: :func:`tokcaliper.stats.describe.describe`),
            what dashboards receive as value and bounds.
        config_differences: load settings that differ between the baseline's
            first run and the new runs' first run (``key: baseline → new``);
            a gate across different loads compares different things.
        warnings: one :data:`~tokcaliper.model.warnings.GATE_LOAD_DIFFERS` caveat per
            such setting (the warning sink prints them).
    """

    baseline: str
    new_source: str
    outcome: GateOutcome
    because: str
    comparison: MultiComparison
    described: dict[str, tuple[Description, Description]]
    config_differences: list[str]
    warnings: list[Caveat] = Field(default_factory=list)


def _config_differences(base: dict, new: dict) -> list[str]:
    # Settings that make two runs measure different loads; ids and seeds drawn per run are not.
    keys = ("model", "concurrency", "requests", "duration_s", "max_tokens", "temperature",
            "ignore_eos", "prompts_source", "rate_rps", "arrival", "input_tokens", "output_tokens")
    return [f"{k}: {base.get(k)!r} → {new.get(k)!r}" for k in keys
            if k in base and k in new and base.get(k) != new.get(k)]


def gate_on_baseline(baseline: Baseline, runs: Sequence[Run], *, new_source: str, metrics: Sequence[str],
         alpha: float = 0.05, noise_band: float = DEFAULT_NOISE_BAND,
         margin: float | None = None, effect: float | None = None) -> GateReport:
    """New ``runs`` (one arm, ≥ 2) against ``baseline`` on ``metrics`` (registry names).

    Each metric: :func:`~tokcaliper.stats.ab.analyze_samples` of the baseline's
    values (A) and the new values (B), unpaired; then Holm across the metrics
    (:func:`~tokcaliper.stats.ab.compare_metrics`). The outcome rule is in the
    module docstring.

    Raises:
        InputError: an unknown metric, or a metric with fewer than 2 values on
            either side (named).
    """
    analyses, described = [], {}
    for name in metrics:
        m = get_metric(name)
        a = [v for r in baseline.runs if (v := r.values.get(name)) is not None]
        b = [v for r in runs if (v := m.extract(r.metrics)) is not None]
        if len(a) < 2 or len(b) < 2:
            raise InputError(f"{name}: the baseline has {len(a)} value(s) and the new runs "
                             f"{len(b)}: the gate needs ≥ 2 on each side")
        described[name] = (describe(a, f"baseline {name}"), describe(b, f"new {name}"))
        analyses.append(analyze_samples(
            a, b, (f"baseline {baseline.name}", "new"), paired=False, metric=name, unit=m.unit,
            higher_is_better=m.higher_is_better, alpha=alpha, noise_band=noise_band,
            margin=margin, effect=effect, noise_abs=m.noise_abs,
        ).model_copy(update={"control_reason": f"the baseline {baseline.name!r}"}))
    mc = compare_metrics(analyses)
    slower = [x.metric for x in mc.metrics if x.verdict == "slower"]
    unsure = [x.metric for x in mc.metrics if x.verdict == "inconclusive"]
    if slower:
        outcome: GateOutcome = "regression"
        because = (f"slower than baseline {baseline.name!r} beyond the ±{percent(noise_band)} noise band "
                   f"with p < α = {alpha} after Holm: {', '.join(slower)}")
    elif unsure:
        outcome = "inconclusive"
        because = (f"not shown slower, but not shown faster or equivalent either: "
                   f"{', '.join(unsure)} (see the runs needed; "
                   + ("give --margin to test equivalence)" if margin is None else "more runs decide)"))
    else:
        outcome = "pass"
        because = "every metric is faster than the baseline or equivalent to it: " + ", ".join(
            f"{x.metric} {x.verdict}" for x in mc.metrics)
    differences = _config_differences(baseline.config, runs[0].config.model_dump(mode="json"))
    return GateReport(baseline=baseline.name, new_source=new_source, outcome=outcome,
                      because=because, comparison=mc, described=described, config_differences=differences,
                      warnings=[GATE_LOAD_DIFFERS.caveat(difference=d) for d in differences])
