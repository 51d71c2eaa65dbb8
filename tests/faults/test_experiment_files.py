"""Issue 22 items 16, 27: an experiment file is checked whole, before any row exists.

16: counts, seeds and nesting are bounded, with the file and line; the URL and the
    commands are checked before the experiment is created (no junk "stopped 0/4" row,
    never a message naming a CLI flag the user did not use).
27: a `url` ending in /v1 means the server root, as `bench --url` does (one home:
    tokcaliper.servers.url).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tokcaliper.errors import InputError

HEAD = 'url = "{url}"\n'
ARMS = '[[arms]]\nname = "a"\nswitch = "{switch}"\n[[arms]]\nname = "b"\nswitch = "true"\n'


def _file(tmp_path: Path, *, top: str = "", url: str = "http://127.0.0.1:9", switch: str = "true") -> Path:
    p = tmp_path / "e.toml"
    p.write_text(HEAD.format(url=url) + top + ARMS.format(switch=switch))
    return p


def _experiments(db: Path) -> int:
    if not db.exists():
        return 0
    c = sqlite3.connect(db)
    try:
        return c.execute("SELECT count(*) FROM experiments").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        c.close()


@pytest.mark.parametrize("top, expected", [
    ("runs_per_arm = 9223372036854775807\n", "line 2: runs_per_arm: must be ≤ 10000, got a 19-digit integer"),
    ("runs_per_arm = 1000000000\n", "line 2: runs_per_arm: must be ≤ 10000, got 1000000000"),
    ("runs_per_arm = 1e9\n", "line 2: runs_per_arm: expected a whole number, got 1000000000.0"),
    ("warmup_runs = 100000000\n", "line 2: warmup_runs: must be ≤ 1000, got 100000000"),
    ('order = "random-blocks"\nseed = -1\n', "line 3: seed: must be ≥ 0, got -1"),
    ("x = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
])
def test_bounds_are_checked_with_the_file_and_line(tmp_path, cli, top, expected):
    db = tmp_path / "x.db"
    code, _out, err = cli("experiment", "run", str(_file(tmp_path, top=top)), "--db", str(db))
    assert code == 2 and err.count("\n") == 1, err  # before: MemoryError, ValueError, RecursionError
    assert expected in err and "e.toml" in err and "internal" not in err, err
    assert _experiments(db) == 0  # before: a "running" row left forever


@pytest.mark.parametrize("url, switch, expected, code_", [
    ("http://127.0.0.1:99999", "true", "line 1: url: port must be 1–65535", 2),
    ("ftp://127.0.0.1:9", "true", "line 1: url: must look like http://HOST:PORT", 2),
    ("http://127.0.0.1:9", "echo 'unterminated", "arms[0].switch: command", 2),
    ("http://127.0.0.1:9", "true", "cannot reach server at http://127.0.0.1:9", 3),
])
def test_url_and_commands_are_checked_before_the_experiment_exists(tmp_path, cli, url, switch, expected,
                                                                      code_):
    db = tmp_path / "x.db"
    code, _out, err = cli("experiment", "run", str(_file(tmp_path, url=url, switch=switch)), "--db", str(db))
    assert code == code_ and expected in err, err
    assert "--url" not in err  # the file says url, not the bench option
    assert _experiments(db) == 0  # before: a junk "stopped 0/4" experiment


def test_deep_spec_table_json_is_one_line(tmp_path, cli):
    for depth in (100_000, 500):
        p = tmp_path / f"t{depth}.json"
        p.write_text('{"a": ' * depth + '{"2": 2.5, "4": 3}' + "}" * depth)
        code, _out, err = cli("spec", "table", str(p))
        assert code == 2 and err.count("\n") == 1 and "internal" not in err, err  # before: RecursionError
        assert "nested" in err


@pytest.mark.parametrize("given, root", [
    ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
    ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080"),
    ("http://h:1/proxy/v1", "http://h:1/proxy"),
    ("http://h:1/", "http://h:1"),
    ("https://h", "https://h"),
])
def test_server_url_is_the_server_root(given, root):
    from tokcaliper.servers.url import server_url

    assert server_url(given) == root


def test_server_url_names_what_the_user_gave():
    from tokcaliper.servers.url import server_url

    with pytest.raises(InputError, match=r"^url port must be 1–65535"):
        server_url("http://h:0", what="url")
    with pytest.raises(InputError, match=r"^--url .*no \?query"):
        server_url("http://h:1/?x=1")


def test_experiment_url_ending_in_v1_posts_to_the_server(tmp_path, cli):
    from tests.load.fake_server import FakeServer, FakeTiming

    with FakeServer(FakeTiming(ttft_s=0.002, itl_s=0.001, tokens=4)) as fake:
        p = tmp_path / "e.toml"
        p.write_text(f'url = "{fake.base_url}/v1"\nruns_per_arm = 2\nwarmup_runs = 0\n'
                     "[load]\nconcurrency = 1\nrequests = 2\nmax_tokens = 4\ntelemetry_interval_s = 0\n"
                     "idle_seconds = 0\n" + ARMS.format(switch="true"))
        db = tmp_path / "x.db"
        code, out, err = cli("experiment", "run", str(p), "--db", str(db), "--json")
        assert code == 0, err
    from tokcaliper.store import Store

    with Store(db, create=False) as s:
        runs = [r for r in s.list_runs()]
        assert len(runs) == 4
        assert all(r.completed == 2 and r.failed == 0 for r in runs)  # before: every request a 404 on /v1/v1
        (exp,) = s.list_experiments()
        assert exp.spec["url"] == fake.base_url
    assert json.loads(out)
