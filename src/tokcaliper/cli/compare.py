"""CLI: ``tokcaliper compare`` — two arms, every figure, one honest verdict (M3, M4, M9, M10).

Thin: parse exactly one input (``--a/--b`` runs, ``--csv``, ``--a-stats/--b-stats``
summaries, ``--a-single/--b-single`` numbers, ``--session``, ``--experiment``), call its
builder in :mod:`tokcaliper.experiment.compare` (or :func:`tokcaliper.stats.ab.single_numbers`),
emit the typed result with :func:`tokcaliper.report.compare_view.render_compare`.
``--baseline`` hands over to the CI gate (:func:`tokcaliper.cli.baseline.run_gate`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app
from tokcaliper.errors import InputError

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

    from tokcaliper.experiment import compare as cmp
    from tokcaliper.report.compare_view import render_compare
    from tokcaliper.report.output import emit

    display = _names(names, "--names") or ("A", "B")
    chosen_arms = _names(arms, "--arms")
    settings = cmp.CompareSettings(metric=metric, better=better, unit=unit, alpha=alpha,  # type: ignore[arg-type]
                                   noise_band=noise_band, margin=margin, effect=effect, noise_abs=noise_abs)
    result: cmp.CompareResult
    if mode in ("--experiment", "--session"):
        from tokcaliper.store import Store

        with Store(db, create=False) as store:
            if mode == "--experiment":
                from tokcaliper.audit.run_roofline import arm_rooflines

                result = cmp.compare_experiment(store, experiment, arm_rooflines)  # type: ignore[arg-type]
            else:
                from tokcaliper.audit.importers.definitions import differences

                result = cmp.compare_session(store, session, chosen_arms, control,  # type: ignore[arg-type]
                                             settings=settings, differences=differences,
                                             allow_mixed=allow_mixed_tools)
    elif mode == "--a-single/--b-single":
        from tokcaliper.stats.ab import single_numbers

        result = single_numbers(a_single, b_single, cv, display)  # type: ignore[arg-type]
    elif mode == "--a-stats/--b-stats":
        from tokcaliper.experiment.samples import parse_summary_stats

        result = cmp.compare_summaries(parse_summary_stats(a_stats, "--a-stats"),  # type: ignore[arg-type]
                                       parse_summary_stats(b_stats, "--b-stats"),  # type: ignore[arg-type]
                                       display, settings=settings)
    elif mode == "--a/--b":
        from tokcaliper.experiment.samples import parse_number_list

        result = cmp.compare_runs(parse_number_list(a, "--a"), parse_number_list(b, "--b"),  # type: ignore[arg-type]
                                  display, settings=settings, paired=paired, control=control,
                                  names_given=names is not None)
    else:
        result = cmp.compare_csv(csv_path, chosen_arms, control, settings=settings)  # type: ignore[arg-type]
    emit(result, as_json, lambda console: render_compare(result, console, verbose=verbose))
