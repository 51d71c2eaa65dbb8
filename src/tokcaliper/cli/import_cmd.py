"""CLI: ``tokcaliper import`` — peer tools' result files stored as runs (issue 20).

Thin: :func:`tokcaliper.audit.importers.run_files.read_runs` reads and maps
the files (every file first: one that fails stores nothing), then each run is
stored with :func:`tokcaliper.audit.importers.runs.to_run`.
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
    from tokcaliper.audit.importers.run_files import read_runs
    from tokcaliper.audit.importers.runs import to_run
    from tokcaliper.model.timestamps import utc_now_iso
    from tokcaliper.numbers import num
    from tokcaliper.report.output import emit
    from tokcaliper.report.text import esc, plain
    from tokcaliper.store import Store

    if arm is not None and not arm.strip():
        raise InputError("--arm must not be empty")
    from tokcaliper.load.summary import summarize

    found = read_runs(files, summarize)
    if not found.runs:
        raise InputError(f"no run found in {', '.join(map(str, files))}" +
                         (f" ({len(found.skipped)} record(s) skipped: {found.skipped[0]})" if found.skipped else ""))
    sess = session or "import-" + utc_now_iso().replace(":", "").replace("-", "")[:15]
    cmd = shlex.join(["tokcaliper", "import", *map(str, files), *(["--arm", arm] if arm else []),
                      "--session", sess, "--db", str(db)])
    stored = []
    with Store(db) as store:
        previous = store.session_runs(sess)
        reps: dict[str, int] = {}
        for r in previous:
            reps[r.arm] = max(reps.get(r.arm, 0), r.repetition + 1)
        position = max((r.position for r in previous if r.position is not None), default=-1) + 1
        for p in found.runs:
            a = arm or p.tool
            run = to_run(p, session=sess, arm=a, repetition=reps.get(a, 0), position=position, command_line=cmd,
                         tool_version=__version__)
            reps[a] = reps.get(a, 0) + 1
            position += 1
            store.save_run(run)
            stored.append(run)
    payload = {"session": sess, "db": str(db),
               "runs": [{"id": r.id, "arm": r.arm, "repetition": r.repetition, "tool": r.source.tool,  # type: ignore[union-attr]
                         "tool_version": r.source.tool_version, "file": r.source.file,  # type: ignore[union-attr]
                         "benchmark": r.source.benchmark, "completed": r.metrics.completed,  # type: ignore[union-attr]
                         "requests_stored": len(r.requests),
                         "aggregate_output_tok_s": r.metrics.aggregate_output_tok_s,
                         "ttft_p50_ms": None if r.metrics.ttft_s.p50 is None else r.metrics.ttft_s.p50 * 1000,
                         "notes": r.source.notes} for r in stored],  # type: ignore[union-attr]
               "skipped": found.skipped, "files": found.files}

    def render(console) -> None:  # type: ignore[no-untyped-def]
        from rich.table import Table

        t = Table(title=f"{len(stored)} run(s) imported into session {esc(sess)} of {esc(db)}",
                  title_justify="left")
        for col in ("id", "arm", "rep", "tool", "benchmark", "n", "samples", "agg tok/s", "TTFT p50 ms"):
            t.add_column(col, justify="right" if col not in ("arm", "tool", "benchmark") else "left")
        for x in payload["runs"]:
            t.add_row(str(x["id"]), esc(x["arm"]), str(x["repetition"] + 1),
                      esc(f"{x['tool']} {x['tool_version'] or ''}".strip()), esc(x["benchmark"] or "-"),
                      str(x["completed"]), str(x["requests_stored"]), num(x["aggregate_output_tok_s"], 4),
                      num(x["ttft_p50_ms"]))
        console.print(t)
        console.print("n = completed requests the tool reports; figures follow each tool's definitions "
                      "(docs/import.md); `tokcaliper show ID` lists the field mapping.")
        seen: list[str] = []
        for x in payload["runs"]:
            seen += [n for n in x["notes"] if n not in seen]
        for n in seen:
            console.print(plain(f"note: {n}"), markup=False)
        for s in found.skipped:
            console.print(plain(f"skipped: {s}"), markup=False)

    emit(payload, as_json, render)
