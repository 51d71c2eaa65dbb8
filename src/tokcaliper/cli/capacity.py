"""CLI: ``tokcaliper capacity`` — the highest rate whose SLO attainment meets a target, with its CI."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from tokcaliper.cli._app import DB_HELP, JSON_HELP, app
from tokcaliper.errors import InputError, ServerError


@app.command()
def capacity(
    slo: Annotated[Optional[str], typer.Option(
        help="Service-level objectives, e.g. ttft=200ms,tpot=50ms,e2e=10s (also itl=): a request meets "
             "them when it completed within every bound.")] = None,
    rates: Annotated[Optional[str], typer.Option(
        help="Open-loop rates to try, req/s, comma-separated (e.g. 1,2,4,8): one arm each.")] = None,
    repeat: Annotated[int, typer.Option("--repeat", "-r", help="Runs per rate (≥ 2; the CI resamples them).")] = 3,
    target: Annotated[float, typer.Option(help="SLO attainment to meet, percent (e.g. 99).")] = 99.0,
    url: Annotated[Optional[str], typer.Option(help="Base URL of an already running server.")] = None,
    server_cmd: Annotated[Optional[str], typer.Option(
        help="Command that starts the server ({port} and {host} filled in); default (no --url): the "
             "local llama-server with SmolLM2.")] = None,
    model: Annotated[Optional[str], typer.Option(help="Model name (default: first of /v1/models).")] = None,
    concurrency: Annotated[Optional[int], typer.Option(
        "--concurrency", "-c", help="Cap on requests in flight (default 256).")] = None,
    requests: Annotated[Optional[int], typer.Option(
        "--requests", "-n", help="Measured requests per run (default: 10 s of arrivals, at least 32).")] = None,
    duration: Annotated[Optional[float], typer.Option(help="Seconds per run instead of --requests.")] = None,
    arrival: Annotated[str, typer.Option(help="Arrivals: poisson, gamma or constant.")] = "poisson",
    burstiness: Annotated[float, typer.Option(help="Gamma shape k of the gaps (with --arrival gamma).")] = 1.0,
    max_tokens: Annotated[int, typer.Option(help="Output tokens per request (fixed).")] = 128,
    output_tokens: Annotated[Optional[str], typer.Option(
        help="Output lengths from a distribution (fixed:N, normal:MEAN,SD, …; docs/workloads.md).")] = None,
    input_tokens: Annotated[Optional[str], typer.Option(
        help="Synthetic prompts of this many tokens (fixed:N, normal:MEAN,SD, …); replaces --prompts.")] = None,
    length_seed: Annotated[int, typer.Option(help="Seed of the length draws (stored).")] = 0,
    prompts: Annotated[Optional[Path], typer.Option(help="JSONL prompts (default: built-in set).")] = None,
    warmup: Annotated[Optional[int], typer.Option(help="Warm-up requests per run (default 4).")] = None,
    request_timeout: Annotated[float, typer.Option(help="Per-request timeout, seconds.")] = 300.0,
    max_error_rate: Annotated[float, typer.Option(
        help="Runs with a larger share of failed requests are flagged invalid; their attainment still "
             "counts here (failed requests miss the SLO).")] = 0.10,
    idle_seconds: Annotated[float, typer.Option(help="Idle power measurement before the first run (0 = off).")] = 0.0,
    telemetry_interval: Annotated[float, typer.Option(help="Telemetry sampling interval, s (0 = off).")] = 0.1,
    order: Annotated[str, typer.Option(help="Run order over rates: random-blocks (seed stored), alternate, "
                                            "abba or blocked.")] = "random-blocks",
    seed: Annotated[Optional[int], typer.Option(help="Seed of --order random-blocks.")] = None,
    bootstrap: Annotated[int, typer.Option(help="Bootstrap replicates of the CI.")] = 2000,
    bootstrap_seed: Annotated[int, typer.Option(help="Seed of the bootstrap (the CI is reproducible).")] = 0,
    experiment: Annotated[Optional[str], typer.Option(
        "--experiment", help="Recompute from a stored capacity experiment (e.g. after `experiment resume`) "
                             "instead of running.")] = None,
    db: Annotated[Path, typer.Option(help=DB_HELP)] = Path("tokcaliper.db"),
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Capacity at an SLO: run each rate R times (an interleaved experiment), fit attainment against
    rate (monotone) and report the highest rate meeting the target, with a bootstrap CI over runs.

    Says when the tried rates do not bracket the capacity. docs/workloads.md has the method.
    """
    from tokcaliper.experiment.capacity import capacity_of_experiment
    from tokcaliper.report.capacity_view import render_capacity
    from tokcaliper.report.output import emit

    if not (0 < target <= 100):
        raise InputError(f"--target must be a percentage in (0, 100], got {target:g}")
    if not 100 <= bootstrap <= 1_000_000:
        raise InputError(f"--bootstrap must be between 100 and 1,000,000 replicates, got {bootstrap}")
    if not 0 <= bootstrap_seed <= 2**63 - 1:
        raise InputError(f"--bootstrap-seed must be ≥ 0, got {bootstrap_seed}")
    if experiment is None:
        exp_id = _run(slo=slo, rates=rates, repeat=repeat, url=url, server_cmd=server_cmd, model=model,
                      concurrency=concurrency, requests=requests, duration=duration, arrival=arrival,
                      burstiness=burstiness, max_tokens=max_tokens, output_tokens=output_tokens,
                      input_tokens=input_tokens, length_seed=length_seed, prompts=prompts, warmup=warmup,
                      request_timeout=request_timeout, max_error_rate=max_error_rate,
                      idle_seconds=idle_seconds, telemetry_interval=telemetry_interval, order=order,
                      seed=seed, db=db, json_out=json_out)
    else:
        exp_id = experiment
    result = capacity_of_experiment(exp_id, db, target / 100, bootstrap, bootstrap_seed)
    emit(result, json_out, lambda console: render_capacity(console, result))


def _run(*, slo, rates, repeat, url, server_cmd, model, concurrency, requests, duration,  # type: ignore[no-untyped-def]
         arrival, burstiness, max_tokens, output_tokens, input_tokens, length_seed, prompts, warmup,
         request_timeout, max_error_rate, idle_seconds, telemetry_interval, order, seed, db, json_out) -> str:
    """Parse the options into the capacity experiment, create it and run it with a progress line;
    return its id."""
    import shlex
    import sys

    from tokcaliper.cli.experiment import execute_with_progress
    from tokcaliper.experiment.capacity import capacity_experiment, capacity_rates
    from tokcaliper.experiment.execute import create_experiment
    from tokcaliper.experiment.spec import LoadSpec
    from tokcaliper.load.pool import ensure_fd_room
    from tokcaliper.report.output import stderr
    from tokcaliper.servers.managed import check_reachable
    from tokcaliper.servers.url import server_url
    from tokcaliper.store import Store, ensure_writable

    levels = capacity_rates(slo, rates)
    if url and server_cmd:
        raise InputError("give either --url or --server-cmd, not both")
    load = LoadSpec.from_options(
        model=model, concurrency=concurrency, requests=requests, duration_s=duration, warmup=warmup,
        arrival=arrival, burstiness=burstiness, max_tokens=max_tokens, output_tokens=output_tokens,
        input_tokens=input_tokens, length_seed=length_seed, prompts=None if prompts is None else str(prompts),
        request_timeout_s=request_timeout, max_error_rate=max_error_rate, idle_seconds=idle_seconds,
        telemetry_interval_s=telemetry_interval, slo=slo,
        rate_rps=levels[0])  # open loop; each arm sets its own rate
    exp = capacity_experiment(load, levels, name=f"capacity at {slo} over rates {rates}", repeat=repeat,
                              url=None if url is None else server_url(url), server_cmd=server_cmd,
                              order=order, seed=seed)
    ensure_fd_room(exp.max_streams)
    ensure_writable(db)
    if exp.url is not None:
        check_reachable(exp.url)
    command_line = shlex.join(["tokcaliper", *sys.argv[1:]])
    with Store(db) as store:
        exp_id = create_experiment(exp, f"# {command_line}\n", store)
        resume = f"tokcaliper experiment resume {exp_id} --db {db}"
        stderr.print(f"capacity experiment {exp_id}: {len(exp.run_order())} measured runs ({repeat} per rate, "
                     f"order {exp.order}" + ("" if exp.seed is None else f", seed {exp.seed}")
                     + f"); stored in {db}; after Ctrl-C: `{resume}`, then "
                     f"`tokcaliper capacity --experiment {exp_id} --db {db}`", markup=False)
        try:
            execute_with_progress(exp_id, exp, None, store, "stop", json_out)
        except ServerError as e:
            raise ServerError(f"{e}; the runs so far are kept: continue with `{resume}`") from None
    return exp_id
