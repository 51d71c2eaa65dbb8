#!/usr/bin/env python3
"""Check tokcaliper's telemetry sampler on a real NVIDIA GPU machine (METHODS.md M5).

Run from the repository root (no install needed; it falls back to ./src):

    python benchmarks/gpu_telemetry_check.py                      # 5 s idle, 20 s at 10 Hz, no load
    python benchmarks/gpu_telemetry_check.py --load matmul        # torch fp16 matmul loop on every GPU
    python benchmarks/gpu_telemetry_check.py --load-cmd "llama-bench -m model.gguf"
    python benchmarks/gpu_telemetry_check.py --json out.json      # also write host info + summary + samples

It prints: host info (GPUs, driver, power limits), idle power per device, a per-second
timeline of gpu0 (SM/memory clock MHz, power W, °C, util %, throttle reasons), the
per-run TelemetrySummary (clock drop, throttle shares, host steal, this script's own
CPU share), and sanity checks (sample count against interval, missed ticks, sampler
cost per tick in wall time and in this process's CPU time, NVML energy counter vs
trapezoidal power integral, readings NVML did not support, raw samples round-trip
through the stored blob). The load runs in a separate process so it neither
competes with the sampler for the GIL nor is disturbed by it.
Exit status: 0 when the checks pass, 1 when one fails, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

try:
    import tokcaliper  # noqa: F401
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tokcaliper.telemetry import (  # noqa: E402
    TelemetrySampler,
    collect_host_info,
    pack_samples,
    unpack_samples,
)

MATMUL_LOAD = r"""
import sys, time, torch
seconds = float(sys.argv[1])
devs = [torch.device(f"cuda:{i}") for i in range(torch.cuda.device_count())]
mats = [(torch.randn(8192, 8192, device=d, dtype=torch.float16),
         torch.randn(8192, 8192, device=d, dtype=torch.float16)) for d in devs]
end = time.monotonic() + seconds
n = 0
while time.monotonic() < end:
    for a, b in mats:
        torch.matmul(a, b)
    n += 1
    if n % 20 == 0:
        torch.cuda.synchronize()
torch.cuda.synchronize()
print(f"matmul load: {n} rounds on {len(devs)} GPU(s)", flush=True)
"""


def start_load(args: argparse.Namespace) -> tuple[subprocess.Popen | None, str]:
    if args.load_cmd:
        return subprocess.Popen(shlex.split(args.load_cmd)), f"command: {args.load_cmd}"
    if args.load == "matmul":
        try:
            import torch  # noqa: F401
        except ImportError:
            return None, "matmul requested but torch is not installed: sampling WITHOUT load"
        return (
            subprocess.Popen([sys.executable, "-c", MATMUL_LOAD, str(args.seconds)]),
            "torch fp16 8192² matmul loop",
        )
    return None, "none (idle)"


def fmt(v: object, nd: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="sampling time under load, s")
    ap.add_argument("--interval", type=float, default=0.1, help="sampling interval, s (default 10 Hz)")
    ap.add_argument("--idle", type=float, default=5.0, help="idle-power measurement before load, s (0 = skip)")
    ap.add_argument("--load", choices=["none", "matmul"], default="none")
    ap.add_argument("--load-cmd", default=None, help="shell command to run as the load (killed at the end)")
    ap.add_argument("--json", default=None, help="write host info, summary and samples to this file")
    args = ap.parse_args()
    if args.seconds <= 0 or args.interval <= 0 or args.idle < 0:
        ap.error("--seconds and --interval must be > 0, --idle >= 0")

    host = collect_host_info()
    print("== host")
    print(f"{host.hostname}  {host.os_release or host.os} kernel {host.kernel}  Python {host.python_version}  "
          f"tokcaliper {host.tokcaliper_version}")
    print(f"CPU {host.cpu_model}  {host.cpu_logical_cores} logical / {host.cpu_physical_cores} physical  "
          f"governor {host.cpu_governor}  mem {fmt((host.memory_total_bytes or 0) / 2**30)} GiB")
    print(f"NVIDIA driver {host.gpu_driver_version}  CUDA {host.cuda_driver_version}")
    for g in host.gpus:
        print(f"  gpu{g.index}: {g.name}  {fmt(g.memory_total_mib, 0)} MiB  limit {fmt(g.power_limit_w)} W "
              f"(default {fmt(g.power_limit_default_w)} W)  {g.uuid}  missing={g.missing or '{}'}")
    if host.gpu_unavailable_reason:
        print(f"  {host.gpu_unavailable_reason}")
    if host.missing:
        print(f"  missing: {host.missing}")

    sampler = TelemetrySampler(interval_s=args.interval)
    if args.idle > 0:
        idle = sampler.measure_idle(args.idle)
        print(f"\n== idle power over {args.idle:g} s: " + (", ".join(f"{k} {v:.1f} W" for k, v in idle.items()) or "none measurable"))

    proc, load_desc = start_load(args)
    print(f"\n== sampling {args.seconds:g} s every {args.interval:g} s; load: {load_desc}")
    t0 = time.monotonic()
    with sampler:
        time.sleep(args.seconds)
    wall = time.monotonic() - t0
    if proc is not None:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()

    samples = sampler.samples
    summary = sampler.summary()
    gpu0 = [s for s in samples if s.device == "gpu0"]
    if gpu0:
        print("\n== gpu0 timeline (about one row per second)")
        print(f"{'t/s':>6} {'SM MHz':>7} {'mem MHz':>7} {'W':>6} {'limit W':>7} {'°C':>4} {'util%':>5}  reasons")
        step = max(1, round(1.0 / args.interval))
        for s in gpu0[::step] + ([gpu0[-1]] if (len(gpu0) - 1) % step else []):
            print(f"{s.t_mono_s - gpu0[0].t_mono_s:6.1f} {fmt(s.clock_mhz, 0):>7} {fmt(s.mem_clock_mhz, 0):>7} "
                  f"{fmt(s.power_w):>6} {fmt(s.power_limit_w, 0):>7} {fmt(s.temperature_c, 0):>4} "
                  f"{fmt(s.utilization_pct, 0):>5}  {','.join(s.throttle_reasons) or '-'}")

    print("\n== per-run summary")
    for d in summary.devices:
        print(f"[{d.device}] {d.name}  samples {d.sample_count} over {fmt(d.duration_s, 2)} s")
        print(f"  clock MHz start {fmt(d.clock_start_mhz, 0)} end {fmt(d.clock_end_mhz, 0)} "
              f"mean {fmt(d.clock_mean_mhz, 0)} min {fmt(d.clock_min_mhz, 0)}   mem clock mean {fmt(d.mem_clock_mean_mhz, 0)}")
        print(f"  power W mean {fmt(d.power_mean_w)} max {fmt(d.power_max_w)}  limit {fmt(d.power_limit_start_w)}"
              f"→{fmt(d.power_limit_end_w)}   energy {fmt(d.energy_j)} J ({d.energy_source}; "
              f"power integral {fmt(d.energy_power_integral_j)} J)")
        print(f"  temp °C start {fmt(d.temperature_start_c, 0)} peak {fmt(d.temperature_peak_c, 0)} "
              f"end {fmt(d.temperature_end_c, 0)}   util mean {fmt(d.utilization_mean_pct)} %")
        print(f"  throttle share {d.throttle_share or '{}'} (of {d.throttle_samples} samples)"
              f"   clock drop start→end {fmt(d.clock_drop_mhz, 0)} MHz")
        if d.kind == "cpu":
            print(f"  host steal share {fmt(d.steal_share, 4)}   per-core util % {d.core_utilization_mean_pct}")
        if d.kind == "process":
            print(f"  CPU {fmt(d.cpu_time_s, 2)} s, share mean {fmt(d.cpu_share_mean, 3)} max {fmt(d.cpu_share_max, 3)} "
                  f"cores, RSS peak {fmt((d.rss_peak_bytes or 0) / 2**20)} MiB")
        if d.unavailable:
            print(f"  unavailable: {d.unavailable}")
    print(f"ticks {summary.ticks}, missed {summary.missed_ticks}, sampler cost/tick mean "
          f"{fmt(summary.sample_cost_ms_mean, 2)} ms max {fmt(summary.sample_cost_ms_max, 2)} ms")
    if summary.gpu_unavailable_reason:
        print(summary.gpu_unavailable_reason)
    if summary.backend_errors:
        print(f"back-end errors: {summary.backend_errors}")
    print(f"back-ends: {summary.backends}   client: {summary.client_saturation}")
    blob = pack_samples(samples)
    print(f"raw samples: {len(samples)} in {len(blob)} B = {len(blob) / max(1, len(samples)):.1f} B/sample")

    print("\n== checks")
    failures = 0

    def check(ok: bool, text: str) -> None:
        nonlocal failures
        failures += not ok
        print(f"  [{'ok' if ok else 'FAIL'}] {text}")

    expected = wall / args.interval + 1.5  # start + end samples, last thread tick may race the stop
    check(abs(summary.ticks - expected) <= max(2, 0.1 * expected),
          f"ticks {summary.ticks} ≈ {expected:.0f} expected from {wall:.2f} s / {args.interval} s")
    check(summary.missed_ticks == 0, f"missed ticks {summary.missed_ticks} == 0")
    check((summary.sample_cost_ms_max or 0) < 0.5 * args.interval * 1000,
          f"sampler cost per tick max {fmt(summary.sample_cost_ms_max, 2)} ms < half the interval")
    client = next((d for d in summary.devices if d.device == "client"), None)
    if client is not None and client.cpu_time_s is not None and summary.ticks:
        per_tick = 1000 * client.cpu_time_s / summary.ticks  # an upper bound: the whole process
        check(per_tick < 0.1 * args.interval * 1000,
              f"this process's CPU per tick {per_tick:.2f} ms < 10% of the interval (bound on sampler cost)")
    check(unpack_samples(blob) == samples, "raw samples round-trip through the stored blob")
    check(bool(host.gpus), f"NVML sees GPUs ({len(host.gpus)})")
    for d in summary.devices:
        if d.kind != "nvidia_gpu":
            continue
        check(d.clock_start_mhz is not None and d.power_mean_w is not None and d.temperature_peak_c is not None,
              f"{d.device}: clock, power, temperature read")
        check(d.throttle_samples == d.sample_count, f"{d.device}: throttle reasons read in every sample")
        if d.energy_source == "counter" and d.energy_power_integral_j:
            rel = abs(d.energy_j - d.energy_power_integral_j) / d.energy_power_integral_j
            check(rel < 0.15, f"{d.device}: energy counter {d.energy_j:.1f} J vs power integral "
                              f"{d.energy_power_integral_j:.1f} J differ by {rel:.1%} (< 15%)")
        else:
            check(False, f"{d.device}: no NVML energy counter (energy from {d.energy_source})")
    print(f"\n{failures} check(s) failed" if failures else "\nall checks passed")

    if args.json:
        Path(args.json).write_text(json.dumps({
            "host": host.model_dump(),
            "summary": summary.model_dump(),
            "samples": [s.model_dump() for s in samples],
            "load": load_desc,
        }, indent=1))
        print(f"wrote {args.json}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
