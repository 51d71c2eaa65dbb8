"""Command-line interface: parse arguments, call one function, render.

No logic lives here beyond wiring; every number comes from ``stats``,
``audit`` or the load generator, and is rendered by ``report``.
"""

from __future__ import annotations

import os
import sys

import click

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

    Turns every :class:`TokcaliperError` into one line on stderr and its exit
    code; any other exception also becomes one line (set
    ``TOKCALIPER_DEBUG=1`` for the traceback).
    """
    command = typer_command()
    try:
        rv = command.main(args=argv, prog_name="tokcaliper", standalone_mode=False)
    except TokcaliperError as e:
        print(f"tokcaliper: error: {e}", file=sys.stderr)
        return e.exit_code
    except click.exceptions.Abort:
        print("tokcaliper: interrupted", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("tokcaliper: interrupted", file=sys.stderr)
        return 130
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.ClickException as e:
        e.show()
        return e.exit_code
    except Exception as e:  # never a traceback for the user
        if os.environ.get("TOKCALIPER_DEBUG"):
            raise
        print(
            f"tokcaliper: internal error: {type(e).__name__}: {e} "
            "(set TOKCALIPER_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 1
    return rv if isinstance(rv, int) else 0


def typer_command() -> click.Command:
    """The click command behind the typer app (used by tests and ``main``)."""
    import typer.main

    return typer.main.get_command(app)


def _console_main() -> None:  # pragma: no cover - thin wrapper
    sys.exit(main())
