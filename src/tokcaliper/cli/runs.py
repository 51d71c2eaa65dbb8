"""CLI: ``tokcaliper runs`` and ``tokcaliper show`` — read the results database.

Thin: the store builds the result (:meth:`tokcaliper.store.Store.run_list`,
:func:`tokcaliper.model.stored.shown_run`), :mod:`tokcaliper.report.run_view`
renders it, the warning sink prints the damaged runs skipped.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tokcaliper.cli._app import DB_HELP, JSON_HELP, WIDE_HELP, app
from tokcaliper.errors import InputError
from tokcaliper.model.stored import damaged_caveats, run_caveats, shown_run
from tokcaliper.report.output import emit, warn
from tokcaliper.report.run_view import print_record, render_run_detail, render_run_list
from tokcaliper.store import Store


def warn_damaged(store: Store) -> None:
    """One warning (the sink's line, stderr) per damaged run the reads skipped (the rest are shown)."""
    for c in damaged_caveats(store.damaged):
        warn(c)


def open_existing(db: Path) -> Store:
    """Open ``db`` for reading; a missing file is an input error, not a new database."""
    return Store(db, create=False)


@app.command()
def runs(
    session: Annotated[Optional[str], typer.Option(help="Only runs of this session.")] = None,
    last: Annotated[Optional[int], typer.Option(help="Only the last N runs.")] = None,
    db: Annotated[Path, typer.Option(help=DB_HELP)] = Path("tokcaliper.db"),
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """List stored runs with their headline figures."""
    if last is not None and last < 1:
        raise InputError(f"--last must be ≥ 1, got {last}")
    with open_existing(db) as store:
        result = store.run_list(session=session, limit=last)
    emit(result, json_out, lambda console: render_run_list(console, result))


@app.command()
def show(
    run_id: Annotated[int, typer.Argument(help="Run id (see `tokcaliper runs`).")],
    requests: Annotated[bool, typer.Option(help="Include every request record in --json output.")] = False,
    db: Annotated[Path, typer.Option(help=DB_HELP)] = Path("tokcaliper.db"),
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
    wide: Annotated[bool, typer.Option("--wide", help=WIDE_HELP)] = False,
    record: Annotated[bool, typer.Option(
        "--record", help="Print the run as an audit record (JSON; `tokcaliper audit FILE` reads it and "
                         "gives the same roofline as the run's own, docs/roofline.md).")] = False,
) -> None:
    """Print one stored run: provenance, configuration, metrics and latency percentiles."""
    if record:
        from tokcaliper.audit.run_roofline import run_record

        with open_existing(db) as store:
            run = store.get_run(run_id, with_requests=False)
        print_record(run_record(run))
        return
    with_requests = requests or not json_out
    with open_existing(db) as store:
        run = store.get_run(run_id, with_requests=with_requests)
    shown = shown_run(run, include_requests=with_requests)
    emit(shown, json_out, lambda console: render_run_detail(console, shown, wide=wide),
         warnings=run_caveats([run]))
