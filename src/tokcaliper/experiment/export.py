"""Stored runs as flat tables for other tools (``tokcaliper export``, issue 19 item 4).

Three tables, each a list of rows (``column → value``) with a fixed column
order; the columns and their units are documented in ``docs/export.md``:

- ``runs``: one row per stored run — identity, validity, timing, and every
  metric of the registry (:data:`tokcaliper.model.metrics.METRICS`) under its
  registry name (the name carries the unit: ``_ms``, ``_tok_s``, ``_pct``…).
- ``samples``: the measured, valid runs in the long form ``arm, value, pair,
  position, metric`` that ``tokcaliper compare --csv`` reads. ``pair`` is the
  block of the run order (``block K``, :func:`tokcaliper.experiment.samples.samples_from_runs`),
  so the CSV pairs runs exactly as ``compare --experiment`` does; a block
  that lacks a valid run of any arm is left out of this table (a half pair
  would bias the ratio), as the experiment's own comparison leaves it out.
  Runs of a session (``bench --repeat``, no interleaving) carry no ``pair``.
- ``requests``: one row per request of every run (warm-up requests flagged),
  times in ms from the run's start.

Pure: runs in, rows out (:func:`export_tables`); :func:`export_from_store` reads
them from a store handed in; the files are written by :mod:`tokcaliper.report.export`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from tokcaliper.errors import InputError
from tokcaliper.model.metrics import METRICS, run_scalars
from tokcaliper.model.run import Run
from tokcaliper.model.warnings import Caveat

if TYPE_CHECKING:
    from tokcaliper.store import Store

__all__ = ["ExportSummary", "ExportTables", "REQUEST_COLUMNS", "RUN_COLUMNS", "SAMPLE_COLUMNS", "export_from_store",
           "export_summary", "export_tables"]

#: The ``runs`` table's identity columns, before one column per registry metric.
RUN_COLUMNS = ("run_id", "session", "arm", "repetition", "position", "block", "warmup_run",
               "valid", "invalid_reason", "started_at", "finished_at", "restart", "concurrency",
               "rate_rps", "max_tokens", "server_command")

#: The ``samples`` table: exactly the columns ``compare --csv`` accepts.
SAMPLE_COLUMNS = ("arm", "value", "pair", "position", "metric")

#: The ``requests`` table. Times in ms from the run's start (``start_ms``) or
#: from the request's start (the rest); ``itl_ms`` is the list of token gaps.
REQUEST_COLUMNS = ("run_id", "arm", "position", "index", "warmup", "start_ms", "ttft_ms",
                   "e2e_ms", "output_tokens", "prompt_tokens", "requested_prompt_tokens",
                   "requested_output_tokens", "token_count_source", "itl_n", "itl_ms",
                   "error_class", "error")


class ExportTables(BaseModel):
    """The tables of one experiment or session.

    Attributes:
        source: ``"experiment ID"`` or ``"session NAME"``.
        runs, samples, requests: rows, each a dict with the columns of
            :data:`RUN_COLUMNS` (+ metric names), :data:`SAMPLE_COLUMNS` and
            :data:`REQUEST_COLUMNS`, in that order; ``None`` where a value is
            missing.
        metric_columns: the registry metrics that follow :data:`RUN_COLUMNS`.
    """

    source: str
    runs: list[dict[str, Any]]
    samples: list[dict[str, Any]]
    requests: list[dict[str, Any]]
    metric_columns: list[str]

    def table(self, name: str) -> tuple[list[str], list[dict[str, Any]]]:
        """``(columns, rows)`` of table ``name`` (``runs``, ``samples`` or ``requests``).

        Raises:
            KeyError: an unknown table name.
        """
        columns = {"runs": [*RUN_COLUMNS, *self.metric_columns], "samples": list(SAMPLE_COLUMNS),
                   "requests": list(REQUEST_COLUMNS)}[name]
        return columns, getattr(self, name)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def _run_row(run: Run, n_arms: int | None) -> dict[str, Any]:
    block = None if n_arms is None or run.position is None else run.position // n_arms
    row: dict[str, Any] = {
        "run_id": run.id, "session": run.session, "arm": run.arm, "repetition": run.repetition,
        "position": run.position, "block": block, "warmup_run": run.warmup_run, "valid": run.valid,
        "invalid_reason": run.invalid_reason, "started_at": run.started_at,
        "finished_at": run.finished_at, "restart": run.restart,
        "concurrency": run.config.concurrency, "rate_rps": run.config.rate_rps,
        "max_tokens": run.config.max_tokens, "server_command": run.server_command,
    }
    row.update(run_scalars(run.metrics))
    return row


def _request_rows(run: Run) -> list[dict[str, Any]]:
    rows = []
    for r in run.requests:
        rows.append({
            "run_id": run.id, "arm": run.arm, "position": run.position, "index": r.index,
            "warmup": r.warmup, "start_ms": _ms(r.start_s), "ttft_ms": _ms(r.ttft_s),
            "e2e_ms": _ms(r.e2e_s), "output_tokens": r.output_tokens, "prompt_tokens": r.prompt_tokens,
            "requested_prompt_tokens": r.requested_prompt_tokens,
            "requested_output_tokens": r.requested_output_tokens,
            "token_count_source": r.token_count_source, "itl_n": len(r.itl_s),
            "itl_ms": [g * 1000.0 for g in r.itl_s], "error_class": r.error_class, "error": r.error,
        })
    return rows


def _sample_rows(runs: Sequence[Run], arms: Sequence[str], n_arms: int | None, paired: bool,
                 metrics: Sequence[str]) -> list[dict[str, Any]]:
    from tokcaliper.experiment.analysis import analysed_runs

    experiment = n_arms is not None
    measured = analysed_runs(list(runs)) if experiment else [
        r for r in runs if not r.warmup_run and r.valid]
    rows = []
    for name in metrics:
        extract = METRICS[name].extract
        values = [(r, v) for r in measured if (v := extract(r.metrics)) is not None]
        if not paired:  # a session or a blocked order: independent runs, in run order
            rows += [{"arm": r.arm, "value": v, "pair": None,
                      "position": r.position if experiment else r.repetition, "metric": name}
                     for r, v in values]
            continue
        blocks: dict[int, dict[str, tuple[Run, float]]] = {}
        for r, v in values:
            blocks.setdefault(r.position // n_arms, {})[r.arm] = (r, v)  # type: ignore[operator]
        for k in sorted(blocks):
            if all(a in blocks[k] for a in arms):
                rows += [{"arm": a, "value": blocks[k][a][1], "pair": f"block {k}",
                          "position": blocks[k][a][0].position, "metric": name} for a in arms]
    return rows


def export_tables(runs: Sequence[Run], *, source: str, arms: Sequence[str] | None = None,
                  n_arms: int | None = None, order: str | None = None,
                  metrics: Sequence[str] | None = None) -> ExportTables:
    """The ``runs``, ``samples`` and ``requests`` tables of ``runs``.

    Args:
        runs: the runs, in execution order (with their requests, for the
            ``requests`` table).
        source: what they are, in words (``"experiment 3f2a"``).
        arms: the experiment's arms in file order (``None`` for a session:
            the arms found, in order of appearance).
        n_arms: the experiment's number of arms (``None`` for a session); with
            ``order`` other than ``"blocked"`` the samples are paired by block.
        order: the experiment's run order name.
        metrics: registry names for the ``samples`` table (default: every
            registry metric some run has a value of).

    Returns:
        :class:`ExportTables`.

    Raises:
        KeyError: a name in ``metrics`` that is not in the registry (the CLI
            validates names first).
    """
    names = list(arms) if arms is not None else list(dict.fromkeys(r.arm for r in runs))
    run_rows = [_run_row(r, n_arms) for r in runs]
    present = [m for m in METRICS if any(row[m] is not None for row in run_rows)]
    paired = n_arms is not None and order != "blocked"
    return ExportTables(
        source=source, runs=run_rows,
        samples=_sample_rows(runs, names, n_arms, paired,
                             list(metrics) if metrics is not None else present),
        requests=[row for r in runs for row in _request_rows(r)],
        metric_columns=list(METRICS),
    )


def export_from_store(store: Store, experiment: str | None, session: str | None) -> tuple[ExportTables, str]:
    """The tables of an experiment (paired as its comparison pairs them) or of a session, read
    from ``store``, and the name the files are called after (the experiment's id or the session).

    Raises:
        InputError: neither or both of ``experiment`` and ``session``; no such experiment;
            a session without runs.
    """
    from tokcaliper.experiment.analysis import comparison_metrics
    from tokcaliper.experiment.spec import ExperimentSpec

    if (experiment is None) == (session is None):
        raise InputError("give an experiment id or --session NAME (one of them)")
    if experiment is not None:
        row = store.get_experiment(experiment)
        spec = ExperimentSpec.model_validate(row.spec)
        runs = store.session_runs(row.id, with_requests=True)
        tables = export_tables(runs, source=f"experiment {row.id}", arms=[a.name for a in spec.arms],
                               n_arms=len(spec.arms), order=spec.order, metrics=comparison_metrics(spec.metric))
        return tables, row.id
    runs = store.session_runs(str(session), with_requests=True)
    if not runs:
        raise InputError(f"no runs in session {session!r} (see `tokcaliper runs`)")
    return export_tables(runs, source=f"session {session}"), str(session)


class ExportSummary(BaseModel):
    """``tokcaliper export``: what was written.

    Attributes:
        source: ``"experiment ID"`` or ``"session NAME"``. format: ``csv``, ``parquet`` or ``json``.
        files: the paths written, in table order. runs, samples, requests: rows per table.
        warnings: the damaged runs the reads skipped (not exported).
    """

    source: str
    format: str
    files: list[str]
    runs: int
    samples: int
    requests: int
    warnings: list[Caveat] = Field(default_factory=list)


def export_summary(tables: ExportTables, paths: Sequence[Path], fmt: str,
                   warnings: Sequence[Caveat] = ()) -> ExportSummary:
    """The :class:`ExportSummary` of ``tables`` written to ``paths`` as ``fmt``."""
    return ExportSummary(source=tables.source, format=fmt, files=[str(p) for p in paths], runs=len(tables.runs),
                         samples=len(tables.samples), requests=len(tables.requests), warnings=list(warnings))
