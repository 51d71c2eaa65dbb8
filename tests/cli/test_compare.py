"""`tokcaliper compare`: runs, CSV, summaries, single numbers; text, JSON and one-line errors."""

import json

import pytest

from tokcaliper.cli import main

A = "754.3,770.0,639.3,567.7,759.6"
B = "630.1,572.6,710.8,595.3,746.0"


def _flat(text: str) -> str:
    return " ".join(text.split())


def _run(capsys, args):
    rc = main(["compare", *args])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def test_samples_text_and_json_agree(capsys):
    args = ["--a", A, "--b", B, "--paired", "--names", "200W,180W", "--unit", "tok/s"]
    rc, out, err = _run(capsys, args + ["--verbose"])
    assert rc == 0 and err == ""
    text = _flat(out)
    assert "Welch's t = 0.90, df = 7.7, p = 0.394" in text
    assert "pair ratios in run order: 0.835 0.744 1.112 1.049 0.982" in text
    assert "2: slower by 21.2% → inconclusive" in text
    assert "verdict: inconclusive" in text and "no difference" not in text
    assert "12.9%" in text and "11.5%" in text
    rc, out, _ = _run(capsys, args + ["--json"])
    data = json.loads(out)
    assert rc == 0 and data["verdict"] == "inconclusive" and data["decided_by"] == "paired"
    assert data["welch"]["t"] == pytest.approx(0.90, abs=0.01)
    assert [round(r, 3) for r in data["paired"]["ratios"]] == [0.835, 0.744, 1.112, 1.049, 0.982]
    assert _flat(data["report"]["summary"]) in text
    assert f"±{100 * data['mde']:.1f}%" in text
    assert len(data["running"]) == 5


def test_clear_latency_improvement_is_faster(capsys):
    rc, out, _ = _run(capsys, ["--a", "30.1,30.3,29.9,30.0,30.2", "--b", "27.1,27.0,27.2,26.9,27.1",
                               "--metric", "ttft_p50_ms", "--json"])
    data = json.loads(out)
    assert rc == 0 and data["verdict"] == "faster" and data["higher_is_better"] is False
    rc, out, _ = _run(capsys, ["--a", "30.1,30.3,29.9,30.0,30.2", "--b", "27.1,27.0,27.2,26.9,27.1",
                               "--json"])
    assert json.loads(out)["verdict"] == "slower"  # as throughput, lower is worse


def test_csv_paired_and_several_metrics(tmp_path, capsys):
    rows = ["arm,value,pair,position,metric"]
    a, b = A.split(","), B.split(",")
    for k in range(5):
        rows += [f"200W,{a[k]},{k},{2 * k},aggregate_output_tok_s",
                 f"180W,{b[k]},{k},{2 * k + 1},aggregate_output_tok_s",
                 f"200W,{30 + 0.1 * k},{k},{2 * k},ttft_p50_ms",
                 f"180W,{33 + 0.1 * (k % 2)},{k},{2 * k + 1},ttft_p50_ms"]
    p = tmp_path / "runs.csv"
    p.write_text("\n".join(rows) + "\n", encoding="utf-8")
    rc, out, _ = _run(capsys, ["--csv", str(p), "--json"])
    data = json.loads(out)
    assert rc == 0 and data["holm"] is True
    thr, ttft = data["metrics"]
    assert thr["decided_by"] == "paired" and thr["verdict"] == "inconclusive"
    assert ttft["verdict"] == "slower" and ttft["holm_m"] == 2
    assert ttft["p_used"] >= ttft["p_raw"]
    rc, out, _ = _run(capsys, ["--csv", str(p)])
    assert rc == 0 and "Holm's correction applied over 2 metrics" in _flat(out)


def test_csv_single_metric(tmp_path, capsys):
    p = tmp_path / "r.csv"
    p.write_text("arm,value\n" + "".join(f"x,{v}\n" for v in A.split(","))
                 + "".join(f"y,{v}\n" for v in B.split(",")), encoding="utf-8")
    rc, out, _ = _run(capsys, ["--csv", str(p), "--json"])
    data = json.loads(out)
    assert rc == 0 and data["decided_by"] == "welch" and data["a"]["name"] == "x"


def test_summary_stats(capsys):
    rc, out, _ = _run(capsys, ["--a-stats", "453.2,6.9,4", "--b-stats", "500.3,50.2,4",
                               "--names", "64,128", "--json"])
    data = json.loads(out)
    assert rc == 0 and data["input_kind"] == "summary"
    assert data["welch"]["t"] == pytest.approx(-1.84, abs=0.03)
    assert data["stably_slow"] == "64" and data["verdict"] == "inconclusive"
    rc, out, _ = _run(capsys, ["--a-stats", "453.2,6.9,4", "--b-stats", "500.3,50.2,4",
                               "--names", "64,128"])
    assert "64 is stably slow" in _flat(out)


def test_single_numbers(capsys):
    rc, out, _ = _run(capsys, ["--a-single", "500", "--b-single", "560", "--cv", "0.15", "--json"])
    data = json.loads(out)
    assert rc == 0 and data["verdict"] is None
    assert data["mde_1"] == pytest.approx(0.4243, abs=1e-4) and data["cv"] == 0.15
    rc, out, _ = _run(capsys, ["--a-single", "500", "--b-single", "560", "--cv", "0.15"])
    text = _flat(out)
    assert "no verdict" in text and "42%" in text and "verdict:" not in text
    rc, out, _ = _run(capsys, ["--a-single", "500", "--b-single", "560"])
    assert rc == 0 and "CV is unknown" in _flat(out)


def test_user_text_is_printed_literally(capsys):
    """Arm names and the unit are shown as given: no rich markup, no :emoji: codes."""
    names, unit = "[bold]x:fire:,y[/red]", "[red]tok/s"
    rc, out, _ = _run(capsys, ["--a", A, "--b", B, "--paired", "--names", names, "--unit", unit,
                               "--margin", "0.05", "--verbose"])
    text = _flat(out)
    assert rc == 0 and "🔥" not in out
    assert "y[/red] against [bold]x:fire: (baseline)" in text
    assert "mean ([red]tok/s)" in text and "│ [bold]x:fire: │ 5 │" in text
    assert "[bold]x:fire:: n = 5, mean 698.2 [red]tok/s, sd 90.2, CV 12.9%" in text
    assert "ratio of means y[/red]/[bold]x:fire: = 0.932 (95% CI 0.780 … 1.115)" in text
    rc, out, _ = _run(capsys, ["--a-single", "500", "--b-single", "560", "--names", "a:fire:,[b]"])
    assert rc == 0 and "ratio [b]/a:fire: = 560 / 500 = 1.120 (+12.0%)" in _flat(out)


@pytest.mark.parametrize("args,msg", [
    ([], "give exactly one input"),
    (["--a", A], "--a and --b go together"),
    (["--a", A, "--b", B, "--a-single", "3"], "give exactly one input"),
    (["--a", "1,x", "--b", B], "--a value 2: 'x' is not a number"),
    (["--a", "700", "--b", B], "at least 2 runs per arm"),
    (["--a", A, "--b", "1,2", "--paired"], "equal run counts"),
    (["--a-stats", "1,2", "--b-stats", "1,2,3"], "--a-stats must be mean,sd,n"),
    (["--a-single", "-1", "--b-single", "2"], "A must be a positive number"),
    (["--a-single", "1", "--b-single", "2", "--cv", "0"], "--cv must be > 0"),
    (["--a", A, "--b", B, "--cv", "0.1"], "--cv is for --a-single"),
    (["--a", A, "--b", B, "--metric", "speed"], "unknown metric 'speed'"),
    (["--a", A, "--b", B, "--better", "up"], "--better must be higher or lower"),
    (["--a", A, "--b", B, "--margin", "2"], "--margin must be a fraction"),
    (["--a", A, "--b", B, "--noise-band", "-0.1"], "--noise-band must be"),
    (["--a", A, "--b", B, "--alpha", "0.7"], "--alpha must be between 0 and 0.5"),
    (["--csv", "/nonexistent/x.csv"], "--csv /nonexistent/x.csv: cannot read (no such file or directory)"),
    (["--a", A, "--b", B, "--names", "A"], "--names must be two different names"),
    (["--a", A, "--b", B, "--control", "C"], "--control 'C' is not an arm of the comparison (arms: A, B)"),
    (["--a-stats", "1,2,3", "--b-stats", "1,2,3", "--control", "A"], "--control is for --csv and --a/--b"),
    (["--a", A, "--b", B, "--noise-abs", "nan"], "--noise-abs must be a number ≥ 0"),
    (["--a", "0,1,2", "--b", B], "compare on the difference scale with --noise-abs X"),
])
def test_bad_input_one_line_exit_2(capsys, args, msg):
    rc, out, err = _run(capsys, args)
    assert rc == 2, err
    assert out == ""
    assert err.startswith("tokcaliper: error: ") and err.endswith("\n") and err.count("\n") == 1
    assert msg in err, err


# ---------------------------------------------------------------- the reference arm (issue 17 item 6)

B_FIRST = "arm,value\nB,105\nA,100\nB,106\nA,101\nB,104.5\nA,99.5\n"


def test_control_defaults_to_the_arm_named_a_even_when_b_comes_first(tmp_path, capsys):
    """A CSV whose first row is arm B compared A against B ("A against B (baseline)")."""
    p = tmp_path / "b_first.csv"
    p.write_text(B_FIRST, encoding="utf-8")
    rc, out, err = _run(capsys, ["--csv", str(p)])
    assert rc == 0, err
    out = _flat(out)
    assert "B against A (baseline)" in out
    assert "control (reference, the ratio's denominator): A — the arm named 'A'; ratios are B/A" in out
    assert "faster by 5.0%" in out
    rc, out, _ = _run(capsys, ["--csv", str(p), "--json"])
    data = json.loads(out)
    assert (data["a"]["name"], data["b"]["name"]) == ("A", "B")
    assert data["control_reason"] == "the arm named 'A'"
    assert data["ratio_of_means"] > 1


def test_control_option_and_fallback_to_the_first_arm(tmp_path, capsys):
    p = tmp_path / "b_first.csv"
    p.write_text(B_FIRST, encoding="utf-8")
    rc, out, _ = _run(capsys, ["--csv", str(p), "--control", "B"])
    assert rc == 0 and "A against B (baseline)" in _flat(out) and "— --control B;" in _flat(out)
    q = tmp_path / "named.csv"
    q.write_text(B_FIRST.replace("A,", "fast,").replace("B,", "slow,"), encoding="utf-8")
    rc, out, _ = _run(capsys, ["--csv", str(q)])
    assert rc == 0 and "the first arm in the file (no arm is named A, baseline or control" in _flat(out)
    r = tmp_path / "ctl.csv"
    r.write_text(B_FIRST.replace("A,", "control,"), encoding="utf-8")
    rc, out, _ = _run(capsys, ["--csv", str(r)])
    assert rc == 0 and "B against control (baseline)" in _flat(out)
    rc, out, err = _run(capsys, ["--csv", str(p), "--control", "C"])
    assert rc == 2 and err == "tokcaliper: error: --control 'C' is not an arm of the comparison (arms: B, A)\n"


def test_control_swaps_a_and_b_runs(capsys):
    rc, out, _ = _run(capsys, ["--a", "100,101,99.5", "--b", "105,106,104.5", "--control", "B", "--json"])
    data = json.loads(out)
    assert rc == 0 and data["a"]["name"] == "B" and data["ratio_of_means"] < 1
    rc, out, _ = _run(capsys, ["--a", A, "--b", B])
    assert "control (reference, the ratio's denominator): A — given as --a" in _flat(out)
