"""Shared fixtures for the stats tests: the published reference numbers."""

from __future__ import annotations

import pytest


def published_tol(published: float, decimals: int | None = None) -> float:
    """Half a unit of the last published decimal (0.932 → 0.0005)."""
    if decimals is None:
        text = repr(float(published))
        decimals = len(text.split(".")[1]) if "." in text and "e" not in text else 0
    return 0.5 * 10 ** (-decimals) + 1e-12


@pytest.fixture(scope="session")
def seed(seed_cases: dict) -> dict:
    """The reference numbers (see ``seed_cases`` in tests/conftest.py)."""
    return seed_cases


@pytest.fixture(scope="session")
def tol():
    """The :func:`published_tol` helper, as a fixture."""
    return published_tol
