"""Shared fixtures for the stats tests: the published reference numbers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

_REPO = Path(__file__).resolve().parents[2]
#: Where the reference file may live: env override, then the project's
#: ``shared/`` folder beside the checkout (as laid out for developers and CI).
SEED_CANDIDATES = [
    os.environ.get("TOKCALIPER_SEED_CASES", ""),
    str(_REPO.parent / "shared" / "reference" / "seed_cases.json"),
    str(_REPO / "shared" / "reference" / "seed_cases.json"),
]


def load_seed_cases() -> dict:
    """Read seed_cases.json (never copied into the tests); fail loudly when absent."""
    for c in SEED_CANDIDATES:
        if c and Path(c).is_file():
            return json.loads(Path(c).read_text(encoding="utf-8"))
    pytest.fail("seed_cases.json not found; expected in ../shared/reference/ beside the checkout, or set TOKCALIPER_SEED_CASES")


def published_tol(published: float, decimals: int | None = None) -> float:
    """Half a unit of the last published decimal (0.932 → 0.0005)."""
    if decimals is None:
        text = repr(float(published))
        decimals = len(text.split(".")[1]) if "." in text and "e" not in text else 0
    return 0.5 * 10 ** (-decimals) + 1e-12


@pytest.fixture(scope="session")
def seed() -> dict:
    return load_seed_cases()


@pytest.fixture(scope="session")
def tol():
    """The :func:`published_tol` helper, as a fixture."""
    return published_tol
