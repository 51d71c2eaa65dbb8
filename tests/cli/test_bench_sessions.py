"""Multi-turn sessions and shared prefixes against the real llama-server with SmolLM2 (issue 18 item 5).

llama-server (``--cache-prompt`` on by default, ``--cache-ram`` 8 GiB, slots picked by prompt
similarity) keeps each slot's last prompt and answer in its KV cache and answers with
``timings.cache_n`` and ``usage.prompt_tokens_details.cached_tokens``: the prompt tokens it did
not evaluate again. A request that starts with what an earlier one sent reuses them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from tokcaliper.load import sessions
from tokcaliper.load.driver import run_phase
from tokcaliper.load.prompts import builtin_prompts
from tokcaliper.load.sse import answer_text
from tokcaliper.model.run import LoadConfig

pytestmark = pytest.mark.server


def test_turn_two_carries_turn_one_answer(llama_server, monkeypatch):
    """Turn 2's request holds turn 1's messages as sent and the answer the server streamed, and
    the server serves all of turn 1's prompt from its cache; the shared prefix is 24 tokens by
    the server's own tokenizer."""
    sent: list[tuple[dict, list[bytes]]] = []
    real = sessions.stream_chat

    async def capture(pool, request, raw, **kw):
        raw = await real(pool, request, raw, **kw)
        sent.append((json.loads(request.split(b"\r\n\r\n", 1)[1]), list(raw.chunks)))
        return raw

    monkeypatch.setattr(sessions, "stream_chat", capture)
    cfg = LoadConfig(base_url=llama_server, concurrency=1, requests=2, warmup=0, max_tokens=6,
                     turns=2, shared_prefix="groups=1,tokens=24", prompt_salt="turns-test")
    phase = run_phase(cfg, builtin_prompts())
    assert [(r.session, r.turn, r.prefix_group, r.ok) for r in phase] == [(0, 1, 0, True), (0, 2, 0, True)]
    (body1, chunks1), (body2, _) = sent
    answer = answer_text(chunks1)
    assert answer.strip()
    assert body2["messages"][:len(body1["messages"]) + 1] == [
        *body1["messages"], {"role": "assistant", "content": answer}]
    assert body2["messages"][-1]["role"] == "user" and body2["messages"][-1]["content"].startswith(
        "[turns-test.s0.t2] ")
    prefix = body1["messages"][0]
    assert prefix["role"] == "system" and prefix["content"].startswith("[turns-test.p0] ")
    counted = httpx.post(f"{llama_server}/tokenize", json={"content": prefix["content"], "add_special": False})
    assert len(counted.json()["tokens"]) == 24 and phase.prefix_method == "tokenize"
    first, second = phase
    assert second.cached_tokens is not None and second.cached_tokens >= first.prompt_tokens - 1, (
        first.prompt_tokens, second.cached_tokens)


def _bench(url: str, db, prefix: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "tokcaliper", "bench", "--url", url, "--repeat", "1", "-c", "1", "-n", "4",
         "--warmup", "0", "--max-tokens", "2", "--shared-prefix", prefix, "--idle-seconds", "0",
         "--telemetry-interval", "0", "--db", str(db), "--json"],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_shared_prefix_hit_rate_is_above_unique_prompts(tmp_path, llama_server):
    """Four requests with one 96-token prefix against four with a prefix each (same lengths, same
    prompts): after the first, the shared one is served from the cache, the unique ones are not."""
    shared = _bench(llama_server, tmp_path / "r.db", "groups=1,tokens=96")
    unique = _bench(llama_server, tmp_path / "r.db", "groups=4,tokens=96")
    hit = {name: out["runs"][0]["metrics"]["prefix_cache"] for name, out in
           (("shared", shared), ("unique", unique))}
    print("hit shares:", {k: v["hit_share"] for k, v in hit.items()})
    assert hit["shared"]["source"] == hit["unique"]["source"] == "responses"
    assert hit["shared"]["n"] == hit["unique"]["n"] == 4
    assert hit["shared"]["hit_share"] > hit["unique"]["hit_share"] + 0.25
    assert "prefix-cache hit (%)" in json.dumps(shared["noise_floor"])  # --shared-prefix adds the metric
