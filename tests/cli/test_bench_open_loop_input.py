"""Open-loop options are validated before any work: one line naming the culprit."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("args,needle", [
    (["--rate", "0"], "--rate must be > 0"),
    (["--rate", "nan"], "--rate must be > 0"),
    (["--rate", "5", "--arrival", "uniform"], "--arrival must be poisson, gamma or constant"),
    (["--rate", "5", "--arrival", "gamma", "--burstiness", "-1"], "--burstiness must be > 0"),
    (["--rate", "5", "--burstiness", "0.5"], "--burstiness needs --arrival gamma"),
    (["--arrival", "constant"], "--arrival needs --rate"),
])
def test_bad_open_loop_options(tmp_path, args, needle):
    db = tmp_path / "x.db"
    # An unroutable URL: validation must fail before anything is contacted or created.
    proc = subprocess.run([sys.executable, "-m", "tokcaliper", "bench", "--url", "http://127.0.0.1:9",
                           "--db", str(db), *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("tokcaliper: error:")]
    assert len(errors) == 1 and needle in errors[0], proc.stderr
    assert not db.exists()
