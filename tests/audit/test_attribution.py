"""A8: `diff --plan` writes an experiment file; `attribute` recovers known contributions from stored runs."""

from __future__ import annotations

import json
import math
import tomllib

import numpy as np
import pytest

from tokcaliper.audit.attribution import analyse_attribution, plan_experiment
from tokcaliper.cli import main
from tokcaliper.load.summary import summarize
from tokcaliper.model.record import Record
from tokcaliper.model.run import LoadConfig, RequestRecord, Run
from tokcaliper.store import Store

A_CMD = ("llama-server -m /m/Qwen3-8B-Q8_0.gguf -md /m/Qwen3-0.6B-Q8_0.gguf -c 8192 -ngl 99 --host 0.0.0.0 "
         "--port 8080 --jinja")
B_CMD = ("llama-server -m /m/Qwen3-8B-Q4_K_M.gguf -md /m/Qwen3-0.6B-Q4_0.gguf -c 16384 -ngl 99 --host 127.0.0.1 "
         "--port 9000 --jinja")


def _record(cmd: str | None, quant: str, tok_s: float, **kw) -> Record:
    return Record.model_validate({"model": {"name": "Qwen/Qwen3-8B"}, "hardware": {"gpu_name": "RTX 4090"},
                                  "quantization": {"weights": quant}, "launch_command": cmd, "batch_size": 1,
                                  "tok_s_decode": tok_s, **kw})


def _validate(text: str) -> dict:
    """The runner's validator when this tree has it, else the format's rules checked here."""
    doc = tomllib.loads(text)
    try:
        from tokcaliper.experiment.spec import parse_experiment  # type: ignore[import-not-found]
    except ImportError:
        parse_experiment = None
    if parse_experiment is not None:
        parse_experiment(text, "plan.toml")
    allowed_top = {"name", "url", "server_cmd", "load", "arms", "runs_per_arm", "warmup_runs", "rest_s", "order",
                   "seed", "metric", "effect", "equivalence_margin", "noise_band", "alpha"}
    assert set(doc) <= allowed_top, set(doc) - allowed_top
    assert isinstance(doc["runs_per_arm"], int) and doc["runs_per_arm"] >= 2
    assert doc["order"] in ("alternate", "abba", "random-blocks", "blocked")
    assert (doc["order"] == "random-blocks") == ("seed" in doc)
    names = [a["name"] for a in doc["arms"]]
    assert len(names) == len(set(names)) and len(names) >= 2
    for arm in doc["arms"]:
        assert set(arm) <= {"name", "server_cmd", "switch", "value", "readback", "expect", "expect_regex", "shell"}
        assert ("server_cmd" in arm) != ("switch" in arm)
        assert arm["name"] == arm["name"].strip() and "," not in arm["name"]
        for key in ("server_cmd", "switch"):
            if key in arm:
                assert arm[key].strip()
                for ph in __import__("re").findall(r"\{([^}]*)\}", arm[key]):
                    assert ph in {"host", "port", "value", "llama_server", "smollm2"}, ph
    kinds = {"server_cmd" in a for a in doc["arms"]}
    assert len(kinds) == 1
    if kinds == {True}:
        assert "url" not in doc and "server_cmd" not in doc
    else:
        assert ("url" in doc) != ("server_cmd" in doc)
    return doc


def test_plan_three_knobs_five_arms(tmp_path, capsys):
    a = _record(A_CMD, "Q8_0", 90.0)
    b = _record(B_CMD, "Q4_K_M", 120.0)
    plan = plan_experiment(a, b, runs_per_arm=8)
    doc = _validate(plan.text)
    assert [k.knob for k in plan.knobs] == ["quantization", "draft model", "context length"]
    assert [x["name"] for x in doc["arms"]] == ["A", "A+quantization", "A+draft model", "A+context length", "B"]
    cmds = {x["name"]: x["server_cmd"] for x in doc["arms"]}
    assert "Qwen3-8B-Q4_K_M.gguf" in cmds["A+quantization"] and "Qwen3-0.6B-Q8_0.gguf" in cmds["A+quantization"]
    assert "-c 8192" in cmds["A+quantization"]
    assert "Qwen3-0.6B-Q4_0.gguf" in cmds["A+draft model"] and "Qwen3-8B-Q8_0.gguf" in cmds["A+draft model"]
    assert "-c 16384" in cmds["A+context length"] and "Qwen3-8B-Q8_0.gguf" in cmds["A+context length"]
    assert all("--port {port}" in c and "--host {host}" in c and "8080" not in c for c in cmds.values())
    assert doc["runs_per_arm"] == 8 and doc["metric"] == "per_stream_decode_tok_s_mean"
    # the CLI writes the same file from two record files
    fa, fb, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "plan.toml"
    fa.write_text(a.model_dump_json())
    fb.write_text(b.model_dump_json())
    # exit 11 like plain `diff`: the records are not comparable (quantization differs)
    assert main(["diff", str(fa), str(fb), "--plan", "--out", str(out), "--cv", "0.05", "--effect", "0.05"]) == 11
    printed = capsys.readouterr().out
    assert main(["diff", str(fa), str(fb)]) == 11
    capsys.readouterr()
    assert f"wrote {out}: 5 arms" in printed and "power 0.8 (two-sided t, α = 0.05) → 17" in printed
    assert [x["name"] for x in _validate(out.read_text())["arms"]] == [x["name"] for x in doc["arms"]]


def test_plan_names_a_knob_no_flag_sets_and_never_writes_b_as_a_plus_knob(tmp_path, capsys):
    """Engine version differs and no flag sets it: arm B must not be A's build with B's flags
    (that measures A + the flag knob and hides the gap); it is a named TODO (issue 26 item 4)."""
    cmd_a = "llama-server -m /m/Qwen3-8B-Q8_0.gguf -c 8192 --port 8080"
    cmd_b = "llama-server -m /m/Qwen3-8B-Q8_0.gguf -c 16384 --port 8080"
    a = _record(cmd_a, "Q8_0", 90.0, engine={"name": "llama.cpp", "version": "b4000"})
    b = _record(cmd_b, "Q8_0", 120.0, engine={"name": "llama.cpp", "version": "b5000"})
    plan = plan_experiment(a, b, runs_per_arm=5)
    doc = _validate(plan.text)
    cmds = {x["name"]: x["server_cmd"] for x in doc["arms"]}
    assert cmds["B"] != cmds["A+context length"] and "exit 1" in cmds["B"]
    assert plan.gaps == ["engine version: cannot be set by a launch flag (b4000 → b5000) — measure B as "
                         "its own arm"]
    assert "# TODO: engine version: cannot be set by a launch flag" in plan.text
    fa, fb, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "plan.toml"
    fa.write_text(a.model_dump_json())
    fb.write_text(b.model_dump_json())
    rc_plan = main(["diff", str(fa), str(fb), "--plan", "--out", str(out)])
    printed = capsys.readouterr().out
    rc_diff = main(["diff", str(fa), str(fb)])
    assert rc_plan == rc_diff
    assert "gap: engine version: cannot be set by a launch flag" in printed


def test_plain_diff_lists_every_knob_the_plan_finds(capsys):
    from tokcaliper.audit.diff import diff_records

    a = _record("llama-server -m /m/Qwen3-8B-Q8_0.gguf -np 4 -t 8", "Q8_0", 90.0)
    b = _record("llama-server -m /m/Qwen3-8B-Q8_0.gguf -np 8 -t 8", "Q8_0", 120.0)
    plan = plan_experiment(a, b, runs_per_arm=5)
    d = diff_records(a, b)
    listed = {k.name for k in d.knobs if k.differs}
    assert [k.knob for k in plan.knobs] and all(
        f"launch flag {k.knob}" in listed or k.knob in listed for k in plan.knobs)
    assert not d.comparable and plan.gaps == []


def test_plan_without_launch_commands_has_marked_todo_switches():
    a = _record(None, "Q8_0", 90.0, context_length=8192)
    b = _record(None, "Q4_K_M", 120.0, context_length=16384)
    plan = plan_experiment(a, b, runs_per_arm=5)
    doc = _validate(plan.text)
    assert plan.kind == "switch" and "TODO" in plan.text
    assert [x["name"] for x in doc["arms"]] == ["A", "A+context length", "A+quantization", "B"]
    assert all("TODO" in x["switch"] and "exit 1" in x["switch"] for x in doc["arms"])


TRUE = {"quantization": math.log(0.935), "draft model": math.log(1.042), "context length": math.log(0.98)}
RESIDUAL = math.log(1.091)


def _simulated(rng: np.random.Generator, n: int = 10, cv: float = 0.01) -> dict[str, list[float]]:
    base = 100.0
    arms = {"A": 0.0, **{f"A+{k}": v for k, v in TRUE.items()}, "B": sum(TRUE.values()) + RESIDUAL}
    return {arm: list(base * np.exp(eff + rng.normal(0, cv, n))) for arm, eff in arms.items()}


def test_analysis_recovers_known_contributions_within_cis():
    res = analyse_attribution(_simulated(np.random.default_rng(7)), metric="aggregate_output_tok_s")
    got = {c.knob: c for c in res.contributions}
    assert set(got) == set(TRUE)
    for k, true in TRUE.items():
        assert got[k].ci_low <= true <= got[k].ci_high, (k, got[k])
        assert got[k].ci_high - got[k].ci_low < 0.03  # 1% noise, 10 runs: tight enough to tell the signs apart
    assert got["quantization"].percent < 0 < got["draft model"].percent  # contributions can be negative
    assert res.residual.ci_low <= RESIDUAL <= res.residual.ci_high
    total = sum(TRUE.values()) + RESIDUAL
    assert res.total.ci_low <= total <= res.total.ci_high
    assert res.total.log_effect == pytest.approx(sum(c.log_effect for c in res.contributions)
                                                 + res.residual.log_effect)


def test_analysis_errors():
    from tokcaliper.errors import InputError
    with pytest.raises(InputError, match="no arm 'B'"):
        analyse_attribution({"A": [1.0, 2.0], "A+x": [1.0, 2.0]})
    with pytest.raises(InputError, match="at least 2"):
        analyse_attribution({"A": [1.0, 2.0], "B": [1.0]})


def _run(session: str, arm: str, value: float, pos: int, warm: bool = False) -> Run:
    # aggregate output tok/s = tokens / wall; 1000 tokens over 1000/value seconds
    recs = [RequestRecord(index=0, start_s=0.0, ttft_s=0.05, e2e_s=1000.0 / value, output_tokens=1000,
                          token_count_source="usage")]
    return Run(session=session, arm=arm, position=pos, warmup_run=warm, started_at="2026-01-01T00:00:00+00:00",
               finished_at="2026-01-01T00:00:10+00:00", command_line="tokcaliper experiment run",
               tool_version="0.1.0", config=LoadConfig(base_url="http://127.0.0.1:1"),
               metrics=summarize(recs), requests=recs)


def test_attribute_cli_on_a_store_of_simulated_runs(tmp_path, capsys):
    db = tmp_path / "t.db"
    values = _simulated(np.random.default_rng(11), n=8)
    spec = {"name": "plan", "metric": "aggregate_output_tok_s", "arms": [{"name": a} for a in values]}
    with Store(db) as s:
        s.create_experiment("exp-1", "plan", spec, "# toml", "2026-01-01T00:00:00.000Z")
        pos = 0
        for arm, vals in values.items():
            s.save_run(_run("exp-1", arm, 1.0, pos, warm=True))  # a warm-up run far off: must be excluded
            pos += 1
            for v in vals:
                s.save_run(_run("exp-1", arm, v, pos))
                pos += 1
    assert main(["attribute", "exp-1", "--db", str(db), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    got = {c["knob"]: c for c in doc["contributions"]}
    for k, true in TRUE.items():
        lo, hi = got[k]["ci_log"]
        assert lo <= true <= hi, k
    lo, hi = doc["residual"]["ci_log"]
    assert lo <= RESIDUAL <= hi
    assert all(doc["arms"][a]["n"] == 8 for a in values)
    assert main(["attribute", "exp-1", "--db", str(db)]) == 0
    text = capsys.readouterr().out
    assert "quantization" in text and "unexplained" in text and "total B/A" in text
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("quantization"))
    assert line.split()[1].startswith(("-6.", "-7."))


def test_attribute_ends_with_closing_lines_from_its_figures(tmp_path, capsys):
    db = tmp_path / "t.db"
    values = _simulated(np.random.default_rng(11), n=8)
    spec = {"name": "plan", "metric": "aggregate_output_tok_s", "arms": [{"name": a} for a in values]}
    with Store(db) as s:
        s.create_experiment("exp-1", "plan", spec, "# toml", "2026-01-01T00:00:00.000Z")
        pos = 0
        for arm, vals in values.items():
            for v in vals:
                s.save_run(_run("exp-1", arm, v, pos))
                pos += 1
    assert main(["attribute", "exp-1", "--db", str(db), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    result, nxt = doc["closing"]
    lo, hi = doc["total"]["ci_log"]
    assert result.startswith("result: B reads ") and ("— decided" in result) == (lo > 0 or hi < 0)
    top = max(doc["contributions"], key=lambda c: abs(c["log_effect"]))
    assert f"the largest knob is {top['knob']}" in result
    assert nxt.startswith("next: ")
    assert main(["attribute", "exp-1", "--db", str(db)]) == 0
    assert capsys.readouterr().out.rstrip().splitlines()[-2:] == [result, nxt]
