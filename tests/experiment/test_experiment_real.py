"""Experiments on the real llama-server: read-back stop, resume, and an A/A that is not a difference."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tokcaliper.store import Store

pytestmark = pytest.mark.server

#: Short runs: 4 streams, 8 requests of 16 tokens (a few seconds each on 2 cores).
_LOAD = """
[load]
concurrency = 4
requests = 8
max_tokens = 16
idle_seconds = 0
telemetry_interval_s = 0.2
"""


def _cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tokcaliper", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_readback_mismatch_stops_keeps_runs_and_resume_finishes(tmp_path: Path, local_llama):
    state = tmp_path / "state_B"
    state.write_text("not ready\n")
    exp = tmp_path / "rb.toml"
    exp.write_text(f"""
name = "read-back on purpose"
server_cmd = "{{llama_server}} -m {{smollm2}} --host {{host}} --port {{port}} --metrics -np 4 -c 2048 -t 2"
runs_per_arm = 2
warmup_runs = 1
order = "alternate"
{_LOAD}
[[arms]]
name = "A"
switch = "true"
readback = "echo ready"
expect = "ready"

[[arms]]
name = "B"
switch = "true"
readback = "cat {state}"
expect = "ready"
""")
    db = tmp_path / "x.db"
    first = _cli("experiment", "run", str(exp), "--db", str(db))
    assert first.returncode == 5, first.stderr
    errors = [ln for ln in first.stderr.splitlines() if ln.startswith("tokcaliper: error:")]
    assert len(errors) == 1 and "read-back" in errors[0] and "'not ready'" in errors[0], first.stderr
    assert "experiment resume" in errors[0]
    with Store(db) as store:
        (row,) = store.list_experiments()
        assert row.status == "stopped"
        runs = store.session_runs(row.id)
        # Arm A's first segment ran (1 warm-up + position 0) before B's read-back failed.
        assert [(r.arm, r.warmup_run, r.position) for r in runs] == [("A", True, None), ("A", False, 0)]
        assert runs[1].readback == "ready" and runs[1].valid
        (mismatch,) = store.outcomes(row.id)
        assert mismatch.kind == "readback_mismatch" and mismatch.arm == "B"
    state.write_text("ready\n")
    second = _cli("experiment", "resume", row.id, "--db", str(db), "--json")
    assert second.returncode == 0, second.stderr
    out = json.loads(second.stdout)
    with Store(db) as store:
        assert store.get_experiment(row.id).status == "finished"
        measured = [r for r in store.session_runs(row.id) if not r.warmup_run]
        assert sorted(r.position for r in measured) == [0, 1, 2, 3]  # nothing repeated
        assert [r.arm for r in sorted(measured, key=lambda r: r.position)] == ["A", "B", "A", "B"]
        assert all(r.valid and r.readback == "ready" for r in measured)
        assert [r.rest_s is not None for r in measured[1:]] == [True] * 3
    assert {a["arm"]: a["n"] for a in out["arms"]} == {"A": 2, "B": 2}


def test_aa_on_the_real_server_is_not_a_difference(tmp_path: Path, local_llama):
    exp = tmp_path / "aa.toml"
    exp.write_text(f"""
name = "A/A"
server_cmd = "{{llama_server}} -m {{smollm2}} --host {{host}} --port {{port}} --metrics -np 4 -c 2048 -t 2"
runs_per_arm = 4
warmup_runs = 0
order = "alternate"
equivalence_margin = 0.2
{_LOAD}
[[arms]]
name = "A"
switch = "true"

[[arms]]
name = "B"
switch = "true"
""")
    db = tmp_path / "aa.db"
    proc = _cli("experiment", "run", str(exp), "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    (comparison,) = out["comparisons"]
    assert (comparison["baseline"], comparison["candidate"]) == ("A", "B")
    analyses = comparison["metrics"]["metrics"]
    # Throughput, TTFT and ITL, Holm-corrected together; the primary metric first.
    assert [a["metric"] for a in analyses] == ["aggregate_output_tok_s", "ttft_p50_ms", "itl_p50_ms"]
    assert comparison["metrics"]["holm"] is True
    for a in analyses:
        assert a["verdict"] in ("inconclusive", "equivalent"), a["report"]["summary"]
        assert a["decided_by"] == "paired" and a["paired"]["n"] == 4


def test_two_arms_in_the_default_order_give_a_verdict_that_names_the_design(tmp_path: Path, local_llama):
    # issue 17 item 1: no `order` key → random-blocks with a drawn seed, stored; the
    # comparison uses the run positions and its verdict says which design decided.
    exp = tmp_path / "default_order.toml"
    exp.write_text(f"""
name = "default order"
server_cmd = "{{llama_server}} -m {{smollm2}} --host {{host}} --port {{port}} --metrics -np 4 -c 2048 -t 2"
runs_per_arm = 3
warmup_runs = 0
{_LOAD}
[[arms]]
name = "A"
switch = "true"

[[arms]]
name = "B"
switch = "true"
""")
    db = tmp_path / "d.db"
    proc = _cli("experiment", "run", str(exp), "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["spec"]["order"] == "random-blocks" and isinstance(out["spec"]["seed"], int)
    with Store(db) as store:
        (row,) = store.list_experiments()
        assert row.spec["seed"] == out["spec"]["seed"]  # stored: the order can be replayed
    (comparison,) = out["comparisons"]
    primary = comparison["metrics"]["metrics"][0]
    assert primary["metric"] == "aggregate_output_tok_s" and primary["paired"]["n"] == 3
    assert primary["drift"]["design"] == "random-blocks"
    assert primary["verdict"] in ("faster", "slower", "inconclusive", "equivalent")
    assert "design random-blocks, decided by" in " ".join(primary["report"]["summary"].split())
    shown = _cli("compare", "--experiment", row.id, "--db", str(db))
    assert shown.returncode == 0, shown.stderr
    assert "design random-blocks" in " ".join(shown.stdout.split())
