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
    from tokcaliper.experiment.export import export_from_store, export_summary
    from tokcaliper.model.stored import damaged_caveats
    from tokcaliper.report.export import render_export, write_export
    from tokcaliper.report.output import emit
    from tokcaliper.store import Store

    if (experiment is None) == (session is None):
        raise InputError("give an experiment id or --session NAME (one of them)")
    with Store(db, create=False) as store:
        tables, name = export_from_store(store, experiment, session)
        damaged = damaged_caveats(store.damaged)
    paths = write_export(tables, output or Path(f"tokcaliper-{name}"), fmt)
    result = export_summary(tables, paths, fmt, warnings=damaged)
    emit(result, json_out, lambda console: render_export(console, result))
