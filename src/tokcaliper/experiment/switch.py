"""Run an arm's switch and read-back commands (METHODS.md M4): the process side.

The commands come from the experiment file only and are turned into argv by
:func:`tokcaliper.experiment.commands.fill_command` (no shell unless the file
says ``shell = true``).

A command's output goes to temporary files, not pipes, and tokcaliper waits for
the command's *exit*: a background child that keeps the output open
(``sh -c 'sleep 300 & echo started'``) no longer holds tokcaliper until the
timeout (issue 22 item 19). Each command runs in its own process group; whatever
is left of that group when the command has exited (or timed out) is stopped
(SIGTERM, then SIGKILL), so nothing a switch started outlives it unseen.

The whole output (up to :data:`MAX_READ_BYTES` per stream) is kept for matching a
read-back; :func:`short` gives the copy stored with runs and shown in messages.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import IO

from tokcaliper.numbers import seconds

#: Longest command output stored with runs and printed in messages (:func:`short`).
MAX_OUTPUT_CHARS = 2000
#: Most bytes read from each of a command's stdout and stderr; a read-back that prints
#: more is refused (it cannot be matched as a whole).
MAX_READ_BYTES = 1024 * 1024
#: Default wait for one command (s); ``command_timeout_s`` in the experiment file sets it.
DEFAULT_TIMEOUT_S = 120.0
#: How long leftovers of a command's process group get after SIGTERM before SIGKILL (s).
LEFTOVER_GRACE_S = 1.0


def short(text: str) -> str:
    """``text`` cut to :data:`MAX_OUTPUT_CHARS` (what is stored and shown; never matched)."""
    return text[:MAX_OUTPUT_CHARS]


@dataclass(frozen=True)
class CommandResult:
    """What one command did.

    Attributes:
        argv: what was executed.
        returncode: exit status (None when it could not start or timed out).
        stdout / stderr: captured text, whole up to :data:`MAX_READ_BYTES` bytes each.
        error: why it did not run to completion (not found, timeout), else None.
        overflow: a stream printed more than :data:`MAX_READ_BYTES` (its text is cut there).
        leftover: processes of the command's group were still running after it ended
            and were stopped.
    """

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    error: str | None = None
    overflow: bool = False
    leftover: bool = False

    @property
    def ok(self) -> bool:
        """True when the command ran and exited 0."""
        return self.error is None and self.returncode == 0

    def describe_failure(self) -> str:
        """One line: which command failed and how (for outcomes and errors)."""
        cmd = " ".join(self.argv)
        if self.error is not None:
            return f"{cmd!r}: {self.error}"
        last = (self.stderr.strip() or self.stdout.strip()).splitlines()
        tail = f": {last[-1][:200]}" if last else ""
        return f"{cmd!r} exited with code {self.returncode}{tail}"


def run_command(argv: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> CommandResult:
    """Run ``argv`` without a shell, wait at most ``timeout_s`` for it to exit, capture its output.

    The command runs in a new session (its own process group); when it has exited or
    timed out, what is left of the group is stopped (SIGTERM, SIGKILL after
    :data:`LEFTOVER_GRACE_S`). Never raises for a command that fails: the failure
    is in the result.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        except FileNotFoundError:
            return CommandResult(tuple(argv), None, "", "", error=f"command not found: {argv[0]}")
        except PermissionError:
            return CommandResult(tuple(argv), None, "", "", error=f"command not executable: {argv[0]}")
        except OSError as e:
            return CommandResult(tuple(argv), None, "", "", error=f"cannot run: {e}")
        error = None
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            error = f"timed out after {seconds(timeout_s)}"
        finally:  # also on Ctrl-C: nothing of the command is left running
            leftover = _stop_group(proc)
        (stdout, over_out), (stderr, over_err) = _read(out), _read(err)
    return CommandResult(tuple(argv), None if error else proc.returncode, stdout, stderr,
                         error=error, overflow=over_out or over_err, leftover=leftover)


def _read(f: IO[bytes]) -> tuple[str, bool]:
    """The text of a captured stream (at most :data:`MAX_READ_BYTES`) and whether there was more."""
    f.seek(0)
    data = f.read(MAX_READ_BYTES + 1)
    return data[:MAX_READ_BYTES].decode("utf-8", "replace"), len(data) > MAX_READ_BYTES


def _stop_group(proc: subprocess.Popen[bytes]) -> bool:
    """Stop the command (if still running) and every process left in its group; reap it.

    Returns:
        True when the command had exited and processes of its group were still running
        (a timed-out command is stopped too, but its result already says it timed out).
    """
    pgid = proc.pid  # start_new_session: the command leads its own group
    leader_exited = proc.poll() is not None  # and reaped: it no longer counts as a member
    if not _group_exists(pgid):
        return False
    leftover = leader_exited
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            break
        deadline = time.monotonic() + LEFTOVER_GRACE_S
        while time.monotonic() < deadline:
            proc.poll()  # reap the leader, so that it does not count as a member
            if not _group_exists(pgid):
                break
            time.sleep(0.02)
        else:
            continue
        break
    try:
        proc.wait(timeout=LEFTOVER_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    return leftover


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
