"""``tokcaliper compare``: its inputs → one typed result (METHODS.md M3, M4, M9, M10).

One builder per input, each returning what the command prints (``--json`` is its
``model_dump``):

* runs given on the command line (``--a/--b``): :func:`compare_runs` → :class:`~tokcaliper.stats.ab.ABAnalysis`;
* published summaries (``--a-stats/--b-stats``): :func:`compare_summaries` → ``ABAnalysis``;
* a CSV of runs (``--csv``, read through :func:`tokcaliper.fileio.read_text`):
  :func:`compare_csv` → ``ABAnalysis`` (one metric) or :class:`~tokcaliper.stats.ab.MultiComparison`;
* stored sessions (``--session``): :func:`compare_session` → :class:`SessionComparison`
  (the ``mixed-tools`` caveat in its ``warnings``);
* a stored experiment (``--experiment``): :func:`compare_experiment` → :class:`ExperimentComparison`.

(One number per arm is :func:`tokcaliper.stats.ab.single_numbers`, no verdict.) The
figures and the verdict are :mod:`tokcaliper.stats.ab`'s; this module chooses the
reference arm, the direction and the noise floor of each metric, and reads the store.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, Union

from pydantic import BaseModel

from tokcaliper.errors import InputError
from tokcaliper.experiment.analysis import ArmComparison, analyze_experiment
from tokcaliper.experiment.samples import choose_control, parse_samples_csv, tags_of
from tokcaliper.model.metrics import METRICS, get_metric
from tokcaliper.model.roofline import ArmRoofline
from tokcaliper.model.run import Run
from tokcaliper.model.warnings import MIXED_TOOLS, Caveat
from tokcaliper.stats.ab import (
    ABAnalysis,
    MultiComparison,
    SingleNumbers,
    analyze_samples,
    analyze_summary,
    compare_metrics,
)
from tokcaliper.stats.sequential import SequentialDecision
from tokcaliper.store import Store

__all__ = ["MAX_CSV_BYTES", "CompareResult", "CompareSettings", "ExperimentComparison", "SessionComparison",
           "Differences", "compare_csv", "compare_experiment", "compare_runs", "compare_session", "compare_summaries",
           "session_arms"]

#: Largest ``--csv`` file read (bytes).
MAX_CSV_BYTES = 64 * 1024 * 1024


class CompareSettings(BaseModel):
    """The settings every input of ``compare`` shares.

    Attributes:
        metric: the metric compared (a registry name sets its direction and resolution;
            any other name needs ``better``).
        better: ``"higher"`` / ``"lower"`` overrides the registry's direction.
        unit: shown beside the means.
        alpha: two-sided significance level. noise_band: no faster/slower while the CI
            reaches within ±band of 1 (fraction). margin: equivalence margin (TOST), or ``None``.
        effect: the effect that matters (fraction), for the runs needed; ``None``: the noise band's.
        noise_abs: compare on the difference b − a with this absolute floor (metric's unit);
            ``None``: the metric's known resolution (:attr:`tokcaliper.model.metrics.Metric.noise_abs`),
            else ratios.
    """

    metric: str = "aggregate_output_tok_s"
    better: Literal["higher", "lower"] | None = None
    unit: str = ""
    alpha: float = 0.05
    noise_band: float = 0.01
    margin: float | None = None
    effect: float | None = None
    noise_abs: float | None = None

    def higher_is_better(self, name: str) -> bool:
        """``better`` when given, else the registry's direction of ``name``.

        Raises:
            InputError: ``name`` is not a registry metric and ``better`` is not given.
        """
        if self.better is not None:
            return self.better == "higher"
        return get_metric(name).higher_is_better

    def floor(self, name: str) -> float | None:
        """``noise_abs`` when given, else the known resolution of ``name`` (``None``: ratios)."""
        if self.noise_abs is not None:
            return self.noise_abs
        m = METRICS.get(name)
        return None if m is None else m.noise_abs

    def _samples(self, name: str) -> dict[str, object]:
        """The keyword arguments of :func:`~tokcaliper.stats.ab.analyze_samples` for metric ``name``."""
        return {"metric": name, "higher_is_better": self.higher_is_better(name), "noise_abs": self.floor(name),
                "unit": self.unit, "alpha": self.alpha, "noise_band": self.noise_band, "margin": self.margin,
                "effect": self.effect}


class SessionComparison(ABAnalysis):
    """``compare --session``: the :class:`~tokcaliper.stats.ab.ABAnalysis` of two stored arms,
    with its caveats.

    Attributes:
        warnings: the ``mixed-tools`` caveat when the arms were measured by different tools
            (``--allow-mixed-tools``), naming the definitions that differ; else empty.
    """

    warnings: list[Caveat] = []


class ExperimentComparison(BaseModel):
    """``compare --experiment``: every arm of a stored experiment against its first.

    Attributes:
        experiment: the experiment's id.
        comparisons: each candidate arm against the first, over the primary metric, TTFT
            and ITL (Holm across them); a comparison not possible yet carries its error.
        sequential: the sequential rule's decision (until-decided experiments), else ``None``.
        governs: which verdict is the experiment's, in one sentence (until-decided only).
        roofline: each arm's runs against their memory-bandwidth rooflines (issue 25).
        spread_causes: arm → the sentence naming the covariate that goes with its spread.
        closing: the plain ``result:``/``next:`` lines.
    """

    experiment: str
    comparisons: list[ArmComparison]
    sequential: SequentialDecision | None = None
    governs: str | None = None
    roofline: list[ArmRoofline] = []
    spread_causes: dict[str, str] = {}
    closing: list[str] = []


#: What ``tokcaliper compare`` returns, by input (the renderer dispatches on the type).
CompareResult = Union[ExperimentComparison, SessionComparison, MultiComparison, ABAnalysis, SingleNumbers]


def compare_runs(a: Sequence[float], b: Sequence[float], names: tuple[str, str] = ("A", "B"), *,
                 settings: CompareSettings, paired: bool = False, control: str | None = None,
                 names_given: bool = False) -> ABAnalysis:
    """``compare --a/--b``: baseline runs ``a`` against candidate runs ``b``.

    Args:
        a, b: the runs, in run order (pair k = (a[k], b[k]) with ``paired``).
        names: display names (baseline, candidate). names_given: they came from ``--names``.
        settings: metric, direction, level, band, margin, effect, floor.
        paired: the runs were interleaved; the paired analysis decides.
        control: the reference arm by name (``--control``): naming the candidate swaps the roles.

    Raises:
        InputError: an unknown ``control``; everything :func:`~tokcaliper.stats.ab.analyze_samples` refuses.
    """
    why = "given as --a" + (" (the first of --names)" if names_given else "")
    va, vb = list(a), list(b)
    if control is not None:
        ctrl, why = choose_control(list(names), control)
        if ctrl == names[1]:  # the candidate named as control: swap the roles
            names, va, vb = (names[1], names[0]), vb, va
    an = analyze_samples(va, vb, names, paired=paired, **settings._samples(settings.metric))  # type: ignore[arg-type]
    return an.model_copy(update={"control_reason": why})


def compare_summaries(a: tuple[float, float, int], b: tuple[float, float, int],
                      names: tuple[str, str] = ("A", "B"), *, settings: CompareSettings) -> ABAnalysis:
    """``compare --a-stats/--b-stats``: two published summaries (mean, sample sd, n), on ratios.

    Raises:
        InputError: everything :func:`~tokcaliper.stats.ab.analyze_summary` refuses.
    """
    an = analyze_summary(a, b, names, metric=settings.metric, higher_is_better=settings.higher_is_better(settings.metric),
                         unit=settings.unit, alpha=settings.alpha, noise_band=settings.noise_band,
                         margin=settings.margin, effect=settings.effect)
    return an.model_copy(update={"control_reason": "given as --a-stats"})


def compare_csv(path: Path, arms: tuple[str, str] | None = None, control: str | None = None, *,
                settings: CompareSettings) -> ABAnalysis | MultiComparison:
    """``compare --csv``: the runs of a CSV (``arm,value[,pair][,position][,metric]``), one
    comparison per metric column value (Holm across several: a :class:`MultiComparison`).

    Args:
        path: the file (at most :data:`MAX_CSV_BYTES`). arms: the two arms to compare
            (baseline, candidate); ``None``: the file's two. control: the reference arm.
        settings: as :func:`compare_runs`; a row's own metric name overrides ``settings.metric``.

    Raises:
        InputError: an unreadable file, a bad row or column (naming its line), an unknown arm.
    """
    from tokcaliper.fileio import read_text

    text = read_text(path, MAX_CSV_BYTES, what=f"--csv {path}")
    table = parse_samples_csv(text, arms, source=str(path), control=control)
    analyses = [analyze_samples(s.a, s.b, s.names, paired=s.paired, tags=tags_of(s),
                                **settings._samples(s.metric or settings.metric))  # type: ignore[arg-type]
                .model_copy(update={"control_reason": table.control_reason})
                for s in table.metrics]
    return analyses[0] if len(analyses) == 1 else compare_metrics(analyses)


#: Per tool, how its figure of a metric differs from tokcaliper's definition: ``(tools, metric)`` →
#: one sentence per tool (:func:`tokcaliper.audit.importers.definitions.differences`).
Differences = Callable[[list[str], str], list[str]]


def session_arms(store: Store, sessions: str, arms: tuple[str, str] | None, control: str | None, metric: str,
                 allow_mixed: bool, differences: Differences,
                 ) -> tuple[list[float], list[float], tuple[str, str], list[str], list[Caveat], str]:
    """Values of ``metric`` per run of two arms of stored session(s), and the mixed-tool check.

    Warm-up and invalid runs are left out (noted). Arms measured by different
    tools (a run's :attr:`~tokcaliper.model.run.Run.measured_by`) are refused
    unless ``allow_mixed``; then the ``mixed-tools`` caveat names the definitions
    that differ, as ``differences`` tells them (the importers' table,
    :func:`tokcaliper.audit.importers.definitions.differences`, given by the caller:
    the audit layer sits beside this one).

    Returns:
        (baseline values, candidate values, (baseline, candidate), notes, caveats, why the baseline).

    Raises:
        InputError: no such session, not exactly two arms (without ``arms``), an
            unknown arm, a run without a value for ``metric``, or mixed tools without ``allow_mixed``.
    """
    m = get_metric(metric)
    names = [s.strip() for s in sessions.split(",") if s.strip()]
    if not names:
        raise InputError(f"--session needs a session id, got {sessions!r}")
    notes: list[str] = []
    by_arm: dict[str, list[Run]] = {}
    for s in names:
        runs = store.session_runs(s)
        if not runs:
            raise InputError(f"--session: no runs of session {s!r} in {store.path}")
        for r in runs:
            if r.warmup_run or not r.valid:
                notes.append(f"run {r.id}: {'warm-up' if r.warmup_run else 'invalid'} run, left out")
                continue
            by_arm.setdefault(r.arm, []).append(r)
    why = "the first of --arms" if arms is not None else "the first arm stored"
    if arms is None:
        if len(by_arm) != 2:
            raise InputError(f"--session {sessions}: {len(by_arm)} arm(s) ({', '.join(by_arm) or 'none'}); "
                             "name two with --arms BASELINE,CANDIDATE")
        arms = (list(by_arm)[0], list(by_arm)[1])
    for a in arms:
        if a not in by_arm:
            raise InputError(f"--arms: no arm {a!r} in session {sessions} (arms: {', '.join(by_arm)})")
    ordered = list(arms)
    if control is not None:
        ctrl, why = choose_control(ordered, control)
        if ctrl == ordered[1]:
            ordered.reverse()
    values: list[list[float]] = []
    tools: dict[str, set[str]] = {}
    for a in ordered:
        vals = []
        for r in by_arm[a]:
            v = m.extract(r.metrics)
            if v is None:
                raise InputError(f"run {r.id} (arm {a}, measured by {r.measured_by}) has no value for {metric}")
            vals.append(float(v))
            tools.setdefault(a, set()).add(r.measured_by)
        values.append(vals)
    caveats: list[Caveat] = []
    all_tools = sorted(set().union(*tools.values()))
    if len(all_tools) > 1:
        who = "; ".join(f"arm {a}: {', '.join(sorted(t))}" for a, t in tools.items())
        diffs = differences(all_tools, metric)
        if not allow_mixed:
            raise InputError(f"compare --session: the arms were measured by different tools ({who}), whose "
                             f"{metric} is not defined alike ({'; '.join(diffs)}); pass --allow-mixed-tools to "
                             "compare anyway")
        caveats.append(MIXED_TOOLS.caveat(tools=who, metric=metric, differences="; ".join(diffs)))
    notes.append(f"one {metric} per stored run (unpaired: Welch); runs of session {sessions}")
    return values[0], values[1], (ordered[0], ordered[1]), notes, caveats, why


def compare_session(store: Store, sessions: str, arms: tuple[str, str] | None = None, control: str | None = None,
                    *, settings: CompareSettings, differences: Differences,
                    allow_mixed: bool = False) -> SessionComparison:
    """``compare --session``: one value of ``settings.metric`` per stored run of two arms, unpaired (Welch).

    Args:
        store: an open store. sessions: ``SESSION[,SESSION]``. arms: the two arms (baseline,
            candidate); ``None``: the sessions' only two. control: the reference arm by name.
        settings: as :func:`compare_runs`. differences: the definitions table (:func:`session_arms`).
        allow_mixed: compare arms measured by different tools, with the ``mixed-tools`` caveat.

    Raises:
        InputError: as :func:`session_arms`; everything :func:`~tokcaliper.stats.ab.analyze_samples` refuses.
    """
    va, vb, names, notes, caveats, why = session_arms(store, sessions, arms, control, settings.metric, allow_mixed,
                                                      differences)
    an = analyze_samples(va, vb, names, **settings._samples(settings.metric))  # type: ignore[arg-type]
    return SessionComparison(**{**dict(an), "control_reason": why, "notes": [*notes, *an.notes]},
                             warnings=caveats)


def compare_experiment(store: Store, exp_id: str,
                       rooflines: Callable[[Sequence[Run], Sequence[str]], list[ArmRoofline]] | None = None,
                       ) -> ExperimentComparison:
    """``compare --experiment``: the stored experiment's comparisons (:func:`analyze_experiment`),
    and each arm against its roofline.

    Args:
        store: an open store. exp_id: the experiment id (a unique prefix is enough).
        rooflines: computes the arms' rooflines from the experiment's runs and its arm order
            (:func:`tokcaliper.audit.run_roofline.arm_rooflines`, given by the caller: the
            audit layer sits beside this one); ``None``: no roofline.

    Raises:
        InputError: no such experiment. StoreError: a stored run no longer validates.
    """
    analysis = analyze_experiment(store, exp_id)
    roof = [] if rooflines is None else rooflines(store.session_runs(analysis.id),
                                                 [a.name for a in analysis.spec.arms])
    return ExperimentComparison(
        experiment=analysis.id, comparisons=analysis.comparisons, sequential=analysis.sequential,
        governs=analysis.governs, roofline=roof,
        spread_causes={s.arm: s.explanation for s in analysis.arms if s.explanation},
        closing=analysis.closing)
