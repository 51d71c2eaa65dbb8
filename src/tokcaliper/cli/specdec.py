"""CLI: ``tokcaliper spec table|show|log`` — speculative-decoding acceptance (METHODS.md M6, M7).

Thin: parse the options, call one builder (:func:`tokcaliper.specdec.table_file.read_window_tables`,
:func:`tokcaliper.experiment.specdec_stored.stored_acceptance`,
:func:`tokcaliper.specdec.log_file.log_acceptance`,
:func:`tokcaliper.experiment.specdec_sweep.sweep_result`), emit its typed result with a
renderer of :mod:`tokcaliper.report.specdec_view`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app
from tokcaliper.errors import InputError, ServerError
from tokcaliper.model.families import server_kinds
from tokcaliper.model.specdec import COST_PROXY, DEFINITIONS, LIMIT

_DEFS = "\n\n".join(f"{name}: {formula}" for name, formula in DEFINITIONS)
_SPEC_HELP = (
    "Speculative decoding: acceptance metrics from server counters (after − before a run, never a "
    "server-side rolling average) and the draft-window table.\n\n"
    f"Definitions (Δ = after − before):\n\n{_DEFS}\n\n"
    f"Limit: {LIMIT}\n\nProxy: {COST_PROXY}"
)
_KIND_HELP = (f"Server family: {', '.join(server_kinds())} (tokcaliper.model.families; "
              "default: detected from the counter names).")

spec_app = typer.Typer(help=_SPEC_HELP, no_args_is_help=True, rich_markup_mode=None)
app.add_typer(spec_app, name="spec")


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
    from tokcaliper.report.specdec_view import render_window_tables
    from tokcaliper.specdec.table_file import read_window_tables

    res = read_window_tables(file)
    emit(res, json_out, lambda console: render_window_tables(console, res))


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
    from tokcaliper.experiment.specdec_stored import stored_acceptance
    from tokcaliper.model.families import check_server_kind
    from tokcaliper.report.output import emit
    from tokcaliper.report.specdec_view import render_runs_acceptance
    from tokcaliper.store import Store

    kind = check_server_kind(server_kind)
    with Store(db, create=False) as store:
        res = stored_acceptance(store, run_ids or [], session, kind, k)
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
    from tokcaliper.report.specdec_view import render_log
    from tokcaliper.specdec.log_file import log_acceptance

    res = log_acceptance(file)
    emit(res, json_out, lambda console: render_log(console, res))


@spec_app.command("sweep")
def sweep_cmd(
    server_cmd: Annotated[Optional[str], typer.Option(
        "--server-cmd", help="Server command with {k} for the draft window ({host}, {port}, {llama_server}, "
                             "{smollm2} are filled in), e.g. \"{llama_server} -m {smollm2} -md {smollm2} "
                             "--spec-type draft-simple --spec-draft-n-max {k} --host {host} --port {port} "
                             "--metrics\".")] = None,
    k: Annotated[Optional[str], typer.Option("--k", help="Windows to sweep, comma-separated (e.g. 2,4,8).")] = None,
    repeat: Annotated[int, typer.Option("--repeat", "-r", help="Runs per k (≥ 2).")] = 3,
    order: Annotated[str, typer.Option(help="Run order across k: abba, alternate, random-blocks (with --seed).")] = "abba",
    seed: Annotated[Optional[int], typer.Option(help="Seed for --order random-blocks.")] = None,
    warmup_runs: Annotated[int, typer.Option(help="Runs after each server start, stored and excluded.")] = 1,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", help="Closed-loop streams.")] = 1,
    requests: Annotated[int, typer.Option("--requests", "-n", help="Measured requests per run.")] = 4,
    max_tokens: Annotated[int, typer.Option(help="Output tokens per request.")] = 128,
    prompts: Annotated[Optional[Path], typer.Option(help="JSONL prompts (default: built-in set).")] = None,
    experiment: Annotated[Optional[str], typer.Option(
        "--experiment", help="Rebuild the table of a stored sweep (after `experiment resume`) instead of running.")] = None,
    server_kind: Annotated[Optional[str], typer.Option("--server-kind", help=_KIND_HELP)] = None,
    db: Annotated[Path, typer.Option(help=DB_HELP)] = Path("tokcaliper.db"),
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Run each draft window k R times (an experiment: interleaved, resumable) and print the M7 table.

    Per k: AL (mean, CV) from counter deltas, acceptance rate, AL/(k+1), throughput with its CV,
    Welch's t between neighbouring k, best k by AL and by AL/(k+1), and the warning when they
    differ. A k whose server does not start is a row with its reason (M8).
    """
    from tokcaliper.cli.experiment import execute_with_progress
    from tokcaliper.experiment.show import no_valid_measured_run
    from tokcaliper.experiment.execute import create_experiment
    from tokcaliper.experiment.spec import LoadSpec
    from tokcaliper.experiment.specdec_sweep import sweep_experiment, sweep_result
    from tokcaliper.model.families import SERVER_KINDS
    from tokcaliper.report.output import emit
    from tokcaliper.report.specdec_view import print_sweep_start, render_sweep
    from tokcaliper.store import Store

    if server_kind is not None and server_kind not in SERVER_KINDS:
        raise InputError(f"--server-kind must be one of {', '.join(SERVER_KINDS)}, got {server_kind!r}")
    if experiment is None:
        if server_cmd is None or k is None:
            raise InputError("give --server-cmd TEMPLATE and --k LIST (or --experiment ID of a stored sweep)")
        try:
            windows = [int(x) for x in k.split(",") if x.strip()]
        except ValueError:
            raise InputError(f"--k must be integers separated by commas, got {k!r}") from None
        load = LoadSpec.from_options(concurrency=concurrency, requests=requests, max_tokens=max_tokens,
                                     prompts=str(prompts) if prompts else None, idle_seconds=0.0)
        spec = sweep_experiment(server_cmd, windows, runs_per_k=repeat, load=load, order=order, seed=seed,
                                warmup_runs=warmup_runs)
        store = Store(db)
    else:
        store = Store(db, create=False)
    with store:
        if experiment is None:
            exp_id = create_experiment(spec, f"# tokcaliper spec sweep\n# {server_cmd}\n# k = {k}\n", store)
            print_sweep_start(exp_id, len(spec.run_order()), repeat, order, db)
            execute_with_progress(exp_id, spec, None, store, "stop", json_out)
        else:
            exp_id = store.get_experiment(experiment).id
        res = sweep_result(store, exp_id, server_kind)
        failed = no_valid_measured_run(exp_id, store) if experiment is None else None
    emit(res, json_out, lambda console: render_sweep(console, res))
    if failed is not None:  # no k's server started: exit 3, as bench
        raise ServerError(failed)
