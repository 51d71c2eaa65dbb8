"""`tokcaliper bench` against a failing server: invalid runs, exit 3, the error in one line; /v1 in --url.

The CLI runs in its own process against the fault server (fake_server.py)
on a loopback port, and the stored runs are read back.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tokcaliper.servers.counters import discover_model
from tokcaliper.store import Store

from .fake_server import FakeServer, FakeTiming

FAST = dict(ttft_s=0.002, itl_s=0.001, tokens=8)


def bench(url: str, db, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tokcaliper", "bench", "--url", url, "--repeat", "2", "-c", "2", "-n", "6",
         "--warmup", "0", "--max-tokens", "8", "--idle-seconds", "0", "--telemetry-interval", "0",
         "--db", str(db), *extra],
        capture_output=True, text=True, timeout=120,
    )


def stored(db):
    with Store(db) as s:
        return [s.get_run(row.id) for row in s.list_runs()]


def test_every_request_failing_is_exit_3_with_the_servers_error(tmp_path):
    db = tmp_path / "r.db"
    with FakeServer(FakeTiming(**FAST, fault="http_500")) as srv:
        proc = bench(srv.base_url, db)
    assert proc.returncode == 3, proc.stderr
    err = [ln for ln in proc.stderr.splitlines() if ln.startswith("tokcaliper: error:")]
    assert len(err) == 1 and "Traceback" not in proc.stderr
    assert "no valid run" in err[0]
    assert "Most common error over all runs (12 of 12 requests): HTTP 500: injected 500: server busy" in err[0]
    runs = stored(db)
    assert len(runs) == 2 and not any(r.valid for r in runs)
    assert runs[0].invalid_reason.startswith("6 of 6 measured requests failed (100 % > 10 % allowed)")
    assert runs[0].metrics.error_classes == {"http_status": 6}


@pytest.mark.parametrize("fault", ["usage_negative", "no_done", "done_only", "garbage"])
def test_malformed_streams_do_not_end_the_bench(tmp_path, fault):
    db = tmp_path / "r.db"
    with FakeServer(FakeTiming(**FAST, fault=fault)) as srv:
        proc = bench(srv.base_url, db)
    assert proc.returncode == 3, proc.stderr
    assert "internal error" not in proc.stderr
    runs = stored(db)
    assert len(runs) == 2  # both runs measured and stored
    assert all(r.metrics.completed == 0 and r.metrics.output_tokens == 0 for r in runs)


def test_some_failures_below_the_threshold_stay_valid_and_above_it_are_left_out(tmp_path):
    db = tmp_path / "r.db"
    with FakeServer(FakeTiming(**FAST, fault="http_503", fault_every=3)) as srv:
        ok = bench(srv.base_url, db, "--max-error-rate", "0.5", "--json")
        bad = bench(srv.base_url, tmp_path / "b.db", "--max-error-rate", "0.1")
    assert ok.returncode == 0, ok.stderr
    out = json.loads(ok.stdout)
    assert all(r["valid"] for r in out["runs"])
    assert [r["metrics"]["failed"] for r in out["runs"]] == [2, 2]
    assert bad.returncode == 3, bad.stderr
    assert "2 of 6 measured requests failed (33.3 % > 10 % allowed)" in bad.stderr


def test_url_with_v1_is_accepted(tmp_path):
    db = tmp_path / "r.db"
    with FakeServer(FakeTiming(**FAST)) as srv:
        proc = bench(srv.base_url + "/v1/", db, "--json")
    assert proc.returncode == 0, proc.stderr
    assert f"using {srv.base_url} (tokcaliper adds /v1/chat/completions itself)" in " ".join(proc.stderr.split())
    runs = stored(db)
    assert runs[0].config.base_url == srv.base_url and runs[0].config.model == "fake-model"
    assert all(r.metrics.completed == 6 and r.valid for r in runs)


def test_wrong_path_404_says_what_to_fix(tmp_path):
    with FakeServer(FakeTiming(**FAST)) as srv:
        proc = bench(srv.base_url + "/api", tmp_path / "r.db")
    assert proc.returncode == 3
    assert "HTTP 404 (is --url the server root? give it without /v1)" in proc.stderr


def test_models_nested_200k_deep_is_no_model_not_a_crash():
    with FakeServer(FakeTiming(fault="deep_models")) as srv:
        assert discover_model(srv.base_url) is None
    with FakeServer(FakeTiming()) as srv:
        assert discover_model(srv.base_url) == "fake-model"


FAKE_CMD = f"{sys.executable} tests/load/fake_server.py --port {{port}} --ttft 0.002 --itl 0.001 --tokens 8"


def managed_bench(db, exit_after: int, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tokcaliper", "bench", "--server-cmd", f"{FAKE_CMD} --exit-after {exit_after}",
         "--repeat", "3", "-c", "1", "-n", "6", "--warmup", "0", "--max-tokens", "8", "--idle-seconds", "0",
         "--telemetry-interval", "0", "--db", str(db), *extra],
        capture_output=True, text=True, timeout=120,
    )


def test_server_death_stores_the_run_as_failed_and_stops(tmp_path):
    db = tmp_path / "r.db"
    proc = managed_bench(db, 9)  # dies in the 3rd request of run 2
    assert proc.returncode == 3, proc.stderr
    assert "run 2/3 stored as failed" in proc.stderr
    runs = stored(db)
    assert [r.valid for r in runs] == [True, False]
    assert runs[0].metrics.completed == 6
    failed = runs[1]
    assert failed.invalid_reason.startswith("server died during the run: ")
    assert "server exited with code 1" in failed.invalid_reason or "stopped answering" in failed.invalid_reason
    assert failed.invalid_reason.endswith("server's last log lines: fake_server: listening on 127.0.0.1:"
                                          f"{runs[0].config.base_url.rsplit(':', 1)[1]} | "
                                          "fake_server: injected exit in request 9")
    assert failed.metrics.completed == 2 and failed.metrics.failed >= 1
    assert failed.metrics.error_classes.get("closed_mid_stream") == 1


def test_server_death_with_restart_goes_on_with_the_next_run(tmp_path):
    db = tmp_path / "r.db"
    proc = managed_bench(db, 9, "--on-server-death", "restart", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "restarting the server" in proc.stderr
    runs = stored(db)
    assert [r.valid for r in runs] == [True, False, True]
    assert [r.metrics.completed for r in runs] == [6, 2, 6]
    out = json.loads(proc.stdout)
    assert out["noise_floor"] is not None and [r["valid"] for r in out["runs"]] == [True, False, True]


def test_restart_needs_a_managed_server(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tokcaliper", "bench", "--url", "http://127.0.0.1:9",
                           "--on-server-death", "restart", "--db", str(tmp_path / "r.db")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--on-server-death restart needs a server tokcaliper starts" in proc.stderr


def test_every_run_prints_the_clients_own_figures(tmp_path):
    """The ruler's error bar is shown for every run, not only when it is exceeded."""
    with FakeServer(FakeTiming(**FAST)) as srv:
        proc = bench(srv.base_url, tmp_path / "r.db")
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())
    runs = stored(tmp_path / "r.db")
    for r in runs:
        c = r.metrics.client
        reads = c.reads_kernel_stamped + c.reads_loop_stamped
        assert reads > 0
        assert f"client, run {r.repetition + 1}: loop lag p99 " in out
        assert f"of {reads} reads" in out or f"all {reads} reads" in out
        assert f"{c.connections_opened} connection(s), {c.connections_prefilled} opened before the clock" in out
