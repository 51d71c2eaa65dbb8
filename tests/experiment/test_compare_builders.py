"""The builders of ``tokcaliper compare``'s results (experiment.compare) and their one view."""

from __future__ import annotations

import statistics

import pytest
from rich.console import Console

from tokcaliper.errors import InputError
from tokcaliper.experiment.compare import (
    CompareSettings,
    ExperimentComparison,
    SessionComparison,
    compare_csv,
    compare_experiment,
    compare_runs,
    compare_session,
    compare_summaries,
)
from tokcaliper.experiment.spec import parse_experiment
from tokcaliper.load.summary import summarize
from tokcaliper.model.roofline import ArmRoofline
from tokcaliper.model.run import LoadConfig, RequestRecord, Run
from tokcaliper.numbers import ratio
from tokcaliper.report.compare_view import render_compare
from tokcaliper.stats.ab import ABAnalysis, MultiComparison
from tokcaliper.store import Store

from tests.experiment.bench_runs import two_arm_spec

A = [754.3, 770.0, 639.3, 567.7, 759.6]
B = [812.0, 790.5, 700.2, 640.1, 801.9]
S = CompareSettings()


def _text(result, verbose: bool = False) -> str:  # type: ignore[no-untyped-def]
    con = Console(record=True, width=200)
    render_compare(result, con, verbose=verbose)
    return " ".join(con.export_text().split())


def test_compare_runs_gives_the_ratio_of_means_and_swaps_roles_for_control():
    an = compare_runs(A, B, ("base", "cand"), settings=S, names_given=True)
    assert isinstance(an, ABAnalysis) and (an.a.name, an.b.name) == ("base", "cand")
    assert an.ratio_of_means == pytest.approx(statistics.fmean(B) / statistics.fmean(A))
    assert an.a.n == an.b.n == 5 and an.higher_is_better and an.scale == "ratio"
    assert an.control_reason == "given as --a (the first of --names)"
    swapped = compare_runs(A, B, ("base", "cand"), settings=S, control="cand")
    assert (swapped.a.name, swapped.b.name) == ("cand", "base")
    assert swapped.ratio_of_means == pytest.approx(statistics.fmean(A) / statistics.fmean(B))
    assert swapped.control_reason == "--control cand"
    with pytest.raises(InputError, match="--control 'x' is not an arm"):
        compare_runs(A, B, settings=S, control="x")


def test_compare_runs_direction_and_floor_come_from_the_registry_or_the_settings():
    lat = compare_runs([10.0, 11.0, 10.5], [12.0, 12.5, 11.5], settings=CompareSettings(metric="ttft_p50_ms"))
    assert not lat.higher_is_better
    lag = compare_runs([1.0, 2.0, 1.5], [2.0, 3.0, 2.5], settings=CompareSettings(metric="client_loop_lag_p99_ms"))
    assert lag.scale == "difference" and lag.noise_abs == 1.0  # the metric's known resolution
    assert lag.difference == pytest.approx(1.0)
    forced = CompareSettings(metric="ttft_p50_ms", better="higher")
    assert compare_runs([10.0, 11.0, 10.5], [12.0, 12.5, 11.5], settings=forced).higher_is_better
    with pytest.raises(InputError):
        compare_runs(A, B, settings=CompareSettings(metric="no such metric"))


def test_compare_summaries_reads_mean_sd_n():
    an = compare_summaries((100.0, 5.0, 10), (110.0, 5.0, 10), settings=S)
    assert an.input_kind == "summary" and an.ratio_of_means == pytest.approx(1.1)
    assert an.a.sd == 5.0 and an.b.n == 10 and an.control_reason == "given as --a-stats"


def test_compare_csv_one_metric_or_several(tmp_path):
    one = tmp_path / "one.csv"
    one.write_text("arm,value\n" + "".join(f"A,{v}\n" for v in A) + "".join(f"B,{v}\n" for v in B))
    an = compare_csv(one, settings=S)
    assert isinstance(an, ABAnalysis)
    assert an.ratio_of_means == pytest.approx(compare_runs(A, B, settings=S).ratio_of_means)
    two = tmp_path / "two.csv"
    rows = ["arm,value,metric"]
    rows += [f"A,{v},aggregate_output_tok_s" for v in A] + [f"B,{v},aggregate_output_tok_s" for v in B]
    rows += [f"A,{v},ttft_p50_ms" for v in (50, 52, 51, 49, 50)] + [f"B,{v},ttft_p50_ms" for v in (60, 61, 59, 62, 60)]
    two.write_text("\n".join(rows) + "\n")
    mc = compare_csv(two, settings=S)
    assert isinstance(mc, MultiComparison) and mc.holm
    assert [m.metric for m in mc.metrics] == ["aggregate_output_tok_s", "ttft_p50_ms"]
    assert [m.higher_is_better for m in mc.metrics] == [True, False]
    assert all(m.holm_m == 2 for m in mc.metrics)
    text = _text(mc)
    assert "2 metrics" in text and "ttft_p50_ms" in text and "verdict:" in text


def _run(session: str, arm: str, pos: int, tok_s: float, *, warmup: bool = False) -> Run:
    wall = 200.0 / tok_s  # 2 requests × 100 tokens: the aggregate is tok_s
    recs = [RequestRecord(index=i, start_s=0.0, ttft_s=0.05, e2e_s=wall, output_tokens=100,
                          token_count_source="usage", itl_s=[(wall - 0.05) / 99] * 99) for i in range(2)]
    return Run(session=session, arm=arm, repetition=pos // 2, position=pos, warmup_run=warmup,
               started_at=f"2026-01-01T00:00:{pos:02d}.000Z", finished_at=f"2026-01-01T00:00:{pos:02d}.500Z",
               command_line="t", tool_version="0.1.0",
               config=LoadConfig(base_url="http://127.0.0.1:1", concurrency=2), metrics=summarize(recs),
               requests=recs)


def _agg(tok_s: float) -> float:
    """The stored aggregate_output_tok_s of a run made by :func:`_run`."""
    return _run("x", "A", 0, tok_s).metrics.aggregate_output_tok_s  # type: ignore[return-value]


def test_compare_session_reads_two_stored_arms(tmp_path):
    with Store(tmp_path / "s.db") as s:
        s.save_run(_run("s", "A", 0, 500.0, warmup=True))
        for k, (a, b) in enumerate(zip(A, B)):
            s.save_run(_run("s", "A", 2 * k + 1, a))
            s.save_run(_run("s", "B", 2 * k + 2, b))
        got = compare_session(s, "s", settings=S, differences=lambda tools, metric: [])
        with pytest.raises(InputError, match="no arm 'C'"):
            compare_session(s, "s", ("A", "C"), settings=S, differences=lambda tools, metric: [])
    assert isinstance(got, SessionComparison) and got.warnings == []
    assert got.a.values == [_agg(v) for v in A] and got.b.values == [_agg(v) for v in B]
    assert got.ratio_of_means == pytest.approx(statistics.fmean(map(_agg, B)) / statistics.fmean(map(_agg, A)))
    assert got.control_reason == "the first arm stored"
    assert got.notes[0] == "run 1: warm-up run, left out"
    assert "one aggregate_output_tok_s per stored run (unpaired: Welch); runs of session s" in got.notes


SPEC = two_arm_spec(5)


def test_compare_experiment_carries_comparisons_rooflines_and_closing(tmp_path):
    spec = parse_experiment(SPEC, "t.toml")
    seen = []

    def rooflines(runs, order):  # type: ignore[no-untyped-def]
        seen.append((len(runs), list(order)))
        return [ArmRoofline(arm=a, runs=[], missing=["no bandwidth"]) for a in order]

    with Store(tmp_path / "x.db") as s:
        s.create_experiment("e1", "t", spec.model_dump(mode="json"), SPEC, "2026-01-01T00:00:00.000Z")
        for k, (a, b) in enumerate(zip(A, B)):
            s.save_run(_run("e1", "A", 2 * k, a))
            s.save_run(_run("e1", "B", 2 * k + 1, b))
        ec = compare_experiment(s, "e1", rooflines)
    assert isinstance(ec, ExperimentComparison) and ec.experiment == "e1"
    assert seen == [(10, ["A", "B"])]
    [c] = ec.comparisons
    assert (c.baseline, c.candidate) == ("A", "B") and c.metrics is not None
    primary = c.metrics.metrics[0]
    assert primary.metric == "aggregate_output_tok_s" and primary.paired is not None
    assert primary.a.values == [_agg(v) for v in A]
    assert primary.ratio_of_means == pytest.approx(statistics.fmean(map(_agg, B)) / statistics.fmean(map(_agg, A)))
    assert [r.arm for r in ec.roofline] == ["A", "B"] and ec.sequential is None and ec.governs is None
    assert ec.closing and ec.closing[0].startswith("result:")
    doc = ec.model_dump(mode="json")
    assert set(doc) >= {"experiment", "comparisons", "sequential", "governs", "roofline", "spread_causes", "closing"}
    assert doc["roofline"][0] == {"arm": "A", "runs": [], "n": 0, "mean": None, "std": None, "cv": None,
                                  "aggregate_n": 0, "aggregate_mean": None, "aggregate_std": None,
                                  "missing": ["no bandwidth"]}
    text = _text(ec)
    assert f"ratio of means B/A = {ratio(primary.ratio_of_means)}" in text
    assert "A: not computed — missing: no bandwidth" in text and ec.closing[0] in text


def test_render_compare_of_one_metric_shows_the_arms_ratio_and_verdict():
    an = compare_runs(A, B, settings=S)
    text = _text(an)
    assert "tokcaliper compare — B against A (baseline), aggregate_output_tok_s, higher is better" in text
    assert f"ratio of means B/A = {ratio(an.ratio_of_means)}" in text
    assert f"verdict: {an.report.summary}" in " ".join(text.split())
    assert "n" in text and "CV" in text and "result:" in text
