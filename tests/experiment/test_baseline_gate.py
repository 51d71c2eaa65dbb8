"""The CI regression gate: baseline save, compare --baseline, its exit codes and its files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tokcaliper.cli import main
from tokcaliper.errors import EXIT_GATE_INCONCLUSIVE, EXIT_REGRESSION
from tokcaliper.load.summary import summarize
from tokcaliper.model.run import LoadConfig, RequestRecord, Run
from tokcaliper.store import Store


def _run(session: str, rep: int, tok_s: float, ttft: float) -> Run:
    wall = 200.0 / tok_s  # 2 requests × 100 tokens: the aggregate is tok_s
    recs = [RequestRecord(index=i, start_s=0.0, ttft_s=ttft, e2e_s=wall, output_tokens=100,
                          token_count_source="usage", itl_s=[(wall - ttft) / 99] * 99)
            for i in range(2)]
    return Run(session=session, arm="default", repetition=rep, started_at="2026-01-01T00:00:00.000Z",
               finished_at="2026-01-01T00:00:10.000Z", command_line="tokcaliper bench",
               tool_version="0.1.0", config=LoadConfig(base_url="http://127.0.0.1:1", concurrency=2),
               metrics=summarize(recs), requests=recs)


@pytest.fixture
def db(tmp_path):
    rng = np.random.default_rng(9)
    path = tmp_path / "t.db"
    with Store(path) as s:
        for session, tok_s, ttft in (("base", 100.0, 0.050), ("aa", 100.0, 0.050),
                                     ("slow", 80.0, 0.060)):
            for rep in range(6):
                s.save_run(_run(session, rep, tok_s * float(rng.normal(1, 0.004)),
                                ttft * float(rng.normal(1, 0.004))))
    assert main(["baseline", "save", "main", "--session", "base", "--commit", "abc123",
                 "--db", str(path), "--json"]) == 0
    return path


def test_baseline_is_stored_with_provenance(db, capsys):
    capsys.readouterr()
    assert main(["baseline", "show", "main", "--db", str(db), "--json"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert b["commit"] == "abc123" and b["source"] == "session base arm default"
    assert len(b["runs"]) == 6 and b["config"]["concurrency"] == 2
    assert main(["baseline", "save", "main", "--session", "aa", "--db", str(db)]) == 2
    assert "--replace overwrites it" in capsys.readouterr().err


def test_a_slower_configuration_exits_with_the_regression_code(db, tmp_path, capsys):
    md, bmf, gab = tmp_path / "summary.md", tmp_path / "bmf.json", tmp_path / "gab"
    code = main(["compare", "--baseline", "main", "--session", "slow", "--db", str(db),
                 "--summary-md", str(md), "--bmf", str(bmf), "--github-benchmark", str(gab)])
    assert code == EXIT_REGRESSION
    out = capsys.readouterr().out
    assert "gate: REGRESSION" in out
    text = md.read_text()
    rows = [ln for ln in text.splitlines() if ln.startswith("| `")]
    assert [r.split("|")[1].strip() for r in rows] == [
        "`aggregate_output_tok_s` (tok/s)", "`ttft_p50_ms` (ms)", "`itl_p50_ms` (ms)"]
    assert [r.split("|")[5].strip() for r in rows] == ["slower", "slower", "slower"]
    assert "×0.8" in rows[0] and "n=6" in rows[0]
    doc = json.loads(bmf.read_text())["tokcaliper/default"]["aggregate_output_tok_s"]
    assert doc["lower_value"] < doc["value"] < doc["upper_value"] and 78 < doc["value"] < 82
    bigger = json.loads((tmp_path / "gab.bigger.json").read_text())
    smaller = json.loads((tmp_path / "gab.smaller.json").read_text())
    assert [e["name"] for e in bigger] == ["tokcaliper/default aggregate_output_tok_s"]
    assert {e["name"].split()[1] for e in smaller} == {"ttft_p50_ms", "itl_p50_ms"}
    assert bigger[0]["range"].startswith("± ") and "slower" in bigger[0]["extra"]


def test_an_a_a_against_its_baseline_exits_0(db, tmp_path, capsys):
    md = tmp_path / "summary.md"
    assert main(["compare", "--baseline", "main", "--session", "aa", "--db", str(db),
                 "--summary-md", str(md), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["outcome"] == "pass"
    rows = [ln for ln in md.read_text().splitlines() if ln.startswith("| `")]
    assert [r.split("|")[5].strip() for r in rows] == ["equivalent"] * 3


def test_inconclusive_exits_0_unless_asked(db, capsys):
    # a margin too tight for 6 runs: neither slower nor shown equivalent
    args = ["compare", "--baseline", "main", "--session", "aa", "--db", str(db), "--margin", "0.001"]
    assert main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["outcome"] == "inconclusive"
    assert main([*args, "--fail-on-inconclusive"]) == EXIT_GATE_INCONCLUSIVE


def test_gate_errors_are_one_line(db, capsys):
    assert main(["compare", "--baseline", "nope", "--session", "aa", "--db", str(db)]) == 2
    assert "no baseline 'nope'" in capsys.readouterr().err
    assert main(["compare", "--arm", "x", "--a", "1,2", "--b", "1,2", "--db", str(db)]) == 2
    assert "--arm is for the baseline gate" in capsys.readouterr().err
    assert main(["compare", "--baseline", "main", "--db", str(db)]) == 2
    assert "--experiment ID or --session NAME" in capsys.readouterr().err
