"""``tokcaliper version``: the installed version as a result."""

from __future__ import annotations

from pydantic import BaseModel

__all__ = ["VersionInfo", "version_info"]


class VersionInfo(BaseModel):
    """The installed tokcaliper's version (PEP 440 string, e.g. ``"0.1.0"``)."""

    version: str


def version_info() -> VersionInfo:
    """This tokcaliper's :class:`VersionInfo` (``tokcaliper.__version__``)."""
    from tokcaliper import __version__

    return VersionInfo(version=__version__)
