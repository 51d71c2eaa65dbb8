"""A server process started, health-checked and stopped by tokcaliper.

The command is a template: ``{port}`` and ``{host}`` are filled in by us (a
free loopback port unless given). The process runs in its own session so that
Ctrl-C reaches tokcaliper first, which then stops the server cleanly; an
``atexit`` hook stops it even when tokcaliper exits on an error, and the kernel
kills it when tokcaliper is killed (:mod:`tokcaliper.servers.records`, which also
reports a server left running by an earlier tokcaliper).
"""

from __future__ import annotations

import atexit
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from tokcaliper.errors import InputError, ServerError
from tokcaliper.model import warnings as W
from tokcaliper.model.text import warning_line
from tokcaliper.numbers import seconds
from tokcaliper.servers import records

#: How often to poll ``/health`` while the server loads its model (s).
HEALTH_POLL_S = 0.2


def _print_warning(message: str) -> None:
    """One warning line on stderr (:func:`tokcaliper.model.text.warning_line`, the form
    :func:`tokcaliper.report.output.warn` prints too), by plain ``print``: it also runs at
    exit (``atexit``), when no console may be left, and servers/ sits below report/."""
    print(warning_line(message), file=sys.stderr, flush=True)


#: A ``{name}`` left after filling: a typo of a placeholder. JSON arguments
#: (``{"a": 1}``) do not match, since they are not a bare lowercase word.
_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def render_command(template: str | Sequence[str], **fields: object) -> list[str]:
    """Fill ``{name}`` placeholders and split into argv.

    Only the placeholders given in ``fields`` are replaced, so other braces
    (e.g. a JSON argument) pass through untouched.

    Raises:
        InputError: when the template is empty or cannot be split (bad quoting).
    """
    argv: list[str]
    if isinstance(template, str):
        try:
            argv = shlex.split(template)
        except ValueError as e:
            raise InputError(f"cannot parse --server-cmd {template!r}: {e}") from None
    else:
        argv = list(template)
    if not argv:
        raise InputError("--server-cmd is empty")
    out = []
    for arg in argv:
        for key, value in fields.items():
            arg = arg.replace("{" + key + "}", str(value))
        unknown = _PLACEHOLDER.findall(arg)
        if unknown:
            raise InputError(
                f"--server-cmd has unknown placeholder {unknown[0]}; known: "
                + ", ".join("{" + k + "}" for k in fields)
            )
        out.append(arg)
    return out


def check_reachable(base_url: str, timeout_s: float = 10.0) -> None:
    """Fail fast when nothing answers at ``base_url``.

    Tries ``/health`` (llama.cpp, vLLM, SGLang) and accepts any HTTP answer
    as "reachable"; only a connection failure or timeout is an error.

    Raises:
        ServerError: naming the URL and the connection error.
    """
    url = base_url.rstrip("/") + "/health"
    try:
        httpx.get(url, timeout=timeout_s)
    except httpx.HTTPError as e:
        reason = str(e) or type(e).__name__
        raise ServerError(f"cannot reach server at {base_url}: {reason}") from None


class ManagedServer:
    """Start a server from a command template, wait for ``/health``, stop it.

    Args:
        command: template string or argv; ``{port}`` and ``{host}`` are filled.
        host: loopback address the server binds (tokcaliper only targets
            loopback servers it starts).
        port: fixed port, or ``None`` for a free one.
        health_timeout_s: how long to wait for ``/health`` to return 200.
        log_path: where the server's stdout+stderr go (a temp file if ``None``).

    Raises (from :meth:`start`):
        ServerError: the command is not found, exits before becoming healthy
            (its exit code and last log line are in the message), or is not
            healthy within ``health_timeout_s``.
    """

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        health_timeout_s: float = 180.0,
        log_path: Path | None = None,
    ) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.argv = render_command(command, port=self.port, host=host)
        #: Whether the template names ``{port}`` (None: a fixed ``port`` was given).
        self.port_placeholder: bool | None = None if port else any(
            "{port}" in a for a in ([command] if isinstance(command, str) else command))
        self.health_timeout_s = health_timeout_s
        self._own_log = log_path is None
        if log_path is None:
            fd, name = tempfile.mkstemp(prefix="tokcaliper-server-", suffix=".log")
            os.close(fd)
            log_path = Path(name)
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        #: Why the last :meth:`stop` could not stop the process (one line), else ``None``.
        self.stop_problem: str | None = None

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the managed server."""
        return f"http://{self.host}:{self.port}"

    @property
    def command_line(self) -> str:
        """The exact command line that was (or will be) executed."""
        return shlex.join(self.argv)

    def start(self) -> str:
        """Launch the process and block until ``/health`` answers 200.

        Returns:
            The base URL.
        """
        records.report_strays(_print_warning)
        log = open(self.log_path, "wb")  # noqa: SIM115 - owned by the child
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=records.die_with_parent(os.getpid()),  # killed if tokcaliper is (kill -9)
            )
        except FileNotFoundError:
            raise ServerError(f"server command not found: {self.argv[0]}") from None
        except PermissionError:
            raise ServerError(f"server command not executable: {self.argv[0]}") from None
        finally:
            log.close()
        records.record(self.proc.pid, self.command_line, self.port, self.log_path)
        atexit.register(self.stop)
        self._wait_healthy()
        return self.base_url

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.health_timeout_s
        url = self.base_url + "/health"
        with httpx.Client(timeout=2.0) as client:
            while True:
                self.raise_if_dead()
                try:
                    if client.get(url).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass  # not listening yet
                if time.monotonic() > deadline:
                    # Read the log before stop(), which deletes a temporary log it stopped cleanly;
                    # keep it, since the message names it.
                    last = self.last_log_line()
                    self._own_log = False
                    self.stop()
                    hint = ""
                    if self.port_placeholder is False:
                        hint = (f"; the command has no {{port}} placeholder, so the server may listen "
                                f"elsewhere while tokcaliper polls port {self.port}")
                    raise ServerError(
                        f"server not healthy after {seconds(self.health_timeout_s)}: "
                        f"{self.command_line} (last log line: {last!r}; full log {self.log_path}){hint}"
                    )
                time.sleep(HEALTH_POLL_S)

    def raise_if_dead(self) -> None:
        """Raise :class:`ServerError` when the process has exited."""
        if self.proc is not None and self.proc.poll() is not None:
            raise ServerError(
                f"server exited with code {self.proc.returncode}: {self.argv[0]} "
                f"(last log line: {self.last_log_line()!r}; full log {self.log_path})"
            )

    def last_log_line(self) -> str:
        """The last non-empty line the server printed (for error messages)."""
        try:
            data = self.log_path.read_bytes()[-4096:]
        except OSError:
            return ""
        lines = [ln for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
        return lines[-1].strip() if lines else ""

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM the process group, then SIGKILL after ``grace_s``. Idempotent; never raises.

        It runs in cleanup paths (``finally``, ``atexit``, after Ctrl-C), where an
        exception would hide the real outcome behind a traceback. A process that
        is already gone is fine; any other failure (a second timeout after
        SIGKILL, a permission error, …) is printed as one line
        ``tokcaliper: warning: could not stop the server …`` on stderr and kept
        in :attr:`stop_problem`.

        A temporary log is deleted when the server was stopped cleanly; the log
        of a server that died, or could not be stopped, is kept, since messages
        name it.
        """
        try:
            proc = self.proc
            if proc is None:
                return
            if proc.poll() is not None:
                records.forget(proc.pid)
                return
            self._stop(proc, grace_s)
            records.forget(proc.pid)
            self.stop_problem = None
            if self._own_log:
                self.log_path.unlink(missing_ok=True)
        except Exception as e:  # noqa: BLE001 - cleanup must not raise (see docstring)
            pid = self.proc.pid if self.proc is not None else "?"
            reason = " ".join((str(e) or type(e).__name__).split())
            if str(e) and type(e).__name__ not in reason:
                reason = f"{type(e).__name__}: {reason}"
            self.stop_problem = W.SERVER_STOP_FAILED.text(pid=pid, error=reason, log=self.log_path)
            try:
                _print_warning(self.stop_problem)
            except Exception:  # noqa: BLE001 - stderr closed at exit
                pass

    @staticmethod
    def _stop(proc: subprocess.Popen[bytes], grace_s: float) -> None:
        """SIGTERM, wait, SIGKILL, wait. ProcessLookupError (already gone) is success.

        Raises:
            TimeoutError: still running ``grace_s`` after SIGKILL.
            OSError: e.g. PermissionError from ``os.killpg``.
        """
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=grace_s)
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                raise TimeoutError(f"still running {grace_s:g} s after SIGTERM and "
                                   f"{grace_s:g} s after SIGKILL") from None

    def __enter__(self) -> ManagedServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
