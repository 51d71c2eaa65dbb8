"""Acceptance metrics of speculative decoding from counter differences (METHODS.md M6, M7).

Pure arithmetic: counts in, a pydantic result out; no I/O. The counts are
*differences* of a server's cumulative counters over one run (after − before),
never a server-side rolling average.

Definitions (Δ = after − before over the run; a "draft" is one verification
step of the target model on a drafted window):

* mean acceptance length ``AL = 1 + Δaccepted / Δdrafts`` — tokens emitted per
  verification step, the bonus token the target always adds included
  (Leviathan et al. 2023; llama.cpp's and vLLM's "mean acceptance length").
* acceptance rate ``= Δaccepted / Δdraft_tokens``.
* per-position acceptance ``[i] = Δaccepted_pos[i] / Δdrafts`` — share of
  steps whose draft token at position i (0-based) was accepted.
* effective draft window ``k_eff = Δdraft_tokens / Δdrafts`` (≤ the configured
  k: drafts are cut short near the end of a generation or by the drafter).
* tokens per verified position ``= AL / (k_eff + 1) = (Δdrafts + Δaccepted) /
  (Δdrafts + Δdraft_tokens)`` — each step verifies k_eff + 1 positions
  (METHODS.md M7: divide by what it spends).

Per request, an engine may report only totals: llama.cpp's
``timings.draft_n`` / ``draft_n_accepted``, SGLang's ``spec_verify_ct``. Then
``AL = output tokens / verification steps`` counts every forward pass of the
target that emitted tokens; see :class:`RequestAcceptance`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from tokcaliper.numbers import num

#: One line per metric, shown in ``tokcaliper spec --help`` and the docs.
DEFINITIONS: tuple[tuple[str, str], ...] = (
    ("AL", "mean acceptance length = 1 + Δaccepted / Δdrafts (tokens per verification step, bonus token included)"),
    ("acceptance rate", "Δaccepted / Δdraft_tokens"),
    ("per-position acceptance", "Δaccepted_pos[i] / Δdrafts (i = 0-based draft position)"),
    ("k_eff", "effective draft window = Δdraft_tokens / Δdrafts"),
    ("AL/(k+1)", "tokens per verified position = AL / (k_eff + 1) = (Δdrafts + Δaccepted) / (Δdrafts + Δdraft_tokens)"),
)

#: The limit printed with every acceptance result (METHODS.md M6).
LIMIT = ("AL answers only questions that change drafting (draft window k, draft model, method); "
         "it cannot see clocks, a power cap or anything else that changes speed but not prediction.")

#: Which column of a k-sweep is a proxy for cost (METHODS.md M7).
COST_PROXY = ("AL/(k+1) takes cost ∝ verified positions; that holds only while verification is "
              "compute-bound, not memory-bound — confirm with throughput.")

def definitions_text() -> str:
    """The definitions as plain lines ``name: formula`` (for ``--help`` and docs)."""
    return "\n".join(f"{name}: {formula}" for name, formula in DEFINITIONS)


class SpecCounts(BaseModel):
    """Speculative-decoding counts over one window (differences of cumulative counters).

    Attributes:
        drafts: verification steps that had a draft (Δdrafts), ≥ 0.
        draft_tokens: drafted tokens (Δdraft_tokens), ≥ 0.
        accepted: accepted drafted tokens (Δaccepted), ≥ 0.
        accepted_per_pos: Δaccepted at draft position i = 0, 1, … (empty if not exposed).
        source: where the counts come from (e.g. ``"llamacpp /metrics"``).
    """

    drafts: float = Field(ge=0)
    draft_tokens: float = Field(ge=0)
    accepted: float = Field(ge=0)
    accepted_per_pos: list[float] = Field(default_factory=list)
    source: str = ""


class AcceptanceMetrics(BaseModel):
    """Acceptance metrics of one window (see the module docstring for the formulas).

    Every ratio is None when its denominator is 0 (nothing was drafted).

    Attributes:
        counts: the input counts.
        al: mean acceptance length, tokens per verification step (1 ≤ AL ≤ k_eff + 1).
        acceptance_rate: accepted / drafted tokens, 0…1.
        per_position: acceptance per draft position, 0…1 each.
        k_eff: mean drafted tokens per step.
        tokens_per_position: AL / (k_eff + 1), 0…1.
        arithmetic: each formula with its numbers.
    """

    counts: SpecCounts
    al: float | None
    acceptance_rate: float | None
    per_position: list[float]
    k_eff: float | None
    tokens_per_position: float | None
    arithmetic: list[str]


def _n(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _four(x: float) -> str:
    """A quotient of counts to four decimals (at least four significant digits): ``3.0000``."""
    return num(x, 4, min_decimals=4)


def acceptance_metrics(counts: SpecCounts) -> AcceptanceMetrics:
    """AL, acceptance rate, per-position acceptance, k_eff and AL/(k_eff+1) of ``counts``.

    Raises:
        ValueError: accepted > draft_tokens (impossible counts, e.g. mixed windows).
    """
    d, t, a = counts.drafts, counts.draft_tokens, counts.accepted
    if a > t:
        raise ValueError(f"accepted {_n(a)} > drafted {_n(t)}: impossible counts")
    arith: list[str] = []
    al = rate = k_eff = per_pos_cost = None
    per_pos: list[float] = []
    if d > 0:
        al = 1 + a / d
        k_eff = t / d
        per_pos_cost = (d + a) / (d + t)
        per_pos = [x / d for x in counts.accepted_per_pos]
        arith.append(f"AL = 1 + Δaccepted/Δdrafts = 1 + {_n(a)}/{_n(d)} = {_four(al)}")
        arith.append(f"k_eff = Δdraft_tokens/Δdrafts = {_n(t)}/{_n(d)} = {_four(k_eff)}")
        arith.append(f"AL/(k_eff+1) = (Δdrafts+Δaccepted)/(Δdrafts+Δdraft_tokens) = "
                     f"{_n(d + a)}/{_n(d + t)} = {_four(per_pos_cost)}")
    else:
        arith.append("Δdrafts = 0: no verification step had a draft; AL undefined")
    if t > 0:
        rate = a / t
        arith.append(f"acceptance rate = Δaccepted/Δdraft_tokens = {_n(a)}/{_n(t)} = {_four(rate)}")
    return AcceptanceMetrics(counts=counts, al=al, acceptance_rate=rate, per_position=per_pos,
                             k_eff=k_eff, tokens_per_position=per_pos_cost, arithmetic=arith)


class RequestAcceptance(BaseModel):
    """Acceptance of one request, from the per-response fields an engine returns.

    Attributes:
        output_tokens: tokens generated for the request.
        draft_tokens: drafted tokens (llama.cpp ``timings.draft_n``; SGLang
            ``spec_num_proposed_drafts``), None when not reported.
        accepted: accepted drafted tokens (llama.cpp ``draft_n_accepted``;
            SGLang ``spec_num_correct_drafts``), None when not reported.
        verify_steps: target forward passes that emitted tokens (SGLang
            ``spec_verify_ct``; llama.cpp: output tokens − accepted, since
            each pass — the prompt pass included — emits its accepted drafts
            plus one token).
        al: output tokens / verify steps. Passes without a draft (the prompt
            pass, the last step) count as AL 1, so this sits below the
            counter AL ``1 + Δaccepted/Δdrafts`` by a few percent on short replies.
        acceptance_rate: accepted / draft tokens.
        engine_al: the engine's own per-request AL when it reports one
            (SGLang ``spec_accept_length``), for comparison only.
    """

    output_tokens: int
    draft_tokens: int | None = None
    accepted: int | None = None
    verify_steps: int | None = None
    al: float | None = None
    acceptance_rate: float | None = None
    engine_al: float | None = None


def request_acceptance(output_tokens: int, *, draft_tokens: int | None = None, accepted: int | None = None,
                       verify_steps: int | None = None, engine_al: float | None = None) -> RequestAcceptance:
    """Build a :class:`RequestAcceptance`, deriving AL and rate where the counts allow.

    ``verify_steps`` defaults to ``output_tokens − accepted`` (every target
    pass emits its accepted drafts + 1 token; llama.cpp's per-response timings).
    """
    if verify_steps is None and accepted is not None and output_tokens > 0:
        verify_steps = output_tokens - accepted
    al = output_tokens / verify_steps if verify_steps else None
    rate = accepted / draft_tokens if (draft_tokens and accepted is not None) else None
    return RequestAcceptance(output_tokens=output_tokens, draft_tokens=draft_tokens, accepted=accepted,
                             verify_steps=verify_steps, al=al, acceptance_rate=rate, engine_al=engine_al)


def pooled_request_acceptance(requests: Sequence[RequestAcceptance]) -> RequestAcceptance | None:
    """One run's totals from its requests: counts summed, ratios of the sums.

    Summing before dividing weights each request by its length; a mean of
    per-request ratios would weigh a 10-token reply like a 1000-token one.
    Returns None when no request carries verification counts.
    """
    rows = [r for r in requests if r.verify_steps]
    if not rows:
        return None
    out = sum(r.output_tokens for r in rows)
    steps = sum(int(r.verify_steps or 0) for r in rows)
    with_drafts = [r for r in rows if r.draft_tokens is not None and r.accepted is not None]
    dt = sum(int(r.draft_tokens or 0) for r in with_drafts) if with_drafts else None
    acc = sum(int(r.accepted or 0) for r in with_drafts) if with_drafts else None
    return request_acceptance(out, draft_tokens=dt, accepted=acc, verify_steps=steps)

