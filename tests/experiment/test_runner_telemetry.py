"""measure_run with telemetry: summary and raw samples stored, J per output token, server watched.

Against the fake SSE server (exact timing, no llama-server needed) and a stand-in NVML
module; the "managed server" is a real child process so its /proc entry is real.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tokcaliper.experiment.runner import RunPlace, RunSetup, attach_energy_per_token, measure_run
from tokcaliper.load.prompts import builtin_prompts
from tokcaliper.model.run import LoadConfig
from tokcaliper.model.telemetry import DeviceSummary, TelemetrySummary
from tokcaliper.store import Store
from tokcaliper.telemetry import CpuBackend, NvmlBackend, ProcessBackend, TelemetrySampler

from ..load.fake_server import FakeServer, FakeTiming
from ..telemetry.fakes import FakeNvml, h200


class StandInServer:
    """What measure_run uses of a ManagedServer: ``proc``, ``raise_if_dead``, ``command_line``."""

    def __init__(self) -> None:
        # a child that burns CPU, like a server decoding
        self.proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        self.command_line = "stand-in"

    def raise_if_dead(self) -> None:
        assert self.proc.poll() is None

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def test_energy_per_token_arithmetic():
    t = TelemetrySummary(interval_s=0.1, devices=[
        DeviceSummary(device="gpu0", kind="nvidia_gpu", energy_j=300.0),
        DeviceSummary(device="cpu", kind="cpu")])
    attach_energy_per_token(t, 1200)
    assert t.device("gpu0").joules_per_output_token == 0.25
    assert t.device("cpu").joules_per_output_token is None  # no energy measured
    attach_energy_per_token(t, 0)  # nothing to divide by: left as it was
    assert t.device("gpu0").joules_per_output_token == 0.25


def test_measure_run_stores_summary_samples_and_joules_per_token(tmp_path):
    t0 = time.perf_counter()
    fake = FakeNvml([h200(energy_mj=lambda: 10**9 + int(250_000 * (time.perf_counter() - t0)))])  # 250 W
    server = StandInServer()
    try:
        with FakeServer(FakeTiming(ttft_s=0.02, itl_s=0.01, tokens=16)) as srv, Store(tmp_path / "r.db") as store:
            setup = RunSetup(
                load=LoadConfig(base_url=srv.base_url, concurrency=2, requests=8, warmup=1, max_tokens=16),
                prompts=builtin_prompts(), server=server,  # type: ignore[arg-type]
                telemetry=lambda: TelemetrySampler(0.02, backends=[NvmlBackend(nvml=fake), CpuBackend(),
                                                                   ProcessBackend()]),
            )
            run, _ = measure_run(setup, RunPlace(session="s", arm="a", repetition=0, position=0), store)
            stored = store.get_run(run.id)
            samples = store.telemetry_samples(run.id)
    finally:
        server.stop()
    tel = stored.telemetry
    assert tel.backends == ["nvml", "cpu", "process:client", "process:server"]
    g = tel.device("gpu0")
    assert g.energy_source == "counter" and g.energy_j > 0
    assert stored.metrics.output_tokens == 8 * 16
    assert g.joules_per_output_token == pytest.approx(g.energy_j / stored.metrics.output_tokens)
    assert g.energy_j == pytest.approx(250.0 * g.duration_s, rel=0.05)  # the scripted 250 W
    # the stand-in server spins: its process share is clearly above zero (shared 2-core box)
    srv_dev = tel.device("server")
    assert srv_dev.kind == "process" and srv_dev.cpu_share_mean > 0.1
    assert tel.device("client").cpu_share_mean is not None and tel.client_saturated in (True, False)
    # raw samples: every device, the run's edges included, on the sampler's clock
    assert {s.device for s in samples} == {"gpu0", "cpu", "client", "server"}
    gpu_samples = [s for s in samples if s.device == "gpu0"]
    assert len(gpu_samples) == g.sample_count
    assert gpu_samples[0].clock_mhz == g.clock_start_mhz and gpu_samples[-1].clock_mhz == g.clock_end_mhz
    assert gpu_samples[-1].t_mono_s - gpu_samples[0].t_mono_s == pytest.approx(g.duration_s)
