"""A record from a real llama-server response: self-drafting accepts every draft (A1 fails)."""

from __future__ import annotations

import httpx
import pytest

from tokcaliper.audit.checks import a1_acceptance, a11_multiplier
from tokcaliper.audit.importers import record_from_llama_server_response
from tokcaliper.audit.runner import build_context
from tokcaliper.model.verdict import Status

REQUEST = {"messages": [{"role": "user", "content": "Write the word hello 50 times."}],
           "max_tokens": 256, "temperature": 0, "seed": 1}
SPEC = ("--spec-type", "draft-simple", "--spec-draft-n-max", "8")


def _complete(base_url: str) -> dict:
    r = httpx.post(f"{base_url}/v1/chat/completions", json=REQUEST, timeout=300)
    r.raise_for_status()
    return r.json()


def _argv(model, *extra: str) -> list[str]:
    return ["llama-server", "-m", str(model), "-np", "4", "-c", "4096", "-t", "2", *extra]


@pytest.mark.server
def test_self_drafting_record_fails_a1(llama_server_factory, smollm2_gguf):
    extra = ("-md", str(smollm2_gguf), *SPEC)
    resp = _complete(llama_server_factory(*extra))
    t = resp["timings"]
    assert t["draft_n"] > 0
    assert t["draft_n"] == t["draft_n_accepted"]  # the draft model is the target: nothing is rejected
    rec = record_from_llama_server_response(resp, _argv(smollm2_gguf, *extra), request=REQUEST)
    assert rec.speculative is not None
    assert rec.speculative.window_k == 8 and rec.speculative.method == "draft-simple"
    assert rec.speculative.drafted == t["draft_n"] and rec.speculative.accepted == t["draft_n_accepted"]
    assert rec.tok_s_decode == pytest.approx(t["predicted_per_second"])
    v = a1_acceptance.check(build_context(rec))
    assert v.status == Status.FAIL
    assert f"{t['draft_n']}/{t['draft_n']}" in v.summary
    assert v.inputs["acceptance_rate"] == 1.0
    # CPU record: no GPU → the roofline-based multiplier is not computable, and says so
    assert a11_multiplier.check(build_context(rec)).status == Status.NA


@pytest.mark.server
def test_same_server_without_speculation_is_a1_not_applicable(llama_server_factory, smollm2_gguf):
    resp = _complete(llama_server_factory())
    assert "draft_n" not in resp["timings"] or not resp["timings"].get("draft_n")
    rec = record_from_llama_server_response(resp, _argv(smollm2_gguf), request=REQUEST)
    assert rec.speculative is None
    assert a1_acceptance.check(build_context(rec)).status == Status.NA
