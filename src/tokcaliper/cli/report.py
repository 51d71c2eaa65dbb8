"""CLI: ``tokcaliper report`` — an experiment as one offline HTML page or a Markdown summary."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app
from tokcaliper.errors import InputError


@app.command("report")
def report_cmd(
    experiment: Annotated[str, typer.Argument(help="Experiment id (see `tokcaliper experiment list`).")],
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="File to write (default report-ID.html / .md).")] = None,
    fmt: Annotated[str, typer.Option("--format", help="html (self-contained, opens offline) or markdown.")] = "html",
    db: Annotated[Path, typer.Option("--db", help=DB_HELP)] = Path("tokcaliper.db"),
    as_json: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Write the report of an experiment: the verdict first, numbers with their uncertainty, plots."""
    if fmt not in ("html", "markdown"):
        raise InputError(f"--format must be html or markdown, got {fmt!r}")
    from tokcaliper.experiment.report_data import gather_experiment_report
    from tokcaliper.report.html import experiment_html, experiment_markdown, verdict_sentence
    from tokcaliper.report.output import emit
    from tokcaliper.store import Store

    from tokcaliper.audit.run_roofline import arm_rooflines
    from tokcaliper.report.roofline_view import arm_line

    with Store(db, create=False) as store:
        rep = gather_experiment_report(store, experiment)
        arms = arm_rooflines(store.session_runs(rep.analysis.id), [a.name for a in rep.analysis.spec.arms])
    lines = [arm_line(a) for a in arms]
    first = next((r for a in arms for r in a.runs if r.fraction is not None), None)
    rep = rep.model_copy(update={"roofline_lines": lines + ([] if first is None else first.arithmetic)})
    text = experiment_html(rep) if fmt == "html" else experiment_markdown(rep)
    path = output or Path(f"report-{rep.analysis.id}.{'html' if fmt == 'html' else 'md'}")
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as e:
        raise InputError(f"-o {path}: cannot write: {e.strerror or e}") from None
    sentence, verdict = verdict_sentence(rep)
    payload = {"experiment": rep.analysis.id, "file": str(path), "format": fmt,
               "verdict": verdict, "sentence": sentence, "bytes": len(text.encode())}
    emit(payload, as_json, lambda console: console.print(f"{sentence}\nwrote {path}", markup=False))
