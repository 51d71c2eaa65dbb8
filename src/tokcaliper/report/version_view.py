"""Terminal view of ``tokcaliper version``."""

from __future__ import annotations

from rich.console import Console

from tokcaliper.model.version import VersionInfo

__all__ = ["render_version"]


def render_version(console: Console, info: VersionInfo) -> None:
    """The version string alone on its line (what scripts have always read)."""
    console.print(info.version, markup=False, highlight=False)
