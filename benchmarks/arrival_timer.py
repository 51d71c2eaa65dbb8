"""Open-loop dispatch delay with the timerfd arrival timer against the plain ``loop.call_at``.

Against ``tests/load/reference_server.py`` (first token 2 ms, 1 ms between 2 tokens), a Poisson
schedule at ``--rate`` req/s of ``--arrivals`` requests, ≤ 64 in flight, is replayed with each
timer in turn, interleaved ABAB… ``--rounds`` times. Prints each round's dispatch delay (sent −
scheduled) p50/p99/max in ms, then per timer the median over rounds of each, and the ratio
call_at ÷ timerfd. ``loop.call_at`` sleeps in ``epoll_wait``, whose timeout is whole
milliseconds rounded up, so its arrivals leave 0–1 ms late; the timerfd's expiry is exact.

Run on a quiet machine: ``python benchmarks/arrival_timer.py [--json]``; the load average is
printed with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "load"))
sys.path.insert(0, str(ROOT / "src"))

import numpy as np  # noqa: E402
from reference_server import RefServer, Timing  # noqa: E402

from tokcaliper.load import timer as timer_mod  # noqa: E402
from tokcaliper.load.driver import run_phase  # noqa: E402
from tokcaliper.load.prompts import builtin_prompts  # noqa: E402
from tokcaliper.model.run import LoadConfig  # noqa: E402


def one_round(url: str, rate: float, arrivals: int, seed: int, use_timerfd: bool) -> dict[str, float]:
    """Dispatch delay percentiles (ms) of one open-loop phase with the chosen timer."""
    saved = timer_mod._LIBC
    if not use_timerfd:
        timer_mod._LIBC = None
    try:
        cfg = LoadConfig(base_url=url, concurrency=64, requests=arrivals, warmup=0, rate_rps=rate,
                         arrival="poisson", arrival_seed=seed, prompt_salt="t")
        phase = run_phase(cfg, builtin_prompts())
    finally:
        timer_mod._LIBC = saved
    d = np.array([r.start_s - r.scheduled_s for r in phase if r.ok]) * 1e3
    return {"p50_ms": float(np.percentile(d, 50)), "p99_ms": float(np.percentile(d, 99)),
            "max_ms": float(d.max()), "n": int(d.size)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=100.0)
    ap.add_argument("--arrivals", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if not timer_mod.timerfd_available():
        print("arrival_timer: no timerfd on this platform (Linux only): nothing to compare", file=sys.stderr)
        return 2
    rows: list[dict] = []
    with RefServer(Timing(ttft_s=0.002, itl_s=0.001, tokens=2), nice=-5) as srv:
        for r in range(a.rounds):
            for use_fd in (True, False):
                rows.append({"round": r, "timer": "timerfd" if use_fd else "call_at",
                             **one_round(srv.base_url, a.rate, a.arrivals, 100 + r, use_fd)})
    load = os.getloadavg()
    summary = {t: {k: statistics.median(x[k] for x in rows if x["timer"] == t) for k in ("p50_ms", "p99_ms", "max_ms")}
               for t in ("timerfd", "call_at")}
    ratio = {k: summary["call_at"][k] / summary["timerfd"][k] for k in ("p50_ms", "p99_ms")}
    if a.json:
        print(json.dumps({"rounds": rows, "median": summary, "call_at_over_timerfd": ratio,
                          "loadavg": load}, indent=1))
        return 0
    print(f"open loop, Poisson {a.rate:g} req/s × {a.arrivals}, ≤ 64 in flight; dispatch delay (ms)")
    print(f"{'round':>5}  {'timer':<8} {'p50':>7} {'p99':>7} {'max':>7}")
    for x in rows:
        print(f"{x['round']:>5}  {x['timer']:<8} {x['p50_ms']:7.3f} {x['p99_ms']:7.3f} {x['max_ms']:7.3f}")
    for t, s in summary.items():
        print(f"median of {a.rounds} rounds, {t:<8}: p50 {s['p50_ms']:.3f}  p99 {s['p99_ms']:.3f}  "
              f"max {s['max_ms']:.3f}")
    print(f"call_at ÷ timerfd: p50 ×{ratio['p50_ms']:.1f}, p99 ×{ratio['p99_ms']:.1f}   "
          f"(load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
