"""The ``analyze`` result's builders (stats.analyze_report, experiment.stored_runs) and its view."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from rich.console import Console

from tokcaliper.errors import InputError
from tokcaliper.experiment.stored_runs import analyze_stored, ids_text, load_runs
from tokcaliper.model import warnings as W
from tokcaliper.numbers import num, percent
from tokcaliper.report.analyze_view import render_analyze
from tokcaliper.stats.analyze_report import RunTable, analyze_csv, analyze_table, read_csv_table, select_arm
from tokcaliper.stats.gates import RunGate
from tokcaliper.store import Store

from tests.analyze.gpu_runs import make_run

DATA = json.loads((Path(__file__).parent / "data" / "data_clumps.json").read_text())


def _csv(path: Path, arms: bool = False) -> Path:
    r = DATA["runs"]
    head = "tok_s,sm_clock_start_mhz,rest_s,host" + (",arm" if arms else "")
    rows = [f"{v},{c},{s},box1" + ("," + "AB"[i % 2] if arms else "")
            for i, (v, c, s) in enumerate(zip(r["per_stream_tok_s"], r["sm_clock_start_mhz"], r["rest_s"]))]
    path.write_text("\n".join([head, *rows]) + "\n")
    return path


def test_analyze_csv_builds_the_split_and_ranks_the_covariates(tmp_path):
    rep = analyze_csv(_csv(tmp_path / "r.csv"), "tok_s", unit="tok/s")
    values = DATA["runs"]["per_stream_tok_s"]
    a = rep.analysis
    assert a is not None and rep.adjusted is None and rep.gates == [] and rep.warnings == []
    assert a.n == len(values) == 6 and a.groups == 2 and a.unit == "tok/s"
    assert a.description.mean == pytest.approx(statistics.fmean(values))
    assert a.split.low.mean == pytest.approx(60.87, abs=0.01) and a.split.high.mean == pytest.approx(72.1, abs=0.01)
    assert a.covariates[0].name == "sm_clock_start_mhz"
    assert "column 'host' is not numeric: not used as a covariate" in rep.notes
    assert rep.source.endswith("r.csv (6 rows)")


def test_select_arm_keeps_that_arms_rows_and_names_a_missing_one(tmp_path):
    table = read_csv_table(_csv(tmp_path / "r.csv", arms=True), "tok_s", "arm")
    b = select_arm(table, "B", "arm")
    assert b.values == DATA["runs"]["per_stream_tok_s"][1::2] and b.arms == ["B"] * 3
    assert b.covariates["sm_clock_start_mhz"] == [float(x) for x in DATA["runs"]["sm_clock_start_mhz"][1::2]]
    with pytest.raises(InputError, match="no row with arm = 'C'"):
        select_arm(table, "C", "arm")
    with pytest.raises(InputError, match="holds 2 arms"):
        analyze_table(table)


def _table(values: list[float]) -> RunTable:
    return RunTable(source="t", metric="tok_s", unit="tok/s", values=values,
                    covariates={"position": [float(i) for i in range(len(values))]})


def test_analyze_table_repeats_the_analysis_without_the_flagged_runs():
    values = [561.0, 372.0, 548.0, 366.0, 555.0, 380.0, 552.0, 375.0]
    gates = [RunGate(run_id=i + 1, index=i, checked=True, flagged=i == 2) for i in range(8)]
    rep = analyze_table(_table(values), gates=gates)
    assert rep.analysis is not None and rep.analysis.n == 8
    clean = rep.analysis_unflagged
    assert clean is not None and clean.n == 7
    assert clean.description.mean == pytest.approx(statistics.fmean(values[:2] + values[3:]))
    few = analyze_table(_table(values[:5]), gates=gates[:5])
    assert few.analysis_unflagged is None and "only 4 unflagged run(s)" in few.notes[-1]
    with pytest.raises(InputError, match="8 gated runs for 5 rows"):
        analyze_table(_table(values[:5]), gates=gates)


def test_adjusting_for_a_during_run_covariate_is_a_named_warning():
    values = [600.0, 640.0, 605.0, 650.0, 598.0, 645.0, 610.0, 655.0]
    t = RunTable(source="t", metric="tok_s", unit="tok/s", values=values, arms=["A", "B"] * 4,
                 covariates={"sm_clock_mean_mhz": [1300.0, 1310, 1320, 1330, 1290, 1305, 1315, 1325]})
    rep = analyze_table(t, adjust_for="sm_clock_mean_mhz")
    assert rep.analysis is None and rep.adjusted is not None and rep.adjusted.arms == ("A", "B")
    assert rep.warnings == [W.COVARIATE_DURING_RUN.caveat(covariate="sm_clock_mean_mhz"), *rep.adjusted.warnings]
    assert rep.warnings[0].message.startswith("sm_clock_mean_mhz is measured during the run")




def test_analyze_stored_gates_each_row_of_the_table_in_run_order(tmp_path):
    # stored in reverse run order: the table sorts by position, and the gate must follow it
    tok = [561, 372, 548, 366, 555, 380, 552, 375]
    clock = [1455, 1335, 1410, 1245, 1440, 1380, 1450, 1300]
    with Store(tmp_path / "r.db") as s:
        for i in range(8):
            s.save_run(make_run(i, tok[i], clock[i], position=7 - i,
                            throttle={"hw_thermal_slowdown": 0.1} if i == 0 else None))
        runs, source = load_runs(s, [1, 2, 3, 4, 5, 6, 7, 8])
        assert [r.id for r in runs] == list(range(1, 9)) and source.startswith("runs 1-8 in ")
        rep = analyze_stored(s, session="base", metric="aggregate_output_tok_s")
    assert [g.run_id for g in rep.gates] == list(range(8, 0, -1))  # by position
    assert [g.run_id for g in rep.gates if g.flagged] == [1]
    a, clean = rep.analysis, rep.analysis_unflagged
    assert a is not None and clean is not None and a.n == 8 and clean.n == 7
    per_run = [r.metrics.aggregate_output_tok_s for r in runs]
    assert clean.description.mean == pytest.approx(statistics.fmean(per_run[1:]))  # run 1 (flagged) left out
    assert rep.source.startswith("session base in ")


def test_ids_text_writes_ranges():
    assert ids_text([3, 4, 5, 9, 11, 12]) == "3-5,9,11-12" and ids_text([7]) == "7"


def test_render_analyze_shows_the_headline_figures(tmp_path):
    rep = analyze_csv(_csv(tmp_path / "r.csv"), "tok_s", unit="tok/s")
    con = Console(record=True, width=200)
    render_analyze(rep, con)
    text = " ".join(con.export_text().split())
    d = rep.analysis.description  # type: ignore[union-attr]
    assert "tokcaliper analyze" in text and rep.analysis.sentence in text  # type: ignore[union-attr]
    assert f"all runs: n = 6, mean {num(d.mean, 4)} tok/s, CV {percent(d.cv)}" in text
    assert d.mean == pytest.approx(statistics.fmean(DATA["runs"]["per_stream_tok_s"]))
    assert "low group: n = " in text and "R² = " in text and "Monte Carlo" in text
    assert "note: column 'host' is not numeric" in text and "methods: docs/analyze.md" in text
