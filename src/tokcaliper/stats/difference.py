"""A/B analysis on the difference scale, for metrics that can be 0 or sit at resolution (issue 17 item 5).

Ratios need positive values, and a relative ±1% band means nothing for a
metric whose runs read 0 or a few timer ticks (``client_loop_lag_p99_ms``:
an idle event loop's probes read 0–1 ms late because ``epoll_wait`` rounds
its timeout up to whole milliseconds). Such metrics are compared on the
difference b − a in the metric's unit, with an *absolute* noise floor
``noise_abs`` (``--noise-abs``, default from the metric registry's
:attr:`tokcaliper.model.metrics.Metric.noise_abs` where the resolution is
known):

- independent arms: Welch's t on the runs (Welch 1947), difference of means
  ``D = m_b − m_a`` with CI ``D ± t(1 − α/2, ν)·se``, Welch–Satterthwaite ν;
- pairs: ``d_k = b_k − a_k``; one-sample t on the d_k (n − 1 df), CI
  ``d̄ ± t(1 − α/2, n − 1)·s_d/√n`` (``scipy.stats.ttest_rel``);
- verdict (:func:`tokcaliper.stats.verdict_gate.gate_difference`):
  faster/slower only when p < α and the whole CI lies outside
  ``[−noise_abs, +noise_abs]``; never "equivalent" (a relative margin does
  not apply here);
- MDE ``2·s_d/√n`` (pairs) or ``2·√(s_a²/n_a + s_b²/n_b)`` (arms), in the
  unit; runs needed for a verdict on ±Δ at power 0.8 from
  :func:`tokcaliper.stats.resolution.n_verdict` with distance Δ − noise_abs
  (Δ = ``effect × |m_a|`` when ``--effect`` is given and m_a ≠ 0, else
  max(|D|, noise_abs)).

Pure functions, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from tokcaliper.errors import InputError
from tokcaliper.model.verdict import Status, Verdict
from tokcaliper.numbers import num, p_value, statistic
from tokcaliper.stats.verdict_gate import GateResult, gate_difference

if TYPE_CHECKING:  # ab imports this module lazily; the types only for checkers
    from tokcaliper.stats.ab import ABAnalysis, ABEvidence

__all__ = ["SOURCE_DIFFERENCE", "analyze_difference", "check_noise_abs", "decide_difference"]

SOURCE_DIFFERENCE = ("difference scale: Welch's t on the runs / one-sample t on the pair "
                     "differences b − a (scipy.stats.ttest_ind, ttest_rel); verdict only when the "
                     "CI of b − a lies outside ±noise_abs (issue 17 item 5)")


def check_noise_abs(noise_abs: float) -> None:
    """Raise :class:`InputError` unless noise_abs is a finite number ≥ 0."""
    if isinstance(noise_abs, bool) or not (isinstance(noise_abs, (int, float))
                                           and math.isfinite(noise_abs) and noise_abs >= 0):
        raise InputError(f"--noise-abs must be a number ≥ 0 in the metric's unit, got {noise_abs}")


def _q(x: float | None, unit: str) -> str:
    return num(x, 3, signed=False) + (f" {unit}" if unit else "")


def analyze_difference(a: Sequence[float], b: Sequence[float], names: tuple[str, str], *,
                       paired: bool, metric: str, unit: str, higher_is_better: bool,
                       alpha: float, noise_abs: float, effect: float | None,
                       margin: float | None, noise_band: float) -> ABAnalysis:
    """Compare two arms on b − a with an absolute noise floor (module docstring).

    Args:
        a, b: runs (any sign, finite), each n ≥ 2; pairs in run order when ``paired``.
        names, metric, unit, higher_is_better, alpha, effect, margin, noise_band:
            as :func:`tokcaliper.stats.ab.analyze_samples` (margin and the
            relative band do not apply here and are said to).
        noise_abs: half-width of the band around 0, in the metric's unit (≥ 0).

    Returns:
        :class:`tokcaliper.stats.ab.ABAnalysis` with ``scale = "difference"``.

    Raises:
        InputError: fewer than 2 runs, unequal counts when paired, no variation.
    """
    from scipy import stats as st

    from tokcaliper.stats.ab import ABEvidence, _arm, _require_variation, stably_slow  # noqa: F811
    from tokcaliper.stats.compare import variance_test, welch

    check_noise_abs(noise_abs)
    na, nb = names
    arm_a, arm_b = _arm(a, na), _arm(b, nb)
    if paired and arm_a.n != arm_b.n:
        raise InputError(f"paired runs need equal run counts per arm, got {na}: {arm_a.n} and "
                         f"{nb}: {arm_b.n}")
    _require_variation(arm_a, arm_b)
    w, var = welch(a, b), variance_test(a, b)
    notes = [f"difference scale: b − a in {unit or 'the metric unit'}, noise floor ±"
             f"{_q(noise_abs, unit)} (ratios are undefined or meaningless for values at 0 or at "
             "the metric's resolution)"]
    if margin is not None:
        notes.append("the equivalence margin is relative and is not applied on the difference scale")
    diffs = None
    if paired:
        d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
        n = int(d.size)
        sd = float(d.std(ddof=1))
        if sd < 1e-12 * max(1.0, float(np.abs(d).max())):
            raise InputError(f"all pair differences are equal ({num(float(d[0]))}): the paired "
                             "t-test is undefined")
        se = sd / math.sqrt(n)
        q = float(st.t.ppf(1 - alpha / 2, n - 1))
        diff = float(d.mean())
        ci = (diff - q * se, diff + q * se)
        p = float(2 * st.t.sf(abs(diff / se), n - 1))
        diffs = [float(x) for x in d]
        mde = 2 * se
        sd_d, design = sd, "paired"
    else:
        diff, se, df = w.diff, w.se, w.df
        q = float(st.t.ppf(1 - alpha / 2, df)) if math.isfinite(df) else math.nan
        ci = (diff - q * se, diff + q * se) if se > 0 and math.isfinite(q) else None
        p = w.p if math.isfinite(w.p) else None
        mde = 2 * math.sqrt(arm_a.sd**2 / arm_a.n + arm_b.sd**2 / arm_b.n)
        sds = [arm_a.sd, arm_b.sd]
        for i, x in enumerate((arm_a, arm_b)):
            if x.sd == 0:
                other = sds[1 - i]
                notes.append(f"arm {x.name} did not vary (sd 0 over {x.n} runs): the runs needed take "
                             f"its spread to be the other arm's ({_q(other, unit)})")
                sds[i] = other
        sd_d, design = math.sqrt(sds[0] ** 2 + sds[1] ** 2), "independent"
    if effect is not None and arm_a.mean != 0:
        target, basis = effect * abs(arm_a.mean), f"--effect {num(effect)} × |mean {na}|"
    else:
        target, basis = max(abs(diff), noise_abs), "max(|b − a|, noise floor)"
    need = _need(target, noise_abs, sd_d, alpha, design)
    ratio = arm_b.mean / arm_a.mean if arm_a.mean > 0 and arm_b.mean > 0 else None
    ev = ABEvidence(
        metric=metric, unit=unit, higher_is_better=higher_is_better, alpha=alpha,
        noise_band=noise_band, margin=margin, effect=effect, input_kind="samples", a=arm_a, b=arm_b,
        ratio_of_means=ratio, ratio_of_means_ci=None, welch=w, variance=var, paired=None,
        running=None, tost=None, decided_by="paired" if paired else "welch", p_raw=p,
        decision_ratio=ratio, decision_ci=None, mde=mde, target_effect=target, runs_needed=need,
        stably_slow=stably_slow(arm_a, arm_b, var, alpha, higher_is_better), notes=notes,
        scale="difference", noise_abs=noise_abs,
        difference=diff, difference_ci=ci, differences=diffs)
    return decide_difference(ev, basis=basis)


def _need(target: float, noise_abs: float, sd_d: float, alpha: float, design: str) -> int | None:
    from tokcaliper.stats.resolution import n_verdict

    if target <= noise_abs:
        return None
    if sd_d <= 0:
        return 2
    return n_verdict(target - noise_abs, sd_d, alpha, 0.8, design=design)


def _advice(ev: ABEvidence, basis: str) -> str:
    unit = "pairs" if ev.differences is not None else "runs per arm"
    n = len(ev.differences) if ev.differences is not None else min(ev.a.n, ev.b.n)
    tgt = _q(ev.target_effect, ev.unit)
    if ev.target_effect <= (ev.noise_abs or 0):
        return (f"no faster/slower verdict is reachable at any n for ±{tgt}: it does not exceed the "
                f"±{_q(ev.noise_abs, ev.unit)} noise floor; give a larger --effect or a smaller "
                "--noise-abs")
    if ev.runs_needed is None:
        return f"more than 10⁹ {unit} would be needed for a verdict on ±{tgt}"
    if ev.runs_needed <= n:
        return (f"these {n} {unit} already give a verdict on ±{tgt} with power ≥ 0.8 "
                f"({ev.runs_needed} needed): the change is likely smaller")
    return (f"about {ev.runs_needed} {unit} would be needed for a verdict on ±{tgt} ({basis}; "
            f"power 0.8 that the CI clears ±{_q(ev.noise_abs, ev.unit)})")


def decide_difference(ev: ABEvidence, p_used: float | None = None, holm_m: int = 1, *,
                      basis: str | None = None) -> ABAnalysis:
    """Gate a difference-scale :class:`~tokcaliper.stats.ab.ABEvidence` and write its report.

    Args:
        ev: evidence with ``scale == "difference"``. p_used: Holm-adjusted p, if any.
        holm_m: size of the Holm family. basis: how the target Δ was chosen (text).
    """
    from tokcaliper.stats.ab import ABAnalysis, ABEvidence  # noqa: F811 (runtime import)

    p = ev.p_raw if p_used is None else p_used
    if basis is None:
        basis = (f"--effect {num(ev.effect)} × |mean {ev.a.name}|"
                 if ev.effect is not None and ev.a.mean != 0 else "max(|b − a|, noise floor)")
    label = ("paired p" if ev.decided_by == "paired" else "Welch p") + (
        f" (Holm, {holm_m} metrics)" if holm_m > 1 else "")
    g = gate_difference(diff=ev.difference, ci=ev.difference_ci, p=p, alpha=ev.alpha,
                        higher_is_better=ev.higher_is_better, noise_abs=ev.noise_abs or 0.0,
                        unit=ev.unit, mde=ev.mde, advice=_advice(ev, basis), test_label=label)
    return ABAnalysis(**{k: getattr(ev, k) for k in ABEvidence.model_fields}, p_used=p,
                      tost_p_used=None, holm_m=holm_m, gate=g, verdict=g.verdict,
                      report=_report(ev, g, p, holm_m, basis))


def _report(ev: ABEvidence, g: GateResult, p: float | None, holm_m: int, basis: str) -> Verdict:
    from tokcaliper.stats.ab import SOURCE_GATE, _arm_line
    from tokcaliper.stats.compare import SOURCE_VAR, SOURCE_WELCH

    na, nb, u = ev.a.name, ev.b.name, ev.unit
    lvl = f"{100 * (1 - ev.alpha):g}%"
    ar = [_arm_line(ev.a, f" {u}" if u else ""), _arm_line(ev.b, f" {u}" if u else "")]
    ci = ev.difference_ci
    ci_txt = "" if ci is None else f" [{lvl} CI {num(ci[0], signed=True)} … {num(ci[1], signed=True)}]"
    if ev.differences is not None:
        d = np.asarray(ev.differences)
        n, sd = int(d.size), float(d.std(ddof=1))
        se = sd / math.sqrt(n)
        ar.append("pair differences b − a in run order: " + " ".join(num(x, signed=True) for x in d))
        ar.append(f"mean difference {num(float(d.mean()), signed=True)}{' ' + u if u else ''}, sd {num(sd)}, "
                  f"se {num(se)}; t = {statistic(float(d.mean()) / se)}, df = {n - 1}, "
                  f"p = {p_value(ev.p_raw)}{ci_txt}  (decides)")
        ar.append(f"MDE (pairs) = 2 × {num(sd)} / √{n} = {_q(ev.mde, u)}")
    else:
        w = ev.welch
        ar.append(f"difference of means {nb} − {na} = {num(ev.b.mean, 4)} − {num(ev.a.mean, 4)} = "
                  f"{num(ev.difference, signed=True)}{' ' + u if u else ''}{ci_txt}")
        ar.append(f"Welch t = {statistic(w.t)}, df = {num(w.df, 2, min_decimals=1)}, p = {p_value(w.p)}  (decides)")
        ar.append(f"MDE = 2 × √({num(ev.a.sd)}²/{ev.a.n} + {num(ev.b.sd)}²/{ev.b.n}) = {_q(ev.mde, u)}")
    v = ev.variance
    bf = "" if v.bf_p is None else f"Brown–Forsythe W = {statistic(v.bf_w)}, p = {p_value(v.bf_p)}; "
    ar.append(f"variance: {bf}{'F undefined' if v.f is None else f'F = {statistic(v.f)}, p = {p_value(v.f_p)}'}")
    need = ("none at any n (inside the noise floor)" if ev.target_effect <= (ev.noise_abs or 0)
            else "more than 10⁹" if ev.runs_needed is None else str(ev.runs_needed))
    ar.append(f"{'pairs' if ev.differences is not None else 'runs per arm'} for a verdict on "
              f"±{_q(ev.target_effect, u)} ({basis}) with power 0.8: P(T'(ν, λ) > t(1−α/2, ν)), "
              f"λ = (Δ − noise_abs)·√n/s_d: {need}")
    if holm_m > 1 and ev.p_raw is not None and p is not None:
        ar.append(f"Holm correction over {holm_m} metrics: p {p_value(ev.p_raw)} → {p_value(p)}")
    ar.extend(f"gate: {r}" for r in g.reasons)
    status = {"faster": Status.PASS, "equivalent": Status.PASS, "slower": Status.FAIL,
              "inconclusive": Status.NA}[g.verdict]
    inputs = {"metric": ev.metric, "unit": u, "higher_is_better": ev.higher_is_better,
              "alpha": ev.alpha, "noise_abs": ev.noise_abs, "scale": "difference",
              "effect": ev.effect, "input_kind": ev.input_kind, "decided_by": ev.decided_by,
              "names": [na, nb]}
    return Verdict(check="compare", title=f"{nb} vs {na} ({ev.metric}, difference)", status=status,
                   summary=g.summary, arithmetic=ar, inputs=inputs,
                   sources=[SOURCE_WELCH, SOURCE_VAR, SOURCE_DIFFERENCE, SOURCE_GATE])
