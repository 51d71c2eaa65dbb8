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


def test_a_stored_sentence_gets_the_code_of_the_template_it_came_from():
    # Every template with words of its own is told apart from every other, whatever fills it.
    for w in W.ALL.values():
        if w.template.strip("{}") in w.fields:
            continue  # "{note}" alone: a catch-all, never inferred
        text = w.text(**{f: f"<{f} 7.5 %>" for f in w.fields})
        assert W.named(text) is w, (w.code, text)
    assert W.named("a sentence no version of tokcaliper wrote") is None
    assert W.caveat_of("odd", "run 2: ") == Caveat(code="stored-run-note", message="run 2: odd")


def test_bench_prints_each_runs_caveats_and_the_noise_floors_through_the_sink(tmp_path, capsys):
    from tests.experiment.bench_runs import _run
    from tokcaliper.audit.run_roofline import arm_rooflines
    from tokcaliper.experiment.bench_result import bench_result
    from tokcaliper.model.run import ClientHealth
    from tokcaliper.report.bench_view import render_bench

    runs = [_run("A", i, v) for i, v in enumerate([100.0, 110.0, 90.0])]
    late = W.HOST_DISPATCH_LATE.text(delay_ms="6.63", bound_ms="5.00", lag_ms="1.88", share_pct="1.86 %")
    runs[1].metrics.client = ClientHealth(host_limits=[late])
    runs[2].metrics.stream_warnings = [W.TEXT_AT_ONE_INSTANT.text(k=1, n=2)]
    res = bench_result(runs, db=tmp_path / "x.db", roofline_of=arm_rooflines, idle_power_w=None)
    # The runs' own first, in run order, then the noise floor's (these fake runs share one TTFT).
    assert [(c.code, c.message[:7]) for c in res.warnings][:3] == [
        ("host-dispatch-late", "run 2: "), ("text-at-one-instant", "run 3: "), ("few-repetitions", "fewer t")]
    assert {c.code for c in res.warnings[3:]} == {"identical-runs"}
    emit(res, False, lambda c: render_bench(c, res))
    out, err = capsys.readouterr()
    assert "warning" not in out and "requests left" not in out and "fewer than 5" not in out
    assert err.splitlines() == ["tokcaliper: warning: " + c.message for c in res.warnings]
