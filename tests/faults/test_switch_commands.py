"""Issue 22 items 7 and 19: a switch/read-back command is judged on its whole output,
waited for until it exits (not until its output closes), within the experiment file's
timeout, and leaves no process behind."""

from __future__ import annotations

import json
import sys
import time

import pytest

from tokcaliper.errors import ExperimentStopped
from tokcaliper.experiment.execute import create_experiment, execute_experiment
from tokcaliper.experiment.spec import parse_experiment
from tokcaliper.experiment.switch import MAX_OUTPUT_CHARS, run_command
from tokcaliper.processes import process_alive
from tokcaliper.store import Store

LOAD = """
[load]
concurrency = 1
requests = 1
max_tokens = 4
warmup = 0
idle_seconds = 0
telemetry_interval_s = 0
"""


def _spec(url: str, readback: str, expect_regex: str, extra: str = ""):
    arm = f'''switch = "true"
readback = {json.dumps(readback)}
expect_regex = {json.dumps(expect_regex)}
'''
    return parse_experiment(f'''
url = "{url}"
runs_per_arm = 2
warmup_runs = 0
{extra}
[[arms]]
name = "A"
{arm}
[[arms]]
name = "B"
{arm}
''' + LOAD, "t.toml")


def _printer(text_expr: str) -> str:
    return f"{sys.executable} -c \"import sys; sys.stdout.write({text_expr})\""


def test_the_read_back_is_matched_on_its_whole_output(tmp_path):
    """The attack: 2100 × "x" then "ERROR-power-limit-not-set" passed expect_regex = "x+"
    because only the first 2000 characters were matched."""
    from tests.load.fake_server import FakeServer, FakeTiming

    with FakeServer(FakeTiming(ttft_s=0.002, itl_s=0.001, tokens=4)) as fake, \
            Store(tmp_path / "x.db") as store:
        lying = _spec(fake.base_url, _printer("'x' * 2100 + 'ERROR-power-limit-not-set'"), "x+")
        exp_id = create_experiment(lying, "", store)
        with pytest.raises(ExperimentStopped, match="read-back"):
            execute_experiment(exp_id, lying, store, command_line="t")
        assert store.session_runs(exp_id) == []

        honest = _spec(fake.base_url, _printer("'x' * 2100"), "x+")
        exp_id = create_experiment(honest, "", store)
        result = execute_experiment(exp_id, honest, store, command_line="t")
        assert len(result.runs) == 4 and all(r.valid for r in result.runs)
        assert result.runs[0].readback == "x" * MAX_OUTPUT_CHARS  # the stored copy is cut, the match was not


def test_a_command_that_leaves_a_background_child_returns_when_it_exits_and_the_child_is_stopped():
    """The attack: `sh -c 'sleep 300 & echo started'` held tokcaliper 120 s (EOF never came),
    was called "timed out", and the sleep kept running."""
    started = time.monotonic()
    res = run_command(["/bin/sh", "-c", "sleep 300 & echo $!"], timeout_s=20)
    took = time.monotonic() - started
    assert res.ok, res.describe_failure()
    assert took < 5, f"waited {took:.1f} s for a command that exited at once"
    child = int(res.stdout.strip())
    assert res.leftover
    assert not process_alive(child), "the background child outlived its command"


def test_the_command_timeout_comes_from_the_experiment_file(tmp_path):
    from tests.load.fake_server import FakeServer, FakeTiming

    with FakeServer(FakeTiming(ttft_s=0.002, itl_s=0.001, tokens=4)) as fake, \
            Store(tmp_path / "x.db") as store:
        spec = _spec(fake.base_url, "sleep 30", ".*", extra="command_timeout_s = 0.5")
        exp_id = create_experiment(spec, "", store)
        started = time.monotonic()
        with pytest.raises(ExperimentStopped, match=r"timed out after 500 ms|timed out after 0\.5 s"):
            execute_experiment(exp_id, spec, store, command_line="t")
        assert time.monotonic() - started < 10
