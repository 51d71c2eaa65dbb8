"""What ``tokcaliper experiment show`` and ``experiment list`` report, read from the store.

:func:`experiment_show` is the analysis of one experiment
(:func:`tokcaliper.experiment.analysis.analyze_experiment`) with each arm's
fraction of its roofline; :func:`experiment_list` is one row per stored
experiment. :mod:`tokcaliper.report.experiment_view` draws both. The rooflines
are the audit's (:func:`tokcaliper.audit.run_roofline.arm_rooflines`), which this
layer may not import: the caller passes that function (``roofline_of``).
"""

from __future__ import annotations

from pydantic import BaseModel

from tokcaliper.experiment.analysis import ExperimentAnalysis, analyze_experiment
from tokcaliper.model.roofline import ArmRoofline, RooflineOf
from tokcaliper.model.warnings import Caveat
from tokcaliper.store import Store

__all__ = ["ExperimentList", "ExperimentListRow", "ExperimentShowResult", "experiment_list",
           "experiment_show", "no_valid_measured_run"]


class ExperimentShowResult(ExperimentAnalysis):
    """``tokcaliper experiment show`` (also the end of ``experiment run``/``resume``).

    The analysis's fields at the top level (the JSON keeps them there), plus:

    Attributes:
        roofline: each arm's fraction of its memory-bandwidth roofline, arms in the file's order.
        warnings: the caveats.
    """

    roofline: list[ArmRoofline] = []
    warnings: list[Caveat] = []


def experiment_show(store: Store, exp_id: str, roofline_of: RooflineOf) -> ExperimentShowResult:
    """The analysis of stored experiment ``exp_id`` and each arm against its roofline (issue 25).

    Args:
        store: the open store. exp_id: the id or a unique prefix.
        roofline_of: :func:`tokcaliper.audit.run_roofline.arm_rooflines`.

    Raises:
        InputError: no such experiment, or a prefix that is not unique. StoreError: a
            stored run no longer validates.
    """
    analysis = analyze_experiment(store, exp_id)
    arms = roofline_of(store.session_runs(analysis.id), [a.name for a in analysis.spec.arms])
    return ExperimentShowResult(**dict(analysis), roofline=arms)


class ExperimentListRow(BaseModel):
    """One stored experiment as ``experiment list`` shows it.

    Attributes:
        id / name / created_at (UTC) / status: the stored experiment.
        measured_runs: its stored measured (not warm-up) runs. planned_runs: arms × runs_per_arm.
        outcomes: how many outcomes (failed starts, server deaths, decisions) it recorded.
    """

    id: str
    name: str
    created_at: str
    status: str
    measured_runs: int
    planned_runs: int
    outcomes: int


class ExperimentList(BaseModel):
    """``tokcaliper experiment list``: every stored experiment, oldest first.

    Attributes:
        db: the store. experiments: one row each. warnings: the caveats.
    """

    db: str
    experiments: list[ExperimentListRow]
    warnings: list[Caveat] = []


def experiment_list(store: Store) -> ExperimentList:
    """Every experiment in ``store`` with its status and run counts, oldest first.

    Raises:
        StoreError: the database cannot be read.
    """
    rows = []
    for e in store.list_experiments():
        planned = len(e.spec.get("arms", [])) * int(e.spec.get("runs_per_arm", 0))
        rows.append(ExperimentListRow(id=e.id, name=e.name, created_at=e.created_at, status=e.status,
                                      measured_runs=store.count_measured_runs(e.id), planned_runs=planned,
                                      outcomes=len(store.outcomes(e.id))))
    return ExperimentList(db=str(store.path), experiments=rows)


def no_valid_measured_run(exp_id: str, store: Store) -> str | None:
    """The one-line reason for exit 3 (as ``bench``'s) when experiment ``exp_id`` holds no valid
    measured run (no arm started, or every run failed), naming up to three outcomes; else None.

    Each reason is whitespace-collapsed and cut at 300 characters (the CLI's error line makes
    control characters visible)."""
    runs = [r for r in store.session_runs(exp_id) if not r.warmup_run]
    if any(r.valid for r in runs):
        return None
    reasons = [f"{o.kind}: {o.reason}" for o in store.outcomes(exp_id)]
    reasons += [f"run #{r.id} invalid: {r.invalid_reason}" for r in runs[:1]]
    detail = "; ".join(" ".join(x.split())[:300] for x in reasons[:3]) or "no run was measured"
    more = f" (and {len(reasons) - 3} more)" if len(reasons) > 3 else ""
    return f"experiment {exp_id}: no valid run in {store.path}: {detail}{more}"
