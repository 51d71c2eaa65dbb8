"""Model facts table (matching, sources), A3 with known models, memory fit and offload roofline."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from tokcaliper.audit.checks import a3_roofline
from tokcaliper.audit.facts.models import facts_table, facts_version, match_model
from tokcaliper.audit.facts.params import resolve_params
from tokcaliper.audit.runner import AuditOptions, build_context
from tokcaliper.model.record import Record
from tokcaliper.model.verdict import Status


def rec(name: str, tok_s: float, gpu: str = "RTX 4090", quant: str = "Q4_K_M", cmd: str | None = None,
        **kw) -> Record:
    return Record.model_validate({"model": {"name": name}, "hardware": {"gpu_name": gpu, "gpu_count": 1},
                                  "quantization": {"weights": quant}, "tok_s_decode": tok_s, "batch_size": 1,
                                  "launch_command": cmd, **kw})


def a3(r: Record, **opts):
    return a3_roofline.check(build_context(r, AuditOptions(**opts)))


@pytest.mark.parametrize("name,row", [
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("Llama-3.3-70B-Instruct-Q4_K_M.gguf", "llama-3.3-70b"),
    ("unsloth/Qwen3-30B-A3B-Instruct-2507-GGUF", "qwen3-30b-a3b"),
    ("QWEN/QWEN2.5_7B_INSTRUCT", "qwen2.5-7b"),
    ("google/gemma-3-27b-it", "gemma-3-27b"),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
    ("bartowski/DeepSeek-R1-Distill-Qwen-32B-GGUF", "deepseek-r1-distill-qwen-32b"),
    ("deepseek-ai/DeepSeek-R1", "deepseek-r1"),
    ("cyankiwi/MiniMax-M2.7-AWQ-4bit", "minimax-m2.7"),
    ("zai-org/GLM-4.7-Flash", "glm-4.7-flash"),
    ("openai/gpt-oss-120b", "gpt-oss-120b"),
])
def test_names_match_their_row(name, row):
    m = match_model(name)
    assert m is not None and m.row.id == row
    assert f"row '{row}'" in m.source and m.row.source in m.source and facts_version() in m.source


@pytest.mark.parametrize("name", ["unsloth/GLM-5.2-GGUF", "0xSero/DeepSeek-V4-Flash-180B", "Foo-30B", "llama-3.1",
                                  "qwen3-30b-a3bx"])
def test_unknown_or_derived_names_do_not_match(name):
    assert match_model(name) is None


def test_table_is_versioned_sourced_and_covers_the_families():
    doc = json.loads(resources.files("tokcaliper.data").joinpath("model_facts.json").read_text())
    assert doc["version"] == facts_version()
    rows = facts_table()
    ids = {r.id for r in rows}
    assert len(ids) == len(rows)
    for r in rows:
        assert r.source and r.aliases
        for v in (r.params_total, r.params_active, r.layers, r.hidden, r.kv_heads, r.head_dim):
            assert v is None or v > 0, r.id
        if r.moe:
            assert r.params_active is None or r.params_active < r.params_total, r.id
    families = {r.family for r in rows}
    for fam in ("Llama 2", "Llama 3", "Llama 3.1", "Llama 3.2", "Llama 3.3", "Llama 4", "Qwen2", "Qwen2.5", "Qwen3",
                "Qwen3.5", "Qwen3.6", "DeepSeek V2", "DeepSeek V3/R1", "DeepSeek V4", "Mistral", "Mixtral",
                "Ministral", "Devstral", "Gemma 2", "Gemma 3", "Phi 3", "Phi 4", "gpt-oss", "GLM 4.x", "GLM 5.x",
                "MiniMax", "Kimi"):
        assert fam in families, fam
    # Qwen3 covers dense sizes and A-suffixed MoE sizes
    q3 = [r for r in rows if r.family == "Qwen3"]
    assert any(not r.moe for r in q3) and any(r.moe for r in q3)


def test_name_pattern_is_a_labelled_fallback():
    pf = resolve_params(rec("SomeLab/Foo-8x7B", 10).model_copy())
    assert pf.is_moe is True and pf.active is None and "fallback" in pf.moe_source and "8x7B" in pf.moe_source
    pf = resolve_params(rec("SomeLab/Bar-35B-A3B", 10))
    assert pf.active == 3e9 and "fallback" in pf.active_source and pf.row is None


def test_known_dense_model_over_its_roofline_fails():
    # Llama 3.1 8B: 8.03e9 × Q4_K_M (4.85 bits) ≈ 4.87 GB; RTX 4090 1008 GB/s → ≈ 207 tok/s. 3× that fails.
    v = a3(rec("meta-llama/Llama-3.1-8B-Instruct", 620))
    assert v.status == Status.FAIL, v.summary
    assert v.inputs["params_basis"] == "all (dense)" and v.inputs["params_read"] == pytest.approx(8.03e9)
    assert 2.5 < v.inputs["claim_over_roofline"] < 3.5
    assert any("llama-3.1-8b" in s for s in v.sources)


def test_known_moe_under_its_active_roofline_passes():
    # Qwen3-30B-A3B at 180 tok/s would be ~2× the dense bound but is well under the 3.3e9-active bound.
    r = rec("Qwen/Qwen3-30B-A3B", 180)
    v = a3(r)
    assert v.status == Status.PASS, v.summary
    assert v.inputs["params_basis"] == "active (MoE)" and v.inputs["params_read"] == pytest.approx(3.3e9)
    dense = 1008 / (30.5e9 * v.inputs["bytes_per_param"] / 1e9)
    assert 180 > dense  # over the dense bound, so the table made the difference


def test_unknown_name_keeps_both_bounds_and_does_not_fail():
    v = a3(rec("SomeLab/Mystery-30B", 180))
    assert v.status == Status.WARN and "dense or mixture-of-experts unknown" in v.summary
    assert "fits only if" in "\n".join(v.arithmetic)


def test_weights_that_cannot_fit_with_all_layers_on_gpu_fail_with_arithmetic():
    # Llama 3.1 70B Q8_0: 70.6e9 × 1.0625 B = 75 GB > 24 GB of one RTX 4090, yet -ngl 99.
    r = rec("meta-llama/Llama-3.1-70B-Instruct", 5, quant="Q8_0",
            cmd="llama-server -m Llama-3.1-70B-Instruct-Q8_0.gguf -ngl 99 -c 8192", context_length=8192)
    v = a3(r)
    assert v.status == Status.FAIL and "contradicts itself" in v.summary and "every layer on the GPU" in v.summary
    arith = "\n".join(v.arithmetic)
    assert "weights = 70.6e9 params × 1.06 B = 75 GB" in arith
    assert "KV cache = 2 × 80 layers × 8 KV heads × 128 × 2 B (f16 (not stated; the engines' default)) × 8192 tokens = 2.68 GB" in arith
    assert "do not fit" in arith
    # vLLM default placement is all on the GPU too
    r2 = rec("meta-llama/Llama-3.1-70B-Instruct", 5, quant="FP8", cmd="vllm serve meta-llama/Llama-3.1-70B-Instruct")
    assert a3(r2).status == Status.FAIL


def test_partial_offload_uses_the_offload_roofline():
    # Same record with -ngl 40 of 80 layers: half the bytes come from host memory.
    r = rec("meta-llama/Llama-3.1-70B-Instruct", 2.0, quant="Q8_0",
            cmd="llama-server -m Llama-3.1-70B-Instruct-Q8_0.gguf -ngl 40 -c 8192")
    v = a3(r)
    assert v.inputs["host_fraction"] == pytest.approx(0.5)
    gb = 70.6 * 34 / 32
    expect = 1 / (0.5 * gb / 1008 + 0.5 * gb / 102.4)
    assert v.inputs["roofline_tok_s"] == pytest.approx(expect, rel=1e-3)  # ≈ 2.48 tok/s, not 13.4 all-GPU
    assert "offload roofline" in "\n".join(v.arithmetic) and "102.4 GB/s host" in "\n".join(v.arithmetic)
    assert v.status == Status.PASS  # 2.0 / 2.48 = 0.81
    v2 = a3(r.model_copy(update={"tok_s_decode": 10.0}))
    assert v2.status == Status.FAIL and "offload roofline" in v2.summary
    assert "102.4 GB/s" in " ".join(v2.sources)
    # --host-bandwidth: a faster host raises the bound
    v3 = a3(r.model_copy(update={"tok_s_decode": 10.0}), host_bandwidth_gb_s=800.0)
    assert any("--host-bandwidth" in s for s in v3.sources)
    assert v3.inputs["claim_over_roofline"] < v2.inputs["claim_over_roofline"]


def test_ngl_equal_to_the_layer_count_is_not_called_offload():
    # Issue 24: "-ngl < 30" used to mean "layers may stay in host memory", so every
    # 28-layer model fully on the GPU got that note; the memory check reads the layer count.
    from tokcaliper.audit.importers.base import fill_from_launch

    full = fill_from_launch(rec("meta-llama/Llama-3.2-3B-Instruct", 60,
                                cmd="llama-server -m Llama-3.2-3B-Instruct-Q4_K_M.gguf -ngl 28 -c 4096"))
    assert not any("host memory" in n for n in full.provenance["assumptions"]), full.provenance["assumptions"]
    v = a3(full)
    assert v.inputs["host_fraction"] is None and "-ngl 28: every layer on the GPU" in "\n".join(v.arithmetic)
    part = rec("meta-llama/Llama-3.2-3B-Instruct", 60,
               cmd="llama-server -m Llama-3.2-3B-Instruct-Q4_K_M.gguf -ngl 21 -c 4096")
    v = a3(part)
    assert v.inputs["host_fraction"] == pytest.approx(7 / 28)
    assert "-ngl 21 of 28 layers: 7 layers in host memory" in "\n".join(v.arithmetic)
