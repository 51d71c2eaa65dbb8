"""Options bounded up front, with the reason (issue 22 item 20): an open-loop rate whose run
would last for ages (``--rate 1e-9`` slept ~10⁹ s), a plan budget for a run of 10³⁰⁰ s
("≈ 1.7e+297 days"), and more concurrent streams than the process may open sockets
(``--concurrency 100000`` failed on the client's own descriptor limit, blamed the server
and exited 3). Each is refused before any server is contacted, exit 2.
"""

from __future__ import annotations

import resource

import pytest

DEAD = "http://127.0.0.1:9"  # nothing listens: reaching it would be exit 3, not 2


@pytest.mark.parametrize("args, message", [
    (["--rate", "1e-9"], "--rate 1e-09 with 32 requests means a run of about 32,000,000,000 s (requests ÷ rate), "
                         "longer than the 7-day bound of one run (604,800 s): raise --rate or lower --requests"),
    (["--rate", "1e-9", "--duration", "60"], "--rate 1e-09 over --duration 60 s expects 6e-08 arrivals "
                                             "(rate × duration): fewer than one; raise --rate or --duration"),
    (["--rate", "1000000", "--duration", "604800"],
     "--rate 1e+06 over --duration 604800 s expects 604,800,000,000 arrivals (rate × duration), above the "
     "10,000,000 whose times are drawn before the run starts; lower --rate or --duration"),
    (["--rate", "1", "--requests", "20000000"],
     "--rate 1 with 20000000 requests: more than the 10,000,000 arrivals whose times are drawn before "
     "the run starts; lower --requests"),
])
def test_open_loop_rates_that_cannot_run_are_refused(cli, tmp_path, args, message):
    code, out, err = cli("bench", "--url", DEAD, "--db", str(tmp_path / "t.db"), *args)
    assert (code, err) == (2, f"tokcaliper: error: {message}\n")


def test_plan_refuses_a_run_longer_than_bench_takes(cli):
    code, out, err = cli("plan", "--cv", "0.05", "--effect", "0.05", "--run-seconds", "1e300")
    assert code == 2 and "days" not in out
    assert err == "tokcaliper: error: --run-seconds must be ≤ 604,800 (7 days, the longest run bench takes), " \
                  "got 1e+300\n"
    code, _, err = cli("plan", "--cv", "0.05", "--effect", "0.05", "--run-seconds", "60", "--cooldown", "1e300")
    assert code == 2 and "--cooldown must be ≤ 86,400" in err


def _fake_nofile(monkeypatch, soft: int, hard: int) -> list:
    import tokcaliper.load.pool as pool

    calls: list = []
    monkeypatch.setattr(pool.resource, "getrlimit", lambda which: (soft, hard))
    monkeypatch.setattr(pool.resource, "setrlimit", lambda which, lim: calls.append(lim))
    return calls


def test_concurrency_beyond_the_descriptor_limit_is_refused_naming_ulimit(cli, tmp_path, monkeypatch):
    _fake_nofile(monkeypatch, 1024, 4096)
    code, out, err = cli("bench", "--url", DEAD, "--db", str(tmp_path / "t.db"), "--concurrency", "100000")
    assert (code, err) == (2, "tokcaliper: error: --concurrency 100000 needs about 100,064 open files (one "
                              "socket per stream and 64 for the rest), but this process may open 1,024 "
                              "(ulimit -n; hard limit 4,096): lower --concurrency or raise ulimit -n\n")


def test_the_soft_limit_is_raised_when_the_hard_limit_allows(monkeypatch):
    from tokcaliper.load.pool import ensure_fd_room

    calls = _fake_nofile(monkeypatch, 1024, 1 << 20)
    ensure_fd_room(2000, "--concurrency")
    assert calls == [(2064, 1 << 20)]
    calls = _fake_nofile(monkeypatch, 1024, resource.RLIM_INFINITY)
    ensure_fd_room(10, "--concurrency")  # fits: nothing changed
    assert calls == []
