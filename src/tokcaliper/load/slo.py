"""Service-level objectives: parsing ``--slo`` and a run's attainment and goodput (pure).

An SLO set is ``KIND=VALUE`` items separated by commas, each value a positive
number with its unit, ``ms`` or ``s``: ``ttft=200ms,tpot=50ms,e2e=10s``.
Kinds, each judged per request against its bound (a value equal to the
bound meets it):

* ``ttft`` — time to first token, send → first generated token;
* ``tpot`` — time per output token, (E2E − TTFT) ÷ (output tokens − 1), the
  definition of vLLM's ``bench serve --goodput``; a request with fewer
  than 2 output tokens has no TPOT and meets it (vLLM counts its TPOT as 0);
* ``itl`` — the largest gap between consecutive text chunks of the request
  (the worst stall its user saw); a request with one chunk meets it;
* ``e2e`` — send → end of stream.

A request *meets the SLOs* when it completed and meets every one; a failed
request misses them all. Attainment = requests meeting the SLOs ÷ measured
requests (completed + failed), with a Wilson 95 % interval over the run's
requests (:mod:`tokcaliper.stats.proportion`). Goodput follows vLLM's
``bench serve`` (``request_goodput`` = good requests ÷ the run's duration)
and DistServe (Zhong et al., OSDI 2024, "goodput: requests per second that
meet the SLOs"): goodput req/s = requests meeting the SLOs ÷ the run's wall
time; goodput tok/s = their output tokens ÷ the same wall time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from tokcaliper.model.run import RequestRecord, SloAttainment

__all__ = ["SLO_KINDS", "format_slo", "meets", "parse_slo", "slo_attainment"]

#: The SLO kinds, in display order.
SLO_KINDS = ("ttft", "tpot", "itl", "e2e")
_UNITS = {"ms": 1e-3, "s": 1.0}
_ITEM = re.compile(r"^\s*([A-Za-z0-9_]+)\s*=\s*([^\s]+?)\s*(ms|s)?\s*$")
#: Largest SLO bound, s (beyond it a value is a typo: a day).
MAX_SLO_S = 86400.0


def parse_slo(text: str) -> dict[str, float]:
    """``"ttft=200ms,tpot=50ms,e2e=10s"`` → ``{"ttft": 0.2, "tpot": 0.05, "e2e": 10.0}`` (seconds).

    Raises:
        ValueError: one sentence naming the culprit item — empty text or item,
            unknown kind, a kind given twice, a missing unit, a value that is not
            a finite number in (0, 1 day].
    """
    if not text.strip():
        raise ValueError("is empty; give KIND=VALUE items such as ttft=200ms,tpot=50ms,e2e=10s")
    out: dict[str, float] = {}
    for item in text.split(","):
        if not item.strip():
            raise ValueError(f"has an empty item in {text!r}; separate KIND=VALUE items by single commas")
        m = _ITEM.match(item)
        if m is None or "=" not in item:
            raise ValueError(f"item {item.strip()!r} is not KIND=VALUE with a unit (e.g. ttft=200ms)")
        kind, number, unit = m.group(1).lower(), m.group(2), m.group(3)
        if kind not in SLO_KINDS:
            raise ValueError(f"item {item.strip()!r}: unknown SLO {kind!r}; choose {', '.join(SLO_KINDS)}")
        if kind in out:
            raise ValueError(f"gives {kind} twice")
        if unit is None:
            raise ValueError(f"item {item.strip()!r} needs a unit, ms or s (e.g. {kind}=200ms)")
        try:
            value = float(number)
        except ValueError:
            raise ValueError(f"item {item.strip()!r}: {number!r} is not a number") from None
        seconds = value * _UNITS[unit]
        if not math.isfinite(seconds) or seconds <= 0 or seconds > MAX_SLO_S:
            raise ValueError(f"item {item.strip()!r}: the bound must be > 0 and at most "
                             f"{MAX_SLO_S:g} s, got {number}{unit}")
        out[kind] = seconds
    return {k: out[k] for k in SLO_KINDS if k in out}


def format_slo(slo_s: dict[str, float]) -> str:
    """``{"ttft": 0.2, "e2e": 10.0}`` → ``"ttft ≤ 200 ms, e2e ≤ 10 s"``."""
    from tokcaliper.numbers import num

    return ", ".join(f"{k} ≤ {num(v * 1000, trim=True)} ms" if v < 1 else f"{k} ≤ {num(v, trim=True)} s"
                     for k, v in slo_s.items())


def _value(rec: RequestRecord, kind: str) -> float | None:
    """The request's figure for SLO ``kind``, s; None when it has none (it then meets it)."""
    if kind == "ttft":
        return rec.ttft_s
    if kind == "e2e":
        return rec.e2e_s
    if kind == "tpot":
        if rec.output_tokens < 2 or rec.ttft_s is None or rec.e2e_s is None:
            return None
        return (rec.e2e_s - rec.ttft_s) / (rec.output_tokens - 1)
    if kind == "itl":
        return max(rec.itl_s) if rec.itl_s else None
    raise ValueError(f"unknown SLO kind {kind!r}")


def meets(rec: RequestRecord, slo_s: dict[str, float]) -> list[str]:
    """The SLO kinds a request misses (empty: it meets them all).

    A failed request misses every kind; a completed one without a TTFT or
    E2E stamp misses the ``ttft`` / ``e2e`` SLO it was asked for.
    """
    if not rec.ok:
        return list(slo_s)
    missed = []
    for kind, bound in slo_s.items():
        v = _value(rec, kind)
        if v is None and kind in ("ttft", "e2e"):
            missed.append(kind)
        elif v is not None and v > bound:
            missed.append(kind)
    return missed


def slo_attainment(measured: Sequence[RequestRecord], slo_s: dict[str, float], wall_s: float) -> SloAttainment:
    """Attainment and goodput of one run's measured requests (warm-up excluded by the caller).

    Args:
        measured: the run's measured requests, failed ones included.
        slo_s: bounds by kind, seconds (:func:`parse_slo`).
        wall_s: the run's wall time, s (the denominator of its throughputs).
    """
    from tokcaliper.stats.proportion import wilson_interval

    good = [r for r in measured if r.ok and not meets(r, slo_s)]
    missed = {k: sum(1 for r in measured if r.ok and k in meets(r, slo_s)) for k in slo_s}
    n = len(measured)
    return SloAttainment(
        slo_s=dict(slo_s), n=n, met=len(good), failed=sum(1 for r in measured if not r.ok),
        missed=missed, attainment=len(good) / n if n else None, ci95=wilson_interval(len(good), n),
        goodput_rps=len(good) / wall_s if wall_s > 0 else None,
        goodput_tok_s=sum(r.output_tokens for r in good) / wall_s if wall_s > 0 else None,
    )
