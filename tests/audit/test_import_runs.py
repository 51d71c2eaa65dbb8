"""Peer tools' result files imported as runs (issue 20): units, samples, errors, compare, definitions.

Samples are in ``tests/data/peers`` (``PROVENANCE.md`` there says which a tool
wrote here and which were written from its documented field names). The real
files collected from public repositories are read too when the folder
``shared/peer_results`` sits above the checkout (or ``$TOKCALIPER_PEER_RESULTS``);
otherwise those tests skip with the reason.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tokcaliper.audit.importers import load_records
from tokcaliper.audit.importers.definitions import DEFINITIONS
from tokcaliper.audit.importers.run_files import read_runs as _read_runs
from tokcaliper.cli import main
from tokcaliper.errors import InputError
from tokcaliper.model.metrics import run_scalars
from tokcaliper.load.summary import summarize
from tokcaliper.store import Store

REPO = Path(__file__).resolve().parents[2]
PEERS = REPO / "tests" / "data" / "peers"


def read_runs(paths):
    return _read_runs(paths, summarize)


def _peer_results() -> Path | None:
    env = os.environ.get("TOKCALIPER_PEER_RESULTS")
    if env:
        return Path(env) if Path(env).is_dir() else None
    return next((d / "shared" / "peer_results" for d in REPO.parents if (d / "shared" / "peer_results").is_dir()),
                None)


PEER_RESULTS = _peer_results()
needs_peer_results = pytest.mark.skipif(
    PEER_RESULTS is None, reason="no shared/peer_results folder above the checkout (nor $TOKCALIPER_PEER_RESULTS): "
                                 "the real peer files are not in the repository")


def one(path: Path):
    r = read_runs([path])
    assert len(r.runs) == 1, r.runs
    return r.runs[0], r


def scal(p) -> dict:
    return run_scalars(p.metrics)


# --------------------------------------------------------------------------- each importer, its own sample


def test_vllm_sample_ms_to_s_and_detailed_arrays():
    p, _ = one(PEERS / "vllm" / "bench_serve_detailed.json")
    s = scal(p)
    assert p.tool == "vllm" and p.settings["concurrency"] == 2 and p.settings["request_rate"] == "inf"
    assert s["ttft_p50_ms"] == pytest.approx(90.0) and p.metrics.ttft_s.p50 == pytest.approx(0.090)
    assert s["tpot_mean_ms"] == pytest.approx(50.0) and s["itl_p99_ms"] == pytest.approx(60.0)
    assert s["e2e_p50_s"] == pytest.approx(0.840)  # median_e2el_ms 840 ms → 0.84 s
    assert s["aggregate_output_tok_s"] == 32.0 and s["request_throughput_rps"] == 2.0
    assert p.metrics.completed == 4 and p.metrics.output_tokens == 64 and p.metrics.wall_s == 2.0
    assert [q.ttft_s for q in p.requests] == [0.08, 0.09, 0.09, 0.14] and p.requests[0].itl_s == [0.05, 0.05]
    assert p.fields["ttft_s.p50"] == "median_ttft_ms (ms → s)"


def test_aiperf_sample_reads_each_unit_and_its_jsonl():
    p, r = one(PEERS / "aiperf" / "profile_export_aiperf.json")
    doc = json.loads((PEERS / "aiperf" / "profile_export_aiperf.json").read_text())
    assert p.tool == "aiperf" and p.version == doc["aiperf_version"]
    assert doc["benchmark_duration"]["unit"] == "sec" and doc["time_to_first_token"]["unit"] == "ms"
    assert p.metrics.wall_s == pytest.approx(doc["benchmark_duration"]["avg"])  # sec, not ms
    assert p.metrics.ttft_s.p50 == pytest.approx(doc["time_to_first_token"]["p50"] / 1000)
    assert p.metrics.tpot_s.mean == pytest.approx(doc["inter_token_latency"]["avg"] / 1000)
    assert p.metrics.aggregate_output_tok_s == pytest.approx(doc["output_token_throughput"]["avg"])
    assert p.metrics.completed == doc["request_count"]["avg"]
    n_lines = len((PEERS / "aiperf" / "profile_export.jsonl").read_text().splitlines())
    assert len(p.requests) == n_lines and str(PEERS / "aiperf" / "profile_export.jsonl") in r.files
    first = json.loads((PEERS / "aiperf" / "profile_export.jsonl").read_text().splitlines()[0])
    want = first["metrics"]["time_to_first_token"]["value"] / 1000  # its "unit" is ms
    assert any(abs(q.ttft_s - want) < 1e-9 for q in p.requests)
    starts = [json.loads(x)["metadata"]["request_start_ns"] for x in
              (PEERS / "aiperf" / "profile_export.jsonl").read_text().splitlines()]
    assert p.started == pytest.approx(min(starts) * 1e-9)  # the run's own time, not the import's


def test_aiperf_csv_and_jsonl_named_beside_the_json_are_not_counted_twice():
    d = PEERS / "aiperf"
    r = read_runs([d / "profile_export_aiperf.json", d / "profile_export_aiperf.csv", d / "profile_export.jsonl"])
    assert len(r.runs) == 1
    assert any("same run" in s for s in r.skipped) and any("imported with it" in s for s in r.skipped)


def test_aiperf_csv_alone_takes_units_from_the_labels():
    p, _ = one(PEERS / "aiperf" / "profile_export_aiperf.csv")
    j, _ = one(PEERS / "aiperf" / "profile_export_aiperf.json")
    assert p.metrics.wall_s == pytest.approx(j.metrics.wall_s, rel=1e-2)  # "(sec)" in the label
    assert p.metrics.ttft_s.p50 == pytest.approx(j.metrics.ttft_s.p50, rel=1e-2)  # "(ms)"


def test_guidellm_sample_ms_and_seconds_and_one_run_per_benchmark():
    path = PEERS / "guidellm" / "benchmarks.json"
    doc = json.loads(path.read_text())
    r = read_runs([path])
    assert len(r.runs) == len(doc["benchmarks"])
    p, b = r.runs[0], doc["benchmarks"][0]
    m = b["metrics"]
    assert p.metrics.ttft_s.mean == pytest.approx(m["time_to_first_token_ms"]["successful"]["mean"] / 1000)
    assert p.metrics.e2e_s.mean == pytest.approx(m["request_latency"]["successful"]["mean"])  # seconds as is
    assert p.metrics.aggregate_output_tok_s == pytest.approx(
        m["output_token_count"]["successful"]["total_sum"] / b["duration"])
    assert "streams" in p.benchmark and p.settings["concurrency"] == b["config"]["strategy"]["streams"]
    assert len(p.requests) == m["request_totals"]["successful"] + m["request_totals"]["errored"]


def test_guidellm_broken_benchmark_is_skipped_and_listed(tmp_path):
    doc = json.loads((PEERS / "guidellm" / "benchmarks.json").read_text())
    bad = json.loads(json.dumps(doc["benchmarks"][0]))
    bad["duration"] = "long"
    doc["benchmarks"].append(bad)
    f = tmp_path / "b.json"
    f.write_text(json.dumps(doc))
    r = read_runs([f])
    assert len(r.runs) == len(doc["benchmarks"]) - 1
    assert len(r.skipped) == 1 and "benchmark 1: field benchmarks[1].duration" in r.skipped[0]


def test_llama_bench_ns_to_s_one_run_per_row():
    r = read_runs([PEERS / "llama_bench" / "smollm2_cpu.jsonl"])
    pp, tg = r.runs
    assert pp.metrics.aggregate_output_tok_s is None and "prompt-processing rate" in " ".join(pp.notes)
    assert tg.metrics.wall_s == pytest.approx(0.2)  # avg_ns 2e8 ns
    assert tg.metrics.per_stream_decode_tok_s_mean == 80.0 and [q.e2e_s for q in tg.requests] == [0.198, 0.202]
    assert tg.benchmark == "row 1: tg16 @ d0" and tg.settings["n_gen"] == 16


def test_llama_bench_real_output_built_here():
    path = PEERS / "llama_bench" / "smollm2_cpu_llama_bench_built_here.jsonl"
    raw = [json.loads(x) for x in path.read_text().splitlines()]
    runs = read_runs([path]).runs
    assert len(runs) == len(raw) == 2
    for p, row in zip(runs, raw):
        assert p.metrics.wall_s == pytest.approx(row["avg_ns"] * 1e-9)
        assert [q.e2e_s for q in p.requests] == pytest.approx([ns * 1e-9 for ns in row["samples_ns"]])
    assert runs[1].metrics.per_stream_decode_tok_s_mean == raw[1]["avg_ts"] and runs[1].settings["n_gen"] == 16


def test_inference_perf_seconds():
    p, _ = one(PEERS / "inference_perf" / "stage_0_lifecycle_metrics.json")
    assert p.benchmark == "stage 0" and p.settings["requested_rate"] == 1.0
    assert scal(p)["ttft_mean_ms"] == pytest.approx(30.0)  # 0.03 s
    assert scal(p)["e2e_p50_s"] == pytest.approx(0.5 * 0.99)  # "median" → p50
    assert p.metrics.wall_s == pytest.approx(60.0) and p.metrics.output_tokens == 60 * 64


def test_sglang_infinity_is_missing_with_a_note_and_bad_line_skipped():
    r = read_runs([PEERS / "sglang" / "bench_serving.jsonl"])
    assert len(r.runs) == 2 and len(r.skipped) == 1 and "record 2" in r.skipped[0]
    off, on = r.runs
    assert "rate_rps" not in off.settings and off.settings["request_rate"] == "inf"
    assert any("request_rate" in n and "missing" in n for n in off.notes)
    assert scal(off)["ttft_p50_ms"] == pytest.approx(250.0) and scal(off)["itl_p50_ms"] == pytest.approx(12.5)
    assert on.settings["rate_rps"] == 2.0 and on.settings["concurrency"] == 8


def test_llmperf_summary_seconds_with_individual_samples():
    p, r = one(PEERS / "llmperf" / "smollm2_32_16_summary.json")
    assert scal(p)["ttft_p50_ms"] == pytest.approx(100.0) and scal(p)["e2e_mean_s"] == pytest.approx(0.85 * 1.01)
    assert p.metrics.wall_s == pytest.approx(2.0)  # 4 completed at 120/min
    assert len(p.requests) == 4 and p.requests[1].ttft_s == pytest.approx(0.11)
    both = read_runs([PEERS / "llmperf" / "smollm2_32_16_summary.json",
                      PEERS / "llmperf" / "smollm2_32_16_individual_responses.json"])
    assert len(both.runs) == 1 and any("imported with it" in s for s in both.skipped)


def test_genai_perf_analyze_rows_and_gpu_table_skipped():
    r = read_runs([PEERS / "genai_perf" / "analyze_export_genai_perf.csv"])
    assert [p.settings["concurrency"] for p in r.runs] == [2, 4]
    assert scal(r.runs[0])["ttft_p99_ms"] == pytest.approx(140.0) and r.runs[1].metrics.aggregate_output_tok_s == 56
    assert len(r.skipped) == 1 and "GPU" in r.skipped[0]


# --------------------------------------------------------------------------- errors


def test_unknown_tool_names_file_and_fields(tmp_path):
    f = tmp_path / "mystery.json"
    f.write_text('{"speed": 3, "colour": "blue"}')
    with pytest.raises(InputError) as e:
        read_runs([f])
    msg = str(e.value)
    assert str(f) in msg and "not a result file of a known tool" in msg and "speed, colour" in msg
    assert "\n" not in msg


def test_unknown_aiperf_schema_names_the_field(tmp_path):
    doc = json.loads((PEERS / "aiperf" / "profile_export_aiperf.json").read_text())
    doc["schema_version"] = "9.0"
    f = tmp_path / "profile_export_aiperf.json"
    f.write_text(json.dumps(doc))
    with pytest.raises(InputError, match=r"profile_export_aiperf.json: field schema_version: AIPerf schema 9.0"):
        read_runs([f])


def test_cli_import_unknown_file_is_one_line_and_stores_nothing(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text("[1, 2]")
    db = tmp_path / "t.db"
    rc = main(["import", str(PEERS / "vllm" / "bench_serve_detailed.json"), str(bad), "--db", str(db)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("tokcaliper: error:") == 1 and "x.json" in err and "Traceback" not in err
    assert not db.exists() or Store(db).list_runs() == []


# --------------------------------------------------------------------------- stored runs, audit records


def test_import_stores_source_and_runs_show_it(tmp_path, capsys):
    db = tmp_path / "t.db"
    assert main(["import", str(PEERS / "sglang" / "bench_serving.jsonl"), "--session", "s", "--db", str(db),
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [x["benchmark"][:6] for x in out["runs"]] == ["line 0", "line 1"] and len(out["skipped"]) == 1
    with Store(db, create=False) as st:
        runs = st.session_runs("s")
        assert [r.arm for r in runs] == ["sglang", "sglang"] and [r.repetition for r in runs] == [0, 1]
        assert runs[0].source.tool == "sglang" and runs[0].measured_by == "sglang"
        assert st.metric_values([runs[0].id], "ttft_p50_ms") == [pytest.approx(250.0)]
        assert [r.tool for r in st.list_runs()] == ["sglang", "sglang"]
    assert main(["show", str(runs[0].id), "--db", str(db)]) == 0
    assert "imported: measured by sglang" in capsys.readouterr().out


def test_new_formats_still_give_audit_records():
    res = load_records([PEERS / "sglang" / "bench_serving.jsonl", PEERS / "aiperf" / "profile_export_aiperf.json",
                        PEERS / "guidellm" / "benchmarks.json", PEERS / "llmperf" / "smollm2_32_16_summary.json",
                        PEERS / "inference_perf" / "stage_0_lifecycle_metrics.json"])
    shapes = [r.provenance["importer"] for r in res.records]
    assert shapes == ["sglang_bench", "sglang_bench", "aiperf", "guidellm", "llmperf", "inference_perf"]
    assert res.records[0].ttft_ms == pytest.approx(250.0) and res.records[0].tok_s_aggregate == 1024.0


# --------------------------------------------------------------------------- compare


def _vllm(tmp_path: Path, name: str, tok_s: float) -> Path:
    doc = json.loads((PEERS / "vllm" / "bench_serve_detailed.json").read_text())
    doc["output_throughput"] = tok_s
    f = tmp_path / name
    f.write_text(json.dumps(doc))
    return f


def test_compare_session_on_imported_vllm_equals_compare_csv(tmp_path, capsys):
    a, b = [31.0, 32.5, 30.8, 31.9], [35.2, 34.1, 36.0, 35.5]
    db = tmp_path / "t.db"
    for arm, vals in (("A", a), ("B", b)):
        files = [str(_vllm(tmp_path, f"{arm}{i}.json", v)) for i, v in enumerate(vals)]
        assert main(["import", *files, "--arm", arm, "--session", "cmp", "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["compare", "--session", "cmp", "--db", str(db), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    csv = tmp_path / "v.csv"
    csv.write_text("arm,value\n" + "".join(f"A,{v}\n" for v in a) + "".join(f"B,{v}\n" for v in b))
    assert main(["compare", "--csv", str(csv), "--json"]) == 0
    want = json.loads(capsys.readouterr().out)
    for k in ("ratio_of_means", "ratio_of_means_ci", "welch", "mde", "verdict", "decision_ci"):
        assert got[k] == want[k], k
    assert (got["a"]["name"], got["b"]["name"]) == ("A", "B") and got["a"]["n"] == 4


def test_compare_mixing_tools_is_refused_then_warned(tmp_path, capsys):
    db = tmp_path / "t.db"
    assert main(["import", str(_vllm(tmp_path, "v.json", 30.0)), str(_vllm(tmp_path, "w.json", 31.0)),
                 "--arm", "A", "--session", "m", "--db", str(db)]) == 0
    assert main(["import", str(PEERS / "sglang" / "bench_serving.jsonl"), "--arm", "B", "--session", "m",
                 "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["compare", "--session", "m", "--db", str(db), "--metric", "ttft_p50_ms"]) == 2
    err = capsys.readouterr().err
    assert "measured by different tools" in err and "--allow-mixed-tools" in err and err.count("\n") == 1
    assert main(["compare", "--session", "m", "--db", str(db), "--metric", "ttft_p50_ms", "--allow-mixed-tools",
                 "--json"]) == 0
    [w] = json.loads(capsys.readouterr().out)["warnings"]
    assert w["code"] == "mixed-tools"
    assert w["message"].startswith("arms measured by different tools (arm A: vllm; arm B: sglang)")
    assert main(["compare", "--session", "m", "--db", str(db), "--metric", "ttft_p50_ms", "--allow-mixed-tools"]) == 0
    out, err = capsys.readouterr()
    assert "different tools" not in out  # the caveat is printed once, on stderr
    assert err.startswith("tokcaliper: warning: arms measured by different tools (arm A: vllm; arm B: sglang)")


# --------------------------------------------------------------------------- against tokcaliper's own run


def test_aiperf_and_guidellm_agree_with_tokcaliper_on_counts():
    """The samples were produced by benchmarks/peer_samples.py: the same load from each tool on the
    local llama-server. Request count and output tokens must agree exactly."""
    own = json.loads((PEERS / "tokcaliper_runs.json").read_text())[-1]
    for path in (PEERS / "aiperf" / "profile_export_aiperf.json", PEERS / "guidellm" / "benchmarks.json"):
        p = read_runs([path]).runs[0]
        assert p.metrics.completed == own["metrics"]["completed"], path
        assert p.metrics.output_tokens == own["metrics"]["output_tokens"], path
        assert sum(q.output_tokens for q in p.requests if q.ok) == own["metrics"]["output_tokens"], path


# --------------------------------------------------------------------------- the real files


@needs_peer_results
@pytest.mark.parametrize("pattern,tool", [("vllm/*.json", "vllm"), ("aiperf/*profile_export_aiperf.json", "aiperf"),
                                          ("aiperf/*.csv", "aiperf"), ("aiperf/*.jsonl", "aiperf")])
def test_every_real_vllm_and_aiperf_file(pattern, tool):
    files = sorted(PEER_RESULTS.glob(pattern))  # type: ignore[union-attr]
    assert files, pattern
    for f in files:
        r = read_runs([f])
        assert len(r.runs) == 1 and r.runs[0].tool == tool, f
        m = r.runs[0].metrics
        assert m.completed > 0 and m.aggregate_output_tok_s and m.ttft_s.p50 and m.ttft_s.p50 < 600, f


@needs_peer_results
def test_real_files_traps():
    conc4 = read_runs([PEER_RESULTS / "vllm" / "benchmark_serving_inferencex_gptoss120b_conc4.json"]).runs[0]
    raw = json.loads((PEER_RESULTS / "vllm" / "benchmark_serving_inferencex_gptoss120b_conc4.json").read_text())
    assert conc4.metrics.ttft_s.p99 == pytest.approx(raw["p99_ttft_ms"] / 1000)
    assert any("request_goodput:" in n for n in conc4.notes)
    aip = read_runs([PEER_RESULTS / "aiperf" / "run1_profile_export_aiperf.json"]).runs[0]
    assert aip.metrics.completed == 89 and aip.metrics.failed == 11 and len(aip.requests) == 100
    off = read_runs([PEER_RESULTS / "sglang" / "bench_serving_2024_llama33_70b_offline_inf.jsonl"]).runs
    assert len(off) == 7 and all("rate_rps" not in p.settings for p in off)
    ip = read_runs([PEER_RESULTS / "inference_perf" / "kubecon_vllm_stage_0_lifecycle_metrics.json"]).runs[0]
    assert ip.metrics.ttft_s.p50 == pytest.approx(0.031026913959067315)  # seconds kept seconds
    gl = read_runs([PEER_RESULTS / "guidellm" / "v02x_tests_benchmarks_stripped.json"]).runs[0]
    assert gl.metrics.completed == 46
    with pytest.raises(InputError, match="successes.latency"):
        read_runs([PEER_RESULTS / "inference_perf" / "kubecon_vllm_summary_prometheus_metrics.json"])


# --------------------------------------------------------------------------- docs


def test_docs_definitions_table_is_the_code_table():
    text = (REPO / "docs" / "import.md").read_text()
    rows = set(re.findall(r"^\| ([\w-]+) \| (\w+) \| (equals|resembles) \| (.+) \|$", text, re.M))
    want = {(t, f, d.relation, d.meaning) for t, fam in DEFINITIONS.items() for f, d in fam.items()}
    assert rows == want


def test_samples_have_a_provenance_note():
    text = (PEERS / "PROVENANCE.md").read_text()
    for sub in sorted(p.name for p in PEERS.iterdir() if p.is_dir()):
        assert f"`{sub}/" in text, sub
