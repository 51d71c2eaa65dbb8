"""Token-exact synthetic lengths against the real llama-server with SmolLM2 (issue 18 item 2)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from tokcaliper.store import Store

pytestmark = pytest.mark.server


def test_normal_input_and_fixed_output_lengths_are_exact(tmp_path, llama_server):
    """Every usage.prompt_tokens within ±1 of its request's length (the chat template, its default
    system prompt and the unique tag are counted in it), every completion exactly 32, and the
    requested lengths' sample mean and sd within their sampling error of 200 and 40."""
    db = tmp_path / "r.db"
    proc = subprocess.run(
        [sys.executable, "-m", "tokcaliper", "bench", "--url", llama_server, "--repeat", "1",
         "-c", "2", "-n", "8", "--warmup", "2", "--input-tokens", "normal:200,40",
         "--output-tokens", "fixed:32", "--idle-seconds", "0", "--telemetry-interval", "0",
         "--db", str(db), "--json"],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    lengths = out["runs"][0]["metrics"]["lengths"]
    assert lengths["method"] == "tokenize" and lengths["template_tokens"] > 0
    assert lengths["warnings"] == []
    with Store(db) as s:
        run = s.get_run(s.list_runs()[0].id)
    reqs = run.requests
    assert len(reqs) == 10 and all(r.ok for r in reqs)
    for r in reqs:
        assert r.requested_prompt_tokens is not None and r.prompt_tokens is not None
        assert abs(r.prompt_tokens - r.requested_prompt_tokens) <= 1, r
        assert r.requested_output_tokens == 32 and r.output_tokens == 32 and r.token_count_source == "usage"
    # The sizing probe and tokenize calls fall outside the run's counter window: the server's own
    # count of generated tokens is the measured requests' and nothing more.
    assert run.counters_delta.get("llamacpp:tokens_predicted_total") == 8 * 32
    asked = [r.requested_prompt_tokens for r in reqs]
    n = len(asked)
    mean = sum(asked) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in asked) / (n - 1))
    assert abs(mean - 200) < 4 * 40 / math.sqrt(n)
    assert 40 * 0.3 < sd < 40 * 1.9  # chi-square(9) 0.1 %–99.9 % range of the sd ratio
    assert len(set(asked)) > 1  # the lengths vary: a distribution, not one length
    # Paired across runs: the lengths depend on the stored seed and the request index only.
    assert run.config.length_seed == 0 and run.config.input_tokens == "normal:200,40"
