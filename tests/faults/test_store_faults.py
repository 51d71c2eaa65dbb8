"""Issue 12 items 6, 9 and part of 10: unwritable and damaged databases."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

import tokcaliper.store.sqlite as sq
from tokcaliper.errors import InputError, StoreError
from tokcaliper.store import Store

from tests.faults.conftest import make_run


def _read_only_connect(monkeypatch):
    """Make every store connection read-only, as SQLite opens a file its user cannot write
    (the tests may run as root, for whom chmod does not take writes away)."""
    real = sqlite3.connect

    def connect(path, *a, **kw):
        return real(f"file:{path}?mode=ro", *a, uri=True, **kw)

    monkeypatch.setattr(sq.sqlite3, "connect", connect)


def test_read_only_database_fails_before_measuring(tmp_path, monkeypatch):
    db = tmp_path / "t.db"
    Store(db).close()
    _read_only_connect(monkeypatch)
    with pytest.raises(StoreError, match="cannot be written.*nothing was measured"):
        Store(db)
    with Store(db, create=False) as s:  # reading still works
        assert s.list_runs() == []
        with pytest.raises(StoreError, match="cannot be written"):
            s.check_writable()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files")
def test_chmod_read_only_database(tmp_path):
    db = tmp_path / "t.db"
    Store(db).close()
    db.chmod(0o444)
    with pytest.raises(StoreError, match="cannot be written"):
        Store(db)


def test_a_run_that_cannot_be_written_is_kept_in_a_recovery_file(tmp_path):
    db = tmp_path / "t.db"
    store = Store(db)
    store.conn.execute("PRAGMA query_only = ON")  # writes now fail, as on a full or read-only disk
    run = make_run(arm="a/b")
    with pytest.raises(StoreError, match="kept in") as info:
        store.save_run(run)
    path = str(info.value).split("kept in ")[1].split(" (JSON")[0]
    back = json.loads(open(path, encoding="utf-8").read())
    assert back["arm"] == "a/b" and back["metrics"]["output_tokens"] == 20
    assert os.path.dirname(path) == str(tmp_path.resolve())


def test_recovery_falls_back_to_the_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TOKCALIPER_CACHE", str(tmp_path / "cache"))
    blocked = tmp_path / "file"
    blocked.write_text("x")
    where = sq.write_recovery_file(make_run(), blocked / "t.db")  # parent is a file: unwritable
    assert where is not None and where.parent == (tmp_path / "cache" / "recovered").resolve()


def _damage(db, run_id, column="metrics_json", value="{not json"):
    c = sqlite3.connect(db)
    c.execute(f"UPDATE runs SET {column} = ? WHERE id = ?", (value, run_id))
    c.commit()
    c.close()


def test_one_damaged_row_is_reported_and_skipped(tmp_path, cli):
    db = tmp_path / "t.db"
    with Store(db) as s:
        ids = [s.save_run(make_run(tokens=t)) for t in (10, 20, 30)]
    _damage(db, ids[1])
    _damage(db, ids[2], "config_json", json.dumps({"base_url": 5}))
    code, out, err = cli("runs", "--db", str(db))
    assert code == 0, err
    assert f"run {ids[1]} in" in err and "damaged" in err and "skipped" in err
    assert "1 run(s)" in out and "2 damaged" in out  # issue 22 item 24: damaged as `show` says it is
    code, out, err = cli("show", str(ids[2]), "--db", str(db))
    assert code == 4
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "damaged: config.base_url" in lines[0] and "http" not in lines[0].split("damaged")[1]
    with Store(db, create=False) as s:
        assert [r.id for r in s.session_runs("s1")] == [ids[0]]
        assert [d.id for d in s.damaged] == [ids[1], ids[2]]


def test_missing_table_is_a_store_error(tmp_path, cli):
    db = tmp_path / "t.db"
    Store(db).close()
    c = sqlite3.connect(db)
    c.execute("DROP TABLE requests")
    c.commit()
    c.close()
    code, out, err = cli("runs", "--db", str(db))
    assert code == 4 and "table(s) requests missing" in err and "internal" not in err


def test_db_path_messages_and_codes(tmp_path, cli):
    code, _, err = cli("runs", "--db", "")
    assert code == 2 and "--db ''" in err and '"."' not in err
    code, _, err = cli("runs", "--db", str(tmp_path / "none.db"))
    assert code == 4 and "does not exist" in err
    with pytest.raises(InputError):
        Store("")


@pytest.mark.parametrize("value", ["0", "-1"])
def test_runs_last_must_be_positive(tmp_path, cli, value):
    db = tmp_path / "t.db"
    Store(db).close()
    code, _, err = cli("runs", "--last", value, "--db", str(db))
    assert code == 2 and "--last must be ≥ 1" in err


def test_bench_refuses_an_unwritable_db_before_contacting_the_server(tmp_path, cli):
    blocked = tmp_path / "file"
    blocked.write_text("x")
    # nothing listens on port 9: had the server been contacted first, the error would be exit 3
    code, _, err = cli("bench", "--url", "http://127.0.0.1:9", "--repeat", "1", "--db", str(blocked / "t.db"))
    assert code == 4 and "cannot be created" in err


def test_two_processes_creating_one_database_at_once_both_succeed(tmp_path, monkeypatch):
    """Issue 22 item 4: process B reads user_version 0, then process A creates and
    upgrades the file before B takes the write lock. B must re-read the version under
    the lock, not run the steps again ("duplicate column name: position")."""
    db = tmp_path / "new.db"
    real = sqlite3.connect
    fired: list[bool] = []

    class Racing(sqlite3.Connection):
        def execute(self, sql, *args):  # type: ignore[override]
            if sql == "BEGIN IMMEDIATE" and not fired:
                fired.append(True)
                monkeypatch.setattr(sq.sqlite3, "connect", real)
                Store(db).close()  # the other process wins the race
            return super().execute(sql, *args)

    monkeypatch.setattr(sq.sqlite3, "connect", lambda path, **kw: real(path, factory=Racing, **kw))
    with Store(db) as store:  # the slower process
        assert fired
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == sq.SCHEMA_VERSION
        store.save_run(make_run())
        assert len(store.list_runs()) == 1
