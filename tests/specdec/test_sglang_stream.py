"""A streamed response carrying SGLang-style ``meta_info`` gives per-request acceptance in the stored run.

The fake server streams n tokens and puts ``meta_info`` in its final (usage) chunk, as
SGLang fills it (``spec_verify_ct``, ``spec_num_proposed_drafts`` / ``spec_num_correct_drafts``,
``spec_accept_length``): the run goes through the runner and the store, and
:func:`tokcaliper.specdec.runs.run_acceptance` reads it back.
"""

from __future__ import annotations

from tokcaliper.experiment.runner import RepeatSpec, run_repetitions
from tokcaliper.load.prompts import builtin_prompts
from tokcaliper.model.run import LoadConfig
from tokcaliper.specdec.runs import run_acceptance
from tokcaliper.store import Store

from ..load.fake_server import FakeServer, FakeTiming

N = 12  # tokens per reply


def _meta_info(n: int) -> dict:
    # 4 verification steps for 12 tokens (AL 3), each drafting 3 tokens of which 2 are accepted;
    # the histogram and the finish reason are SGLang's too, and are not kept (not numbers / not asked for)
    return {"meta_info": {"spec_verify_ct": 4, "completion_tokens": n, "spec_num_proposed_drafts": 12,
                          "spec_num_correct_drafts": 8, "spec_accept_length": n / 4, "spec_accept_rate": 8 / 12,
                          "spec_correct_drafts_histogram": [0, 0, 4, 0], "finish_reason": {"type": "length"},
                          "e2e_latency": 0.5}}


def test_sglang_meta_info_reaches_the_stored_run(tmp_path):
    timing = FakeTiming(ttft_s=0.005, itl_s=0.001, tokens=N, final=_meta_info)
    with FakeServer(timing) as srv, Store(tmp_path / "t.db") as store:
        load = LoadConfig(base_url=srv.base_url, requests=3, concurrency=1, max_tokens=N)
        [run] = run_repetitions(RepeatSpec(load=load, prompts=builtin_prompts(), repeat=1), store)
        stored = store.get_run(run.id)
    rec = stored.requests[0]
    assert rec.server_timings == {"spec_verify_ct": 4, "completion_tokens": N, "spec_num_proposed_drafts": 12,
                                  "spec_num_correct_drafts": 8, "spec_accept_length": 3.0,
                                  "spec_accept_rate": 8 / 12}
    r = run_acceptance(stored)
    assert r.metrics is None  # no counters from this server
    assert len(r.requests) == 3
    assert all(q.al == 3.0 and q.verify_steps == 4 and q.engine_al == 3.0 for q in r.requests)
    pooled = r.pooled_requests
    assert pooled is not None and (pooled.output_tokens, pooled.verify_steps) == (3 * N, 12)
    assert (pooled.draft_tokens, pooled.accepted, pooled.acceptance_rate) == (36, 24, 24 / 36)
    assert r.request_al is not None and r.request_al.mean == 3.0
