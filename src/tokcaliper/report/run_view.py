"""Text rendering of runs: the per-run table and one run in detail."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from tokcaliper.model.record import Record
from tokcaliper.model.run import ClientHealth, Percentiles, Run, WorkerHealth
from tokcaliper.model.stored import RunList
from tokcaliper.model import warnings as W
from tokcaliper.numbers import num, seconds
from tokcaliper.report.text import esc
from tokcaliper.report.telemetry_view import summaries, telemetry_notes, telemetry_table


def _ms(x: float | None) -> str:
    """Seconds shown in a column headed "ms"."""
    return num(None if x is None else 1000 * x)


#: Runs-table columns: (header, wide only). Headers break over two lines so that the
#: default table fits 100 columns; ``--wide`` adds the figures the noise-floor table
#: already gives per metric (decode tok/s, req/s).
_RUN_COLUMNS = (("run", False), ("rep", False), ("ok/\nfailed", False), ("out tokens", False),
                ("wall s", False), ("aggregate\ntok/s", False), ("decode\ntok/s mean", True),
                ("req/s", True), ("TTFT\np50 ms", False), ("TTFT\np99 ms", False),
                ("ITL\np50 ms", False), ("ITL\np99 ms", False))


def runs_table(runs: Sequence[Run], title: str = "runs", *, wide: bool = False) -> Table:
    """One row per run: headline throughput and latency figures (n per row).

    Fits 100 columns; ``wide`` adds per-stream decode tok/s (mean) and req/s.
    """
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    keep = [wide or not only_wide for _h, only_wide in _RUN_COLUMNS]
    for (col, _w), k in zip(_RUN_COLUMNS, keep):
        if k:
            t.add_column(col, justify="right", no_wrap=True)
    for r in runs:
        m = r.metrics
        cells = (
            str(r.id), str(r.repetition + 1), f"{m.completed}/{m.failed}",
            f"{m.output_tokens} ({esc(m.token_count_source)})", num(m.wall_s),
            num(m.aggregate_output_tok_s, 4), num(m.per_stream_decode_tok_s_mean),
            num(m.request_throughput_rps), _ms(m.ttft_s.p50), _ms(m.ttft_s.p99),
            _ms(m.itl_s.p50), _ms(m.itl_s.p99),
        )
        t.add_row(*(c for c, k in zip(cells, keep) if k))
    return t


def render_run_detail(console: Console, run: Run, *, wide: bool = False) -> None:
    """Everything about one stored run: provenance, config, metrics, latencies
    (``wide``: every telemetry column, even those with no figure)."""
    m, c = run.metrics, run.config
    console.print(f"[bold]run {run.id}[/bold]  session {esc(run.session)}  arm {esc(run.arm)}  "
                  f"repetition {run.repetition + 1}")
    console.print(f"  started {esc(run.started_at)}  finished {esc(run.finished_at)}")
    if run.source is not None:
        src = run.source
        console.print(f"  imported: measured by {esc(src.tool)} {esc(src.tool_version or '(version not stated)')}"
                      f" — {esc(src.file)}" + (f" [{esc(src.benchmark)}]" if src.benchmark else "")
                      + "; figures follow its definitions (docs/import.md)")
        for n in src.notes:
            console.print(f"  note: {esc(n)}")
    console.print(f"  command: {esc(run.command_line)}")
    if run.server_command:
        console.print(f"  server command: {esc(run.server_command)}")
    console.print(f"  server version: {esc(run.server_version or 'unknown')}  "
                  f"tokcaliper {esc(run.tool_version)}")
    console.print(f"  load: {esc(c.base_url)} model={esc(c.model)} concurrency={c.concurrency} "
                  f"requests={c.requests} duration_s={c.duration_s} warmup={c.warmup} "
                  f"max_tokens={c.max_tokens} temperature={c.temperature} "
                  f"ignore_eos={c.ignore_eos} prompts={esc(c.prompts_source)}")
    console.print(
        f"  {m.completed} completed, {m.failed} failed, {m.excluded_warmup} warm-up excluded; "
        f"{m.output_tokens} output tokens (counted from {m.token_count_source}) in {seconds(m.wall_s)}"
    )
    console.print(
        f"  aggregate output throughput {num(m.aggregate_output_tok_s, 4)} tok/s; "
        f"request throughput {num(m.request_throughput_rps)} req/s; per-stream decode "
        f"mean {num(m.per_stream_decode_tok_s_mean)} / median "
        f"{num(m.per_stream_decode_tok_s_median)} tok/s (n={m.completed})"
    )

    console.print("  " + W.SINGLE_RUN_NO_CV.text(min_n=W.M1_MIN_RUNS), style="dim")
    t = Table(title="latency (within this run)", title_justify="left")
    for col in ("metric", "n", "mean ms", "p50 ms", "p90 ms", "p99 ms"):
        t.add_column(col, justify="right")
    for name, p in (("TTFT", m.ttft_s), ("ITL", m.itl_s), ("TPOT", m.tpot_s), ("E2E", m.e2e_s)):
        _row(t, name, p)
    console.print(t)
    from tokcaliper.report.slo_view import render_slo, render_steady

    render_slo(console, [run])
    render_steady(console, [run])
    if m.errors:
        for err, count in m.errors.items():
            console.print(f"  [red]{count} × {esc(err)}[/red]")
    if run.counters_delta:
        console.print("  server counters (after − before): " + ", ".join(
            f"{esc(k)}={int(v) if float(v).is_integer() else num(v, 6)}" for k, v in sorted(run.counters_delta.items())))
    render_telemetry(console, [run], wide=wide)
    if m.client is not None and m.client.workers:
        render_workers(console, m.client, f"run {run.repetition + 1}")


def client_line(c: ClientHealth) -> str:
    """One line of the load client's own figures for a run (:class:`~tokcaliper.model.run.ClientHealth`).

    Loop lag p99 and max with the probe count, the loop's CPU share, which
    clock stamped the arrivals (and in how many reads), the connections.
    """
    parts = []
    lag = c.loop_lag_s
    if lag.n:
        parts.append(f"loop lag p99 {_ms(lag.p99)} ms, max {_ms(c.loop_lag_max_s)} ms "
                     f"(n={lag.n} probes)")
    if c.cpu_share is not None:
        parts.append(f"CPU {num(c.cpu_share * 100)} % of a core")
    reads = c.reads_kernel_stamped + c.reads_loop_stamped
    if reads:
        if c.reads_kernel_stamped:
            parts.append(f"arrivals kernel-stamped in {c.reads_kernel_stamped} of {reads} reads")
        else:
            parts.append(f"arrivals stamped by the loop in all {reads} reads (no kernel stamps)")
    if c.connections_opened:
        keeps = {True: "kept by the server", False: "closed by the server after each stream",
                 None: "reuse not yet known"}[c.server_keeps_alive]
        parts.append(f"{c.connections_opened} connection(s), {c.connections_prefilled} opened before the clock, "
                     f"{keeps}")
    return "; ".join(parts) if parts else "no figures"


def workers_line(c: ClientHealth) -> str:
    """One line on a multi-process run's load workers (:attr:`ClientHealth.workers`): requests per
    worker, hosts, the largest clock-offset bound and |drift|, the dead ones."""
    ws = c.workers
    bounds = [o.bound_s for w in ws for o in (w.offset_before, w.offset_after) if o is not None]
    drifts = [abs(w.drift_s) for w in ws if w.drift_s is not None]
    dead = [w.worker + 1 for w in ws if w.error]
    return (f"{len(ws)} on {len({w.host for w in ws})} host(s), requests "
            + "/".join(str(w.requests) for w in ws)
            + (f", clock offset bound ≤ {num(max(bounds) * 1000)} ms (n={len(bounds)})" if bounds else "")
            + (f", drift ≤ {num(max(drifts) * 1000)} ms" if drifts else "")
            + (f", dead: {', '.join(map(str, dead))}" if dead else ""))


def worker_host_lines(w: WorkerHealth) -> list[str]:
    """Two lines on a load worker's own host during its phase (:attr:`WorkerHealth.host_telemetry`).

    First: the host, its CPU count, the 1-min load average at start → end (read
    it against the CPU count) and the samples behind the figures. Second: host
    CPU busy share and steal (``/proc/stat``, interval-weighted means), the
    worker process's own CPU (mean and busiest ≥ 1 s window, cores) and other
    processes' cores on that host.
    """
    h = w.host_telemetry
    head = f"worker {w.worker + 1}"
    if h is None:
        return [f"{head}: host not sampled" + (f" ({w.error})" if w.error else "")]
    head += f" on {h.hostname or '?'}" + (f" ({h.cpus} CPUs)" if h.cpus else "")
    first, second = [], []
    cpu, own, t = h.device("cpu"), h.device("client"), h.telemetry
    la0, la1 = h.load_average_start, h.load_average_end
    if la1 is not None:
        first.append("load average " + (f"{num(la0[0])} → " if la0 is not None else "") + f"{num(la1[0])} (1 min)")
    if t is not None:
        first.append(f"{t.ticks} samples over {seconds(t.duration_s)}")
    if h.error:
        first.append(h.error)
    if cpu is not None and cpu.utilization_mean_pct is not None:
        second.append(f"host CPU {num(cpu.utilization_mean_pct)} % busy"
                      + ("" if cpu.steal_share is None else f", steal {num(cpu.steal_share * 100)} %"))
    if own is not None and own.cpu_share_mean is not None:
        second.append(f"this worker {num(own.cpu_share_mean)} cores (max {num(own.cpu_share_max)})")
    if t is not None and t.foreign_cpu_cores_mean is not None:
        second.append(f"others {num(t.foreign_cpu_cores_mean)} cores")
    out = [f"{head}: " + "; ".join(first) if first else head]
    if second:
        out.append("  " + "; ".join(second))
    return out


def render_workers(console: Console, c: ClientHealth, label: str) -> None:
    """The workers line (:func:`workers_line`) and each worker's own host (:func:`worker_host_lines`)."""
    console.print(f"  workers, {label}: {esc(workers_line(c))}")
    for w in c.workers:
        for line in worker_host_lines(w):
            console.print(f"    {esc(line)}")


def render_client(console: Console, runs: Sequence[Run]) -> None:
    """The load client's own error bar per run (:func:`client_line`); a crossed bound is a
    caveat of the result (:func:`tokcaliper.model.stored.run_caveats`), printed by the sink."""
    for x in runs:
        c = x.metrics.client
        if c is None:
            continue
        console.print(f"  client, run {x.repetition + 1}: {client_line(c)}")
        if c.workers:
            render_workers(console, c, f"run {x.repetition + 1}")


def render_lengths(console: Console, runs: Sequence[Run]) -> None:
    """Requested vs counted synthetic lengths, pooled over ``runs``' measured requests (each run's
    lengths warnings are caveats of the result, printed by the warning sink).

    Nothing is printed when no run asked for lengths (``RunMetrics.lengths``).
    """
    from tokcaliper.load.lengths import accuracy

    reps = [x.metrics.lengths for x in runs if x.metrics.lengths is not None]
    if not reps:
        return
    done = [r for x in runs for r in x.requests if not r.warmup and r.ok]
    methods = sorted({m.method for m in reps if m.method})
    tmpl = [m.template_tokens for m in reps if m.template_tokens is not None]
    head = f"  lengths over {len(reps)} run(s)"  # the server's usage counts, template and tag included
    if methods:
        head += f": sized by {'/'.join(methods)}"
    if tmpl:
        head += (f", template {num(min(tmpl))}" + (f"–{num(max(tmpl))}" if max(tmpl) != min(tmpl) else "")
                 + " tokens counted in the input")
    console.print(head)
    for name, pairs in (
        ("input", [(r.requested_prompt_tokens, r.prompt_tokens) for r in done
                   if r.requested_prompt_tokens is not None and r.prompt_tokens is not None]),
        ("output", [(r.requested_output_tokens, r.output_tokens) for r in done
                    if r.requested_output_tokens is not None and r.token_count_source == "usage"]),
    ):
        if not any(getattr(m, name) is not None for m in reps):
            continue
        a = accuracy(pairs)  # type: ignore[arg-type]
        console.print(
            f"    {name}: n={a.n}, requested mean {num(a.mean_requested)} sd {num(a.sd_requested)}; "
            f"|counted − requested| mean {num(a.mean_abs_error)}, max {num(a.max_abs_error)}, "
            f"{num(None if a.share_exact is None else 100 * a.share_exact)}% exact")


def render_telemetry(console: Console, runs: Sequence[Run], *, wide: bool = False) -> None:
    """The telemetry table of ``runs`` and the reasons for what is missing.

    Columns with no figure in any row are left out and named (``wide``: all shown).
    """
    summarized = summaries(runs)
    got = telemetry_table(summarized, wide=wide)
    if got is None:
        console.print("  telemetry: " + W.TELEMETRY_OFF.text())
        return
    table, dropped = got
    console.print(table)
    if dropped:
        console.print(f"  telemetry: no figure in any row for {esc(', '.join(dropped))} "
                      "(columns left out; --wide shows every column)")
    for note in telemetry_notes(summarized):
        console.print(f"  telemetry: {esc(note)}")


def _row(t: Table, name: str, p: Percentiles) -> None:
    t.add_row(name, str(p.n), _ms(p.mean), _ms(p.p50), _ms(p.p90), _ms(p.p99))


def render_run_list(console: Console, result: RunList) -> None:
    """``tokcaliper runs``: one row per stored run (its n = completed requests), the damaged
    ones counted in the title; the measuring tool's column only when some run was imported."""
    rows = result.runs
    note = f" ({len(result.damaged)} damaged, not listed: see the warnings)" if result.damaged else ""
    t = Table(title=f"{len(rows)} run(s) in {esc(result.db)}{note}", title_justify="left")
    # A column that would read "tokcaliper" on every row is left out.
    tools = any(r.tool != "tokcaliper" for r in rows)
    for col in ("id", "session", "arm", "rep", *(("tool",) if tools else ()), "started (UTC)", "ok/failed",
                "aggregate tok/s", "TTFT p50 ms"):
        t.add_column(col, justify="right")
    for r in rows:
        t.add_row(str(r.id), esc(r.session), esc(r.arm), str(r.repetition + 1),
                  *((esc(r.tool),) if tools else ()), esc(r.started_at),
                  f"{r.completed}/{r.failed}", num(r.aggregate_output_tok_s, 4),
                  num(r.ttft_p50_ms))
    console.print(t)
    console.print("Each row is one run (n = its completed requests); "
                  "`tokcaliper show ID` gives percentiles, `bench --repeat` the CV.")


def print_record(record: Record) -> None:
    """``show --record``: the run as an audit record, JSON on stdout (what ``audit FILE``
    reads); fields without a value and the provenance are left out."""
    import json
    import sys

    doc = record.model_dump(mode="json", exclude_none=True, exclude={"provenance"})
    sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()
