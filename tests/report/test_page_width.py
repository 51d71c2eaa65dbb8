"""Piped text is one page of 100 columns (the project's 80–100), or COLUMNS when set."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PLAN = [sys.executable, "-m", "tokcaliper", "plan", "--cv", "0.05", "--effect", "0.03"]


@pytest.mark.parametrize(("columns", "width"), [(None, 100), ("90", 90)])
def test_piped_output_fits_the_page(columns, width):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    out = subprocess.run(PLAN, capture_output=True, text=True, env=env, timeout=60, check=True).stdout
    lines = out.splitlines()
    assert len(lines) > 10
    # The plan's sentences are longer than a page: the widest line is the page itself.
    assert width - 10 <= max(len(x) for x in lines) <= width
