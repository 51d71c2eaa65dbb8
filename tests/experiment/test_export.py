"""tokcaliper export: the tables of a stored experiment, and compare reading them back."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from tokcaliper.cli import main
from tokcaliper.experiment.export import REQUEST_COLUMNS, RUN_COLUMNS, SAMPLE_COLUMNS, export_tables
from tokcaliper.load.summary import summarize
from tokcaliper.model.metrics import METRICS
from tokcaliper.model.run import LoadConfig, RequestRecord, Run
from tokcaliper.store import Store

SPEC = {"name": "ab", "metric": "aggregate_output_tok_s", "order": "random-blocks",
        "arms": [{"name": "A", "server_cmd": "srv -m a.gguf"},
                  {"name": "B", "server_cmd": "srv -m b.gguf"}]}


def _run(arm: str, pos: int, tok_s: float, ttft: float, *, warm=False, valid=True) -> Run:
    # 2 requests of 100 tokens; wall = 200 / tok_s seconds, so the aggregate is tok_s
    wall = 200.0 / tok_s
    recs = [RequestRecord(index=i, start_s=0.0, ttft_s=ttft, e2e_s=wall, output_tokens=100,
                          token_count_source="usage", itl_s=[(wall - ttft) / 99] * 99)
            for i in range(2)]
    return Run(session="exp-1", arm=arm, position=pos, warmup_run=warm, valid=valid,
               invalid_reason=None if valid else "3 of 8 requests failed",
               started_at="2026-01-01T00:00:00.000Z", finished_at="2026-01-01T00:00:10.000Z",
               command_line="tokcaliper experiment run", tool_version="0.1.0",
               config=LoadConfig(base_url="http://127.0.0.1:1", concurrency=2),
               metrics=summarize(recs), requests=recs)


@pytest.fixture
def store_path(tmp_path):
    rng = np.random.default_rng(5)
    db = tmp_path / "t.db"
    with Store(db) as s:
        s.create_experiment("exp-1", "ab", SPEC, "# toml", "2026-01-01T00:00:00.000Z")
        for block in range(6):
            order = ["A", "B"] if rng.random() < 0.5 else ["B", "A"]
            for j, arm in enumerate(order):
                pos = 2 * block + j
                base = 100.0 if arm == "A" else 104.0
                # block 3's B run is invalid: the whole block must leave the samples
                s.save_run(_run(arm, pos, base * float(rng.normal(1, 0.01)),
                                0.05 * float(rng.normal(1, 0.02)), valid=not (block == 3 and arm == "B")))
    return db


def test_tables_pair_by_block_and_drop_half_blocks(store_path):
    with Store(store_path, create=False) as s:
        runs = s.session_runs("exp-1", with_requests=True)
    t = export_tables(runs, source="experiment exp-1", arms=["A", "B"], n_arms=2, order="random-blocks")
    assert len(t.runs) == 12 and len(t.requests) == 24
    cols, _ = t.table("runs")
    assert cols[: len(RUN_COLUMNS)] == list(RUN_COLUMNS) and cols[len(RUN_COLUMNS):] == list(METRICS)
    tok = [r for r in t.samples if r["metric"] == "aggregate_output_tok_s"]
    assert sorted({r["pair"] for r in tok}) == [f"block {k}" for k in (0, 1, 2, 4, 5)]
    assert all(sum(r["pair"] == p for r in tok) == 2 for p in {r["pair"] for r in tok})
    by_id = {r.id: r for r in runs}
    assert t.runs[0]["aggregate_output_tok_s"] == pytest.approx(
        METRICS["aggregate_output_tok_s"].extract(by_id[t.runs[0]["run_id"]].metrics))
    req = t.requests[0]
    assert req["itl_n"] == 99 and len(req["itl_ms"]) == 99
    assert req["ttft_ms"] == pytest.approx(runs[0].requests[0].ttft_s * 1000)


def test_csv_export_read_back_by_compare_gives_the_experiments_numbers(store_path, tmp_path, capsys):
    prefix = tmp_path / "out"
    assert main(["export", "exp-1", "--db", str(store_path), "-o", str(prefix), "--json"]) == 0
    files = json.loads(capsys.readouterr().out)["files"]
    assert [f.rsplit(".", 2)[-2] for f in files] == ["runs", "samples", "requests"]
    with open(files[1], newline="") as f:
        header = next(csv.reader(f))
    assert header == list(SAMPLE_COLUMNS)
    with open(files[2], newline="") as f:
        assert next(csv.reader(f)) == list(REQUEST_COLUMNS)

    assert main(["compare", "--experiment", "exp-1", "--db", str(store_path), "--json"]) == 0
    exp = json.loads(capsys.readouterr().out)["comparisons"][0]["metrics"]["metrics"]
    assert main(["compare", "--csv", files[1], "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    got = {m["metric"]: m for m in doc["metrics"]}
    assert [m["metric"] for m in exp] == list(got)  # the experiment's metrics, same Holm family
    for m in exp:
        g = got[m["metric"]]
        assert g["paired"] is not None and m["paired"] is not None
        for key in ("ratio_of_means", "decision_ratio", "decision_ci", "p_raw", "p_used",
                    "tost_p_used", "mde", "runs_needed", "holm_m", "verdict", "difference_ci"):
            assert g[key] == pytest.approx(m[key]), (m["metric"], key)
        assert g["a"]["n"] == m["a"]["n"] == 5


def test_parquet_and_json_hold_the_same_rows(store_path, tmp_path, capsys):
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow (the parquet extra) is not installed")
    assert main(["export", "exp-1", "--db", str(store_path), "--format", "parquet",
                 "-o", str(tmp_path / "p"), "--json"]) == 0
    files = json.loads(capsys.readouterr().out)["files"]
    assert main(["export", "exp-1", "--db", str(store_path), "--format", "json",
                 "-o", str(tmp_path / "j"), "--json"]) == 0
    doc = json.loads((tmp_path / "j.json").read_text())
    for path, name in zip(files, ("runs", "samples", "requests")):
        table = pq.read_table(path).to_pylist()
        assert table == doc[name], name
    assert doc["requests"][0]["itl_ms"] == pytest.approx([doc["requests"][0]["itl_ms"][0]] * 99)


def test_bad_requests_are_one_line_errors(store_path, tmp_path, capsys):
    assert main(["export", "--db", str(store_path)]) == 2
    assert "experiment id or --session" in capsys.readouterr().err
    assert main(["export", "exp-1", "--db", str(store_path), "--format", "xlsx"]) == 2
    assert "--format must be one of csv, parquet, json" in capsys.readouterr().err
    assert main(["export", "exp-1", "--db", str(store_path), "-o", str(tmp_path / "no" / "x")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["export", "--session", "nope", "--db", str(store_path)]) == 2
    assert "no runs in session 'nope'" in capsys.readouterr().err
