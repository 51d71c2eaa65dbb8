"""CLI: ``tokcaliper import`` — peer tools' result files stored as runs (issue 20).

Thin: :func:`tokcaliper.audit.importers.run_files.read_runs` reads and maps
the files (every file first: one that fails stores nothing),
:func:`~tokcaliper.audit.importers.run_files.runs_to_store` numbers them after the
session's runs, the store saves them, and
:func:`~tokcaliper.audit.importers.run_files.import_summary` is the result
(rendered by :mod:`tokcaliper.report.import_view`).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Optional

import typer

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app
from tokcaliper.errors import InputError


@app.command("import")
def import_cmd(
    files: Annotated[list[Path], typer.Argument(help="Result files of vLLM bench, AIPerf, GuideLLM, genai-perf, "
                                                     "llama-bench, inference-perf, SGLang or LLMPerf.")],
    arm: Annotated[Optional[str], typer.Option("--arm", help="Arm label of these runs (default: the tool's name).")] = None,
    session: Annotated[Optional[str], typer.Option("--session", help="Session to add them to (default: a new "
                                                                     "one, import-<UTC time>).")] = None,
    db: Annotated[Path, typer.Option("--db", help=DB_HELP)] = Path("tokcaliper.db"),
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Store each file's runs: source tool and version, settings, metrics in tokcaliper's units.

    Several files make several runs of one arm; a file with several benchmarks
    (GuideLLM rates, inference-perf stages, llama-bench rows) one run per
    benchmark. Records that cannot be read are skipped and listed.
    """
    from tokcaliper import __version__
    from tokcaliper.audit.importers.run_files import import_session_name, import_summary, read_runs, runs_to_store
    from tokcaliper.load.summary import summarize
    from tokcaliper.model.timestamps import utc_now_iso
    from tokcaliper.report.import_view import render_import
    from tokcaliper.report.output import emit
    from tokcaliper.store import Store

    if arm is not None and not arm.strip():
        raise InputError("--arm must not be empty")
    found = read_runs(files, summarize)
    if not found.runs:
        raise InputError(f"no run found in {', '.join(map(str, files))}" +
                         (f" ({len(found.skipped)} record(s) skipped: {found.skipped[0]})" if found.skipped else ""))
    sess = session or import_session_name(utc_now_iso())
    cmd = shlex.join(["tokcaliper", "import", *map(str, files), *(["--arm", arm] if arm else []),
                      "--session", sess, "--db", str(db)])
    with Store(db) as store:
        runs = runs_to_store(found, session=sess, arm=arm, previous=store.session_runs(sess),
                             command_line=cmd, tool_version=__version__)
        for run in runs:
            store.save_run(run)
    result = import_summary(found, runs, session=sess, db=str(db))
    emit(result, as_json, lambda console: render_import(console, result))
