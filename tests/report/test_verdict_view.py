"""The shared verdict renderer and the named warnings."""

import json
import math

from rich.console import Console

from tokcaliper.model import warnings as W
from tokcaliper.model.verdict import Status, Verdict
from tokcaliper.report.verdict_view import (
    print_verdict,
    status_markup,
    verdict_dict,
    verdict_lines,
    verdict_markup,
)
from tokcaliper.stats.noise import noise_floor

V = Verdict(check="M3", title="resolution of the ruler", status=Status.FAIL,
            summary="don't run: [red] is below the MDE",
            arithmetic=["MDE = 2 × 0.15 × √(2/5) = 0.190 (19.0%)", "n = 72"],
            inputs={"cv": 0.15, "bad": math.nan}, sources=["METHODS.md M3", "statsmodels"])


def test_lines_and_dict():
    assert verdict_lines(V) == [
        "[fail] M3 resolution of the ruler: don't run: [red] is below the MDE",
        "  MDE = 2 × 0.15 × √(2/5) = 0.190 (19.0%)", "  n = 72",
        "sources: METHODS.md M3; statsmodels"]
    assert verdict_lines(V, arithmetic=False, sources=False) == [verdict_lines(V)[0]]
    d = verdict_dict(V)
    assert d["status"] == "fail" and d["inputs"] == {"cv": 0.15, "bad": None}
    assert json.loads(json.dumps(d)) == d


def test_markup_escapes_and_prints():
    assert status_markup(Status.WARN) == "[yellow]warn[/]"
    assert verdict_markup(V).splitlines()[0] == r"don't run: \[red] is below the MDE"
    con = Console(record=True, width=200)
    print_verdict(con, V)
    out = con.export_text()
    assert "verdict (fail): don't run: [red] is below the MDE" in out
    assert "  n = 72" in out and "sources: METHODS.md M3; statsmodels" in out


def test_warnings_are_named_and_used():
    assert set(W.ALL) == {w.code for w in W.ALL.values()} and len(W.ALL) >= 10
    assert W.FEW_REPETITIONS.fields == ("min_n", "n")
    rep = noise_floor({"x": [1.0, 2.0, 3.0], "y": [4.0], "z": [2.0, 2.0]})
    assert W.FEW_REPETITIONS.text(min_n=5, n=3) in rep.warnings
    assert W.SINGLE_REPETITION.text(metric="y") in rep.warnings
    assert W.IDENTICAL_RUNS.text(metric="z", n=2) in rep.warnings
