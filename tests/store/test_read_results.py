"""The typed results of the database readers (issue 19 item 1): runs, show, metrics, export,
baseline save/list/show and the gate's warnings — each builder's figures, each renderer's text."""

from __future__ import annotations

import io
import json
import sqlite3

import pytest
from rich.console import Console

from tokcaliper.cli import main
from tokcaliper.experiment.baseline import BaselineList, baseline_from_runs, describe_baseline, gate_on_baseline
from tokcaliper.experiment.export import export_from_store, export_summary
from tokcaliper.load.summary import summarize
from tokcaliper.model.metric_list import metric_list
from tokcaliper.model.metrics import METRICS
from tokcaliper.model.run import LoadConfig, RequestRecord, Run
from tokcaliper.model.stored import shown_run
from tokcaliper.model.version import version_info
from tokcaliper.numbers import num, percent
from tokcaliper.report.export import render_export, write_export
from tokcaliper.report.gate_view import render_baseline, render_baseline_list, render_gate
from tokcaliper.report.metrics_view import render_metric_list
from tokcaliper.report.run_view import render_run_list
from tokcaliper.report.version_view import render_version
from tokcaliper.stats.describe import describe
from tokcaliper.store import Store


def _text(render, result) -> str:  # type: ignore[no-untyped-def]
    buf = io.StringIO()
    render(Console(file=buf, width=240, color_system=None), result)
    return buf.getvalue()


def _run(tok_s: float, rep: int = 0, session: str = "s1", concurrency: int = 1) -> Run:
    recs = [RequestRecord(index=0, start_s=0.0, ttft_s=0.1, e2e_s=100.0 / tok_s, output_tokens=100,
                          token_count_source="usage")]
    return Run(session=session, repetition=rep, started_at="2026-01-01T00:00:00+00:00",
               finished_at="2026-01-01T00:00:02+00:00", command_line="tokcaliper bench",
               tool_version="0.1.0", config=LoadConfig(base_url="http://127.0.0.1:1", concurrency=concurrency),
               metrics=summarize(recs), requests=recs)


def test_run_list_holds_the_rows_and_one_caveat_per_damaged_run(tmp_path):
    db = tmp_path / "t.db"
    with Store(db) as s:
        ids = [s.save_run(_run(v, i)) for i, v in enumerate((40.0, 50.0, 80.0))]
    c = sqlite3.connect(db)
    c.execute("UPDATE runs SET metrics_json = '{not json' WHERE id = ?", (ids[1],))
    c.commit()
    c.close()
    with Store(db, create=False) as s:
        res = s.run_list()
    assert [r.id for r in res.runs] == [ids[0], ids[2]] and [d.id for d in res.damaged] == [ids[1]]
    assert [r.aggregate_output_tok_s for r in res.runs] == pytest.approx([40.0, 80.0])
    assert [w.code for w in res.warnings] == ["damaged-run-skipped"]
    assert res.warnings[0].message.endswith("; skipped") and f"run {ids[1]} in" in res.warnings[0].message
    text = _text(render_run_list, res)
    assert f"2 run(s) in {db} (1 damaged" in text and num(80.0, 4) in text and num(100.0) in text


def test_shown_run_leaves_the_requests_out_as_null_with_a_note():
    run = _run(50.0)
    out = shown_run(run, include_requests=False).model_dump(mode="json")
    assert out["requests"] is None and "--requests" in out["requests_note"]
    assert out["metrics"]["aggregate_output_tok_s"] == pytest.approx(50.0)
    kept = shown_run(run, include_requests=True)
    assert kept.requests == run.requests and kept.requests_note is None


def test_metric_list_is_the_registry():
    res = metric_list()
    assert [m.name for m in res.metrics] == list(METRICS)
    ttft = next(m for m in res.metrics if m.name == "ttft_p50_ms")
    assert (ttft.unit, ttft.better) == ("ms", "lower")
    text = _text(render_metric_list, res)
    assert f"{len(METRICS)} per-run metrics" in text and "ttft_p50_ms" in text


def test_export_summary_counts_the_tables_written(tmp_path):
    db = tmp_path / "t.db"
    with Store(db) as s:
        for i, v in enumerate((40.0, 50.0)):
            s.save_run(_run(v, i))
        tables, name = export_from_store(s, None, "s1")
    assert name == "s1" and len(tables.runs) == 2 and len(tables.requests) == 2
    paths = write_export(tables, tmp_path / "out", "csv")
    res = export_summary(tables, paths, "csv")
    assert (res.source, res.runs, res.requests, res.files) == ("session s1", 2, 2, [str(p) for p in paths])
    text = _text(render_export, res)
    assert f"session s1: 2 runs, {res.samples} samples, 2 requests" in text and str(paths[0]) in text


def test_baseline_detail_describes_the_headline_metrics_and_the_gate_names_load_differences():
    vals = [100.0, 104.0, 96.0]
    base = baseline_from_runs("main", [_run(v, i) for i, v in enumerate(vals)], arm="default",
                              source="session s1 arm default", created_at="2026-01-01T00:00:00.000Z",
                              commit="abc")
    detail = describe_baseline(base)
    agg = next(m for m in detail.summary if m.metric == "aggregate_output_tok_s")
    assert agg.description.n == 3 and agg.description.mean == pytest.approx(100.0)
    assert agg.description.cv == pytest.approx(describe(vals).cv)
    text = _text(render_baseline, detail)
    assert "baseline main: session s1 arm default, saved 2026-01-01T00:00:00.000Z, commit abc" in text
    assert f"aggregate_output_tok_s: {num(100.0, 4)} tok/s (n=3, CV {percent(describe(vals).cv)})" in text
    listed = _text(render_baseline_list, BaselineList(db="t.db", baselines=[base]))
    assert "1 baseline(s) in t.db" in listed and "main: 3 runs of session s1 arm default" in listed

    new = [_run(v, i, "s2", concurrency=4) for i, v in enumerate((99.0, 101.0, 100.0))]
    report = gate_on_baseline(base, new, new_source="session s2 arm default", metrics=["aggregate_output_tok_s"])
    assert [w.code for w in report.warnings] == ["gate-load-differs"]
    assert report.warnings[0].message == "the load differs from the baseline's: concurrency: 1 → 4"
    view = _text(_render_gate, report)
    assert f"gate: {report.outcome.upper()}" in view and "the load differs" not in view  # the sink prints it


def _render_gate(console, report):  # type: ignore[no-untyped-def]
    render_gate(report, console)


def test_version_result_and_view(capsys):
    info = version_info()
    assert _text(render_version, info).strip() == info.version
    assert main(["version", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"version": info.version}
