"""CLI: ``tokcaliper bench`` — repeated runs against a live server and the noise floor (M1)."""

from __future__ import annotations

import math
import shlex
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Optional

import typer

from tokcaliper.cli._app import DB_HELP, JSON_HELP, WIDE_HELP, app
from tokcaliper.errors import InputError, ServerError


def _check(cond: bool, message: str) -> None:
    if not cond:
        raise InputError(message)


@app.command()
def bench(
    url: Annotated[Optional[str], typer.Option(help="Base URL of an already running OpenAI-compatible server.")] = None,
    server_cmd: Annotated[Optional[str], typer.Option(
        help="Command that starts the server; {port} and {host} are filled in, {llama_server} and "
             "{smollm2} name the built local server and model. "
             "Default (no --url): the local llama-server with SmolLM2.")] = None,
    model: Annotated[Optional[str], typer.Option(help="Model name to request (default: first of /v1/models).")] = None,
    concurrency: Annotated[Optional[list[str]], typer.Option(
        "--concurrency", "-c",
        help="Closed-loop concurrent streams (default 4); with --rate, the cap on requests in flight "
             "(default 256). A list (1,4,16) is a sweep: an interleaved experiment, one arm per level "
             "(`ARM@c=4`).")] = None,
    requests: Annotated[Optional[int], typer.Option(
        "--requests", "-n", help="Measured requests per run (default: 8 × concurrency; with --rate, "
                                 "10 s of arrivals).")] = None,
    duration: Annotated[Optional[float], typer.Option(help="Seconds per run instead of --requests.")] = None,
    rate: Annotated[Optional[list[str]], typer.Option(
        help="Open loop: mean arrivals per second (-c caps those in flight). A list "
             "(1,2,4) is a sweep, one arm per rate.")] = None,
    arrival: Annotated[str, typer.Option(help="Open-loop arrivals: poisson, gamma or constant.")] = "poisson",
    burstiness: Annotated[float, typer.Option(
        help="Gamma shape k of the arrival gaps (CV = 1/√k; 1 = Poisson, < 1 burstier).")] = 1.0,
    max_tokens: Annotated[int, typer.Option(help="Output tokens per request (fixed).")] = 128,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 0.0,
    ignore_eos: Annotated[bool, typer.Option(help="Ask the server to always generate max_tokens.")] = True,
    prompts: Annotated[Optional[Path], typer.Option(help="JSONL prompts ({\"prompt\":…} or {\"messages\":…}); default: built-in set.")] = None,
    input_tokens: Annotated[Optional[str], typer.Option(
        help="Prompt tokens as the server counts them: fixed:N, normal:M,SD, lognormal:MED,S, "
             "uniform:LO,HI, empirical:FILE (docs/workloads.md).")] = None,
    output_tokens: Annotated[Optional[str], typer.Option(
        help="Output tokens per request, held exactly; forms as --input-tokens.")] = None,
    length_seed: Annotated[int, typer.Option(
        help="Seed of the --input-tokens/--output-tokens draws (stored; request i gets the same "
             "lengths in every run).")] = 0,
    dataset: Annotated[Optional[Path], typer.Option(
        help="ShareGPT- or OpenAI-style conversations (JSONL) to send (docs/workloads.md).")] = None,
    dataset_seed: Annotated[int, typer.Option(help="Seed of the --dataset order (stored).")] = 0,
    min_input_tokens: Annotated[Optional[int], typer.Option(
        help="Keep --dataset records of ≥ this many tokens.")] = None,
    max_input_tokens: Annotated[Optional[int], typer.Option(
        help="Keep --dataset records of at most this many tokens.")] = None,
    trace: Annotated[Optional[Path], typer.Option(
        help="Replay a Mooncake JSONL trace at its times, one text block per hash id "
             "(docs/workloads.md).")] = None,
    trace_speedup: Annotated[float, typer.Option(
        help="Divide the trace's times by this (2 = twice as fast).")] = 1.0,
    trace_block_tokens: Annotated[Optional[int], typer.Option(
        help="Tokens per trace block (default 512, scaled to fit the context).")] = None,
    shared_prefix: Annotated[Optional[str], typer.Option(
        help="groups=G,tokens=P: G shared system prompts of P tokens.")] = None,
    turns: Annotated[int, typer.Option(
        help="Requests per chat session, each carrying the earlier prompts and answers.")] = 1,
    think_time: Annotated[float, typer.Option(
        help="Seconds from an answer to its session's next turn.")] = 0.0,
    unique_prompts: Annotated[bool, typer.Option(
        help="Tag each prompt so no run is served from an earlier one's cache.")] = True,
    warmup: Annotated[Optional[int], typer.Option(help="Warm-up requests per run, excluded from metrics (default: = concurrency; 4 with --rate).")] = None,
    repeat: Annotated[int, typer.Option("--repeat", "-r", help="Identical runs (≥5 for a noise floor).")] = 5,
    restarts: Annotated[int, typer.Option(
        "--restarts", help="Start the managed server K times with --repeat runs each, and split the "
                           "variance into restart-level and run-level parts (K ≥ 2; not with --url).")] = 1,
    cooldown: Annotated[float, typer.Option(help="Seconds of rest between runs.")] = 0.0,
    effect: Annotated[Optional[float], typer.Option(help="Expected relative effect (e.g. 0.05): also print the runs per arm it needs.")] = None,
    arm: Annotated[str, typer.Option(help="Label stored with these runs.")] = "default",
    metric: Annotated[Optional[list[str]], typer.Option(
        "--metric", help="Metric of the noise-floor report (repeat for several; default: the headline "
                         "metrics; `tokcaliper metrics` lists all). Every metric is stored either way.")] = None,
    request_timeout: Annotated[float, typer.Option(help="Per-request timeout, send → end of stream, seconds.")] = 300.0,
    first_token_timeout: Annotated[float, typer.Option(
        help="Seconds from send to the answer's first bytes before the request fails (no headers, "
             "no stream).")] = 120.0,
    token_timeout: Annotated[float, typer.Option(
        help="Longest silence within one stream, seconds, before the request fails (a stalled stream).")] = 30.0,
    max_error_rate: Annotated[float, typer.Option(
        help="Largest share of failed measured requests a valid run may have (0–1); a run above it "
             "is stored invalid and left out of the noise floor.")] = 0.10,
    health_timeout: Annotated[float, typer.Option(help="Seconds to wait for a started server's /health.")] = 180.0,
    idle_seconds: Annotated[float, typer.Option(
        help="Seconds of idle power measurement after the server is up, before the first run (0 = off; M5).")] = 3.0,
    telemetry_interval: Annotated[float, typer.Option(
        help="Telemetry sampling interval, seconds (0 = off; default 0.1 = 10 Hz, about 0.5 ms of CPU per tick).")] = 0.1,
    on_server_death: Annotated[str, typer.Option(
        help="A started server that dies during a run (stored as failed with its last log lines): "
             "stop, or restart it and go on with the next run.")] = "stop",
    slo: Annotated[Optional[str], typer.Option(
        help="Service-level objectives, e.g. ttft=200ms,tpot=50ms,e2e=10s (also itl=; units ms or s): "
             "each run's share of requests meeting all of them (failed ones miss) and its goodput.")] = None,
    steady_state: Annotated[Optional[float], typer.Option(
        help="Share of the peak in flight (e.g. 0.9): each run's steady-state window and its "
             "figures, ramp-up and drain left out.")] = None,
    order: Annotated[str, typer.Option(
        help="Sweep order: random-blocks, alternate, abba or blocked.")] = "random-blocks",
    seed: Annotated[Optional[int], typer.Option(help="Seed of a sweep's --order random-blocks.")] = None,
    workers: Annotated[int, typer.Option(
        help="Ray worker processes to spread the load over (docs/distributed.md).")] = 1,
    ray_address: Annotated[Optional[str], typer.Option(
        help="Ray cluster of the --workers (default: a local one).")] = None,
    db: Annotated[Path, typer.Option(help=DB_HELP)] = Path("tokcaliper.db"),
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
    wide: Annotated[bool, typer.Option("--wide", help=WIDE_HELP)] = False,
) -> None:
    """Run R identical load runs against a server and print the noise floor (n, mean, CV, MDE).

    A list of levels (--concurrency 1,4,16 or --rate 1,2,4) is a sweep: an interleaved
    experiment with one arm per level, resumable with `tokcaliper experiment resume`.
    """
    # Heavy imports (aiohttp, scipy) here, not at module level, so that
    # `tokcaliper --help` and the other commands start fast.
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from tokcaliper.audit.run_roofline import arm_rooflines
    from tokcaliper.experiment.bench_result import bench_result
    from tokcaliper.experiment.runner import RepeatSpec, run_repetitions
    from tokcaliper.experiment.spec import LoadSpec
    from tokcaliper.load.pool import ensure_fd_room
    from tokcaliper.load.prompts import load_prompts
    from tokcaliper.model.metrics import get_metric
    from tokcaliper.model.run import Run
    from tokcaliper.model import warnings as W
    from tokcaliper.model.warnings import Caveat
    from tokcaliper.numbers import num
    from tokcaliper.report.bench_view import render_bench
    from tokcaliper.report.output import emit, stderr, warn
    from tokcaliper.report.text import esc
    from tokcaliper.servers.counters import discover_model
    from tokcaliper.servers.url import server_url
    from tokcaliper.servers.target import target_server
    from tokcaliper.store import Store, ensure_writable
    from tokcaliper.telemetry import TelemetrySampler, collect_host_info
    from tokcaliper.doctor import machine_check
    from tokcaliper.report.doctor_view import render_check_warnings

    _check(repeat >= 1, f"--repeat must be ≥ 1, got {repeat}")
    _check(1 <= restarts <= 1000, f"--restarts must be between 1 and 1000, got {restarts}")
    _check(restarts == 1 or url is None, "--restarts needs a server tokcaliper starts (not --url)")
    _check(effect is None or (math.isfinite(effect) and 0 < effect < 1),
           f"--effect must be a fraction in (0, 1) (0.05 = 5%), got {effect:g}" if effect is not None else "")
    _check(not (url and server_cmd), "give either --url or --server-cmd, not both")
    from tokcaliper.experiment.load_sweep import parse_levels

    levels_c = parse_levels(concurrency, "--concurrency", whole=True)
    levels_r = parse_levels(rate, "--rate", whole=False)
    _check(len(levels_c) <= 1 or len(levels_r) <= 1,
           "sweep one of --concurrency or --rate, not both (give the other one level)")
    axis, levels = ("concurrency", levels_c) if len(levels_c) > 1 else ("rate_rps", levels_r)
    is_sweep = len(levels) > 1
    _check(restarts == 1 or not is_sweep, "--restarts takes one level, not a sweep")
    # Every load option, its bounds and its defaults live in LoadSpec (the experiment
    # file's [load] takes exactly the same), the one builder of the run's LoadConfig.
    load_spec = LoadSpec.from_options(
        model=model, concurrency=levels_c[0] if len(levels_c) == 1 else None,
        rate_rps=levels_r[0] if levels_r else None,  # a rate sweep's levels override it
        arrival=arrival, burstiness=burstiness, cooldown_s=cooldown, on_server_death=on_server_death,
        requests=requests, duration_s=duration, warmup=warmup,
        max_tokens=max_tokens, temperature=temperature, ignore_eos=ignore_eos,
        prompts=None if prompts is None else str(prompts), unique_prompts=unique_prompts,
        request_timeout_s=request_timeout, first_token_timeout_s=first_token_timeout,
        token_timeout_s=token_timeout, max_error_rate=max_error_rate, health_timeout_s=health_timeout,
        telemetry_interval_s=telemetry_interval, idle_seconds=idle_seconds,
        slo=slo, steady_state=steady_state,
        input_tokens=input_tokens, output_tokens=output_tokens, length_seed=length_seed,
        dataset=None if dataset is None else str(dataset), dataset_seed=dataset_seed,
        min_input_tokens=min_input_tokens, max_input_tokens=max_input_tokens,
        trace=None if trace is None else str(trace), trace_speedup=trace_speedup,
        trace_block_tokens=trace_block_tokens,
        shared_prefix=shared_prefix, turns=turns, think_time_s=think_time,
        workers=workers, ray_address=ray_address)
    _check(trace is None or not levels_r, "give either --trace or --rate (a trace has its own times)")
    _check(trace is None or not is_sweep, "a trace replay has its own times: it cannot be swept")
    _check(turns == 1 or not levels_r, "--turns needs the closed loop (sessions are sequential), not --rate")
    _check(on_server_death == "stop" or url is None,
           "--on-server-death restart needs a server tokcaliper starts (not --url)")
    for name in metric or []:
        get_metric(name)  # an unknown name fails before any work
    if url is not None:
        given = url.strip().rstrip("/")
        url = server_url(url)  # fail before any work
        if url != given:
            stderr.print(f"note: --url {given} ends in /v1; using {url} "
                         "(tokcaliper adds /v1/chat/completions itself)")
    if is_sweep:
        from tokcaliper.experiment.load_sweep import load_sweep_experiment

        _check(repeat >= 2, f"a sweep is an experiment with --repeat ≥ 2 runs per level, got {repeat}")
        exp = load_sweep_experiment(load_spec, axis, levels, runs_per_level=repeat, url=url,
                                    server_cmd=server_cmd, order=order, seed=seed, prefix=arm)
        ensure_fd_room(exp.max_streams)
        run_sweep(exp, db, metric=metric, slo=slo, steady_state=steady_state, effect=effect,
                  json_out=json_out, wide=wide, axis=axis)
        return
    ensure_fd_room(load_spec.streams)  # a socket per stream, before the server starts
    prompt_set = load_prompts(prompts)
    if dataset is not None:  # a broken file fails before the server starts; skips are listed
        from tokcaliper.load.datasets import load_dataset

        note = load_dataset(dataset).skip_note()
        if note:
            stderr.print(f"note: {esc(note)}")
    ensure_writable(db)  # before the server starts: a read-only --db loses no run
    if workers > 1:  # the cluster and its workers first: one that cannot be reached fails now (exit 3)
        from tokcaliper.load.distributed import shutdown, worker_pool

        worker_pool(workers, ray_address)
    command_line = shlex.join(["tokcaliper", *sys.argv[1:]])
    live: list[Caveat] = []  # warnings raised while measuring: on stderr now, and in the JSON

    def live_warning(caveat: Caveat) -> None:
        live.append(caveat)
        warn(caveat)

    with ExitStack() as stack:
        if workers > 1:
            stack.callback(shutdown)
        target = stack.enter_context(target_server(
            url, server_cmd, health_timeout_s=health_timeout, announce=stderr.print))
        base_url, version = target.base_url, target.version
        # Opened only now, so that a bad --url or server leaves no new file.
        store = stack.enter_context(Store(db))

        cfg = load_spec.to_load_config(base_url, model=discover_model(base_url))
        host = collect_host_info(bandwidth=True)  # the roofline's measured bandwidth (issue 25)
        # The quick machine check (issue 21): stored with every run, its warnings named before measuring.
        host.machine_check = machine_check(
            base_url, quick=True, unique_prompts=unique_prompts,
            server_pids=[target.server.proc.pid] if target.server is not None and target.server.proc else ())
        render_check_warnings(host.machine_check)
        idle_power: dict[str, float] | None = None  # None: not measured
        if idle_seconds > 0 and telemetry_interval > 0:
            stderr.print(f"measuring idle power for {idle_seconds:g} s (M5)")
            idle_power = TelemetrySampler(interval_s=telemetry_interval).measure_idle(idle_seconds)
        runs_total = repeat * restarts
        total = runs_total * cfg.requests if cfg.requests is not None else None
        progress = Progress(
            TextColumn("[progress.description]{task.description}"), BarColumn(),
            MofNCompleteColumn(), TimeElapsedColumn(), console=stderr, transient=True,
        )
        stack.enter_context(progress)
        task = progress.add_task(f"bench {esc(arm)}: run 1/{repeat}", total=total)
        spec = RepeatSpec(
            load=cfg, prompts=prompt_set, repeat=repeat, cooldown_s=cooldown, arm=arm,
            command_line=command_line, server=target.server, server_version=version,
            host=host, idle_power_w=idle_power or {},
            idle_duration_s=idle_seconds if idle_power is not None else None,
            telemetry=(lambda: TelemetrySampler(interval_s=telemetry_interval))
            if telemetry_interval > 0 else None,
            unique_prompts=unique_prompts, max_error_rate=max_error_rate,
            on_server_death=on_server_death,  # type: ignore[arg-type]
            on_restart=lambda note: live_warning(W.SERVER_RESTARTED.caveat(note=note)),
            restarts=restarts,
            on_planned_restart=lambda note: progress.console.print(esc(note)),
        )

        def on_run(run: Run) -> None:
            m = run.metrics
            progress.console.print(
                f"{esc(arm)} run {run.repetition + 1}/{runs_total} stored as #{run.id}"
                + ("" if run.restart is None else f" (restart {run.restart + 1}/{restarts})") + ": "
                f"{num(m.aggregate_output_tok_s, 4)} tok/s aggregate, "
                f"TTFT p50 {num(None if m.ttft_s.p50 is None else m.ttft_s.p50 * 1000)} ms, "
                f"{m.completed} ok / {m.failed} failed"
                + ("" if run.valid else f" — [yellow]INVALID[/yellow]: {esc(run.invalid_reason)}")
            )
            progress.update(task, description=f"bench {esc(arm)}: run "
                                              f"{min(run.repetition + 2, runs_total)}/{runs_total}")

        runs = run_repetitions(
            spec, store,
            on_request=lambda _index: progress.advance(task),
            on_run=on_run,
            on_cooldown=lambda s: progress.update(task, description=f"bench: cooling down {s:g} s"),
        )

    # Invalid runs (too many failed requests) are stored but left out of the noise floor;
    # none valid: exit 3 with the most common error.
    result = bench_result(
        runs, db=db, roofline_of=arm_rooflines, metrics=metric, slo=slo, steady_state=steady_state,
        effect=effect, idle_power_w=idle_power, idle_seconds=idle_seconds, repeat=repeat,
        server_starts=restarts, cooldown_s=cooldown, warnings=live if json_out else ())
    emit(result, json_out, lambda console: render_bench(console, result, wide=wide))


def run_sweep(exp, db: Path, *, metric, slo, steady_state, effect, json_out: bool,  # type: ignore[no-untyped-def]
              wide: bool, axis: str) -> None:
    """Run a sweep's experiment (:func:`tokcaliper.experiment.load_sweep.load_sweep_experiment`)
    with a progress line, then print its :class:`~tokcaliper.experiment.bench_result.SweepResult`:
    each level's runs and noise floor, the sweep table and each level against the first.

    Raises:
        ServerError: no valid run (exit 3), or the server died with ``--on-server-death stop``
            (the message gives the resume command). Interrupted: Ctrl-C (likewise).
    """
    from tokcaliper.audit.run_roofline import arm_rooflines
    from tokcaliper.cli.experiment import execute_with_progress
    from tokcaliper.experiment.bench_result import sweep_result
    from tokcaliper.experiment.execute import create_experiment
    from tokcaliper.report.bench_view import render_sweep
    from tokcaliper.report.output import emit, stderr
    from tokcaliper.servers.managed import check_reachable
    from tokcaliper.store import Store, ensure_writable

    ensure_writable(db)
    if exp.url is not None:
        check_reachable(exp.url)  # before the experiment exists: no empty "stopped" row
    command_line = shlex.join(["tokcaliper", *sys.argv[1:]])
    with Store(db) as store:
        exp_id = create_experiment(exp, f"# {command_line}\n", store)
        resume = f"tokcaliper experiment resume {exp_id} --db {db}"
        stderr.print(f"sweep experiment {exp_id}: {len(exp.run_order())} measured runs "
                     f"({exp.runs_per_arm} per level, order {exp.order}"
                     + ("" if exp.seed is None else f", seed {exp.seed}")
                     + f"); stored in {db}; after Ctrl-C: `{resume}`", markup=False)
        try:
            execute_with_progress(exp_id, exp, None, store, "stop", json_out)
        except ServerError as e:
            raise ServerError(f"{e}; the runs so far are kept: continue with `{resume}`") from None
        result = sweep_result(store, exp_id, exp, axis, db=db, roofline_of=arm_rooflines, metrics=metric,
                              slo=slo, steady_state=steady_state, effect=effect)
    emit(result, json_out, lambda console: render_sweep(console, result, wide=wide))
    if result.failure is not None:
        raise ServerError(result.failure)
