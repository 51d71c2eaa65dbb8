"""``tokcaliper analyze``: a table of runs → one cloud or clumps, their cause, drift; or the
covariate-adjusted comparison of two arms (METHODS.md M2; methods: docs/analyze.md).

A :class:`RunTable` (metric values, covariates, arm labels, one row per run in run
order) comes from a user's CSV (:func:`read_csv_table`, read through
:func:`tokcaliper.fileio.read_text`) or from stored runs (:func:`metric_table`,
pure over :class:`~tokcaliper.model.run.Run`; the store itself is read by
:mod:`tokcaliper.experiment.stored_runs`). :func:`analyze_table` turns it into the
command's result, :class:`AnalyzeReport`: :func:`tokcaliper.stats.spread.analyze_values`
(with and without the runs the telemetry gate flagged) or
:func:`tokcaliper.stats.adjust.adjusted_comparison`.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from tokcaliper.errors import InputError
from tokcaliper.model import warnings as W
from tokcaliper.model.run import Run
from tokcaliper.model.warnings import Caveat
from tokcaliper.stats.adjust import AdjustedComparison
from tokcaliper.stats.gates import RunGate
from tokcaliper.stats.spread import Analysis
from tokcaliper.validation import finite_number

__all__ = ["MAX_CSV_BYTES", "MAX_CSV_ROWS", "MIN_UNFLAGGED", "AnalyzeReport", "RunTable", "analyze_csv",
           "analyze_table", "metric_table", "read_csv_table", "select_arm"]

#: Most rows read from a ``--csv`` file.
MAX_CSV_ROWS = 100_000
#: Largest ``--csv`` file read (bytes).
MAX_CSV_BYTES = 256 * 1024 * 1024
#: Fewest unflagged runs the analysis is repeated on (the split and trend tests need 5).
MIN_UNFLAGGED = 5


class RunTable(BaseModel):
    """Runs as a table, in run order.

    Attributes:
        source: where the runs came from, in words (``"runs.csv (12 rows)"``).
        metric / unit: the analysed metric (or CSV column) and its unit.
        values: the metric per run, in ``unit``.
        covariates: name → value per run (``None``: unknown for that run).
        arms: arm label per run (``None``: a CSV without an arm column).
        run_ids: stored run ids per row (``None`` for a CSV).
        notes: runs left out and columns skipped, in words.
    """

    source: str
    metric: str
    unit: str
    values: list[float]
    covariates: dict[str, list[float | None]]
    arms: list[str] | None = None
    run_ids: list[int] | None = None
    notes: list[str] = Field(default_factory=list)


class AnalyzeReport(BaseModel):
    """What ``tokcaliper analyze`` prints (``--json`` gives this document).

    Attributes:
        source: where the runs came from.
        analysis: clumps, ranked covariates, drift (``None`` with ``--adjust-for``).
        analysis_unflagged: the same without the runs the telemetry gate flagged
            (``None`` when none was flagged or fewer than :data:`MIN_UNFLAGGED` remain).
        adjusted: the unadjusted and adjusted two-arm comparison (``--adjust-for``).
        gates: the telemetry gate per stored run, in the table's row order (empty for a CSV).
        notes: runs excluded and covariates skipped, in words.
        warnings: caveats (adjusting for a covariate measured during the run, one that differs
            between the arms or explains little: the adjusted comparison's own).
    """

    source: str
    analysis: Analysis | None = None
    analysis_unflagged: Analysis | None = None
    adjusted: AdjustedComparison | None = None
    gates: list[RunGate] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    warnings: list[Caveat] = Field(default_factory=list)


def _float_cell(text: str) -> float | None:
    t = text.strip()
    if t == "" or t.lower() in ("na", "nan", "null", "none", "-"):
        return None
    return float(t)


def read_csv_table(path: Path, value: str, arm_column: str | None = None, unit: str | None = None) -> RunTable:
    """Read a CSV with one row per run (rows in run order).

    ``value`` is the metric column; ``arm_column`` (optional) holds arm labels;
    every other column whose cells are numbers (blank, ``na``, ``-`` = unknown) is a
    covariate, others are skipped with a note. Without a ``position`` column the
    row order is the run order (noted).

    Raises:
        InputError: missing, unreadable or too large file (:data:`MAX_CSV_BYTES`, more than
            :data:`MAX_CSV_ROWS` rows); a missing column, a column given twice, no rows,
            a metric cell that is not a finite number (naming its line).
    """
    from tokcaliper.fileio import check_unique_columns, read_text

    text = read_text(path, MAX_CSV_BYTES, what=f"--csv {path}")
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        header = reader.fieldnames or []
        check_unique_columns(header, f"--csv {path}")
        rows = []
        for i, row in enumerate(reader):
            if i >= MAX_CSV_ROWS:
                raise InputError(f"--csv: {path} has more than {MAX_CSV_ROWS:,} rows")
            rows.append(row)
    except csv.Error as e:
        raise InputError(f"--csv: {path} is not a readable CSV file: {e}") from None
    if value not in header:
        raise InputError(f"--csv: {path} has no column {value!r} (columns: {', '.join(header) or 'none'})")
    if arm_column is not None and arm_column not in header:
        raise InputError(f"--csv: {path} has no arm column {arm_column!r} (columns: {', '.join(header)})")
    if not rows:
        raise InputError(f"--csv: {path} has a header but no rows")
    values = [finite_number(row.get(value) or "", f"--csv: {path} line {i}: {value}")
              for i, row in enumerate(rows, start=2)]
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


def select_arm(table: RunTable, arm: str, arm_column: str | None = None) -> RunTable:
    """The rows of ``table`` whose arm label is ``arm`` (a CSV's ``--arm``).

    Raises:
        InputError: the table has no arm labels, or no row of that arm.
    """
    if table.arms is None:
        raise InputError("--arm needs --arm-column with --csv")
    keep = [i for i, a in enumerate(table.arms) if a == arm]
    if not keep:
        raise InputError(f"--arm: no row with {arm_column or 'arm'} = {arm!r}")
    return table.model_copy(update={
        "values": [table.values[i] for i in keep], "arms": [arm] * len(keep),
        "covariates": {k: [v[i] for i in keep] for k, v in table.covariates.items()}})


def metric_table(runs: Sequence[Run], source: str, metric: str, arm: str | None = None) -> RunTable:
    """Metric values and covariates of stored runs; warm-up and invalid runs left out (noted).

    Rows are in run order: by position when every kept run has one, else as given.
    Covariates are :func:`tokcaliper.stats.covariates.run_covariates` of the kept runs.

    Raises:
        InputError: unknown metric, a run without a value, no run left.
    """
    from tokcaliper.model.metrics import get_metric
    from tokcaliper.stats.covariates import run_covariates

    m = get_metric(metric)
    notes: list[str] = []
    kept = []
    for r in runs:
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


def _adjusted(table: RunTable, adjust_for: str, linear: bool, alpha: float,
              gates: list[RunGate]) -> AnalyzeReport:
    from tokcaliper.stats.adjust import adjusted_comparison
    from tokcaliper.stats.covariates import covariate_label

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
    warnings = []
    if covariate_label(adjust_for)[1] == "during":
        warnings.append(W.COVARIATE_DURING_RUN.caveat(covariate=adjust_for))
    adj = adjusted_comparison(table.values, table.arms, [float(v) for v in col],  # type: ignore[arg-type]
                              covariate_name=adjust_for, log=not linear, alpha=alpha)
    return AnalyzeReport(source=table.source, adjusted=adj, gates=gates, notes=list(table.notes),
                         warnings=[*warnings, *adj.warnings])


def analyze_table(table: RunTable, *, gates: Sequence[RunGate] = (), arm: str | None = None,
                  adjust_for: str | None = None, linear: bool = False, alpha: float = 0.05) -> AnalyzeReport:
    """The ``analyze`` result of ``table``.

    Without ``adjust_for``: :func:`tokcaliper.stats.spread.analyze_values` of one
    configuration, and again without the runs ``gates`` flagged when at least
    :data:`MIN_UNFLAGGED` remain. With ``adjust_for`` (a covariate column): the two arms
    compared with and without adjusting for it (ANCOVA,
    :func:`tokcaliper.stats.adjust.adjusted_comparison`; ``linear`` models the metric, not
    its log).

    Args:
        table: the runs. gates: the telemetry gate per row of ``table`` (stored runs), or empty.
        arm: the arm the table was cut to, if any (a table of several arms needs one).
        alpha: family-wise level (split and trend at α/2 each); the CIs' 1 − level.

    Raises:
        InputError: several arms without ``arm`` or ``adjust_for``; an unknown or partly
            unknown ``adjust_for`` covariate; fewer than 5 runs; everything the stats refuse.
    """
    gates = list(gates)
    if gates and len(gates) != len(table.values):
        raise InputError(f"{len(gates)} gated runs for {len(table.values)} rows of {table.source}")
    if adjust_for is not None:
        return _adjusted(table, adjust_for, linear, alpha, gates)
    if table.arms is not None and len(set(table.arms)) > 1 and arm is None:
        arms = sorted(set(table.arms))
        raise InputError(f"{table.source} holds {len(arms)} arms ({', '.join(arms)}): analyse one "
                         "configuration at a time (--arm NAME), or compare two with --adjust-for COL")
    from tokcaliper.stats.spread import analyze_values

    notes = list(table.notes)
    a = analyze_values(table.values, table.covariates, metric=table.metric, unit=table.unit, alpha=alpha)
    a_clean = None
    if any(g.flagged for g in gates):
        keep = [i for i, g in enumerate(gates) if not g.flagged]
        if len(keep) >= MIN_UNFLAGGED:
            a_clean = analyze_values([table.values[i] for i in keep],
                                     {k: [v[i] for i in keep] for k, v in table.covariates.items()},
                                     metric=table.metric, unit=table.unit, alpha=alpha)
        else:
            notes.append(f"only {len(keep)} unflagged run(s): no analysis without the flagged ones")
    return AnalyzeReport(source=table.source, analysis=a, analysis_unflagged=a_clean, gates=gates, notes=notes)


def analyze_csv(path: Path, value: str, *, arm_column: str | None = None, unit: str | None = None,
                arm: str | None = None, adjust_for: str | None = None, linear: bool = False,
                alpha: float = 0.05) -> AnalyzeReport:
    """``analyze --csv``: :func:`read_csv_table`, cut to ``arm`` (:func:`select_arm`), then
    :func:`analyze_table` (no telemetry gate: a CSV has no telemetry).

    Raises:
        InputError: as :func:`read_csv_table`, :func:`select_arm` and :func:`analyze_table`.
    """
    table = read_csv_table(path, value, arm_column, unit)
    if arm is not None:
        table = select_arm(table, arm, arm_column)
    return analyze_table(table, arm=arm, adjust_for=adjust_for, linear=linear, alpha=alpha)
