"""Stored runs read back for the analysis commands: ``analyze --runs/--session`` and
``plan --from-runs`` (METHODS.md M1–M3).

The store is read here (the stats layer never opens it); the figures come from
:mod:`tokcaliper.stats.analyze_report` (clumps, covariates, drift, the adjusted
comparison, with the telemetry gate of :mod:`tokcaliper.stats.gates`) and
:func:`tokcaliper.stats.resolution.plan`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tokcaliper.errors import InputError
from tokcaliper.model.run import Run
from tokcaliper.numbers import num, percent

if TYPE_CHECKING:  # imported when called: scipy and statsmodels are slow to import
    from tokcaliper.stats.analyze_report import AnalyzeReport
    from tokcaliper.stats.resolution import Plan
    from tokcaliper.store import Store

__all__ = ["analyze_stored", "cv_from_runs", "ids_text", "load_runs", "plan_from_runs"]


def ids_text(ids: Sequence[int]) -> str:
    """Run ids as ranges, in the given order: ``[3, 4, 5, 9]`` → ``"3-5,9"``."""
    parts: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if j == i else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(parts)


def load_runs(store: Store, run_ids: Sequence[int] | None = None,
              session: str | None = None) -> tuple[list[Run], str]:
    """The runs ``run_ids`` (in that order, without their requests), else every run of
    ``session``; and where they came from, in words (``"runs 1-8 in t.db"``).

    Raises:
        InputError: neither or both given; no run with an id; no run in the session.
    """
    if (run_ids is None) == (session is None):
        raise InputError("give exactly one of --runs IDS or --session ID")
    if run_ids is not None:
        return ([store.get_run(i, with_requests=False) for i in run_ids],
                f"runs {ids_text(list(run_ids))} in {store.path}")
    loaded = store.session_runs(session)  # type: ignore[arg-type]
    if not loaded:
        raise InputError(f"--session: no runs of session {session!r} in {store.path}")
    return loaded, f"session {session} in {store.path}"


def analyze_stored(store: Store, *, run_ids: Sequence[int] | None = None, session: str | None = None,
                   metric: str = "aggregate_output_tok_s", arm: str | None = None,
                   adjust_for: str | None = None, linear: bool = False, alpha: float = 0.05,
                   reference_clock_mhz: float | None = None) -> AnalyzeReport:
    """``analyze --runs/--session``: one metric of the valid measured runs (of ``arm``), their
    covariates and telemetry gate (:func:`tokcaliper.stats.gates.gate_runs`, one per row in
    run order), then :func:`tokcaliper.stats.analyze_report.analyze_table`.

    Args:
        store: an open store. run_ids / session: which runs (exactly one).
        metric: a registry metric name. arm: only runs of this arm.
        adjust_for, linear, alpha: as :func:`~tokcaliper.stats.analyze_report.analyze_table`.
        reference_clock_mhz: the default GPU clock for the gate (``None``: the highest seen).

    Raises:
        InputError: as :func:`load_runs`, :func:`~tokcaliper.stats.analyze_report.metric_table`
            and :func:`~tokcaliper.stats.analyze_report.analyze_table`.
    """
    from tokcaliper.stats.analyze_report import analyze_table, metric_table
    from tokcaliper.stats.gates import gate_runs

    loaded, source = load_runs(store, run_ids, session)
    table = metric_table(loaded, source, metric, arm)
    by_id = {r.id: r for r in loaded}
    gates = gate_runs([by_id[i] for i in table.run_ids or []], reference_clock_mhz=reference_clock_mhz)
    return analyze_table(table, gates=gates, arm=arm, adjust_for=adjust_for, linear=linear, alpha=alpha)


def cv_from_runs(db: Path, run_ids: Sequence[int], metric: str) -> tuple[float, str, int]:
    """The CV of ``metric`` over the stored runs ``run_ids``: (CV, where it came from in words, n).

    Raises:
        InputError: a missing database or run, a run without the metric, or fewer than
            2 differing values (CV undefined or 0).
    """
    from tokcaliper.stats.describe import describe  # lazy: scipy is slow to import
    from tokcaliper.store import load_metric_values

    ids = ",".join(map(str, run_ids))
    d = describe(load_metric_values(db, list(run_ids), metric), f"metric {metric!r} of runs {ids}")
    if d.cv is None or d.cv <= 0:
        raise InputError(f"--from-runs: metric {metric!r} over runs {ids} has n={d.n}, "
                         f"CV {'undefined' if d.cv is None else 0}; need ≥ 2 differing values")
    ci = "" if d.cv_ci95 is None else f", 95% CI {percent(d.cv_ci95[0])[:-1]}–{percent(d.cv_ci95[1])}"
    return d.cv, (f"runs {ids}, metric '{metric}': n={d.n}, mean {num(d.mean, 4, trim=True)}, "
                  f"CV {percent(d.cv)}{ci}"), d.n


def plan_from_runs(db: Path, run_ids: Sequence[int], metric: str, effect: float, **settings: object) -> Plan:
    """``plan --from-runs``: :func:`tokcaliper.stats.resolution.plan` with the CV of stored runs
    (:func:`cv_from_runs`; fewer than 5 runs adds the ``cv-from-few-runs`` warning).

    Args:
        db: the results database. run_ids: the runs. metric: a registry metric name.
        effect: the expected relative difference Δ. settings: the other keyword
            arguments of :func:`~tokcaliper.stats.resolution.plan` (n, run_seconds, …).

    Raises:
        InputError: as :func:`cv_from_runs` and :func:`~tokcaliper.stats.resolution.plan`.
    """
    from tokcaliper.stats.resolution import plan  # lazy: statsmodels is slow to import

    cv, source, n = cv_from_runs(db, run_ids, metric)
    return plan(cv, effect, cv_source=source, cv_n=n, **settings)  # type: ignore[arg-type]
