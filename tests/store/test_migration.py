"""A database written by schema v1 (committed as test data) opens, upgrades and shows the same runs."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tokcaliper.model.metrics import METRICS
from tokcaliper.store import Store
from tokcaliper.store.sqlite import SCHEMA_VERSION

#: Written by `tokcaliper bench --repeat 2 --requests 4 -c 2 --max-tokens 8 --arm v1-arm
#: --idle-seconds 0.5 --telemetry-interval 0.1` (tokcaliper 0.1.0, schema v1, commit
#: 2fc8aab) against tests/load/fake_server.py; 2 runs, idle power in host_json.
V1_DB = Path(__file__).parent / "data" / "schema_v1.db"


def _v1_rows() -> list[tuple]:
    conn = sqlite3.connect(f"file:{V1_DB}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
        return conn.execute(
            "SELECT id, session, arm, repetition, started_at, host_json, metrics_json FROM runs ORDER BY id"
        ).fetchall()
    finally:
        conn.close()


@pytest.fixture
def v1_copy(tmp_path: Path) -> Path:
    dst = tmp_path / "old.db"
    shutil.copy(V1_DB, dst)
    return dst


def test_v1_database_upgrades_and_keeps_its_runs(v1_copy: Path):
    before = _v1_rows()
    assert len(before) == 2
    with Store(v1_copy, create=False) as store:
        version = store.conn.execute("PRAGMA user_version").fetchone()[0]
        assert version == SCHEMA_VERSION == 7
        assert store.list_baselines() == []  # v7: the baselines table exists, empty
        assert all(store.get_run(r.id).restart is None for r in store.list_runs())  # v3: no restarts
        assert all(store.get_run(r.id).source is None for r in store.list_runs())  # v6: measured, not imported
        rows = store.list_runs()
        assert [(r.id, r.session, r.arm, r.repetition) for r in rows] == [b[:4] for b in before]
        for row, old in zip(rows, before):
            run = store.get_run(row.id)
            old_host = json.loads(old[5])
            old_metrics = json.loads(old[6])
            assert run.metrics.aggregate_output_tok_s == old_metrics["aggregate_output_tok_s"]
            assert run.metrics.completed == old_metrics["completed"] == 4
            # Typed host, the same facts as before.
            assert run.host is not None and run.host.hostname == old_host["hostname"]
            # Idle power moved from the host into the telemetry summary (its one home).
            assert "idle_power_w" in old_host
            assert run.telemetry is not None
            assert run.telemetry.idle_power_w == old_host["idle_power_w"]
            assert run.telemetry.idle_duration_s == old_host["idle_seconds"] == 0.5
            # One timestamp format: UTC, milliseconds, Z; the same instant as before.
            assert old[4].endswith("+00:00") and run.started_at == old[4].replace("+00:00", ".000Z")
            assert run.position == run.repetition and run.rest_s is None
            # Every registry metric is now indexed, including ones v1 did not have.
            scalars = dict(store.conn.execute(
                "SELECT metric, value FROM run_scalars WHERE run_id = ?", (row.id,)).fetchall())
            assert set(scalars) == set(METRICS)
            assert scalars["ttft_p90_ms"] == pytest.approx(1000 * run.metrics.ttft_s.p90)
    # Opening again is a no-op (already v2) and the committed file is untouched.
    with Store(v1_copy, create=False) as store:
        assert len(store.list_runs()) == 2
    assert _v1_rows() == before


def test_upgraded_database_shows_through_the_cli(v1_copy: Path):
    for args in (["runs", "--json"], ["show", "2", "--json"]):
        proc = subprocess.run([sys.executable, "-m", "tokcaliper", *args, "--db", str(v1_copy)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert "v1-arm" in json.dumps(out)


def test_a_failed_upgrade_leaves_version_1(v1_copy: Path, monkeypatch):
    from tokcaliper.store import sqlite as store_module

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE runs ADD COLUMN position INTEGER")
        raise sqlite3.OperationalError("disk I/O error (injected)")

    monkeypatch.setitem(store_module._MIGRATIONS, 2, broken)
    with pytest.raises(Exception, match="injected"):
        Store(v1_copy, create=False)
    conn = sqlite3.connect(v1_copy)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    cols = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
    assert "position" not in cols
    conn.close()
