"""Bad input gives one line naming the problem and the error's exit code, never a traceback.

Exit codes (tokcaliper.errors): 2 bad argument or input, 3 server unreachable /
failed / died, 4 results database missing or unusable.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tokcaliper.servers.managed import free_port


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tokcaliper", *args],
                          capture_output=True, text=True, timeout=timeout)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], needle: str, code: int) -> None:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("tokcaliper: error:")]
    assert len(errors) == 1, proc.stderr
    assert needle in errors[0], errors[0]


def test_unreachable_url(tmp_path):
    port = free_port()
    proc = run_cli("bench", "--url", f"http://127.0.0.1:{port}", "--repeat", "1", "--db", str(tmp_path / "x.db"))
    assert_one_line_error(proc, f"cannot reach server at http://127.0.0.1:{port}", 3)


def test_server_command_that_exits_at_once(tmp_path):
    proc = run_cli("bench", "--server-cmd", "sh -c 'echo no model here; exit 7' {port}", "--repeat", "1",
                   "--db", str(tmp_path / "x.db"))
    assert_one_line_error(proc, "server exited with code 7", 3)
    assert "no model here" in proc.stderr


def test_server_command_not_found(tmp_path):
    proc = run_cli("bench", "--server-cmd", "/nonexistent/llama-server --port {port}", "--db", str(tmp_path / "x.db"))
    assert_one_line_error(proc, "server command not found: /nonexistent/llama-server", 3)


@pytest.mark.parametrize("args, needle", [
    (("bench", "--repeat", "0"), "--repeat must be ≥ 1, got 0"),
    (("bench", "--concurrency", "0"), "--concurrency must be ≥ 1"),
    (("bench", "--url", "http://127.0.0.1:1", "--server-cmd", "x"), "either --url or --server-cmd"),
    (("bench", "--url", "notaurl"), "--url must look like http://HOST:PORT"),
    (("bench", "--url", "ftp://127.0.0.1:1"), "--url must look like http://HOST:PORT"),
    (("bench", "--url", "http://127.0.0.1:99999"), "--url port must be 1–65535"),
    (("bench", "--server-cmd", "llama-server --port {prot}"), "unknown placeholder {prot}"),
    (("bench", "--server-cmd", "llama-server 'unbalanced"), "cannot parse --server-cmd"),
    (("bench", "--temperature", "nan"), "--temperature must be a finite number, got nan"),
    (("bench", "--restarts", "2", "--url", "http://127.0.0.1:1"), "--restarts needs a server tokcaliper starts"),
    (("bench", "--restarts", "0"), "--restarts must be between 1 and 1000, got 0"),
    (("show", "abc"), "Invalid value for 'run_id'"),
    (("frobnicate",), "No such command 'frobnicate'"),
])
def test_argument_errors(args, needle):
    assert_one_line_error(run_cli(*args), needle, 2)


@pytest.mark.parametrize("command", [("show", "1"), ("runs",)])
def test_missing_database_is_a_database_error(command):
    assert_one_line_error(run_cli(*command, "--db", "/nonexistent/dir/x.db"), "does not exist", 4)


def test_prompts_file_error_names_line(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "ok"}\n{"prompt": 3}\n')
    proc = run_cli("bench", "--url", "http://127.0.0.1:1", "--prompts", str(f))
    assert_one_line_error(proc, "p.jsonl:2", 2)


def test_readers_never_turn_a_file_into_a_database(tmp_path):
    f = tmp_path / "notes.json"
    f.write_text("")
    assert_one_line_error(run_cli("runs", "--db", str(f)), "is not a tokcaliper results database", 4)
    assert f.read_bytes() == b""


def test_unreachable_server_leaves_no_new_database(tmp_path):
    db = tmp_path / "new.db"
    assert run_cli("bench", "--url", f"http://127.0.0.1:{free_port()}", "--db", str(db)).returncode == 3
    assert not db.exists()


def test_bench_unknown_metric_fails_before_any_work(tmp_path):
    db = tmp_path / "never.db"
    proc = run_cli("bench", "--url", "http://127.0.0.1:9", "--metric", "tok_s", "--db", str(db))
    assert_one_line_error(proc, "unknown metric 'tok_s'; choose one of: aggregate_output_tok_s", 2)
    assert not db.exists()


def test_library_warnings_are_dropped_at_display_even_if_a_library_re_enables_them():
    """statsmodels adds an 'always' filter for ConvergenceWarning when imported (after main()
    installed its filters), so the CLI also drops library warnings when they are shown."""
    from tokcaliper.cli import _quiet_library_warnings

    shown: list[str] = []
    show = _quiet_library_warnings(lambda m, c, f, n, file=None, line=None: shown.append(str(m)))
    show("root finder failed", RuntimeWarning, "/x/site-packages/statsmodels/stats/power.py", 933)
    show("from numpy", RuntimeWarning, "/x/site-packages/numpy/core/_methods.py", 1)
    show("ours", UserWarning, "/x/src/tokcaliper/stats/ab.py", 5)
    assert shown == ["ours"]
