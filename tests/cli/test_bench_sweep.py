"""A bench sweep over concurrency or rate is an interleaved experiment (issue 18 item 1):
one load arm per level, an order with a stored seed, resume after Ctrl-C without repeating a run."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.load.fake_server import FakeServer, FakeTiming
from tokcaliper.experiment.spec import ExperimentSpec, parse_experiment
from tokcaliper.store import Store

COMMON = ["--max-tokens", "4", "--warmup", "0", "--idle-seconds", "0", "--telemetry-interval", "0"]


def _tok(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tokcaliper", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_a_concurrency_sweep_is_an_interleaved_experiment_with_one_arm_per_level(tmp_path):
    db = tmp_path / "s.db"
    with FakeServer(FakeTiming(ttft_s=0.003, itl_s=0.001, tokens=4)) as srv:
        proc = _tok("bench", "--url", srv.base_url, "-c", "1,3", "--repeat", "2", "-n", "3",
                    "--order", "alternate", *COMMON, "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [lv["arm"] for lv in out["sweep"]] == ["default@c=1", "default@c=3"]
    with Store(db, create=False) as store:
        runs = store.session_runs(out["experiment"])
        spec = ExperimentSpec.model_validate(store.get_experiment(out["experiment"]).spec)
    assert [(r.position, r.arm) for r in runs] == [(0, "default@c=1"), (1, "default@c=3"),
                                                   (2, "default@c=1"), (3, "default@c=3")]
    # Each run carries its level's load (the arm's override of the shared [load]).
    assert [r.config.concurrency for r in runs] == [1, 3, 1, 3]
    assert all(r.config.requests == 3 and r.config.max_tokens == 4 for r in runs)
    assert [a.kind for a in spec.arms] == ["load", "load"] and spec.url == srv.base_url
    assert out["comparisons"][0]["candidate"] == "default@c=3"


def test_resume_after_ctrl_c_repeats_no_run(tmp_path):
    db = tmp_path / "s.db"
    with FakeServer(FakeTiming(ttft_s=0.003, itl_s=0.001, tokens=4)) as srv:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tokcaliper", "bench", "--url", srv.base_url, "--rate", "40,80",
             "--repeat", "3", "-n", "6", "--seed", "3", *COMMON, "--db", str(db)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        deadline = time.monotonic() + 120
        for line in proc.stderr:
            if "run 2/6" in line and "stored as" in line:
                break
            assert time.monotonic() < deadline, "the second run never finished"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        m = re.search(r"`tokcaliper experiment resume (\w+) --db ([^`]+)`", err)
        assert m is not None and "Traceback" not in err, err
        exp_id = m.group(1)
        with Store(db, create=False) as store:
            before = {r.id: r.position for r in store.session_runs(exp_id)}
        assert 2 <= len(before) < 6
        res = _tok("experiment", "resume", exp_id, "--db", str(db))
        assert res.returncode == 0, res.stderr
    with Store(db, create=False) as store:
        runs = store.session_runs(exp_id)
        assert store.get_experiment(exp_id).status == "finished"
    assert sorted(r.position for r in runs) == list(range(6))  # every position once: none repeated
    assert all(before[i] == p for i, p in ((r.id, r.position) for r in runs) if i in before)
    spec = ExperimentSpec.model_validate(store_spec(db, exp_id))
    order = dict(spec.run_order())
    assert all(r.arm == order[r.position] for r in runs)
    assert {r.arm: r.config.rate_rps for r in runs} == {"default@40rps": 40.0, "default@80rps": 80.0}


def store_spec(db, exp_id):  # type: ignore[no-untyped-def]
    with Store(db, create=False) as store:
        return store.get_experiment(exp_id).spec


@pytest.mark.parametrize("args, needle", [
    (["-c", "1,x"], "--concurrency takes whole numbers separated by commas"),
    (["-c", "1,4", "--rate", "1,2"], "sweep one of --concurrency or --rate, not both"),
    (["-c", "1,4", "--repeat", "1"], "a sweep is an experiment with --repeat ≥ 2"),
    (["-c", "1,0"], "--concurrency must be ≥ 1, got 0"),
    (["--rate", "2,0"], "--rate must be > 0, got 0"),
    (["--rate", "2,2"], "--rate: each level once"),
    (["--rate", "2,1e-9"], "--rate 1e-09 with 32 requests means a run of about"),
])
def test_bad_sweeps_are_one_line_before_any_work(tmp_path, args, needle):
    db = tmp_path / "x.db"
    proc = _tok("bench", "--url", "http://127.0.0.1:9", "--db", str(db), *args)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("tokcaliper: error:")]
    assert len(errors) == 1 and needle in errors[0], proc.stderr
    assert not db.exists()


def test_an_experiment_file_takes_a_sweep_and_an_open_loop():
    spec = parse_experiment('url = "http://127.0.0.1:8080"\nruns_per_arm = 2\n[sweep]\nrate_rps = [1, 2.5]\n'
                            '[load]\narrival = "gamma"\nburstiness = 0.5\nrequests = 8\n', "x.toml")
    assert [a.name for a in spec.arms] == ["1rps", "2.5rps"]
    cfg = spec.arm_load("2.5rps").to_load_config("http://127.0.0.1:8080")
    assert (cfg.rate_rps, cfg.arrival, cfg.burstiness, cfg.concurrency, cfg.warmup) == (2.5, "gamma", 0.5, 256, 4)
    spec = parse_experiment('url = "http://127.0.0.1:8080"\n[load]\nrate_rps = 4.0\ncooldown_s = 2\n'
                            '[[arms]]\nname = "a"\nload = {concurrency = 8}\n'
                            '[[arms]]\nname = "b"\nload = {concurrency = 16}\n', "x.toml")
    assert [spec.arm_load(n).streams for n in "ab"] == [8, 16] and spec.rest_before_run_s == 2
    assert spec.arm_load("a").measured_requests == 40  # open loop default: ~10 s of arrivals


@pytest.mark.parametrize("text, needle", [
    ('[sweep]\nconcurrency = [4]\n', "x.toml line 3: sweep.concurrency: a sweep needs at least 2 levels, got 1"),
    ('[sweep]\nconcurrency = [1, 0]\n', "arms[1].load.concurrency: must be ≥ 1, got 0"),
    ('[sweep]\nwarmup = [1, 2]\n', "sweep.warmup: cannot sweep 'warmup'"),
    ('[[arms]]\nname = "a"\nload = {arrival = "gamma"}\n[[arms]]\nname = "b"\nload = {max_tokens = 2}\n',
     "arms[0].load.arrival: arrival needs rate_rps (open loop)"),
    ('[[arms]]\nname = "a"\nload = {nope = 1}\n[[arms]]\nname = "b"\nload = {max_tokens = 2}\n',
     "arms[0].load.nope: unknown key"),
    ('rest_s = 1\n[load]\ncooldown_s = 1\n[sweep]\nconcurrency = [1, 2]\n',
     "give either rest_s or [load] cooldown_s, not both"),
])
def test_bad_sweeps_in_a_file_name_the_key(text, needle):
    from tokcaliper.errors import InputError

    with pytest.raises(InputError) as info:
        parse_experiment('url = "http://127.0.0.1:8080"\n' + text, "x.toml")
    assert needle in str(info.value), str(info.value)
