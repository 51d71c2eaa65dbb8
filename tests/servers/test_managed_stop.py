"""ManagedServer.stop() is a cleanup step: it never raises, it reports a failure in one line."""

import os
import signal
import subprocess
import sys

import pytest

from tokcaliper.servers import managed
from tokcaliper.servers.managed import ManagedServer


@pytest.fixture
def server():
    """A ManagedServer (own temporary log) whose process is a real child, a sleeping Python."""
    s = ManagedServer([sys.executable, "-c", "import time; time.sleep(60)"])
    s.proc = subprocess.Popen(s.argv, start_new_session=True)
    yield s
    if s.proc.poll() is None:  # the real clean-up, whatever the test did
        os.killpg(s.proc.pid, signal.SIGKILL)
        s.proc.wait(timeout=10)
    s.log_path.unlink(missing_ok=True)


def _one_warning(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_clean_stop_says_nothing(server, capsys):
    server.stop(grace_s=5)
    assert server.proc.poll() is not None and server.stop_problem is None
    assert capsys.readouterr().err == ""
    assert not server.log_path.exists()  # a clean stop removes its temporary log
    server.stop()  # idempotent


def test_permission_error_is_one_line(server, capsys, monkeypatch):
    def deny(pid, sig):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(managed.os, "killpg", deny)
    server.stop(grace_s=0.1)  # must not raise
    line = _one_warning(capsys.readouterr().err)
    pid = server.proc.pid
    assert line == (f"tokcaliper: warning: could not stop the server (pid {pid}): "
                    f"PermissionError: [Errno 1] Operation not permitted; it may still be running "
                    f"(kill -KILL -{pid}; log {server.log_path})")
    assert server.stop_problem == line.removeprefix("tokcaliper: warning: ")
    assert server.log_path.exists()  # kept: the message names it


def test_second_timeout_is_one_line(server, capsys, monkeypatch):
    sent = []
    monkeypatch.setattr(managed.os, "killpg", lambda pid, sig: sent.append(sig))

    def never(timeout=None):
        raise subprocess.TimeoutExpired(server.argv, timeout)

    monkeypatch.setattr(server.proc, "wait", never)
    server.stop(grace_s=0.5)
    assert sent == [signal.SIGTERM, signal.SIGKILL]
    line = _one_warning(capsys.readouterr().err)
    assert ("could not stop the server (pid " in line
            and "TimeoutError: still running 0.5 s after SIGTERM and 0.5 s after SIGKILL" in line)


def test_process_already_gone_is_not_a_problem(server, capsys, monkeypatch):
    def gone(pid, sig):
        raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr(managed.os, "killpg", gone)
    server.stop(grace_s=0.1)
    assert server.stop_problem is None and capsys.readouterr().err == ""
