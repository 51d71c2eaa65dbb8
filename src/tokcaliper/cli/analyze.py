"""CLI: ``tokcaliper analyze`` — one cloud or clumps, their cause, drift; adjusted comparison.

Thin: read the runs (stored runs or a CSV with one row per run), call
:func:`tokcaliper.stats.spread.analyze_values`, :func:`tokcaliper.stats.gates.gate_runs`
and :func:`tokcaliper.stats.adjust.adjusted_comparison`, render as text or JSON.
Methods: docs/analyze.md.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from pydantic import BaseModel, Field
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app
from tokcaliper.errors import InputError
from tokcaliper.numbers import num, percent
from tokcaliper.report.output import emit
from tokcaliper.validation import finite_number

if TYPE_CHECKING:
    from tokcaliper.model.run import Run
    from tokcaliper.stats.adjust import AdjustedComparison
    from tokcaliper.stats.spread import Analysis
    from tokcaliper.stats.gates import RunGate

_MAX_CSV_ROWS = 100_000
_MAX_CSV_BYTES = 256 * 1024 * 1024


class RunTable(BaseModel):
    """Runs as a table: metric values, covariates, arm labels (internal to the CLI)."""

    source: str
    metric: str
    unit: str
    values: list[float]
    covariates: dict[str, list[float | None]]
    arms: list[str] | None = None
    run_ids: list[int] | None = None
    notes: list[str] = Field(default_factory=list)


class AnalyzeReport(BaseModel):
    """What ``analyze`` prints (``--json`` gives this document).

    Attributes:
        source: where the runs came from.
        analysis: clumps, ranked covariates, drift (None in adjusted mode).
        analysis_unflagged: the same without the runs the telemetry gate flagged
            (None when none was flagged or fewer than 5 runs remain).
        adjusted: the unadjusted and adjusted two-arm comparison (with --adjust-for).
        gates: telemetry gate per stored run (empty for a CSV).
        notes: runs excluded and covariates skipped, in words.
    """

    source: str
    analysis: Any = None
    analysis_unflagged: Any = None
    adjusted: Any = None
    gates: list[Any] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def _float_cell(text: str) -> float | None:
    t = text.strip()
    if t == "" or t.lower() in ("na", "nan", "null", "none", "-"):
        return None
    return float(t)


def read_csv_table(path: Path, value: str, arm_column: Optional[str], unit: Optional[str]) -> RunTable:
    """Read a CSV with one row per run (rows in run order).

    ``value`` is the metric column; ``arm_column`` (optional) holds arm labels;
    every other column whose cells are numbers (blank = unknown) is a covariate,
    others are skipped with a note.

    Raises:
        InputError: missing file or column, no rows, a non-numeric metric cell.
    """
    from tokcaliper.fileio import check_unique_columns, read_text

    text = read_text(path, _MAX_CSV_BYTES, what=f"--csv {path}")
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = reader.fieldnames or []
        check_unique_columns(header, f"--csv {path}")
        rows = []
        for i, row in enumerate(reader):
            if i >= _MAX_CSV_ROWS:
                raise InputError(f"--csv: {path} has more than {_MAX_CSV_ROWS:,} rows")
            rows.append(row)
    except csv.Error as e:
        raise InputError(f"--csv: {path} is not a readable CSV file: {e}") from None
    if value not in header:
        raise InputError(f"--csv: {path} has no column {value!r} (columns: {', '.join(header) or 'none'})")
    if arm_column is not None and arm_column not in header:
        raise InputError(f"--csv: {path} has no arm column {arm_column!r} (columns: {', '.join(header)})")
    if not rows:
        raise InputError(f"--csv: {path} has a header but no rows")
    values: list[float] = []
    for i, row in enumerate(rows, start=2):
        values.append(finite_number(row.get(value) or "", f"--csv: {path} line {i}: {value}"))
    covariates: dict[str, list[float | None]] = {}
    notes: list[str] = []
    for col in header:
        if col in (value, arm_column) or not col:
            continue
        try:
            covariates[col] = [_float_cell(r.get(col) or "") for r in rows]
        except ValueError:
            notes.append(f"column {col!r} is not numeric: not used as a covariate")
    if "position" not in covariates:
        covariates["position"] = [float(i) for i in range(len(rows))]
        notes.append("run order = row order of the CSV (add a 'position' column to override)")
    arms = None if arm_column is None else [(r.get(arm_column) or "").strip() for r in rows]
    return RunTable(source=f"{path} ({len(rows)} rows)", metric=value, unit=unit or value,
                    values=values, covariates=covariates, arms=arms, notes=notes)


def _stored_runs(db: Path, runs: Optional[str], session: Optional[str]) -> tuple[list[Run], str]:
    from tokcaliper.cli.plan import parse_run_ids
    from tokcaliper.store import Store

    with Store(db, create=False) as store:
        if runs is not None:
            ids = parse_run_ids(runs, "--runs")
            loaded = [store.get_run(i, with_requests=False) for i in ids]
            src = f"runs {runs} in {db}"
        else:
            assert session is not None
            loaded = store.session_runs(session)
            if not loaded:
                raise InputError(f"--session: no runs of session {session!r} in {db}")
            src = f"session {session} in {db}"
    return loaded, src


def metric_table(loaded: list[Run], source: str, metric: str, arm: Optional[str]) -> RunTable:
    """Metric values and covariates of stored runs, warm-up and invalid runs left out.

    Raises:
        InputError: unknown metric, a run without a value, no run left.
    """
    from tokcaliper.model.metrics import get_metric
    from tokcaliper.stats.covariates import run_covariates

    m = get_metric(metric)
    notes: list[str] = []
    kept = []
    for r in loaded:
        if r.warmup_run:
            notes.append(f"run {r.id}: warm-up run, left out")
        elif not r.valid:
            notes.append(f"run {r.id}: invalid ({r.invalid_reason or 'no reason recorded'}), left out")
        elif arm is not None and r.arm != arm:
            continue
        else:
            kept.append(r)
    if not kept:
        raise InputError(f"{source}: no valid run" + (f" of arm {arm!r}" if arm else "") + " to analyse")
    if all(r.position is not None for r in kept):
        kept.sort(key=lambda r: r.position)  # type: ignore[arg-type,return-value]
    values = []
    for r in kept:
        v = m.extract(r.metrics)
        if v is None:
            raise InputError(f"run {r.id} has no value for {metric}")
        values.append(float(v))
    return RunTable(source=source, metric=metric, unit=m.unit, values=values,
                    covariates=run_covariates(kept), arms=[r.arm for r in kept],
                    run_ids=[r.id for r in kept if r.id is not None], notes=notes)


def _signed2(x: float | None) -> str:
    """A signed correlation or effect size to two decimals (``+0.94``); None → "—"."""
    return num(x, 2, min_decimals=2, signed=True)


def _render(rep: AnalyzeReport, console: Console) -> None:
    console.print(f"[bold]tokcaliper analyze[/bold] — {escape(rep.source)}")
    a: Analysis | None = rep.analysis
    if a is not None:
        console.print(escape(a.sentence))
        d = a.description
        cv = percent(d.cv)
        console.print(escape(f"all runs: n = {d.n}, mean {num(d.mean, 4)} {a.unit}, CV {cv}, "
                             f"min {num(d.min, 4)}, max {num(d.max, 4)}"))
        s = a.split
        for name, g in (("low", s.low), ("high", s.high)):
            gcv = percent(g.cv)
            console.print(escape(f"  {name} group: n = {g.n}, mean {num(g.mean, 4)}, CV {gcv}"))
        gap = ("" if s.gap_over_within_sd is None
               else f" = {num(s.gap_over_within_sd, 2, min_decimals=1)} within-group sd")
        console.print(escape(
            f"best split at {num(s.threshold, 4)}: gap {num(s.gap, 3)}{gap}; R² = {num(s.r2, 3, min_decimals=3)}, "
            f"p = {num(s.p, 2)} (Monte Carlo, {s.null_draws:,} normal samples of n = {s.n}; α/2 = {s.alpha:g})"))
        if a.covariates:
            t = Table(title="covariates, strongest first (Spearman ρ with the metric)", title_justify="left")
            for col in ("covariate", "measured", "n", "ρ", "p", "p (Holm)", "separates groups r"):
                t.add_column(col, justify="right" if col not in ("covariate", "measured") else "left")
            for r in a.covariates:
                t.add_row(escape(r.label), r.measured, str(r.n), _signed2(r.rho), num(r.p, 2),
                          num(r.p_holm, 2), _signed2(r.separation))
            console.print(t)
        for name, why in a.skipped_covariates.items():
            console.print(escape(f"not ranked: {name}: {why}"), style="dim")
        if a.drift is not None:
            dr = a.drift
            verdict = "drift" if dr.drifting else "no monotonic drift"
            console.print(escape(
                f"run order: {verdict} (Mann–Kendall S = {dr.s}, τ = {_signed2(dr.tau)}, p = {num(dr.p, 2)} "
                f"{dr.method}, α/2 = {dr.alpha:g}; Theil–Sen slope {num(dr.slope_per_run, 3, signed=True)} per run, "
                f"95% CI {num(dr.slope_ci95[0], 3, signed=True)} to {num(dr.slope_ci95[1], 3, signed=True)})"))
        for line in a.advice:
            console.print(f"[yellow]advice:[/yellow] {escape(line)}")
    adj: AdjustedComparison | None = rep.adjusted
    if adj is not None:
        console.print(escape(f"adjusted comparison of {adj.arms[1]} vs {adj.arms[0]} for {adj.covariate}:"))
        for line in adj.arithmetic:
            console.print(f"  {escape(line)}")
        for w in adj.warnings:
            console.print(f"[yellow]note:[/yellow] {escape(w)}")
    gates: list[RunGate] = rep.gates
    flagged = [g for g in gates if g.flagged]
    if gates:
        checked = sum(g.checked for g in gates)
        console.print(f"telemetry gate: {len(flagged)} of {checked} run(s) with telemetry flagged"
                      + ("" if checked == len(gates) else f" ({len(gates) - checked} without telemetry)"))
        for g in flagged:
            for r in g.reasons:
                console.print(f"  [red]flag[/red] run {g.run_id}: {escape(r.detail)}")
        if rep.analysis_unflagged is not None:
            console.print(escape(f"without the flagged run(s): {rep.analysis_unflagged.sentence}"))
    for note in rep.notes:
        console.print(escape(f"note: {note}"), style="dim")
    console.print("methods: docs/analyze.md (Engelman–Hartigan split, Spearman, Mann–Kendall, ANCOVA)",
                  style="dim")


@app.command("analyze")
def analyze_cmd(
    csv_file: Optional[Path] = typer.Option(None, "--csv", help="CSV with one row per run, in run order."),
    value: Optional[str] = typer.Option(None, "--value", help="CSV column with the metric (e.g. tok_s)."),
    runs: Optional[str] = typer.Option(None, "--runs", help="Stored run ids: 3,4,5 or 3-7."),
    session: Optional[str] = typer.Option(None, "--session", help="Every stored run of this session."),
    metric: str = typer.Option("aggregate_output_tok_s", "--metric",
                               help="Metric of stored runs (`tokcaliper metrics` lists them)."),
    arm: Optional[str] = typer.Option(None, "--arm", help="Only stored runs of this arm."),
    arm_column: Optional[str] = typer.Option(None, "--arm-column", help="CSV column with the arm label."),
    adjust_for: Optional[str] = typer.Option(
        None, "--adjust-for",
        help="Compare two arms adjusted for this covariate (measured at run start, e.g. sm_clock_start_mhz)."),
    linear: bool = typer.Option(False, "--linear", help="With --adjust-for: model the metric, not its log "
                                                        "(effect = difference instead of ratio)."),
    unit: Optional[str] = typer.Option(None, "--unit", help="Unit of the CSV value column, e.g. tok/s."),
    alpha: float = typer.Option(0.05, "--alpha", help="Family-wise level (split and trend at α/2 each)."),
    reference_clock: Optional[float] = typer.Option(
        None, "--reference-clock", help="Default GPU clock, MHz, for the telemetry gate "
                                        "(default: the highest clock seen over the runs)."),
    db: Path = typer.Option(Path("tokcaliper.db"), "--db", help=DB_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
) -> None:
    """One cloud or clumps? Which covariate explains them? Drift over run order? (METHODS.md M2)

    On n ≥ 5 runs of one configuration: the best two-group split and its test,
    covariates ranked by rank correlation, a Mann–Kendall trend test, and the
    telemetry gate of stored runs. With --adjust-for on two arms: the arm
    difference with and without adjusting for that covariate (ANCOVA).
    """
    sources = [x is not None for x in (csv_file, runs, session)]
    if sum(sources) != 1:
        raise InputError("give exactly one of --csv FILE, --runs IDS or --session ID")
    gates = []
    if csv_file is not None:
        if not value:
            raise InputError("--csv needs --value COLUMN (the metric column)")
        table = read_csv_table(csv_file, value, arm_column, unit)
        if arm is not None:
            if table.arms is None:
                raise InputError("--arm needs --arm-column with --csv")
            keep = [i for i, a in enumerate(table.arms) if a == arm]
            if not keep:
                raise InputError(f"--arm: no row with {arm_column} = {arm!r}")
            table = table.model_copy(update={
                "values": [table.values[i] for i in keep], "arms": [arm] * len(keep),
                "covariates": {k: [v[i] for i in keep] for k, v in table.covariates.items()}})
    else:
        if value is not None or arm_column is not None:
            raise InputError("--value and --arm-column are for --csv; stored runs use --metric and their arm")
        loaded, src = _stored_runs(db, runs, session)
        table = metric_table(loaded, src, metric, arm)
        from tokcaliper.stats.gates import gate_runs

        kept = {i for i in (table.run_ids or [])}
        gates = gate_runs([r for r in loaded if r.id in kept], reference_clock_mhz=reference_clock)
    notes = list(table.notes)
    if adjust_for is not None:
        from tokcaliper.stats.adjust import adjusted_comparison

        if table.arms is None:
            raise InputError("--adjust-for needs two arms: give --arm-column with --csv")
        if adjust_for not in table.covariates:
            raise InputError(f"--adjust-for: no covariate {adjust_for!r} "
                             f"(available: {', '.join(sorted(table.covariates)) or 'none'})")
        col = table.covariates[adjust_for]
        missing = [i for i, v in enumerate(col) if v is None]
        if missing:
            raise InputError(f"--adjust-for: {adjust_for} is unknown for {len(missing)} run(s) "
                             f"(first: row/run {missing[0] + 1})")
        from tokcaliper.stats.covariates import covariate_label

        if covariate_label(adjust_for)[1] == "during":
            notes.append(f"{adjust_for} is measured during the run: the arm may change it, "
                         "so the adjusted effect can be biased; prefer a start-of-run covariate")
        adj = adjusted_comparison(table.values, table.arms, [float(v) for v in col],  # type: ignore[arg-type]
                                  covariate_name=adjust_for, log=not linear, alpha=alpha)
        rep = AnalyzeReport(source=table.source, adjusted=adj, gates=gates, notes=notes)
    else:
        if table.arms is not None and len(set(table.arms)) > 1 and arm is None:
            arms = sorted(set(table.arms))
            raise InputError(f"{table.source} holds {len(arms)} arms ({', '.join(arms)}): analyse one "
                             "configuration at a time (--arm NAME), or compare two with --adjust-for COL")
        from tokcaliper.stats.spread import analyze_values

        a = analyze_values(table.values, table.covariates, metric=table.metric, unit=table.unit,
                           alpha=alpha)
        a_clean = None
        if any(g.flagged for g in gates):
            keep = [i for i, g in enumerate(gates) if not g.flagged]
            if len(keep) >= 5:
                a_clean = analyze_values([table.values[i] for i in keep],
                                         {k: [v[i] for i in keep] for k, v in table.covariates.items()},
                                         metric=table.metric, unit=table.unit, alpha=alpha)
            else:
                notes.append(f"only {len(keep)} unflagged run(s): no analysis without the flagged ones")
        rep = AnalyzeReport(source=table.source, analysis=a, analysis_unflagged=a_clean, gates=gates,
                            notes=notes)
    emit(rep, as_json, lambda console: _render(rep, console))
