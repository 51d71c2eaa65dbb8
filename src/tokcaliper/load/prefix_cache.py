"""A run's prefix-cache hit rate, from what the server says (pure computation).

hit share = prompt tokens served from the server's prefix cache ÷ prompt tokens,
summed over the run (never a mean of per-request ratios). Sources, the first
that has data wins:

1. **responses** — each measured, completed request's ``cached_tokens``
   (``usage.prompt_tokens_details.cached_tokens``, OpenAI's field, which
   llama.cpp, vLLM and SGLang fill when asked; else the kept per-response
   entry a server family names, e.g. llama.cpp's ``timings.cache_n``) over its
   ``usage.prompt_tokens``. llama.cpp re-evaluates the last prompt token even
   on a full hit, so a repeated prompt of n tokens reads (n − 1) ÷ n.
2. **counters** — a registered family's (cached prompt tokens, prompt tokens)
   counters (``ServerFamily.cache_counters``: vLLM's
   ``vllm:prefix_cache_hits_total`` ÷ ``vllm:prefix_cache_queries_total``,
   TensorRT-LLM's ``trtllm_prompt_cached_tokens_total`` ÷
   ``trtllm_prompt_tokens_total``; summed over label sets), differenced over
   the run's window like every counter (M6).
3. **gauge** — a family's hit-rate gauge (``ServerFamily.cache_gauge``:
   SGLang's ``sglang:cache_hit_rate``) read after the run: the server's own
   running figure, not scoped to the run (said in ``note``).

With ``--turns`` the responses' share is also given per turn (turn 1 holds
only the shared prefix, later turns the conversation so far).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tokcaliper.model.families import families
from tokcaliper.model.metric_keys import metric_name, total
from tokcaliper.model.run import PrefixCacheReport, RequestRecord

__all__ = ["prefix_cache_report"]


def prefix_cache_report(records: Sequence[RequestRecord], counters_delta: Mapping[str, float] | None = None,
                        gauges: Mapping[str, float] | None = None,
                        prefix_sized_by: str | None = None) -> PrefixCacheReport | None:
    """The run's prefix-cache hit share (see the module docstring for the sources).

    Args:
        records: the run's requests (warm-up and failed ones are left out).
        counters_delta: the run's counter differences (``Run.counters_delta``).
        gauges: the server's gauges read after the run.
        prefix_sized_by: how shared prefixes were sized, copied to the report.

    Returns:
        None when no source has data.
    """
    done = [r for r in records if not r.warmup and r.ok and r.prompt_tokens is not None
            and r.cached_tokens is not None]
    if done:
        cached = sum(min(r.cached_tokens or 0, r.prompt_tokens or 0) for r in done)
        prompt = sum(r.prompt_tokens or 0 for r in done)
        by_turn: dict[str, float] = {}
        for turn in sorted({r.turn for r in done if r.turn is not None}):
            rs = [r for r in done if r.turn == turn]
            p = sum(r.prompt_tokens or 0 for r in rs)
            if p:
                by_turn[str(turn)] = sum(min(r.cached_tokens or 0, r.prompt_tokens or 0) for r in rs) / p
        return PrefixCacheReport(source="responses", hit_share=cached / prompt if prompt else None,
                                 cached_tokens=float(cached), prompt_tokens=float(prompt), n=len(done),
                                 by_turn=by_turn, prefix_sized_by=prefix_sized_by)
    for fam in families():
        if fam.cache_counters is None:
            continue
        hits = total(counters_delta or {}, fam.cache_counters[0])
        queries = total(counters_delta or {}, fam.cache_counters[1])
        if hits is not None and queries is not None:
            return PrefixCacheReport(source="counters", hit_share=hits / queries if queries > 0 else None,
                                     cached_tokens=hits, prompt_tokens=queries, prefix_sized_by=prefix_sized_by)
    for fam in families():
        rate = [v for k, v in (gauges or {}).items() if fam.cache_gauge and metric_name(k) == fam.cache_gauge]
        if rate:
            return PrefixCacheReport(source="gauge", hit_share=sum(rate) / len(rate), note=fam.cache_gauge_note,
                                     prefix_sized_by=prefix_sized_by)
    return None
