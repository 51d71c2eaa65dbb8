"""The one warning sink (issue 19): stderr in text mode, inside the JSON with --json."""

from __future__ import annotations

import json

from pydantic import BaseModel

from tokcaliper.model import warnings as W
from tokcaliper.model.warnings import Caveat
from tokcaliper.report.output import emit, warn


class _Result(BaseModel):
    value: float
    warnings: list[Caveat] = []


def test_text_mode_prints_the_result_on_stdout_and_each_caveat_once_on_stderr(capsys):
    few = W.FEW_REPETITIONS.caveat(min_n=5, n=3)
    extra = W.NO_GPU.caveat(reason="no driver")
    emit(_Result(value=1.5, warnings=[few]), False, lambda c: c.print("value 1.5"), warnings=[few, extra])
    out, err = capsys.readouterr()
    assert out.strip() == "value 1.5"
    assert err.splitlines() == [
        "tokcaliper: warning: fewer than 5 repetitions (n=3): CV itself is uncertain (see its 95% CI)",
        "tokcaliper: warning: no NVIDIA GPU: no driver",
    ]


def test_json_mode_keeps_the_caveats_in_the_document_and_prints_nothing_else(capsys):
    emit({"value": 2}, True, lambda c: c.print("never"), warnings=[W.NO_GPU.caveat(reason="x")])
    out, err = capsys.readouterr()
    assert err == ""
    assert json.loads(out) == {"value": 2, "warnings": [{"code": "no-gpu", "message": "no NVIDIA GPU: x"}]}


def test_a_message_with_markup_is_printed_as_written(capsys):
    warn("[red]not a style[/red] from a record")
    assert capsys.readouterr().err == "tokcaliper: warning: [red]not a style[/red] from a record\n"
