"""The typer application object; command modules attach themselves to it."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="tokcaliper",
    help=(
        "Trustworthy LLM-inference performance numbers: measure your own "
        "OpenAI-compatible server honestly, and audit the numbers others publish."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)

#: Shared option help texts, so every command words them the same way.
JSON_HELP = "Print the same figures as one JSON document on stdout."
DB_HELP = "SQLite results database."


@app.callback()
def _root() -> None:
    """Trustworthy LLM-inference performance numbers."""
