"""Text rendering of audit results (the JSON view is the same objects, dumped).

One table per record (check, status, finding with the arithmetic beneath),
the facts' sources under it, then the batch curves (A4), the summary of
fail/warn counts per check and the most suspicious records.
"""

from __future__ import annotations

import math
from pathlib import PurePath

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tokcaliper.audit.attribution import Attribution, AttributionPlan, Contribution
from tokcaliper.audit.diff import DiffResult
from tokcaliper.audit.explain import CheckExplanation
from tokcaliper.audit.fetch import FetchResult
from tokcaliper.errors import EXIT_AUDIT_FAIL, EXIT_AUDIT_INCOMPLETE, EXIT_NOT_COMPARABLE
from tokcaliper.audit.runner import RANK_SHOWN, AuditReport, RecordAudit
from tokcaliper.model.verdict import Status
from tokcaliper.numbers import num, percent
from tokcaliper.report.text import plain
from tokcaliper.report.verdict_view import status_markup as _status
from tokcaliper.report.verdict_view import verdict_markup


def _sanitize(s: str) -> str:
    """Control characters (kept in the data, A9) shown as escapes on the terminal."""
    return "".join(c if c.isprintable() or c in "\n\t" else repr(c)[1:-1] for c in s)


def render_record(console: Console, a: RecordAudit) -> None:
    """One record's verdict table with sources and importer assumptions."""
    # the label starts with "name.json#3"; show the folder it came from, when any
    folder = str(PurePath(a.file).parent) if a.file is not None else "."
    where = f"in {folder}" if folder != "." else ""
    t = Table(title=f"{escape(_sanitize(a.label))}  [dim]{escape(where)}[/]  → {_status(a.status)}", title_justify="left",
              show_lines=True, expand=False)
    t.add_column("check", no_wrap=True)
    t.add_column("status", no_wrap=True)
    t.add_column("finding and arithmetic")
    for v in a.verdicts:
        t.add_row(v.check, _status(v.status),
                  f"[bold]{escape(v.title)}[/]: " + verdict_markup(v, clean=_sanitize))
    console.print(t)
    sources = []
    for v in a.verdicts:
        for s in v.sources:
            if s not in sources and v.status != Status.NA:
                sources.append(s)
    if sources:
        console.print("[dim]sources: " + escape(" | ".join(sources)) + "[/]")
    if a.assumptions:
        console.print("[dim]assumed: " + escape(_sanitize("; ".join(a.assumptions))) + "[/]")
    console.print()


def render_report(console: Console, report: AuditReport, brief: bool = False) -> None:
    """The whole audit: per-record tables (unless ``brief``), curves, summary, suspects, skipped."""
    if not brief:
        for a in report.records:
            render_record(console, a)
    else:
        t = Table(title="records", title_justify="left")
        t.add_column("record")
        for c in report.summary:
            t.add_column(c.check, no_wrap=True)
        for a in report.records:
            t.add_row(escape(_sanitize(a.label)), *[("[dim]source[/]" if v.check in a.source_wide
                                                      else _status(v.status)) for v in a.verdicts])
        console.print(t)
    if report.curves:
        console.print("[bold]Batch curves (A4)[/]")
        for v in report.curves:
            console.print(f"  {_status(v.status)} " + verdict_markup(v, indent="      "))
        console.print()
    n = len(report.records)
    t = Table(title=f"Summary over {n} record(s)" + (f", {len(report.skipped)} skipped" if report.skipped else ""),
              title_justify="left")
    for col in ("check", "fail", "warn", "pass", "n/a", "source-wide"):
        t.add_column(col, justify="right" if col != "check" else "left")
    for c in report.summary:
        t.add_row(f"{c.check} {escape(c.title)}", f"[bold red]{c.fail}[/]" if c.fail else "0",
                  f"[yellow]{c.warn}[/]" if c.warn else "0", str(c.passed), str(c.na), str(c.source_wide))
    console.print(t)
    if report.source_findings:
        console.print("[bold]Findings for a whole source[/] (said once here, not as a warning on each record)")
        for f in report.source_findings:
            console.print(f"  {_status(f.status)} {escape(_sanitize(f.source))}, all {f.records} records: "
                          f"{f.check}: {escape(_sanitize(f.summary))}")
    if report.suspects:
        shown = report.suspects[:10]
        console.print(f"[bold]Look at these first[/] ({len(report.suspects)} record(s) with a fail or a warning on "
                      "a bound, ordered by fails, then claim ÷ bound)")
        for s in shown:
            over = f", claim = {num(s.over_bound, 3)}× the bound" if s.over_bound is not None else ""
            console.print(f"  {s.rank}. {escape(_sanitize(s.label))}: {s.fails} fail, {s.warns} warn{over}")
            if s.bound:
                console.print(f"[dim]      bound: {escape(_sanitize(s.bound))}[/]")
            for r in s.reasons[:3]:
                console.print(f"[dim]      {escape(_sanitize(r))}[/]")
        if len(report.suspects) > len(shown):
            console.print(f"  … {len(report.suspects) - len(shown)} more in --json")
    for p in report.skipped:
        field = f"field {escape(_sanitize(p.field))}: " if p.field else ""
        console.print(f"[red]skipped[/] {escape(_sanitize(p.file))}: record {escape(str(p.index))}: "
                      f"{field}{escape(_sanitize(p.message))}")
    if report.unchecked:
        console.print(f"[bold yellow]Not checked[/] ({len(report.unchecked)}: a check that applies "
                      "lacked a fact; nothing is said about these claims)")
        for line in report.unchecked[:RANK_SHOWN]:
            console.print(f"  {escape(_sanitize(line))}")
        if len(report.unchecked) > RANK_SHOWN:
            console.print(f"  … {len(report.unchecked) - RANK_SHOWN} more in --json")
    verdict = {0: "[green]no record fails[/]", EXIT_AUDIT_FAIL: "[bold red]at least one record fails[/]"
               + (" (and some checks could not run, listed above)" if report.unchecked else ""),
               2: "[red]no record fails, but some were skipped as malformed[/]",
               EXIT_AUDIT_INCOMPLETE: "[yellow]no record fails the checks that ran, but not all checks "
                                      "ran (listed above)[/]"}[report.exit_code]
    console.print(f"exit {report.exit_code}: {verdict}")


def _cell(v: object) -> str:
    """A knob's value for the table: a missing one reads "not given", never Python's ``None``."""
    return "not given" if v is None else str(v)


def render_diff(console: Console, d: DiffResult) -> None:
    """A7: the verdict first, then every knob, then the ratio."""
    console.print(f"{_status(d.verdict.status)} {escape(d.verdict.summary)}")
    t = Table(title_justify="left")
    for col in ("knob", "A: " + d.a_label, "B: " + d.b_label, "differs"):
        t.add_column(escape(col))
    for k in d.knobs:
        mark = ("[bold red]yes[/]" if k.matters else "[yellow]yes[/]") if k.differs else ""
        t.add_row(k.name, escape(_sanitize(_cell(k.a))), escape(_sanitize(_cell(k.b))), mark)
    console.print(t)
    for line in d.verdict.arithmetic:
        if line.startswith("ratio"):
            console.print(escape(line))


def render_explain(console: Console, e: CheckExplanation) -> None:
    """``--explain CHECK``: title, the text for users, then each constant."""
    console.print(f"[bold]{e.check} — {escape(e.title)}[/]\n")
    console.print(escape(e.text))
    if e.constants:
        console.print("\n[bold]constants[/]")
        for k, v in e.constants.items():
            console.print(f"  {k} = {escape(repr(v))}")


def _line(console: Console, text: str) -> None:
    """One plain line: no markup read from a record's text, control characters escaped, never
    wrapped (a path or a knob split over two lines cannot be copied or searched)."""
    console.print(plain(text), markup=False, highlight=False, soft_wrap=True)


def render_saved(got: FetchResult) -> None:
    """The one stderr line saying where a downloaded record file was saved (``audit URL``)."""
    from tokcaliper.report.output import stderr

    stderr.print(plain(f"tokcaliper: saved {got.url} ({got.size_bytes} bytes, sha256 {got.sha256[:12]}) "
                       f"to {got.path}"), markup=False, highlight=False)


def render_plan(console: Console, p: AttributionPlan) -> None:
    """``diff --plan``: the file written with its arms and runs per arm, each knob A → B, the
    gaps no flag closes, and the two commands to run next."""
    _line(console, f"wrote {p.path}: {len(p.arms)} arms ({', '.join(p.arms)}), {p.runs_per_arm} runs per arm "
                   f"({p.runs_per_arm_source})")
    for k in p.knobs:
        _line(console, f"  knob {k.knob}: {k.a} → {k.b}")
    for g in p.gaps:
        _line(console, f"  gap: {g} (arm B is a TODO until then)")
    if p.kind == "switch":
        _line(console, "  TODO: the records have no launch commands; fill each arm's `switch` command before running")
    _line(console, f"run it: tokcaliper experiment run {p.path}; then: tokcaliper attribute EXPERIMENT_ID")
    if not p.comparable:
        _line(console, f"exit {EXIT_NOT_COMPARABLE}: the records are not comparable as they stand (as `diff` says); "
                       "the plan measures what separates them")


def _signed(log_effect: float) -> str:
    return percent(math.exp(log_effect) - 1, signed=True)


def render_attribution(console: Console, res: Attribution) -> None:
    """``attribute``: each arm's mean (n, CV), each knob's signed contribution with its CI, the
    unexplained residual and the total B/A (percent, from the log-ratios), then the closing lines."""
    level = f"{(1 - res.alpha) * 100:g}% CI"
    _line(console, f"attribution of {res.metric} in experiment {res.experiment} (log-ratios, Welch {level})")
    for arm, s in res.arms.items():
        _line(console, f"  arm {arm}: mean {num(s.mean, 4)} (n={s.n}, CV {percent(s.cv)})")
    width = max(len(c.knob) for c in [*res.contributions, res.residual, res.total])
    width = max(width, len("unexplained"), len("total B/A"))

    def row(name: str, c: Contribution, note: str = "") -> None:
        _line(console, f"  {name:<{width}}  {_signed(c.log_effect)}  [{_signed(c.ci_low)}, {_signed(c.ci_high)}]"
                       + note)

    for c in res.contributions:
        row(c.knob, c)
    row("unexplained", res.residual, "  (B/A minus the knobs: interactions and knobs no flag set)")
    row("total B/A", res.total)
    console.print()
    for line in res.closing:
        _line(console, line)
