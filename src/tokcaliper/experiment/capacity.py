"""``tokcaliper capacity``: the experiment it runs and the result it reports.

:func:`capacity_experiment` builds the sweep over offered rates (one load arm per
rate, interleaved); :func:`capacity_of_experiment` reads a stored one back and
fits attainment against rate (:func:`tokcaliper.stats.capacity.capacity_at_slo`).
:mod:`tokcaliper.report.capacity_view` draws the :class:`CapacityResult`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from tokcaliper.errors import InputError, ServerError
from tokcaliper.experiment.load_sweep import load_sweep_experiment, parse_levels
from tokcaliper.experiment.runner import SERVER_DIED
from tokcaliper.experiment.spec import ExperimentSpec, LoadSpec
from tokcaliper.model.warnings import Caveat
from tokcaliper.stats.capacity import CapacityEstimate, capacity_at_slo
from tokcaliper.store import Store

__all__ = ["CapacityResult", "capacity_experiment", "capacity_of_experiment", "capacity_rates"]


class CapacityResult(BaseModel):
    """What ``tokcaliper capacity`` reports (``--json`` dumps it).

    Attributes:
        experiment / db / status: the stored experiment the runs belong to.
        slo: the SLOs as given. runs_per_rate: planned runs per rate. arrival: the process.
        estimate: :class:`~tokcaliper.stats.capacity.CapacityEstimate`.
        left_out_runs: ids of measured runs with no attainment (the server died during them).
        invalid_runs_counted: runs flagged invalid for their error rate whose attainment counts.
        outcomes: what happened instead of runs (failed starts, server deaths), one line each.
        warnings: the caveats.
    """

    experiment: str
    db: str
    slo: str
    status: str
    runs_per_rate: int
    arrival: str
    estimate: CapacityEstimate
    left_out_runs: list[int] = []
    invalid_runs_counted: int = 0
    outcomes: list[str] = []
    warnings: list[Caveat] = []


def capacity_rates(slo: str | None, rates: str | None) -> list[float]:
    """The rates of ``--rates`` (``"1,2,4"``), ascending, after checking ``--slo`` is given too.

    Raises:
        InputError: no ``--slo`` or ``--rates``, a bad item, a rate given twice, or fewer than two.
    """
    if slo is None or rates is None:
        raise InputError("give --slo (e.g. e2e=2s) and --rates (e.g. 1,2,4), or --experiment ID")
    levels = parse_levels([rates], "--rates", whole=False)
    if len(levels) < 2:
        raise InputError(f"--rates needs at least 2 rates to bracket the capacity, got {rates!r}")
    return sorted(levels)


def capacity_experiment(load: LoadSpec, rates: list[float], *, name: str, repeat: int, url: str | None,
                        server_cmd: str | None, order: str, seed: int | None) -> ExperimentSpec:
    """The capacity experiment: one open-loop load arm per rate (:func:`capacity_rates`),
    ``repeat`` runs each, interleaved, primary metric ``slo_attainment_pct``.

    Args:
        load: the load every rate shares (with its ``slo``). name: the experiment's name.
        url / server_cmd / order / seed: as :func:`~tokcaliper.experiment.load_sweep.load_sweep_experiment`.

    Raises:
        InputError: an option its bounds refuse (one line naming the option, e.g. ``--repeat``).
    """
    exp = load_sweep_experiment(load, "rate_rps", rates, runs_per_level=repeat, url=url,
                                server_cmd=server_cmd, order=order, seed=seed, name=name)
    return exp.model_copy(update={"metric": "slo_attainment_pct"})


def capacity_of_experiment(exp_id: str, db: Path, target: float, bootstrap: int, seed: int) -> CapacityResult:
    """The :class:`CapacityResult` of a stored capacity experiment.

    Per measured run: its SLO attainment (runs during which the server died are left out; runs
    flagged invalid for their error rate count, their failed requests missing the SLO).

    Args:
        exp_id: the experiment (or a unique prefix). db: the store. target: attainment to meet,
            a share (0.99). bootstrap / seed: replicates and seed of the CI.

    Raises:
        InputError: not a sweep over rates with an SLO. ServerError: a rate has no run with an
            attainment (the message names them and the resume command).
    """
    with Store(db, create=False) as store:
        row = store.get_experiment(exp_id)
        spec = ExperimentSpec.model_validate(row.spec)
        runs = [r for r in store.session_runs(row.id) if not r.warmup_run]
        outcomes = store.outcomes(row.id)
    if spec.load.slo is None or any(a.kind != "load" or "rate_rps" not in (a.load or {}) for a in spec.arms):
        raise InputError(f"experiment {row.id} is not a capacity experiment (load arms over rate_rps with "
                         "an SLO; `tokcaliper capacity` makes one)")
    rate_of = {a.name: float((a.load or {})["rate_rps"]) for a in spec.arms}
    by_rate: dict[float, list[float]] = {r: [] for r in rate_of.values()}
    left_out = []
    invalid_counted = 0
    for r in runs:
        slo = r.metrics.slo
        if (r.invalid_reason or "").startswith(SERVER_DIED) or slo is None or slo.attainment is None:
            if r.id is not None:
                left_out.append(r.id)
            continue
        invalid_counted += not r.valid
        by_rate[rate_of[r.arm]].append(slo.attainment)
    missing = [f"{r:g}" for r, v in by_rate.items() if not v]
    if missing:
        raise ServerError(f"experiment {row.id}: no run with an SLO attainment at rate(s) "
                          f"{', '.join(missing)} req/s in {db}"
                          + (f" ({'; '.join(o.reason for o in outcomes[:2])})" if outcomes else "")
                          + f"; resume with `tokcaliper experiment resume {row.id} --db {db}`")
    estimate = capacity_at_slo(by_rate, target, bootstrap=bootstrap, seed=seed)
    return CapacityResult(experiment=row.id, db=str(db), slo=spec.load.slo, status=row.status,
                          runs_per_rate=spec.runs_per_arm, arrival=spec.load.arrival,
                          estimate=estimate, left_out_runs=left_out,
                          invalid_runs_counted=invalid_counted,
                          outcomes=[f"{o.kind}: {o.reason}" for o in outcomes])
