"""CLI: ``tokcaliper export`` — an experiment's or a session's runs as CSV, Parquet or JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app
from tokcaliper.errors import InputError


@app.command()
def export(
    experiment: Annotated[Optional[str], typer.Argument(help="Experiment id (see `tokcaliper experiment list`).")] = None,
    session: Annotated[Optional[str], typer.Option(help="Export this session's runs instead (bench --session).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="csv, parquet (needs the parquet extra) or json.")] = "csv",
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Path prefix of the files written (default tokcaliper-ID).")] = None,
    db: Annotated[Path, typer.Option(help=DB_HELP)] = Path("tokcaliper.db"),
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Write per-run, per-sample and per-request tables (columns and units: docs/export.md).

    The samples table is what `compare --csv` reads: pairs are the experiment's blocks.
    """
    from tokcaliper.experiment.analysis import comparison_metrics
    from tokcaliper.experiment.export import export_tables
    from tokcaliper.experiment.spec import ExperimentSpec
    from tokcaliper.report.export import write_export
    from tokcaliper.report.output import emit
    from tokcaliper.store import Store

    if (experiment is None) == (session is None):
        raise InputError("give an experiment id or --session NAME (one of them)")
    with Store(db, create=False) as store:
        if experiment is not None:
            row = store.get_experiment(experiment)
            spec = ExperimentSpec.model_validate(row.spec)
            runs = store.session_runs(row.id, with_requests=True)
            tables = export_tables(runs, source=f"experiment {row.id}", arms=[a.name for a in spec.arms],
                                   n_arms=len(spec.arms), order=spec.order,
                                   metrics=comparison_metrics(spec.metric))
            name = row.id
        else:
            runs = store.session_runs(session, with_requests=True)  # type: ignore[arg-type]
            if not runs:
                raise InputError(f"no runs in session {session!r} (see `tokcaliper runs`)")
            tables = export_tables(runs, source=f"session {session}")
            name = str(session)
        from tokcaliper.cli.runs import warn_damaged

        warn_damaged(store)
    paths = write_export(tables, output or Path(f"tokcaliper-{name}"), fmt)
    payload = {"source": tables.source, "format": fmt, "files": [str(p) for p in paths],
               "runs": len(tables.runs), "samples": len(tables.samples),
               "requests": len(tables.requests)}

    def render(console) -> None:  # type: ignore[no-untyped-def]
        console.print(f"{tables.source}: {len(tables.runs)} runs, {len(tables.samples)} samples, "
                      f"{len(tables.requests)} requests", markup=False)
        for p in paths:
            console.print(f"  wrote {p}", markup=False)

    emit(payload, json_out, render)
