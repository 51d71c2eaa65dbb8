"""The closing summary of a comparison: one or two plain lines a newcomer reads last (issue 26).

Every word is generated from the figures of the analysis it closes, never
typed beside them:

- ``result:`` which arm is better, in which direction, by how much with its CI,
  and whether the comparison is decided (the gate's verdict class, or the
  sequential rule's when it governs);
- ``next:`` the step sized to what was observed: stop when decided; when not,
  the pairs (or runs per arm) that would call a change of the *observed* size
  at power 0.8 (:func:`tokcaliper.stats.ab.needed_for`), or — when the observed
  change is inside the noise band — that no number of runs calls it.

Pure functions; text only (the views print these lines, ``--json`` carries them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokcaliper.numbers import num, p_value, percent

if TYPE_CHECKING:
    from tokcaliper.stats.ab import ABAnalysis
    from tokcaliper.stats.sequential import SequentialDecision

__all__ = ["closing_lines", "sequential_closing"]


def _signed(x: float) -> str:
    return percent(x, signed=True)


def _change(an: ABAnalysis) -> tuple[str, str]:
    """``(reading, ci)``: b's change against a in words, e.g. ``("+76.4%", "95% CI +39.0% … +124%")``."""
    lvl = f"{100 * (1 - an.alpha):g}% CI"
    u = f" {an.unit}" if an.unit else ""
    if an.scale == "difference" and an.difference is not None:
        ci = an.difference_ci
        return (num(an.difference, signed=True) + u,
                "no CI" if ci is None else f"{lvl} {num(ci[0], signed=True)} … {num(ci[1], signed=True)}{u}")
    ratio = an.decision_ratio if an.decision_ratio is not None else an.ratio_of_means
    ci = an.decision_ci
    reading = "undefined (no ratio)" if ratio is None else _signed(ratio - 1)
    return reading, "no CI" if ci is None else f"{lvl} {_signed(ci[0] - 1)} … {_signed(ci[1] - 1)}"


def _test(an: ABAnalysis) -> str:
    """The p that decided, labelled as the gate labelled it (Holm-adjusted when it was)."""
    label = "paired p" if an.decided_by == "paired" else "Welch p"
    if an.holm_m > 1:
        label = f"Holm-adjusted {label} ({an.holm_m} metrics)"
    return f"{label} = {p_value(an.p_used)}" if an.p_used is not None else f"{label} undefined"


def closing_lines(an: ABAnalysis) -> list[str]:
    """The closing ``result:`` and ``next:`` lines of one metric's comparison.

    Args:
        an: the analysis (its verdict class, estimate and CI, runs needed).

    Returns:
        Two lines, e.g. ``["result: t2 beats t1 on aggregate_output_tok_s (higher is better):
        t2 reads +76.4% against t1 (95% CI +39.0% … +124%) — decided (Holm-adjusted paired p
        (3 metrics) = 0.004)", "next: stop — the comparison is decided"]``.
    """
    from tokcaliper.stats.ab import needed_for

    a, b = an.a.name, an.b.name
    better = "higher" if an.higher_is_better else "lower"
    reading, ci = _change(an)
    against = f"{b} reads {reading} against {a} ({ci})"
    if an.verdict in ("faster", "slower"):
        win, lose = (b, a) if an.verdict == "faster" else (a, b)
        return [f"result: {win} beats {lose} on {an.metric} ({better} is better): {against} "
                f"— decided ({_test(an)} < α = {an.alpha:g}, CI clear of the noise band)",
                "next: stop — the comparison is decided; more runs would only narrow the CI"]
    if an.verdict == "equivalent":
        t = an.tost
        margin = "" if t is None else f" within ±{percent(t.margin)}"
        tp = "" if an.tost_p_used is None else (
            f" (TOST {'Holm-adjusted ' if an.holm_m > 1 else ''}p = {p_value(an.tost_p_used)})")
        return [f"result: {a} and {b} are equivalent{margin} on {an.metric}: {against} — decided{tp}",
                "next: stop — the comparison is decided"]
    unit = "pairs" if an.paired is not None else "runs per arm"
    have = an.paired.n if an.paired is not None else min(an.a.n, an.b.n)
    line = f"result: not decided on {an.metric}: {against}; {_test(an)}"
    if an.mde is not None and an.scale == "ratio":
        line += f"; these {have} {unit} resolve ±{percent(an.noise_band + an.mde)} (band + MDE)"
    observed = None
    if an.scale == "ratio" and an.decision_ratio is not None:
        observed = abs(an.decision_ratio - 1)
    if observed is None:
        nxt = "next: more runs narrow the CI; see the runs-needed figure above"
    elif observed <= an.noise_band:
        nxt = (f"next: the observed change ({_signed(an.decision_ratio - 1)}) is inside the "  # type: ignore[operator]
               f"±{percent(an.noise_band)} noise band, so no number of {unit} calls it faster or "
               "slower; stop, or set an equivalence margin to test equivalence")
    else:
        need = needed_for(an, observed)
        if need is None:
            nxt = (f"next: a change of the observed ±{percent(observed)} would need more than 10⁹ "
                   f"{unit}: stop — these runs cannot decide it")
        elif need <= have:
            nxt = (f"next: {need} {unit} would call a true ±{percent(observed)} change with power 0.8 "
                   f"and {have} ran: the true change is likely smaller; a few more {unit} or stop")
        else:
            nxt = (f"next: about {need - have} more {unit} ({need} in all) would call a change of the "
                   f"observed ±{percent(observed)} with power 0.8; stop if a change that size "
                   "does not matter")
    return [line, nxt]


def sequential_closing(sq: SequentialDecision, names: tuple[str, str], metric: str) -> list[str]:
    """The closing lines of an until-decided experiment, read from the sequential rule (it governs).

    Args:
        sq: the decision after the pairs so far. names: (baseline, candidate). metric: its name.
    """
    a, b = names
    cs = "" if sq.cs is None else f", {100 * (1 - sq.alpha):g}% confidence sequence " \
                                  f"{_signed(sq.cs[0] - 1)} … {_signed(sq.cs[1] - 1)}"
    reading = f"{b} reads {_signed(sq.ratio - 1)} against {a}{cs}"
    if sq.decided and sq.verdict in ("faster", "slower"):
        win, lose = (b, a) if sq.verdict == "faster" else (a, b)
        better = "higher" if sq.higher_is_better else "lower"
        return [f"result (sequential rule, governs): {win} beats {lose} on {metric} ({better} is "
                f"better): {reading} — decided after {sq.pairs_used} pairs",
                "next: stop — the comparison is decided"]
    if sq.decided and sq.verdict == "equivalent":
        return [f"result (sequential rule, governs): {a} and {b} are equivalent on {metric}: "
                f"{reading} — decided after {sq.pairs_used} pairs", "next: stop — the comparison is decided"]
    if sq.decided:
        return [f"result (sequential rule, governs): not decided on {metric} at the cap of "
                f"{sq.max_pairs} pairs: {reading}",
                "next: stop — the cap is reached; a larger runs_per_arm would be a new experiment"]
    return [f"result (sequential rule, governs): not decided yet on {metric} after {sq.pairs_used} "
            f"of at most {sq.max_pairs} pairs: {reading}",
            f"next: resume the experiment: the rule adds pairs until it decides (at most "
            f"{sq.max_pairs - sq.pairs_used} more)"]
