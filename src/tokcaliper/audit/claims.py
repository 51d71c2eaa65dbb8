"""What a record claims, read one way by every check: its rate and its realistic AL.

Two readings used to be restated check by check; each now has one function.

* :func:`record_rate` — the tok/s figure of a record, for one of three uses:

  - ``"claimed"``: the record's headline figure — the per-stream decode rate
    when published, else the aggregate throughput (A4 ranks records by it;
    A7 ``diff`` divides two of them);
  - ``"per_stream"``: the rate one stream decoded at — ``tok_s_decode``, or
    the aggregate only when a single stream ran (batch 1 or concurrency 1),
    since the aggregate of many streams is not one stream's rate (A3
    roofline, A11 multiplier);
  - ``"throughput"``: the rate ``output_tokens ÷ seconds`` must reproduce —
    the aggregate when published (the totals add up over every stream), else
    the per-stream decode rate (A5).

* :func:`realistic_al` — the acceptance length a speculative method can
  reach on real tasks: ``min(k + 1, claimed AL, 5.46)``. 5.46 is DFlash's
  published mean AL on GSM8K, the highest on a real task
  (:data:`~tokcaliper.audit.constants.REALISTIC_AL`, METHODS.md A3: "the
  bound scales by a realistic AL ≈5.46"); k + 1 is the most tokens one
  verification step can emit (k drafts + the bonus token, METHODS.md A1);
  a published AL (or the low end of a published range) caps it further.
  A3 scales the roofline by it; A11 uses it as the multiplier's ceiling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tokcaliper.audit.constants import REALISTIC_AL, REALISTIC_AL_SOURCE
from tokcaliper.model.record import Record, SpeculativeInfo
from tokcaliper.numbers import compact

RateUse = Literal["claimed", "per_stream", "throughput"]


def record_rate(record: Record, use: RateUse = "claimed") -> float | None:
    """The record's rate in tok/s for ``use`` (see the module docstring), or None.

    Args:
        record: the record.
        use: ``"claimed"`` (decode, else aggregate), ``"per_stream"`` (decode,
            else aggregate of a single stream), ``"throughput"`` (aggregate,
            else decode).

    Returns:
        tok/s, or None when the record publishes no rate fit for ``use``.

    Raises:
        ValueError: an unknown ``use``.
    """
    dec, agg = record.tok_s_decode, record.tok_s_aggregate
    if use == "claimed":
        return dec if dec is not None else agg
    if use == "per_stream":
        if dec is not None:
            return dec
        single = record.batch_size == 1 or record.concurrency == 1
        return agg if agg is not None and single else None
    if use == "throughput":
        return agg if agg is not None else dec
    raise ValueError(f"unknown rate use {use!r}: choose claimed, per_stream or throughput")


@dataclass(frozen=True)
class RealisticAL:
    """A realistic acceptance length and the terms of its minimum.

    Attributes:
        al: ``min`` of the terms (tokens per verification step, bonus included).
        terms: each candidate as printed (``"5.46 (DFlash GSM8K)"``, ``"k+1 = 9"``,
            ``"claimed AL 4.2"``), in that order.
    """

    al: float
    terms: tuple[str, ...]

    @property
    def arithmetic(self) -> str:
        """``"min(5.46 (DFlash GSM8K), k+1 = 9) = 5.46"`` (3 significant figures)."""
        return f"min({', '.join(self.terms)}) = {compact(self.al, 3)}"


def realistic_al(spec: SpeculativeInfo) -> RealisticAL:
    """``min(5.46, k + 1, claimed AL)`` for a record's speculative decoding.

    Args:
        spec: the record's speculative block; ``window_k`` and ``al`` (or
            ``al_min``) join the minimum when published.

    Returns:
        :class:`RealisticAL`. Source of 5.46: DFlash GSM8K (METHODS.md A1, A3).
    """
    cands, terms = [REALISTIC_AL], [f"{REALISTIC_AL:g} ({REALISTIC_AL_SOURCE})"]
    if spec.window_k:
        cands.append(spec.window_k + 1)
        terms.append(f"k+1 = {spec.window_k + 1}")
    al = spec.al if spec.al is not None else spec.al_min
    if al is not None:
        cands.append(al)
        terms.append(f"claimed AL {compact(al, 4)}")
    return RealisticAL(min(cands), tuple(terms))
