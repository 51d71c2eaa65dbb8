"""``python -m tokcaliper`` runs the CLI."""

from tokcaliper.cli import _console_main

_console_main()
