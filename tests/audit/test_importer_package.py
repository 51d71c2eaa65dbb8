"""The importer package: detection and dispatch, source fields, and errors naming file, index and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokcaliper.audit import audit_files, diff_files
from tokcaliper.audit.facts.params import params_from_config, params_from_tensors
from tokcaliper.audit.importers import (
    IMPORTERS,
    Importer,
    detect_shape,
    importer_for,
    load_records,
    record_from_row,
)
from tokcaliper.audit.importers.vllm_bench import latency_unit, tp_from_filename
from tokcaliper.errors import InputError

DATA = Path(__file__).parent / "data"
VLLM_FILE = DATA / "vllm_bench" / "glm5_fp8_vllm_tp8_isl1024_osl128_conc4.json"

#: A LocalMaxxing snapshot row (fields as in the public leaderboard snapshot).
LM_SNAPSHOT = {"id": "r3", "hfId": "Qwen/Qwen3.6-27B", "model": "Qwen3.6-27B", "paramsB": 28, "activeParamsB": None,
               "hardware": "RTX 5090", "deviceCount": 1, "memoryGB": 32, "engine": "llama.cpp",
               "engineVersion": "b741 (1fd6dfe)", "quantization": "Q3_K_M", "batchSize": 1, "observedTokS": 74.4,
               "prefillTokS": 2069.2, "ttftMs": 35.76,
               "command": "llama-server -m Qwen3.6-27B-Q3_K_M.gguf -ngl 999 -c 8192 -ctk q8_0 -ctv q8_0 --temp 0"}
LM_LIVE = {"model": {"hfId": "Qwen/Qwen3.6-27B", "params": 27.8, "isMoE": False},
           "hardware": {"gpuName": "RTX 5090", "gpuCount": 1}, "tokSOut": 61.5, "gpuPowerWatts": [420],
           "engineFlags": {"specMethod": "dflash", "specNumTokens": 16}}
VLLM_UPSTREAM = {"model_id": "m", "max_concurrency": 1, "completed": 10, "duration": 10.0,
                 "total_output_tokens": 1000, "output_throughput": 100.0, "median_ttft_ms": 50.0,
                 "median_tpot_ms": 10.0}
LLAMA_BENCH = {"model_filename": "m.gguf", "model_type": "qwen2 7B Q4_K - Medium", "n_prompt": 0, "n_gen": 128,
               "avg_ts": 173.2, "gpu_info": "NVIDIA GeForce RTX 4090", "model_size": 4677120000,
               "model_n_params": 7615616512}
LLAMA_SERVER = {"id": "chatcmpl-1", "model": "smollm2", "choices": [],
                "timings": {"prompt_n": 12, "prompt_ms": 20.0, "predicted_n": 64, "predicted_ms": 800.0,
                            "predicted_per_second": 80.0}}
NATIVE = {"id": "n1", "model": {"name": "Qwen3.6-27B"}, "hardware": {"gpu_name": "RTX 5090"}, "tok_s_decode": 60.0}


def _write(tmp_path: Path, name: str, obj) -> Path:
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return p


# --------------------------------------------------------------------------- detect and dispatch


@pytest.mark.parametrize("row,shape", [
    (LM_SNAPSHOT, "localmaxxing"), (LM_LIVE, "localmaxxing"), (VLLM_UPSTREAM, "vllm_bench"),
    (LLAMA_BENCH, "llama_bench"), (LLAMA_SERVER, "llama_server"), (NATIVE, "native"),
    ({"colour": "blue"}, "unknown"), ([1, 2], "unknown"), (None, "unknown"), ("text", "unknown"),
])
def test_detect_names_the_shape_and_dispatch_records_it(row, shape):
    assert detect_shape(row) == shape
    rec, prob = record_from_row(row, file="x.json", index=7)
    if shape == "unknown":
        assert rec is None and prob.file == "x.json" and prob.index == 7 and prob.field == ""
        assert str(prob).startswith("x.json: record 7: not a ")
    else:
        assert prob is None and rec.provenance["importer"] == shape and rec.provenance["index"] == 7


def test_every_importer_follows_the_interface_and_detects_only_its_own_shape():
    peers = Path(__file__).parents[1] / "data" / "peers"
    samples = {"localmaxxing": LM_SNAPSHOT, "vllm_bench": VLLM_UPSTREAM, "llama_bench": LLAMA_BENCH,
               "llama_server": LLAMA_SERVER, "native": NATIVE,
               "sglang_bench": json.loads((peers / "sglang" / "bench_serving.jsonl").read_text().splitlines()[1]),
               "aiperf": json.loads((peers / "aiperf" / "profile_export_aiperf.json").read_text()),
               "guidellm": json.loads((peers / "guidellm" / "benchmarks.json").read_text()),
               "inference_perf": json.loads((peers / "inference_perf" / "stage_0_lifecycle_metrics.json").read_text()),
               "llmperf": json.loads((peers / "llmperf" / "smollm2_32_16_summary.json").read_text())}
    assert [imp.name for imp in IMPORTERS] == ["llama_server", "localmaxxing", "sglang_bench", "vllm_bench",
                                               "llama_bench", "aiperf", "guidellm", "inference_perf", "llmperf",
                                               "native"]
    for imp in IMPORTERS:
        assert isinstance(imp, Importer)
        assert imp.detect(samples[imp.name]) is True
        assert imp.detect("not a row") is False and imp.detect(None) is False
        others = [n for n, row in samples.items() if n != imp.name and imp.detect(row)]
        # only the catch-all native importer may also match others' rows (it is asked last)
        assert others == [] or imp.name == "native"


def test_order_decides_a_row_two_importers_would_take():
    row = dict(LLAMA_SERVER, tok_s_decode=5.0)  # a Record field name, but a llama-server response first
    assert importer_for(row).name == "llama_server"
    row = dict(VLLM_UPSTREAM, observedTokS=5.0)
    assert importer_for(row).name == "localmaxxing"


# --------------------------------------------------------------------------- source field of every value


def test_source_fields_name_the_rows_own_fields():
    snap, _ = record_from_row(LM_SNAPSHOT)
    src = snap.provenance["source_fields"]
    assert src["tok_s_decode"] == "observedTokS" and src["model.name"] == "hfId"
    assert src["model.params_total"] == "paramsB" and src["hardware.memory_gb"] == "memoryGB"
    assert src["context_length"] == "launch_command" and src["quantization.kv_cache"] == "launch_command"
    assert snap.context_length == 8192 and snap.quantization.kv_cache == "q8_0/q8_0"
    live, _ = record_from_row(LM_LIVE)
    src = live.provenance["source_fields"]
    assert src["tok_s_decode"] == "tokSOut" and src["speculative.window_k"] == "engineFlags.specNumTokens"
    assert src["power_w"] == "gpuPowerWatts" and live.power_w == [420.0]


def test_source_fields_of_native_rows_are_their_own_paths(tmp_path):
    p = _write(tmp_path, "n.csv", "id,model.name,hardware.gpu_name,tok_s_decode\na,GLM-5-FP8,H200,50\n")
    rec = load_records(p).records[0]
    src = rec.provenance["source_fields"]
    assert src["hardware.gpu_name"] == "hardware.gpu_name" and src["tok_s_decode"] == "tok_s_decode"
    assert rec.quantization.weights == "FP8" and src["quantization.weights"] == "model.name"


# --------------------------------------------------------------------------- vllm bench units


def test_vllm_seconds_file_read_as_seconds():
    raw = json.loads(VLLM_FILE.read_text())
    # the file's own latencies agree only in seconds: e2el ≈ ttft + (128 − 1) × tpot
    assert raw["median_e2el"] == pytest.approx(raw["median_ttft"] + 127 * raw["median_tpot"], rel=0.03)
    assert latency_unit(raw) == "s" and latency_unit(VLLM_UPSTREAM) == "ms"
    (rec,) = load_records(VLLM_FILE).records
    assert rec.ttft_ms == pytest.approx(raw["median_ttft"] * 1000) and 200 < rec.ttft_ms < 300
    assert rec.tok_s_decode == pytest.approx(1 / raw["median_tpot"]) and 40 < rec.tok_s_decode < 50
    assert rec.hardware.gpu_count == 8 and rec.requests == 40 and rec.concurrency == 4
    assert any("latencies in seconds" in a for a in rec.provenance["assumptions"])
    src = rec.provenance["source_fields"]
    assert src["ttft_ms"] == "median_ttft" and src["tok_s_decode"] == "median_tpot"
    assert src["hardware.gpu_count"] == "file name"


def test_vllm_upstream_milliseconds():
    rec, prob = record_from_row(VLLM_UPSTREAM)
    assert prob is None and rec.ttft_ms == 50.0 and rec.tok_s_decode == pytest.approx(100.0)
    assert any("milliseconds" in a for a in rec.provenance["assumptions"])
    assert rec.provenance["source_fields"]["ttft_ms"] == "median_ttft_ms"
    both = dict(VLLM_UPSTREAM, median_ttft=0.05)  # an *_ms name decides: milliseconds
    rec, _ = record_from_row(both)
    assert rec.ttft_ms == 50.0


@pytest.mark.parametrize("name,tp", [("glm5_fp8_vllm_tp8_isl1024.json", 8), ("x_TP-4.json", 4),
                                     ("a_tp2_b_tp4.json", None), ("stp8x.json", None), (None, None)])
def test_tp_from_filename(name, tp):
    assert tp_from_filename(name) == tp


# --------------------------------------------------------------------------- errors: file, index, field


@pytest.mark.parametrize("row,field,message", [
    (dict(NATIVE, hardware={"gpu_name": "H200", "memory_gb": "lots"}), "hardware.memory_gb",
     "expected a number, got 'lots'"),
    (dict(LM_SNAPSHOT, observedTokS=-1), "tok_s_decode (from observedTokS)", "must be > 0, got -1"),
    (dict(LM_SNAPSHOT, memoryGB="big"), "memoryGB", "expected a number, got 'big'"),
    (dict(LM_LIVE, engineFlags="dflash"), "engineFlags", "expected an object with fields, got 'dflash'"),
    (dict(LM_LIVE, engineFlags={"specMethod": "dflash", "specNumTokens": 0}),
     "speculative.window_k (from engineFlags.specNumTokens)", "must be ≥ 1, got 0"),
    (dict(LM_LIVE, gpuPowerWatts="hot"), "gpuPowerWatts", "expected a number, got 'hot'"),
    (dict(LM_LIVE, gpuPowerWatts={"gpu0": 420}), "gpuPowerWatts", "expected a list of watts, got an object"),
    (dict(VLLM_UPSTREAM, median_tpot_ms="fast"), "median_tpot_ms", "expected a number, got 'fast'"),
    (dict(VLLM_UPSTREAM, output_throughput=0), "tok_s_aggregate (from output_throughput)",
     "must be > 0, got 0"),
    (dict(LLAMA_BENCH, gpu_info=3), "gpu_info", "expected text, got 3"),
    (dict(LLAMA_BENCH, model_type=7), "model_type", "expected text, got 7"),
    (dict(LLAMA_SERVER, timings={"predicted_n": -4, "predicted_ms": 1.0}),
     "output_tokens (from timings.predicted_n)", "must be ≥ 0, got -4"),
])
def test_errors_name_file_record_and_field(tmp_path, row, field, message):
    good = [NATIVE, NATIVE, NATIVE]
    p = _write(tmp_path, "records.json", good + [row])
    res = load_records(p)
    assert len(res.records) == 3 and len(res.problems) == 1
    (prob,) = res.problems
    assert (prob.file, prob.index, prob.field, prob.message) == (str(p), 3, field, message)
    assert str(prob) == f"{p}: record 3: field {field}: {message}"
    assert isinstance(prob.error(), InputError) and str(prob.error()) == str(prob)


def test_no_valid_record_raises_one_line_naming_file_index_field(tmp_path):
    p = _write(tmp_path, "records.json", {"records": [dict(LM_SNAPSHOT, ttftMs="slow")]})
    with pytest.raises(InputError) as e:
        audit_files([p])
    assert str(e.value) == (f"no valid record in {p}: {p}: record 0: field ttft_ms (from ttftMs): "
                            "expected a number, got 'slow'")


def test_diff_of_a_bad_record_names_its_field(tmp_path):
    p = _write(tmp_path, "pair.jsonl", json.dumps(NATIVE) + "\n" + json.dumps(dict(NATIVE, batch_size=0)) + "\n")
    with pytest.raises(InputError, match=r"pair.jsonl: record 1: field batch_size: must be ≥ 1, got 0"):
        diff_files(f"{p}#0", f"{p}#1")


# --------------------------------------------------------------------------- parameter arithmetic


def test_params_from_config_dense_and_moe():
    dense = {"hidden_size": 4, "num_hidden_layers": 2, "vocab_size": 10, "num_attention_heads": 2,
             "num_key_value_heads": 1, "head_dim": 2, "intermediate_size": 8, "tie_word_embeddings": True}
    # embed 10·4 = 40; per layer: attention 4·2·2·2 + 4·1·2·2 = 48, MLP 3·4·8 = 96 → 40 + 2·144 = 328
    pf = params_from_config(dense, "dense.json")
    assert (pf.total, pf.active, pf.is_moe) == (328.0, None, False) and "dense.json" in pf.total_source
    moe = dict(dense, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=8)
    # experts: 4 × 96 = 384 (total), 2 × 96 = 192 (active) → 40 + 2·(48+384) = 904; 40 + 2·(48+192) = 520
    pf = params_from_config({"text_config": moe}, "moe.json")
    assert (pf.total, pf.active, pf.is_moe) == (904.0, 520.0, True)
    with pytest.raises(InputError, match=r"bad.json: config.json lacks 'vocab_size'"):
        params_from_config({"hidden_size": 4, "num_hidden_layers": 2}, "bad.json")


def test_params_from_tensors_counts_experts_by_share_used():
    tensors = [("token_embd.weight", 50), ("blk.0.ffn_up_exps.weight", 80), ("blk.0.ffn_down_exps.weight", 20)]
    pf = params_from_tensors(tensors, 4, 1, "m.gguf")
    assert pf.total == 150.0 and pf.active == 50 + 100 / 4 and pf.is_moe is True
    assert "GGUF header of m.gguf" in pf.total_source and "1/4" in pf.active_source
    dense = params_from_tensors(tensors[:1], None, None, "d.gguf")
    assert (dense.total, dense.active, dense.is_moe) == (50.0, None, False)


def test_localmaxxing_csv_power_cell_is_one_reading(tmp_path):
    # a CSV cell is text: "575" is one 575 W reading (it was once read character by character: 5, 7, 5 W)
    p = _write(tmp_path, "lm.csv", "hfId,hardware,observedTokS,gpuPowerWatts,engineFlags\n"
                                   "Qwen/Qwen3.6-27B,RTX 5090,74.4,575,\n")
    (rec,) = load_records(p).records
    assert rec.power_w == [575.0] and rec.provenance["importer"] == "localmaxxing"
    assert rec.provenance["source_fields"]["power_w"] == "gpuPowerWatts"
