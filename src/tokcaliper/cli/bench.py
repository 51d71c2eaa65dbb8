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
        help="Command that starts the server; {port} and {host} are filled in. "
             "Default (no --url): the local llama-server with SmolLM2.")] = None,
    model: Annotated[Optional[str], typer.Option(help="Model name to request (default: first of /v1/models).")] = None,
    concurrency: Annotated[Optional[int], typer.Option(
        "--concurrency", "-c",
        help="Closed-loop concurrent streams (default 4); with --rate, the cap on requests in flight "
             "(default 256).")] = None,
    requests: Annotated[Optional[int], typer.Option(
        "--requests", "-n", help="Measured requests per run (default: 8 × concurrency; with --rate, "
                                 "10 s of arrivals).")] = None,
    duration: Annotated[Optional[float], typer.Option(help="Seconds per run instead of --requests.")] = None,
    rate: Annotated[Optional[list[float]], typer.Option(
        help="Open loop: mean request arrivals per second (default: closed loop); "
             "--concurrency then caps the requests in flight. Repeat for a sweep over rates "
             "(each rate is its own arm, `ARM@Rrps`).")] = None,
    arrival: Annotated[str, typer.Option(help="Open-loop arrivals: poisson, gamma or constant.")] = "poisson",
    burstiness: Annotated[float, typer.Option(
        help="Gamma shape k of the arrival gaps (CV = 1/√k; 1 = Poisson, < 1 burstier).")] = 1.0,
    max_tokens: Annotated[int, typer.Option(help="Output tokens per request (fixed).")] = 128,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 0.0,
    ignore_eos: Annotated[bool, typer.Option(help="Ask the server to always generate max_tokens.")] = True,
    prompts: Annotated[Optional[Path], typer.Option(help="JSONL prompts ({\"prompt\":…} or {\"messages\":…}); default: built-in set.")] = None,
    input_tokens: Annotated[Optional[str], typer.Option(
        help="Synthetic prompts of this many tokens as the server counts them (chat template and "
             "unique tag included): fixed:N, normal:MEAN,SD, lognormal:MEDIAN,SIGMA, uniform:LO,HI "
             "or empirical:FILE (docs/workloads.md). Replaces --prompts; needs --requests.")] = None,
    output_tokens: Annotated[Optional[str], typer.Option(
        help="Output tokens per request drawn from a distribution (same forms as --input-tokens); "
             "sent as max_tokens (with ignore_eos/min_tokens) instead of --max-tokens.")] = None,
    length_seed: Annotated[int, typer.Option(
        help="Seed of the --input-tokens/--output-tokens draws (stored; request i gets the same "
             "lengths in every run).")] = 0,
    dataset: Annotated[Optional[Path], typer.Option(
        help="Conversations to send: ShareGPT-style ({\"conversations\": [{\"from\", \"value\"}]}) or "
             "OpenAI-style ({\"messages\"}) JSONL, in an order drawn by --dataset-seed "
             "(docs/workloads.md). Replaces --prompts.")] = None,
    dataset_seed: Annotated[int, typer.Option(help="Seed of the --dataset order (stored).")] = 0,
    min_input_tokens: Annotated[Optional[int], typer.Option(
        help="Keep --dataset records of at least this many tokens (the server's /tokenize, "
             "template not counted).")] = None,
    max_input_tokens: Annotated[Optional[int], typer.Option(
        help="Keep --dataset records of at most this many tokens.")] = None,
    trace: Annotated[Optional[Path], typer.Option(
        help="Replay a Mooncake JSONL trace (timestamp ms, input_length, output_length, hash_ids) "
             "as an open loop at its times, prompts built from one text block per hash id "
             "(docs/workloads.md). --requests N: its first N records.")] = None,
    trace_speedup: Annotated[float, typer.Option(
        help="Divide the trace's times by this (2 = twice as fast).")] = 1.0,
    trace_block_tokens: Annotated[Optional[int], typer.Option(
        help="Tokens per trace hash block (default: the trace's 512, scaled down to fit the "
             "server's context; lengths scale with it).")] = None,
    unique_prompts: Annotated[bool, typer.Option(
        help="Tag each request's prompt uniquely so no repetition is served from a prompt cache "
             "that an earlier one filled.")] = True,
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
        help="Share of the run's peak of requests in flight (e.g. 0.9): each run's steady-state "
             "window, with throughput and TTFT/ITL percentiles inside it (ramp-up, drain excluded).")] = None,
    workers: Annotated[int, typer.Option(
        help="Spread each run's measured load over this many processes (Ray actors, one clock; "
             "needs pip install 'tokcaliper[ray]'; docs/distributed.md).")] = 1,
    ray_address: Annotated[Optional[str], typer.Option(
        help="Ray cluster of the --workers (e.g. 10.0.0.1:6379; default: a local one started here).")] = None,
    db: Annotated[Path, typer.Option(help=DB_HELP)] = Path("tokcaliper.db"),
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
    wide: Annotated[bool, typer.Option("--wide", help=WIDE_HELP)] = False,
) -> None:
    """Run R identical load runs against a server and print the noise floor (n, mean, CV, MDE)."""
    # Heavy imports (aiohttp, scipy) here, not at module level, so that
    # `tokcaliper --help` and the other commands start fast.
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from tokcaliper.experiment.runner import RepeatSpec, run_repetitions
    from tokcaliper.experiment.spec import MAX_TIMEOUT_S, LoadSpec
    from tokcaliper.load.arrivals import open_loop_problem
    from tokcaliper.load.pool import ensure_fd_room
    from tokcaliper.load.prompts import load_prompts
    from tokcaliper.model.metrics import get_metric, scalar_series
    from tokcaliper.model.run import LoadConfig, Run
    from tokcaliper.report.noise_view import render_noise_floor
    from tokcaliper.model import warnings as W
    from tokcaliper.numbers import num
    from tokcaliper.report.output import emit, stderr
    from tokcaliper.report.text import esc
    from tokcaliper.report.slo_view import render_slo, render_steady
    from tokcaliper.report.run_view import (
        render_client, render_lengths, render_stream_warnings, render_telemetry, runs_table)
    from tokcaliper.servers.counters import discover_model
    from tokcaliper.servers.url import server_url
    from tokcaliper.servers.target import target_server
    from tokcaliper.stats.noise import noise_floor
    from tokcaliper.store import Store, ensure_writable
    from tokcaliper.telemetry import TelemetrySampler, collect_host_info

    _check(repeat >= 1, f"--repeat must be ≥ 1, got {repeat}")
    _check(1 <= restarts <= 1000, f"--restarts must be between 1 and 1000, got {restarts}")
    _check(restarts == 1 or url is None, "--restarts needs a server tokcaliper starts (not --url)")
    _check(restarts == 1 or not rate or len(rate) == 1, "--restarts takes one --rate, not a sweep")
    # Every load option is checked by the experiment file's model (LoadSpec), so a
    # bench and an experiment's [load] accept exactly the same values (no inf or nan,
    # not both --requests and --duration, bounded durations).
    load_spec = LoadSpec.from_options(
        model=model, concurrency=256 if concurrency is None and rate else concurrency, requests=requests, duration_s=duration, warmup=warmup,
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
        workers=workers, ray_address=ray_address)
    _check(math.isfinite(cooldown) and 0 <= cooldown <= MAX_TIMEOUT_S,
           f"--cooldown must be a number of seconds in [0, {MAX_TIMEOUT_S:g}], got {cooldown:g}")
    _check(effect is None or (math.isfinite(effect) and 0 < effect < 1),
           f"--effect must be a fraction in (0, 1) (0.05 = 5%), got {effect:g}" if effect is not None else "")
    _check(not (url and server_cmd), "give either --url or --server-cmd, not both")
    _check(on_server_death in ("stop", "restart"),
           f"--on-server-death must be stop or restart, got {on_server_death!r}")
    _check(on_server_death == "stop" or url is None,
           "--on-server-death restart needs a server tokcaliper starts (not --url)")
    rates: list[float | None] = list(rate) if rate else [None]
    for r in rates:
        _check(r is None or (math.isfinite(r) and r > 0), f"--rate must be > 0, got {r}")
    _check(len(set(rates)) == len(rates), "--rate: each rate once")
    rate = rates[0]
    _check(trace is None or rate is None, "give either --trace or --rate (a trace has its own times)")
    _check(arrival in ("poisson", "gamma", "constant"),
           f"--arrival must be poisson, gamma or constant, got {arrival!r}")
    _check(math.isfinite(burstiness) and burstiness > 0, f"--burstiness must be > 0, got {burstiness}")
    _check(burstiness == 1.0 or arrival == "gamma", "--burstiness needs --arrival gamma")
    _check(rate is not None or arrival == "poisson", "--arrival needs --rate (open loop)")
    open_loop = rate is not None or trace is not None
    for name in metric or []:
        get_metric(name)  # an unknown name fails before any work
    if concurrency is None:
        concurrency = 4 if not open_loop else 256
    if warmup is None:  # open loop: a few warm-up requests, not one per possible stream
        warmup = concurrency if not open_loop else 4
    requests_given = requests
    if trace is not None and requests is None:  # every record of the trace
        requests = load_spec.to_load_config("").requests
    if requests is None and duration is None:  # closed: 8 per stream; open: ~10 s of arrivals
        requests = 8 * concurrency if rate is None else max(32, math.ceil(10 * rate))
    for r in rates:  # an open-loop run that would last for ages, or draw too many arrivals
        if r is not None:
            n_r = requests if requests_given is not None or len(rates) == 1 else max(32, math.ceil(10 * r))
            problem = open_loop_problem(r, None if duration is not None else n_r, duration)
            _check(problem is None, problem or "")
    ensure_fd_room(concurrency)  # a socket per stream, before the server starts
    if url is not None:
        given = url.strip().rstrip("/")
        url = server_url(url)  # fail before any work
        if url != given:
            stderr.print(f"note: --url {given} ends in /v1; using {url} "
                         "(tokcaliper adds /v1/chat/completions itself)")
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

    with ExitStack() as stack:
        if workers > 1:
            stack.callback(shutdown)
        target = stack.enter_context(target_server(
            url, server_cmd, health_timeout_s=health_timeout, announce=stderr.print))
        base_url, version = target.base_url, target.version
        # Opened only now, so that a bad --url or server leaves no new file.
        store = stack.enter_context(Store(db))

        cfg = LoadConfig(
            base_url=base_url, model=model or discover_model(base_url) or "default",
            concurrency=concurrency, requests=requests if duration is None else None,
            duration_s=duration, warmup=warmup,
            max_tokens=max_tokens, temperature=temperature, ignore_eos=ignore_eos,
            prompts_source=str(prompts) if prompts else "builtin",
            request_timeout_s=request_timeout, first_token_timeout_s=first_token_timeout,
            token_timeout_s=token_timeout,
            rate_rps=rate, arrival=arrival, burstiness=burstiness,  # type: ignore[arg-type]
            slo_s=load_spec.slo_s, steady_state=load_spec.steady_state,
            input_tokens=input_tokens, output_tokens=output_tokens, length_seed=length_seed,
            dataset=load_spec.dataset, dataset_seed=dataset_seed, min_input_tokens=min_input_tokens,
            max_input_tokens=max_input_tokens, trace=load_spec.trace, trace_speedup=trace_speedup,
            trace_block_tokens=trace_block_tokens,
            workers=workers, ray_address=ray_address,
        )
        host = collect_host_info()
        idle_power: dict[str, float] | None = None  # None: not measured
        if idle_seconds > 0 and telemetry_interval > 0:
            stderr.print(f"measuring idle power for {idle_seconds:g} s (M5)")
            idle_power = TelemetrySampler(interval_s=telemetry_interval).measure_idle(idle_seconds)
        total = repeat * restarts * requests * len(rates) if requests is not None else None
        progress = Progress(
            TextColumn("[progress.description]{task.description}"), BarColumn(),
            MofNCompleteColumn(), TimeElapsedColumn(), console=stderr, transient=True,
        )
        stack.enter_context(progress)
        task = progress.add_task(f"bench {esc(arm)}: run 1/{repeat}", total=total)
        sweep: list[tuple[float | None, str, list[Run]]] = []
        for r in rates:  # one arm per rate (a single arm without --rate or with one rate)
            r_arm = arm if len(rates) == 1 else f"{arm}@{r:g}rps"
            r_cfg = cfg if len(rates) == 1 else cfg.model_copy(update={"rate_rps": r})
            if r is not None and requests is not None and len(rates) > 1 and requests_given is None:
                r_cfg = r_cfg.model_copy(update={"requests": max(32, math.ceil(10 * r))})
            spec = RepeatSpec(
                load=r_cfg, prompts=prompt_set, repeat=repeat, cooldown_s=cooldown, arm=r_arm,
                command_line=command_line, server=target.server, server_version=version,
                host=host, idle_power_w=idle_power or {},
                idle_duration_s=idle_seconds if idle_power is not None else None,
                telemetry=(lambda: TelemetrySampler(interval_s=telemetry_interval))
                if telemetry_interval > 0 else None,
                unique_prompts=unique_prompts, max_error_rate=max_error_rate,
                on_server_death=on_server_death,  # type: ignore[arg-type]
                on_restart=lambda note: progress.console.print(f"[yellow]warning:[/yellow] {note}"),
                restarts=restarts,
                on_planned_restart=lambda note: progress.console.print(esc(note)),
            )

            def on_run(run: Run, r_arm: str = r_arm) -> None:
                m = run.metrics
                progress.console.print(
                    f"{r_arm} run {run.repetition + 1}/{repeat * restarts} stored as #{run.id}"
                    + ("" if run.restart is None else f" (restart {run.restart + 1}/{restarts})") + ": "
                    f"{num(m.aggregate_output_tok_s, 4)} tok/s aggregate, "
                    f"TTFT p50 {num(None if m.ttft_s.p50 is None else m.ttft_s.p50 * 1000)} ms, "
                    f"{m.completed} ok / {m.failed} failed"
                    + ("" if run.valid else f" — [yellow]INVALID[/yellow]: {run.invalid_reason}")
                )
                progress.update(task, description=f"bench {esc(r_arm)}: run "
                                                  f"{min(run.repetition + 2, repeat * restarts)}/{repeat * restarts}")

            progress.update(task, description=f"bench {esc(r_arm)}: run 1/{repeat}")
            sweep.append((r, r_arm, run_repetitions(
                spec, store,
                on_request=lambda _index: progress.advance(task),
                on_run=on_run,
                on_cooldown=lambda s: progress.update(task, description=f"bench: cooling down {s:g} s"),
            )))
        runs = sweep[0][2]

    all_runs = [x for _, _, rr in sweep for x in rr]
    if not any(x.valid for x in all_runs):
        raise ServerError(no_valid_run(all_runs, db))
    # Invalid runs (too many failed requests) are stored but left out of the noise floor.
    names = metric or None
    if names is None and (slo is not None or steady_state is not None):  # the figures asked for, too
        from tokcaliper.model.metrics import METRICS, headline_metrics

        asked = {o for o, v in (("--slo", slo), ("--steady-state", steady_state)) if v is not None}
        names = [m.name for m in headline_metrics()] + [n for n, m in METRICS.items() if m.needs in asked]
    reports = [noise_floor(scalar_series([r.metrics for r in rr if r.valid], names=names), effect=effect)
               if any(r.valid for r in rr) else None for _, _, rr in sweep]
    report = reports[0]
    splits = []
    if restarts > 1:  # where the variance lives (issue 17 item 7)
        from tokcaliper.experiment.analysis import split_by_restart
        from tokcaliper.model.metrics import headline_metrics

        valid = [x for x in runs if x.valid]
        groups = [[x for x in valid if x.restart == k] for k in range(restarts)]
        names = metric or [m.name for m in headline_metrics()]
        splits = [split_by_restart(groups, arm=arm, metric=name) for name in names]
    payload = {
        "session": runs[0].session,
        "db": str(db),
        "config": cfg,
        "server_command": runs[0].server_command,
        "server_version": version,
        "idle_power_w": idle_power,
        "runs": [{"id": r.id, "repetition": r.repetition, "restart": r.restart, "valid": r.valid,
                  "invalid_reason": r.invalid_reason, "metrics": r.metrics} for r in runs],
        "noise_floor": report,
    }
    if restarts > 1:
        payload["restarts"] = splits
    if cfg.trace is not None:  # the block size and scaling each run used, its dispatch delay and cache use
        from tokcaliper.load.trace import replay_figures

        payload["trace"] = replay_figures(runs)
    if len(sweep) > 1:  # a sweep over rates: each rate's runs and noise floor
        payload["sweep"] = [
            {"rate_rps": r, "arm": a, "runs": [{"id": x.id, "repetition": x.repetition, "valid": x.valid,
                                                "invalid_reason": x.invalid_reason, "metrics": x.metrics}
                                               for x in rr], "noise_floor": rep}
            for (r, a, rr), rep in zip(sweep, reports)
        ]

    def render(console) -> None:  # type: ignore[no-untyped-def]
        console.print(f"[bold]tokcaliper bench[/bold]  {esc(cfg.base_url)}  model {esc(cfg.model)}")
        console.print(
            f"  {repeat} run(s) × {cfg.requests or f'{cfg.duration_s:g} s of'} requests, "
            + (f"trace replay {esc(cfg.trace)} at {num(cfg.trace_speedup, trim=True)}× speed, "
               f"≤ {cfg.concurrency} in flight" if cfg.trace is not None else
               f"open loop {cfg.arrival} {num(cfg.rate_rps)} req/s"
               + (f" (burstiness {num(cfg.burstiness)})" if cfg.arrival == "gamma" else "")
               + f", ≤ {cfg.concurrency} in flight" if cfg.rate_rps is not None
               else f"concurrency {cfg.concurrency}")
            + (f", input tokens {esc(cfg.input_tokens)}" if cfg.input_tokens else "")
            + (f", dataset {esc(cfg.dataset)} (seed {cfg.dataset_seed})" if cfg.dataset else "")
            + (f", output tokens {esc(cfg.output_tokens)} (seed {cfg.length_seed})" if cfg.output_tokens
               else ", output lengths from the trace" if cfg.trace else f", max_tokens {cfg.max_tokens}")
            + ", temperature "
            f"{cfg.temperature:g}, {cfg.warmup} warm-up request(s) per run excluded, "
            f"cool-down {cooldown:g} s; stored in {esc(db)} (session {runs[0].session})"
        )
        if idle_power is not None:
            idle = idle_power
            console.print(
                f"  idle power over {idle_seconds:g} s before load: "
                + (", ".join(f"{dev} {num(w)} W" for dev, w in idle.items()) if idle
                   else W.NO_POWER_SOURCE.text())
            )
        for (r, a, rr), rep in zip(sweep, reports):
            if len(sweep) > 1:
                console.print(f"[bold]{a}[/bold]: open loop at {num(r)} req/s")
            console.print(runs_table(rr, wide=wide))
            render_client(console, rr)
            if cfg.trace is not None:
                from tokcaliper.load.trace import replay_summary

                console.print(esc(replay_summary(rr)))
            render_stream_warnings(console, rr)
            render_slo(console, rr)
            render_steady(console, rr)
            render_lengths(console, rr)
            render_telemetry(console, rr, wide=wide)
            for x in rr:
                if not x.valid:
                    console.print(f"  [yellow]warning:[/yellow] run {x.repetition + 1} (#{x.id}) left out of the "
                                  f"noise floor: {x.invalid_reason}")
            if rep is None:
                console.print(f"  [yellow]warning:[/yellow] {a}: no valid run, no noise floor")
            else:
                render_noise_floor(console, rep)
        if len(sweep) > 1:
            render_sweep(console, sweep)
        if splits:
            from tokcaliper.report.experiment_view import render_restart_splits

            console.print(f"  {restarts} server starts × {repeat} runs; the noise floor above pools "
                          "all runs (restart-level noise included)")
            render_restart_splits(splits, console, detail=1)  # the arithmetic of the first metric

    emit(payload, json_out, render)


def no_valid_run(runs, db: Path) -> str:  # type: ignore[no-untyped-def]
    """The one-line reason for exit 3 when every run of a bench was invalid.

    Names the runs, why the first one is invalid, and the most common error
    over all runs (status and body, truncated), which usually tells what to fix.
    """
    from collections import Counter

    errors: Counter[str] = Counter()
    for r in runs:
        errors.update(r.metrics.errors)
    ids = ", ".join(f"#{r.id}" for r in runs)
    msg = f"no valid run: every run ({ids}, stored in {db}) is invalid: {runs[0].invalid_reason}"
    if errors:
        text, count = errors.most_common(1)[0]
        total = sum(r.metrics.completed + r.metrics.failed for r in runs)
        msg += f". Most common error over all runs ({count} of {total} requests): {text[:200]}"
    return msg


def render_sweep(console, sweep) -> None:  # type: ignore[no-untyped-def]
    """One line per rate: achieved arrivals, latency counted from send and from schedule, dispatch delay."""
    from rich.table import Table

    from tokcaliper.numbers import num

    def mean(values: list[float | None], scale: float = 1.0) -> str:
        v = [x for x in values if x is not None]
        return "—" if not v else f"{num(scale * sum(v) / len(v))} (n={len(v)})"

    t = Table(title="rate sweep (means over each rate's runs)")
    for col in ("rate req/s", "achieved req/s", "output tok/s", "TTFT p50 ms", "TTFT-from-schedule p99 ms",
                "dispatch p99 ms", "client-limited runs"):
        t.add_column(col, justify="right")
    for r, _a, rr in sweep:
        ms = [x.metrics for x in rr if x.valid]
        t.add_row(
            num(r), mean([m.arrivals.achieved_rate_rps if m.arrivals else None for m in ms]),
            mean([m.aggregate_output_tok_s for m in ms]), mean([m.ttft_s.p50 for m in ms], 1000),
            mean([m.ttft_from_schedule_s.p99 for m in ms], 1000), mean([m.dispatch_s.p99 for m in ms], 1000),
            f"{sum(1 for m in ms if m.client and m.client.client_limited)}/{len(ms)}",
        )
    console.print(t)
