"""A5 — what the denominator left out (METHODS.md A5).

Flags (warn): empty TTFT; notes saying prefill came from cache; missing token
counts or time. Consistency: ``output_tokens ÷ seconds`` against the reported
rate (aggregate when published, else per-stream decode); relative difference
``|computed / reported − 1|`` ≤ 5 % pass, ≤ 20 % warn, > 20 % fail. When TTFT
is known the decode-only rate ``(tokens − 1) ÷ (seconds − TTFT)`` is shown too,
and the closer of the two is judged (publishers differ on what "seconds" covers).

The decode-only correction holds for one request only: its first token
arrives after one TTFT. For an aggregate over many requests (``requests`` > 1,
e.g. a vllm bench run of 160 prompts, or concurrency/batch > 1) prefills of
different requests overlap each other's decode, so subtracting one token and
one median TTFT from the totals means nothing; the correction is skipped and
the verdict says why.
"""

from __future__ import annotations

import re

from tokcaliper import numbers as fmt
from tokcaliper.audit.checks._common import CheckContext, FindingLog
from tokcaliper.audit.claims import record_rate
from tokcaliper.audit.constants import A5_FAIL_DIFF, A5_WARN_DIFF
from tokcaliper.model.verdict import Status, Verdict
from tokcaliper.numbers import compact, fixed

CHECK, TITLE = "A5", "what the denominator left out"

_CACHE_NOTE = re.compile(r"(prefill|prompt)[^.;\n]{0,40}(cache|cached)|(cache|cached)[^.;\n]{0,40}(prefill|prompt)",
                         re.I)


def check(ctx: CheckContext) -> Verdict:
    """A5 verdict: warn on omissions; fail when tokens ÷ seconds is > 20 % off the reported rate."""
    rec = ctx.record
    log = FindingLog(CHECK)
    found = log.add
    arith: list[str] = []

    reported = record_rate(rec, "throughput")
    inputs = {"ttft_ms": rec.ttft_ms, "output_tokens": rec.output_tokens, "seconds": rec.seconds,
              "requests": rec.requests,
              "reported_tok_s": reported, "notes": rec.notes}
    if rec.ttft_ms is None:
        found("ttft_empty", Status.WARN, "TTFT empty: the prefill cost is not shown")
    if rec.notes and _CACHE_NOTE.search(rec.notes):
        found("cached_prefill", Status.WARN,
              f"notes say the prompt/prefill came from cache: {_CACHE_NOTE.search(rec.notes).group(0)!r}")
    if rec.output_tokens is None or rec.seconds is None:
        missing = [n for n, v in (("output tokens", rec.output_tokens), ("seconds", rec.seconds)) if v is None]
        found("totals_missing", Status.WARN,
              f"{' and '.join(missing)} not published: tokens ÷ seconds cannot be checked")
    elif reported is None:
        found("no_rate", Status.WARN, "no reported rate to check tokens ÷ seconds against")
    else:
        computed = rec.output_tokens / rec.seconds
        diff = abs(computed / reported - 1)
        arith.append(f"{rec.output_tokens} tokens / {compact(rec.seconds, 4)} s = {compact(computed, 5)} tok/s vs "
                     f"reported {compact(reported, 5)} → {fixed(diff * 100, 1)}% apart")
        multi = [f"{what} {v}" for what, v in (("requests", rec.requests), ("concurrency", rec.concurrency),
                                                 ("batch", rec.batch_size)) if v is not None and v > 1]
        if rec.ttft_ms is not None and multi:
            arith.append(f"decode-only correction (tokens − 1) / (seconds − TTFT) skipped: an aggregate over "
                         f"several requests ({', '.join(multi)}), where it holds for one request only")
        elif rec.ttft_ms is not None and rec.seconds > rec.ttft_ms / 1000 and rec.output_tokens > 1:
            dec = (rec.output_tokens - 1) / (rec.seconds - rec.ttft_ms / 1000)
            d2 = abs(dec / reported - 1)
            arith.append(f"decode only: ({rec.output_tokens} − 1) / ({compact(rec.seconds, 4)} − "
                         f"{compact(rec.ttft_ms / 1000, 3)}) s = {compact(dec, 5)} tok/s → "
                         f"{fixed(d2 * 100, 1)}% apart")
            diff = min(diff, d2)
        inputs["relative_difference"] = diff
        if diff > A5_WARN_DIFF:
            found("rate_mismatch", Status.FAIL if diff > A5_FAIL_DIFF else Status.WARN,
                  f"tokens ÷ seconds is {fixed(diff * 100, 0)}% off the reported rate", relative_difference=diff)
        else:
            found("rate_matches", Status.PASS, f"tokens ÷ seconds matches the reported rate ({fmt.percent(diff)})",
                  relative_difference=diff)
    if not log.findings:
        found("complete", Status.PASS, "complete")
    return Verdict(check=CHECK, title=TITLE, status=log.status, findings=log.findings,
                   arithmetic=arith, inputs=inputs,
                   sources=["METHODS.md A5; bands: pass ≤ 5%, warn ≤ 20%, fail > 20%"])
