"""The server-family registry: every engine module registers, a new family registers from one
module, and TGI's and trtllm-serve's counters give the figures their metric names promise."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from tokcaliper.errors import InputError
from tokcaliper.load.prefix_cache import prefix_cache_report
from tokcaliper.load.sse import parse_stream
from tokcaliper.model import families as registry
from tokcaliper.model.families import ResponseField, ServerFamily
from tokcaliper.model.specdec import RequestAcceptance, SpecCounts, acceptance_metrics, request_acceptance
from tokcaliper.servers.counters import parse_metrics


def test_every_engine_module_registers_its_family():
    modules = sorted(p.stem for p in Path(registry.__file__).parent.glob("*.py") if not p.stem.startswith("_"))
    assert modules == ["llamacpp", "sglang", "tgi", "trtllm", "vllm"]
    assert registry.server_kinds() == tuple(modules)
    assert registry.SERVER_KINDS == tuple(modules)
    with pytest.raises(InputError, match=r"--server-kind 'x': expected one of llamacpp, sglang, tgi, trtllm, vllm"):
        registry.check_server_kind("x")


# --- a family defined in one module (this one) --------------------------------------------

def _counts(counters: Mapping[str, float]) -> SpecCounts | None:
    if "fake:steps_total" not in counters:
        return None
    return SpecCounts(drafts=counters["fake:steps_total"], draft_tokens=4 * counters["fake:steps_total"],
                      accepted=counters["fake:ok_total"], source="fake")


def _request(fields: Mapping[str, object], output_tokens: int) -> RequestAcceptance | None:
    steps = fields.get("fake_steps")
    return request_acceptance(output_tokens, verify_steps=steps) if isinstance(steps, int) else None


FAMILY = ServerFamily(name="fake", label="a test engine", source="this test", prefixes=("fake:",),
                      counts=_counts, request=_request,
                      response_fields=(ResponseField("fake_stats", ("fake_steps",)),))


def _event(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def _stream(final: dict, *, text_extra: dict | None = None) -> list[bytes]:
    return [_event({"choices": [{"delta": {"content": "a"}}], **(text_extra or {})}),
            _event({"choices": [{"delta": {"content": "b"}}]}), _event(final), b"data: [DONE]\n\n"]


def _parse(chunks: list[bytes]):
    return parse_stream(chunks, [1.0 + i / 10 for i in range(len(chunks))], index=0, issued=0.9, ended=1.5,
                        run_start=0.0)


def test_a_family_registers_from_one_module():
    before = registry.response_fields()
    final = {"choices": [], "usage": {"completion_tokens": 6, "prompt_tokens": 3},
             "fake_stats": {"fake_steps": 2, "other": 9}}
    assert _parse(_stream(final)).server_timings is None  # not registered: its field is not kept
    registry.register(FAMILY)
    try:
        assert registry.server_kinds()[-1] == "fake"
        assert registry.response_fields() == (*before, ResponseField("fake_stats", ("fake_steps",)))
        assert registry.detect_server_kind(["fake:steps_total", "fake:ok_total", "llamacpp:x"]) == "fake"
        m = acceptance_metrics(registry.spec_counts({"fake:steps_total": 10.0, "fake:ok_total": 15.0}))
        assert (m.al, m.k_eff) == (2.5, 4.0)
        rec = _parse(_stream(final))
        assert rec.ok and rec.server_timings == {"fake_steps": 2}
        r = registry.request_acceptance(None, rec.server_timings, rec.output_tokens)
        assert r is not None and r.al == 3.0  # 6 tokens in 2 steps
        with pytest.raises(ValueError, match="registered twice"):
            registry.register(ServerFamily(name="fake", label="", source="", prefixes=()))
    finally:
        registry.unregister("fake")
    assert "fake" not in registry.server_kinds()


# --- what the parser reads, and where ------------------------------------------------------

META = {"spec_verify_ct": 4, "spec_num_proposed_drafts": 9, "spec_num_correct_drafts": 6, "completion_tokens": 12,
        "spec_accept_histogram": [0, 1, 3], "finish_reason": {"type": "stop"}, "prompt_tokens": 30}


def test_sglang_meta_info_is_kept_from_the_final_chunk_top_level_or_choice():
    kept = {"spec_verify_ct": 4, "spec_num_proposed_drafts": 9, "spec_num_correct_drafts": 6, "completion_tokens": 12}
    usage = {"completion_tokens": 12, "prompt_tokens": 30}
    top = _parse(_stream({"choices": [], "usage": usage, "meta_info": META}))
    assert top.server_timings == kept  # the listed numeric entries only
    in_choice = _parse(_stream({"choices": [{"delta": {}, "finish_reason": "stop", "meta_info": META}],
                                "usage": usage}))
    assert in_choice.server_timings == kept
    r = registry.request_acceptance(None, top.server_timings, top.output_tokens)
    assert r is not None and (r.al, r.acceptance_rate) == (3.0, 6 / 9)
    bad = _parse(_stream({"choices": [], "usage": usage, "meta_info": [1, 2]}))
    assert bad.error_class == "malformed_event" and "meta_info is not an object" in (bad.error or "")


@pytest.mark.parametrize("proposed, accepted", [("spec_num_proposed_drafts", "spec_num_correct_drafts"),
                                                ("spec_proposed_drafts", "spec_accepted_drafts"),
                                                ("spec_draft_token_num", "spec_accept_token_num")])
def test_sglang_drafted_counts_under_each_versions_names(proposed, accepted):
    r = registry.request_acceptance("sglang", {"spec_verify_ct": 5, proposed: 12, accepted: 9}, 14)
    assert r is not None and (r.al, r.draft_tokens, r.accepted, r.acceptance_rate) == (14 / 5, 12, 9, 0.75)


def test_a_token_event_is_not_searched_for_fields_only_the_last_one():
    usage = {"completion_tokens": 2, "prompt_tokens": 3}
    # an early token's event carrying meta_info is not read (no per-token cost) …
    early = _parse(_stream({"choices": [], "usage": usage}, text_extra={"meta_info": {"spec_verify_ct": 1}}))
    assert early.server_timings is None
    # … the last token's event is, and a later text-free event wins over it
    chunks = [_event({"choices": [{"delta": {"content": "a"}}]}),
              _event({"choices": [{"delta": {"content": "b"}}], "timings": {"draft_n": 3, "cache_n": 1}}),
              _event({"choices": [], "usage": usage, "timings": {"draft_n": 4}}), b"data: [DONE]\n\n"]
    rec = _parse(chunks)
    assert rec.server_timings == {"draft_n": 4, "cache_n": 1} and rec.cached_tokens == 1


# --- TGI -------------------------------------------------------------------------------------

TGI_TEXT = """# TYPE tgi_request_skipped_tokens histogram
tgi_request_skipped_tokens_bucket{le="0"} 40
tgi_request_skipped_tokens_bucket{le="1"} 70
tgi_request_skipped_tokens_bucket{le="2"} 100
tgi_request_skipped_tokens_bucket{le="+Inf"} 100
tgi_request_skipped_tokens_sum 90
tgi_request_skipped_tokens_count 100
# TYPE tgi_request_duration histogram
tgi_request_duration_bucket{le="+Inf"} 8
tgi_request_duration_sum 4.5
tgi_request_duration_count 8
# TYPE tgi_request_count counter
tgi_request_count 8
"""


def test_tgi_skipped_tokens_histogram_gives_tokens_per_step():
    before, _ = parse_metrics(TGI_TEXT)
    # only the named histogram's _sum and _count become counters (not its buckets, not other histograms)
    assert before == {"tgi_request_skipped_tokens_sum": 90.0, "tgi_request_skipped_tokens_count": 100.0,
                      "tgi_request_count_total": 8.0}  # (prometheus_client names counter samples _total)
    after, _ = parse_metrics(TGI_TEXT.replace("_sum 90", "_sum 240").replace("_count 100", "_count 200"))
    delta = {k: after[k] - before[k] for k in after}
    assert registry.detect_server_kind(delta) == "tgi"
    assert registry.spec_counts(delta) is None  # no drafted-token counter
    steps = registry.step_acceptance(delta)
    # 100 steps emitted 100 + 150 accepted tokens: 2.5 tokens per step
    assert steps is not None and (steps.output_tokens, steps.verify_steps, steps.accepted, steps.al) == \
        (250, 100, 150, 2.5)


# --- TensorRT-LLM ----------------------------------------------------------------------------

def _pos(name: str, values: list[float]) -> dict[str, float]:
    return {f'trtllm_spec_decode_{name}_tokens_total{{model_name="m",token_position="{i}"}}': v
            for i, v in enumerate(values)}


def test_trtllm_per_position_counters_give_drafts_and_acceptance():
    delta = {**_pos("drafted", [40.0, 40.0, 30.0]), **_pos("accepted", [30.0, 20.0, 10.0]),
             "trtllm_prompt_cached_tokens_total": 300.0, "trtllm_prompt_tokens_total": 1200.0}
    assert registry.detect_server_kind(delta) == "trtllm"
    m = acceptance_metrics(registry.spec_counts(delta))
    # every draft drafts position 0: 40 drafts, 110 drafted, 60 accepted
    assert (m.counts.drafts, m.counts.draft_tokens, m.counts.accepted) == (40.0, 110.0, 60.0)
    assert m.al == 2.5 and m.per_position == [0.75, 0.5, 0.25] and m.acceptance_rate == 60 / 110
    cache = prefix_cache_report([], delta)
    assert cache is not None and cache.source == "counters" and cache.hit_share == 0.25
    assert registry.family("trtllm").metrics_path == "/prometheus/metrics"
