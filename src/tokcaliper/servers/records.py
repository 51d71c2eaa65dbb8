"""A server tokcaliper started must not outlive it; one that did is reported.

Two parts (issue 22 item 2: ``kill -9`` of tokcaliper left llama-server running with
ppid 1, holding its port and CPU):

* :func:`die_with_parent` runs in the child before ``exec`` (Linux): the kernel sends
  it SIGKILL when tokcaliper dies, however it dies (``PR_SET_PDEATHSIG``, prctl(2)).
  It covers the process tokcaliper starts; a server command that forks and keeps a
  child of its own (a wrapper script that does not ``exec``) can still leave that child.
* every managed server is recorded while it runs, one JSON file per server in
  ``<cache>/servers/`` (:func:`tokcaliper.fileio.cache_dir`): its pid and start
  time, its process group, the command and port, and the tokcaliper process that
  started it. :func:`stray_servers` finds the records whose tokcaliper is gone but
  whose server (or a process of its group) still runs; the next managed start prints
  each as a warning with the command to stop it. Records of servers that are gone are
  deleted. Best effort: an unwritable cache only loses the report.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from tokcaliper.processes import process_alive, process_start

__all__ = ["ServerRecord", "die_with_parent", "forget", "record", "report_strays", "stray_servers"]

#: prctl(2) option: the signal the calling process gets when its parent thread dies.
PR_SET_PDEATHSIG = 1


def _prctl():  # type: ignore[no-untyped-def]
    """libc's prctl (Linux), resolved once in the parent: the child must not load libraries."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        fn = ctypes.CDLL(None, use_errno=True).prctl
        fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        fn.restype = ctypes.c_int
        return fn
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def die_with_parent(parent_pid: int):  # type: ignore[no-untyped-def]
    """A ``preexec_fn`` that makes the child get SIGKILL when tokcaliper dies (None off Linux).

    The parent may die between ``fork`` and the ``prctl`` call; the child then checks
    that its parent is still ``parent_pid`` and kills itself otherwise. The signal comes
    when the *thread* that started the child ends: start servers from the main thread.
    """
    if _PRCTL is None:
        return None
    prctl = _PRCTL

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent_pid:
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


@dataclass(frozen=True)
class ServerRecord:
    """One managed server while it runs.

    Attributes:
        pid / start: the server process and its start time (:func:`tokcaliper.processes.process_start`).
        pgid: its process group (it runs in its own session: pgid = pid).
        parent_pid / parent_start: the tokcaliper process that started it.
        command: the command line. port: the port it was told to listen on. log: its log file.
    """

    pid: int
    start: str | None
    pgid: int
    parent_pid: int
    parent_start: str | None
    command: str
    port: int
    log: str


def _folder() -> Path:
    from tokcaliper.fileio import cache_dir

    return cache_dir() / "servers"


def record(pid: int, command: str, port: int, log: Path) -> Path | None:
    """Record a server just started by this process; return the record's path (None: not writable)."""
    me = os.getpid()
    rec = ServerRecord(pid=pid, start=process_start(pid), pgid=pid, parent_pid=me,
                       parent_start=process_start(me), command=command, port=port, log=str(log))
    try:
        folder = _folder()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{pid}.json"
        path.write_text(json.dumps(asdict(rec)), encoding="utf-8")
        return path
    except OSError:
        return None


def forget(pid: int) -> None:
    """Drop the record of server ``pid`` (stopped by its tokcaliper). Never raises."""
    try:
        (_folder() / f"{pid}.json").unlink(missing_ok=True)
    except OSError:
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def stray_servers() -> list[ServerRecord]:
    """Recorded servers whose tokcaliper is gone but which (or whose group) still run.

    Records of servers that are gone are deleted; those of a live tokcaliper are left
    alone (another session's server). Unreadable records are skipped. Never raises.
    """
    out: list[ServerRecord] = []
    try:
        paths = sorted(_folder().glob("*.json"))
    except OSError:
        return out
    for path in paths:
        try:
            rec = ServerRecord(**json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            continue
        if process_alive(rec.parent_pid, rec.parent_start):
            continue  # its tokcaliper still runs and will stop it
        if process_alive(rec.pid, rec.start) or _group_alive(rec.pgid):
            out.append(rec)
        else:
            try:
                path.unlink(missing_ok=True)
            except OSError:
                pass
    return out


def report_strays(warn) -> list[ServerRecord]:  # type: ignore[no-untyped-def]
    """Call ``warn(line)`` for each of :func:`stray_servers` (one line each); return them."""
    from tokcaliper.model import warnings as W

    strays = stray_servers()
    for rec in strays:
        warn(W.SERVER_LEFT_RUNNING.text(pid=rec.pid, parent=rec.parent_pid, port=rec.port,
                                        command=rec.command, pgid=rec.pgid))
    return strays
