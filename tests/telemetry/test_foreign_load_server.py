"""Foreign load beside a real llama-server bench (issue 21; marked ``server``).

Six short runs against the shared llama-server, interleaved quiet / burning, with a
graded dose so that the burning runs differ among themselves too: before runs 2, 4
and 6 the test starts 2, 1 and 3 bounded CPU burners (busy Python loops that end by
themselves after 60 s and are killed after the run). Each run starts only once its
burners say they are in their loop: a CI run once measured a 3-burner run as quiet
(server 1.96 of 2 cores, foreign 0.002) while the load average jumped by 1.1 in
seconds, i.e. the burners were still starting, blocked on disk. The machine is shared with other
work, so nothing is compared with an absolute "quiet": the runs with the burners must
carry more foreign CPU than the runs without, the noise floor must name the foreign
load, ``analyze``'s ranking must put it first, and no run may blame the client unless
its own figures show it.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

import psutil
import pytest

from tokcaliper.experiment.runner import RunPlace, RunSetup, measure_run
from tokcaliper.load.monitor import CPU_BOUND_SHARE, LAG_BOUND_S
from tokcaliper.load.prompts import builtin_prompts
from tokcaliper.model.metrics import METRICS, scalar_series
from tokcaliper.model.run import LoadConfig
from tokcaliper.model.telemetry import FOREIGN_CPU_BOUND_CORES
from tokcaliper.stats.covariates import run_covariates
from tokcaliper.stats.gates import gate_runs
from tokcaliper.stats.spread import analyze_values
from tokcaliper.stats.noise import noise_floor
from tokcaliper.store import Store
from tokcaliper.telemetry import TelemetrySampler

pytestmark = pytest.mark.server

#: Busy loops started before each run: quiet and burning interleaved, the burning graded.
DOSES = [0, 2, 0, 1, 0, 3]
BURN = "import time\nt = time.time()\nprint('burning', flush=True)\nwhile time.time() - t < 60: pass"
#: Seconds a burner may take to start (interpreter start-up under contention).
START_TIMEOUT_S = 60.0
THROUGHPUT = "aggregate_output_tok_s"


def _burners(n: int) -> list[subprocess.Popen]:
    """``n`` burners, returned once each has printed that it is in its loop."""
    procs = [subprocess.Popen([sys.executable, "-c", BURN], stdout=subprocess.PIPE, text=True)
             for _ in range(n)]
    deadline = time.monotonic() + START_TIMEOUT_S
    for p in procs:
        ready, _, _ = select.select([p.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready or p.stdout.readline().strip() != "burning":  # type: ignore[union-attr]
            _stop(procs)
            pytest.fail(f"a CPU burner did not start within {START_TIMEOUT_S:.0f} s")
    return procs


def _stop(procs: list[subprocess.Popen]) -> float:
    """Kill the burners; returns the CPU seconds they used (psutil), for the log."""
    used = 0.0
    for p in procs:
        try:
            t = psutil.Process(p.pid).cpu_times()
            used += t.user + t.system
        except psutil.Error:
            pass
        p.kill()
    for p in procs:
        p.wait()
        if p.stdout is not None:
            p.stdout.close()
    return used


def test_foreign_load_is_a_covariate_names_the_noise_and_is_not_blamed_on_the_client(tmp_path, llama_server):
    cores = os.cpu_count() or 2
    load = os.getloadavg()[0]
    if load > 1.5 * cores:
        # Burners add foreign load only where some CPU is left to take. Seen on the shared
        # 2-core host: at load 24, 1.83–1.84 foreign cores in every run with and without
        # them; at load 4–6 the host was pegged (busy 2.00) and 1.49–1.61, unordered.
        pytest.skip(f"host already saturated by other work (load {load:.1f} on {cores} cores): "
                    "burners cannot add foreign load to compare")
    setup = RunSetup(
        load=LoadConfig(base_url=llama_server, concurrency=2, requests=4, warmup=1, max_tokens=4),
        prompts=builtin_prompts(), telemetry=lambda: TelemetrySampler(interval_s=0.1),
    )
    runs = []
    with Store(tmp_path / "r.db") as store:
        for i, dose in enumerate(DOSES):
            procs = _burners(dose)
            try:
                run, _ = measure_run(setup, RunPlace(session="s", arm="a", repetition=i, position=i), store)
            finally:
                burnt = _stop(procs)
            runs.append(store.get_run(run.id, with_requests=False))
            print(f"run {i + 1} ({dose} burners, {burnt:.2f} CPU-s): load {os.getloadavg()[0]:.2f}, "
                  f"{run.metrics.wall_s:.2f} s", flush=True)

    foreign = [r.telemetry.foreign_cpu_cores_mean for r in runs]
    tput = [r.metrics.aggregate_output_tok_s for r in runs]
    print("\nforeign cores", foreign, "throughput", tput, [r.telemetry.foreign_cpu for r in runs])
    # The server was found by its port and watched: its CPU is not counted as foreign.
    assert all(r.telemetry.device("server").cpu_share_mean is not None for r in runs)
    # Runs with the burners carry the foreign load, more than each run without.
    assert min(f for f, d in zip(foreign, DOSES) if d) > max(f for f, d in zip(foreign, DOSES) if not d)
    # analyze's ranking (its split, its groups), first: other processes' CPU, or the steal
    # time the same burners cause on a VM (both set outside the run).
    cov = run_covariates(runs)
    analysis = analyze_values(tput, cov, metric=THROUGHPUT)
    ranked = analysis.covariates
    print("split clumped:", analysis.split.clumped, "p", analysis.split.p,
          [(r.name, round(r.rho, 3), r.separation) for r in ranked[:3]])
    assert ranked[0].name in ("foreign_cpu_cores", "steal_share") and ranked[0].rho < 0
    # The noise floor names it in one sentence.
    report = noise_floor(scalar_series([r.metrics for r in runs]), covariates=cov)
    m = next(x for x in report.metrics if x.name == METRICS[THROUGHPUT].label)
    print(m.explanation)
    assert m.explained_by is not None and m.explained_by.name in ("foreign_cpu_cores", "steal_share")
    assert m.explanation.startswith("CV ") and ("other processes' CPU" in m.explanation
                                                or "steal" in m.explanation)
    assert "ρ = -" in m.explanation  # slower with more foreign load
    # A run during which foreign load crossed the bound is flagged like a throttled run.
    for g, f in zip(gate_runs(runs), foreign):
        assert any(x.code == "foreign_load" for x in g.reasons) == (f >= 0.5)
    # No run blames the client unless its own figures show it: its CPU share, or a loop lag
    # while other processes did not hold the host (then the host descheduled an idle loop).
    for r, f in zip(runs, foreign):
        c = r.metrics.client
        if any("the client, not the server" in x for x in c.limits):
            assert c.cpu_share > CPU_BOUND_SHARE or (c.loop_lag_s.p99 > LAG_BOUND_S and f < FOREIGN_CPU_BOUND_CORES)
