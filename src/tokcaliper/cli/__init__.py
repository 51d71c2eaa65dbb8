"""Command-line interface: parse arguments, call one function, render.

No logic lives here beyond wiring; every number comes from ``stats``,
``audit`` or the load generator, and is rendered by ``report``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer

from tokcaliper.cli._app import JSON_HELP, app
from tokcaliper.errors import EXIT_BROKEN_PIPE, EXIT_INTERNAL, Interrupted, TokcaliperError

# Command modules register themselves on import.
from tokcaliper.cli import bench as _bench  # noqa: F401,E402
from tokcaliper.cli import plan as _plan  # noqa: F401,E402
from tokcaliper.cli import runs as _runs  # noqa: F401,E402
from tokcaliper.cli import audit as _audit  # noqa: F401,E402
from tokcaliper.cli import import_cmd as _import  # noqa: F401,E402
from tokcaliper.cli import metrics as _metrics  # noqa: F401,E402
from tokcaliper.cli import compare as _compare  # noqa: F401,E402
from tokcaliper.cli import experiment as _experiment  # noqa: F401,E402
from tokcaliper.cli import analyze as _analyze  # noqa: F401,E402
from tokcaliper.cli import specdec as _specdec  # noqa: F401,E402
from tokcaliper.cli import capacity as _capacity  # noqa: F401,E402
from tokcaliper.cli import export as _export  # noqa: F401,E402
from tokcaliper.cli import baseline as _baseline  # noqa: F401,E402
from tokcaliper.cli import report as _report  # noqa: F401,E402
from tokcaliper.cli import doctor as _doctor  # noqa: F401,E402


@app.command()
def version(
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Print tokcaliper's version."""
    from tokcaliper.model.version import version_info
    from tokcaliper.report.output import emit
    from tokcaliper.report.version_view import render_version

    info = version_info()
    emit(info, json_out, lambda console: render_version(console, info))


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tokcaliper`` console script.

    Every :class:`TokcaliperError` and every usage error becomes one line on
    stderr (``tokcaliper: error: …``) and its exit code; any other exception
    also becomes one line (set ``TOKCALIPER_DEBUG=1`` for the traceback).
    """
    previous = _stop_on_signals()
    try:
        with _no_python_warnings():
            return _main(argv)
    finally:
        _restore_signals(previous)


def _main(argv: list[str] | None) -> int:
    command = typer_command()
    sys.unraisablehook = _quiet_interrupts(sys.unraisablehook)
    try:
        rv = command.main(args=argv, prog_name="tokcaliper", standalone_mode=False)
    except SystemExit:
        # click turns a write to a closed stdout (EPIPE) into SystemExit(1) after wrapping
        # sys.stdout in its PacifyFlushWrapper: that 1 is not a bug.
        if _pacified(sys.stdout):
            return _broken_pipe()
        raise
    except typer.Exit as e:  # --help, --version-like early exits
        return e.exit_code
    except (typer.Abort, KeyboardInterrupt) as e:
        return _interrupted(e)
    except Interrupted as e:
        return _interrupted(e)
    except TokcaliperError as e:
        print(f"tokcaliper: error: {_one_line(str(e))}", file=sys.stderr)
        return e.exit_code
    except typer.exceptions.TyperException as e:  # usage errors: one line too
        if type(e).__name__ == "NoArgsIsHelpError":
            print(e.format_message(), file=sys.stderr)
            return 2
        print(f"tokcaliper: error: {_one_line(e.format_message())} (see --help)", file=sys.stderr)
        return int(getattr(e, "exit_code", 2))
    except BrokenPipeError:
        return _broken_pipe()
    except Exception as e:  # never a traceback for the user
        if os.environ.get("TOKCALIPER_DEBUG"):
            raise
        print(
            f"tokcaliper: internal error: {type(e).__name__}: {_one_line(str(e))} "
            "(set TOKCALIPER_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    # Non-standalone click returns typer.Exit codes; it turns Ctrl-C into 130.
    if rv == 130:
        return _interrupted(KeyboardInterrupt())
    return rv if isinstance(rv, int) else 0


def _pacified(stream: object) -> bool:
    """Is ``stream`` click's wrapper put around stdout/stderr after a write to a closed pipe?"""
    return type(stream).__name__ in ("PacifyFlushWrapper", "_PacifyFlushWrapper")


def _broken_pipe() -> int:
    """stdout's reader went away: point stdout at /dev/null (so that the flush at exit
    cannot fail again with "Exception ignored … BrokenPipeError") and return
    :data:`EXIT_BROKEN_PIPE`, printing nothing (the Python docs' note on SIGPIPE)."""
    for name in ("stdout", "stderr"):  # undo click's wrappers (see _main)
        stream = getattr(sys, name)
        if _pacified(stream):
            setattr(sys, name, stream.wrapped)
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout already closed or not a file
        pass
    return EXIT_BROKEN_PIPE


#: Signals that stop tokcaliper like Ctrl-C (a CI cancel, ``timeout``, a closed terminal).
STOP_SIGNALS = ("SIGTERM", "SIGHUP")
#: The stop signal received in this process, if any (sets the exit code, 128 + signum).
_received: list[int] = []


def _on_stop_signal(signum: int, frame: object) -> None:
    """Stop on SIGTERM/SIGHUP as on Ctrl-C: call whatever handles Ctrl-C at that moment
    (asyncio's runner cancelling the load, or Python's KeyboardInterrupt), so that the
    same clean-up runs: stop the run, the managed server and the samplers, keep what is
    stored. A second stop signal is ignored so it cannot cut the clean-up short.

    The Ctrl-C handler is called directly, not through ``raise_signal(SIGINT)``: a
    process started with SIGINT ignored (``cmd &`` in a non-interactive shell) has no
    Python SIGINT handler, so a re-raised SIGINT did nothing and SIGTERM was lost
    (issue 22 item 1). Then the running load phase is cancelled the way asyncio does
    it (:func:`tokcaliper.load.driver.interrupt_phase`), or KeyboardInterrupt is raised
    here; SIGINT itself stays ignored.
    """
    _received.append(signum)
    for name in STOP_SIGNALS:
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)
        return
    # SIG_IGN or SIG_DFL inherited: no asyncio handler either. Cancel a running load
    # phase as asyncio would (it then raises KeyboardInterrupt), else raise it here.
    from tokcaliper.load.driver import interrupt_phase

    if not interrupt_phase():
        signal.default_int_handler(signal.SIGINT, frame)


def _stop_on_signals() -> dict[int, object]:
    """Install :func:`_on_stop_signal` for SIGTERM and SIGHUP (main thread only); return the old handlers."""
    old: dict[int, object] = {}
    if threading.current_thread() is not threading.main_thread():
        return old
    for name in STOP_SIGNALS:
        sig = getattr(signal, name, None)
        if sig is not None:
            old[sig] = signal.signal(sig, _on_stop_signal)
    return old


def _restore_signals(old: dict[int, object]) -> None:
    for sig, handler in old.items():
        signal.signal(sig, handler)  # type: ignore[arg-type]
    _received.clear()


def _interrupted(e: BaseException) -> int:
    """Print the one interruption line (with what was stored, from :class:`Interrupted`);
    return the exit code: 130 for Ctrl-C, 128 + signum for SIGTERM (143) and SIGHUP (129)."""
    note = str(e) if isinstance(e, Interrupted) else ""
    signum = _received[0] if _received else None
    what = "interrupted" if signum is None else f"interrupted by {signal.Signals(signum).name}"
    print(f"tokcaliper: {what}" + (f"; {_one_line(note)}" if note else ""), file=sys.stderr)
    return 130 if signum is None else 128 + signum


@contextmanager
def _no_python_warnings() -> Iterator[None]:
    """No Python warning reaches the user (TOKCALIPER_DEBUG=1 shows them all).

    tokcaliper says every caveat of its own in its output, in words; it never uses
    :mod:`warnings`. What arrives there comes from libraries (scipy's
    ConstantInputWarning, numpy's "invalid value encountered"), printed with an
    absolute source path and a line of code — attributed to *tokcaliper's* file
    when the library warns with ``stacklevel=2``, so filtering by module never
    caught them all — about a figure already reported as undefined ("—"). So they
    are dropped at the one place every warning passes, ``showwarning``, whatever
    filters a library adds when imported later (statsmodels re-adds "always" for
    its ConvergenceWarning). The previous filters and ``showwarning`` come back on
    return (in-process callers, tests).
    """
    if os.environ.get("TOKCALIPER_DEBUG"):
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.showwarning = _drop_warning
        yield


def _drop_warning(*_args: object, **_kwargs: object) -> None:
    """A ``warnings.showwarning`` that shows nothing (see :func:`_no_python_warnings`)."""


def _quiet_interrupts(previous):  # type: ignore[no-untyped-def]
    """An unraisable-exception hook that drops KeyboardInterrupt.

    Ctrl-C can land inside a finalizer (an event loop's ``__del__``), where
    Python prints it as "Exception ignored … Traceback"; the interrupt itself
    is still handled (exit 130), so that traceback is only noise.
    """

    def hook(unraisable) -> None:  # type: ignore[no-untyped-def]
        if not issubclass(unraisable.exc_type, KeyboardInterrupt):
            previous(unraisable)

    return hook


def _one_line(text: str) -> str:
    """``text`` on one line, control characters shown as escapes (never sent to the terminal)."""
    from tokcaliper.report.text import plain

    return " ".join(plain(text).split())


def typer_command():
    """The click command behind the typer app (used by tests and ``main``)."""
    import typer.main

    return typer.main.get_command(app)


def _console_main() -> None:  # pragma: no cover - thin wrapper
    sys.exit(main())
