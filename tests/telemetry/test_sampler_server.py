"""The host back-ends for real, during runs on the local llama-server (marked ``server``).

Short: a 2 s idle phase and one 2 s run (plus the requests in flight at its end). The machine is shared, so the rate check
measures the sampler thread's own achieved rate (its tick times), and "utilisation
rises" is checked on the server process's own CPU share, which other load on the
host cannot fake; the host's utilisation must then be at least what the server
alone implies.
"""

from __future__ import annotations

import statistics
import time

import psutil
import pytest

from tokcaliper.experiment.runner import RunPlace, RunSetup, measure_run
from tokcaliper.load.prompts import builtin_prompts
from tokcaliper.model.run import LoadConfig
from tokcaliper.servers.managed import ManagedServer
from tokcaliper.store import Store
from tokcaliper.telemetry import TelemetrySampler

pytestmark = pytest.mark.server

INTERVAL = 0.1


def _achieved_rate(samples, device: str) -> tuple[float, float]:
    """(ticks per second between the first and last thread tick, median interval) of one device."""
    ts = [s.t_mono_s for s in samples if s.device == device]
    inner = ts[1:-1]  # the start and end samples are synchronous extras at the run's edges
    rate = (len(inner) - 1) / (inner[-1] - inner[0])
    return rate, statistics.median(b - a for a, b in zip(inner, inner[1:]))


def test_host_telemetry_during_a_real_run(tmp_path, local_llama):
    with ManagedServer(local_llama.command_template()) as server, Store(tmp_path / "r.db") as store:
        # Idle baseline: the server is up and waiting.
        idle = TelemetrySampler(interval_s=INTERVAL)
        idle.watch_process(server.proc.pid, "server")
        with idle:
            time.sleep(2.0)
        idle_summary = idle.summary()

        setup = RunSetup(
            load=LoadConfig(base_url=server.base_url, concurrency=2, duration_s=2.0, warmup=1, max_tokens=32),
            prompts=builtin_prompts(), server=server,
            telemetry=lambda: TelemetrySampler(interval_s=INTERVAL),
        )
        run, _ = measure_run(setup, RunPlace(session="s", arm="a", repetition=0, position=0), store)
        stored = store.get_run(run.id, with_requests=False)
        samples = store.telemetry_samples(run.id)
        count, size = store.telemetry_samples_size(run.id)

    tel = stored.telemetry
    assert tel is not None and tel.backends == ["cpu", "process:client", "process:server"]
    assert tel.backend_errors["nvml"].startswith("no NVIDIA GPU")  # reported, the run went on

    # Samples at the requested rate (±20 %), measured from the thread's own tick times.
    rate, median_dt = _achieved_rate(samples, "cpu")
    print(f"\nachieved {rate:.2f} Hz (median interval {1000 * median_dt:.1f} ms), "
          f"{tel.ticks} ticks, {tel.missed_ticks} missed, cost {tel.sample_cost_ms_mean:.3f} ms/tick mean, "
          f"{tel.sample_cost_ms_max:.3f} max; raw {size} B for {count} samples = {size / count:.1f} B/sample")
    assert 0.8 / INTERVAL <= rate <= 1.2 / INTERVAL
    assert 0.8 * INTERVAL <= median_dt <= 1.2 * INTERVAL
    assert tel.ticks >= 0.8 * tel.duration_s / INTERVAL

    # Utilisation rises during load: the server's own CPU share, idle vs loaded.
    srv_idle = idle_summary.device("server").cpu_share_mean
    srv_load = tel.device("server").cpu_share_mean
    print(f"server CPU share idle {srv_idle:.3f} → load {srv_load:.3f} cores; "
          f"host util idle {idle_summary.device('cpu').utilization_mean_pct:.1f}% → "
          f"load {tel.device('cpu').utilization_mean_pct:.1f}%, steal {tel.device('cpu').steal_share}")
    assert srv_idle < 0.1
    assert srv_load > srv_idle + 0.2
    # ... and the host's utilisation includes at least the server's share of all cores
    # (10 ms tick granularity: allow 0.05 of a core).
    ncpu = psutil.cpu_count()
    cpu = tel.device("cpu")
    assert cpu.utilization_mean_pct >= 100 * (srv_load - 0.05) / ncpu
    assert cpu.steal_share is not None and 0 <= cpu.steal_share <= 1
    assert len(cpu.core_utilization_mean_pct) == ncpu

    # The client process was measured and judged; the server's memory is the model's size at least.
    assert tel.device("client").cpu_share_mean is not None and tel.client_saturated in (True, False)
    assert tel.device("server").rss_peak_bytes > local_llama.model.stat().st_size

    # Summaries and raw samples are stored with the run.
    assert count == len(samples) == sum(d.sample_count for d in tel.devices)
    assert size / count < 40
