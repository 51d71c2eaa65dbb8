"""The typed results of ``bench``, ``experiment show|list`` and ``capacity``, built from stored runs
(issue 19 item 1): every figure the views print is computed here, once."""

from __future__ import annotations

import statistics

import pytest

from tokcaliper.audit.run_roofline import arm_rooflines
from tokcaliper.errors import InputError, ServerError
from tokcaliper.experiment.bench_result import bench_result, level_noise_floor, sweep_result
from tokcaliper.experiment.capacity import capacity_experiment, capacity_of_experiment, capacity_rates
from tokcaliper.experiment.runner import SERVER_DIED
from tokcaliper.experiment.show import experiment_list, experiment_show, no_valid_measured_run
from tokcaliper.experiment.spec import LoadSpec, parse_experiment
from tokcaliper.store import Store

from tests.experiment.bench_runs import T0, _run, _sweep_store, _two_arm_store


def _agg(report, name: str = "aggregate"):  # type: ignore[no-untyped-def]
    return next(m for m in report.metrics if name in m.name)


def test_bench_result_has_the_noise_floor_of_the_valid_runs_and_names_the_one_left_out(tmp_path):
    values = [100.0, 110.0, 90.0, 105.0]
    runs = [_run("A", i, v) for i, v in enumerate(values)] + [_run("A", 4, 10.0, valid=False)]
    res = bench_result(runs, db=tmp_path / "x.db", roofline_of=arm_rooflines, idle_power_w={},
                       idle_seconds=2.0, repeat=5)
    agg = _agg(res.noise_floor)
    assert agg.description.n == 4  # the invalid run is left out
    assert agg.description.mean == pytest.approx(statistics.mean(values))
    assert agg.description.cv == pytest.approx(statistics.stdev(values) / statistics.mean(values))
    assert [r.valid for r in res.runs] == [True] * 4 + [False]
    assert (res.session, res.server_command, res.server_version, res.repeat) == ("s1", "llama-server -m x", "b1", 5)
    codes = [w.code for w in res.warnings]
    # the noise floor's own (4 runs; these fake runs share one TTFT, ITL…), the run left out, no power
    assert codes[-2:] == ["run-left-out", "no-power-source"]
    assert set(codes[:-2]) == {"few-repetitions", "identical-runs"}  # n = 4 < 5
    assert res.warnings[-2].message.startswith("A: run 5 (#None) left out of the noise floor: 12% of requests")
    # the roofline is the audit's, per arm: these runs store no host, so it says what is missing
    (arm,) = res.roofline
    assert arm.arm == "A" and arm.n == 0 and arm.missing[0] == "device: the run stores no host information"
    # the JSON keeps bench's keys and leaves out the stored runs the text view draws
    data = res.model_dump(mode="json")
    assert {"session", "db", "config", "server_command", "server_version", "idle_power_w", "runs",
            "noise_floor", "roofline", "warnings"} <= data.keys() and "stored" not in data
    assert data["runs"][0]["metrics"]["aggregate_output_tok_s"] == pytest.approx(100.0)


def test_bench_result_with_no_valid_run_raises_the_exit_3_reason(tmp_path):
    runs = [_run("A", i, 50.0, valid=False) for i in range(2)]
    with pytest.raises(ServerError, match=r"no valid run: every run \(#None, #None, stored in .*x.db\) is invalid: 12%"):
        bench_result(runs, db=tmp_path / "x.db", roofline_of=arm_rooflines)


def test_bench_result_splits_the_variance_by_restart(tmp_path):
    # two server starts: the first serves ~100 tok/s, the second ~140: the restart level dominates
    values = [[100.0, 101.0, 99.0], [140.0, 141.0, 139.0]]
    runs = [_run("A", 3 * k + i, v, restart=k) for k, vs in enumerate(values) for i, v in enumerate(vs)]
    res = bench_result(runs, db="x.db", roofline_of=arm_rooflines, metrics=["aggregate_output_tok_s"],
                       repeat=3, server_starts=2)
    (split,) = res.restarts
    assert split.summary.startswith("A, aggregate_output_tok_s: restart-level sd")
    assert split.components is not None
    assert split.components.var_restart > 10 * split.components.var_run  # means 100 and 140, sd 1 within
    assert res.noise_floor.metrics[0].description.n == 6


def test_level_noise_floor_adds_the_slo_metrics_asked_for():
    runs = [_run("A", i, 100.0 + i, e2e=[1.0, 3.0], slo_s={"e2e": 2.0}) for i in range(3)]
    names = {m.name for m in level_noise_floor(runs, slo="e2e=2s").metrics}
    assert "SLO attainment (%)" in names
    floor = level_noise_floor(runs, slo="e2e=2s")
    assert _agg(floor, "SLO attainment").description.mean == 50.0  # one of the two requests met it
    assert level_noise_floor([_run("A", 0, 1.0, valid=False)]) is None


def test_sweep_result_gives_each_level_its_floor_and_the_table_its_means(tmp_path):
    db = tmp_path / "x.db"
    spec = _sweep_store(db, {1: [100.0, 120.0], 4: [300.0, 340.0]})
    with Store(db) as store:
        res = sweep_result(store, "sw1", spec, "concurrency", db=db, roofline_of=arm_rooflines)
    assert [lv.level for lv in res.sweep] == [1, 4] and [lv.arm for lv in res.sweep] == [a.name for a in spec.arms]
    assert [_agg(lv.noise_floor).description.mean for lv in res.sweep] == [pytest.approx(110.0),
                                                                         pytest.approx(320.0)]
    row1, row4 = res.table
    assert (row1.level, row1.valid_runs, row1.client_limited) == (1, 2, 0)
    assert row4.output_tok_s.mean == pytest.approx(320.0) and row4.output_tok_s.n == 2
    assert row4.output_tok_s.sd == pytest.approx(statistics.stdev([300.0, 340.0]))
    assert row1.ttft_p50_ms.mean == pytest.approx(50.0)
    assert row1.achieved_rps is None  # closed loop: no arrivals
    assert res.comparisons[0].candidate == spec.arms[1].name and res.failure is None
    assert "stored" not in res.model_dump(mode="json")["sweep"][0]


def test_experiment_show_and_list_read_the_stored_experiment(tmp_path):
    db = tmp_path / "x.db"
    with Store(db) as s:
        _two_arm_store(s)
        show = experiment_show(s, "e1", arm_rooflines)
        listed = experiment_list(s)
        assert no_valid_measured_run("e1", s) is None
    assert [(a.arm, a.n, a.description.mean) for a in show.arms] == [("A", 2, pytest.approx(102.0)),
                                                                    ("B", 2, pytest.approx(152.0))]
    assert [r.arm for r in show.roofline] == ["A", "B"]
    data = show.model_dump(mode="json")
    assert {"id", "spec", "arms", "comparisons", "roofline", "warnings"} <= data.keys()
    (row,) = listed.experiments
    assert (row.id, row.measured_runs, row.planned_runs, row.outcomes) == ("e1", 4, 4, 0)


def test_no_valid_measured_run_names_the_first_invalid_run(tmp_path):
    db = tmp_path / "x.db"
    text = 'runs_per_arm = 2\n[[arms]]\nname = "A"\nserver_cmd = "a"\n[[arms]]\nname = "B"\nserver_cmd = "b"\n'
    spec = parse_experiment(text, "t.toml")
    with Store(db) as s:
        s.create_experiment("e2", "t", spec.model_dump(mode="json"), text, T0)
        assert no_valid_measured_run("e2", s) == f"experiment e2: no valid run in {s.path}: no run was measured"
        run_id = s.save_run(_run("A", 0, 5.0, session="e2", position=0, valid=False))
        assert no_valid_measured_run("e2", s).endswith(f"run #{run_id} invalid: 12% of requests failed (bound 10%)")


def test_capacity_of_experiment_fits_the_stored_attainments(tmp_path):
    db = tmp_path / "c.db"
    load = LoadSpec.from_options(requests=10, rate_rps=1.0, slo="e2e=1s")
    rates = capacity_rates("e2e=1s", "4,1,2")
    assert rates == [1.0, 2.0, 4.0]
    spec = capacity_experiment(load, rates, name="cap", repeat=2, url="http://127.0.0.1:1", server_cmd=None,
                               order="alternate", seed=None)
    assert spec.metric == "slo_attainment_pct" and [a.load["rate_rps"] for a in spec.arms] == rates
    met = {1.0: [10, 10], 2.0: [9, 8], 4.0: [2, 3]}  # requests of 10 within 1 s, per run
    with Store(db) as s:
        s.create_experiment("cap1", "cap", spec.model_dump(mode="json"), "", T0)
        pos = 0
        for rep in range(2):
            for arm, rate in zip(spec.arms, rates):
                k = met[rate][rep]
                s.save_run(_run(arm.name, rep, 10.0, session="cap1", position=pos,
                                e2e=[0.5] * k + [1.5] * (10 - k), slo_s={"e2e": 1.0}))
                pos += 1
        died = _run(spec.arms[0].name, 2, 10.0, session="cap1", position=pos, valid=False)
        died.invalid_reason = SERVER_DIED + "exit 1"
        died_id = s.save_run(died)
    res = capacity_of_experiment("cap1", db, 0.9, 200, 0)
    e = res.estimate
    assert [p.rate_rps for p in e.points] == rates
    assert [sorted(p.attainments) for p in e.points] == [[1.0, 1.0], [0.8, 0.9], [0.2, 0.3]]
    assert e.bracket == "bracketed" and e.between == (1.0, 2.0) and 1.0 < e.capacity_rps < 2.0
    assert res.left_out_runs == [died_id] and res.invalid_runs_counted == 0 and res.runs_per_rate == 2
    with pytest.raises(InputError, match="--rates needs at least 2 rates"):
        capacity_rates("e2e=1s", "3")
