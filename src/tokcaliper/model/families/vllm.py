"""vLLM: ``vllm:spec_decode_*`` and prefix-cache counters, and the offline "SpecDecoding metrics" log line.

Counters (``/metrics``): ``vllm:spec_decode_num_drafts_total``,
``vllm:spec_decode_num_draft_tokens_total``, ``vllm:spec_decode_num_accepted_tokens_total``,
``vllm:spec_decode_num_accepted_tokens_per_pos_total{position="i"}`` (labelled by
``engine`` and ``model_name`` too; summed here). Source: vLLM
``vllm/v1/spec_decode/metrics.py`` (``SpecDecodingProm``). Prefix cache:
``vllm:prefix_cache_hits_total`` ÷ ``vllm:prefix_cache_queries_total`` (tokens;
vLLM ``vllm/v1/metrics/loggers.py``). No per-response field is kept.

Offline, vLLM logs every stats interval (``SpecDecodingLogging.log``)::

    SpecDecoding metrics: Mean acceptance length: 2.45, Accepted throughput: 30.10 tokens/s,
    Drafted throughput: 60.00 tokens/s, Accepted: 301 tokens, Drafted: 600 tokens,
    Per-position acceptance rate: 0.723, 0.512, 0.215, Avg Draft acceptance rate: 50.2%

Each line covers one logging interval (and resets), so the lines of a run's
log are summed. The number of drafts is not printed; it is recovered as
``accepted / (AL − 1)`` from the AL rounded to 2 decimals (relative error up
to 0.005 / (AL − 1)), or, when every line's per-position rates are given,
as ``accepted / Σ rates`` (3 decimals each).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import BaseModel

from tokcaliper.errors import InputError
from tokcaliper.model.families._base import ServerFamily, spec_decode_totals
from tokcaliper.model.specdec import SpecCounts

PREFIX = "vllm:"
PREFIX_CACHE_HITS = "vllm:prefix_cache_hits_total"
PREFIX_CACHE_QUERIES = "vllm:prefix_cache_queries_total"

_LINE = re.compile(
    r"SpecDecoding metrics:\s*"
    r"(?:Mean acceptance length:\s*(?P<al>-?[0-9.]+|nan),\s*)?"
    r".*?Accepted:\s*(?P<acc>-?\d+)\s*tokens,\s*Drafted:\s*(?P<dft>-?\d+)\s*tokens"
    r"(?:,\s*Per-position acceptance rate:\s*(?P<pos>[0-9.,\s]+?)(?:,\s*Avg|$|\s*$))?",
)


def counts_from_counters(counters: Mapping[str, float]) -> SpecCounts | None:
    """Speculative counts from vLLM counters (None when it exposes none)."""
    return spec_decode_totals(counters, PREFIX, "vllm /metrics")


class VllmLogWindow(BaseModel):
    """One "SpecDecoding metrics" log line (one logging interval).

    Attributes:
        line: 1-based line number in the log.
        mean_acceptance_length: AL as logged (2 decimals), None in old formats.
        accepted, drafted: accepted and drafted tokens in the interval.
        per_position: per-position acceptance rates as logged (3 decimals).
        drafts: verification steps, recovered (see the module docstring); None
            when AL is not logged or is 1 with nothing accepted.
    """

    line: int
    mean_acceptance_length: float | None
    accepted: int
    drafted: int
    per_position: list[float]
    drafts: float | None


def parse_log(text: str) -> list[VllmLogWindow]:
    """Every "SpecDecoding metrics" line of a vLLM log, in order (other lines are skipped).

    A line in another format is skipped too (see :func:`unread_log_lines`); a line in
    this format whose figures cannot be (a negative count, more accepted than drafted
    tokens, AL below 1) is refused, since summing the file without it would be wrong.

    Raises:
        InputError: ``"line N: …"`` naming the impossible figure.
    """
    out: list[VllmLogWindow] = []
    for i, raw in enumerate(text.splitlines(), start=1):
        if "SpecDecoding metrics" not in raw:
            continue
        m = _LINE.search(raw)
        if m is None:
            continue
        try:
            al = float(m["al"]) if m["al"] and m["al"] != "nan" else None
        except ValueError:
            raise InputError(f"line {i}: mean acceptance length {m['al']!r} is not a number") from None
        acc, dft = int(m["acc"]), int(m["dft"])
        if acc < 0 or dft < 0:
            raise InputError(f"line {i}: Accepted {acc} / Drafted {dft} tokens: a token count cannot be "
                             "negative (a damaged log line?)")
        if acc > dft:
            raise InputError(f"line {i}: Accepted {acc} > Drafted {dft} tokens: no more tokens can be "
                             "accepted than were drafted")
        if al is not None and al < 1:
            raise InputError(f"line {i}: mean acceptance length {m['al']} < 1: every step emits at least "
                             "one token")
        pos = [float(x) for x in re.findall(r"[0-9]*\.?[0-9]+", m["pos"] or "")]
        drafts: float | None = None
        if pos and sum(pos) > 0:
            drafts = acc / sum(pos)
        elif al is not None and al > 1:
            drafts = acc / (al - 1)
        out.append(VllmLogWindow(line=i, mean_acceptance_length=al, accepted=acc, drafted=dft,
                                 per_position=pos, drafts=drafts))
    return out


def unread_log_lines(text: str) -> list[int]:
    """Line numbers that mention "SpecDecoding metrics" but are not in the known format."""
    return [i for i, raw in enumerate(text.splitlines(), start=1)
            if "SpecDecoding metrics" in raw and _LINE.search(raw) is None]


def counts_from_log(windows: list[VllmLogWindow]) -> SpecCounts | None:
    """Sum of the log windows as :class:`SpecCounts` (drafts recovered, not exact).

    Per-position accepted counts are ``rate_i × drafts`` per window, summed.
    Returns None when there is no window, or when no window lets the drafts be
    recovered (then only the acceptance rate is known: use the counts directly).
    """
    if not windows:
        return None
    usable = [w for w in windows if w.drafts is not None]
    if not usable:
        return None
    drafts = sum(w.drafts or 0.0 for w in usable)
    width = max(len(w.per_position) for w in usable)
    per_pos = [sum((w.per_position[i] * (w.drafts or 0.0)) if i < len(w.per_position) else 0.0 for w in usable)
               for i in range(width)] if width else []
    return SpecCounts(drafts=drafts, draft_tokens=float(sum(w.drafted for w in usable)),
                      accepted=float(sum(w.accepted for w in usable)), accepted_per_pos=per_pos,
                      source=f"vllm log ({len(usable)} of {len(windows)} interval(s); drafts recovered from "
                             "rounded AL/per-position rates)")


FAMILY = ServerFamily(
    name="vllm", label="vLLM", source="vLLM vllm/v1/spec_decode/metrics.py, vllm/v1/metrics/loggers.py",
    prefixes=(PREFIX,), counts=counts_from_counters, cache_counters=(PREFIX_CACHE_HITS, PREFIX_CACHE_QUERIES),
)
