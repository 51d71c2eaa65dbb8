"""Terminal view of ``tokcaliper compare``: arms table, tests, pairs, verdict, arithmetic.

Renders :class:`tokcaliper.stats.ab.ABAnalysis`, :class:`~tokcaliper.stats.ab.MultiComparison`,
:class:`~tokcaliper.stats.ab.SingleNumbers` and
:class:`~tokcaliper.experiment.compare.ExperimentComparison`; :func:`render_compare` picks the
view of whichever :data:`~tokcaliper.experiment.compare.CompareResult` the command built.
``--json`` dumps the same objects; their ``warnings`` are printed on stderr by
:func:`tokcaliper.report.output.emit`, not here.
Numbers go through :mod:`tokcaliper.numbers`. User-provided text (arm and metric
names, the unit, messages that quote them) is never read as rich markup or
``:emoji:`` codes: it is escaped, printed with ``emoji=False``, or put in a table
as :class:`rich.text.Text`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from tokcaliper.numbers import num, p_value, percent, statistic
from tokcaliper.numbers import ratio as fmt_ratio
from tokcaliper.report.text import plain
from tokcaliper.stats.closing import closing_lines

if TYPE_CHECKING:
    from tokcaliper.experiment.compare import CompareResult, ExperimentComparison
    from tokcaliper.stats.ab import ABAnalysis, MultiComparison, SingleNumbers
    from tokcaliper.stats.sequential import SequentialDecision

__all__ = ["print_closing", "render_analysis", "render_compare", "render_experiment_comparison",
           "render_multi", "render_sequential_decision", "render_single"]

_STYLE = {"faster": "green", "slower": "red", "equivalent": "green", "inconclusive": "yellow"}


def _ci(ci: tuple[float, float]) -> str:
    """A CI of a ratio: ``"0.950 … 1.050"``."""
    return f"{fmt_ratio(ci[0])} … {fmt_ratio(ci[1])}"


def _say(console: Console, markup: str, **kw: object) -> None:
    """Print a line whose user-provided parts are already escaped; ``:name:`` stays literal."""
    console.print(markup, emoji=False, **kw)  # type: ignore[arg-type]


def _arms_table(an: ABAnalysis) -> Table:
    u = f" ({an.unit})" if an.unit else ""
    t = Table(show_header=True, header_style="bold")
    for h, j in (("arm", "left"), ("n", "right"), (f"mean{u}", "right"), ("sd", "right"),
                 ("CV", "right"), ("min", "right"), ("max", "right")):
        t.add_column(Text(h), justify=j)  # type: ignore[arg-type]
    for x in (an.a, an.b):
        t.add_row(Text(x.name), str(x.n), num(x.mean, 4), num(x.sd), percent(x.cv),
                  num(x.min, 6, trim=True), num(x.max, 6, trim=True))
    return t


def render_analysis(an: ABAnalysis, console: Console, header: bool = True, *,
                    verbose: bool = True, closing: bool = True) -> None:
    """Print one metric's comparison; with ``verbose`` False the per-pair verdicts, the
    arithmetic and the sources are left out (``--verbose`` prints them). ``closing``: end
    with the plain ``result:``/``next:`` lines (:func:`tokcaliper.stats.closing.closing_lines`)."""
    from tokcaliper.stats.ab import ratios_text, running_lines  # scipy: only when rendering
    na, nb = an.a.name, an.b.name
    lvl = f"{100 * (1 - an.alpha):g}%"
    if header:
        _say(console, f"[bold]tokcaliper compare[/bold] — {escape(nb)} against {escape(na)} "
                      f"(baseline), {escape(an.metric)}, "
                      f"{'higher' if an.higher_is_better else 'lower'} is better")
        _control_line(an, console)
    else:
        _say(console, f"[bold]{escape(an.metric)}[/bold] "
                      f"({'higher' if an.higher_is_better else 'lower'} is better)")
    console.print(_arms_table(an))
    if an.scale == "difference":
        _render_difference(an, console, verbose)
        if closing:
            print_closing(console, closing_lines(an))
        return
    ci = an.ratio_of_means_ci
    _say(console, escape(f"ratio of means {nb}/{na} = {fmt_ratio(an.ratio_of_means)}"
                         + ("" if ci is None else f" ({lvl} CI {_ci(ci)})")))
    w = an.welch
    if verbose or an.decided_by != "paired":
        _say(console, escape(f"Welch's t = {statistic(w.t)}, df = {num(w.df, 2, min_decimals=1)}, "
                             f"p = {p_value(w.p)}"
                             + ("  — shown beside the paired analysis, which decides"
                                if an.decided_by == "paired" else "  — decides")))
    if an.paired is not None:
        pr = an.paired
        pci = "" if pr.ratio_ci is None else f" ({lvl} CI {_ci(pr.ratio_ci)})"
        ptxt = ("t undefined" if pr.t is None
                else f"t = {statistic(pr.t)}, df = {pr.df}, p = {p_value(pr.p)}")
        _say(console, escape(f"paired on log ratios ({pr.n} pairs): ratio {fmt_ratio(pr.ratio)}"
                             f"{pci}, {ptxt}"))
        if verbose:
            _say(console, escape("pair ratios in run order: " + ratios_text(pr.ratios)))
    _robust(an, console, lvl, verbose)
    if an.running and verbose:
        _say(console, "verdict after each pair (unadjusted paired p, for the trajectory only"
                      + (f"; the verdict below reads the Holm-adjusted p and governs):"
                         if an.holm_m > 1 else "; the verdict below governs):"))
        for line in running_lines(an.running):
            _say(console, f"  {escape(line)}")
    v = an.variance
    bf = ("" if v.bf_p is None
          else f"Brown–Forsythe W = {statistic(v.bf_w)}, p = {p_value(v.bf_p)}; ")
    f = "F undefined" if v.f is None else f"F-test F = {statistic(v.f)}, p = {p_value(v.f_p)}"
    if verbose:
        _say(console, escape(f"variances: {bf}{f}"))
    if an.mde is not None:
        if an.target_effect <= an.noise_band:
            need = "none at any n (inside the noise band)"
        else:
            need = "more than 10⁹" if an.runs_needed is None else str(an.runs_needed)
        unit = "pairs" if an.paired is not None else "runs per arm"
        _say(console, escape(f"MDE with these runs: ±{percent(an.mde)}, so changes below "
                             f"±{percent(an.noise_band + an.mde)} (band + MDE) cannot be called; "
                             f"{unit} for a verdict on ±{percent(an.target_effect)} at power 0.8: "
                             f"{need}"))
    if an.tost is not None:
        t = an.tost
        adj = an.tost_p_used is not None and an.holm_m > 1
        _say(console, escape(f"equivalence (TOST ±{percent(t.margin)}): "
                             + (f"unadjusted p = {p_value(t.p)}, Holm-adjusted p = "
                                f"{p_value(an.tost_p_used)} (governs)" if adj else f"p = {p_value(t.p)}")
                             + f", {100 * (1 - 2 * t.alpha):g}% CI {_ci(t.ci)}"))
    _render_verdict(an, console, verbose)
    if header and not verbose:
        _say(console, VERBOSE_HINT, style="dim")
    if closing:
        print_closing(console, closing_lines(an))


#: The one line that says what the default (short) view leaves out.
VERBOSE_HINT = ("(--verbose: every metric's table, arithmetic and per-pair verdicts, the Welch and "
                "rank companions, the variance tests and the sources)")


def print_closing(console: Console, lines: list[str]) -> None:
    """The closing ``result:``/``next:`` lines, bold, after a blank line (issue 26)."""
    console.print()
    for line in lines:
        head, _, rest = line.partition(":")
        _say(console, f"[bold]{escape(head)}:[/bold]{escape(rest)}", soft_wrap=False)


def _render_verdict(an: ABAnalysis, console: Console, verbose: bool = True) -> None:
    """The verdict, its arithmetic, notes and sources: the tail of either scale's body."""
    style = _STYLE[an.verdict]
    _say(console, f"[bold {style}]verdict:[/bold {style}] {escape(an.report.summary)}")
    if verbose:
        _say(console, "arithmetic:")
        for line in an.report.arithmetic:
            _say(console, f"  {escape(line)}")
    for n in an.notes:
        _say(console, f"[yellow]note:[/yellow] {escape(n)}")
    if verbose:
        _say(console, "sources: " + escape("; ".join(an.report.sources)), style="dim")


def _render_difference(an: ABAnalysis, console: Console, verbose: bool = True) -> None:
    """The body of a difference-scale comparison (b − a, absolute noise floor; issue 17 item 5)."""
    u = f" {an.unit}" if an.unit else ""
    lvl = f"{100 * (1 - an.alpha):g}%"
    ci = an.difference_ci
    how = "paired differences" if an.differences is not None else "difference of means"
    _say(console, escape(
        f"difference scale ({how}): {an.b.name} − {an.a.name} = {num(an.difference, signed=True)}{u}"
        + ("" if ci is None else f" ({lvl} CI {num(ci[0], signed=True)} … {num(ci[1], signed=True)})")
        + f"; noise floor ±{num(an.noise_abs)}{u}"))
    w = an.welch
    _say(console, escape(f"Welch's t = {statistic(w.t)}, df = {num(w.df, 2, min_decimals=1)}, "
                         f"p = {p_value(w.p)}" + ("  — decides" if an.differences is None
                                                  else "  — shown beside the paired differences")))
    if an.differences is not None:
        _say(console, escape("pair differences in run order: "
                             + " ".join(num(x, signed=True) for x in an.differences)))
    if an.mde is not None:
        _say(console, escape(f"MDE with these runs: ±{num(an.mde)}{u}, so changes below "
                             f"±{num((an.noise_abs or 0) + an.mde)}{u} (floor + MDE) cannot be called"))
    _render_verdict(an, console, verbose)


def _control_line(an: ABAnalysis, console: Console) -> None:
    """The reference arm and why it is the reference (issue 17 item 6); always printed."""
    why = an.control_reason or "given first"
    rel = (f"differences are {an.b.name} − {an.a.name}" if an.scale == "difference"
           else f"ratios are {an.b.name}/{an.a.name}")
    role = "subtracted" if an.scale == "difference" else "the ratio's denominator"
    _say(console, escape(f"control (reference, {role}): {an.a.name} — {why}; {rel}"))


def _robust(an: ABAnalysis, console: Console, lvl: str, verbose: bool = True) -> None:
    """Drift over run positions (it decides when present), flagged runs, the rank companion."""
    if an.drift is not None:
        _say(console, escape(f"drift over run positions (decides): {an.drift.describe()}"))
    o = an.outliers
    if o is not None and o.runs:
        for line in o.shown():
            _say(console, f"[yellow]outlier:[/yellow] {escape(line)}")
        w = an.without_outliers
        if w is not None:
            _say(console, escape(f"without {w.left_out}: "
                                 + (w.summary if w.summary is not None else f"no comparison ({w.error})")))
    if an.rank is not None and verbose:
        rk = an.rank
        ci = "" if rk.ratio_ci is None else f" ({lvl} CI {_ci(rk.ratio_ci)})"
        _say(console, escape(f"rank companion: Hodges–Lehmann ratio {fmt_ratio(rk.ratio)}{ci}, "
                             f"Wilcoxon signed-rank p = {p_value(rk.p)}"))


def render_multi(mc: MultiComparison, console: Console, *, verbose: bool = True,
                 closing: bool = True) -> None:
    """Print several metrics' comparisons and the Holm note, then (``closing``) the plain
    ``result:``/``next:`` lines of the first (primary) metric."""
    if not mc.metrics:
        return
    first = mc.metrics[0]
    _say(console, f"[bold]tokcaliper compare[/bold] — {escape(first.b.name)} against "
                  f"{escape(first.a.name)} (baseline), {len(mc.metrics)} metrics")
    _control_line(first, console)
    _say(console, escape(mc.note))
    for i, an in enumerate(mc.metrics):
        console.print()
        if i > 0 and not verbose:  # a secondary metric: its verdict alone (--verbose: all of it)
            style = _STYLE[an.verdict]
            _say(console, f"[bold]{escape(an.metric)}[/bold] ({'higher' if an.higher_is_better else 'lower'}"
                          f" is better) [bold {style}]verdict:[/bold {style}] {escape(an.report.summary)}")
            continue
        render_analysis(an, console, header=False, verbose=verbose, closing=False)
    if not verbose:
        _say(console, VERBOSE_HINT, style="dim")
    if closing:
        print_closing(console, closing_lines(first))


def render_single(sn: SingleNumbers, console: Console) -> None:
    """Print a single-number comparison (no verdict, M10)."""
    _say(console, "[bold]tokcaliper compare[/bold] — one number per arm (M10)")
    _say(console, f"[bold yellow]{escape(sn.report.summary)}[/bold yellow]")
    _say(console, "arithmetic:")
    for line in sn.report.arithmetic:
        _say(console, f"  {escape(line)}")
    _say(console, "sources: " + escape("; ".join(sn.report.sources)), style="dim")


def render_sequential_decision(console: Console, sq: SequentialDecision | None, governs: str | None) -> None:
    """The sequential decision of an until-decided experiment and which verdict governs."""
    if sq is not None:
        fixed = "unknown" if sq.fixed_design_pairs is None else str(sq.fixed_design_pairs)
        state = f"decided: {sq.verdict}" if sq.decided else "not decided yet"
        console.print()
        console.print(escape(
            f"sequential rule (until decided): {state} after {sq.pairs_used} of at most "
            f"{sq.max_pairs} pairs; the fixed design would use {fixed} pairs"))
        console.print(escape(f"  {sq.reason}"))
        for line in sq.arithmetic:
            console.print(escape(f"  {line}"))
    if governs is not None:
        console.print(f"[bold]which verdict governs:[/bold] {escape(governs)}")


def render_experiment_comparison(ec: ExperimentComparison, console: Console, *, verbose: bool = True) -> None:
    """``compare --experiment``: the arms whose spread a covariate explains, the sequential
    decision (until-decided), each candidate's metrics against the first arm (or why not yet),
    the rooflines, then the closing lines."""
    from tokcaliper.report.roofline_view import render_roofline

    for arm, sentence in ec.spread_causes.items():
        console.print(escape(f"  {arm}: {sentence}"), soft_wrap=False)
    render_sequential_decision(console, ec.sequential, ec.governs)
    for c in ec.comparisons:
        if c.metrics is None:
            console.print(plain(f"{c.candidate} against {c.baseline}: not comparable yet — {c.error}"),
                          markup=False, emoji=False)
        else:
            render_multi(c.metrics, console, verbose=verbose, closing=False)
    render_roofline(console, [], arms=ec.roofline)
    if ec.closing:
        print_closing(console, ec.closing)


def render_compare(result: CompareResult, console: Console, *, verbose: bool = False) -> None:
    """The view of whichever result ``tokcaliper compare`` built: an experiment's comparisons,
    several metrics, one metric, or one number per arm. ``verbose``: as :func:`render_analysis`."""
    from tokcaliper.experiment.compare import ExperimentComparison
    from tokcaliper.stats.ab import MultiComparison, SingleNumbers

    if isinstance(result, ExperimentComparison):
        render_experiment_comparison(result, console, verbose=verbose)
    elif isinstance(result, SingleNumbers):
        render_single(result, console)
    elif isinstance(result, MultiComparison):
        render_multi(result, console, verbose=verbose)
    else:
        render_analysis(result, console, verbose=verbose)
