#!/usr/bin/env python3
"""How much does the load client itself add to the TTFT / ITL it reports?

Compares tokcaliper's streaming client (``tokcaliper.load.driver.run_phase``)
with a named peer, the official ``openai`` Python SDK (``AsyncOpenAI``, streamed
chat completions iterated the documented way), against a server of exactly
known timing: ``tests/load/fake_server.py`` waits ``ttft`` then writes one SSE
token every ``itl``, sleeping to absolute deadlines.

Run from the repository root (no install needed; it falls back to ./src):

    python benchmarks/client_overhead.py                       # C = 1, 16, 64
    python benchmarks/client_overhead.py --concurrency 4 --requests 16
    python benchmarks/client_overhead.py --json                # same figures as JSON

Method
  * The fake server runs in a separate *process* (this script re-executed with
    ``--_serve``), pinned to its own CPU when there are >= 2, so its event loop
    does not share the client's CPU or GIL. It is instrumented from outside
    (``fake_server.py`` itself is unchanged): it records, on the same
    CLOCK_MONOTONIC as the client's ``perf_counter()``, when each request's
    schedule started (t0, right after the response headers went out) and when
    each token was actually written. Each request carries a tag ``[X.i]`` in
    its last user message (tokcaliper's own ``prompt_salt``; the same format
    for the peer) so server and client records are matched one to one.
  * Both clients run the same closed loop: C workers, N measured requests,
    a few warm-up requests first, the same prompts, body and max_tokens.
  * TTFT error = measured TTFT − scheduled TTFT; ITL error = measured gap −
    scheduled gap. Both include the server's own lateness and the request
    leg (connect, send, server accept/parse), which are the same server for
    both clients. The attribution table separates them: "srv late" = token
    written − its schedule; "req leg" = server t0 − client issue; "lag" =
    client timestamp − server write of the same token, i.e. loopback delivery
    plus the client's own lateness in noticing a chunk (its per-chunk work).
    TTFT error = req leg + srv late (1st token) + lag (1st token), exactly.
    "cpu% cli/srv" is each process's CPU time over the run (one core = 100):
    a client near 100 % is falling behind the stream.
  * To get tokcaliper's absolute timestamps the script wraps
    ``driver.stream_chat`` to note each request's issue time (one extra
    coroutine frame per request; the per-chunk path is untouched).

Ratios are "peer ÷ tokcaliper": > 1 means the peer reads further from the
truth. Absolute numbers are printed next to them, since the ratio of two
sub-millisecond numbers alone misleads.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
try:
    import tokcaliper  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT / "src"))

TAG_RE = re.compile(rb"\[([AB]\d+\.\d+)\] ")


# --------------------------------------------------------------------------
# Server process
# --------------------------------------------------------------------------

def serve(ttft_s: float, itl_s: float, tokens: int, cpu: int | None) -> None:
    """Run the instrumented fake server until stdin closes (child process)."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    sys.path.insert(0, str(ROOT))
    from aiohttp import web as aio_web

    from tests.load import fake_server

    log: dict[str, dict[str, Any]] = {}

    class TimedStreamResponse(aio_web.StreamResponse):
        """StreamResponse that notes when the schedule starts and each write."""

        async def prepare(self, request: aio_web.BaseRequest):  # type: ignore[override]
            out = await super().prepare(request)
            # fake_server's handler takes t0 = loop.time() right after this.
            request["t0"] = perf_counter()
            request["writes"] = self._writes = []
            return out

        async def write(self, data: bytes) -> None:  # type: ignore[override]
            self._writes.append(perf_counter())
            await super().write(data)

    class WebShim:
        """``aiohttp.web`` with StreamResponse replaced, for fake_server only."""

        StreamResponse = TimedStreamResponse

        def __getattr__(self, name: str) -> Any:
            return getattr(aio_web, name)

    @aio_web.middleware
    async def record(request: aio_web.Request, handler: Any) -> Any:
        t_in = perf_counter()
        resp = await handler(request)
        if "t0" in request:
            m = TAG_RE.search(await request.read())  # body is cached by the handler
            if m:
                log[m.group(1).decode()] = {
                    "t_in": t_in, "t0": request["t0"], "writes": request["writes"]
                }
        return resp

    async def get_log(_: aio_web.Request) -> aio_web.Response:
        out = {"requests": dict(log), "cpu_s": time.process_time(), "t": perf_counter()}
        log.clear()
        return aio_web.json_response(out)

    orig_make_app = fake_server.make_app

    def make_app(timing: Any) -> aio_web.Application:
        app = orig_make_app(timing)
        app.middlewares.append(record)
        app.router.add_get("/_log", get_log)
        return app

    fake_server.web = WebShim()  # type: ignore[assignment]
    fake_server.make_app = make_app  # type: ignore[assignment]
    timing = fake_server.FakeTiming(ttft_s=ttft_s, itl_s=itl_s, tokens=tokens)
    with fake_server.FakeServer(timing) as srv:
        print(srv.port, flush=True)
        sys.stdin.read()  # until the parent closes our stdin


class ServerProcess:
    def __init__(self, args: argparse.Namespace, cpu: int | None) -> None:
        cmd = [
            sys.executable, str(Path(__file__).resolve()), "--_serve",
            "--ttft-ms", str(args.ttft_ms), "--itl-ms", str(args.itl_ms),
            "--tokens", str(args.tokens),
        ]
        if cpu is not None:
            cmd += ["--_cpu", str(cpu)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()  # type: ignore[union-attr]
        if not line.strip().isdigit():
            self.close()
            raise SystemExit(f"fake server failed to start (got {line!r})")
        self.base_url = f"http://127.0.0.1:{int(line)}"

    def take_log(self) -> dict[str, Any]:
        """Per-request server records since the last call, and the server's CPU time."""
        with urllib.request.urlopen(self.base_url + "/_log", timeout=30) as r:
            return json.loads(r.read())

    def close(self) -> None:
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait(10)
        except Exception:
            self.proc.kill()
            self.proc.wait()


# --------------------------------------------------------------------------
# Clients. Each returns a list of dicts:
#   tag, issued (abs perf_counter), ended, times (abs stamps of content tokens), error
# --------------------------------------------------------------------------

def run_tokcaliper(base_url: str, c: int, n: int, warmup: int, tokens: int) -> tuple[list[dict], float]:
    from tokcaliper.load import driver
    from tokcaliper.load.prompts import builtin_prompts
    from tokcaliper.load.summary import summarize
    from tokcaliper.model.run import LoadConfig

    salt = f"A{c}"
    cfg = LoadConfig(
        base_url=base_url, concurrency=c, requests=n, warmup=warmup,
        max_tokens=tokens, prompt_salt=salt, request_timeout_s=60,
    )
    prompts = builtin_prompts()
    orig = driver.stream_chat
    seen: dict[int, float] = {}

    async def noting_stream_chat(*a: Any, **kw: Any) -> Any:
        raw = await orig(*a, **kw)
        seen[raw.index] = raw.issued  # absolute perf_counter of the issue
        return raw

    driver.stream_chat = noting_stream_chat  # type: ignore[assignment]
    try:
        driver.run_phase(cfg, prompts, warmup=True)
        seen.clear()
        records = driver.run_phase(cfg, prompts)
    finally:
        driver.stream_chat = orig  # type: ignore[assignment]
    out = []
    for r in records:
        issued = seen[r.index]
        times: list[float] = []
        if r.ttft_s is not None:
            t = issued + r.ttft_s
            times.append(t)
            for gap in r.itl_s:
                t += gap
                times.append(t)
        out.append({
            "tag": f"{salt}.{r.index}", "issued": issued,
            "ended": issued + (r.e2e_s or 0.0), "times": times, "error": r.error,
        })
    return out, summarize(records).wall_s


def run_openai(base_url: str, c: int, n: int, warmup: int, tokens: int) -> tuple[list[dict], float]:
    from openai import AsyncOpenAI

    from tokcaliper.load.driver import salted
    from tokcaliper.load.prompts import builtin_prompts

    prompts = builtin_prompts()
    salt = f"B{c}"

    async def main() -> list[dict]:
        client = AsyncOpenAI(base_url=base_url + "/v1", api_key="x", max_retries=0, timeout=60)

        async def one(index: int) -> dict:
            messages = salted(prompts[index % len(prompts)], f"[{salt}.{index}] ")
            times: list[float] = []
            error = None
            issued = perf_counter()
            try:
                stream = await client.chat.completions.create(
                    model="default", messages=messages, max_tokens=tokens, temperature=0.0,
                    stream=True, stream_options={"include_usage": True},
                    extra_body={"ignore_eos": True},
                )
                async for chunk in stream:
                    t = perf_counter()
                    if chunk.choices and chunk.choices[0].delta.content:
                        times.append(t)
            except Exception as e:  # noqa: BLE001 - record, as tokcaliper does
                error = f"{type(e).__name__}: {e}"
            ended = perf_counter()
            if not times and error is None:
                error = "no content"
            return {"tag": f"{salt}.{index}", "issued": issued, "ended": ended,
                    "times": times, "error": error}

        async def closed_loop(first: int, count: int) -> list[dict]:
            recs: list[dict] = []
            nxt = 0

            async def worker() -> None:
                nonlocal nxt
                while nxt < count:
                    i = nxt
                    nxt += 1
                    recs.append(await one(first + i))

            await asyncio.gather(*(worker() for _ in range(min(c, count))))
            return recs

        try:
            await closed_loop(0, warmup)
            return await closed_loop(warmup, n)
        finally:
            await client.close()

    recs = asyncio.run(main())
    wall = max(r["ended"] for r in recs) - min(r["issued"] for r in recs)
    return recs, wall


# --------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------

def pct(values: list[float], qs: tuple[int, ...] = (50, 90, 99)) -> dict[str, Any]:
    if not values:
        return {"n": 0, **{f"p{q}": None for q in qs}}
    arr = np.asarray(values) * 1e3  # ms
    return {"n": len(values), **{f"p{q}": float(v) for q, v in zip(qs, np.percentile(arr, qs))}}


def analyse(recs: list[dict], srv_log: dict, wall: float, c: int, ttft_s: float, itl_s: float,
            tokens: int) -> dict[str, Any]:
    ttft_err, itl_err, req_leg, srv_first, lag_first = [], [], [], [], []
    srv_all, lag_all, srv_itl = [], [], []
    failed = unmatched = 0
    for r in recs:
        if r["error"] or not r["times"]:
            failed += 1
            continue
        T = r["times"]
        ttft_err.append(T[0] - r["issued"] - ttft_s)
        itl_err += [b - a - itl_s for a, b in zip(T, T[1:])]
        s = srv_log.get(r["tag"])
        if s is None or len(s["writes"]) < tokens or len(T) != tokens:
            unmatched += 1
            continue
        W = s["writes"][:tokens]
        sched = [s["t0"] + ttft_s + k * itl_s for k in range(tokens)]
        req_leg.append(s["t0"] - r["issued"])
        srv_first.append(W[0] - sched[0])
        lag_first.append(T[0] - W[0])
        srv_all += [w - x for w, x in zip(W, sched)]
        srv_itl += [b - a - itl_s for a, b in zip(W, W[1:])]
        lag_all += [t - w for t, w in zip(T, W)]
    done = len(recs) - failed
    return {
        "concurrency": c, "requests": len(recs), "completed": done, "failed": failed,
        "unmatched": unmatched,
        "ttft_error_ms": pct(ttft_err),
        "itl_error_ms": pct(itl_err, (50, 99)),
        "throughput_rps": done / wall if wall > 0 else None,
        "ideal_rps": c / (ttft_s + (tokens - 1) * itl_s),
        "attribution": {
            "req_leg_ms": pct(req_leg, (50, 99)),
            "server_late_first_ms": pct(srv_first, (50, 99)),
            "server_late_all_ms": pct(srv_all, (50, 99)),
            "server_itl_error_ms": pct(srv_itl, (50, 99)),
            "lag_first_ms": pct(lag_first),
            "lag_all_ms": pct(lag_all, (50, 99)),
        },
    }


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b <= 0:
        return None
    return a / b


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

def f(v: float | None, nd: int = 2) -> str:
    return "-" if v is None else f"{v:.{nd}f}"


def print_report(res: dict[str, Any]) -> None:
    cfg = res["config"]
    print(f"client overhead: fake server TTFT {cfg['ttft_ms']} ms, ITL {cfg['itl_ms']} ms, "
          f"{cfg['tokens']} tokens/request; peer = "
          f"{'openai ' + res['openai_version'] if res['openai_version'] else '(openai not installed)'}; "
          f"{cfg['cpus']} CPUs, server pinned to CPU {cfg['server_cpu']}, client to {cfg['client_cpus']}")
    print("All figures in ms. err = measured − scheduled. n = samples behind each figure.\n")
    hdr = (f"{'C':>3} {'client':<10} {'n req':>5} {'TTFT err p50':>12} {'p90':>7} {'p99':>7}   "
           f"{'ITL err p50':>11} {'p99':>7} {'n ITL':>6}   {'req/s':>6} {'ideal':>6}  fail  {'cpu% cli/srv':>12}")
    print(hdr)
    print("-" * len(hdr))
    for lvl in res["levels"]:
        for name in ("tokcaliper", "openai"):
            m = lvl.get(name)
            if m is None:
                continue
            t, i = m["ttft_error_ms"], m["itl_error_ms"]
            print(f"{lvl['concurrency']:>3} {name:<10} {t['n']:>5} {f(t['p50']):>12} {f(t['p90']):>7} "
                  f"{f(t['p99']):>7}   {f(i['p50']):>11} {f(i['p99']):>7} {i['n']:>6}   "
                  f"{f(m['throughput_rps'], 1):>6} {f(m['ideal_rps'], 1):>6}  {m['failed']:>4}  "
                  f"{m['client_cpu_pct']:>6.0f}/{m['server_cpu_pct']:<5.0f}")
    print("\nAttribution (TTFT err = req leg + srv late + lag, per request):")
    hdr2 = (f"{'C':>3} {'client':<10} {'req leg p50':>11} {'p99':>6}  {'srv late 1st p50':>16} {'p99':>6} "
            f"{'all p99':>7}  {'lag 1st p50':>11} {'p90':>6} {'p99':>6}  {'lag all p50':>11} {'p99':>6} {'n':>6}")
    print(hdr2)
    print("-" * len(hdr2))
    for lvl in res["levels"]:
        for name in ("tokcaliper", "openai"):
            m = lvl.get(name)
            if m is None:
                continue
            a = m["attribution"]
            rl, sf, sa, lf, la = (a["req_leg_ms"], a["server_late_first_ms"], a["server_late_all_ms"],
                                  a["lag_first_ms"], a["lag_all_ms"])
            print(f"{lvl['concurrency']:>3} {name:<10} {f(rl['p50']):>11} {f(rl['p99']):>6}  "
                  f"{f(sf['p50']):>16} {f(sf['p99']):>6} {f(sa['p99']):>7}  {f(lf['p50']):>11} "
                  f"{f(lf['p90']):>6} {f(lf['p99']):>6}  {f(la['p50']):>11} {f(la['p99']):>6} {la['n']:>6}")
    if any("ratios" in lvl for lvl in res["levels"]):
        print("\nRatio peer (openai) ÷ tokcaliper, with the absolute numbers (ms):")
        for lvl in res["levels"]:
            r = lvl.get("ratios")
            if not r:
                continue
            a, b = lvl["tokcaliper"], lvl["openai"]
            for key, label, qs in (("ttft_error_ms", "TTFT err", ("p50", "p90", "p99")),):
                parts = [f"{q} {f(r[key][q], 1)}x ({f(b[key][q])} vs {f(a[key][q])})" for q in qs]
                print(f"  C={lvl['concurrency']:<3} {label:<13} " + "  ".join(parts)
                      + f"  [n {b[key]['n']} / {a[key]['n']}]")
            ka, kb = a["attribution"]["lag_first_ms"], b["attribution"]["lag_first_ms"]
            parts = [f"{q} {f(r['lag_first_ms'][q], 1)}x ({f(kb[q])} vs {f(ka[q])})"
                     for q in ("p50", "p90", "p99")]
            print(f"  C={lvl['concurrency']:<3} {'1st-token lag':<13} " + "  ".join(parts)
                  + f"  [n {kb['n']} / {ka['n']}]")
            print(f"  C={lvl['concurrency']:<3} {'excess TTFT':<13} peer − tokcaliper: "
                  f"p50 {f(r['excess_ttft_ms']['p50'])}  p99 {f(r['excess_ttft_ms']['p99'])} ms")


# --------------------------------------------------------------------------

def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--concurrency", default="1,16,64",
                   help="closed-loop concurrency, or a comma list (default 1,16,64)")
    p.add_argument("--requests", type=int, default=256,
                   help="measured requests per client and level (capped by --max-run-s)")
    p.add_argument("--max-run-s", type=float, default=15.0,
                   help="cap each measured run at about this long: fewer requests at low C (default 15)")
    p.add_argument("--warmup", type=int, default=2, help="warm-up requests per run (default 2)")
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--ttft-ms", type=float, default=50.0)
    p.add_argument("--itl-ms", type=float, default=10.0)
    p.add_argument("--no-pin", action="store_true", help="do not pin server and client to separate CPUs")
    p.add_argument("--json", action="store_true", help="print the figures as JSON instead of tables")
    p.add_argument("--_serve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--_cpu", type=int, default=None, help=argparse.SUPPRESS)
    args = p.parse_args()

    if args._serve:
        serve(args.ttft_ms / 1e3, args.itl_ms / 1e3, args.tokens, args._cpu)
        return 0

    ttft_s, itl_s = args.ttft_ms / 1e3, args.itl_ms / 1e3
    levels = [int(x) for x in str(args.concurrency).split(",") if x.strip()]
    if min(levels) < 1 or args.requests < 1 or args.tokens < 2:
        p.error("concurrency and requests must be >= 1, tokens >= 2")
    for clock in ("perf_counter", "monotonic"):
        info = time.get_clock_info(clock)
        if "CLOCK_MONOTONIC" not in info.implementation:
            print(f"warning: {clock} is {info.implementation}; server and client stamps may not "
                  "share a clock, the attribution table is then meaningless", file=sys.stderr)
    try:
        import openai
        openai_version = openai.__version__
    except ImportError:
        openai_version = None
        print("The named peer, the `openai` SDK, is not installed: only tokcaliper is measured.\n"
              "Install it with:  pip install openai   (it is not a tokcaliper dependency)",
              file=sys.stderr)

    cpus = sorted(os.sched_getaffinity(0))
    server_cpu = client_cpus = None
    if not args.no_pin and len(cpus) >= 2:
        server_cpu, client_cpus = cpus[-1], cpus[:-1]
        os.sched_setaffinity(0, set(client_cpus))

    req_s = ttft_s + (args.tokens - 1) * itl_s
    server = ServerProcess(args, server_cpu)
    res: dict[str, Any] = {
        "config": {"ttft_ms": args.ttft_ms, "itl_ms": args.itl_ms, "tokens": args.tokens,
                   "warmup": args.warmup, "requests_max": args.requests, "max_run_s": args.max_run_s,
                   "cpus": len(cpus), "server_cpu": server_cpu, "client_cpus": client_cpus,
                   "python": platform.python_version()},
        "openai_version": openai_version,
        "levels": [],
    }
    t_start = perf_counter()
    try:
        server.take_log()
        for c in levels:
            waves = max(1, int(args.max_run_s // req_s))
            n = max(1, min(args.requests, waves * c))
            lvl: dict[str, Any] = {"concurrency": c, "requests": n}
            clients = [("tokcaliper", run_tokcaliper)]
            if openai_version:
                clients.append(("openai", run_openai))
            for name, fn in clients:
                if not args.json:
                    print(f"... C={c} {name}: {n} requests", file=sys.stderr, flush=True)
                cpu0, srv0 = time.process_time(), server.take_log()
                recs, wall = fn(server.base_url, c, n, args.warmup, args.tokens)
                cpu1, srv1 = time.process_time(), server.take_log()
                lvl[name] = analyse(recs, srv1["requests"], wall, c, ttft_s, itl_s, args.tokens)
                # CPU busy over the whole run, warm-up included (one core = 100 %).
                span = srv1["t"] - srv0["t"]
                lvl[name]["client_cpu_pct"] = 100 * (cpu1 - cpu0) / span
                lvl[name]["server_cpu_pct"] = 100 * (srv1["cpu_s"] - srv0["cpu_s"]) / span
            if "openai" in lvl:
                a, b = lvl["tokcaliper"], lvl["openai"]
                lvl["ratios"] = {
                    key: {q: ratio(b[key][q] if key in b else b["attribution"][key][q],
                                   a[key][q] if key in a else a["attribution"][key][q])
                          for q in ("p50", "p90", "p99")}
                    for key in ("ttft_error_ms", "lag_first_ms")
                }
                lvl["ratios"]["excess_ttft_ms"] = {
                    q: (None if b["ttft_error_ms"][q] is None or a["ttft_error_ms"][q] is None
                        else b["ttft_error_ms"][q] - a["ttft_error_ms"][q])
                    for q in ("p50", "p90", "p99")
                }
            res["levels"].append(lvl)
    finally:
        server.close()
    res["elapsed_s"] = perf_counter() - t_start

    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print_report(res)
        print(f"\n({res['elapsed_s']:.0f} s)")
    bad = any(lvl[k]["failed"] or lvl[k]["unmatched"] for lvl in res["levels"]
              for k in ("tokcaliper", "openai") if k in lvl)
    if bad:
        print("warning: some requests failed or could not be matched to the server log", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
