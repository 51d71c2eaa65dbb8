#!/usr/bin/env python3
"""Calibration of tokcaliper's verdicts: error rates, coverage, power and runs needed (issue 8).

Monte Carlo over data shaped like benchmark runs. Every replicate is one
simulated experiment: 2·n runs laid out in one of tokcaliper's run orders
(``tokcaliper.experiment.order.run_order``: blocked, alternate, abba,
random-blocks), analysed the way the product analyses it (blocked → Welch on
independent arms; interleaved → paired log ratios, as
``experiment.samples.samples_from_runs`` pairs them by block, adjusted for the
drift over run positions as ``stats.paired_drift`` does) and gated by the
verdict gate (faster/slower only when p < α and the 95% CI lies outside the
±1% noise band).

The decisions are vectorised re-implementations of
``tokcaliper.stats.ab.analyze_samples`` (paired and Welch),
``tokcaliper.stats.adjust.adjusted_comparison`` (ANCOVA) and
``tokcaliper.stats.verdict_gate.gate``; tests/stats/test_calibration.py checks
them against the product on concrete cases. The sequential rule is the
product's own array code (``tokcaliper.stats.sequential.confidence_sequence``).

Data shapes (multiplicative noise on a mean of 100, CV = the run-to-run CV):

- ``normal``: y = μ·(1 + CV·z);
- ``lognormal``: ln y = ln μ + σ·z with σ² = ln(1 + CV²);
- ``clumps``: two clumps at ±0.8·CV with within-clump sd 0.6·CV (total CV);
  the clump is a Markov chain over the run order that switches with
  probability 0.1 per run (a clock or memory state that persists);
- ``drift``: normal noise times a monotonic linear drift of CV in total from
  the first to the last run of the experiment (thermal settling), up or down
  with probability ½ each;
- ``ar1``: ln-noise AR(1) with φ = 0.5 between neighbouring runs, marginal CV.

Drift study (issue 17, :func:`drift_study`, :func:`sequential_drift`,
:func:`outlier_study`): normal runs times a linear drift of 0.5–3% per run,
one step of the same total change, or one run at 1/5 speed
(:func:`disturbance`); CI coverage and the gated false-positive rate are
reported apart, for every order, for the default analysis with run positions
(``stats.paired_drift``) and the plain paired t, and for the sequential rule.

Usage (from the repository root; about 6 minutes on one core):

    python benchmarks/calibration.py                 # full grid, markdown tables
    python benchmarks/calibration.py --reps 4000 --json
    python benchmarks/calibration.py --quick         # small grid (about 30 s)
    python benchmarks/calibration.py --from-json out.json   # tables of a saved --json run
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats as st

try:  # run from a checkout without installing
    import tokcaliper  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from tokcaliper.experiment.order import ORDERS, run_order  # noqa: E402
from tokcaliper.stats.resolution import n_power  # noqa: E402
from tokcaliper.stats.sequential import confidence_sequence, mixture_scale  # noqa: E402

ALPHA = 0.05
BAND = 0.01
SHAPES = ("normal", "lognormal", "clumps", "drift", "ar1")
MU = 100.0
#: random-blocks orders drawn from this many seeds (product code), cycled over replicates
N_RANDOM_ORDERS = 64


# ---------------------------------------------------------------- data


def positions(order: str, n: int, rep: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Positions of arm A's and B's runs (each shape (n,)) in tokcaliper's ``order``."""
    seq = run_order(["A", "B"], n, order, seed=rep if order == "random-blocks" else None)
    pa = np.array([p for p, arm in seq if arm == "A"])
    pb = np.array([p for p, arm in seq if arm == "B"])
    return pa, pb


def order_positions(order: str, n: int, reps: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-replicate positions, shape (reps, n) each (random-blocks: 64 seeds cycled)."""
    k = N_RANDOM_ORDERS if order == "random-blocks" else 1
    table = [positions(order, n, s) for s in range(k)]
    idx = np.arange(reps) % k
    pa = np.stack([table[i][0] for i in range(k)])[idx]
    pb = np.stack([table[i][1] for i in range(k)])[idx]
    return pa, pb


def noise(shape: str, cv: float, length: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    """Multiplicative noise factors over the run order, shape (reps, length), mean ≈ 1."""
    z = rng.standard_normal((reps, length))
    if shape == "normal":
        return np.maximum(1 + cv * z, 1e-3)
    if shape == "lognormal":
        s = math.sqrt(math.log1p(cv * cv))
        return np.exp(s * z - s * s / 2)
    if shape == "clumps":
        flips = rng.random((reps, length)) < 0.1
        start = rng.random((reps, 1)) < 0.5
        state = (np.cumsum(flips, axis=1) + start) % 2  # 0/1, persistent
        return np.maximum(1 + cv * (0.8 * (2 * state - 1) + 0.6 * z), 1e-3)
    if shape == "drift":
        t = np.linspace(-0.5, 0.5, length) if length > 1 else np.zeros(1)
        sign = np.where(rng.random((reps, 1)) < 0.5, -1.0, 1.0)  # up or down, at random
        return np.maximum(1 + cv * z, 1e-3) * (1 + cv * sign * t[None, :])
    if shape == "ar1":
        phi = 0.5
        s = math.sqrt(math.log1p(cv * cv))
        x = np.empty_like(z)
        x[:, 0] = z[:, 0]
        for j in range(1, length):
            x[:, j] = phi * x[:, j - 1] + math.sqrt(1 - phi * phi) * z[:, j]
        return np.exp(s * x - s * s / 2)
    raise ValueError(f"unknown shape {shape!r}")


def realistic(cv: float, length: int, reps: int, rng: np.random.Generator
              ) -> tuple[np.ndarray, np.ndarray]:
    """The realistic case: drift, sticky clumps and iid noise, plus a start-of-run covariate.

    On the log scale the variance cv² is split 40% linear drift over the
    experiment, 30% two persistent clumps (switch probability 0.1 per run),
    30% independent noise. The covariate (think: GPU clock at run start)
    reads drift + clump with measurement noise of 30% of their variance.

    Returns:
        (factors, covariate), each shape (reps, length).
    """
    v = cv * cv
    t = np.linspace(-0.5, 0.5, length)
    sign = np.where(rng.random((reps, 1)) < 0.5, -1.0, 1.0)  # drift up or down, at random
    drift = math.sqrt(0.4 * v * 12) * t[None, :] * sign  # var of a uniform t on [−½, ½]: 1/12
    flips = rng.random((reps, length)) < 0.1
    start = rng.random((reps, 1)) < 0.5
    clump = math.sqrt(0.3 * v) * (2 * ((np.cumsum(flips, axis=1) + start) % 2) - 1)
    iid = math.sqrt(0.3 * v) * rng.standard_normal((reps, length))
    signal = drift + clump
    cov = signal + math.sqrt(0.3 * 0.7 * v) * rng.standard_normal((reps, length))
    return np.exp(signal + iid), cov


def experiment(shape: str, order: str, cv: float, n: int, effect: float, reps: int,
               rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Runs of arms A and B, shape (reps, n) each, in run order, plus covariates (realistic only)."""
    a, b, ca, cb, _, _ = experiment_at(shape, order, cv, n, effect, reps, rng)
    return a, b, ca, cb


def experiment_at(shape: str, order: str, cv: float, n: int, effect: float, reps: int,
                  rng: np.random.Generator, disturb: tuple[str, float] | None = None
                  ) -> tuple[np.ndarray, ...]:
    """:func:`experiment` plus the run positions of A's and B's runs, shape (reps, n) each.

    Args:
        disturb: an extra disturbance over the run order (see :func:`disturbance`),
            e.g. ``("linear", 0.015)``: −1.5%…+1.5% per run; ``None``: none.
    """
    pa, pb = order_positions(order, n, reps)
    rows = np.arange(reps)[:, None]
    if shape == "realistic":
        x, c = realistic(cv, 2 * n, reps, rng)
    else:
        x, c = noise(shape, cv, 2 * n, reps, rng), np.zeros((reps, 2 * n))
    if disturb is not None:
        x = x * disturbance(disturb[0], disturb[1], 2 * n, reps, rng)
    a = MU * x[rows, pa]
    b = MU * (1 + effect) * x[rows, pb]
    return a, b, c[rows, pa], c[rows, pb], pa, pb


def disturbance(kind: str, size: float, length: int, reps: int, rng: np.random.Generator
                ) -> np.ndarray:
    """Multiplicative disturbance over the run order, shape (reps, length).

    - ``linear``: a drift of ``size`` per run, compounding, ``(1 + δ)^pos`` with
      δ = ±size (up or down at random per experiment) — a GPU warming up, a host
      whose load grows;
    - ``step``: the same total change as ``linear`` over the experiment,
      ``(1 + δ)^(length − 1)``, all at once before a uniformly drawn run
      (a clock or power state that flips once);
    - ``outlier``: one uniformly drawn run at ``size`` times its speed (0.2 = 1/5).
    """
    pos = np.arange(length)[None, :]
    if kind == "linear":
        sign = np.where(rng.random((reps, 1)) < 0.5, -1.0, 1.0)
        return (1 + sign * size) ** pos
    if kind == "step":
        sign = np.where(rng.random((reps, 1)) < 0.5, -1.0, 1.0)
        at = rng.integers(1, length, (reps, 1))
        return np.where(pos >= at, (1 + sign * size) ** (length - 1), 1.0)
    if kind == "outlier":
        at = rng.integers(0, length, (reps, 1))
        return np.where(pos == at, size, 1.0)
    raise ValueError(f"unknown disturbance {kind!r}")


# ---------------------------------------------------------------- decisions (vectorised product)


def _gate(ratio: np.ndarray, lo: np.ndarray, hi: np.ndarray, p: np.ndarray,
          alpha: float = ALPHA, band: float = BAND) -> np.ndarray:
    """verdict_gate.gate for higher-is-better: +1 faster, −1 slower, 0 inconclusive."""
    sig = p < alpha
    out = (lo > 1 + band) | (hi < 1 - band)
    v = np.where(ratio > 1, 1, -1)
    return np.where(sig & out, v, 0)


@dataclass
class Decision:
    """Vectorised outcome of one analysis: shape (reps,) each."""

    verdict: np.ndarray  # +1 faster, −1 slower, 0 inconclusive
    ratio: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    p: np.ndarray


def paired(a: np.ndarray, b: np.ndarray, alpha: float = ALPHA, band: float = BAND) -> Decision:
    """ab.analyze_samples(paired=True): paired t on ln(b/a), CI exp(d̄ ± t·s/√n), gate."""
    d = np.log(b) - np.log(a)
    n = d.shape[-1]
    m, s = d.mean(-1), d.std(-1, ddof=1)
    se = s / math.sqrt(n)
    t = m / se
    p = 2 * st.t.sf(np.abs(t), n - 1)
    q = st.t.ppf(1 - alpha / 2, n - 1)
    r, lo, hi = np.exp(m), np.exp(m - q * se), np.exp(m + q * se)
    return Decision(_gate(r, lo, hi, p, alpha, band), r, lo, hi, p)


def paired_adjusted(a: np.ndarray, b: np.ndarray, pa: np.ndarray, pb: np.ndarray, order: str,
                    alpha: float = ALPHA, band: float = BAND) -> Decision:
    """ab.analyze_samples(paired=True, positions, design=order): paired_drift's analysis.

    abba (≥ 2 complete 4-run blocks): t on the means of each block's two log
    ratios; otherwise the trend adjustment d'_k = d_k − β̂·Δ_k with β̂ the OLS
    slope of the pair means on the pair centres and se² = s_d'²/n + Δ̄²·se(β̂)²
    (Welch–Satterthwaite df); alternate: CI = union with the unadjusted CI,
    p = the larger.
    """
    la, lb = np.log(a), np.log(b)
    d = lb - la
    n = d.shape[-1]
    pa = np.broadcast_to(pa, d.shape).astype(float)
    pb = np.broadcast_to(pb, d.shape).astype(float)
    off = pb - pa
    if order == "abba" and n >= 4:
        k = n // 2
        q = (d[:, 0:2 * k:2] + d[:, 1:2 * k:2]) / 2
        m, s = q.mean(-1), q.std(-1, ddof=1)
        se = s / math.sqrt(k)
        df = np.full(m.shape, k - 1.0)
    else:
        mm = (la + lb) / 2
        c = (pa + pb) / 2
        cc = c - c.mean(-1, keepdims=True)
        sxx = (cc * cc).sum(-1)
        beta = (cc * (mm - mm.mean(-1, keepdims=True))).sum(-1) / sxx
        resid = mm - mm.mean(-1, keepdims=True) - beta[:, None] * cc
        se_b = np.sqrt((resid * resid).sum(-1) / (n - 2) / sxx)
        dd = d - beta[:, None] * off
        m, s = dd.mean(-1), dd.std(-1, ddof=1)
        v1 = s * s / n
        v2 = off.mean(-1) ** 2 * se_b * se_b
        se = np.sqrt(v1 + v2)
        den = v1 * v1 / (n - 1) + np.where(v2 > 0, v2 * v2 / (n - 2), 0.0)
        df = (v1 + v2) ** 2 / den
    t = m / se
    p = 2 * st.t.sf(np.abs(t), df)
    q95 = st.t.ppf(1 - alpha / 2, df)
    r, lo, hi = np.exp(m), np.exp(m - q95 * se), np.exp(m + q95 * se)
    if order == "alternate":  # b after a in every pair: union with the unadjusted CI, larger p
        u = paired(a, b, alpha, band)
        lo, hi, p = np.minimum(lo, u.lo), np.maximum(hi, u.hi), np.maximum(p, u.p)
    return Decision(_gate(r, lo, hi, p, alpha, band), r, lo, hi, p)


def welch(a: np.ndarray, b: np.ndarray, alpha: float = ALPHA, band: float = BAND) -> Decision:
    """ab.analyze_samples(paired=False): Welch p on the runs; delta-method CI of m_b/m_a; gate."""
    na, nb = a.shape[-1], b.shape[-1]
    ma, mb = a.mean(-1), b.mean(-1)
    va, vb = a.var(-1, ddof=1) / na, b.var(-1, ddof=1) / nb
    t = (ma - mb) / np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
    p = 2 * st.t.sf(np.abs(t), df)
    la, lb = va / ma**2, vb / mb**2  # delta method on ln(m_b/m_a), Welch–Satterthwaite df
    se = np.sqrt(la + lb)
    dfl = (la + lb) ** 2 / (la**2 / (na - 1) + lb**2 / (nb - 1))
    q = st.t.ppf(1 - alpha / 2, dfl)
    est = np.log(mb / ma)
    r, lo, hi = np.exp(est), np.exp(est - q * se), np.exp(est + q * se)
    return Decision(_gate(r, lo, hi, p, alpha, band), r, lo, hi, p)


def ancova(a: np.ndarray, b: np.ndarray, ca: np.ndarray, cb: np.ndarray,
           alpha: float = ALPHA, band: float = BAND) -> Decision:
    """adjust.adjusted_comparison (log model): OLS ln y ~ 1 + arm + (c − c̄), t-test of arm; gate."""
    y = np.concatenate([np.log(a), np.log(b)], -1)
    arm = np.concatenate([np.zeros(a.shape[-1]), np.ones(b.shape[-1])])
    c = np.concatenate([ca, cb], -1)
    c = c - c.mean(-1, keepdims=True)
    n = y.shape[-1]
    reps = y.shape[0]
    X = np.stack([np.ones((reps, n)), np.broadcast_to(arm, (reps, n)), c], -1)  # (reps, n, 3)
    xtx = np.einsum("rni,rnj->rij", X, X)
    xty = np.einsum("rni,rn->ri", X, y)
    inv = np.linalg.inv(xtx)
    beta = np.einsum("rij,rj->ri", inv, xty)
    resid = y - np.einsum("rni,ri->rn", X, beta)
    df = n - 3
    mse = (resid**2).sum(-1) / df
    se = np.sqrt(mse * inv[:, 1, 1])
    t = beta[:, 1] / se
    p = 2 * st.t.sf(np.abs(t), df)
    q = st.t.ppf(1 - alpha / 2, df)
    r, lo, hi = np.exp(beta[:, 1]), np.exp(beta[:, 1] - q * se), np.exp(beta[:, 1] + q * se)
    return Decision(_gate(r, lo, hi, p, alpha, band), r, lo, hi, p)


def default_decision(order: str, a: np.ndarray, b: np.ndarray, pa: np.ndarray | None = None,
                     pb: np.ndarray | None = None) -> Decision:
    """What tokcaliper decides for runs in ``order``: blocked → Welch; interleaved → the
    drift-adjusted paired analysis when the positions are given (experiments), else the
    plain paired t (``compare --paired`` without positions)."""
    if order == "blocked":
        return welch(a, b)
    if pa is None or pb is None:
        return paired(a, b)
    return paired_adjusted(a, b, pa, pb, order)


def sequential(d: np.ndarray, max_pairs: int, alpha: float = ALPHA, band: float = BAND,
               design_pairs: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """stats.sequential's rule on paths of log ratios, shape (reps, ≥ max_pairs).

    Returns:
        (verdict, pairs_used), shape (reps,) each: +1/−1 at the first pair where
        the always-valid p < α and the CS lies outside the band, else 0 at max_pairs.
    """
    design = max(3, max_pairs // 3) if design_pairs is None else design_pairs
    g = mixture_scale(design, alpha)
    m, _, lo, hi, p = confidence_sequence(d[:, :max_pairs], g, alpha)
    out = (p < alpha) & ((lo > math.log1p(band)) | (hi < math.log1p(-band)))
    hit = out.any(-1)
    first = np.where(hit, out.argmax(-1), max_pairs - 1)
    rows = np.arange(d.shape[0])
    verdict = np.where(hit, np.where(m[rows, first] > 0, 1, -1), 0)
    return verdict, first + 1


# ---------------------------------------------------------------- studies


def mc_sd(p: float, reps: int) -> float:
    """Monte-Carlo standard error of a proportion: √(p(1 − p)/reps)."""
    return math.sqrt(max(p * (1 - p), 1e-12) / reps)


def aa_grid(cvs, ns, shapes, orders, reps: int, seed: int = 1) -> list[dict]:
    """A/A false-positive rate and CI coverage of the default analysis (and Welch) per cell."""
    rng = np.random.default_rng(seed)
    rows = []
    for shape in shapes:
        for order in orders:
            for cv in cvs:
                for n in ns:
                    a, b, _, _, pa, pb = experiment_at(shape, order, cv, n, 0.0, reps, rng)
                    dd = default_decision(order, a, b, pa, pb)
                    w = welch(a, b)
                    rows.append(dict(
                        shape=shape, order=order, cv=cv, n=n, reps=reps,
                        analysis="welch" if order == "blocked" else "adjusted paired",
                        fpr=float((dd.verdict != 0).mean()),
                        p_below_alpha=float((dd.p < ALPHA).mean()),
                        coverage=float(((dd.lo <= 1) & (dd.hi >= 1)).mean()),
                        welch_fpr=float((w.verdict != 0).mean()),
                        welch_coverage=float(((w.lo <= 1) & (w.hi >= 1)).mean())))
    return rows


def plan_power(cases, reps: int, seed: int = 2, power: float = 0.8) -> list[dict]:
    """Achieved power of the n `plan` recommends (iid normal runs, alternate order)."""
    rng = np.random.default_rng(seed)
    out = []
    for cv, eff in cases:
        n = n_power(cv, eff, ALPHA, power)
        a, b, _, _ = experiment("normal", "alternate", cv, n, eff, reps, rng)
        w, pr = welch(a, b), paired(a, b)
        out.append(dict(cv=cv, effect=eff, n=n, reps=reps, requested=power,
                        welch_test=float((w.p < ALPHA).mean()),
                        welch_gate=float((w.verdict == 1).mean()),
                        paired_gate=float((pr.verdict == 1).mean()),
                        welch_gate_no_band=float(((w.p < ALPHA) & (w.lo > 1)).mean())))
    return out


def drift_breakdown(cv: float, ns, reps: int, seed: int = 3) -> list[dict]:
    """FPR under drift: naive blocked + Welch against each interleaved order's default."""
    rng = np.random.default_rng(seed)
    out = []
    for n in ns:
        row = dict(n=n, cv=cv)
        for order in ORDERS:
            a, b, _, _, pa, pb = experiment_at("drift", order, cv, n, 0.0, reps, rng)
            row[order] = float((default_decision(order, a, b, pa, pb).verdict != 0).mean())
            if order == "alternate":
                row["alternate_welch"] = float((welch(a, b).verdict != 0).mean())
        out.append(row)
    return out


def _n80(ns, powers, target=0.8):
    for i, (n, pw) in enumerate(zip(ns, powers)):
        if pw >= target:
            if i == 0:
                return float(n)
            n0, p0 = ns[i - 1], powers[i - 1]
            return float(n0 + (target - p0) * (n - n0) / (pw - p0))
    return math.inf


def runs_needed(cv: float = 0.15, effect: float = 0.05, reps: int = 2000, seed: int = 4,
                ns=(5, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100, 120, 143, 170, 200, 250, 300)
                ) -> dict:
    """Runs per arm for 80% power at α, per method, on the realistic case (drift + clumps).

    Fixed designs: the smallest n whose simulated power (correct "faster")
    reaches 0.8, interpolated; the A/A false-positive rate at that n beside it.
    Sequential: max pairs = the smallest cap whose power reaches 0.8; its
    mean pairs used (true effect, and A/A) and A/A false-positive rate.
    """
    rng = np.random.default_rng(seed)
    methods = {
        "Welch, iid runs without drift or clumps (what `plan` assumes)": ("alternate", "welch-iid"),
        "Welch, blocked (naive)": ("blocked", "welch"),
        "Welch, interleaved (alternate)": ("alternate", "welch"),
        "ANCOVA on start covariate, interleaved": ("alternate", "ancova"),
        "paired, alternate": ("alternate", "paired"),
        "paired, abba": ("abba", "paired"),
    }

    def decide(kind, a, b, ca, cb):
        if kind == "welch":
            return welch(a, b)
        if kind == "ancova":
            return ancova(a, b, ca, cb)
        return paired(a, b)

    res: dict = {"cv": cv, "effect": effect, "reps": reps, "alpha": ALPHA, "band": BAND,
                 "plan_n_power": n_power(cv, effect, ALPHA, 0.8), "methods": []}
    for name, (order, kind) in methods.items():
        powers = []
        shape = "normal" if kind == "welch-iid" else "realistic"
        kind = "welch" if kind == "welch-iid" else kind
        for n in ns:
            a, b, ca, cb = experiment(shape, order, cv, n, effect, reps, rng)
            powers.append(float((decide(kind, a, b, ca, cb).verdict == 1).mean()))
        n80 = _n80(ns, powers)
        # false positives at that n (or, when 80% is never reached, at plan's n)
        nn = int(math.ceil(n80)) if math.isfinite(n80) else res["plan_n_power"]
        a, b, ca, cb = experiment(shape, order, cv, nn, 0.0, reps, rng)
        fpr = float((decide(kind, a, b, ca, cb).verdict != 0).mean())
        res["methods"].append(dict(method=name, n80=n80, fpr_n=nn, fpr=fpr,
                                   power_at_plan_n=powers[list(ns).index(143)] if 143 in ns
                                   else None,
                                   power_curve=dict(zip(map(int, ns), powers))))
    # sequential (paired, abba): a cap that reaches 80% power; the paths are laid out for the cap
    for order in ("abba", "alternate"):
        best = None
        for cap in (20, 30, 40, 50, 60, 80, 100, 120, 150, 200):
            a, b, _, _ = experiment("realistic", order, cv, cap, effect, reps, rng)
            v, used = sequential(np.log(b) - np.log(a), cap)
            pw = float((v == 1).mean())
            if pw >= 0.8:
                a0, b0, _, _ = experiment("realistic", order, cv, cap, 0.0, reps, rng)
                v0, used0 = sequential(np.log(b0) - np.log(a0), cap)
                a2, b2, _, _ = experiment("realistic", order, cv, cap, 2 * effect, reps, rng)
                v2, used2 = sequential(np.log(b2) - np.log(a2), cap)
                best = dict(method=f"sequential (always-valid), paired, {order}", max_pairs=cap,
                            power=pw, mean_pairs=float(used.mean()),
                            median_pairs=float(np.median(used)), fpr=float((v0 != 0).mean()),
                            mean_pairs_aa=float(used0.mean()),
                            mean_pairs_double_effect=float(used2.mean()),
                            power_double_effect=float((v2 == 1).mean()))
                break
        res["methods"].append(best or dict(method=f"sequential, paired, {order}", max_pairs=None))
    return res


#: The disturbances of the drift study: (kind, size); drift sizes per run (issue 17 item 8).
DRIFTS = (0.005, 0.01, 0.015, 0.03)
DISTURBANCES = (("none", 0.0),) + tuple(("linear", x) for x in DRIFTS) + tuple(
    ("step", x) for x in DRIFTS) + (("outlier", 0.2),)


def _disturb(kind: str, size: float) -> tuple[str, float] | None:
    return None if kind == "none" else (kind, size)


def drift_study(cvs=(0.01, 0.05), ns=(5, 10, 20), disturbances=DISTURBANCES, orders=ORDERS,
                reps: int = 4000, seed: int = 6, effect: float = 0.03) -> list[dict]:
    """A/A error rates under drift, a step and an outlier, per order and analysis.

    For every cell: the gated false-positive rate (faster/slower on A/A), the raw
    rate of p < α, and the CI's coverage of the true ratio 1 — reported apart,
    since the ±1% band can hide a biased CI. Interleaved orders are analysed
    both ways: the product's default with run positions (``adjusted``) and the
    plain paired t (``unadjusted``, what ``compare --paired`` without positions
    does); blocked by Welch. ``power`` is the share of "faster" at a true
    ``effect`` (+3%) in the same cell.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for kind, size in disturbances:
        for order in orders:
            for cv in cvs:
                for n in ns:
                    runs = {}
                    for eff in (0.0, effect):
                        runs[eff] = experiment_at("normal", order, cv, n, eff, reps, rng,
                                                  _disturb(kind, size))
                    kinds = (("welch",) if order == "blocked" else ("adjusted", "unadjusted"))
                    for analysis in kinds:
                        out = {}
                        for eff, (a, b, _, _, pa, pb) in runs.items():
                            if analysis == "welch":
                                out[eff] = welch(a, b)
                            elif analysis == "adjusted":
                                out[eff] = paired_adjusted(a, b, pa, pb, order)
                            else:
                                out[eff] = paired(a, b)
                        z = out[0.0]
                        t = out[effect]
                        rows.append(dict(
                            kind=kind, size=size, order=order, analysis=analysis, cv=cv, n=n,
                            reps=reps, fpr=float((z.verdict != 0).mean()),
                            p_below_alpha=float((z.p < ALPHA).mean()),
                            coverage=float(((z.lo <= 1) & (z.hi >= 1)).mean()),
                            power=float((t.verdict == 1).mean()),
                            coverage_effect=float(((t.lo <= 1 + effect) & (t.hi >= 1 + effect)).mean())))
    return rows


def outlier_study(cv: float = 0.01, n: int = 10, effect: float = 0.03, reps: int = 1000,
                  orders=("alternate", "abba", "random-blocks"), seed: int = 9) -> list[dict]:
    """One run at 1/5 speed: the product's own verdict, its verdict without the flagged
    runs, and the rank companion (``stats.ab.analyze_samples`` with run positions).

    Per order: how often a run is flagged, the gated rate of faster/slower with all
    runs and without the flagged ones on A/A data (false positives) and at a true
    ``effect`` (power), and the coverage of the true ratio by each CI (the
    Hodges–Lehmann CI for the rank companion). Slow (product code per experiment),
    so fewer replicates.
    """
    from tokcaliper.stats.ab import analyze_samples
    from tokcaliper.stats.outliers import RunTags

    rng = np.random.default_rng(seed)
    rows = []
    for order in orders:
        for eff in (0.0, effect):
            a, b, _, _, pa, pb = experiment_at("normal", order, cv, n, eff, reps, rng,
                                               ("outlier", 0.2))
            flagged = decided = decided_wo = cov = cov_wo = cov_rank = 0
            for i in range(reps):
                an = analyze_samples(a[i], b[i], paired=True, design=order,
                                     tags=(RunTags(positions=[float(x) for x in pa[i]]),
                                           RunTags(positions=[float(x) for x in pb[i]])))
                truth = 1 + eff
                cov += an.decision_ci is not None and an.decision_ci[0] <= truth <= an.decision_ci[1]
                rk = an.rank
                cov_rank += rk is not None and rk.ratio_ci is not None and \
                    rk.ratio_ci[0] <= truth <= rk.ratio_ci[1]
                decided += an.verdict in ("faster", "slower") and (eff == 0 or an.verdict == "faster")
                w = an.without_outliers
                if an.outliers is not None and an.outliers.runs:
                    flagged += 1
                if w is not None and w.verdict is not None:
                    decided_wo += w.verdict in ("faster", "slower") and (
                        eff == 0 or w.verdict == "faster")
                    cov_wo += w.ci is not None and w.ci[0] <= truth <= w.ci[1]
                else:  # nothing flagged: the verdict without flagged runs is the verdict
                    decided_wo += an.verdict in ("faster", "slower") and (
                        eff == 0 or an.verdict == "faster")
                    cov_wo += an.decision_ci is not None and an.decision_ci[0] <= truth <= an.decision_ci[1]
            rows.append(dict(order=order, effect=eff, cv=cv, n=n, reps=reps,
                             flagged=flagged / reps, decided=decided / reps,
                             decided_without=decided_wo / reps, coverage=cov / reps,
                             coverage_without=cov_wo / reps, coverage_rank=cov_rank / reps))
    return rows


def sequential_drift(cv: float = 0.01, caps=(20, 50), disturbances=DISTURBANCES,
                     orders=("alternate", "abba", "random-blocks"), reps: int = 2000,
                     seed: int = 8) -> list[dict]:
    """The sequential rule (product code) on A/A paths under drift, a step and an outlier.

    Per cell: the rate of a false decided faster/slower, and the coverage of
    the true log ratio 0 by the confidence sequence at the pair where the
    rule stopped (the cap when it never decided), reported apart.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for kind, size in disturbances:
        for order in orders:
            for cap in caps:
                a, b, _, _, _, _ = experiment_at("normal", order, cv, cap, 0.0, reps, rng,
                                                 _disturb(kind, size))
                d = np.log(b) - np.log(a)
                design = max(3, cap // 3)
                g = mixture_scale(design, ALPHA)
                m, _, lo, hi, p = confidence_sequence(d, g, ALPHA)
                v, used = sequential(d, cap)
                at = used - 1
                ix = np.arange(reps)
                rows.append(dict(kind=kind, size=size, order=order, cap=cap, cv=cv, reps=reps,
                                 fpr=float((v != 0).mean()),
                                 coverage=float(((lo[ix, at] <= 0) & (hi[ix, at] >= 0)).mean()),
                                 mean_pairs=float(used.mean())))
    return rows


def sequential_grid(cvs, shapes, reps: int, max_pairs: int = 50, seed: int = 5) -> list[dict]:
    """A/A false-positive rate of the sequential rule (alternate order) and pairs used at 5%."""
    rng = np.random.default_rng(seed)
    out = []
    for shape in shapes:
        for cv in cvs:
            a, b, _, _ = experiment(shape, "alternate", cv, max_pairs, 0.0, reps, rng)
            v0, u0 = sequential(np.log(b) - np.log(a), max_pairs)
            a, b, _, _ = experiment(shape, "alternate", cv, max_pairs, 0.05, reps, rng)
            v1, u1 = sequential(np.log(b) - np.log(a), max_pairs)
            out.append(dict(shape=shape, cv=cv, max_pairs=max_pairs, reps=reps,
                            fpr=float((v0 != 0).mean()), power=float((v1 == 1).mean()),
                            mean_pairs=float(u1.mean())))
    return out


# ---------------------------------------------------------------- report


def _pct(x: float) -> str:
    return "—" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{100 * x:.1f}"


def markdown(res: dict) -> str:
    """The tables of docs/calibration.md."""
    L: list[str] = []
    reps = res["reps"]
    sd_fpr = mc_sd(ALPHA, reps)
    L.append(f"## A/A false positives and CI coverage ({reps} experiments per cell)\n")
    L.append(f"Target: false positives ≤ α + 2 MC sd = {_pct(ALPHA + 2 * sd_fpr)}%; "
             f"coverage 95 ± 1.5. Default analysis per order with run positions (blocked → "
             "Welch; else the drift-adjusted paired analysis: abba by 4-run blocks from 4 "
             "pairs on, alternate with the unadjusted reading too). "
             "Cells: worst over CV and n for each shape × order.\n")
    L.append("| shape | order | analysis | max FPR % (at CV, n) | min coverage % (at CV, n) | "
             "mean FPR % | mean coverage % |")
    L.append("|---|---|---|---|---|---|---|")
    grid = res["aa_grid"]
    for shape in SHAPES:
        for order in ORDERS:
            cells = [r for r in grid if r["shape"] == shape and r["order"] == order]
            if not cells:
                continue
            worst = max(cells, key=lambda r: r["fpr"])
            cov = min(cells, key=lambda r: r["coverage"])
            L.append(f"| {shape} | {order} | {cells[0]['analysis']} | {_pct(worst['fpr'])} "
                     f"({worst['cv']:g}, {worst['n']}) | {_pct(cov['coverage'])} ({cov['cv']:g}, "
                     f"{cov['n']}) | {_pct(np.mean([r['fpr'] for r in cells]))} | "
                     f"{_pct(np.mean([r['coverage'] for r in cells]))} |")
    L.append("\n## Drift: naive blocked + Welch against interleaved orders (A/A, false positives %)\n")
    L.append("| n per arm | blocked + Welch | alternate + Welch | alternate + adjusted paired | "
             "abba + adjusted paired | random-blocks + adjusted paired |")
    L.append("|---|---|---|---|---|---|")
    for r in res["drift"]:
        L.append(f"| {r['n']} | {_pct(r['blocked'])} | {_pct(r['alternate_welch'])} | "
                 f"{_pct(r['alternate'])} | {_pct(r['abba'])} | {_pct(r['random-blocks'])} |")
    L.append("\n## Achieved power of the n `plan` recommends (requested 80%; iid normal runs)\n")
    L.append("| CV | effect | plan n | Welch p < α | Welch + gate (±1% band) | "
             "Welch, CI excludes 1 | paired + gate |")
    L.append("|---|---|---|---|---|---|---|")
    for r in res["plan_power"]:
        L.append(f"| {r['cv']:g} | {r['effect']:g} | {r['n']} | {_pct(r['welch_test'])} | "
                 f"{_pct(r['welch_gate'])} | {_pct(r['welch_gate_no_band'])} | "
                 f"{_pct(r['paired_gate'])} |")
    rn = res["runs_needed"]
    L.append(f"\n## Runs per arm to the same verdict (realistic case: CV {rn['cv']:g}, true effect "
             f"{rn['effect']:g}, drift + clumps; 80% power, α {ALPHA:g}; {rn['reps']} experiments "
             "per point)\n")
    L.append(f"Fixed design of the method (`plan`, independent runs, power 0.8): "
             f"{rn['plan_n_power']} runs per arm.\n")
    L.append("| method | runs per arm for 80% power (mean) | max | false positives % (A/A, at n) "
             "| vs plan's n |")
    L.append("|---|---|---|---|---|")
    for m in rn["methods"]:
        if "n80" in m:
            n80 = m["n80"]
            L.append(f"| {m['method']} | " + (f"{n80:.0f}" if math.isfinite(n80) else
                                              "never (power stays below 80%)")
                     + f" | fixed | {_pct(m['fpr'])} (n = {m['fpr_n']}) | "
                     + (f"{n80 / rn['plan_n_power']:.2f}× |" if math.isfinite(n80) else "— |"))
        elif m.get("max_pairs"):
            L.append(f"| {m['method']} | {m['mean_pairs']:.1f} (median {m['median_pairs']:.0f}; "
                     f"A/A {m['mean_pairs_aa']:.1f}; true effect {2 * rn['effect']:g}: "
                     f"{m['mean_pairs_double_effect']:.1f}) | {m['max_pairs']} | {_pct(m['fpr'])} | "
                     f"{m['mean_pairs'] / rn['plan_n_power']:.2f}× |")
    if res.get("drift_study"):
        L.extend(_drift_tables(res["drift_study"], res.get("sequential_drift") or [],
                               res.get("outliers") or []))
    if res.get("sequential"):
        L.append("\n## Sequential rule (`--until-decided`) across shapes (alternate order, max 50 "
                 "pairs)\n")
        L.append("| shape | CV | A/A false positives % | power at 5% % | mean pairs at 5% |")
        L.append("|---|---|---|---|---|")
        for r in res["sequential"]:
            L.append(f"| {r['shape']} | {r['cv']:g} | {_pct(r['fpr'])} | {_pct(r['power'])} | "
                     f"{r['mean_pairs']:.1f} |")
    return "\n".join(L)


def _label(kind: str, size: float) -> str:
    if kind == "none":
        return "no drift"
    if kind == "outlier":
        return "one run at 1/5 speed"
    return f"{'linear' if kind == 'linear' else 'step'} {100 * size:g}%/run"


def percent_label(x: float) -> str:
    return "none (A/A)" if x == 0 else f"+{100 * x:g}%"


def _drift_tables(rows: list[dict], seq: list[dict], outl: list[dict]) -> list[str]:
    """Markdown of :func:`drift_study` and :func:`sequential_drift`."""
    L: list[str] = []
    reps = rows[0]["reps"]
    bound = ALPHA + 2 * mc_sd(ALPHA, reps)
    cvs = sorted({r["cv"] for r in rows})
    ns = sorted({r["n"] for r in rows})
    L.append(f"\n## Drift, a step and an outlier: A/A false positives and CI coverage by order "
             f"({reps} experiments per cell)\n")
    L.append("Normal runs, CV " + " and ".join(f"{100 * c:g}%" for c in cvs) + ", n = "
             + ", ".join(map(str, ns)) + " pairs. Each cell: the worst over CV and n of the gated "
             "false-positive rate (faster/slower on A/A, the figure the user sees), of the raw "
             "rate of p < α, and of the CI's coverage of the true ratio 1 — coverage and the "
             "gated rate are reported apart because the ±1% band hides a biased CI. "
             f"Targets: gated ≤ {_pct(bound)}% (α + 2 MC sd), coverage 95 ± 1. `adjusted` is "
             "the default analysis with run positions (experiments, a CSV position column); "
             "`unadjusted` the plain paired t (`compare --paired` without positions); blocked "
             "is analysed by Welch. Power: \"faster\" at a true +3% (CV 1%, 10 pairs).\n")
    L.append("| disturbance | order | analysis | gated FPR % (CV, n) | p < α % | coverage % (CV, n) "
             "| power at +3% % |")
    L.append("|---|---|---|---|---|---|---|")
    keys = list(dict.fromkeys((r["kind"], r["size"], r["order"], r["analysis"]) for r in rows))
    for kind, size, order, analysis in keys:
        cells = [r for r in rows if (r["kind"], r["size"], r["order"], r["analysis"])
                 == (kind, size, order, analysis)]
        w = max(cells, key=lambda r: r["fpr"])
        pw = max(cells, key=lambda r: r["p_below_alpha"])
        cov = min(cells, key=lambda r: r["coverage"])
        cv0 = min(r["cv"] for r in cells)
        nn = 10 if any(r["n"] == 10 for r in cells) else max(r["n"] for r in cells)
        pwr = next(r for r in cells if r["cv"] == cv0 and r["n"] == nn)
        L.append(f"| {_label(kind, size)} | {order} | {analysis} | {_pct(w['fpr'])} "
                 f"({w['cv']:g}, {w['n']}) | {_pct(pw['p_below_alpha'])} | {_pct(cov['coverage'])} "
                 f"({cov['cv']:g}, {cov['n']}) | {_pct(pwr['power'])} ({pwr['cv']:g}, {pwr['n']}) |")
    if outl:
        r0 = outl[0]
        L.append(f"\n## One run at 1/5 speed: the verdict with and without the flagged run, and "
                 f"the rank companion (product code, CV {100 * r0['cv']:g}%, {r0['n']} pairs, "
                 f"{r0['reps']} experiments per cell)\n")
        L.append("| order | true change | run flagged % | faster/slower, all runs % | "
                 "without the flagged run % | coverage, all runs % | without % | "
                 "Hodges–Lehmann CI coverage % |")
        L.append("|---|---|---|---|---|---|---|---|")
        for r in outl:
            L.append(f"| {r['order']} | {percent_label(r['effect'])} | {_pct(r['flagged'])} | "
                     f"{_pct(r['decided'])} | {_pct(r['decided_without'])} | {_pct(r['coverage'])} | "
                     f"{_pct(r['coverage_without'])} | {_pct(r['coverage_rank'])} |")
    if seq:
        caps = sorted({r["cap"] for r in seq})
        L.append(f"\n## The sequential rule under drift, a step and an outlier (A/A, CV "
                 f"{100 * seq[0]['cv']:g}%, {seq[0]['reps']} paths per cell)\n")
        L.append("False decided faster/slower, and coverage of the true ratio by the confidence "
                 "sequence at the pair where the rule stopped (target ≥ 95%), at caps "
                 + " and ".join(map(str, caps)) + " pairs; the rule reads the unadjusted pair "
                 "log ratios.\n")
        L.append("| disturbance | order | " + " | ".join(
            f"false decided % (cap {c}) | coverage % (cap {c})" for c in caps) + " |")
        L.append("|---|---|" + "---|---|" * len(caps))
        for kind, size, order in dict.fromkeys((r["kind"], r["size"], r["order"]) for r in seq):
            cells = {r["cap"]: r for r in seq if (r["kind"], r["size"], r["order"]) == (kind, size, order)}
            L.append(f"| {_label(kind, size)} | {order} | " + " | ".join(
                f"{_pct(cells[c]['fpr'])} | {_pct(cells[c]['coverage'])}" for c in caps) + " |")
    return L


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=4000, help="experiments per grid cell")
    ap.add_argument("--quick", action="store_true", help="small grid (seconds)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--from-json", metavar="FILE", help="print the tables of a saved --json run")
    args = ap.parse_args(argv)
    if args.from_json:
        print(markdown(json.loads(Path(args.from_json).read_text())))
        return 0
    t0 = time.perf_counter()
    if args.quick:
        cvs, ns, reps = (0.05, 0.15), (5, 20), min(args.reps, 1000)
    else:
        cvs, ns, reps = (0.01, 0.05, 0.15, 0.30), (3, 5, 10, 20, 50), args.reps
    res = {"reps": reps, "alpha": ALPHA, "band": BAND}
    res["aa_grid"] = aa_grid(cvs, ns, SHAPES, ORDERS, reps)
    res["drift"] = drift_breakdown(0.15, (3, 5, 10, 20, 50), reps)
    cases = [(0.05, 0.05), (0.10, 0.05), (0.15, 0.05), (0.15, 0.10), (0.30, 0.10)]
    res["plan_power"] = plan_power(cases[:2] if args.quick else cases, reps)
    res["runs_needed"] = runs_needed(reps=min(reps, 2000) if not args.quick else 300)
    res["sequential"] = sequential_grid((0.05, 0.15), SHAPES, min(reps, 2000))
    if args.quick:
        res["drift_study"] = drift_study(ns=(10,), reps=500)
        res["sequential_drift"] = sequential_drift(caps=(20,), reps=300)
        res["outliers"] = outlier_study(reps=50)
    else:
        res["drift_study"] = drift_study(reps=reps)
        res["sequential_drift"] = sequential_drift(reps=min(reps, 2000))
        res["outliers"] = outlier_study(reps=min(reps, 400))
    res["seconds"] = time.perf_counter() - t0
    if args.json:
        print(json.dumps(res, indent=1, default=float))
    else:
        print(markdown(res))
        print(f"\n({res['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
