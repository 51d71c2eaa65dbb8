"""Acceptance of stored runs and across repetitions; `spec show`, `spec table`, `spec log` on the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokcaliper.cli import main
from tokcaliper.load.summary import summarize
from tokcaliper.model.run import LoadConfig, RequestRecord, Run
from tokcaliper.specdec.runs import across_runs, run_acceptance
from tokcaliper.stats import mde_quick
from tokcaliper.store import Store

DATA = Path(__file__).parent / "data"
LOG = Path(__file__).parents[1] / "servers" / "data" / "vllm_spec.log"
P = "llamacpp:spec_decode_"


def make_run(drafts: float, accepted: float, tok_s_e2e: float, k: int = 4, error: str | None = None) -> Run:
    recs = [RequestRecord(index=i, start_s=0.0, ttft_s=0.1, e2e_s=64 / tok_s_e2e, output_tokens=64,
                          token_count_source="usage", itl_s=[0.01],
                          server_timings={"predicted_n": 64, "draft_n": 4 * (10 + i),
                                          "draft_n_accepted": 2 * (10 + i)}) for i in range(3)]
    delta = {} if error else {f"{P}num_drafts_total": drafts, f"{P}num_draft_tokens_total": k * drafts,
                              f"{P}num_accepted_tokens_total": accepted, "llamacpp:tokens_predicted_total": 192.0,
                              f'{P}num_accepted_tokens_per_pos_total{{position="0"}}': accepted * 0.6,
                              f'{P}num_accepted_tokens_per_pos_total{{position="1"}}': accepted * 0.4}
    return Run(session="s", started_at="2026-01-01T00:00:00+00:00", finished_at="2026-01-01T00:00:02+00:00",
               command_line="tokcaliper bench", tool_version="0.1.0", config=LoadConfig(base_url="http://x"),
               metrics=summarize(recs), requests=recs, counters_delta=delta, counters_error=error)


def test_run_acceptance_from_counters_and_requests():
    r = run_acceptance(make_run(drafts=50, accepted=100, tok_s_e2e=100))
    assert r.server_kind == "llamacpp"
    assert r.metrics.al == pytest.approx(3.0) and r.metrics.acceptance_rate == pytest.approx(0.5)
    assert r.metrics.k_eff == pytest.approx(4.0) and r.metrics.tokens_per_position == pytest.approx(0.6)
    assert r.metrics.per_position == pytest.approx([1.2, 0.8])
    # per request: 64 tokens / (64 − accepted) passes, accepted = 20, 22, 24
    assert [q.al for q in r.requests] == pytest.approx([64 / 44, 64 / 42, 64 / 40])
    assert r.request_al.n == 3
    assert r.pooled_requests.al == pytest.approx(192 / 126)
    assert r.red_flags == []


def test_all_accepted_run_is_flagged():
    r = run_acceptance(make_run(drafts=50, accepted=200, tok_s_e2e=100), k=4)
    assert r.metrics.al == 5.0 and [f.code for f in r.red_flags] == ["all_accepted", "al_at_ceiling"]


def test_unreadable_counters_carry_their_reason():
    r = run_acceptance(make_run(0, 0, 100, error="after the run: GET http://x/metrics → HTTP 501"))
    assert r.metrics is None and "HTTP 501" in r.unavailable
    assert r.request_al is not None  # the per-request timings still give a distribution


def test_tgi_run_gives_tokens_per_step_and_says_what_is_missing():
    run = make_run(0, 0, 100).model_copy(update={"counters_delta": {
        "tgi_request_skipped_tokens_sum": 150.0, "tgi_request_skipped_tokens_count": 100.0,
        "tgi_request_count_total": 3.0}})
    r = run_acceptance(run)
    assert r.server_kind == "tgi" and r.metrics is None
    assert "not drafted tokens" in r.unavailable
    assert r.step_counters is not None and r.step_counters.al == 2.5  # 250 tokens in 100 steps


def test_across_runs_mean_cv_mde_and_ruler():
    runs = [run_acceptance(make_run(50, a, tp)) for a, tp in ((100, 80), (101, 100), (99, 120), (100, 90))]
    res = across_runs(runs)
    by = {m.name: m for m in res.metrics}
    al = by["AL"]
    assert al.n == 4 and al.mean == pytest.approx(3.0)
    assert al.mde == pytest.approx(mde_quick(al.cv, 4))
    tp = by["aggregate throughput (tok/s)"]
    assert tp.cv > 10 * al.cv
    assert "AL is the finer ruler" in res.ruler and "AL answers only questions that change drafting" in res.limit


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "t.db"
    with Store(path) as s:
        ids = [s.save_run(make_run(50, a, tp)) for a, tp in ((100, 80), (102, 100), (98, 120))]
    return path, ids


def test_spec_show_cli_text_and_json(db, capsys):
    path, ids = db
    assert main(["spec", "show", *map(str, ids), "--db", str(path)]) == 0
    out = capsys.readouterr().out
    assert "AL = 1 + Δaccepted/Δdrafts = 1 + 100/50 = 3.0000" in out and "MDE" in out and "limit:" in out
    assert main(["spec", "show", "--session", "s", "--db", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in doc["runs"]] == ids
    assert doc["metrics"][0]["name"] == "AL" and doc["metrics"][0]["mean"] == pytest.approx(3.0)


def test_spec_show_bad_input_is_one_line(db, capsys):
    path, _ = db
    assert main(["spec", "show", "999", "--db", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tokcaliper: error: no run with id 999") and err.count("\n") == 1
    assert main(["spec", "show", "1", "--db", str(path), "--server-kind", "nonesuch"]) == 2
    assert "--server-kind 'nonesuch'" in capsys.readouterr().err


def test_spec_table_cli_json_matches_text(capsys):
    f = str(DATA / "spec_window_table.json")
    assert main(["spec", "table", f]) == 0
    text, err = capsys.readouterr()
    assert "×1.83" in text and "best buy" not in text  # the caveat goes to stderr, once
    assert err.count("tokcaliper: warning: the highest reading is not the best buy") == 1
    assert main(["spec", "table", f, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    t = doc["tables"][0]
    assert t["best_k_by_al"] == 7 and t["best_k_by_al_per_position"] == 5
    assert f"×{t['rows'][2]['relative_to_best']:.2f}" == "×1.83"



def test_spec_table_prints_user_text_literally(tmp_path, capsys):
    # a failure reason with brackets is the user's text, not rich markup ("[/red]" alone would raise)
    f = tmp_path / "t.csv"
    f.write_text("k,al,failed\n3,3.1,\n5,4.7,\n9,,[/red] OOM [bold]\n")
    assert main(["spec", "table", str(f)]) == 0
    assert "failed to start: [/red] OOM [bold]" in capsys.readouterr().out

def test_spec_table_bad_file(tmp_path, capsys):
    bad = tmp_path / "t.json"
    bad.write_text("{not json")
    assert main(["spec", "table", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"tokcaliper: error: {bad}: invalid JSON at line 1")
    assert main(["spec", "table", str(tmp_path / "missing.csv")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_spec_log_cli(capsys):
    assert main(["spec", "log", str(LOG), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["windows"]) == 3 and doc["metrics"]["al"] == pytest.approx(1 + 1500 / 1050, abs=1e-3)


def test_spec_help_prints_definitions(capsys):
    assert main(["spec", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for needle in ("1 + Δaccepted / Δdrafts", "Δaccepted / Δdraft_tokens", "Δaccepted_pos[i] / Δdrafts",
                   "Δdraft_tokens / Δdrafts", "(Δdrafts + Δaccepted) / (Δdrafts + Δdraft_tokens)",
                   "AL answers only questions that change drafting"):
        assert needle in out


def test_runs_of_different_arms_are_never_pooled(capsys):
    # issue 26: k = 2 and k = 4 runs gave one "AL mean, CV" and a conclusion from the mix
    k2 = [run_acceptance(make_run(50, a, 100).model_copy(update={"arm": "k=2"})) for a in (60, 61)]
    k4 = [run_acceptance(make_run(50, a, 100).model_copy(update={"arm": "k=4"})) for a in (150, 152)]
    res = across_runs(k2 + k4)
    assert res.metrics == [] and res.ruler is None
    assert [p.arm for p in res.by_arm] == ["k=2 (llamacpp)", "k=4 (llamacpp)"]
    means = [next(m for m in p.metrics if m.name == "AL").mean for p in res.by_arm]
    assert means[0] == pytest.approx((2.2 + 2.22) / 2) and means[1] == pytest.approx((4.0 + 4.04) / 2)
    from tokcaliper.report.specdec_view import render_runs_acceptance
    from tokcaliper.report.text import SafeConsole

    render_runs_acceptance(SafeConsole(width=100), res)
    out = capsys.readouterr().out
    assert "2 arms among these runs" in out and "arm k=2 (llamacpp): across 2 run(s)" in out
    assert "across 4 run(s)" not in out


# ---------------------------------------------------------------- the commands' results and views


def _view(render, res) -> str:  # type: ignore[no-untyped-def]
    from rich.console import Console

    con = Console(record=True, width=200)
    render(con, res)
    return " ".join(con.export_text().split())


def test_stored_acceptance_reads_ids_then_the_session(db):
    from tokcaliper.experiment.specdec_stored import stored_acceptance

    path, ids = db
    with Store(path, create=False) as s:
        res = stored_acceptance(s, [ids[2]], session="s")
        with pytest.raises(Exception, match="give run ids or --session"):
            stored_acceptance(s)
    assert [r.run_id for r in res.runs] == [ids[2], ids[0], ids[1]]
    al = next(m for m in res.metrics if m.name == "AL")
    assert al.n == 3 and al.mean == pytest.approx((3.0 + 3.04 + 2.96) / 3)


def test_read_window_tables_collects_each_tables_warning_and_the_view_shows_the_figures():
    from tokcaliper.report.specdec_view import render_window_tables
    from tokcaliper.specdec.table_file import read_window_tables

    res = read_window_tables(DATA / "spec_window_table.json")
    [t] = res.tables
    assert res.source.endswith("spec_window_table.json")
    assert (t.best_k_by_al, t.best_k_by_al_per_position) == (7, 5)
    assert [w.code for w in res.warnings] == ["not-best-buy"] and res.warnings == t.warnings
    text = _view(render_window_tables, res)
    assert "best k by AL: 7; best k by AL/(k+1): 5" in text and "×1.83" in text and "0.789" in text
    assert "warning" not in text  # the caveat is the result's, printed by the sink


def test_log_acceptance_sums_the_intervals_and_the_view_shows_al():
    from tokcaliper.report.specdec_view import render_log
    from tokcaliper.specdec.log_file import log_acceptance

    res = log_acceptance(LOG)
    assert len(res.windows) == 3 and res.accepted == sum(w.accepted for w in res.windows)
    assert res.metrics is not None and res.metrics.al == pytest.approx(1 + 1500 / 1050, abs=1e-3)
    text = _view(render_log, res)
    assert f"3 interval(s) in {LOG}; accepted {res.accepted} / drafted {res.drafted}" in text
    assert res.metrics.arithmetic[0] in text and "limit:" in text


def test_log_acceptance_names_a_log_without_spec_lines(tmp_path):
    from tokcaliper.errors import InputError
    from tokcaliper.specdec.log_file import log_acceptance

    f = tmp_path / "x.log"
    f.write_text("INFO started\nSpecDecoding metrics: something else\n")
    with pytest.raises(InputError, match=r"1 line\(s\) mention .* \(first: line 2;"):
        log_acceptance(f)


def test_render_sweep_shows_the_table_where_the_runs_are_and_the_closing():
    from tokcaliper.experiment.specdec_sweep import SweepResult
    from tokcaliper.report.specdec_view import render_sweep
    from tokcaliper.specdec.table import KInput, window_table

    table = window_table([KInput(k=2, al_samples=[2.1, 2.2]), KInput(k=4, al_samples=[3.0, 3.2])], "sweep")
    res = SweepResult(experiment="e9", table=table, comparisons=[], closing=["result: k=4 faster", "next: none"],
                      warnings=table.warnings)
    text = _view(render_sweep, res)
    assert "best k by AL: 4" in text and "experiment e9: `tokcaliper experiment show e9`" in text
    assert "result: k=4 faster" in text and "next: none" in text
    assert res.model_dump()["table"]["rows"][1]["al"] == pytest.approx(3.1)


def test_sweep_result_rebuilds_a_stored_sweep_and_the_cli_emits_it(tmp_path, capsys):
    from tokcaliper.experiment.spec import LoadSpec
    from tokcaliper.experiment.specdec_sweep import sweep_experiment, sweep_result

    spec = sweep_experiment("llama-server --port {port} --draft {k}", [2, 4], runs_per_k=2,
                            load=LoadSpec(requests=2))
    accepted = {"k=2": (50, 52), "k=4": (100, 104)}  # AL = 1 + accepted/50 drafts
    db = tmp_path / "s.db"
    with Store(db) as s:
        s.create_experiment("sw1", "sweep", spec.model_dump(mode="json"), "# sweep", "2026-01-01T00:00:00.000Z")
        seen: dict[str, int] = {}
        for pos, arm in spec.run_order():
            i = seen[arm] = seen.get(arm, -1) + 1
            run = make_run(50, accepted[arm][i], 100, k=int(arm[2:]))
            s.save_run(run.model_copy(update={"session": "sw1", "arm": arm, "position": pos}))
        res = sweep_result(s, "sw1")
    rows = {r.k: r for r in res.table.rows}
    assert res.experiment == "sw1" and rows[2].al == pytest.approx(2.02) and rows[4].al == pytest.approx(3.04)
    assert rows[2].al_n == rows[4].al_n == 2
    assert [(c.baseline, c.candidate) for c in res.comparisons] == [("k=2", "k=4")]
    assert res.warnings == res.table.warnings
    assert main(["spec", "sweep", "--experiment", "sw1", "--db", str(db), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) >= {"experiment", "table", "comparisons", "closing"}
    assert [r["al"] for r in doc["table"]["rows"]] == pytest.approx([2.02, 3.04])
