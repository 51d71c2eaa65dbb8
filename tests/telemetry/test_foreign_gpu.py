"""Other processes' GPU use per tick (issue 21 item 3): NVML's running processes minus the
server's tree and the client, their memory and SM share; the covariate and the gate."""

from __future__ import annotations

import os

import pytest

from tokcaliper.model.telemetry import FOREIGN_GPU_SM_BOUND_PCT, TelemetrySummary
from tokcaliper.stats.covariates import covariate_label, run_covariates
from tokcaliper.stats.gates import gate_telemetry
from tokcaliper.stats.verdict_gate import DEFAULT_NOISE_BAND
from tokcaliper.telemetry import NvmlBackend, ProcessBackend, TelemetrySampler, summarize_device
from tokcaliper.telemetry.raw import pack_samples, unpack_samples

from .fakes import FakeNvml, h200

GIB = 2**30
# client 50; server 100 with its GPU worker 101; another user's job 200; 300 is not in /proc
PARENTS = {50: 1, 100: 50, 101: 100, 200: 1}


def _drive(backend: NvmlBackend, fake: FakeNvml, ticks: int) -> list:
    out: list = []
    for i in range(ticks):
        fake.idx = i
        backend.sample(10.0 + i, 1.7e9 + i, out)
    return out


def test_foreign_gpu_processes_are_those_outside_the_server_tree_and_the_client():
    gpu = h200(procs_script=[[(101, 2 * GIB), (200, GIB)],
                             [(50, GIB // 2), (101, 2 * GIB), (200, GIB), (300, None)],
                             [(101, 2 * GIB)]],
               proc_util=[[(101, 90), (200, 10)],  # stamped at the probe's tick: seen by the probe
                          [(101, 80), (200, 20), (300, 5), (300, 7)],  # 300 twice: its mean, 6
                          [(101, 95)]])
    fake = FakeNvml([gpu])
    backend = NvmlBackend(nvml=fake, ppid_of=PARENTS.get)
    backend.own_pids(server=[100], client=[50])
    (dev,) = backend.open()
    out = _drive(backend, fake, 3)
    assert [s.foreign_procs for s in out] == [1, 2, 0]
    assert [s.foreign_mem_bytes for s in out] == [GIB, GIB, 0]  # 300's memory not given: 0
    assert [s.foreign_sm_pct for s in out] == [0.0, 26.0, 0.0]  # 20 + mean(5, 7)
    assert "pids [300] are not in this host's /proc while the server's are" in dev.unavailable["foreign_pids"]
    s = summarize_device(dev, out)
    assert s.foreign_procs_max == 2 and s.foreign_mem_peak_mib == 1024
    assert s.foreign_mem_mean_mib == pytest.approx(2048 / 3)
    assert s.foreign_sm_mean_pct == pytest.approx(26 / 3) and s.foreign_sm_max_pct == 26.0
    # the raw blob keeps the readings
    back = unpack_samples(pack_samples(out))
    assert [(x.foreign_procs, x.foreign_mem_bytes, x.foreign_sm_pct) for x in back] == \
        [(x.foreign_procs, x.foreign_mem_bytes, x.foreign_sm_pct) for x in out]


def test_pynvml_raising_success_for_no_sample_reads_as_none_taken():
    # pynvml's nvmlDeviceGetProcessUtilization raises NVMLError(NVML_SUCCESS) when its sizing
    # call finds no sample at all: a reading of 0, not an unsupported function
    from .fakes import FakeNVMLError

    fake = FakeNvml([h200(procs=[(200, GIB)], proc_util=[FakeNVMLError("Success", 0), [(200, 40)]])])
    backend = NvmlBackend(nvml=fake, ppid_of=PARENTS.get)
    (dev,) = backend.open()
    assert "foreign_sm_pct" not in dev.unavailable
    assert [s.foreign_sm_pct for s in _drive(backend, fake, 2)] == [0.0, 40.0]


def test_without_per_process_utilisation_the_sm_share_is_unknown_not_zero():
    fake = FakeNvml([h200(procs=[(200, GIB)], proc_util=None)])
    backend = NvmlBackend(nvml=fake, ppid_of=PARENTS.get)
    (dev,) = backend.open()
    out = _drive(backend, fake, 2)
    assert [s.foreign_sm_pct for s in out] == [None, None]
    assert "Not Supported" in dev.unavailable["foreign_sm_pct"]
    assert [s.foreign_procs for s in out] == [1, 1]


def test_the_sampler_tells_the_gpu_backend_which_processes_are_the_runs_own():
    me, gone = os.getpid(), 2**22 + 12345  # this process (the client) and a pid no process has
    fake = FakeNvml([h200(procs=[(me, GIB), (gone, 3 * GIB)])])
    sampler = TelemetrySampler(interval_s=10.0, backends=[NvmlBackend(nvml=fake), ProcessBackend(role="client")])
    with sampler:
        pass
    d = sampler.summary().device("gpu0")
    assert d.foreign_procs_max == 1 and d.foreign_mem_peak_mib == 3072


def _summary(sm: float | None, mem_mib: float = 1024.0) -> TelemetrySummary:
    from tokcaliper.model.telemetry import DeviceSummary

    gpu = DeviceSummary(device="gpu0", kind="nvidia_gpu", sample_count=5, foreign_procs_max=1,
                        foreign_mem_mean_mib=mem_mib, foreign_mem_peak_mib=mem_mib,
                        foreign_sm_mean_pct=sm, foreign_sm_max_pct=None if sm is None else 2 * sm)
    return TelemetrySummary(interval_s=0.1, devices=[gpu])


def test_a_run_whose_gpu_other_processes_used_is_flagged_like_a_throttled_one():
    # the bound is compare's default noise band, in percent
    assert FOREIGN_GPU_SM_BOUND_PCT == pytest.approx(100 * DEFAULT_NOISE_BAND)
    busy, calm, blind = gate_telemetry([_summary(12.5), _summary(0.5), _summary(None)])
    assert busy.flagged and [r.code for r in busy.reasons] == ["foreign_gpu"]
    assert busy.reasons[0].share == 0.125 and "12.5 % of its SM time" in busy.reasons[0].detail
    assert not calm.flagged and any("0.500 % of its SM time" in n for n in calm.notes)
    assert not blind.flagged and any("SM share not readable" in n for n in blind.notes)


def test_other_processes_gpu_use_is_a_covariate_set_outside_the_run():
    from tokcaliper.model.run import Run

    run = Run.model_construct(position=0, rest_s=None, telemetry=_summary(12.5, 512.0))
    cov = run_covariates([run, run.model_copy(update={"position": 1, "telemetry": _summary(0.0, 0.0)})])
    assert cov["foreign_gpu_sm_pct"] == [12.5, 0.0] and cov["foreign_gpu_mem_mib"] == [512.0, 0.0]
    assert covariate_label("foreign_gpu_sm_pct")[1] == "outside"


def test_pids_no_process_here_has_are_unknown_until_the_servers_own_is_seen():
    # In a container without the host's pid namespace NVML can list the host's pids, our own
    # server's among them: none is in /proc here, so nothing can be called another's.
    fake = FakeNvml([h200(procs_script=[[(7001, 2 * GIB)], [(7001, 2 * GIB), (101, GIB)]],
                          proc_util=[[], [(7001, 90)]])])
    backend = NvmlBackend(nvml=fake, ppid_of=PARENTS.get)
    backend.own_pids(server=[100], client=[50])
    (dev,) = backend.open()
    out = _drive(backend, fake, 2)
    assert (out[0].foreign_procs, out[0].foreign_mem_bytes, out[0].foreign_sm_pct) == (None, None, 0.0)
    assert "other processes' use is unknown" in dev.unavailable["foreign_pids"]
    # once the server's worker (101) shows, the pids are this namespace's: 7001 is another's
    assert (out[1].foreign_procs, out[1].foreign_mem_bytes, out[1].foreign_sm_pct) == (1, 2 * GIB, 90.0)
