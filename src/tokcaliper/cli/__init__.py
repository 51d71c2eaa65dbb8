"""Command-line interface: parse arguments, call one function, render.

No logic lives here beyond wiring; every number comes from ``stats``,
``audit`` or the load generator, and is rendered by ``report``.
"""

from __future__ import annotations

import os
import sys

from tokcaliper.cli._app import app
from tokcaliper.errors import TokcaliperError

# Command modules register themselves on import.
from tokcaliper.cli import bench as _bench  # noqa: F401,E402
from tokcaliper.cli import plan as _plan  # noqa: F401,E402
from tokcaliper.cli import runs as _runs  # noqa: F401,E402
from tokcaliper.cli import audit as _audit  # noqa: F401,E402


@app.command()
def version() -> None:
    """Print tokcaliper's version."""
    from tokcaliper import __version__

    print(__version__)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``tokcaliper`` console script.

    Usage errors are handled by typer itself (standalone mode). Every
    :class:`TokcaliperError` becomes one line on stderr and its exit code;
    any other exception also becomes one line (set ``TOKCALIPER_DEBUG=1`` for
    the traceback).
    """
    command = typer_command()
    try:
        command.main(args=argv, prog_name="tokcaliper", standalone_mode=True)
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except TokcaliperError as e:
        print(f"tokcaliper: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("tokcaliper: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # never a traceback for the user
        if os.environ.get("TOKCALIPER_DEBUG"):
            raise
        print(
            f"tokcaliper: internal error: {type(e).__name__}: {e} "
            "(set TOKCALIPER_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1
    return 0


def typer_command():
    """The click command behind the typer app (used by tests and ``main``)."""
    import typer.main

    return typer.main.get_command(app)


def _console_main() -> None:  # pragma: no cover - thin wrapper
    sys.exit(main())
