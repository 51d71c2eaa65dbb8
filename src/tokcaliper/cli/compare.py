"""CLI: ``tokcaliper compare`` — two arms, every figure, one honest verdict (M3, M4, M9, M10).

Thin: parse exactly one input (``--a/--b`` runs, ``--csv``, ``--a-stats/--b-stats``
summaries or ``--a-single/--b-single`` numbers), call :mod:`tokcaliper.stats.ab`,
render with :mod:`tokcaliper.report.compare_view` or as JSON.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app
from tokcaliper.errors import InputError

#: Largest ``--csv`` file read (bytes).
MAX_CSV_BYTES = 64 * 1024 * 1024


def _names(text: Optional[str], option: str) -> tuple[str, str] | None:
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
        raise InputError(f"{option} must be two different names separated by a comma, got {text!r}")
    return parts[0], parts[1]


@app.command("compare")
def compare_cmd(
    a: Annotated[Optional[str], typer.Option("--a", help="Baseline runs, comma-separated (e.g. 754.3,770.0,639.3).")] = None,
    b: Annotated[Optional[str], typer.Option("--b", help="Candidate runs, comma-separated.")] = None,
    csv_path: Annotated[Optional[Path], typer.Option("--csv", help="CSV with columns arm,value[,pair][,position][,metric].")] = None,
    a_stats: Annotated[Optional[str], typer.Option("--a-stats", help="Baseline as published: mean,sd,n (sample sd).")] = None,
    b_stats: Annotated[Optional[str], typer.Option("--b-stats", help="Candidate as published: mean,sd,n.")] = None,
    a_single: Annotated[Optional[float], typer.Option("--a-single", help="One baseline number (no verdict, M10).")] = None,
    b_single: Annotated[Optional[float], typer.Option("--b-single", help="One candidate number (no verdict, M10).")] = None,
    cv: Annotated[Optional[float], typer.Option("--cv", help="Local CV (fraction) for --a-single/--b-single.")] = None,
    paired: Annotated[bool, typer.Option("--paired", help="--a/--b were interleaved: pair k = (a[k], b[k]); the paired analysis decides.")] = False,
    names: Annotated[Optional[str], typer.Option("--names", help="Display names BASELINE,CANDIDATE (default A,B).")] = None,
    arms: Annotated[Optional[str], typer.Option("--arms", help="CSV arms to compare: BASELINE,CANDIDATE.")] = None,
    control: Annotated[Optional[str], typer.Option(
        "--control", help="The reference arm (ratios are other/control) of --csv or --a/--b (by "
                          "--names). Default: an arm named A, baseline or control, else the first "
                          "in the file.")] = None,
    metric: Annotated[str, typer.Option("--metric", help="Metric name: sets the direction (higher/lower is better).")] = "aggregate_output_tok_s",
    better: Annotated[Optional[str], typer.Option("--better", help="Override the direction: higher or lower.")] = None,
    unit: Annotated[str, typer.Option("--unit", help="Unit shown beside the means.")] = "",
    alpha: Annotated[float, typer.Option("--alpha", help="Two-sided significance level.")] = 0.05,
    noise_band: Annotated[float, typer.Option("--noise-band", help="No faster/slower while the CI reaches within ±band of 1.")] = 0.01,
    margin: Annotated[Optional[float], typer.Option("--margin", help="Equivalence margin E (fraction): allows 'equivalent within ±E' (TOST).")] = None,
    effect: Annotated[Optional[float], typer.Option("--effect", help="The effect you care about (fraction), for the runs needed.")] = None,
    noise_abs: Annotated[Optional[float], typer.Option(
        "--noise-abs", help="Compare on the difference b − a with this absolute noise floor, in the "
                            "metric's unit (for metrics that can be 0 or sit at their resolution). "
                            "Default: the metric's known resolution, if any (client_loop_lag_p99_ms: 1 ms); "
                            "else ratios with --noise-band.")] = None,
    experiment: Annotated[Optional[str], typer.Option(
        "--experiment", help="A stored experiment id: every arm against the first, with the file's "
                             "alpha, noise band, margin and effect.")] = None,
    session: Annotated[Optional[str], typer.Option(
        "--session", help="Stored session(s) SESSION[,SESSION]: two of their arms (--arms, or the only two), "
                          "one value of --metric per run; imported runs too. With --baseline: the new runs.")] = None,
    allow_mixed_tools: Annotated[bool, typer.Option(
        "--allow-mixed-tools", help="With --session: compare arms measured by different tools (tokcaliper, "
                                    "an imported vLLM/AIPerf/… file), with a warning naming the definitions "
                                    "that differ.")] = False,
    baseline: Annotated[Optional[str], typer.Option(
        "--baseline", help="The CI gate: a stored baseline (`tokcaliper baseline save`) against "
                           "--session S or --experiment ID; exits 20 when slower (docs/ci-gate.md).")] = None,
    arm: Annotated[Optional[str], typer.Option("--arm", help="With --baseline: the new runs' arm, when there are several.")] = None,
    summary_md: Annotated[Optional[Path], typer.Option("--summary-md", help="With --baseline: append a Markdown summary here (e.g. $GITHUB_STEP_SUMMARY).")] = None,
    bmf: Annotated[Optional[Path], typer.Option("--bmf", help="With --baseline: write Bencher Metric Format JSON here.")] = None,
    github_benchmark: Annotated[Optional[Path], typer.Option("--github-benchmark", help="With --baseline: write PREFIX.smaller.json / PREFIX.bigger.json for github-action-benchmark.")] = None,
    fail_on_inconclusive: Annotated[bool, typer.Option("--fail-on-inconclusive", help="With --baseline: exit 21 when the runs cannot decide (default: 0, said in the output).")] = False,
    db: Annotated[Path, typer.Option("--db", help=DB_HELP)] = Path("tokcaliper.db"),
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also print the arithmetic, the per-pair verdicts, every metric in full and the sources.")] = False,
) -> None:
    """Compare two arms: n, mean, sd, CV; ratio with CI; Welch (and paired) t; MDE; verdict.

    The verdict is faster/slower only when p < α and the CI clears the noise
    band, equivalent only when a TOST passes for --margin, else inconclusive
    with the MDE and the runs it would take. One number per arm gets no verdict.
    """
    if baseline is not None:
        from tokcaliper.cli.baseline import run_gate

        run_gate(baseline=baseline, experiment=experiment, session=session, arm=arm, metric=metric,
                 alpha=alpha, noise_band=noise_band, margin=0.05 if margin is None else margin,
                 effect=effect, db=db, as_json=as_json, summary_md=summary_md, bmf=bmf,
                 github_benchmark=github_benchmark, fail_on_inconclusive=fail_on_inconclusive)
        return
    gate_only = {"--arm": arm, "--summary-md": summary_md, "--bmf": bmf,
                 "--github-benchmark": github_benchmark,
                 "--fail-on-inconclusive": fail_on_inconclusive or None}
    stray = [k for k, v in gate_only.items() if v is not None]
    if stray:
        raise InputError(f"{stray[0]} is for the baseline gate: add --baseline NAME")
    modes = {"--a/--b": a is not None or b is not None, "--csv": csv_path is not None,
             "--a-stats/--b-stats": a_stats is not None or b_stats is not None,
             "--a-single/--b-single": a_single is not None or b_single is not None,
             "--experiment": experiment is not None, "--session": session is not None}
    chosen = [k for k, v in modes.items() if v]
    if len(chosen) != 1:
        raise InputError("give exactly one input: --a/--b, --csv, --a-stats/--b-stats, "
                         f"--a-single/--b-single, --experiment or --session{'' if not chosen else ' (got ' + ', '.join(chosen) + ')'}")
    mode = chosen[0]
    pair_opts = {"--a/--b": (a, b), "--a-stats/--b-stats": (a_stats, b_stats),
                 "--a-single/--b-single": (a_single, b_single)}
    if mode in pair_opts and None in pair_opts[mode]:
        first, second = mode.split("/")
        raise InputError(f"{first} and {second} go together: give both")
    if cv is not None and mode != "--a-single/--b-single":
        raise InputError("--cv is for --a-single/--b-single; with runs the CV is computed")
    if paired and mode != "--a/--b":
        raise InputError("--paired is for --a/--b; a CSV is paired by its pair column")
    if arms is not None and mode not in ("--csv", "--session"):
        raise InputError("--arms is for --csv and --session; use --names for display names")
    if allow_mixed_tools and mode != "--session":
        raise InputError("--allow-mixed-tools is for --session (stored runs carry the tool that measured them)")
    if control is not None and mode not in ("--csv", "--a/--b", "--session"):
        raise InputError("--control is for --csv and --a/--b (an experiment compares with its "
                         "first arm)")
    if noise_abs is not None and mode not in ("--csv", "--a/--b", "--session"):
        raise InputError("--noise-abs is for --csv and --a/--b (runs); summaries and single numbers "
                         "are compared as ratios")
    if noise_abs is not None:
        from tokcaliper.stats.difference import check_noise_abs

        check_noise_abs(noise_abs)
    if better not in (None, "higher", "lower"):
        raise InputError(f"--better must be higher or lower, got {better!r}")

    from tokcaliper.model.metrics import get_metric
    from tokcaliper.report.output import emit
    from tokcaliper.report.text import plain

    display = _names(names, "--names") or ("A", "B")

    if mode == "--experiment":
        from tokcaliper.audit.run_roofline import arm_rooflines
        from tokcaliper.experiment.analysis import analyze_experiment
        from tokcaliper.report.compare_view import render_multi
        from tokcaliper.report.roofline_view import render_roofline, roofline_payload
        from tokcaliper.store import Store

        with Store(db, create=False) as store:
            analysis = analyze_experiment(store, experiment)  # type: ignore[arg-type]
            arms = arm_rooflines(store.session_runs(analysis.id),  # issue 25
                                 [a.get("name") for a in store.get_experiment(analysis.id).spec.get("arms", [])])
        payload = {"experiment": analysis.id, "comparisons": analysis.comparisons,
                   "sequential": analysis.sequential, "governs": analysis.governs,
                   "roofline": roofline_payload(arms),
                   "spread_causes": {s.arm: s.explanation for s in analysis.arms if s.explanation},
                   "closing": analysis.closing}

        def render(console) -> None:  # type: ignore[no-untyped-def]
            from tokcaliper.report.compare_view import print_closing
            from tokcaliper.report.experiment_view import render_sequential, render_spread_causes

            render_spread_causes(console, analysis)  # an arm whose spread a covariate explains
            render_sequential(console, analysis)  # until-decided: the decision that governs
            for c in analysis.comparisons:
                if c.metrics is None:
                    console.print(plain(f"{c.candidate} against {c.baseline}: not comparable yet — {c.error}"),
                                  markup=False)
                else:
                    render_multi(c.metrics, console, verbose=verbose, closing=False)
            render_roofline(console, [], arms=arms)
            if analysis.closing:
                print_closing(console, analysis.closing)

        emit(payload, as_json, render)
        return

    if mode == "--a-single/--b-single":
        from tokcaliper.report.compare_view import render_single
        from tokcaliper.stats.ab import single_numbers

        sn = single_numbers(a_single, b_single, cv, display)  # type: ignore[arg-type]
        emit(sn, as_json, lambda console: render_single(sn, console))
        return

    from tokcaliper.experiment.samples import (
        parse_number_list,
        parse_samples_csv,
        parse_summary_stats,
        tags_of,
    )
    from tokcaliper.report.compare_view import render_analysis, render_multi
    from tokcaliper.stats.ab import analyze_samples, analyze_summary, compare_metrics

    def direction(name: str) -> bool:
        if better is not None:
            return better == "higher"
        return get_metric(name).higher_is_better

    def floor(name: str) -> float | None:
        """--noise-abs, else the metric's known resolution from the registry (or None: ratios)."""
        if noise_abs is not None:
            return noise_abs
        from tokcaliper.model.metrics import METRICS

        m = METRICS.get(name)
        return None if m is None else m.noise_abs

    settings = {"alpha": alpha, "noise_band": noise_band, "margin": margin, "effect": effect,
                "unit": unit}
    if mode == "--a-stats/--b-stats":
        an = analyze_summary(parse_summary_stats(a_stats, "--a-stats"),  # type: ignore[arg-type]
                             parse_summary_stats(b_stats, "--b-stats"),  # type: ignore[arg-type]
                             display, metric=metric, higher_is_better=direction(metric), **settings)
        an = an.model_copy(update={"control_reason": "given as --a-stats"})
        emit(an, as_json, lambda console: render_analysis(an, console, verbose=verbose))
        return
    if mode == "--a/--b":
        from tokcaliper.experiment.samples import choose_control

        va, vb = parse_number_list(a, "--a"), parse_number_list(b, "--b")  # type: ignore[arg-type]
        why = "given as --a" + (" (the first of --names)" if names is not None else "")
        if control is not None:
            ctrl, why = choose_control(list(display), control)
            if ctrl == display[1]:  # the candidate named as control: swap the roles
                display, va, vb = (display[1], display[0]), vb, va
        an = analyze_samples(va, vb, display, paired=paired, metric=metric,
                             higher_is_better=direction(metric), noise_abs=floor(metric), **settings)
        an = an.model_copy(update={"control_reason": why})
        emit(an, as_json, lambda console: render_analysis(an, console, verbose=verbose))
        return

    if mode == "--session":
        va, vb, display, notes, why = session_arms(db, session, _names(arms, "--arms"), control,  # type: ignore[arg-type]
                                                    metric, allow_mixed_tools)
        an = analyze_samples(va, vb, display, metric=metric, higher_is_better=direction(metric),
                             noise_abs=floor(metric), **settings)
        an = an.model_copy(update={"control_reason": why, "notes": [*notes, *an.notes]})
        emit(an, as_json, lambda console: render_analysis(an, console, verbose=verbose))
        return

    assert csv_path is not None
    from tokcaliper.fileio import read_text

    text = read_text(csv_path, MAX_CSV_BYTES, what=f"--csv {csv_path}")
    table = parse_samples_csv(text, _names(arms, "--arms"), source=str(csv_path), control=control)
    analyses = []
    for s in table.metrics:
        m = s.metric or metric
        analyses.append(analyze_samples(s.a, s.b, s.names, paired=s.paired, metric=m,
                                        higher_is_better=direction(m), noise_abs=floor(m),
                                        tags=tags_of(s), **settings)
                        .model_copy(update={"control_reason": table.control_reason}))
    if len(analyses) == 1:
        an = analyses[0]
        emit(an, as_json, lambda console: render_analysis(an, console, verbose=verbose))
        return
    mc = compare_metrics(analyses)
    emit(mc, as_json, lambda console: render_multi(mc, console, verbose=verbose))


def session_arms(db: Path, sessions: str, arms: tuple[str, str] | None, control: str | None, metric: str,
                 allow_mixed: bool) -> tuple[list[float], list[float], tuple[str, str], list[str], str]:
    """Values of ``metric`` per run of two arms of stored session(s), and the mixed-tool check.

    Warm-up and invalid runs are left out (noted). Arms measured by different
    tools (a run's :attr:`~tokcaliper.model.run.Run.measured_by`) are refused
    unless ``allow_mixed``; then the first note is the ``mixed-tools`` warning
    naming the definitions that differ (:mod:`tokcaliper.audit.importers.definitions`).

    Returns:
        (baseline values, candidate values, (baseline, candidate), notes, why the baseline).

    Raises:
        InputError: no such session, not exactly two arms (without ``--arms``), an
            unknown arm, a run without a value for ``metric``, or mixed tools without the flag.
    """
    from tokcaliper.audit.importers.definitions import differences
    from tokcaliper.experiment.samples import choose_control
    from tokcaliper.model.metrics import get_metric
    from tokcaliper.model.warnings import MIXED_TOOLS
    from tokcaliper.store import Store

    m = get_metric(metric)
    names = [s.strip() for s in sessions.split(",") if s.strip()]
    if not names:
        raise InputError(f"--session needs a session id, got {sessions!r}")
    notes: list[str] = []
    by_arm: dict[str, list] = {}
    with Store(db, create=False) as store:
        for s in names:
            runs = store.session_runs(s)
            if not runs:
                raise InputError(f"--session: no runs of session {s!r} in {db}")
            for r in runs:
                if r.warmup_run or not r.valid:
                    notes.append(f"run {r.id}: {'warm-up' if r.warmup_run else 'invalid'} run, left out")
                    continue
                by_arm.setdefault(r.arm, []).append(r)
    if arms is None:
        if len(by_arm) != 2:
            raise InputError(f"--session {sessions}: {len(by_arm)} arm(s) ({', '.join(by_arm) or 'none'}); "
                             "name two with --arms BASELINE,CANDIDATE")
        arms = (list(by_arm)[0], list(by_arm)[1])
    for a in arms:
        if a not in by_arm:
            raise InputError(f"--arms: no arm {a!r} in session {sessions} (arms: {', '.join(by_arm)})")
    why = "the first of --arms" if arms is not None else "the first arm stored"
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
    all_tools = sorted(set().union(*tools.values()))
    if len(all_tools) > 1:
        who = "; ".join(f"arm {a}: {', '.join(sorted(t))}" for a, t in tools.items())
        diffs = differences(all_tools, metric)
        if not allow_mixed:
            raise InputError(f"compare --session: the arms were measured by different tools ({who}), whose "
                             f"{metric} is not defined alike ({'; '.join(diffs)}); pass --allow-mixed-tools to "
                             "compare anyway")
        notes.insert(0, MIXED_TOOLS.text(tools=who, metric=metric, differences="; ".join(diffs)))
    notes.append(f"one {metric} per stored run (unpaired: Welch); runs of session {sessions}")
    return values[0], values[1], (ordered[0], ordered[1]), notes, why
