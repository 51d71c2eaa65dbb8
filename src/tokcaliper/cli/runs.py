"""CLI: ``tokcaliper runs`` and ``tokcaliper show`` — read the results database."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.table import Table

from tokcaliper.cli._app import DB_HELP, JSON_HELP, WIDE_HELP, app
from tokcaliper.numbers import num
from tokcaliper.report.output import emit
from tokcaliper.report.run_view import render_run_detail
from tokcaliper.report.text import esc, plain
from tokcaliper.errors import InputError
from tokcaliper.store import Store


def warn_damaged(store: Store) -> None:
    """One stderr line per damaged run the reads skipped (the rest are shown)."""
    for d in store.damaged:
        print(f"tokcaliper: warning: {plain(d.reason)}; skipped", file=sys.stderr)


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
        rows = store.list_runs(session=session, limit=last)
        damaged = len(store.damaged)
        warn_damaged(store)

    def render(console) -> None:  # type: ignore[no-untyped-def]
        note = f" ({damaged} damaged, not listed: see the warnings)" if damaged else ""
        t = Table(title=f"{len(rows)} run(s) in {esc(db)}{note}", title_justify="left")
        # The measuring tool only when some run was imported (`tokcaliper import`): a column
        # that would read "tokcaliper" on every row is left out.
        tools = any(r.tool != "tokcaliper" for r in rows)
        for col in ("id", "session", "arm", "rep", *(("tool",) if tools else ()), "started (UTC)", "ok/failed",
                    "aggregate tok/s", "TTFT p50 ms"):
            t.add_column(col, justify="right")
        for r in rows:
            t.add_row(str(r.id), esc(r.session), esc(r.arm), str(r.repetition + 1),
                      *((esc(r.tool),) if tools else ()), esc(r.started_at),
                      f"{r.completed}/{r.failed}", num(r.aggregate_output_tok_s, 4),
                      num(r.ttft_p50_ms))
        console.print(t)
        console.print("Each row is one run (n = its completed requests); "
                      "`tokcaliper show ID` gives percentiles, `bench --repeat` the CV.")

    emit(rows, json_out, render)


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
        rec = run_record(run).model_dump(mode="json", exclude_none=True, exclude={"provenance"})
        print(json.dumps(rec, indent=2, ensure_ascii=False))
        return
    with open_existing(db) as store:
        run = store.get_run(run_id, with_requests=requests or not json_out)
    payload: object = run
    if json_out and not requests:  # null, not [], so "not included" never reads as "no requests"
        from tokcaliper.report.output import to_jsonable

        payload = {**to_jsonable(run.model_copy(update={"requests": []})), "requests": None,
                   "requests_note": "not included: add --requests for every request record"}
    emit(payload, json_out, lambda console: render_run_detail(console, run, wide=wide))
