"""The draft-window sweep as an experiment (METHODS.md M6, M7, M8).

A sweep over windows k is an experiment whose arms are the windows: one
managed server per k from a command template with ``{k}``, run by the
experiment runner, so run order, read-back, resume, failed starts (M8) and the
comparison verdicts are the experiment's. This module builds that
experiment and turns its stored runs into the table of M7
(:func:`sweep_table`, pure) and the command's result (:func:`sweep_result`,
which reads the store).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ValidationError

from tokcaliper.errors import InputError
from tokcaliper.experiment.analysis import ArmComparison, analysed_runs, analyze_experiment
from tokcaliper.experiment.spec import ExperimentSpec, LoadSpec
from tokcaliper.model.run import Run
from tokcaliper.model.families import ServerKind
from tokcaliper.specdec.runs import run_acceptance
from tokcaliper.specdec.table import KInput, WindowTable, window_table
from tokcaliper.model.experiment import Outcome
from tokcaliper.model.warnings import Caveat
from tokcaliper.store import Store
from tokcaliper.validation import describe, explain, problems

__all__ = ["SweepResult", "arm_name", "sweep_closing", "sweep_experiment", "sweep_result", "sweep_table"]


def arm_name(k: int) -> str:
    """The arm of window ``k`` (``"k=4"``)."""
    return f"k={k}"


def sweep_experiment(template: str, windows: Sequence[int], *, runs_per_k: int, load: LoadSpec,
                     order: str = "abba", warmup_runs: int = 1, rest_s: float = 0.0,
                     seed: int | None = None) -> ExperimentSpec:
    """The experiment of a k sweep: one managed-server arm per window.

    Args:
        template: server command with ``{k}`` (and ``{host}``, ``{port}``,
            ``{llama_server}``, ``{smollm2}``), e.g. ``"{llama_server} -m {smollm2}
            -md {smollm2} --spec-draft-n-max {k} --host {host} --port {port} --metrics"``.
        windows: the k values (≥ 1, distinct; at least 2).
        runs_per_k: runs per window (≥ 2). load: the load of every run.
        order: run order across windows (interleaved by default; ``abba`` restarts
            the server half as often as ``alternate``).

    Raises:
        InputError: no ``{k}`` in the template, fewer than 2 or repeated windows,
            or anything the experiment file would refuse.
    """
    if "{k}" not in template:
        raise InputError("the sweep's --server-cmd needs {k} where the draft window goes "
                         "(e.g. --spec-draft-n-max {k})")
    ks = list(windows)
    if len(ks) < 2 or len(set(ks)) != len(ks) or any(k < 1 for k in ks):
        raise InputError(f"a sweep needs at least 2 distinct windows k ≥ 1, got {ks}")
    arms = [{"name": arm_name(k), "server_cmd": template.replace("{k}", "{value}"), "value": k} for k in ks]
    data = {"name": f"draft-window sweep k = {', '.join(map(str, ks))}", "arms": arms, "load": load,
            "runs_per_arm": runs_per_k, "warmup_runs": warmup_runs, "rest_s": rest_s,
            "order": order, "seed": seed}
    try:
        return ExperimentSpec.model_validate(data)
    except ValidationError as e:
        first = problems(e)[0]
        key = str(first.loc[0]) if first.loc else ""
        if key == "arms":  # every arm is the one --server-cmd
            raise InputError(f"--server-cmd {describe(first.err)}") from None
        flag = _SWEEP_FLAGS.get(key)
        if flag is not None:
            raise InputError(f"{flag} {describe(first.err)}") from None
        raise InputError(f"spec sweep: {explain(e)}") from None


#: ExperimentSpec key → the ``spec sweep`` option that sets it (messages name what the user typed).
_SWEEP_FLAGS = {"runs_per_arm": "--repeat", "warmup_runs": "--warmup-runs", "order": "--order",
                "seed": "--seed"}


def sweep_table(spec: ExperimentSpec, runs: Sequence[Run], outcomes: Sequence[Outcome],
                kind: ServerKind | None = None) -> WindowTable:
    """The M7 table of a stored sweep: per k, AL and acceptance from counter deltas, throughput.

    Only valid, measured runs count (warm-ups excluded). A k whose server never
    started is a row with the reason (M8); a k with runs but no speculative
    counters is a failed row saying so.
    """
    inputs = []
    for arm in spec.arms:
        k = int(arm.value)  # type: ignore[arg-type]
        mine = [r for r in analysed_runs(list(runs)) if r.arm == arm.name]
        failed = next((o.reason for o in outcomes if o.arm == arm.name and o.kind == "failed_start"), None)
        acc = [run_acceptance(r, kind, k=k) for r in mine]
        als = [a.metrics.al for a in acc if a.metrics is not None and a.metrics.al is not None]
        rates = [a.metrics.acceptance_rate for a in acc
                 if a.metrics is not None and a.metrics.acceptance_rate is not None]
        tput = [r.metrics.aggregate_output_tok_s for r in mine if r.metrics.aggregate_output_tok_s]
        keffs = [a.metrics.k_eff for a in acc if a.metrics is not None and a.metrics.k_eff is not None]
        if not als:
            unavailable = next((a.unavailable for a in acc if a.unavailable), None)
            if failed or unavailable:
                why = failed or unavailable
            elif not mine:
                why = "no valid measured runs"
            else:  # the server started and answered but never drafted (e.g. a window it cannot use)
                why = f"no drafts in {len(mine)} run(s): the speculative counters did not move at this k"
            inputs.append(KInput(k=k, failed=why))
            continue
        inputs.append(KInput(
            k=k, al_samples=als, acceptance_rate=sum(rates) / len(rates) if rates else None,
            throughput_samples=[float(x) for x in tput],  # type: ignore[misc]
            k_eff=sum(keffs) / len(keffs) if keffs else None,
        ))
    return window_table(inputs, spec.name or "sweep")


def sweep_closing(comparisons: list, best_k: int | None) -> list[str]:  # type: ignore[type-arg]
    """The sweep's closing ``result:``/``next:`` lines (issue 26 item 2): the fixed-n
    comparison of the window the table calls the best buy (most tokens per verified
    position) against the first window, or of the first comparison when the best buy
    is the first window; ``[]`` when no comparison could be made.

    Args:
        comparisons: :attr:`ExperimentAnalysis.comparisons` of the sweep (each k against the first).
        best_k: the table's ``best_k_by_al_per_position``.
    """
    from tokcaliper.stats.closing import closing_lines

    usable = [c for c in comparisons if c.metrics is not None and c.metrics.metrics]
    if not usable:
        return []
    chosen = next((c for c in usable if best_k is not None and c.candidate == arm_name(best_k)), usable[0])
    return closing_lines(chosen.metrics.metrics[0])



class SweepResult(BaseModel):
    """What ``tokcaliper spec sweep`` prints (``--json`` gives this document).

    Attributes:
        experiment: the sweep's experiment id (``experiment show ID`` has every run).
        table: the M7 table of its stored runs (:func:`sweep_table`).
        comparisons: each k against the first window, as ``experiment show`` compares them.
        closing: the plain ``result:``/``next:`` lines (:func:`sweep_closing`).
        warnings: the table's caveats (e.g. the highest AL is not the best buy).
    """

    experiment: str
    table: WindowTable
    comparisons: list[ArmComparison]
    closing: list[str]
    warnings: list[Caveat] = []


def sweep_result(store: Store, exp_id: str, kind: ServerKind | None = None) -> SweepResult:
    """The table, comparisons and closing lines of the stored sweep ``exp_id``.

    Args:
        store: an open store. exp_id: the sweep's experiment id.
        kind: the server family whose counters to read (``None``: detected from their names).

    Raises:
        InputError: no such experiment. StoreError: a stored run no longer validates.
    """
    analysis = analyze_experiment(store, exp_id)
    spec = ExperimentSpec.model_validate(analysis.spec.model_dump())
    table = sweep_table(spec, store.session_runs(analysis.id, with_requests=True), analysis.outcomes, kind)
    return SweepResult(experiment=analysis.id, table=table, comparisons=analysis.comparisons,
                       closing=sweep_closing(analysis.comparisons, table.best_k_by_al_per_position),
                       warnings=list(table.warnings))
