"""CLI: ``tokcaliper report`` — an experiment, a bench session, a sweep or an audit as one offline
HTML page, a Markdown summary or the report's JSON data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app
from tokcaliper.errors import InputError

#: Suffixes of record files: an existing file with one of these is audited.
_RECORD_SUFFIXES = (".json", ".jsonl", ".csv")


@app.command("report")
def report_cmd(
    target: Annotated[Optional[str], typer.Argument(
        help="Experiment or sweep id (`tokcaliper experiment list`), a bench session id "
             "(`tokcaliper runs`), or a record file to audit.")] = None,
    session: Annotated[Optional[str], typer.Option("--session", help="Report this bench session.")] = None,
    audit: Annotated[Optional[list[Path]], typer.Option(
        "--audit", help="Report the audit of this record file (repeatable), as `tokcaliper audit FILE`.")] = None,
    output: Annotated[Optional[Path], typer.Option(
        "-o", "--output", help="File to write (default report-ID.html / .md / .json).")] = None,
    fmt: Annotated[str, typer.Option(
        "--format", help="html (self-contained, opens offline), markdown (a CI job summary) or json.")] = "html",
    db: Annotated[Path, typer.Option("--db", help=DB_HELP)] = Path("tokcaliper.db"),
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Write a report: the verdict first, numbers with their uncertainty, plots, what ran, caveats."""
    from tokcaliper.report.formats import exporter, render_written, write_report
    from tokcaliper.report.output import emit

    exporter(fmt)  # an unknown format fails before any work
    given = [x for x in (target, session, audit or None) if x is not None]
    if len(given) != 1:
        raise InputError("give one of: an ID, --session NAME or --audit FILE")
    files = list(audit or [])
    if target is not None and Path(target).suffix.lower() in _RECORD_SUFFIXES and Path(target).is_file():
        files = [Path(target)]
    if files:
        from tokcaliper.audit.report_data import gather_audit_report

        rep = gather_audit_report(files)
    else:
        from tokcaliper.experiment.report_data import gather_store_report
        from tokcaliper.report.formats.roofline import roofline_lines
        from tokcaliper.store import Store

        with Store(db, create=False) as store:
            rep = gather_store_report(store, session or target or "", session=session is not None,
                                      roofline=roofline_lines)
    written = write_report(rep, fmt, output)
    emit(written, as_json, lambda console: render_written(written, console))
