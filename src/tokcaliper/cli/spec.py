"""CLI: ``tokcaliper spec table|show|log`` — speculative-decoding acceptance (METHODS.md M6, M7).

Thin: read the input, call one function in :mod:`tokcaliper.spec`, render with
:mod:`tokcaliper.report.spec_view`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.markup import escape

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app
from tokcaliper.errors import InputError
from tokcaliper.numbers import num
from tokcaliper.spec.metrics import COST_PROXY, DEFINITIONS, LIMIT

_DEFS = "\n\n".join(f"[bold]{escape(name)}[/]: {escape(formula)}" for name, formula in DEFINITIONS)
_SPEC_HELP = (
    "Speculative decoding: acceptance metrics from server counters (after − before a run, never a "
    "server-side rolling average) and the draft-window table.\n\n"
    f"Definitions (Δ = after − before):\n\n{_DEFS}\n\n"
    f"Limit: {LIMIT}\n\nProxy: {COST_PROXY}"
)
_KIND_HELP = "Server family: llamacpp, vllm or sglang (default: detected from the counter names)."

spec_app = typer.Typer(help=_SPEC_HELP, no_args_is_help=True, rich_markup_mode="rich")
app.add_typer(spec_app, name="spec")


def _read_text(path: Path, max_bytes: int = 64 * 1024 * 1024) -> str:
    """The text of ``path``, or InputError naming it."""
    try:
        if path.stat().st_size > max_bytes:
            raise InputError(f"{path}: larger than {max_bytes:,} bytes")
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror or e})") from None


@spec_app.command("table")
def table_cmd(
    file: Annotated[Path, typer.Argument(help="CSV (k,al[,al_cv,acceptance_rate,throughput,failed…]) or "
                                              "JSON/YAML (k → AL, k → {al: …}, or rows: […]).")],
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """AL per draft window k → AL/(k+1), best k by each, and the warning when they differ.

    Runs nothing: the arithmetic of published (or your own) AL values. AL/(k+1) =
    tokens per verified position (the target verifies k+1 positions per step).
    A row with a `failed` reason is a k that did not start.
    """
    from tokcaliper.report.output import emit
    from tokcaliper.report.spec_view import render_window_table
    from tokcaliper.spec.table import window_table
    from tokcaliper.spec.table_file import parse_tables

    tables = [window_table(rows, name) for name, rows in parse_tables(_read_text(file), str(file))]

    def render(console) -> None:  # type: ignore[no-untyped-def]
        for i, t in enumerate(tables):
            if i:
                console.print()
            render_window_table(console, t)

    emit({"source": str(file), "tables": tables}, json_out, render)


@spec_app.command("show")
def show_cmd(
    run_ids: Annotated[Optional[list[int]], typer.Argument(help="Run ids (see `tokcaliper runs`).")] = None,
    session: Annotated[Optional[str], typer.Option(help="All runs of this session.")] = None,
    server_kind: Annotated[Optional[str], typer.Option("--server-kind", help=_KIND_HELP)] = None,
    k: Annotated[Optional[int], typer.Option("--k", min=1, help="Configured draft window, for the red flag "
                                                                 "AL = k+1 (default: k_eff).")] = None,
    db: Annotated[Path, typer.Option(help=DB_HELP)] = Path("tokcaliper.db"),
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Acceptance metrics of stored runs, with mean, CV and MDE across them beside throughput's.

    Per run: from its stored counter difference (after − before) and per-request timings.
    """
    from tokcaliper.report.output import emit
    from tokcaliper.report.spec_view import render_runs_acceptance
    from tokcaliper.servers.spec_readers import check_server_kind
    from tokcaliper.spec.runs import across_runs, run_acceptance
    from tokcaliper.store import Store

    kind = check_server_kind(server_kind)
    ids = list(run_ids or [])
    with Store(db, create=False) as store:
        if session is not None:
            ids += [r.id for r in store.list_runs(session=session) if r.id is not None and r.id not in ids]
        if not ids:
            raise InputError("give run ids or --session (see `tokcaliper runs`)")
        runs = [run_acceptance(store.get_run(i), kind, k) for i in ids]
    res = across_runs(runs)
    emit(res, json_out, lambda console: render_runs_acceptance(console, res))


@spec_app.command("log")
def log_cmd(
    file: Annotated[Path, typer.Argument(help="vLLM server log holding \"SpecDecoding metrics: …\" lines.")],
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Acceptance from vLLM's periodic "SpecDecoding metrics" log lines, summed over the file.

    Each line covers one logging interval; give the log of the run only (lines of
    other traffic would be mixed in). Drafts are recovered from the rounded AL.
    """
    from tokcaliper.report.output import emit
    from tokcaliper.servers.spec_readers.vllm import counts_from_log, parse_log
    from tokcaliper.spec.metrics import acceptance_metrics

    windows = parse_log(_read_text(file))
    if not windows:
        raise InputError(f"{file}: no \"SpecDecoding metrics\" line found")
    counts = counts_from_log(windows)
    metrics = acceptance_metrics(counts) if counts is not None else None
    payload = {"source": str(file), "windows": windows, "metrics": metrics, "limit": LIMIT}

    def render(console) -> None:  # type: ignore[no-untyped-def]
        console.print(f"{len(windows)} interval(s) in {escape(str(file))}; "
                      f"accepted {sum(w.accepted for w in windows)} / drafted {sum(w.drafted for w in windows)}")
        if metrics is None:
            console.print("AL not recoverable: the log lines give no mean acceptance length")
        else:
            for line in metrics.arithmetic:
                console.print(f"  {escape(line)}")
            if metrics.per_position:
                console.print("  per-position acceptance: "
                              + ", ".join(num(p, 3, min_decimals=3) for p in metrics.per_position))
            console.print(f"  ({escape(metrics.counts.source)})")
        console.print(f"limit: {LIMIT}")

    emit(payload, json_out, render)
