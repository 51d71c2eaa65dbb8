"""The typer application object; command modules attach themselves to it."""

from __future__ import annotations

import typer

#: Help reads at 80 columns: click's own formatter (option, then its help wrapped beside
#: it, a long option's help on the next line). typer's rich panels give every option a
#: column for its type and one for its --no- form, and at 80 columns squeeze the help
#: into one word per line. ``-h`` is ``--help`` everywhere (inherited by subcommands).
HELP_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

app = typer.Typer(
    name="tokcaliper",
    help=(
        "Trustworthy LLM-inference performance numbers: measure your own "
        "OpenAI-compatible server honestly, and audit the numbers others publish."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings=HELP_SETTINGS,
)

#: Shared option help texts, so every command words them the same way.
JSON_HELP = "Print the same figures as one JSON document on stdout."
DB_HELP = "SQLite results database."
WIDE_HELP = "Tables with every column (default: fit 100 columns, columns with no figure left out)."


def _print_version(value: bool) -> None:
    if value:
        from tokcaliper import __version__

        print(f"tokcaliper {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", "-V", is_eager=True, callback=_print_version,
                                 help="Print tokcaliper's version and exit."),
) -> None:
    """Trustworthy LLM-inference performance numbers."""
