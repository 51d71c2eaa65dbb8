"""`kill -9` of tokcaliper mid-run: the database opens, passes PRAGMA integrity_check, finished runs intact."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tokcaliper.store import Store

pytestmark = pytest.mark.server


def _stored(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return con.execute("SELECT count(*) FROM runs").fetchone()[0]
    except sqlite3.Error:
        return 0  # not created yet


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_kill_9_mid_run_leaves_a_sound_database(tmp_path, local_llama):
    db = tmp_path / "runs.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokcaliper", "bench", "--repeat", "50", "-c", "2", "-n", "8",
         "--max-tokens", "16", "--warmup", "1", "--idle-seconds", "0", "--telemetry-interval", "0",
         "--db", str(db)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    servers: list[int] = []
    try:
        deadline = time.monotonic() + 240
        while _stored(db) < 2 and time.monotonic() < deadline and proc.poll() is None:
            servers = _children(proc.pid) or servers
            time.sleep(0.05)
        assert _stored(db) >= 2, "bench did not store two runs in time"
        time.sleep(0.1)  # inside the next run's load
        servers = _children(proc.pid) or servers
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in servers:  # the orphaned llama-server (its own session: no atexit ran)
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    with Store(db) as store:
        rows = store.list_runs()
        assert len(rows) >= 2
        for row in rows:
            run = store.get_run(row.id)
            assert run.valid and run.metrics.completed == 8 and run.metrics.failed == 0
            assert len([r for r in run.requests if not r.warmup]) == 8
