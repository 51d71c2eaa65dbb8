"""Run an arm's switch and read-back commands (METHODS.md M4): the process side.

The commands come from the experiment file only and are turned into argv by
:func:`tokcaliper.experiment.commands.fill_command` (no shell unless the file
says ``shell = true``). Output is captured, decoded leniently and kept short
enough to store with every run.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

#: Longest command output kept (stored with runs and printed in messages).
MAX_OUTPUT_CHARS = 2000


@dataclass(frozen=True)
class CommandResult:
    """What one command did.

    Attributes:
        argv: what was executed.
        returncode: exit status (None when it could not start or timed out).
        stdout / stderr: captured text, truncated to :data:`MAX_OUTPUT_CHARS`.
        error: why it did not run to completion (not found, timeout), else None.
    """

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    error: str | None = None

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


def run_command(argv: list[str], timeout_s: float = 120.0) -> CommandResult:
    """Run ``argv`` without a shell, wait at most ``timeout_s``, capture its output.

    Never raises for a command that fails: the failure is in the result.
    """
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=timeout_s, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return CommandResult(tuple(argv), None, "", "", error=f"command not found: {argv[0]}")
    except PermissionError:
        return CommandResult(tuple(argv), None, "", "", error=f"command not executable: {argv[0]}")
    except subprocess.TimeoutExpired:
        return CommandResult(tuple(argv), None, "", "", error=f"timed out after {timeout_s:g} s")
    except OSError as e:
        return CommandResult(tuple(argv), None, "", "", error=f"cannot run: {e}")

    def text(b: bytes) -> str:
        return b.decode("utf-8", "replace")[:MAX_OUTPUT_CHARS]

    return CommandResult(tuple(argv), proc.returncode, text(proc.stdout), text(proc.stderr))
