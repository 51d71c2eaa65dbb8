"""Where the variance lives: restart-level against run-level noise (issue 8 item 2).

When every arm restarts its server, runs share whatever the restart fixed
(memory layout, clock state, compiled kernels), so the noise has two levels
(Kalibera & Jones 2013, "Rigorous Benchmarking in Reasonable Time", ISMM):

    y_ij = μ + r_i + e_ij,   r_i ~ (0, σ²_restart),  e_ij ~ (0, σ²_run)

for restart i = 1..I and run j = 1..n_i. Estimates by the one-way
random-effects ANOVA (method of moments; Searle, Casella & McCulloch 1992,
*Variance Components*, §3.5):

- ``MSW = Σ (y_ij − ȳ_i)² / (N − I)``, ``MSB = Σ n_i (ȳ_i − ȳ)² / (I − 1)``;
- ``σ̂²_run = MSW``; ``σ̂²_restart = max(0, (MSB − MSW) / n₀)`` with
  ``n₀ = (N − Σ n_i²/N) / (I − 1)`` (= n for a balanced design);
- F = MSB / MSW with (I − 1, N − I) df tests σ²_restart = 0.

CIs (two-sided 1 − α): σ²_run exact from χ² (``df·MSW/χ²``); σ²_restart by
the modified large-sample interval of Graybill & Wang (1980), as given in
Burdick & Graybill (1992), *Confidence Intervals on Variance Components*,
§5.2 (exact-coverage-close for balanced designs; with unbalanced ones n₀ is
used, an approximation); the intraclass correlation
``ρ = σ²_restart/(σ²_restart + σ²_run)`` from the F distribution
(Searle et al. 1992, §3.5d).

Which allocation shrinks the MDE faster: each arm's mean over I restarts of
m runs has variance ``σ²_restart/I + σ²_run/(I·m)`` and costs
``I·(c_restart + m·c_run)`` seconds; at fixed time the variance is smallest for
``m* = √((c_restart/c_run)·(σ²_run/σ²_restart))`` (the optimum of two-stage
sampling, Cochran 1977, *Sampling Techniques*, §10.6; Kalibera & Jones 2013
§5). :func:`allocation` compares one more restart with one more run per
restart, per second of machine time.

With ``log=True`` (the default) the components are those of ln y, i.e. close
to squared CVs, so they compose with the ratio analyses. Pure functions, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field

from tokcaliper.errors import InputError
from tokcaliper.numbers import num, percent

__all__ = ["MIN_RESTARTS", "Allocation", "RestartSplit", "VarianceComponents", "allocation", "mde_nested",
           "restart_split", "variance_components"]

SOURCE_ANOVA = ("one-way random-effects ANOVA (Searle, Casella & McCulloch 1992 §3.5); σ²_run CI "
                "from χ², σ²_restart CI by Graybill–Wang MLS (Burdick & Graybill 1992 §5.2)")
SOURCE_ALLOCATION = ("m* = √((c_restart/c_run)·(σ²_run/σ²_restart)) (Cochran 1977 §10.6; "
                     "Kalibera & Jones 2013)")


class VarianceComponents(BaseModel):
    """Restart-level and run-level variance of a nested design.

    Attributes:
        restarts: I. runs: N (all runs). runs_per_restart: n_i per restart.
        n0: the effective runs per restart (= n when balanced).
        log: components of ln y (≈ squared CVs) when True, else in the metric's unit².
        mean: grand mean of the analysed values (ln y when ``log``).
        msb, msw: mean squares between and within restarts; df_between, df_within.
        f, p: F = MSB/MSW and its p against σ²_restart = 0.
        var_restart, var_run: the estimates (σ²_restart truncated at 0).
        ci_restart, ci_run: their ``1 − alpha`` CIs.
        sd_restart, sd_run: square roots (≈ CVs when ``log``).
        icc: σ²_restart / total; ci_icc: its CI.
        alpha: 1 − CI level. arithmetic: the lines of the computation.
    """

    restarts: int
    runs: int
    runs_per_restart: list[int]
    n0: float
    log: bool
    mean: float
    msb: float
    msw: float
    df_between: int
    df_within: int
    f: float | None
    p: float | None
    var_restart: float
    var_run: float
    ci_restart: tuple[float, float]
    ci_run: tuple[float, float]
    sd_restart: float
    sd_run: float
    icc: float
    ci_icc: tuple[float, float] | None
    alpha: float
    arithmetic: list[str] = Field(default_factory=list)


def variance_components(restarts: Sequence[Sequence[float]], *, log: bool = True,
                        alpha: float = 0.05) -> VarianceComponents:
    """Estimate restart-level and run-level variance from runs grouped by restart.

    Args:
        restarts: one sequence of run values per restart (in the metric's unit),
            at least 2 restarts, each with ≥ 1 run, at least one with ≥ 2 runs.
        log: analyse ln y (values must be > 0). alpha: CI level is 1 − alpha.

    Returns:
        :class:`VarianceComponents`.

    Raises:
        InputError: fewer than 2 restarts, no within-restart replication,
            non-finite or (with ``log``) non-positive values, alpha out of range.
    """
    from scipy import stats as st

    if not (isinstance(alpha, (int, float)) and 0 < alpha < 0.5):
        raise InputError(f"--alpha must be between 0 and 0.5, got {alpha}")
    groups = []
    for i, g in enumerate(restarts):
        x = np.asarray([float(v) for v in g], dtype=float)
        if x.size == 0:
            raise InputError(f"restart {i + 1} has no runs")
        if not np.isfinite(x).all():
            raise InputError(f"restart {i + 1} has a value that is not a finite number")
        if log:
            if (x <= 0).any():
                raise InputError(f"restart {i + 1}: values must be > 0 for log=True, got "
                                 f"{x[x <= 0][0]:g}")
            x = np.log(x)
        groups.append(x)
    n_i = np.array([g.size for g in groups])
    big_i, big_n = len(groups), int(n_i.sum())
    if big_i < 2:
        raise InputError(f"variance components need at least 2 restarts, got {big_i}")
    if big_n - big_i < 1:
        raise InputError("variance components need at least one restart with 2 or more runs")
    means = np.array([g.mean() for g in groups])
    grand = float(np.concatenate(groups).mean())
    ssw = float(sum(((g - g.mean()) ** 2).sum() for g in groups))
    ssb = float((n_i * (means - grand) ** 2).sum())
    df_b, df_w = big_i - 1, big_n - big_i
    msb, msw = ssb / df_b, ssw / df_w
    n0 = float((big_n - (n_i**2).sum() / big_n) / df_b)
    var_r = max(0.0, (msb - msw) / n0)
    f = msb / msw if msw > 0 else None
    p = float(st.f.sf(f, df_b, df_w)) if f is not None else None
    a2 = alpha / 2
    ci_run = (df_w * msw / float(st.chi2.ppf(1 - a2, df_w)),
              df_w * msw / float(st.chi2.ppf(a2, df_w)))
    # Graybill–Wang MLS for (MSB − MSW)/n0 (Burdick & Graybill 1992, §5.2, eq. 5.7–5.8)
    f1_hi = float(st.chi2.ppf(1 - a2, df_b)) / df_b  # F(1−α/2; df_b, ∞)
    f1_lo = float(st.chi2.ppf(a2, df_b)) / df_b
    f2_hi = float(st.chi2.ppf(1 - a2, df_w)) / df_w
    f2_lo = float(st.chi2.ppf(a2, df_w)) / df_w
    f12_hi = float(st.f.ppf(1 - a2, df_b, df_w))
    f12_lo = float(st.f.ppf(a2, df_b, df_w))
    g1, g2 = 1 - 1 / f1_hi, 1 - 1 / f2_hi
    h1, h2 = 1 / f1_lo - 1, 1 / f2_lo - 1
    g12 = ((f12_hi - 1) ** 2 - g1**2 * f12_hi**2 - h2**2) / f12_hi
    h12 = ((1 - f12_lo) ** 2 - h1**2 * f12_lo**2 - g2**2) / f12_lo
    v_l = g1**2 * msb**2 + h2**2 * msw**2 + g12 * msb * msw
    v_u = h1**2 * msb**2 + g2**2 * msw**2 + h12 * msb * msw
    lo_r = max(0.0, (msb - msw - math.sqrt(max(v_l, 0.0))) / n0)
    hi_r = max(0.0, (msb - msw + math.sqrt(max(v_u, 0.0))) / n0)
    total = var_r + msw
    icc = var_r / total if total > 0 else 0.0
    ci_icc = None
    if f is not None:
        fl, fu = f / f12_hi, f / f12_lo
        ci_icc = (max(0.0, (fl - 1) / (fl + n0 - 1)), min(1.0, max(0.0, (fu - 1) / (fu + n0 - 1))))
    lab = "ln y" if log else "y"
    bal = "balanced" if (n_i == n_i[0]).all() else f"unbalanced, n₀ = {num(n0)}"
    ar = [
        f"{big_i} restarts × runs {', '.join(map(str, n_i))} ({bal}); analysed: {lab}",
        f"MSB = {num(msb)} (df {df_b}), MSW = {num(msw)} (df {df_w})"
        + ("" if f is None else f", F = {num(f)}, p = {num(p, 2)}"),
        f"σ²_run = MSW = {num(msw)} [{num(ci_run[0])}, {num(ci_run[1])}]",
        f"σ²_restart = max(0, (MSB − MSW)/n₀) = max(0, ({num(msb)} − {num(msw)})/{num(n0)}) = "
        f"{num(var_r)} [{num(lo_r)}, {num(hi_r)}]",
        f"share of the variance between restarts (ICC) = {percent(icc)}"
        + ("" if ci_icc is None else f" [{percent(ci_icc[0])}, {percent(ci_icc[1])}]"),
    ]
    return VarianceComponents(
        restarts=big_i, runs=big_n, runs_per_restart=[int(x) for x in n_i], n0=n0, log=log,
        mean=grand, msb=msb, msw=msw, df_between=df_b, df_within=df_w, f=f, p=p,
        var_restart=var_r, var_run=msw, ci_restart=(lo_r, hi_r), ci_run=ci_run,
        sd_restart=math.sqrt(var_r), sd_run=math.sqrt(msw), icc=icc, ci_icc=ci_icc,
        alpha=float(alpha), arithmetic=ar)


def mde_nested(var_restart: float, var_run: float, restarts: int, runs_per_restart: int) -> float:
    """Quick MDE (M3, z ≈ 2, two arms) of a nested design: ``2·√(2·(σ²_r/I + σ²_e/(I·m)))``.

    Args:
        var_restart, var_run: components (≥ 0) on the log scale (≈ CV²).
        restarts: I ≥ 1 per arm. runs_per_restart: m ≥ 1.

    Returns:
        The MDE as a fraction of the mean.

    Raises:
        InputError: negative variances, I or m < 1.
    """
    if var_restart < 0 or var_run < 0:
        raise InputError("variance components must be ≥ 0")
    if restarts < 1 or runs_per_restart < 1:
        raise InputError("restarts and runs per restart must be ≥ 1")
    return 2 * math.sqrt(2 * (var_restart / restarts + var_run / (restarts * runs_per_restart)))


class Allocation(BaseModel):
    """Which to add: restarts or runs per restart?

    Attributes:
        restarts, runs_per_restart: the current design (per arm).
        restart_s, run_s: seconds per restart and per run.
        mde_now: quick MDE of the current design.
        mde_more_restarts: with one more restart (m runs); cost: restart_s + m·run_s per arm.
        mde_more_runs: with one more run in every restart; cost: I·run_s per arm.
        gain_per_s_restarts, gain_per_s_runs: MDE reduction per second of each option.
        better: "restarts" or "runs per restart".
        optimal_runs_per_restart: m* (real; ∞ when σ²_restart = 0).
        summary: one sentence. arithmetic: the lines.
    """

    restarts: int
    runs_per_restart: int
    restart_s: float
    run_s: float
    mde_now: float
    mde_more_restarts: float
    mde_more_runs: float
    gain_per_s_restarts: float
    gain_per_s_runs: float
    better: str
    optimal_runs_per_restart: float
    summary: str
    arithmetic: list[str] = Field(default_factory=list)


def allocation(var_restart: float, var_run: float, *, restarts: int, runs_per_restart: int,
               restart_s: float, run_s: float) -> Allocation:
    """Compare one more restart with one more run per restart, per second (module docstring).

    Args:
        var_restart, var_run: components on the log scale (e.g. from :func:`variance_components`).
        restarts, runs_per_restart: current design per arm (≥ 1).
        restart_s: time of one restart incl. warm-up (≥ 0 s). run_s: time of one run (> 0 s).

    Raises:
        InputError: out-of-range arguments.
    """
    if not (math.isfinite(restart_s) and restart_s >= 0 and math.isfinite(run_s) and run_s > 0):
        raise InputError(f"restart time must be ≥ 0 and run time > 0, got {restart_s} and {run_s}")
    i, m = restarts, runs_per_restart
    now = mde_nested(var_restart, var_run, i, m)
    more_i = mde_nested(var_restart, var_run, i + 1, m)
    more_m = mde_nested(var_restart, var_run, i, m + 1)
    cost_i, cost_m = restart_s + m * run_s, i * run_s
    gi, gm = (now - more_i) / cost_i, (now - more_m) / cost_m
    better = "restarts" if gi >= gm else "runs per restart"
    m_star = (math.inf if var_restart == 0 else
              math.sqrt((restart_s / run_s) * (var_run / var_restart)))
    ar = [f"MDE(I = {i}, m = {m}) = 2·√(2·({num(var_restart)}/{i} + {num(var_run)}/({i}·{m}))) = "
          f"{percent(now)}",
          f"one more restart: MDE {percent(more_i)} for {num(cost_i)} s per arm → per s: {num(gi)}",
          f"one more run per restart: MDE {percent(more_m)} for {num(cost_m)} s per arm → per s: "
          f"{num(gm)}",
          "m* = √((c_restart/c_run)·(σ²_run/σ²_restart)) = "
          + ("∞ (no restart-level variance)" if math.isinf(m_star) else
             f"√(({num(restart_s)}/{num(run_s)})·({num(var_run)}/{num(var_restart)})) = {num(m_star)}")]
    summary = (f"more {better} shrink the MDE faster ({percent(now)} now; per second "
               f"{num(max(gi, gm) / max(min(gi, gm), 1e-300), 2)}× the other option); "
               + ("no restart-level variance: use one restart and add runs" if math.isinf(m_star)
                  else f"the time-optimal design has one run per restart (m* = {num(m_star, 2)} < 1): "
                       "restart for every run" if m_star < 1
                  else f"the time-optimal design has about {num(m_star, 2)} runs per restart"))
    return Allocation(restarts=i, runs_per_restart=m, restart_s=restart_s, run_s=run_s,
                      mde_now=now, mde_more_restarts=more_i, mde_more_runs=more_m,
                      gain_per_s_restarts=gi, gain_per_s_runs=gm, better=better,
                      optimal_runs_per_restart=m_star, summary=summary, arithmetic=ar)


#: A split needs at least this many restarts (segments) holding at least 2 runs each.
MIN_RESTARTS = 2


class RestartSplit(BaseModel):
    """One arm's (or configuration's) variance split between restarts and runs, with advice.

    Attributes:
        arm, metric: what was split. runs_per_restart: valid runs in each restart, in order.
        components: :func:`variance_components` (``None`` when not estimable).
        allocation: :func:`allocation` at the current design (``None`` without
            components or costs). restart_s, run_s: the costs used (seconds).
        summary: one sentence with the figures, or why there is no split.
    """

    arm: str
    metric: str
    runs_per_restart: list[int]
    components: VarianceComponents | None = None
    allocation: Allocation | None = None
    restart_s: float | None = None
    run_s: float | None = None
    summary: str


def restart_split(groups: Sequence[Sequence[float]], *, arm: str, metric: str,
                  restart_s: float | None, run_s: float | None,
                  alpha: float = 0.05) -> RestartSplit:
    """Split one arm's runs grouped by server start into restart- and run-level variance.

    Needs at least :data:`MIN_RESTARTS` restarts with ≥ 2 runs each (restarts of
    one run still count in the ANOVA once that holds). Log scale when every value
    is > 0 (components ≈ squared CVs), else the metric's unit. The advice is
    :func:`allocation` at I = number of restarts and m = the mean runs per restart
    (rounded), with the measured restart cost (restart + warm-up until the first
    measured run) and run time.

    Args:
        groups: values per restart, in order (empty restarts are dropped).
        arm, metric: labels. restart_s, run_s: costs in seconds (``None``: no advice).
        alpha: 1 − CI level.

    Returns:
        :class:`RestartSplit` (never raises for too few runs: the summary says why).
    """
    gs = [list(g) for g in groups if len(g)]
    sizes = [len(g) for g in gs]
    rich = sum(1 for n in sizes if n >= 2)
    if len(gs) < MIN_RESTARTS or rich < MIN_RESTARTS:
        return RestartSplit(
            arm=arm, metric=metric, runs_per_restart=sizes,
            summary=(f"{arm}: no restart/run split — needs ≥ {MIN_RESTARTS} restarts of ≥ 2 runs, has "
                     f"{len(gs)} restart(s) with runs {', '.join(map(str, sizes)) or 'none'} (order "
                     "abba or blocked segments, or bench --restarts K, give several runs per restart)"))
    log = all(v > 0 for g in gs for v in g)
    vc = variance_components(gs, log=log, alpha=alpha)
    alloc = None
    if restart_s is not None and run_s is not None and run_s > 0 and restart_s >= 0:
        m = max(1, round(sum(sizes) / len(sizes)))
        alloc = allocation(vc.var_restart, vc.var_run, restarts=len(gs), runs_per_restart=m,
                           restart_s=restart_s, run_s=run_s)
    lvl = f"{100 * (1 - alpha):g}%"

    def sd(x: float) -> str:
        return percent(x) if log else num(x)

    ci_r = (math.sqrt(vc.ci_restart[0]), math.sqrt(vc.ci_restart[1]))
    ci_e = (math.sqrt(vc.ci_run[0]), math.sqrt(vc.ci_run[1]))
    icc = "" if vc.ci_icc is None else f" [{percent(vc.ci_icc[0])}, {percent(vc.ci_icc[1])}]"
    summary = (f"{arm}, {metric}: restart-level sd {sd(vc.sd_restart)} [{lvl} CI {sd(ci_r[0])}, "
               f"{sd(ci_r[1])}], run-level sd {sd(vc.sd_run)} [{sd(ci_e[0])}, {sd(ci_e[1])}]"
               f"{' (of ln y ≈ CV)' if log else ''}; share between restarts {percent(vc.icc)}{icc} "
               f"over {len(gs)} restarts × runs {', '.join(map(str, sizes))} (F p = {num(vc.p, 2)})")
    if alloc is not None:
        summary += f"; {alloc.summary}"
    else:
        summary += "; no allocation advice (restart or run time unknown)"
    return RestartSplit(arm=arm, metric=metric, runs_per_restart=sizes, components=vc,
                        allocation=alloc, restart_s=restart_s, run_s=run_s, summary=summary)
