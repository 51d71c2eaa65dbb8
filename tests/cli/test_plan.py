"""`tokcaliper plan`: text, JSON, errors and the --from-runs path (METHODS.md M3)."""

import json
import re
import sys
import types

import pytest

from tokcaliper.cli import main

ARGS = ["plan", "--cv", "0.15", "--effect", "0.05", "--n", "5", "--run-seconds", "60"]


def _flat(text: str) -> str:
    return " ".join(text.split())  # undo rich's line wrapping


def test_text_output(capsys):
    assert main(ARGS) == 0
    out, err = capsys.readouterr()
    out = _flat(out)
    assert "2·CV·√(2/n)" in out and "8·(CV/Δ)²" in out
    assert "19.0%" in out and "72" in out and "143" in out
    assert "2.4 h" in out and "4.8 h" in out
    assert "only about 50% power" not in out  # a caveat: on stderr, through the warning sink
    assert "tokcaliper: warning: the quick formulas have only about 50% power (here " in err
    assert "tokcaliper: warning: all formulas assume independent runs" in err
    assert ("don't run: a 5% effect is below what 5 runs per arm can call at CV 15% "
            "(noise band 1% + MDE 19.0% = 20.0%); a verdict needs 234 runs per arm") in out
    assert "2 × 0.15 × √(2/5) = 0.190 (19.0%)" in out  # arithmetic shown


def test_json_has_the_same_figures_as_text(capsys):
    assert main(ARGS) == 0
    text = _flat(capsys.readouterr().out)
    assert main(ARGS + ["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["n_quick"] == 72 and data["n_power"] == 143
    assert data["mde_quick_n"] == pytest.approx(0.18974, abs=1e-5)
    assert data["budget_seconds_power"] == 2 * 143 * 60
    assert data["verdict"]["status"] == "fail"
    for figure in (f"{100 * data['mde_quick_n']:.1f}%", f"{100 * data['mde_power_n']:.1f}%",
                   f"{100 * data['mde_quick_1']:.1f}%", f"{data['n_quick']}", f"{data['n_power']}",
                   f"{data['budget_seconds_power']:,.0f} s", f"{100 * data['power_of_quick']:.0f}%"):
        assert figure in text, figure
    assert _flat(data["verdict"]["summary"]) in text
    assert any("50% power" in w["message"] for w in data["warnings"])
    assert data["n_quick_gated"] == 113  # ⌈8·(0.15/(0.05 − 0.01))²⌉ = ⌈112.5⌉, the table's verdict row
    assert re.search(r"CI beyond ±1%\)\W+113\W+234\b", text), text  # quick, power-based


def test_negative_cv_is_one_line_error(capsys):
    rc = main(["plan", "--cv", "-1", "--effect", "0.05"])
    cap = capsys.readouterr()
    assert rc != 0
    assert cap.out == ""
    assert cap.err == "tokcaliper: error: --cv must be > 0, got -1\n"


@pytest.mark.parametrize(
    "extra,msg",
    [
        (["--cv", "0.1", "--effect", "0"], "--effect must be > 0"),
        (["--cv", "0.1", "--effect", "0.05", "--alpha", "1.5"], "--alpha must be between 0 and 1"),
        (["--cv", "0.1", "--effect", "0.05", "--power", "1"], "--power must be between 0 and 1"),
        (["--cv", "0.1", "--effect", "0.05", "--n", "0"], "--n must be an integer between 1 and"),
        (["--effect", "0.05"], "give exactly one of --cv or --from-runs"),
        (["--cv", "0.1", "--effect", "0.05", "--from-runs", "1,2"], "give exactly one of --cv or --from-runs"),
        (["--effect", "0.05", "--from-runs", "1,2"], "--from-runs needs --metric"),
        (["--effect", "0.05", "--from-runs", "a,b", "--metric", "m"], "--from-runs must list run ids like 3,4,5"),
        (["--cv", "0.1", "--effect", "0.05", "--design", "blocked"], "--design must be paired or independent"),
    ],
)
def test_other_errors(capsys, extra, msg):
    rc = main(["plan", *extra])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith(f"tokcaliper: error: {msg}") and err.count("\n") == 1


def _fake_store(monkeypatch, values):
    calls = []
    mod = types.ModuleType("tokcaliper.store")

    def load_metric_values(db_path, run_ids, metric):
        calls.append((db_path, list(run_ids), metric))
        return values

    mod.load_metric_values = load_metric_values
    monkeypatch.setitem(sys.modules, "tokcaliper.store", mod)
    return calls


def test_from_runs_takes_cv_from_the_store(monkeypatch, capsys, tmp_path):
    runs = [754.3, 770.0, 639.3, 567.7, 759.6]
    calls = _fake_store(monkeypatch, runs)
    db = tmp_path / "r.db"
    rc = main(["plan", "--from-runs", "3,4,5,6,7", "--metric", "aggregate output throughput",
               "--effect", "0.05", "--db", str(db), "--json"])
    assert rc == 0
    data = json.loads(capsys.readouterr().out)
    assert calls == [(db, [3, 4, 5, 6, 7], "aggregate output throughput")]
    from tokcaliper.stats.describe import describe

    cv = describe(runs).cv
    assert data["cv"] == pytest.approx(cv)
    assert data["n_quick"] == int(-(-8 * (cv / 0.05) ** 2 // 1))
    assert "runs 3,4,5,6,7" in data["cv_source"] and "n=5" in data["cv_source"]


def test_from_runs_with_few_runs_warns_and_single_run_errors(monkeypatch, capsys):
    _fake_store(monkeypatch, [100.0, 110.0, 95.0])
    assert main(["plan", "--from-runs", "1,2,3", "--metric", "m", "--effect", "0.1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [w["code"] for w in data["warnings"] if "only 3 runs" in w["message"]] == ["cv-from-few-runs"]
    _fake_store(monkeypatch, [100.0])
    assert main(["plan", "--from-runs", "1", "--metric", "m", "--effect", "0.1"]) == 2
    assert "n=1" in capsys.readouterr().err


def test_from_runs_with_the_real_store_reports_a_missing_db(capsys, tmp_path):
    rc = main(["plan", "--from-runs", "1,2", "--metric", "m", "--effect", "0.05",
               "--db", str(tmp_path / "missing.db")])
    err = capsys.readouterr().err
    assert rc != 0 and err.startswith("tokcaliper: error: ") and err.count("\n") == 1


@pytest.mark.parametrize("extra, needle", [
    (["--power", "0.04"], "--power 0.04 must exceed --alpha 0.05"),
    (["--alpha", "0.9"], "--power 0.8 must exceed --alpha 0.9"),
    (["--cv", "1e300", "--effect", "1e-300"], "more than 1,000,000,000 runs per arm"),
    (["--from-runs", "1,1,2", "--metric", "aggregate_output_tok_s"], "lists run 1 more than once"),
])
def test_unsolvable_or_ambiguous_plans_are_input_errors(capsys, extra, needle):
    cv = [] if "--from-runs" in extra or "--cv" in extra else ["--cv", "0.15"]
    effect = [] if "--effect" in extra else ["--effect", "0.05"]
    rc = main(["plan", *cv, *effect, *extra])
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and "internal error" not in err


def test_plan_cv2_effect2_n17_is_not_go(capsys):
    """Issue 17 item 3: it said "go … power 81%"; the gated verdict has 27% power there."""
    assert main(["plan", "--cv", "0.02", "--effect", "0.02", "--n", "17"]) == 0
    out = _flat(capsys.readouterr().out)
    assert "go:" not in out and "verdict (pass)" not in out
    assert "power of a verdict at n=17 (paired, the CI must clear the noise band): 27%" in out
    assert "a verdict needs 67 runs per arm" in out
    assert main(["plan", "--cv", "0.02", "--effect", "0.02", "--n", "17", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"]["status"] != "pass" and data["n_power_gated"] == 67


def test_plan_effect_at_the_band_says_no_verdict_is_reachable(capsys):
    assert main(["plan", "--cv", "0.02", "--effect", "0.01"]) == 0
    out = _flat(capsys.readouterr().out)
    assert "no faster/slower verdict is reachable at any n" in out
    assert "none: Δ ≤ band" in out


def test_plan_design_option(capsys):
    assert main(["plan", "--cv", "0.02", "--effect", "0.02", "--n", "17", "--design", "independent",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["design"] == "independent"
    assert main(["plan", "--cv", "0.02", "--effect", "0.02", "--design", "blocked"]) == 2
    assert "--design must be paired or independent" in capsys.readouterr().err


def test_parse_run_ids_ranges():
    from tokcaliper.cli.plan import parse_run_ids

    assert parse_run_ids("3-5,9", "--from-runs") == [3, 4, 5, 9]


def test_plan_from_runs_builder_takes_the_cv_of_the_stored_runs(monkeypatch, tmp_path):
    from tokcaliper.experiment.stored_runs import plan_from_runs
    from tokcaliper.stats.describe import describe

    runs = [100.0, 110.0, 95.0]
    calls = _fake_store(monkeypatch, runs)
    p = plan_from_runs(tmp_path / "r.db", [1, 2, 3], "m", 0.1, n=4, noise_band=0.02)
    assert calls == [(tmp_path / "r.db", [1, 2, 3], "m")]
    assert p.cv == pytest.approx(describe(runs).cv) and p.n == 4 and p.noise_band == 0.02
    assert p.cv_source.startswith("runs 1,2,3, metric 'm': n=3, mean 101.7, CV 7.5%")  # (100 + 110 + 95) / 3
    assert [w.code for w in p.warnings] == ["quick-formula-power", "independent-runs-assumed", "cv-from-few-runs"]


def test_render_plan_shows_the_headline_figures():
    from rich.console import Console

    from tokcaliper.numbers import percent
    from tokcaliper.report.plan_view import render_plan
    from tokcaliper.stats.resolution import plan

    p = plan(0.15, 0.05, n=5, run_seconds=60)
    con = Console(record=True, width=200)
    render_plan(p, con)
    text = _flat(con.export_text())
    assert "inputs: CV 15.0% (--cv), expected effect Δ 5%, n = 5 runs per arm" in text
    assert re.search(rf"MDE at n=5 per arm: 2·CV·√\(2/n\)\W+{re.escape(percent(p.mde_quick_n))}", text)
    assert re.search(rf"\(test alone\)\W+{p.n_quick}\W+{p.n_power}\b", text)
    assert f"power actually reached by the quick n={p.n_quick}: {percent(p.power_of_quick, decimals=0)}" in text
    assert _flat(p.verdict.summary) in text and "sources:" in text
    assert "50% power (here" not in text  # the caveats are the sink's, not the view's
