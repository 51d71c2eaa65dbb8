"""Issue 12 item 5: SIGTERM and SIGHUP stop a bench as cleanly as Ctrl-C.

The managed server runs in its own session (so that Ctrl-C reaches tokcaliper
first), hence a SIGTERM to tokcaliper alone used to leave it running. Exit code:
128 + the signal's number (143 for SIGTERM, 129 for SIGHUP; 130 for Ctrl-C).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tokcaliper.store import Store

from .conftest import TINY_LOAD

FAKE = Path(__file__).resolve().parents[1] / "load" / "fake_server.py"


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _ignore_sigint() -> None:
    """What a non-interactive shell does to a background job (``cmd &``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("sig, code, sigint_ignored", [
    (signal.SIGTERM, 143, False), (signal.SIGHUP, 129, False),
    # Issue 22 item 1: with SIGINT inherited as ignored, SIGTERM/SIGHUP did nothing.
    (signal.SIGTERM, 143, True), (signal.SIGHUP, 129, True),
])
def test_signal_stops_server_and_keeps_stored_runs(tmp_path, sig, code, sigint_ignored):
    db = tmp_path / "runs.db"
    cmd = f"{sys.executable} {FAKE} --port {{port}} --ttft 0.01 --itl 0.01 --tokens 8"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokcaliper", "bench", "--server-cmd", cmd, "--repeat", "200",
         "--concurrency", "2", "--requests", "4", "--max-tokens", "8", "--idle-seconds", "0",
         "--telemetry-interval", "0", "--db", str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=_ignore_sigint if sigint_ignored else None,
    )
    port = None
    stored = 0
    deadline = time.monotonic() + 120
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.search(r"--port (\d+)", line)
        if m:
            port = int(m.group(1))
        if "stored as #" in line:
            stored += 1
            if stored == 2:
                break
        assert time.monotonic() < deadline, "runs never finished"
    assert port is not None and _listening(port)
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"{signal.Signals(sig).name} did not stop tokcaliper within 30 s: "
                             f"{err[-2000:]}") from None
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert "interrupted" in err and "stored in" in err, err
    time.sleep(0.5)
    assert not _listening(port), "the managed server outlived tokcaliper"
    with Store(db, create=False) as store:
        rows = store.list_runs()
        assert len(rows) >= 2
        for r in rows:
            run = store.get_run(r.id)
            assert run.metrics.completed == 4 and len(run.requests) == 4 + 2  # + warm-up requests


def test_sigterm_of_experiment_run_names_the_kept_runs_and_the_resume_command(tmp_path):
    """Issue 22 item 8: an interrupted `experiment run` said only "interrupted by SIGTERM"."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2] / "src"),
                                                        os.environ.get("PYTHONPATH", "")])}
    serve = f"{sys.executable} {FAKE} --host {{host}} --port {{port}} --ttft 0.01 --itl 0.01 --tokens 4"
    exp = tmp_path / "exp.toml"
    exp.write_text(f'''
server_cmd = "{serve}"
runs_per_arm = 50
warmup_runs = 0{TINY_LOAD}[[arms]]
name = "A"
switch = "true"
[[arms]]
name = "B"
switch = "true"
''', encoding="utf-8")
    db = tmp_path / "runs.db"
    proc = subprocess.Popen([sys.executable, "-m", "tokcaliper", "experiment", "run", str(exp), "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    exp_id = None
    for line in proc.stderr:
        m = re.match(r"experiment ([0-9a-f]{12}):", line)
        exp_id = exp_id or (m.group(1) if m else None)
        if "stored as #" in line:
            break
    assert exp_id is not None
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert f"measured run(s) of experiment {exp_id} kept in {db}" in err, err
    assert f"continue with `tokcaliper experiment resume {exp_id} --db {db}`" in err, err
    assert "Traceback" not in err
