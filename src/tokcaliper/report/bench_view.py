"""Terminal view of ``tokcaliper bench``: one session's runs and noise floor, or a sweep's levels.

Renders :class:`tokcaliper.experiment.bench_result.BenchResult` and
:class:`~tokcaliper.experiment.bench_result.SweepResult`; computes nothing (the
noise floors, rooflines, sweep means and trace figures are the builders'). The
caveats are the result's ``warnings``, which the warning sink prints on stderr
after this view (:func:`tokcaliper.report.output.emit`).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from tokcaliper.experiment.bench_result import BenchLevel, BenchResult, LevelMean, SweepResult, SweepRow
from tokcaliper.load.trace import ReplayFigures
from tokcaliper.numbers import num
from tokcaliper.report.experiment_view import render_restart_splits
from tokcaliper.report.noise_view import render_noise_floor
from tokcaliper.report.prefix_cache_view import render_prefix_cache
from tokcaliper.report.roofline_view import render_roofline
from tokcaliper.report.run_view import (render_client, render_lengths,
                                        render_telemetry, runs_table)
from tokcaliper.report.slo_view import render_slo, render_steady
from tokcaliper.report.text import esc

__all__ = ["render_bench", "render_level", "render_replay", "render_sweep", "render_sweep_table"]


def _workload(res: BenchResult) -> str:
    """The load of the session in one sentence (requests, loop, lengths, warm-up, store)."""
    cfg = res.config
    if cfg.trace is not None:
        loop = (f"trace replay {esc(cfg.trace)} at {num(cfg.trace_speedup, trim=True)}× speed, "
                f"≤ {cfg.concurrency} in flight")
    elif cfg.rate_rps is not None:
        loop = (f"open loop {cfg.arrival} {num(cfg.rate_rps)} req/s"
                + (f" (burstiness {num(cfg.burstiness)})" if cfg.arrival == "gamma" else "")
                + f", ≤ {cfg.concurrency} in flight")
    else:
        loop = f"concurrency {cfg.concurrency}"
    return (
        f"  {res.repeat} run(s) × {cfg.requests or f'{cfg.duration_s:g} s of'} requests, "
        + loop
        + (f", input tokens {esc(cfg.input_tokens)}" if cfg.input_tokens else "")
        + (f", dataset {esc(cfg.dataset)} (seed {cfg.dataset_seed})" if cfg.dataset else "")
        + (f", output tokens {esc(cfg.output_tokens)} (seed {cfg.length_seed})" if cfg.output_tokens
           else ", output lengths from the trace" if cfg.trace else f", max_tokens {cfg.max_tokens}")
        + (f", shared prefix {esc(cfg.shared_prefix)}" if cfg.shared_prefix else "")
        + (f", sessions of {cfg.turns} turns (think {num(cfg.think_time_s, trim=True)} s)"
           if cfg.turns > 1 else "")
        + f", temperature {cfg.temperature:g}, {cfg.warmup} warm-up request(s) per run excluded, "
        f"cool-down {res.cooldown_s:g} s; stored in {esc(res.db)} (session {esc(res.session)})")


def render_bench(console: Console, res: BenchResult, *, wide: bool = False) -> None:
    """One bench session: the heading and workload, the idle power, the level's runs and noise
    floor (:func:`render_level`), then where the variance lives across ``--restarts``.

    ``wide`` adds the per-run columns, telemetry lanes and memory-fit lines a page of 160
    columns can hold.
    """
    console.print(f"[bold]tokcaliper bench[/bold]  {esc(res.config.base_url)}  model {esc(res.config.model)}")
    console.print(_workload(res))
    if res.idle_power_w is not None:
        console.print(f"  idle power over {res.idle_seconds:g} s before load: "
                      + (", ".join(f"{dev} {num(w)} W" for dev, w in res.idle_power_w.items())
                         if res.idle_power_w else "not measured (see the warning)"))
    render_level(console, res, wide=wide, trace=res.trace)
    if res.restarts:
        console.print(f"  {res.server_starts} server starts × {res.repeat} runs; the noise floor above pools "
                      "all runs (restart-level noise included)")
        render_restart_splits(res.restarts, console, detail=1)  # the arithmetic of the first metric


def render_replay(console: Console, figures: Sequence[ReplayFigures]) -> None:
    """A trace replay's figures, one line per run: block size and scale, context, speed-up,
    dispatch delay p99 with its n, and the prompt tokens served from the cache."""
    for f in figures:
        ctx = "context unknown" if f.context_tokens is None else f"context {f.context_tokens} tokens"
        cache = ("" if f.cache_share is None or f.cached_tokens is None or f.evaluated_tokens is None else
                 f"; prompt tokens from the cache {num(100 * f.cache_share)}% "
                 f"({f.cached_tokens} of {f.cached_tokens + f.evaluated_tokens}, timings.cache_n)")
        console.print(esc(
            f"  trace run #{f.run_id}: blocks of {f.block_tokens} tokens = the trace's lengths × "
            f"{num(f.scale, trim=True)} ({ctx}), {num(f.speedup, trim=True)}× speed, "
            f"dispatch delay p99 {num(None if f.dispatch_p99_s is None else 1000 * f.dispatch_p99_s)} ms "
            f"(n={f.dispatch_n}){cache}"))


def render_level(console: Console, lv: BenchLevel, *, wide: bool = False,
                 trace: Sequence[ReplayFigures] | None = None) -> None:
    """One arm's (one level's) runs table, client, trace replay, SLO, steady
    state, lengths, prefix cache, telemetry, roofline and noise floor."""
    runs = lv.stored
    console.print(runs_table(runs, wide=wide))
    render_client(console, runs)
    if trace:
        render_replay(console, trace)
    render_slo(console, runs)
    render_steady(console, runs)
    render_lengths(console, runs)
    render_prefix_cache(console, runs)
    render_telemetry(console, runs, wide=wide)
    render_roofline(console, runs, wide=wide, arms=lv.roofline)  # issue 25
    if lv.noise_floor is not None:
        render_noise_floor(console, lv.noise_floor)


def _mean(m: LevelMean | None) -> str:
    """``"320 ± 28 (n=2)"``: the mean over the runs with its sample sd (none with n = 1) and n."""
    if m is None:
        return "—"
    return f"{num(m.mean)}" + ("" if m.sd is None else f" ± {num(m.sd, 2)}") + f" (n={m.n})"


def render_sweep_table(console: Console, rows: Sequence[SweepRow], axis: str = "rate_rps") -> None:
    """One line per level (:func:`tokcaliper.experiment.bench_result.sweep_rows`): achieved
    arrivals, throughput, latency counted from send and from schedule, dispatch delay (means
    ± sd over the level's valid runs, each with its n), and the runs the client limited."""
    level = "concurrency" if axis == "concurrency" else "rate req/s"
    t = Table(title=f"{'concurrency' if axis == 'concurrency' else 'rate'} sweep (mean ± sd over each level's runs)")
    for col in (level, "achieved req/s", "output tok/s", "TTFT p50 ms", "TTFT-from-schedule p99 ms",
                "dispatch p99 ms", "client-limited runs"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(num(r.level, trim=True), _mean(r.achieved_rps), _mean(r.output_tok_s), _mean(r.ttft_p50_ms),
                  _mean(r.ttft_from_schedule_p99_ms), _mean(r.dispatch_p99_ms),
                  f"{r.client_limited}/{r.valid_runs}")
    console.print(t)


def render_sweep(console: Console, res: SweepResult, *, wide: bool = False) -> None:
    """A sweep: its heading and outcomes, each level (:func:`render_level`), the sweep table,
    then each level against the first (the primary metric's summary)."""
    exp = res.spec
    what = "concurrency" if res.axis == "concurrency" else "open-loop rate"
    console.print(f"[bold]tokcaliper bench[/bold] sweep over {what}: experiment {esc(res.experiment)}, "
                  f"{exp.runs_per_arm} runs per level interleaved ({esc(exp.order)}"
                  + ("" if exp.seed is None else f", seed {exp.seed}") + f"); stored in {esc(res.db)}")
    for o in res.outcomes:
        console.print(f"  [bold red]{esc(o.kind)}[/bold red]: {esc(o.reason)}")
    for lv in res.sweep:
        console.print(f"[bold]{esc(lv.arm)}[/bold]: {what} {num(lv.level, trim=True)}")
        render_level(console, lv, wide=wide)
    render_sweep_table(console, res.table, res.axis)
    if res.sweep:
        console.print(f"each level against {esc(res.sweep[0].arm)} (paired over the interleaved runs, "
                      f"{esc(exp.metric)}; the arithmetic: `tokcaliper experiment show {esc(res.experiment)}`):")
    for c in res.comparisons:
        text = c.error if c.metrics is None else c.metrics.metrics[0].report.summary
        console.print(f"  {esc(c.candidate)}: {esc(text or '')}")
