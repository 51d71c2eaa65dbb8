"""CLI: `tokcaliper runs` (placeholder; filled in by its owner)."""

from tokcaliper.cli._app import app  # noqa: F401
