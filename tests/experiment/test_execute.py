"""The experiment runner against the controlled fake server: failed starts, mismatches, resume.

The fake server stands in only for what the real one cannot give quickly and
on purpose: a second arm that never starts, a read-back that lies. The real
llama-server runs the same paths in tests/experiment/test_experiment_real.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tokcaliper.errors import ExperimentStopped, Interrupted
from tokcaliper.experiment.analysis import analyze_experiment
from tokcaliper.experiment.execute import ExperimentEvents, create_experiment, execute_experiment, segments
from tokcaliper.experiment.spec import parse_experiment
from tokcaliper.store import Store

FAKE = Path(__file__).resolve().parents[1] / "load" / "fake_server.py"
SERVE = f"{sys.executable} {FAKE} --host {{host}} --port {{port}}"
LOAD = """
[load]
concurrency = 2
requests = 2
max_tokens = 4
warmup = 0
idle_seconds = 0
telemetry_interval_s = 0
"""


def _spec(body: str, load: str = LOAD):
    return parse_experiment(body + load, "test.toml")


def _run(spec, store, exp_id=None, **kw):
    exp_id = exp_id or create_experiment(spec, "", store)
    return exp_id, execute_experiment(exp_id, spec, store, command_line="test", **kw)


def test_segments_follow_the_schedule():
    spec = _spec(f'''
runs_per_arm = 2
warmup_runs = 1
order = "abba"
[[arms]]
name = "A"
server_cmd = "{SERVE}"
[[arms]]
name = "B"
server_cmd = "{SERVE}"
''')
    segs = segments(spec)
    # A B B A: three switches (A, B B, A), one warm-up after each.
    assert [(s.arm, s.warmups, s.positions) for s in segs] == [("A", 1, (0,)), ("B", 1, (1, 2)), ("A", 1, (3,))]


def test_an_arm_that_cannot_start_is_an_outcome_and_the_other_arm_goes_on(tmp_path):
    spec = _spec(f'''
runs_per_arm = 2
warmup_runs = 0
order = "alternate"
[[arms]]
name = "good"
server_cmd = "{SERVE}"
[[arms]]
name = "broken"
server_cmd = "{tmp_path}/no-such-server --port {{port}}"
''')
    with Store(tmp_path / "x.db") as store:
        exp_id, result = _run(spec, store)
        runs = store.session_runs(exp_id)
        assert [(r.arm, r.position) for r in runs] == [("good", 0), ("good", 2)]
        (o,) = store.outcomes(exp_id)
        assert o.kind == "failed_start" and o.arm == "broken" and "no-such-server" in o.reason
        assert result.pending == [1, 3]
        assert store.get_experiment(exp_id).status == "incomplete"
        an = analyze_experiment(store, exp_id)
        (c,) = an.comparisons
        assert c.metrics is None and "broken" in (c.error or "")
        assert [(a.arm, a.n) for a in an.arms] == [("good", 2), ("broken", 0)]


def test_readback_mismatch_stop_and_continue(tmp_path):
    from tests.load.fake_server import FakeServer, FakeTiming

    with FakeServer(FakeTiming(ttft_s=0.005, itl_s=0.001, tokens=4)) as fake:
        body = f'''
url = "{fake.base_url}"
runs_per_arm = 2
warmup_runs = 0
order = "alternate"
[[arms]]
name = "A"
switch = "true"
readback = "echo 200 W"
expect_regex = "200(\\\\.0+)? W"
[[arms]]
name = "B"
switch = "true"
readback = "echo 200 W"
expect = "180 W"
'''
        spec = _spec(body)
        with Store(tmp_path / "x.db") as store:
            exp_id = create_experiment(spec, body, store)
            with pytest.raises(ExperimentStopped, match=r"read-back 'echo 200 W' printed '200 W', expected '180 W'"):
                execute_experiment(exp_id, spec, store, command_line="t")
            assert store.get_experiment(exp_id).status == "stopped"
            assert [(r.arm, r.valid) for r in store.session_runs(exp_id)] == [("A", True)]
            # Continue instead: B's runs are stored, marked invalid, and never analysed.
            execute_experiment(exp_id, spec, store, command_line="t", on_mismatch="continue")
            runs = store.session_runs(exp_id)
            assert sorted(r.position for r in runs) == [0, 1, 2, 3]
            b_runs = [r for r in runs if r.arm == "B"]
            assert all(not r.valid and "expected '180 W'" in r.invalid_reason for r in b_runs)
            assert all(r.readback == "200 W" for r in runs)
            an = analyze_experiment(store, exp_id)
            assert [(a.arm, a.n) for a in an.arms] == [("A", 2), ("B", 0)]


def test_resume_after_an_interruption_repeats_nothing(tmp_path):
    from tests.load.fake_server import FakeServer, FakeTiming

    with FakeServer(FakeTiming(ttft_s=0.005, itl_s=0.001, tokens=4)) as fake:
        spec = _spec(f'''
url = "{fake.base_url}"
runs_per_arm = 3
warmup_runs = 1
order = "random-blocks"
seed = 7
[[arms]]
name = "A"
switch = "true"
[[arms]]
name = "B"
switch = "true"
''')
        seen: list[int | None] = []

        def stop_after_three(run) -> None:
            seen.append(run.position)
            if len([p for p in seen if p is not None]) == 3:
                raise KeyboardInterrupt

        with Store(tmp_path / "x.db") as store:
            exp_id = create_experiment(spec, "", store)
            # Issue 22 item 8: the interruption says what is kept and how to go on, as bench does.
            with pytest.raises(Interrupted) as info:
                execute_experiment(exp_id, spec, store, command_line="t",
                                   events=ExperimentEvents(on_run=stop_after_three))
            note = str(info.value)
            assert f"3 measured run(s) of experiment {exp_id} kept in {store.path}" in note, note
            assert f"`tokcaliper experiment resume {exp_id} --db {store.path}`" in note, note
            assert store.get_experiment(exp_id).status == "stopped"
            first = [r.position for r in store.session_runs(exp_id) if not r.warmup_run]
            assert first == [0, 1, 2]
            result = execute_experiment(exp_id, spec, store, command_line="t")
            measured = [r for r in store.session_runs(exp_id) if not r.warmup_run]
            assert sorted(r.position for r in measured) == list(range(6))
            assert [r.position for r in result.runs if not r.warmup_run] == [3, 4, 5]
            assert store.get_experiment(exp_id).status == "finished" and result.pending == []
            order = dict(spec.run_order())
            assert all(r.arm == order[r.position] for r in measured)
            # repetition counts within the arm, in run order
            for arm in ("A", "B"):
                reps = [r.repetition for r in sorted(measured, key=lambda r: r.position) if r.arm == arm]
                assert reps == [0, 1, 2]


def test_until_decided_stops_early_on_a_clear_difference(tmp_path, capsys):
    # Arm B streams tokens twice as slowly: the sequential rule must stop well
    # before the cap of 10 pairs with "slower", and say how many pairs it used.
    spec = _spec(f'''
runs_per_arm = 10
warmup_runs = 0
order = "abba"
until_decided = true
[[arms]]
name = "fast"
server_cmd = "{SERVE} --itl 0.004 --tokens 16"
[[arms]]
name = "slow"
server_cmd = "{SERVE} --itl 0.012 --tokens 16"
''', LOAD.replace("max_tokens = 4", "max_tokens = 16").replace("requests = 2", "requests = 4")
            .replace("warmup = 0", "warmup = 2"))
    with Store(tmp_path / "x.db") as store:
        exp_id, result = _run(spec, store)
        d = result.decision
        assert d is not None and d.decided and d.verdict == "slower", d
        assert 3 <= d.pairs_used < 10
        measured = [r for r in store.session_runs(exp_id) if not r.warmup_run]
        assert len(measured) == 2 * d.pairs_used
        assert store.get_experiment(exp_id).status == "finished"
        assert [o.kind for o in store.outcomes(exp_id)] == ["decided"]
        an = analyze_experiment(store, exp_id)
        assert an.sequential is not None and an.sequential.verdict == "slower"
        assert an.governs is not None and an.governs.startswith("the sequential decision governs")
    # issue 17 item 4: `compare --experiment` shows the sequential decision and says it governs
    from tokcaliper.cli import main

    for args in ([], ["--json"]):
        rc = main(["compare", "--experiment", exp_id, "--db", str(tmp_path / "x.db"), *args])
        out = " ".join(capsys.readouterr().out.split())
        assert rc == 0
        if args:
            data = json.loads(out)
            assert data["sequential"]["verdict"] == "slower" and data["sequential"]["decided"]
            assert "sequential decision governs" in data["governs"]
        else:
            assert f"sequential rule (until decided): decided: slower after {d.pairs_used}" in out
            assert "which verdict governs: the sequential decision governs: 'slower'" in out


def test_until_decided_needs_two_interleaved_arms():
    from tokcaliper.errors import InputError

    with pytest.raises(InputError, match="until_decided needs exactly 2 arms in an interleaved order"):
        _spec(f'''
runs_per_arm = 4
order = "blocked"
until_decided = true
[[arms]]
name = "A"
server_cmd = "{SERVE}"
[[arms]]
name = "B"
server_cmd = "{SERVE}"
''')
