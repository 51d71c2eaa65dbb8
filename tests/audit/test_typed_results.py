"""The typed results of audit, diff --plan, attribute, import and --explain (issue 19 item 1):
each builder's figures, and each renderer's text holding them."""

from __future__ import annotations

import io
import math
from pathlib import Path

import pytest
from rich.console import Console

from tokcaliper.audit.attribution import AttributionPlan, attribute_runs, write_plan
from tokcaliper.audit.explain import explain
from tokcaliper.audit.fetch import resolve_inputs
from tokcaliper.audit.importers.run_files import import_summary, read_runs, runs_to_store
from tokcaliper.load.summary import summarize
from tokcaliper.model.record import Record
from tokcaliper.model.run import LoadConfig, RequestRecord, Run
from tokcaliper.numbers import num
from tokcaliper.report.audit_view import render_attribution, render_explain, render_plan
from tokcaliper.report.import_view import render_import
from tokcaliper.stats.resolution import n_power

PEERS = Path(__file__).parent.parent / "data" / "peers"


def _text(render, result) -> str:  # type: ignore[no-untyped-def]
    buf = io.StringIO()
    render(Console(file=buf, width=100, color_system=None), result)
    return buf.getvalue()


def _run(arm: str, tok_s: float, pos: int, *, warm: bool = False) -> Run:
    # aggregate output tok/s = 1000 tokens / (1000 / tok_s) s
    recs = [RequestRecord(index=0, start_s=0.0, ttft_s=0.05, e2e_s=1000.0 / tok_s, output_tokens=1000,
                          token_count_source="usage")]
    return Run(session="exp", arm=arm, position=pos, warmup_run=warm, started_at="2026-01-01T00:00:00+00:00",
               finished_at="2026-01-01T00:00:10+00:00", command_line="tokcaliper experiment run",
               tool_version="0.1.0", config=LoadConfig(base_url="http://127.0.0.1:1"),
               metrics=summarize(recs), requests=recs)


VALUES = {"A": [100.0, 102.0, 98.0], "A+ctx": [90.0, 91.0, 89.0], "B": [120.0, 118.0, 122.0]}


def test_attribute_runs_gives_the_arms_means_and_the_log_ratios():
    runs = [_run(a, v, i) for i, (a, vs) in enumerate(VALUES.items()) for v in vs]
    runs.append(_run("A", 5.0, 99, warm=True))  # far off: left out, and said so
    res = attribute_runs("exp", runs, arms=list(VALUES), metric="aggregate_output_tok_s")
    assert {a: s.n for a, s in res.arms.items()} == {"A": 3, "A+ctx": 3, "B": 3}
    assert res.arms["A"].mean == pytest.approx(100.0)
    assert res.arms["B"].cv == pytest.approx(2.0 / 120.0)  # sd of 118, 120, 122 is 2
    logs = {a: sum(math.log(v) for v in vs) / 3 for a, vs in VALUES.items()}
    assert res.contributions[0].knob == "ctx"
    assert res.contributions[0].log_effect == pytest.approx(logs["A+ctx"] - logs["A"])
    assert res.total.log_effect == pytest.approx(logs["B"] - logs["A"])
    assert res.total.percent == pytest.approx((math.exp(logs["B"] - logs["A"]) - 1) * 100)
    assert [w.code for w in res.warnings] == ["runs-left-out"] and "1 run(s)" in res.warnings[0].message
    doc = res.model_dump(mode="json")
    assert doc["total"]["ci_log"] == [res.total.ci_low, res.total.ci_high] and len(doc["closing"]) == 2

    text = _text(render_attribution, res)
    assert "attribution of aggregate_output_tok_s in experiment exp" in text
    assert f"arm A: mean {num(100.0, 4)} (n=3, CV 2.0%)" in text
    ctx = next(ln for ln in text.splitlines() if ln.strip().startswith("ctx"))
    assert ctx.split()[1] == f"{(math.exp(logs['A+ctx'] - logs['A']) - 1) * 100:+.1f}%"
    assert "unexplained" in text and "total B/A" in text and res.closing[0] in text


def _record(cmd: str, quant: str) -> Record:
    return Record.model_validate({"model": {"name": "Qwen/Qwen3-8B"}, "hardware": {"gpu_name": "RTX 4090"},
                                  "quantization": {"weights": quant}, "launch_command": cmd, "batch_size": 1,
                                  "tok_s_decode": 90.0})


def test_write_plan_writes_the_file_and_gives_its_arms_and_power_based_runs(tmp_path):
    a = _record("llama-server -m /m/Qwen3-8B-Q8_0.gguf -c 8192", "Q8_0")
    b = _record("llama-server -m /m/Qwen3-8B-Q4_K_M.gguf -c 16384", "Q4_K_M")
    out = tmp_path / "plan.toml"
    p = write_plan(a, b, out, cv=0.05, effect=0.05)
    assert isinstance(p, AttributionPlan) and out.read_text(encoding="utf-8").startswith("# Generated")
    assert p.arms == ["A", "A+quantization", "A+context length", "B"] and p.kind == "server"
    assert p.runs_per_arm == n_power(0.05, 0.05) and "power 0.8" in p.runs_per_arm_source
    assert [(k.knob, k.a, k.b) for k in p.knobs][1] == ("context length", "-c=8192", "-c=16384")
    assert p.comparable is False
    text = _text(render_plan, p)
    assert f"wrote {out}: 4 arms (A, A+quantization, A+context length, B), {p.runs_per_arm} runs per arm" in text
    assert "knob context length: -c=8192 → -c=16384" in text and "exit 11" in text
    assert write_plan(a, b, tmp_path / "p2.toml", runs_per_arm=4).runs_per_arm_source == "--runs-per-arm"


def test_import_numbers_runs_after_the_sessions_and_summarises_them():
    found = read_runs([PEERS / "vllm" / "bench_serve_detailed.json"], summarize)
    previous = [_run("vllm", 10.0, 4)]
    previous[0].repetition = 2
    runs = runs_to_store(found, session="s", arm=None, previous=previous, command_line="tokcaliper import x",
                         tool_version="0.1.0")
    assert [(r.arm, r.repetition, r.position) for r in runs] == [("vllm", 3, 5)]
    runs[0].id = 7
    res = import_summary(found, runs, session="s", db="t.db")
    row = res.runs[0]
    assert (row.id, row.tool, row.completed) == (7, "vllm", runs[0].metrics.completed)
    assert row.aggregate_output_tok_s == runs[0].metrics.aggregate_output_tok_s
    assert row.ttft_p50_ms == pytest.approx(runs[0].metrics.ttft_s.p50 * 1000)
    text = _text(render_import, res)
    assert "1 run(s) imported into session s of t.db" in text
    assert f"{num(row.aggregate_output_tok_s, 4)}" in text and f"{num(row.ttft_p50_ms)}" in text


def test_explain_is_typed_and_rendered():
    e = explain("a3")
    assert e.check == "A3" and e.method == "docs/METHODS.md A3" and "CURATED_GPUS" in e.constants
    text = _text(render_explain, e)
    assert text.startswith("A3 — ") and "CURATED_GPUS = " in text


def test_resolve_inputs_keeps_paths_and_calls_back_only_for_downloads(tmp_path):
    saved = []
    assert resolve_inputs(["a.json", str(tmp_path)], on_saved=saved.append) == [Path("a.json"), tmp_path]
    assert saved == []
