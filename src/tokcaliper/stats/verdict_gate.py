"""The verdict gate: when may a comparison say faster, slower or equivalent?

A comparison earns a direction only when two things hold at once (after
criterion.rs' "change within noise threshold"):

- ``faster`` / ``slower``: the deciding test's p < α **and** the whole CI of
  the ratio b/a lies outside the noise band ``[1 − band, 1 + band]`` (default
  ±1%): a significant 0.3% change is real but too small to act on. The
  direction comes from the metric: for a higher-is-better metric (throughput)
  a ratio above 1 is "faster"; for a lower-is-better one (TTFT, ITL) a ratio
  below 1 is.
- ``equivalent`` within ±E: only when the user gave a margin E and the TOST
  passes (Schuirmann 1987; :mod:`tokcaliper.stats.equivalence`).
- otherwise ``inconclusive``, which always says what these runs can resolve
  (MDE) and how many runs per arm would be needed — never "no difference".

Pure function, no I/O.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, Field

from tokcaliper.errors import InputError
from tokcaliper.numbers import p_value, percent
from tokcaliper.numbers import ratio as fmt_ratio
from tokcaliper.stats.equivalence import TostResult

__all__ = ["GateResult", "VerdictClass", "check_noise_band", "gate", "gate_difference", "reading",
           "tost_reason", "verdict_class"]

VerdictClass = Literal["faster", "slower", "equivalent", "inconclusive"]

#: Default noise band: changes whose CI reaches within ±1% of "no change" are
#: not reported as faster/slower (a convention, configurable per comparison).
DEFAULT_NOISE_BAND = 0.01


class GateResult(BaseModel):
    """What the gate decided, and why.

    Attributes:
        verdict: faster / slower / equivalent / inconclusive.
        summary: one sentence with the numbers behind it.
        change: ratio − 1 (signed fraction of the baseline); for
            :func:`gate_difference` the difference b − a in the metric's unit.
        reasons: each rule and whether it held, one line per rule.
    """

    verdict: VerdictClass
    summary: str
    change: float
    reasons: list[str] = Field(default_factory=list)


def check_noise_band(band: float) -> None:
    """Raise :class:`InputError` unless 0 ≤ band < 1."""
    if isinstance(band, bool) or not (isinstance(band, (int, float)) and math.isfinite(band)
                                      and 0 <= band < 1):
        raise InputError(f"--noise-band must be a fraction between 0 and 1 (0.01 = ±1%), got {band}")


def _pct(x: float) -> str:
    return percent(x)


def _signed(x: float) -> str:
    return percent(x, signed=True)


def _ci(lo: float, hi: float) -> str:
    """A CI of a ratio: ``"0.950 … 1.050"``."""
    return f"{fmt_ratio(lo)} … {fmt_ratio(hi)}"


def reading(ratio: float, higher_is_better: bool, noise_band: float) -> str:
    """What the point estimate alone would say ("slower by 21.1%") — no test involved.

    Shown beside the running verdict so that an early, naive reading is visible
    as such (M4).
    """
    change = ratio - 1
    if abs(change) <= noise_band:
        return f"within the ±{_pct(noise_band)} noise band"
    better = change > 0 if higher_is_better else change < 0
    return f"{'faster' if better else 'slower'} by {_pct(abs(change))}"


def verdict_class(*, ratio: float, ci: tuple[float, float] | None, p: float | None,
                  alpha: float, higher_is_better: bool, noise_band: float,
                  equivalent: bool = False) -> VerdictClass:
    """The gate's rule alone, without its sentences (the verdict after each of many pairs).

    faster/slower when ``p < alpha`` and the CI lies wholly outside
    ``[1 − noise_band, 1 + noise_band]``; else equivalent when ``equivalent``
    (a passed TOST); else inconclusive. Inputs are not validated: :func:`gate`
    does that and uses this rule.
    """
    significant = p is not None and math.isfinite(p) and p < alpha
    outside = ci is not None and (ci[0] > 1 + noise_band or ci[1] < 1 - noise_band)
    if significant and outside:
        better = ratio > 1 if higher_is_better else ratio < 1
        return "faster" if better else "slower"
    return "equivalent" if equivalent else "inconclusive"


def tost_reason(tost: TostResult, p_used: float, *, adjusted: bool) -> str:
    """The TOST step of a verdict's arithmetic, every word read from the figures beside it.

    "inside"/"not inside" is decided from the printed ``1 − 2α`` CI and the
    bounds themselves, not from the p-value: a Holm-adjusted p can stay ≥ α
    while the unadjusted CI lies inside the margin, and the sentence then says
    both and which one governs (issue 26).

    Args:
        tost: the (unadjusted) equivalence test. p_used: the p the gate read.
        adjusted: ``p_used`` is Holm-adjusted (differs from ``tost.p``).

    Returns:
        e.g. ``"TOST ±10.0%: Holm-adjusted p = 0.088 ≥ α = 0.05 (unadjusted p = 0.029)
        governs; the unadjusted 90% CI [1.03 … 1.08] lies inside [0.900, 1.100]"``.
    """
    lo, hi = tost.bounds
    inside = lo <= tost.ci[0] and tost.ci[1] <= hi
    passed = p_used < tost.alpha
    lvl = f"{100 * (1 - 2 * tost.alpha):g}%"
    where = (f"{'the unadjusted ' if adjusted else ''}{lvl} CI [{_ci(*tost.ci)}] "
             f"{'lies inside' if inside else 'is not inside'} [{fmt_ratio(lo)}, {fmt_ratio(hi)}]")
    if adjusted:
        head = (f"Holm-adjusted p = {p_value(p_used)} {'<' if passed else '≥'} α = {tost.alpha:g} "
                f"governs (unadjusted p = {p_value(tost.p)})")
        if inside and not passed:
            where += ", but after the correction equivalence is not concluded"
    else:
        head = f"p = {p_value(p_used)} {'<' if passed else '≥'} α = {tost.alpha:g}"
    return f"TOST ±{_pct(tost.margin)}: {head}; {where}"


def gate(
    *,
    ratio: float,
    ci: tuple[float, float] | None,
    p: float | None,
    alpha: float,
    higher_is_better: bool,
    noise_band: float = DEFAULT_NOISE_BAND,
    tost: TostResult | None = None,
    tost_p: float | None = None,
    mde: float | None = None,
    runs_needed: int | None = None,
    target_effect: float | None = None,
    test_label: str = "p",
    advice: str | None = None,
) -> GateResult:
    """Decide the verdict class from one comparison's figures.

    Args:
        ratio: estimate of b/a (> 0). ci: its two-sided ``1 − alpha`` CI.
        p: two-sided p of the deciding test (Holm-adjusted when several metrics
            are compared), or ``None`` when undefined.
        alpha: level in (0, 1). higher_is_better: direction of the metric.
        noise_band: half-width of the band around 1 (fraction, default 0.01).
        tost: the equivalence test, when the user gave a margin.
        tost_p: TOST p to use instead of ``tost.p`` (Holm-adjusted), if any.
        mde: smallest relative difference these runs resolve (fraction).
        runs_needed: runs per arm to resolve ``target_effect``.
        target_effect: the relative difference ``runs_needed`` refers to.
        test_label: how to name p in the text, e.g. "paired p".
        advice: the runs-needed sentence of an inconclusive verdict, when the
            caller computed it with the gate's power (replaces the plain
            "about N runs per arm" built from ``runs_needed``).

    Returns:
        :class:`GateResult`.

    Raises:
        InputError: ratio ≤ 0, alpha or noise band out of range.
    """
    if not (math.isfinite(ratio) and ratio > 0):
        raise InputError(f"the ratio of the arms must be positive, got {ratio}")
    if not 0 < alpha < 1:
        raise InputError(f"--alpha must be between 0 and 1 (exclusive), got {alpha}")
    check_noise_band(noise_band)
    change = ratio - 1
    lo_band, hi_band = 1 - noise_band, 1 + noise_band
    reasons: list[str] = []
    significant = p is not None and math.isfinite(p) and p < alpha
    reasons.append(f"{test_label} = {p_value(p)} {'<' if significant else '≥'} α = {alpha:g}"
                   if p is not None else f"{test_label} undefined (runs do not vary)")
    outside = ci is not None and (ci[0] > hi_band or ci[1] < lo_band)
    level = f"{100 * (1 - alpha):g}%"
    ci_txt = "no CI" if ci is None else f"{level} CI of the ratio [{_ci(*ci)}]"
    reasons.append(f"{ci_txt} {'lies outside' if outside else 'reaches into'} the noise band "
                   f"[{fmt_ratio(lo_band)}, {fmt_ratio(hi_band)}]" if ci is not None else ci_txt)
    equivalent = False
    if tost is not None:
        tp = tost.p if tost_p is None else tost_p
        equivalent = tp < tost.alpha
        reasons.append(tost_reason(tost, tp, adjusted=tost_p is not None and tost_p != tost.p))
    else:
        reasons.append("no equivalence margin given: 'equivalent' cannot be concluded")

    ci_short = "" if ci is None else f", {level} CI {_signed(ci[0] - 1)} … {_signed(ci[1] - 1)}"
    p_short = "" if p is None else f", {test_label} = {p_value(p)}"
    verdict = verdict_class(ratio=ratio, ci=ci, p=p, alpha=alpha,
                            higher_is_better=higher_is_better, noise_band=noise_band,
                            equivalent=equivalent and tost is not None)
    if verdict in ("faster", "slower"):
        summary = f"{verdict} by {_pct(abs(change))} (ratio {fmt_ratio(ratio)}{ci_short}{p_short})"
        if equivalent and tost is not None:
            summary += f"; also within the ±{_pct(tost.margin)} equivalence margin"
        return GateResult(verdict=verdict, summary=summary, change=change, reasons=reasons)
    if verdict == "equivalent" and tost is not None:
        tp = tost.p if tost_p is None else tost_p
        summary = (f"equivalent within ±{_pct(tost.margin)} (ratio {fmt_ratio(ratio)}, "
                   f"{100 * (1 - 2 * tost.alpha):g}% CI {_signed(tost.ci[0] - 1)} … "
                   f"{_signed(tost.ci[1] - 1)}, TOST p = {p_value(tp)})")
        return GateResult(verdict="equivalent", summary=summary, change=change, reasons=reasons)

    why = ""
    if significant and not outside:
        why = f" (significant{p_short}, but the CI reaches into the ±{_pct(noise_band)} noise band)"
    # A verdict needs the whole CI beyond the band: with a CI half-width of
    # about the MDE, changes below band + MDE cannot be called (issue 17 item 3).
    mde_txt = ("" if mde is None else
               f"changes below ±{_pct(noise_band + mde)} (noise band ±{_pct(noise_band)} + MDE "
               f"±{_pct(mde)}) cannot be called with these runs")
    need_txt = advice or ""
    if advice is None and runs_needed is not None and target_effect is not None:
        need_txt = (f"about {runs_needed} runs per arm would be needed to resolve "
                    f"±{_pct(target_effect)}")
    tail = "; ".join(x for x in (mde_txt, need_txt) if x)
    summary = (f"inconclusive: ratio {fmt_ratio(ratio)} ({_signed(change)}{ci_short}{p_short}){why}"
               + (f"; {tail}" if tail else ""))
    return GateResult(verdict="inconclusive", summary=summary, change=change, reasons=reasons)


def gate_difference(
    *,
    diff: float,
    ci: tuple[float, float] | None,
    p: float | None,
    alpha: float,
    higher_is_better: bool,
    noise_abs: float,
    unit: str = "",
    mde: float | None = None,
    advice: str | None = None,
    test_label: str = "p",
) -> GateResult:
    """The gate on the difference scale: b − a against an absolute noise floor (issue 17 item 5).

    faster/slower only when p < α **and** the whole CI of b − a lies outside
    ``[−noise_abs, +noise_abs]`` (the metric's unit); otherwise inconclusive
    with "changes below ±(noise_abs + MDE) cannot be called" and ``advice``.
    "equivalent" is never concluded here (the margin is relative).

    Args:
        diff: b − a (unit). ci: its two-sided ``1 − alpha`` CI. p: deciding p.
        alpha: level in (0, 1). higher_is_better: direction of the metric.
        noise_abs: half-width of the band around 0 (≥ 0, unit). unit: for the text.
        mde: smallest difference these runs resolve (unit). advice: runs-needed sentence.
        test_label: how to name p ("paired p").

    Raises:
        InputError: alpha out of range, noise_abs < 0 or a non-finite difference.
    """
    if not 0 < alpha < 1:
        raise InputError(f"--alpha must be between 0 and 1 (exclusive), got {alpha}")
    if not (math.isfinite(noise_abs) and noise_abs >= 0) or not math.isfinite(diff):
        raise InputError(f"--noise-abs must be ≥ 0 and the difference finite, got {noise_abs}, {diff}")
    from tokcaliper.numbers import num

    u = f" {unit}" if unit else ""

    def q(x: float, signed: bool = False) -> str:
        return num(x, 3, signed=signed) + u

    reasons: list[str] = []
    significant = p is not None and math.isfinite(p) and p < alpha
    reasons.append(f"{test_label} = {p_value(p)} {'<' if significant else '≥'} α = {alpha:g}"
                   if p is not None else f"{test_label} undefined (runs do not vary)")
    outside = ci is not None and (ci[0] > noise_abs or ci[1] < -noise_abs)
    level = f"{100 * (1 - alpha):g}%"
    if ci is None:
        reasons.append("no CI")
    else:
        reasons.append(f"{level} CI of b − a [{q(ci[0], True)} … {q(ci[1], True)}] "
                       f"{'lies outside' if outside else 'reaches into'} the noise floor "
                       f"[{q(-noise_abs)}, {q(noise_abs)}]")
    reasons.append("difference scale: 'equivalent' is not concluded (the margin is relative)")
    ci_short = "" if ci is None else f", {level} CI {q(ci[0], True)} … {q(ci[1], True)}"
    p_short = "" if p is None else f", {test_label} = {p_value(p)}"
    if significant and outside:
        better = diff > 0 if higher_is_better else diff < 0
        verdict: VerdictClass = "faster" if better else "slower"
        summary = (f"{verdict} by {q(abs(diff))} (b − a = {q(diff, True)}{ci_short}{p_short}; "
                   f"noise floor ±{q(noise_abs)})")
        return GateResult(verdict=verdict, summary=summary, change=diff, reasons=reasons)
    why = ""
    if significant and not outside:
        why = f" (significant{p_short}, but the CI reaches into the ±{q(noise_abs)} noise floor)"
    mde_txt = ("" if mde is None else
               f"changes below ±{q(noise_abs + mde)} (noise floor ±{q(noise_abs)} + MDE ±{q(mde)}) "
               "cannot be called with these runs")
    tail = "; ".join(x for x in (mde_txt, advice or "") if x)
    summary = (f"inconclusive: b − a = {q(diff, True)}{ci_short}{p_short}{why}"
               + (f"; {tail}" if tail else ""))
    return GateResult(verdict="inconclusive", summary=summary, change=diff, reasons=reasons)
