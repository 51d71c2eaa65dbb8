"""``tokcaliper analyze`` on a CSV and on stored runs; bad input → one line, exit 2."""

import json
from pathlib import Path

import pytest

from tokcaliper.cli import main
from tokcaliper.store import Store

from tests.analyze.gpu_runs import make_run

DATA = json.loads((Path(__file__).parent / "data" / "data_clumps.json").read_text())


def write_baseline_csv(path: Path) -> Path:
    r = DATA["runs"]
    lines = ["tok_s,sm_clock_start_mhz,rest_s,host"]
    lines += [f"{v},{c},{s},box1" for v, c, s in zip(r["per_stream_tok_s"], r["sm_clock_start_mhz"], r["rest_s"])]
    path.write_text("\n".join(lines) + "\n")
    return path


def cli(capsys, *args):
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("tokcaliper: error:"), err
    return lines[0]


def test_csv_prints_groups_and_covariates_and_json(tmp_path, capsys):
    f = write_baseline_csv(tmp_path / "runs.csv")
    rc, out, _ = cli(capsys, "analyze", "--csv", str(f), "--value", "tok_s", "--unit", "tok/s per stream")
    assert rc == 0
    flat = " ".join(out.split())
    assert "6 runs form 2 groups (60.9 vs 72.1 tok/s per stream, ×1.18" in flat
    assert "best explained by SM clock at start (ρ = 0.94" in flat
    assert "column 'host' is not numeric" in flat
    rc, out, _ = cli(capsys, "analyze", "--csv", str(f), "--value", "tok_s", "--json")
    doc = json.loads(out)
    a = doc["analysis"]
    assert a["groups"] == 2
    assert a["split"]["low"]["mean"] == pytest.approx(60.87, abs=0.01)
    assert a["split"]["high"]["mean"] == pytest.approx(72.1, abs=0.01)
    assert [c["name"] for c in a["covariates"]][:2] == ["sm_clock_start_mhz", "rest_s"]
    assert a["covariates"][0]["p"] == pytest.approx(12 / 720)


def test_csv_adjusted_comparison_prints_both(tmp_path, capsys):
    rows = ["tok_s,arm,sm_clock_start_mhz"]
    clocks = [1300, 1420, 1360, 1390, 1330, 1450, 1310, 1440, 1370, 1400, 1345, 1425]
    for i, c in enumerate(clocks):
        arm = "A" if i % 2 == 0 else "B"
        rows.append(f"{600 * (1 + 0.0008 * (c - 1380)) * (1.05 if arm == 'B' else 1):.2f},{arm},{c}")
    f = tmp_path / "ab.csv"
    f.write_text("\n".join(rows) + "\n")
    rc, out, _ = cli(capsys, "analyze", "--csv", str(f), "--value", "tok_s", "--arm-column", "arm",
                     "--adjust-for", "sm_clock_start_mhz", "--json")
    assert rc == 0
    adj = json.loads(out)["adjusted"]
    assert adj["adjusted"]["effect"] == pytest.approx(1.05, abs=0.002)
    width = {k: adj[k]["ci"][1] - adj[k]["ci"][0] for k in ("adjusted", "unadjusted")}
    assert width["adjusted"] < width["unadjusted"] / 10  # the clock explains nearly all the variance
    rc, out, _ = cli(capsys, "analyze", "--csv", str(f), "--value", "tok_s", "--arm-column", "arm",
                     "--adjust-for", "sm_clock_start_mhz")
    assert "unadjusted log y ~ arm:" in out and "adjusted log y ~ arm + sm_clock_start_mhz:" in out
    # two arms without --adjust-for or --arm: one line naming them
    rc, _, err = cli(capsys, "analyze", "--csv", str(f), "--value", "tok_s", "--arm-column", "arm")
    assert rc == 2 and "holds 2 arms (A, B)" in one_error_line(err)




@pytest.fixture()
def db(tmp_path):
    path = tmp_path / "runs.db"
    tok = [561, 372, 548, 366, 555, 380, 552, 375]
    clock = [1455, 1335, 1410, 1245, 1440, 1380, 1450, 1300]
    with Store(path) as s:
        for i, (t, c) in enumerate(zip(tok, clock)):
            s.save_run(make_run(i, t, c, {"hw_thermal_slowdown": 0.1} if i == 3 else None))
    return path


def test_stored_runs_by_ids_and_session(db, capsys):
    rc, out, _ = cli(capsys, "analyze", "--runs", "1-8", "--metric", "aggregate_output_tok_s", "--db", str(db))
    assert rc == 0
    flat = " ".join(out.split())
    assert "8 runs form 2 groups" in flat and "best explained by SM clock at start" in flat
    assert "flag run 4: gpu0: hw_thermal_slowdown active in 10.0%" in flat
    rc, out, _ = cli(capsys, "analyze", "--session", "base", "--db", str(db), "--json")
    doc = json.loads(out)
    assert doc["analysis"]["n"] == 8 and doc["analysis"]["groups"] == 2
    assert doc["analysis"]["covariates"][0]["name"] == "sm_clock_start_mhz"
    assert [g["run_id"] for g in doc["gates"] if g["flagged"]] == [4]
    assert doc["analysis_unflagged"]["n"] == 7  # run 4 left out
    assert "without the flagged run(s): 7 runs form 2 groups" in flat


@pytest.mark.parametrize("args, needle", [
    (["--runs", "1-8", "--metric", "bogus"], "unknown metric"),
    (["--runs", "1-9"], "no run with id 9"),
    (["--runs", "1-3"], "needs ≥ 5 runs"),
    (["--runs", "x"], "--runs must list run ids"),
    (["--session", "nope"], "no runs of session 'nope'"),
    ([], "give exactly one of --csv FILE, --runs IDS or --session ID"),
])
def test_bad_stored_input_is_one_line_exit_2(db, capsys, args, needle):
    rc, _, err = cli(capsys, "analyze", *args, "--db", str(db))
    assert rc == 2 and needle in one_error_line(err)


def test_bad_csv_input_is_one_line_exit_2(tmp_path, capsys):
    f = tmp_path / "bad.csv"
    f.write_text("tok_s,clk\n1,2\nfast,3\n")
    rc, _, err = cli(capsys, "analyze", "--csv", str(f), "--value", "tok_s")
    assert rc == 2 and "line 3: tok_s: 'fast' is not a number" in one_error_line(err)
    rc, _, err = cli(capsys, "analyze", "--csv", str(f), "--value", "nope")
    assert rc == 2 and "has no column 'nope'" in one_error_line(err)
    rc, _, err = cli(capsys, "analyze", "--csv", str(tmp_path / "none.csv"), "--value", "x")
    assert rc == 2 and "none.csv: cannot read (no such file or directory)" in one_error_line(err)
    rc, _, err = cli(capsys, "analyze", "--csv", str(f))
    assert rc == 2 and "needs --value" in one_error_line(err)


def test_csv_names_print_literally_not_as_rich_markup(tmp_path, capsys):
    # Column names and --unit are the user's text: brackets in them must print as written
    # (unescaped, "[/red]" would even raise rich's MarkupError: closing tag with no opening one).
    r = DATA["runs"]
    lines = ["tok_s,[bold]x[/red],[red]host"]
    lines += [f"{v},{c},box1" for v, c in zip(r["per_stream_tok_s"], r["sm_clock_start_mhz"])]
    f = tmp_path / "runs.csv"
    f.write_text("\n".join(lines) + "\n")
    rc, out, _ = cli(capsys, "analyze", "--csv", str(f), "--value", "tok_s", "--unit", "[i]tok/s[/b]")
    assert rc == 0
    flat = " ".join(out.split())
    assert "best explained by [bold]x[/red] (ρ = 0.94" in flat  # the sentence
    assert flat.count("[bold]x[/red]") >= 2  # and the covariate table
    assert "72.1 [i]tok/s[/b]" in flat and "column '[red]host' is not numeric" in flat
