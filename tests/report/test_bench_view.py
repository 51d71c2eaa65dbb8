"""The renderers of ``bench``, ``experiment show|list`` and ``capacity`` draw their typed results:
the headline figures of the result are in the text, and the page fits 100 columns."""

from __future__ import annotations

import io
import statistics

from rich.console import Console

from tests.experiment.bench_runs import T0, _run, _sweep_store, _two_arm_store
from tokcaliper.audit.run_roofline import arm_rooflines
from tokcaliper.experiment.bench_result import bench_result, sweep_result
from tokcaliper.experiment.capacity import capacity_experiment, capacity_of_experiment
from tokcaliper.experiment.show import experiment_list, experiment_show
from tokcaliper.experiment.spec import LoadSpec
from tokcaliper.numbers import num, percent
from tokcaliper.report.bench_view import render_bench, render_sweep
from tokcaliper.report.capacity_view import render_capacity
from tokcaliper.report.experiment_view import render_experiment_list, render_experiment_show
from tokcaliper.store import Store


def _text(draw, width: int = 100) -> str:  # type: ignore[no-untyped-def]
    buf = io.StringIO()
    draw(Console(file=buf, width=width, highlight=False))
    out = buf.getvalue()
    assert max(len(line) for line in out.splitlines()) <= width
    return " ".join(out.split())


def test_render_bench_draws_the_session_and_its_noise_floor(tmp_path):
    runs = [_run("A", i, v) for i, v in enumerate([100.0, 110.0, 90.0, 105.0])]
    res = bench_result(runs, db=tmp_path / "x.db", roofline_of=arm_rooflines, idle_power_w={"gpu0": 61.5},
                       idle_seconds=3.0, repeat=4)
    agg = next(m for m in res.noise_floor.metrics if "aggregate" in m.name)
    out = _text(lambda c: render_bench(c, res))
    assert out.startswith("tokcaliper bench http://127.0.0.1:1 model m")
    assert "4 run(s) × " in out and "concurrency 2" in out
    assert f"session {res.session}" in out and "idle power over 3 s before load: gpu0 61.5 W" in out
    assert "n = 4 runs per metric" in out and num(agg.description.mean, 4) in out
    assert percent(agg.description.cv) in out
    assert "A: not computed — missing: device: the run stores no host information" in out  # the roofline


def test_render_sweep_draws_each_level_the_table_and_the_comparison(tmp_path):
    db = tmp_path / "x.db"
    spec = _sweep_store(db, {1: [100.0, 120.0], 4: [300.0, 340.0]})
    with Store(db) as store:
        res = sweep_result(store, "sw1", spec, "concurrency", db=db, roofline_of=arm_rooflines)
    out = _text(lambda c: render_sweep(c, res), width=160)  # piped output's page: cells unwrapped
    assert "sweep over concurrency: experiment sw1, 2 runs per level interleaved (alternate)" in out
    assert f"{res.sweep[1].arm}: concurrency 4" in out
    assert "concurrency sweep (mean ± sd over each level's runs)" in out
    assert f"{num(320.0)} ± {num(statistics.stdev([300.0, 340.0]), 2)} (n=2)" in out and "0/2" in out
    assert f"{num(110.0)} ± {num(statistics.stdev([100.0, 120.0]), 2)} (n=2)" in out
    assert f"each level against {res.sweep[0].arm}" in out
    c = res.comparisons[0]
    said = c.error if c.metrics is None else c.metrics.metrics[0].report.summary
    assert f"{res.sweep[1].arm}: {' '.join(said.split())[:40]}" in out


def test_render_experiment_show_and_list(tmp_path):
    db = tmp_path / "x.db"
    with Store(db) as s:
        _two_arm_store(s)
        show = experiment_show(s, "e1", arm_rooflines)
        listed = experiment_list(s)
    out = _text(lambda c: render_experiment_show(c, show))
    assert out.startswith("experiment e1 — t status")
    assert "plan: 2 arms × 2 runs, order alternate" in out
    assert num(102.0, 4) in out and num(152.0, 4) in out  # the per-arm means
    assert "roofline: per-stream decode ÷ (bandwidth / bytes per token)" in out
    out = _text(lambda c: render_experiment_list(c, listed))
    assert "1 experiment(s)" in out and "e1" in out and "4/4" in out


def test_render_capacity_draws_the_capacity_and_its_ci(tmp_path):
    db = tmp_path / "c.db"
    load = LoadSpec.from_options(requests=10, rate_rps=1.0, slo="e2e=1s")
    spec = capacity_experiment(load, [1.0, 2.0, 4.0], name="cap", repeat=2, url="http://127.0.0.1:1",
                               server_cmd=None, order="alternate", seed=None)
    met = {1.0: [10, 10], 2.0: [9, 8], 4.0: [2, 3]}
    with Store(db) as s:
        s.create_experiment("cap1", "cap", spec.model_dump(mode="json"), "", T0)
        for rep in range(2):
            for arm, rate in zip(spec.arms, [1.0, 2.0, 4.0]):
                k = met[rate][rep]
                s.save_run(_run(arm.name, rep, 10.0, session="cap1", e2e=[0.5] * k + [1.5] * (10 - k),
                                slo_s={"e2e": 1.0}))
    res = capacity_of_experiment("cap1", db, 0.9, 200, 0)
    out = _text(lambda c: render_capacity(c, res), width=160)  # the arithmetic lines are soft-wrapped
    e = res.estimate
    assert f"capacity at {percent(0.9)} attainment: {num(e.capacity_rps)} req/s" in out
    assert "between the tried rates 1 and 2" in out
    assert "SLO attainment by offered rate (poisson arrivals)" in out
