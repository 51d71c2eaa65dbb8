"""Shared prefixes, multi-turn sessions and the prefix-cache hit rate (issue 18 item 5), without a real server.

What a real server shows (turn 2 carries turn 1's answer, a shared prefix raises the hit
rate) is in tests/cli/test_bench_sessions.py; here: parsing, message shapes, the hit-rate
arithmetic from each source, and the session schedule against the fake server (exact
counts, cut sessions, a failed turn).
"""

from __future__ import annotations

import json

import pytest

from tokcaliper.errors import InputError
from tokcaliper.experiment.spec import LoadSpec
from tokcaliper.load import sessions
from tokcaliper.load.driver import run_phase
from tokcaliper.load.prefix_cache import prefix_cache_report
from tokcaliper.load.sessions import SharedPrefix, parse_shared_prefix, with_prefix
from tokcaliper.load.sse import answer_text, parse_stream
from tokcaliper.model.metrics import METRICS
from tokcaliper.model.run import LoadConfig, PrefixCacheReport, RequestRecord
from tokcaliper.store import Store

from .fake_server import FakeServer, FakeTiming


def test_parse_shared_prefix():
    assert parse_shared_prefix("groups=4,tokens=512") == SharedPrefix(4, 512)
    assert parse_shared_prefix(" tokens = 8 , groups=1") == SharedPrefix(1, 8)
    for bad, says in (("groups=4", "needs tokens"), ("groups=0,tokens=5", "groups must be"),
                      ("groups=2,tokens=0", "tokens must be"), ("groups=2,groups=3,tokens=1", "twice"),
                      ("size=3", "is not groups=G"), ("groups=1.5,tokens=2", "is not groups=G")):
        with pytest.raises(ValueError, match=says):
            parse_shared_prefix(bad)


@pytest.mark.parametrize("options, says", [
    (dict(shared_prefix="groups=2"), "--shared-prefix needs tokens"),
    (dict(turns=2, input_tokens="fixed:50"), "give either --input-tokens or --turns/--shared-prefix"),
    (dict(shared_prefix="groups=1,tokens=4", input_tokens="fixed:50"), "--input-tokens or"),
    (dict(think_time_s=1.0), "--think-time needs --turns ≥ 2"),
    (dict(turns=0), "--turns must be ≥ 1"),
    (dict(turns=2, think_time_s=-1.0), "--think-time must be ≥ 0"),
])
def test_bench_options_are_checked_by_loadspec(options, says):
    with pytest.raises(InputError, match=says):
        LoadSpec.from_options(**options)


def test_loadspec_carries_the_options_into_the_run_config():
    cfg = LoadSpec(shared_prefix="groups=2,tokens=16", turns=3, think_time_s=0.25).to_load_config("http://h")
    assert (cfg.shared_prefix, cfg.turns, cfg.think_time_s) == ("groups=2,tokens=16", 3, 0.25)


def test_with_prefix_puts_one_system_message_first():
    user = [{"role": "user", "content": "hi"}]
    assert with_prefix(user, "P") == [{"role": "system", "content": "P"}, *user]
    merged = with_prefix([{"role": "system", "content": "be brief"}, *user], "P")
    assert merged == [{"role": "system", "content": "P\n\nbe brief"}, *user]


def _event(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def test_answer_text_joins_content_and_skips_the_rest():
    chunks = [_event({"choices": [{"delta": {"content": "Hel"}}]}),
              _event({"choices": [{"delta": {"reasoning_content": "hmm"}}]}) + b"data: {bad\n\n",
              _event({"choices": [{"delta": {"content": "lo"}}]})[:10],
              _event({"choices": [{"delta": {"content": "lo"}}]})[10:],
              _event({"choices": "x"}), b"data: [DONE]\n\n"]
    assert answer_text(chunks) == "Hello"


def _stream(usage: dict | None = None, timings: dict | None = None) -> RequestRecord:
    final: dict = {"choices": []}
    if usage is not None:
        final["usage"] = usage
    if timings is not None:
        final["timings"] = timings
    chunks = [_event({"choices": [{"delta": {"content": "a"}}]}), _event(final), b"data: [DONE]\n\n"]
    return parse_stream(chunks, [1.0, 1.1, 1.2], index=0, issued=0.9, ended=1.2, run_start=0.0)


def test_cached_tokens_from_usage_details_else_llamacpp_timings():
    r = _stream({"completion_tokens": 1, "prompt_tokens": 67, "prompt_tokens_details": {"cached_tokens": 66}},
                {"cache_n": 5, "prompt_n": 62})
    assert r.ok and r.cached_tokens == 66  # the OpenAI field wins
    assert _stream({"completion_tokens": 1, "prompt_tokens": 67}, {"cache_n": 66, "prompt_n": 1}).cached_tokens == 66
    assert _stream({"completion_tokens": 1, "prompt_tokens": 67}).cached_tokens is None
    bad = _stream({"completion_tokens": 1, "prompt_tokens": 6, "prompt_tokens_details": {"cached_tokens": -1}})
    assert bad.error_class == "bad_usage" and "cached_tokens" in (bad.error or "")
    assert _stream({"completion_tokens": 1, "prompt_tokens_details": 3}).error_class == "bad_usage"


def _rec(i: int, prompt: int, cached: int | None, *, turn: int | None = None, warmup: bool = False,
         error: str | None = None) -> RequestRecord:
    return RequestRecord(index=i, start_s=0.0, prompt_tokens=prompt, cached_tokens=cached, turn=turn,
                         warmup=warmup, error=error)


def test_hit_rate_is_summed_tokens_over_measured_completed_requests():
    recs = [_rec(0, 100, 0, turn=1), _rec(1, 200, 150, turn=2), _rec(2, 300, 290, turn=2),
            _rec(3, 50, 50, warmup=True), _rec(4, 80, 80, error="boom")]
    rep = prefix_cache_report(recs, prefix_sized_by="tokenize")
    assert rep.source == "responses" and rep.n == 3
    assert rep.hit_share == pytest.approx(440 / 600)  # not the mean of the ratios (0.58)
    assert rep.by_turn == {"1": 0.0, "2": pytest.approx(440 / 500)}
    assert rep.prefix_sized_by == "tokenize"


def test_hit_rate_from_vllm_counters_then_sglang_gauge():
    recs = [_rec(0, 100, None)]
    delta = {'vllm:prefix_cache_hits_total{engine="0",model_name="m"}': 300.0,
             'vllm:prefix_cache_queries_total{engine="0",model_name="m"}': 400.0,
             'vllm:prefix_cache_hits_total{engine="1",model_name="m"}': 100.0,
             'vllm:prefix_cache_queries_total{engine="1",model_name="m"}': 400.0}
    rep = prefix_cache_report(recs, delta)
    assert rep.source == "counters" and rep.hit_share == pytest.approx(0.5)
    gauge = prefix_cache_report(recs, {}, {'sglang:cache_hit_rate{model_name="m"}': 0.25})
    assert gauge.source == "gauge" and gauge.hit_share == 0.25 and "not scoped" in gauge.note
    assert prefix_cache_report(recs, {"llamacpp:n_decode_total": 3.0}, {}) is None


def test_registry_metric_is_a_percentage_and_leaves_the_gauge_out():
    from tokcaliper.load.summary import summarize

    m = summarize([_rec(0, 100, 25)])
    metric = METRICS["prefix_cache_hit_pct"]
    assert metric.extract(m) is None
    m.prefix_cache = PrefixCacheReport(source="responses", hit_share=0.25)
    assert metric.extract(m) == 25.0
    m.prefix_cache = PrefixCacheReport(source="gauge", hit_share=0.25)
    assert metric.extract(m) is None  # the server's running value is not this run's figure


def test_sessions_turns_prefixes_and_the_history_carried(monkeypatch):
    """5 requests of 2 turns: sessions 0, 1, 2 (the last one turn); turn 2's messages are turn 1's
    as sent plus the answer streamed back, then a new tagged prompt; every request knows its
    session, turn and group, and the warm-up's sessions come first."""
    sent: list[tuple[dict, list[bytes]]] = []
    real = sessions.stream_chat

    async def capture(pool, request, raw, **kw):
        raw = await real(pool, request, raw, **kw)
        sent.append((json.loads(request.split(b"\r\n\r\n", 1)[1]), list(raw.chunks)))
        return raw

    monkeypatch.setattr(sessions, "stream_chat", capture)
    monkeypatch.setattr(sessions.SharedPrefixes, "prepare",
                        lambda self: setattr(self, "texts", ["PREFIX-A", "PREFIX-B"]) or setattr(self, "method", "words"))
    with FakeServer(FakeTiming(ttft_s=0.001, itl_s=0.001, tokens=3)) as srv:
        cfg = LoadConfig(base_url=srv.base_url, concurrency=2, requests=5, warmup=2, max_tokens=3,
                         turns=2, shared_prefix="groups=2,tokens=4", prompt_salt="S")
        warm = run_phase(cfg, [[{"role": "user", "content": f"q{i}"}] for i in range(7)], warmup=True)
        phase = run_phase(cfg, [[{"role": "user", "content": f"q{i}"}] for i in range(7)])
    assert [(r.session, r.turn) for r in warm] == [(0, 1), (0, 2)]
    assert sorted((r.session, r.turn, r.prefix_group) for r in phase) == [
        (1, 1, 1), (1, 2, 1), (2, 1, 0), (2, 2, 0), (3, 1, 1)]
    assert all(r.ok for r in phase) and phase.prefix_method == "words"
    bodies = {(m[-1]["content"].split("]")[0]): (m, chunks) for body, chunks in sent
              for m in [body["messages"]]}
    first, chunks = bodies["[S.s1.t1"]
    second, _ = bodies["[S.s1.t2"]
    assert first == [{"role": "system", "content": "PREFIX-B"}, {"role": "user", "content": "[S.s1.t1] q2"}]
    answer = answer_text(chunks)
    assert answer == "t0 t1 t2 "
    assert second == [*first, {"role": "assistant", "content": answer},
                      {"role": "user", "content": "[S.s1.t2] q3"}]


def test_a_failed_turn_ends_its_session(monkeypatch):
    """Every other request fails (HTTP 500): the failed turn is recorded and its session sends no more."""
    with FakeServer(FakeTiming(ttft_s=0.001, itl_s=0.001, tokens=2, fail_every=2)) as srv:
        cfg = LoadConfig(base_url=srv.base_url, concurrency=1, requests=6, warmup=0, max_tokens=2, turns=3)
        phase = run_phase(cfg, [[{"role": "user", "content": "q"}]])
    # session 0: turn 1 ok, turn 2 fails; session 1: turn 1 ok, turn 2 fails (6 reserved, 4 sent)
    assert [(r.session, r.turn, r.ok) for r in phase] == [(0, 1, True), (0, 2, False), (1, 1, True),
                                                          (1, 2, False)]


def test_store_keeps_session_turn_group_and_cached_tokens(tmp_path):
    from tokcaliper.model.run import Run, RunMetrics
    from tokcaliper.load.summary import summarize

    recs = [RequestRecord(index=0, start_s=0.0, e2e_s=0.1, ttft_s=0.05, output_tokens=2, prompt_tokens=9,
                          cached_tokens=7, session=3, turn=2, prefix_group=1)]
    m: RunMetrics = summarize(recs)
    m.prefix_cache = prefix_cache_report(recs)
    run = Run(session="s", started_at="2026-12-02T00:00:00.000Z", finished_at="2026-12-02T00:00:01.000Z",
              command_line="x", tool_version="0", config=LoadConfig(base_url="http://h", turns=2),
              metrics=m, requests=recs)
    with Store(tmp_path / "r.db") as s:
        back = s.get_run(s.save_run(run))
    r = back.requests[0]
    assert (r.cached_tokens, r.session, r.turn, r.prefix_group) == (7, 3, 2, 1)
    assert back.metrics.prefix_cache.hit_share == pytest.approx(7 / 9) and back.config.turns == 2


def test_prefixes_without_tokenize_are_tagged_filler_words():
    """A server without /tokenize (the fake one): P filler words after the run's tag, one text per
    group, the same text for the same group and seed, and the method says it is approximate."""
    with FakeServer(FakeTiming(ttft_s=0.001, itl_s=0.001, tokens=2)) as srv:
        cfg = LoadConfig(base_url=srv.base_url, shared_prefix="groups=3,tokens=5", prompt_salt="R")
        p = sessions.SharedPrefixes(cfg)
        p.prepare()
        again = sessions.SharedPrefixes(cfg)
        again.prepare()
    assert p.method == "words" and len(p.texts) == 3 and p.texts == again.texts
    assert [t.split("] ")[0] for t in p.texts] == ["[R.p0", "[R.p1", "[R.p2"]
    assert all(len(t.split("] ", 1)[1].split()) == 5 for t in p.texts)
    assert len(set(t.split("] ", 1)[1] for t in p.texts)) == 3  # each group its own words
    assert p.apply(4, [{"role": "user", "content": "q"}])[0] == 1


def test_loadspec_bounds_are_the_session_module_bounds():
    fields = LoadSpec.model_fields
    le = {name: next(m.le for m in fields[name].metadata if getattr(m, "le", None) is not None)
          for name in ("turns", "think_time_s")}
    assert le == {"turns": sessions.MAX_TURNS, "think_time_s": sessions.MAX_THINK_TIME_S}
