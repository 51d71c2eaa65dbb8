"""Hugging Face Text Generation Inference (TGI): the speculated-tokens histogram on ``/metrics``.

TGI's metrics (``docs/source/reference/metrics.md``) carry speculation only as
``tgi_request_skipped_tokens``, a histogram "Speculated tokens per request": the
router records ``n − 1`` for every generation step of every request, ``n`` being
the tokens that step emitted (``send_responses`` in ``router/src/infer``). Its
``_sum`` and ``_count`` are cumulative, so over a run's window

* Δcount = target steps (the prefill step, emitting one token, included),
* Δsum = accepted speculated tokens,
* tokens per step = (Δcount + Δsum) ÷ Δcount — the per-request AL of
  :class:`~tokcaliper.model.specdec.RequestAcceptance`, every step counted.

TGI does not count drafted tokens nor steps that had a draft, so no acceptance
rate, k_eff or counter AL ``1 + Δaccepted/Δdrafts`` can be formed. No prefix-cache
counter and no per-response field is read.
"""

from __future__ import annotations

from collections.abc import Mapping

from tokcaliper.model.families._base import ServerFamily
from tokcaliper.model.metric_keys import total
from tokcaliper.model.specdec import RequestAcceptance, request_acceptance

PREFIX = "tgi_"
SKIPPED = "tgi_request_skipped_tokens"


def steps_from_counters(counters: Mapping[str, float]) -> RequestAcceptance | None:
    """Tokens per target step over the run from ``tgi_request_skipped_tokens_sum`` / ``_count``.

    Returns:
        None when either sample is missing or no step was counted.
    """
    steps, accepted = total(counters, SKIPPED + "_count"), total(counters, SKIPPED + "_sum")
    if steps is None or accepted is None or steps <= 0:
        return None
    return request_acceptance(int(steps + accepted), accepted=int(accepted), verify_steps=int(steps))


FAMILY = ServerFamily(
    name="tgi", label="Hugging Face TGI",
    source="text-generation-inference docs/source/reference/metrics.md; router send_responses",
    prefixes=(PREFIX,), step_acceptance=steps_from_counters, histograms=(SKIPPED,),
    no_counts_note=("TGI counts accepted speculated tokens per step (tgi_request_skipped_tokens), "
                    "not drafted tokens: only tokens per step is known"),
)
