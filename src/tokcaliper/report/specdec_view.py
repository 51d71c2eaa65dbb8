"""Text views of speculative-decoding results (``tokcaliper spec …``).

Renders the results of :mod:`tokcaliper.specdec` and of the sweep
(:mod:`tokcaliper.experiment.specdec_sweep`); computes nothing. Every figure
is shown with its n and CV (or its counts), and each verdict with its arithmetic.
Caveats (the "not the best buy" warning) are the results' ``warnings``, printed
on stderr by :func:`tokcaliper.report.output.emit`, not here.
Text that comes from the user or a server (table names, arm labels, failure
reasons, notes) is escaped, so brackets in it print as written, not as rich markup.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tokcaliper.experiment.specdec_sweep import SweepResult
from tokcaliper.numbers import num
from tokcaliper.report.compare_view import print_closing
from tokcaliper.report.text import esc
from tokcaliper.report.output import fmt, pct, stderr
from tokcaliper.model.specdec import AcceptanceMetrics
from tokcaliper.specdec.log_file import LogAcceptance
from tokcaliper.specdec.runs import AcceptanceAcrossRuns
from tokcaliper.specdec.table import WindowTable
from tokcaliper.specdec.table_file import WindowTables

__all__ = ["print_sweep_start", "render_log", "render_runs_acceptance", "render_sweep",
           "render_window_table", "render_window_tables"]


def _three(x: float | None) -> str:
    """AL and acceptance per position to three decimals (``0.647``)."""
    return num(x, 3, min_decimals=3)


def _t(row_t) -> str:  # type: ignore[no-untyped-def]
    if row_t is None:
        return "—"
    return f"{num(row_t.t, 2, min_decimals=2, signed=True)} (p={num(row_t.p, 2)})"


def render_window_table(console: Console, table: WindowTable) -> None:
    """The per-k table, bests, arithmetic, proxy note and limit (its warning: ``table.warnings``)."""
    title = f"draft-window table{f' — {escape(table.name)}' if table.name else ''}"
    t = Table(title=title, title_justify="left")
    for col in ("k", "AL", "AL CV (n)", "acceptance rate", "AL/(k+1)", "vs best", "throughput tok/s (CV)",
                "Welch t AL vs prev k", "notes"):
        t.add_column(col, justify="right" if col != "notes" else "left")
    for r in table.rows:
        if r.failed is not None:
            t.add_row(str(r.k), "—", "—", "—", "—", "—", "—", "—", escape(f"failed to start: {r.failed}"))
            continue
        n = f" (n={r.al_n})" if r.al_n else ""
        cv = f"{pct(r.al_cv)}{n}" if r.al_cv is not None else (n.strip(" ()") or "—")
        tp = "—" if r.throughput is None else f"{fmt(r.throughput, 4)} ({pct(r.throughput_cv)})"
        t.add_row(str(r.k), fmt(r.al, 4), cv, pct(r.acceptance_rate), _three(r.al_per_position),
                  f"×{num(r.relative_to_best, 2, min_decimals=2)}" if r.relative_to_best else "—", tp,
                  _t(r.welch_al_vs_prev),
                  escape("; ".join(r.notes)))
    console.print(t)
    console.print(f"best k by AL: {table.best_k_by_al}; best k by AL/(k+1): {table.best_k_by_al_per_position}")
    for line in table.arithmetic:
        console.print(f"  {escape(line)}")
    if table.uncertainty:
        console.print(f"uncertainty: {escape(table.uncertainty)}")
    console.print(f"proxy: {escape(table.cost_proxy)}")
    console.print(f"limit: {escape(table.limit)}")


def render_window_tables(console: Console, res: WindowTables) -> None:
    """``spec table``: each table of the file, a blank line between them."""
    for i, t in enumerate(res.tables):
        if i:
            console.print()
        render_window_table(console, t)


def render_log(console: Console, res: LogAcceptance) -> None:
    """``spec log``: the intervals read, the summed counts, AL with its arithmetic, the limit."""
    console.print(f"{len(res.windows)} interval(s) in {escape(res.source)}; "
                  f"accepted {res.accepted} / drafted {res.drafted}")
    m = res.metrics
    if m is None:
        console.print("AL not recoverable: the log lines give no mean acceptance length")
    else:
        for line in m.arithmetic:
            console.print(f"  {escape(line)}")
        if m.per_position:
            console.print("  per-position acceptance: " + ", ".join(_three(p) for p in m.per_position))
        console.print(f"  ({escape(m.counts.source)})")
    console.print(f"limit: {escape(res.limit)}")


def print_sweep_start(exp_id: str, runs: int, repeat: int, order: str, db: object) -> None:
    """The line on stderr that names a new sweep's experiment before its runs start."""
    stderr.print(f"sweep experiment {exp_id}: {runs} runs ({repeat} per k, order {order}); stored in {db}",
                 markup=False)


def render_sweep(console: Console, res: SweepResult) -> None:
    """``spec sweep``: the M7 table, where every run is, then the closing lines."""
    render_window_table(console, res.table)
    console.print(f"experiment {res.experiment}: `tokcaliper experiment show {res.experiment}` has every "
                  "run, outcome and the comparison of each k against the first", markup=False)
    if res.closing:
        print_closing(console, res.closing)


def _metrics_line(m: AcceptanceMetrics | None) -> str:
    if m is None or m.al is None:
        return "—"
    return (f"AL {num(m.al, 4, min_decimals=4)}, rate {pct(m.acceptance_rate)}, k_eff {fmt(m.k_eff, 4)}, "
            f"AL/(k+1) {fmt(m.tokens_per_position, 4)} (drafts {m.counts.drafts:g}, drafted "
            f"{m.counts.draft_tokens:g}, accepted {m.counts.accepted:g})")


def render_runs_acceptance(console: Console, res: AcceptanceAcrossRuns) -> None:
    """Per-run acceptance, per-request distribution, flags, and mean/CV/MDE across runs."""
    for r in res.runs:
        console.print(f"run #{r.run_id} ({esc(r.server_kind or 'unknown server')}, arm {esc(r.arm)}): {esc(_metrics_line(r.metrics))}")
        if r.metrics is not None:
            for line in r.metrics.arithmetic:
                console.print(f"    {escape(line)}")
            if r.metrics.per_position:
                console.print("    per-position acceptance: " + ", ".join(_three(p) for p in r.metrics.per_position))
        if r.unavailable:
            console.print(f"    counters: {esc(r.unavailable)}")
        if r.request_al is not None:
            d = r.request_al
            console.print(f"    per request: AL mean {_three(d.mean)} (n={d.n}, CV {pct(d.cv)}, min {_three(d.min)}, "
                          f"max {_three(d.max)}) = output tokens ÷ target passes")
        if r.pooled_requests is not None and r.pooled_requests.al is not None:
            p = r.pooled_requests
            console.print(f"    requests summed: {p.output_tokens} tokens / {p.verify_steps} passes = AL {_three(p.al)}"
                          + (f", accepted {p.accepted}/{p.draft_tokens} = {pct(p.acceptance_rate)}"
                             if p.acceptance_rate is not None else ""))
        for f in r.red_flags:
            console.print(f"    [bold red]red flag:[/] {esc(f.finding)} → {esc(f.message)}")
    if res.by_arm:  # several arms: one summary each, never a pooled mean
        console.print(f"{len(res.by_arm)} arms among these runs: each is summarised on its own "
                      "(a mean over different windows or servers describes none of them)")
        for part in res.by_arm:
            _render_across(console, part, title=f"arm {part.arm}: across {len(part.runs)} run(s)")
    else:
        _render_across(console, res, title=f"across {len(res.runs)} run(s)")
    console.print(f"limit: {escape(res.limit)}")


def _render_across(console: Console, res: AcceptanceAcrossRuns, title: str) -> None:
    if res.metrics:
        t = Table(title=esc(title), title_justify="left")
        for col in ("metric", "n", "mean", "CV", "MDE (n per arm)"):
            t.add_column(col, justify="right" if col != "metric" else "left")
        for m in res.metrics:
            t.add_row(escape(m.name), str(m.n), fmt(m.mean, 4), pct(m.cv), pct(m.mde))
        console.print(t)
        console.print("MDE = 2·CV·√(2/n): smallest difference two arms of n runs each resolve (≈95%, quick formula).")
    if res.ruler:
        console.print(escape(res.ruler))
