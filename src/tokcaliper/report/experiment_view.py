"""Terminal view of ``tokcaliper experiment show``: the plan, what ran, the comparison.

Renders :class:`tokcaliper.experiment.analysis.ExperimentAnalysis`; ``--json``
dumps the same object. Text from the experiment file (names, read-back output,
reasons) is escaped, never read as markup.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tokcaliper.experiment.analysis import ExperimentAnalysis
from tokcaliper.experiment.show import ExperimentList, ExperimentShowResult
from tokcaliper.numbers import num, percent, seconds
from tokcaliper.report.compare_view import print_closing, render_multi, render_sequential_decision
from tokcaliper.report.roofline_view import render_roofline
from tokcaliper.report.text import esc

__all__ = ["render_closing", "render_comparisons", "render_experiment", "render_experiment_list",
           "render_experiment_show", "render_sequential", "render_spread_causes"]


def render_experiment_show(console: Console, res: ExperimentShowResult, verbose: bool = False) -> None:
    """``experiment show`` (and the end of ``experiment run``/``resume``): :func:`render_experiment`
    with each arm's fraction of its roofline above the closing ``result:``/``next:`` lines."""
    render_experiment(console, res, verbose,
                      before_closing=lambda c: render_roofline(c, [], arms=res.roofline))


def render_experiment_list(console: Console, res: ExperimentList) -> None:
    """``experiment list``: one table row per stored experiment (id, name, created, status,
    measured/planned runs, outcomes)."""
    t = Table(title=f"{len(res.experiments)} experiment(s)", title_justify="left")
    for col in ("id", "name", "created (UTC)", "status", "runs", "outcomes"):
        t.add_column(col)
    for r in res.experiments:
        t.add_row(esc(r.id), esc(r.name), esc(r.created_at), esc(r.status),
                  f"{r.measured_runs}/{r.planned_runs}", str(r.outcomes))
    console.print(t)


def render_experiment(console: Console, an: ExperimentAnalysis, verbose: bool = True,
                      before_closing: Callable[[Console], None] | None = None) -> None:
    """Print the experiment ``an``: plan, runs, outcomes, per-arm noise, comparisons, then the
    closing ``result:``/``next:`` lines. ``verbose`` False leaves out the per-metric
    arithmetic, the per-pair verdicts, the variance-split arithmetic and the sources.
    ``before_closing`` draws more (e.g. the arms' rooflines) above the closing lines."""
    spec = an.spec
    console.print(f"[bold]experiment {escape(an.id)}[/bold] — {escape(an.name)}  "
                  f"status [bold]{escape(an.status)}[/bold]  created {escape(an.created_at)}")
    order = " ".join(arm for _pos, arm in an.planned)
    console.print(escape(
        f"  plan: {len(spec.arms)} arms × {spec.runs_per_arm} runs, order {spec.order}"
        + (f" (seed {spec.seed})" if spec.seed is not None else "")
        + f", {spec.warmup_runs} warm-up run(s) after each switch (stored, excluded), "
          f"rest {spec.rest_s:g} s before each run; primary metric {spec.metric}"
        + (f", effect of interest {percent(spec.effect)}" if spec.effect else "")))
    console.print(escape(f"  order: {order}"))
    for arm in spec.arms:
        what = {"server": arm.server_cmd, "switch": arm.switch}.get(arm.kind) or ""
        if arm.load:  # the arm's own load (a sweep level)
            what = (what + "; " if what else "") + "load " + ", ".join(
                f"{k} = {v}" for k, v in arm.load.items())
        rb = f"; read-back {arm.readback!r} must show {arm.expect or '/' + str(arm.expect_regex) + '/'}" \
            if arm.readback else ""
        console.print(escape(f"  arm {arm.name} ({arm.kind}): {what}{rb}"), soft_wrap=True)

    t = Table(title="what ran (in order)", title_justify="left")
    for col in ("run", "pos", "arm", spec.metric, "rest before", "status", "read-back"):
        t.add_column(col, justify="right" if col in ("run", "pos", spec.metric, "rest before") else "left")
    for r in an.runs:
        status = "warm-up (excluded)" if r.warmup_run else ("ok" if r.valid else f"INVALID: {r.invalid_reason}")
        t.add_row(str(r.id), "—" if r.position is None else str(r.position + 1), escape(r.arm),
                  num(r.value, 4), seconds(r.rest_s), escape(status), escape(r.readback or "—"))
    console.print(t)
    for o in an.outcomes:
        where = "" if o.position is None else f" at position {o.position + 1}"
        console.print(f"[bold red]{escape(o.kind)}[/bold red]{escape(where)}: {escape(o.reason)}")

    a = Table(title=f"per arm ({spec.metric}, valid measured runs)", title_justify="left")
    for col in ("arm", "n / planned", "mean", "sd", "CV", "CV 95% CI"):
        a.add_column(col, justify="left" if col == "arm" else "right")
    for s in an.arms:
        d = s.description
        ci = "—" if d is None or d.cv_ci95 is None else f"{percent(d.cv_ci95[0])}–{percent(d.cv_ci95[1])}"
        a.add_row(escape(s.arm), f"{s.n}/{s.planned}", num(None if d is None else d.mean, 4),
                  num(None if d is None else d.std), percent(None if d is None else d.cv), ci)
    console.print(a)
    render_spread_causes(console, an)
    render_restart_splits(an.restarts, console, detail=None if verbose else 0)

    render_sequential(console, an)
    render_comparisons(console, an, verbose)
    if before_closing is not None:
        before_closing(console)
    render_closing(console, an)


def render_spread_causes(console: Console, an: ExperimentAnalysis) -> None:
    """One line per arm whose spread a measured covariate explains (:attr:`ArmSummary.explanation`)."""
    for s in an.arms:
        if s.explanation:
            console.print(escape(f"  {s.arm}: {s.explanation}"), soft_wrap=False)


def render_sequential(console: Console, an: ExperimentAnalysis) -> None:
    """The sequential decision of an until-decided experiment and which verdict governs."""
    render_sequential_decision(console, an.sequential, an.governs)


def render_closing(console: Console, an: ExperimentAnalysis) -> None:
    """The experiment's closing lines (:attr:`ExperimentAnalysis.closing`), last on the page."""
    if an.closing:
        print_closing(console, an.closing)


def render_comparisons(console: Console, an: ExperimentAnalysis, verbose: bool = True) -> None:
    """Every candidate arm against the baseline (fixed-n comparisons)."""
    for c in an.comparisons:
        console.print()
        if c.metrics is None:
            console.print(f"[yellow]{escape(c.candidate)} against {escape(c.baseline)}: "
                          f"not comparable yet[/yellow] — {escape(c.error or '')}")
            continue
        render_multi(c.metrics, console, verbose=verbose, closing=False)


def render_restart_splits(splits, console: Console, detail: int | None = None) -> None:  # type: ignore[no-untyped-def]
    """Where the variance lives: one line per arm restarted per segment (or per --restarts block),
    then the ANOVA and allocation arithmetic of the first ``detail`` splits (all by default)
    (issue 17 item 7)."""
    if not splits:
        return
    console.print()
    console.print("[bold]where the variance lives[/bold] (restart-level against run-level, "
                  "one-way random-effects ANOVA):")
    for i, sp in enumerate(splits):
        console.print(escape(f"  {sp.summary}"))
        if detail is not None and i >= detail:
            continue
        lines = ([] if sp.components is None else sp.components.arithmetic) + (
            [] if sp.allocation is None else sp.allocation.arithmetic)
        for line in lines:
            console.print(escape(f"    {line}"), style="dim")
