"""Acceptance metrics on the real llama-server with SmolLM2 (marked ``server``; few requests, few tokens).

Each test runs the tool's own pipeline: the runner reads ``/metrics`` before and
after the measured load, stores the run, and :func:`tokcaliper.specdec.runs.run_acceptance`
(what ``tokcaliper spec show`` prints) computes the figures.
"""

from __future__ import annotations

import math

import pytest
from scipy.optimize import brentq

from tokcaliper.experiment.runner import RepeatSpec, run_repetitions
from tokcaliper.model.run import LoadConfig, Run
from tokcaliper.specdec.runs import run_acceptance
from tokcaliper.store import Store

pytestmark = pytest.mark.server

HELLO = [[{"role": "user", "content": "Write the word hello 50 times."}]]


def _run(base_url: str, tmp_path, prompts, *, requests: int, max_tokens: int, concurrency: int = 1,
         ignore_eos: bool = False) -> Run:
    load = LoadConfig(base_url=base_url, requests=requests, concurrency=concurrency, max_tokens=max_tokens,
                      temperature=0.0, ignore_eos=ignore_eos, request_timeout_s=600)
    with Store(tmp_path / "t.db") as store:
        [run] = run_repetitions(RepeatSpec(load=load, prompts=prompts, repeat=1, unique_prompts=False), store)
    assert run.metrics.failed == 0
    assert run.counters_error is None, run.counters_error
    return run


def test_self_drafting_accepts_everything_and_is_flagged(llama_server_factory, smollm2_gguf, tmp_path):
    """The target drafting for itself on a repetitive prompt: AL = k+1 = 9, rate 1, AL/(k+1) = 1, red flag.

    max_tokens = 1 + 9·13: the first token comes from the prompt pass, then each
    step drafts min(8, remaining − 1) tokens and, all accepted, emits 9 — so every
    draft is a full 8 and k_eff = k exactly.
    """
    base = llama_server_factory("-md", str(smollm2_gguf), "--spec-type", "draft-simple",
                                "--spec-draft-n-max", "8", "--spec-draft-p-min", "0")
    run = _run(base, tmp_path, HELLO, requests=2, max_tokens=1 + 9 * 13)
    r = run_acceptance(run, k=8)
    m = r.metrics
    assert m is not None and m.counts.drafts > 0
    assert m.counts.accepted == m.counts.draft_tokens  # nothing rejected
    assert m.acceptance_rate == 1.0
    assert m.k_eff == 8.0
    assert m.al == 9.0
    assert m.tokens_per_position == 1.0
    assert m.per_position == [1.0] * 8  # every position of every draft accepted
    assert [f.code for f in r.red_flags] == ["all_accepted", "al_at_ceiling"]
    assert "predictable by construction" in r.red_flags[0].message
    # the per-response timings agree with the counter difference
    assert sum(q.draft_tokens for q in r.requests) == m.counts.draft_tokens
    assert sum(q.accepted for q in r.requests) == m.counts.accepted


def _truncated_geometric(p: float, k: int) -> tuple[float, float]:
    """Mean and variance of accepted drafts per step when each position is accepted with
    probability p given the previous one was (P(X ≥ j) = p^j, j = 1…k)."""
    mean = sum(p**j for j in range(1, k + 1))
    second = sum((2 * j - 1) * p**j for j in range(1, k + 1))
    return mean, second - mean**2


def test_synthetic_acceptance_length_within_sampling_tolerance(llama_server_factory, smollm2_gguf, tmp_path):
    """``--spec-synth-len 3.0``: AL from counter deltas over a few hundred drafts lies near 3.0.

    Tolerance. llama.cpp's synthetic mode accepts draft position i with
    conditional probability p, where Σ_{j=1..k} p^j = AL − 1 = 2
    (``common_speculative_synth_rates_resolve``). The accepted count per step X
    is then truncated-geometric with E[X] = 2 and Var[X] = Σ(2j−1)p^j − 4, each
    step an independent draw. Over n steps AL − 1 is a mean of n such draws:
    SE = √(Var/n); we allow 4 SE (two-sided miss probability ≈ 6·10⁻⁵).
    Drafts cut short near the end of a generation (k_eff < k) can only lower the
    expectation, by at most p per missing draft token, i.e. by ≤ p·(k − k_eff);
    the lower bound widens by that measured amount.
    """
    k = 3
    base = llama_server_factory("-md", str(smollm2_gguf), "--spec-type", "draft-simple",
                                "--spec-draft-n-max", str(k), "--spec-draft-p-min", "0",
                                "--spec-synth-len", "3.0")
    prompts = [[{"role": "user", "content": "Tell a long story about a lighthouse keeper."}],
               [{"role": "user", "content": "Explain how bread is made, step by step."}]]
    run = _run(base, tmp_path, prompts, requests=3, max_tokens=130, ignore_eos=True)
    r = run_acceptance(run)
    m = r.metrics
    assert m is not None
    n = m.counts.drafts
    assert n >= 100, f"only {n} drafts: too few for the normal approximation below"
    p = brentq(lambda q: sum(q**j for j in range(1, k + 1)) - 2.0, 0.0, 1.0)
    _, var = _truncated_geometric(p, k)
    se = math.sqrt(var / n)
    truncation = p * (k - m.k_eff)
    assert 3.0 - truncation - 4 * se <= m.al <= 3.0 + 4 * se, (m.al, n, se, truncation)
    assert 0.0 < m.acceptance_rate < 1.0 and r.red_flags == []
    # per-response timings and /metrics deltas agree exactly
    assert len(r.requests) == 3
    assert sum(q.draft_tokens for q in r.requests) == m.counts.draft_tokens
    assert sum(q.accepted for q in r.requests) == m.counts.accepted
    # per-position acceptance is p, p², … (each within 4 binomial SE); Σ = AL − 1
    assert len(m.per_position) == k and sum(m.per_position) == pytest.approx(m.al - 1)
    for i, rate in enumerate(m.per_position, start=1):
        q = p**i
        assert abs(rate - q) <= 4 * math.sqrt(q * (1 - q) / n) + (k - m.k_eff), (i, rate, q)
    assert r.request_al is not None and r.request_al.n == 3


def test_ngram_drafting_moves_the_counters(llama_server_factory, tmp_path):
    """``--spec-type ngram-simple`` on repetitive prompts: counters move, every metric is finite."""
    # short n-grams (lookup 3, draft 8): the defaults (12/48) find no match in 128 tokens
    base = llama_server_factory("--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "3",
                                "--spec-ngram-simple-size-m", "8")
    prompts = [[{"role": "user", "content": "Repeat this line ten times: the cat sat on the mat."}],
               [{"role": "user", "content": "Count from 1 to 40, separated by commas."}]]
    run = _run(base, tmp_path, prompts, requests=2, max_tokens=128)
    r = run_acceptance(run)
    m = r.metrics
    assert m is not None and m.counts.drafts > 0 and m.counts.draft_tokens > 0
    for x in (m.al, m.acceptance_rate, m.k_eff, m.tokens_per_position):
        assert x is not None and math.isfinite(x)
    assert 1.0 <= m.al <= m.k_eff + 1 and 0.0 < m.tokens_per_position <= 1.0


def test_run_without_metrics_records_why(local_llama, tmp_path):
    """llama-server without ``--metrics``: the run's counters are empty *and* it says why."""
    from tokcaliper.servers.managed import ManagedServer

    argv = [str(local_llama.server), "-m", str(local_llama.model), "--host", "127.0.0.1", "--port", "{port}",
            "-np", "1", "-c", "1024", "-t", "2"]
    server = ManagedServer(argv)
    try:
        base = server.start()
        load = LoadConfig(base_url=base, requests=1, max_tokens=8)
        with Store(tmp_path / "t.db") as store:
            [run] = run_repetitions(RepeatSpec(load=load, prompts=HELLO, repeat=1), store)
    finally:
        server.stop()
    assert run.counters_delta == {}
    assert run.counters_error is not None and "HTTP 501" in run.counters_error and "--metrics" in run.counters_error
    assert "unreadable" in run_acceptance(run).unavailable
