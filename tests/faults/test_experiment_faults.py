"""Issue 22 items 3, 5, 6 and 13: an experiment is measured once, with the prompts it
started with, never past its stopping rule, and exits 3 when nothing valid was measured."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tokcaliper.errors import ExperimentBusy, InputError
from tokcaliper.experiment.execute import create_experiment, execute_experiment
from tokcaliper.experiment.spec import parse_experiment
from tokcaliper.store import Store

from .conftest import TINY_LOAD

REPO = Path(__file__).resolve().parents[2]
FAKE = REPO / "tests" / "load" / "fake_server.py"
LOAD = TINY_LOAD


def _switch_spec(url: str, extra: str = "", load: str = LOAD):
    return parse_experiment(f'''
url = "{url}"
runs_per_arm = 3
warmup_runs = 0
{extra}
[[arms]]
name = "A"
switch = "true"
[[arms]]
name = "B"
switch = "true"
''' + load, "t.toml")


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("TOKCALIPER_DEBUG", None)
    return env


# ------------------------------------------------------------------ item 3
def test_a_live_holder_makes_a_second_runner_refuse_and_a_dead_one_is_taken_over(tmp_path):
    from tests.load.fake_server import FakeServer, FakeTiming

    holder = subprocess.Popen(["sleep", "60"])
    try:
        with FakeServer(FakeTiming(ttft_s=0.002, itl_s=0.001, tokens=4)) as fake, \
                Store(tmp_path / "x.db") as store:
            spec = _switch_spec(fake.base_url)
            exp_id = create_experiment(spec, "", store)
            store.claim_experiment(exp_id, pid=holder.pid)
            with pytest.raises(ExperimentBusy, match=rf"measured by process {holder.pid} "):
                execute_experiment(exp_id, spec, store, command_line="t")
            assert store.session_runs(exp_id) == []  # nothing measured by the refused runner
            holder.kill()
            holder.wait()
            result = execute_experiment(exp_id, spec, store, command_line="t")  # stale: taken over
            assert sorted(r.position for r in result.runs) == list(range(6))
            assert store.get_experiment(exp_id).claimed_pid is None  # released at the end
    finally:
        holder.kill()
        holder.wait()


def test_two_resumes_at_once_measure_each_position_once(tmp_path):
    """The attack: a resume while the first runner is alive measured every pending position
    twice, and the experiment could never be analysed ("block 0 holds two runs of arm …")."""
    from tests.load.fake_server import FakeServer, FakeTiming

    db = tmp_path / "x.db"
    with FakeServer(FakeTiming(ttft_s=0.002, itl_s=0.001, tokens=4)) as fake:
        exp = tmp_path / "exp.toml"
        exp.write_text(f'''
url = "{fake.base_url}"
runs_per_arm = 2
warmup_runs = 0
rest_s = 1.5
[[arms]]
name = "A"
switch = "true"
[[arms]]
name = "B"
switch = "true"
''' + LOAD, encoding="utf-8")
        first = subprocess.Popen([sys.executable, "-m", "tokcaliper", "experiment", "run", str(exp),
                                  "--db", str(db), "--json"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=_env())
        assert first.stderr is not None
        exp_id = None
        deadline = time.monotonic() + 60
        for line in first.stderr:
            m = re.match(r"experiment ([0-9a-f]{12}):", line)
            exp_id = exp_id or (m.group(1) if m else None)
            if "stored as #" in line:
                break
            assert time.monotonic() < deadline
        assert exp_id is not None
        second = subprocess.run([sys.executable, "-m", "tokcaliper", "experiment", "resume", exp_id,
                                 "--db", str(db)], capture_output=True, text=True, env=_env(), timeout=60)
        _out, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
    assert second.returncode == 4, second.stderr
    assert f"measured by process {first.pid}" in second.stderr, second.stderr
    assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
    with Store(db, create=False) as store:
        positions = [r.position for r in store.session_runs(exp_id) if not r.warmup_run]
        assert sorted(positions) == list(range(4)), positions  # each position once


# ------------------------------------------------------------------ item 5
def test_resume_reads_the_prompts_the_first_run_resolved_and_refuses_changed_ones(tmp_path, monkeypatch):
    from tests.load.fake_server import FakeServer, FakeTiming

    first_dir, elsewhere = tmp_path / "exp", tmp_path / "elsewhere"
    first_dir.mkdir()
    elsewhere.mkdir()
    (first_dir / "p.jsonl").write_text('{"prompt": "the experiment\'s own prompt"}\n', encoding="utf-8")
    (elsewhere / "p.jsonl").write_text("not the experiment's prompts: not even JSON\n", encoding="utf-8")
    load = LOAD.replace("[load]", '[load]\nprompts = "p.jsonl"')
    with FakeServer(FakeTiming(ttft_s=0.002, itl_s=0.001, tokens=4)) as fake, \
            Store(tmp_path / "x.db") as store:
        spec = _switch_spec(fake.base_url, load=load)
        exp_id = create_experiment(spec, "", store, base_dir=first_dir)
        assert store.get_experiment(exp_id).prompts_path == str(first_dir / "p.jsonl")
        monkeypatch.chdir(elsewhere)  # `experiment resume` from another folder
        result = execute_experiment(exp_id, spec, store, command_line="t")
        assert len(result.runs) == 6  # read the experiment's file, not ./p.jsonl
        assert store.get_experiment(exp_id).prompts_sha256 is not None
        (first_dir / "p.jsonl").write_text('{"prompt": "edited"}\n', encoding="utf-8")
        with pytest.raises(InputError, match=r"p\.jsonl has changed since the experiment's first run"):
            execute_experiment(exp_id, spec, store, command_line="t")


# ------------------------------------------------------------------ item 6
def test_resuming_a_decided_experiment_measures_nothing(tmp_path, monkeypatch):
    from tests.load.fake_server import FakeServer, FakeTiming
    import tokcaliper.experiment.execute as ex

    def decided_after_one_pair(spec, runs):
        measured = [r for r in runs if not r.warmup_run]
        return SimpleNamespace(decided=len(measured) >= 2, verdict="faster",
                               reason="B is faster (test rule)") if measured else None

    monkeypatch.setattr(ex, "sequential_decision", decided_after_one_pair)
    with FakeServer(FakeTiming(ttft_s=0.002, itl_s=0.001, tokens=4)) as fake, \
            Store(tmp_path / "x.db") as store:
        spec = _switch_spec(fake.base_url, extra="until_decided = true")
        exp_id = create_experiment(spec, "", store)
        first = execute_experiment(exp_id, spec, store, command_line="t")
        assert len(first.runs) == 2 and store.get_experiment(exp_id).status == "finished"
        again = execute_experiment(exp_id, spec, store, command_line="t")
        assert again.runs == [] and again.already_decided
        assert len(store.session_runs(exp_id)) == 2


# ------------------------------------------------------------------ item 13
def test_an_experiment_in_which_no_arm_starts_exits_3(cli, tmp_path):
    exp = tmp_path / "exp.toml"
    exp.write_text('''
runs_per_arm = 2
warmup_runs = 0
[[arms]]
name = "A"
server_cmd = "/nonexistent/server --port {port}"
[[arms]]
name = "B"
server_cmd = "/nonexistent/server --port {port} --b"
''' + LOAD, encoding="utf-8")
    code, _out, err = cli("experiment", "run", str(exp), "--db", str(tmp_path / "x.db"), "--json")
    assert code == 3, err
    assert "no valid run" in err and "/nonexistent/server" in err, err


def test_a_spec_sweep_in_which_no_k_starts_exits_3(cli, tmp_path):
    code, _out, err = cli("spec", "sweep", "--server-cmd", "/nonexistent/server -n {k} --port {port}",
                          "--k", "2,4", "--repeat", "2", "--requests", "1", "--max-tokens", "4",
                          "--db", str(tmp_path / "x.db"), "--json")
    assert code == 3, err
    assert "no valid run" in err, err
