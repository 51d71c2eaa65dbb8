"""Ctrl-C during a bench: the managed server is stopped and finished runs are kept."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import pytest

from tokcaliper.store import Store

pytestmark = pytest.mark.server


def test_sigint_stops_server_and_keeps_finished_runs(tmp_path, local_llama):
    db = tmp_path / "runs.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokcaliper", "bench", "--repeat", "50", "--concurrency", "2",
         "--requests", "4", "--max-tokens", "16", "--db", str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    port = None
    deadline = time.monotonic() + 300
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.search(r"--port (\d+)", line)
        if m:
            port = m.group(1)
        if "stored as #1" in line:
            break
        assert time.monotonic() < deadline, "first run never finished"
    assert port is not None
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    # The server tokcaliper started is gone.
    alive = subprocess.run(["pgrep", "-f", f"llama-server.*--port {port}"], capture_output=True)
    assert alive.returncode == 1, alive.stdout
    with Store(db, create=False) as store:
        assert len(store.list_runs()) >= 1
