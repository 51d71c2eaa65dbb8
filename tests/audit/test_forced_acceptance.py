"""Forced acceptance (A1): test knobs that set acceptance are recognised and fail the claim."""

from __future__ import annotations

import pytest

from tokcaliper.audit.checks import a1_acceptance
from tokcaliper.audit.forced_acceptance import find_forced_acceptance
from tokcaliper.audit.runner import build_context
from tokcaliper.model.record import Record
from tokcaliper.model.verdict import Status

# (command form, environment form, setting name, engine, AL implied)
CASES = [
    ("llama-server -m m.gguf -md d.gguf --spec-synth-len 4.5", "LLAMA_ARG_SPEC_SYNTH_LEN=4.5",
     ("--spec-synth-len", "LLAMA_ARG_SPEC_SYNTH_LEN"), "llama.cpp", 4.5),
    ("llama-server -m m.gguf --spec-synth-rates 0.9,0.8,0.7", "LLAMA_ARG_SPEC_SYNTH_RATES=0.9,0.8,0.7",
     ("--spec-synth-rates", "LLAMA_ARG_SPEC_SYNTH_RATES"), "llama.cpp", None),
    ("SGLANG_SIMULATE_ACC_LEN=3.2 python -m sglang.launch_server --model-path m --speculative-algorithm EAGLE",
     "export SGLANG_SIMULATE_ACC_LEN=3.2", ("SGLANG_SIMULATE_ACC_LEN",), "SGLang", 3.2),
    ("""vllm serve m --speculative-config '{"method": "eagle3", "num_speculative_tokens": 5, """
     """"rejection_sample_method": "synthetic", "synthetic_acceptance_length": 3.51}'""",
     "VLLM_SPEC='{\"synthetic_acceptance_length\": 3.51}'", ("synthetic_acceptance_length",), "vLLM", 3.51),
    ("trtllm-serve m --extra_llm_api_options spec.yaml TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=2",
     "TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS=2", ("TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS",),
     "TensorRT-LLM", 3.0),
]


@pytest.mark.parametrize("cmd,env,names,engine,al", CASES)
def test_recognised_in_command_and_environment(cmd, env, names, engine, al):
    for where, text in (("launch command", cmd), ("environment", env)):
        found = find_forced_acceptance({where: text})
        assert found, (where, text)
        assert found[0].setting in names and found[0].engine == engine and found[0].where == where
        assert found[0].implied_al == al


def test_vllm_synthetic_sampler_without_length():
    found = find_forced_acceptance({"notes": 'spec config {"rejection_sample_method": "synthetic", '
                                             '"synthetic_acceptance_rate": 0.8}'})
    assert {f.setting for f in found} == {"rejection_sample_method", "synthetic_acceptance_rate"}
    assert all(f.where == "notes" for f in found)


def test_nothing_in_ordinary_commands():
    assert find_forced_acceptance({"launch command": "llama-server -m m.gguf -md d.gguf --draft-max 16",
                                   "notes": "synthetic benchmark prompts"}) == []


@pytest.mark.parametrize("field", ["launch_command", "environment", "notes"])
def test_a1_fails_a_claim_resting_on_forced_acceptance(field):
    text = {"launch_command": "llama-server -m m.gguf --spec-synth-len 5",
            "environment": "LLAMA_ARG_SPEC_SYNTH_LEN=5",
            "notes": "run with SGLANG_SIMULATE_ACC_LEN=5"}[field]
    r = Record.model_validate({"model": {"name": "m"}, "tok_s_decode": 400, field: text,
                               "speculative": {"method": "EAGLE", "window_k": 7, "al": 5.0}})
    v = a1_acceptance.check(build_context(r))
    assert v.status == Status.FAIL
    assert v.summary.startswith("acceptance set by configuration (")
    assert "the AL is an input, not a measurement" in v.summary
    assert v.inputs["al_configured"] == 5.0
