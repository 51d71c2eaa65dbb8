"""Store: runs round-trip through SQLite; errors name the database."""

import sqlite3

import pytest

from tokcaliper.errors import InputError, StoreError
from tokcaliper.load.summary import summarize
from tokcaliper.model.run import LoadConfig, RequestRecord, Run
from tokcaliper.store import Store, load_metric_values


def make_run(tokens: int, session="s1") -> Run:
    recs = [RequestRecord(index=0, start_s=0.0, ttft_s=0.1, e2e_s=2.0, output_tokens=tokens,
                          token_count_source="usage", itl_s=[0.1, 0.2],
                          server_timings={"draft_n": 3})]
    return Run(session=session, started_at="2026-01-01T00:00:00+00:00",
               finished_at="2026-01-01T00:00:02+00:00", command_line="tokcaliper bench",
               tool_version="0.1.0", config=LoadConfig(base_url="http://127.0.0.1:1"),
               metrics=summarize(recs), requests=recs, counters_delta={"x_total": 5.0})


def test_round_trip_and_metric_values(tmp_path):
    db = tmp_path / "t.db"
    with Store(db) as s:
        a, b = s.save_run(make_run(20)), s.save_run(make_run(40))
        back = s.get_run(b)
        assert back.requests[0].itl_s == [0.1, 0.2]
        assert back.requests[0].server_timings == {"draft_n": 3}
        assert back.counters_delta == {"x_total": 5.0}
        assert back.metrics == make_run(40).metrics
        assert [r.id for r in s.list_runs()] == [a, b]
        assert s.session_ids("s1") == [a, b]
    assert load_metric_values(db, [a, b], "aggregate_output_tok_s") == pytest.approx([10.0, 20.0])


def test_errors(tmp_path):
    db = tmp_path / "t.db"
    with Store(db) as s:
        with pytest.raises(InputError, match="no run with id 9"):
            s.get_run(9)
        with pytest.raises(InputError, match="unknown metric"):
            s.metric_values([1], "bogus")
    with pytest.raises(StoreError, match="does not exist"):
        load_metric_values(tmp_path / "none.db", [1], "aggregate_output_tok_s")
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(StoreError, match="not a tokcaliper database"):
        Store(other)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="cannot use results database"):
        Store(junk)
