"""A1 — acceptance length ÷ draft window, and accepted == drafted (METHODS.md A1).

Convention assumed: AL counts the bonus token — it is the mean number of
tokens emitted per verification step (accepted drafts + the one token the
target model always adds), the convention of Leviathan et al. 2023, DFlash
and InferenceX. Its range is therefore 1 ≤ AL ≤ k + 1: AL < 1 is impossible
(every step emits at least the bonus token) and AL > k + 1 is impossible
(at most k drafts + 1). A source that counts accepted drafts only (range
0…k) must say so; under this convention its AL reads 1 too low, and A1
fails it with both readings shown.

Formulas:

* ``AL / k`` as the source writes it (DFlash's real AL 4–6 over a 56-wide
  window gives 0.08–0.10; 56.0/56 = 1.000 means the output was predictable by
  construction). AL exactly k or k + 1 (the ceiling without / with the bonus
  token) — a metric at its theoretical upper bound — fails.
* The per-position acceptance probability ``p`` implied by AL under the
  standard i.i.d. model (Leviathan et al. 2023, "Fast Inference from
  Transformers via Speculative Decoding", eq. 1):
  ``AL = (1 − p^(k+1)) / (1 − p)`` (bonus token included), solved by bisection.
  This keeps small windows fair: MTP k=1 with AL 1.93 is p = 0.93, the highest
  published figure; p ≥ 0.99 fails, p ≥ 0.95 warns.
* Counts: acceptance rate ``accepted / drafted``. All drafted tokens accepted
  has probability ``p_max^drafted`` (every position accepted); with a generous
  p_max = 0.95, drafted ≥ 135 makes it < 0.001 → fail (e.g. 383/383, 767/767).
"""

from __future__ import annotations

from tokcaliper import numbers as fmt
from tokcaliper.audit.checks._common import CheckContext, FindingLog, na
from tokcaliper.audit.constants import (
    A1_ALL_ACCEPTED_ALPHA,
    A1_FAIL_P,
    A1_WARN_P,
    DFLASH_SOURCE,
    GOLDEN_AL_SOURCE,
)
from tokcaliper.audit.forced_acceptance import find_forced_acceptance
from tokcaliper.model.verdict import Finding, Status, Verdict
from tokcaliper.model.specdec_flags import PREDICTABLE, al_at_ceiling, all_drafts_accepted
from tokcaliper.numbers import compact, fixed

CHECK, TITLE = "A1", "acceptance length ÷ draft window"

#: Published AL is rounded (typically to 2 decimals): AL within this of k or k + 1 sits at the bound.
A1_AL_ROUNDING = 0.005


def _p(p: float) -> str:
    """An implied per-position acceptance probability to three decimals (``0.930``)."""
    return fmt.num(p, 3, min_decimals=3)


def implied_accept_p(al: float, k: int) -> float:
    """Per-position acceptance p with ``(1 − p^(k+1)) / (1 − p) = al`` (0 ≤ p ≤ 1).

    Args:
        al: mean acceptance length, bonus token included (1 ≤ al ≤ k+1).
        k: draft window.

    Returns:
        p in [0, 1]; 0 for al ≤ 1, 1 for al ≥ k+1. Bisection to 1e-9.
    """
    if al <= 1:
        return 0.0
    if al >= k + 1:
        return 1.0

    def expected(p: float) -> float:
        return float(k + 1) if p >= 1 else (1 - p ** (k + 1)) / (1 - p)

    lo, hi = 0.0, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if expected(mid) < al:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def check(ctx: CheckContext) -> Verdict:
    """A1 verdict for one record.

    Returns:
        fail when a launch setting forces acceptance (:mod:`tokcaliper.audit.forced_acceptance`);
        n/a without speculative decoding or without AL/counts; fail when AL < 1, AL = k or k+1,
        AL > k+1, implied p ≥ 0.99, accepted > drafted, or all of ≥ 135 drafted
        tokens accepted; warn for p ≥ 0.95 or all of fewer drafted accepted.
    """
    rec = ctx.record
    forced = find_forced_acceptance({"launch command": rec.launch_command, "environment": rec.environment,
                                     "notes": rec.notes})
    if forced:
        what = "; ".join(f.describe() for f in forced)
        als = [f.implied_al for f in forced if f.implied_al is not None]
        arith = [f"{f.describe()}" + (f" → AL set to {compact(f.implied_al, 4)}" if f.implied_al is not None else "")
                 for f in forced]
        if rec.speculative is not None and rec.speculative.al is not None and als:
            arith.append(f"published AL {compact(rec.speculative.al, 4)} vs configured {compact(als[0], 4)}")
        text = (f"acceptance set by configuration ({what}): the AL is an input, not a measurement; "
                "any speed-up claimed from it is not measured")
        return Verdict(check=CHECK, title=TITLE, status=Status.FAIL,
                       findings=[Finding(code="A1.forced_acceptance", status=Status.FAIL, text=text,
                                         figures={"al_configured": als[0] if als else None})],
                       arithmetic=arith,
                       inputs={"forced_acceptance": [f.__dict__ for f in forced],
                               "al_configured": als[0] if als else None},
                       sources=["engine test knobs that fix acceptance (tokcaliper.audit.forced_acceptance)"])
    spec = rec.speculative
    if spec is None:
        return na(CHECK, TITLE, "no speculative decoding in this record")
    k = spec.window_k
    al = spec.al if spec.al is not None else spec.al_min
    al_label = "AL" if spec.al is not None else "AL (lower end of published range)"
    drafted, accepted = spec.drafted, spec.accepted
    inputs = {"method": spec.method, "window_k": k, "al": spec.al, "al_min": spec.al_min,
              "al_max": spec.al_max, "drafted": drafted, "accepted": accepted}
    if al is None and (drafted is None or accepted is None):
        return na(CHECK, TITLE, "speculative decoding used, but neither AL nor drafted/accepted counts "
                  "were published", inputs)
    arith: list[str] = []
    log = FindingLog(CHECK)
    found = log.add


    inputs["al_convention"] = "bonus token included (1 ≤ AL ≤ k+1)"
    if al is not None and al < 1:
        arith.append(f"{al_label} = {compact(al, 4)} < 1: every verification step emits at least the bonus token, "
                     "so AL ≥ 1 (convention: AL counts the bonus token)")
        if k:
            arith.append(f"range with the bonus token: 1 ≤ AL ≤ k+1 = {k + 1}; if the source counts accepted "
                         f"drafts only, AL + 1 = {compact(al + 1, 4)} tokens per step")
        found("al_below_one", Status.FAIL,
              f"AL {compact(al)} < 1: impossible when AL counts the bonus token (the convention assumed; "
              "a source counting accepted drafts only must say so)", al=al)
    elif al is not None and k:
        ratio = al / k
        inputs["al_over_window"] = ratio
        arith.append(f"{al_label} / k = {compact(al, 4)} / {k} = {fixed(ratio)}")
        if al > k + 1:
            arith.append(f"ceiling with the bonus token: k + 1 = {k} + 1 = {k + 1} < {compact(al, 4)}")
            found("al_above_ceiling", Status.FAIL,
                  f"AL {compact(al)} exceeds its ceiling k+1 = {k + 1}: impossible (even counting the "
                  "bonus token)", al=al, window_k=k)
        elif al_at_ceiling(al, k, tol=A1_AL_ROUNDING, without_bonus_too=True):
            p = implied_accept_p(al, k)
            inputs["implied_accept_p"] = p
            ceiling = (f"AL = k + 1 = {k + 1}, the ceiling counting the bonus token (as A3 uses)"
                       if abs(al - (k + 1)) <= abs(al - k) else
                       f"AL = k = {k}, the ceiling if the source counts accepted drafts only "
                       f"(k + 1 = {k + 1} with the bonus token, as A3 uses)")
            found("al_at_ceiling", Status.FAIL, f"AL/k = {fixed(ratio)}: {ceiling} — {PREDICTABLE} "
                  "(n-gram copy, repetition)", al=al, window_k=k, al_over_window=ratio)
        else:
            p = implied_accept_p(al, k)
            inputs["implied_accept_p"] = p
            arith.append(f"solve (1 − p^{k + 1}) / (1 − p) = {compact(al, 4)} → p = {_p(p)} per position")
            if p >= A1_FAIL_P:
                found("implied_p_fail", Status.FAIL,
                      f"implied acceptance p = {_p(p)} ≥ {A1_FAIL_P}: near-perfect prediction", implied_accept_p=p)
            elif p >= A1_WARN_P:
                found("implied_p_warn", Status.WARN,
                      f"implied acceptance p = {_p(p)} ≥ {A1_WARN_P}, above the published 0.93", implied_accept_p=p)
            else:
                found("al_plausible", Status.PASS,
                      f"AL/k = {fixed(ratio)} (p = {_p(p)}) is in the range real tasks give",
                      al_over_window=ratio, implied_accept_p=p)
    elif al is not None:
        arith.append(f"{al_label} = {compact(al, 4)}; window k not published → AL/k not computable")
        found("window_unknown", Status.WARN, "draft window k not published")
    if drafted is not None and accepted is not None:
        if drafted == 0:
            arith.append("drafted = 0: nothing was drafted")
            found("nothing_drafted", Status.WARN, "no tokens were drafted")
        else:
            rate = accepted / drafted
            inputs["acceptance_rate"] = rate
            arith.append(f"acceptance rate = accepted / drafted = {accepted} / {drafted} = {fixed(rate)}")
            if accepted > drafted:
                found("accepted_above_drafted", Status.FAIL, "more tokens accepted than drafted: impossible counts",
                      drafted=drafted, accepted=accepted)
            elif all_drafts_accepted(drafted, accepted):
                chance = A1_WARN_P ** drafted
                inputs["chance_all_accepted"] = chance
                arith.append(f"P(all {drafted} accepted | p ≤ {A1_WARN_P}) = {A1_WARN_P}^{drafted} = "
                             f"{fmt.num(chance, 2)}")
                if chance < A1_ALL_ACCEPTED_ALPHA:
                    found("all_accepted", Status.FAIL,
                          f"accepted == drafted ({accepted}/{drafted}): every draft token accepted — {PREDICTABLE}",
                          drafted=drafted, chance_all_accepted=chance)
                else:
                    found("all_accepted_few", Status.WARN,
                          f"accepted == drafted ({accepted}/{drafted}), too few tokens to be sure",
                          drafted=drafted, chance_all_accepted=chance)
            elif rate >= A1_WARN_P:
                found("rate_high", Status.WARN, f"acceptance rate {fixed(rate)} ≥ {A1_WARN_P}", acceptance_rate=rate)
            else:
                log.note(Status.PASS)
    if not log.findings:
        found("plausible", Status.PASS, "acceptance figures are plausible")
    return Verdict(check=CHECK, title=TITLE, status=log.status, findings=log.findings, arithmetic=arith,
                   inputs=inputs,
                   sources=[DFLASH_SOURCE, GOLDEN_AL_SOURCE,
                            "p model: Leviathan et al. 2023, E[tokens/step] = (1 − p^(k+1)) / (1 − p)"])
