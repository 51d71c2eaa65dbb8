"""Foreign load arithmetic (issue 21 item 3): host busy − server − client, per tick (pure)."""

from __future__ import annotations

from tokcaliper.model.telemetry import TelemetrySample, TelemetrySummary
from tokcaliper.stats.gates import gate_telemetry
from tokcaliper.stats.noise import noise_floor
from tokcaliper.telemetry.sampler import foreign_cpu


def _s(device: str, t: float, util: float | None = None, cpu: float | None = None) -> TelemetrySample:
    return TelemetrySample(device=device, t_mono_s=t, t_wall_s=1e9 + t, utilization_pct=util,
                           core_utilization_pct=[util, util] if device == "cpu" else None, cpu_time_s=cpu)


def _run(host_pct: list[float | None], server: list[float], client: list[float]) -> list[TelemetrySample]:
    out = []
    for i, (u, s, c) in enumerate(zip(host_pct, server, client)):
        t = 0.5 * i
        out += [_s("cpu", t, u), _s("client", t, cpu=c), _s("server", t, cpu=s)]
    return out


def test_foreign_is_host_busy_minus_server_and_client():
    # 2 CPUs, 90 % busy = 1.8 cores; server 1.0 core (0.5 s per 0.5 s), client 0.2: foreign 0.6.
    ss = _run([None, 90, 90, 90, 90], [0, 0.5, 1.0, 1.5, 2.0], [0, 0.1, 0.2, 0.3, 0.4])
    mean, peak, line = foreign_cpu(ss)
    assert abs(mean - 0.6) < 1e-9 and abs(peak - 0.6) < 1e-9
    assert line.startswith("other processes 0.600 cores = host busy 1.80 − server 1.00 − client 0.200")
    # A burst: 100 % for the last second while the server's share stays → the ≥ 1 s max finds it.
    ss = _run([None, 50, 50, 100, 100], [0, 0.25, 0.5, 0.75, 1.0], [0, 0, 0, 0, 0])
    mean, peak, _ = foreign_cpu(ss)
    assert abs(mean - 1.0) < 1e-9 and abs(peak - 1.5) < 1e-9
    # No host samples: nothing to say.
    assert foreign_cpu([_s("client", 0, cpu=0), _s("client", 1, cpu=1)]) == (None, None, None)


def test_a_server_not_sampled_counts_as_foreign_and_says_so():
    ss = [x for x in _run([None, 100, 100], [0, 0.5, 1.0], [0, 0, 0]) if x.device != "server"]
    mean, _, line = foreign_cpu(ss)
    assert abs(mean - 2.0) < 1e-9 and "server not sampled" in line


def test_foreign_load_over_the_bound_flags_the_run_like_a_throttled_one():
    busy = TelemetrySummary(interval_s=0.1, devices=[], foreign_cpu_cores_mean=0.9, foreign_cpu="other processes 0.900 cores")
    quiet = busy.model_copy(update={"foreign_cpu_cores_mean": 0.1})
    from tokcaliper.model.telemetry import DeviceSummary

    dev = [DeviceSummary(device="cpu", kind="cpu", sample_count=3)]
    g = gate_telemetry([busy.model_copy(update={"devices": dev}), quiet.model_copy(update={"devices": dev})])
    assert [x.code for x in g[0].reasons] == ["foreign_load"] and g[0].flagged
    assert "≥ 0.500: the server shared its host" in g[0].reasons[0].detail
    assert not g[1].flagged


def test_the_noise_floor_names_the_covariate_that_explains_its_spread():
    tput = {"aggregate_output_tok_s": [118.0, 12.64, 110.0, 15.0, 100.0]}
    cov = {"foreign_cpu_cores": [0.05, 0.9, 0.1, 0.85, 0.2], "position": [0.0, 1, 2, 3, 4],
           "rest_s": [None, 0.1, 0.1, 0.1, 0.1]}
    m = noise_floor(tput, covariates=cov).metrics[0]
    assert m.explained_by.name == "foreign_cpu_cores"
    assert m.explanation.startswith("CV 74.1%: ") and "other processes' CPU (cores used) 0.875 on average in the 2 " \
        "lowest runs, 0.0750 in the 2 highest (ρ = -1.00 with aggregate_output_tok_s, n = 5" in m.explanation
    assert m.explanation in m.verdict.arithmetic
    # A covariate unrelated to the spread says nothing.
    flat = noise_floor(tput, covariates={"foreign_cpu_cores": [0.5, 0.1, 0.2, 0.6, 0.4]}).metrics[0]
    assert flat.explanation is None and noise_floor(tput).metrics[0].explanation is None


def test_contended_and_quiet_runs_are_named_by_separation_when_their_order_within_is_noise():
    # 3 contended runs and 3 quiet ones; within each half the order goes against the covariate,
    # so ρ is only -0.77 (exact p 0.10) although every contended run is below every quiet one.
    tput = {"aggregate_output_tok_s": [100.0, 40.0, 104.0, 44.0, 108.0, 48.0]}
    cov = {"foreign_cpu_cores": [0.12, 0.9, 0.11, 0.95, 0.10, 1.0],
           "server_cpu_cores": [1.8, 0.9, 1.85, 1.0, 1.9, 1.1],  # the mediator: ρ = +1
           "client_cpu_cores": [0.2, 0.05, 0.21, 0.06, 0.22, 0.07],  # an effect of throughput
           "position": [0.0, 1, 2, 3, 4, 5]}
    m = noise_floor(tput, covariates=cov).metrics[0]
    assert m.explained_by.name == "foreign_cpu_cores" and round(m.explained_by.rho, 2) == -0.77
    assert m.explained_by.separation == -1.0 and abs(m.explained_by.separation_p - 0.1) < 1e-9
    assert "0.950 on average in the 3 lowest runs, 0.110 in the 3 highest" in m.explanation
    assert "it separates the lower 3 runs from the upper 3 completely, Mann–Whitney exact p = 0.10" \
        in m.explanation
    # One quiet run with as much foreign load as a contended one: other processes do not separate
    # the halves; the server's own CPU still does, and is named (the symptom, not its cause) …
    blurred = dict(cov, foreign_cpu_cores=[0.12, 0.9, 0.11, 0.95, 0.96, 1.0])
    assert noise_floor(tput, covariates=blurred).metrics[0].explained_by.name == "server_cpu_cores"
    # … and without it nothing is.
    blurred.pop("server_cpu_cores")
    assert noise_floor(tput, covariates=blurred).metrics[0].explanation is None
    # 4 runs: ρ = -1 is named; 2 against 2 separated completely (ρ = -0.6) is p = 1/3: too weak.
    four = {"t": [100.0, 40.0, 104.0, 44.0]}
    assert noise_floor(four, covariates={"foreign_cpu_cores": [0.2, 0.9, 0.1, 0.8]}).metrics[0].explanation \
        is not None  # ρ = -1 reaches the bound on its own
    assert noise_floor(four, covariates={"foreign_cpu_cores": [0.1, 0.8, 0.2, 0.9]}).metrics[0].explanation \
        is None
