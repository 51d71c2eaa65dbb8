"""Is process ``pid`` still the process we recorded? (claims and managed-server records)

A pid alone is not an identity: the kernel reuses pids. Linux gives each process
its start time in clock ticks after boot (proc(5), ``/proc/<pid>/stat`` field 22
``starttime``); a record keeps ``(pid, starttime)`` and the process is the same
while both match. Elsewhere (no ``/proc``) only the pid is checked.
"""

from __future__ import annotations

import os

__all__ = ["listening_pid", "process_alive", "process_start"]


def _stat_fields(pid: int) -> list[str] | None:
    """Fields 3… of ``/proc/<pid>/stat`` (after the command name), or None if unreadable.

    The command name (field 2) is in parentheses and may hold spaces or ``)``; fields
    are counted after its last ``)``.
    """
    try:
        with open(f"/proc/{int(pid)}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except (OSError, ValueError, OverflowError):
        return None
    return text[text.rfind(")") + 2:].split()


def process_start(pid: int) -> str | None:
    """The start time of process ``pid`` (``/proc/<pid>/stat`` field 22, clock ticks after
    boot, as text), or ``None`` when it cannot be read (no such process, no ``/proc``)."""
    rest = _stat_fields(pid)
    return rest[19] if rest is not None and len(rest) > 19 else None  # rest[0] is field 3


def process_alive(pid: int | None, start: str | None = None) -> bool:
    """Whether process ``pid`` exists (and, when ``start`` is given and ``/proc`` can be
    read, is the one that started at ``start``; see :func:`process_start`).

    A zombie (exited, not yet reaped) counts as gone. Never raises.
    """
    if pid is None or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    except (OSError, OverflowError):
        return False
    rest = _stat_fields(pid)
    if rest is None:
        return True  # no /proc: the pid exists, that is all we can tell
    if rest and rest[0] in ("Z", "X"):
        return False
    return start is None or len(rest) <= 19 or rest[19] == start


def listening_pid(url: str) -> int | None:
    """The pid of the process listening on ``url``'s TCP port on this host, or None.

    Only a loopback or local host name is looked up (``127.0.0.1``, ``::1``,
    ``localhost``); the socket table comes from ``psutil.net_connections``, which
    names the pid only for processes this user may inspect. A server inside this
    very process (a test's fake server) gives None: it is the client, not a server.

    Raises:
        Nothing.
    """
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        if host not in ("127.0.0.1", "::1", "localhost", "0.0.0.0"):
            return None
        import psutil

        for c in psutil.net_connections(kind="tcp"):
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
                return None if c.pid == os.getpid() else int(c.pid)
    except Exception:
        return None
    return None
