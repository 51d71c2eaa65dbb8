"""Which recorded covariate goes with the metric? Ranking by rank correlation (METHODS.md M2).

Pure functions; no I/O. :func:`run_covariates` reads the covariates a stored
:class:`~tokcaliper.model.run.Run` carries; :func:`rank_covariates` ranks any
table of covariates against one metric.

Method
- Spearman's ρ (Spearman 1904, Am. J. Psychol. 15:72): Pearson correlation of
  the ranks (ties get average ranks), over the runs where the covariate is known.
  p-value: exact permutation distribution of ρ (every ordering of the covariate's
  ranks) for n ≤ :data:`EXACT_MAX_N`; above it Student's t approximation
  ``t = ρ·√((n−2)/(1−ρ²))`` with n − 2 df (``scipy.stats.spearmanr``).
- Separation of two groups (when a split was found): the rank-biserial
  correlation ``r = 2·U/(n₁n₂) − 1`` of the covariate between the high and the
  low group (Glass 1965; U from ``scipy.stats.mannwhitneyu``, whose exact p is
  given beside it). r = +1: every run of the high group has a higher covariate
  value than every run of the low group.
- Ranking: by |ρ| (largest first), then by |r|, then covariates measured at the
  start before those measured during the run. p-values are also given
  Holm-adjusted over the covariates ranked (Holm 1979; statsmodels
  ``multipletests``), since the strongest of k correlations is chosen after the fact.
- Covariates measured during the run (``measured == "during"``) can be effects
  of the run itself; they are ranked but never offered for adjustment
  (:mod:`tokcaliper.stats.adjust`). The CPU other processes used during the run
  (``foreign_cpu_cores``, issue 21) is measured during it but is set outside it
  (``measured == "outside"``): other work on the host is not the arm's effect, so
  it is offered for adjustment. (A server that takes more cores leaves other
  processes less; where they are CPU-bound that bends the covariate by at most the
  server's own change, which ``server_cpu_cores`` shows.)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

import numpy as np
from pydantic import BaseModel
from scipy import stats as _st

from tokcaliper.errors import InputError
from tokcaliper.model.telemetry import GPU_KINDS

if TYPE_CHECKING:
    from tokcaliper.model.run import Run

__all__ = [
    "EXACT_MAX_N",
    "KNOWN_COVARIATES",
    "CovariateRank",
    "covariate_label",
    "rank_covariates",
    "run_covariates",
    "separated",
    "spearman",
]

#: Largest n for which Spearman's p is the exact permutation p (8! = 40,320 orderings).
EXACT_MAX_N = 8
#: Fewest runs with a known covariate value for it to be ranked.
MIN_PAIRS = 4

#: Covariates that are effects of the run's throughput, not candidate causes of it:
#: ranked last (:func:`rank_covariates`). The load client's CPU scales with the
#: tokens it receives: fewer tokens (a slow run), less client CPU (issue 21's
#: quiet/burner runs: ρ = +1 with throughput, while other processes' CPU caused it).
FOLLOWS_THROUGHPUT = frozenset({"client_cpu_cores"})

#: |ρ| from which a covariate set outside the run is ranked before those measured
#: during it (:func:`rank_covariates`); the noise floor's cause sentence uses the same 0.8.
STRONG_RHO = 0.8

#: Largest exact two-sided Mann–Whitney p at which a complete separation of the two
#: groups (rank-biserial |r| = 1) counts as strong: 0.1, the p of 3 runs against 3
#: (2 of the C(6,3) = 20 splits), the same evidence as |ρ| ≥ 0.8 at n = 6 (exact p ≈ 0.1).
SEPARATED_P = 0.1

Measured = Literal["start", "during", "outside", "order", "unknown"]

#: Covariate names tokcaliper writes, with a label and when each is measured.
#: CSV columns with these names get the same labels.
KNOWN_COVARIATES: dict[str, tuple[str, Measured]] = {
    "position": ("run order", "order"),
    "rest_s": ("rest before run", "start"),
    "sm_clock_start_mhz": ("SM clock at start", "start"),
    "clock_start_mhz": ("clock at start", "start"),
    "temperature_start_c": ("temperature at start", "start"),
    "sm_clock_mean_mhz": ("mean SM clock during run", "during"),
    "temperature_peak_c": ("peak temperature during run", "during"),
    "power_mean_w": ("mean power during run", "during"),
    "cpu_clock_start_mhz": ("CPU clock at start", "start"),
    "cpu_temperature_start_c": ("CPU temperature at start", "start"),
    "steal_share": ("CPU steal share", "outside"),  # the hypervisor ran other work
    "server_cpu_cores": ("server CPU (cores used)", "during"),
    "client_cpu_cores": ("client CPU (cores used)", "during"),
    "foreign_cpu_cores": ("other processes' CPU (cores used)", "outside"),
    "foreign_gpu_sm_pct": ("other processes' share of GPU SM time (%)", "outside"),
    "foreign_gpu_mem_mib": ("other processes' GPU memory (MiB)", "outside"),
}


def covariate_label(name: str) -> tuple[str, Measured]:
    """Human label and measurement time of a covariate name (per-device suffix allowed).

    ``sm_clock_start_mhz_gpu1`` → ``("SM clock at start (gpu1)", "start")``;
    an unknown name is its own label with ``"unknown"`` timing.
    """
    if name in KNOWN_COVARIATES:
        return KNOWN_COVARIATES[name]
    base, _, dev = name.rpartition("_")
    if base in KNOWN_COVARIATES:
        label, when = KNOWN_COVARIATES[base]
        return f"{label} ({dev})", when
    return name, "unknown"


def run_covariates(runs: Sequence[Run]) -> dict[str, list[float | None]]:
    """The covariates stored runs carry, one list per covariate (runs in the given order).

    - ``position``: :attr:`Run.position` (the list index when no run has one).
    - ``rest_s``: :attr:`Run.rest_s`.
    - per GPU, from :attr:`Run.telemetry`: ``sm_clock_start_mhz``,
      ``temperature_start_c``, ``sm_clock_mean_mhz``, ``temperature_peak_c``,
      ``power_mean_w``, ``foreign_gpu_sm_pct`` / ``foreign_gpu_mem_mib`` (other
      processes' mean SM share, %, and GPU memory, MiB: set outside the run, like
      ``foreign_cpu_cores``); with one GPU the names are bare, with several they end
      in ``_<device>`` (e.g. ``_gpu1``) and ``sm_clock_start_mhz`` is the mean
      over the GPUs.
    - for a CPU device: ``cpu_clock_start_mhz``, ``cpu_temperature_start_c``,
      ``steal_share`` (host CPU steal time share during the run).
    - for the watched processes: ``server_cpu_cores`` / ``client_cpu_cores``,
      the mean cores the managed server / the load generator used during the
      run. On a shared CPU host a server that got less CPU is the usual reason
      for a slow run (seen here: 1.1 cores in the slow clump, 1.9 in the fast one).
    - ``foreign_cpu_cores``: the mean cores other processes used during the run
      (:attr:`TelemetrySummary.foreign_cpu_cores_mean`: host busy − server − client),
      the usual reason the server got less CPU.

    Covariates that no run has are left out; missing values are ``None``.
    """
    out: dict[str, list[float | None]] = {}
    n = len(runs)
    if any(r.position is not None for r in runs):
        out["position"] = [None if r.position is None else float(r.position) for r in runs]
    else:
        out["position"] = [float(i) for i in range(n)]
    out["rest_s"] = [r.rest_s for r in runs]

    gpu_ids = sorted({d.device for r in runs if r.telemetry for d in r.telemetry.devices
                      if d.kind in GPU_KINDS})
    fields = {"sm_clock_start_mhz": "clock_start_mhz", "temperature_start_c": "temperature_start_c",
              "sm_clock_mean_mhz": "clock_mean_mhz", "temperature_peak_c": "temperature_peak_c",
              "power_mean_w": "power_mean_w", "foreign_gpu_sm_pct": "foreign_sm_mean_pct",
              "foreign_gpu_mem_mib": "foreign_mem_mean_mib"}

    def dev_value(run: Run, device: str, attr: str) -> float | None:
        if run.telemetry is None:
            return None
        for d in run.telemetry.devices:
            if d.device == device:
                return getattr(d, attr)
        return None

    for name, attr in fields.items():
        for dev in gpu_ids:
            key = name if len(gpu_ids) == 1 else f"{name}_{dev}"
            out[key] = [dev_value(r, dev, attr) for r in runs]
    if len(gpu_ids) > 1:
        per = [[dev_value(r, dev, "clock_start_mhz") for dev in gpu_ids] for r in runs]
        out["sm_clock_start_mhz"] = [None if any(v is None for v in row) else float(np.mean(row))
                                     for row in per]
    cpu_ids = sorted({d.device for r in runs if r.telemetry for d in r.telemetry.devices
                      if d.kind == "cpu"})
    for dev in cpu_ids[:1]:
        out["cpu_clock_start_mhz"] = [dev_value(r, dev, "clock_start_mhz") for r in runs]
        out["cpu_temperature_start_c"] = [dev_value(r, dev, "temperature_start_c") for r in runs]
        out["steal_share"] = [dev_value(r, dev, "steal_share") for r in runs]
    for role in ("server", "client"):
        out[f"{role}_cpu_cores"] = [dev_value(r, role, "cpu_share_mean") for r in runs]
    out["foreign_cpu_cores"] = [None if r.telemetry is None else r.telemetry.foreign_cpu_cores_mean
                                for r in runs]
    return {k: v for k, v in out.items() if any(x is not None for x in v)}


@lru_cache(maxsize=16)
def _rank_permutations(n: int) -> np.ndarray:
    """All n! orderings of 0..n−1, shape (n!, n)."""
    return np.array(list(itertools.permutations(range(n))), dtype=np.int8)


def spearman(x: Sequence[float], y: Sequence[float]) -> tuple[float, float, str]:
    """Spearman's ρ of two equal-length sequences with its two-sided p.

    Returns:
        ``(rho, p, method)``; method ``"exact permutation"`` for n ≤
        :data:`EXACT_MAX_N`, else ``"t approximation"``. A constant sequence
        gives ``(nan, nan, …)``.
    """
    xr = _st.rankdata(x)
    yr = _st.rankdata(y)
    n = len(xr)
    if np.ptp(xr) == 0 or np.ptp(yr) == 0:
        return math.nan, math.nan, "undefined (a constant sequence)"
    rho = float(np.corrcoef(xr, yr)[0, 1])
    if n <= EXACT_MAX_N:
        perms = _rank_permutations(n)
        yp = yr[perms]  # every reordering of y's ranks against fixed x ranks
        xc = xr - xr.mean()
        ypc = yp - yr.mean()
        r_all = (ypc @ xc) / math.sqrt(float(xc @ xc) * float(np.sum((yr - yr.mean()) ** 2)))
        p = float(np.mean(np.abs(r_all) >= abs(rho) - 1e-12))
        return rho, p, "exact permutation"
    res = _st.spearmanr(x, y)
    return rho, float(res.pvalue), "t approximation"


class CovariateRank(BaseModel):
    """How one covariate goes with the metric.

    Attributes:
        name: covariate name (CSV column or :func:`run_covariates` key).
        label: human label (see :data:`KNOWN_COVARIATES`).
        measured: ``"start"``, ``"during"``, ``"order"`` or ``"unknown"``.
        n: runs where it is known.
        rho / p / p_method: Spearman's ρ with the metric, its two-sided p and how p was computed.
        p_holm: p Holm-adjusted over the covariates ranked.
        separation: rank-biserial r of the covariate, high vs low group (None without groups).
        separation_p: exact two-sided Mann–Whitney p of that separation.
        group_means: covariate mean in the low and the high group (None without groups).
    """

    name: str
    label: str
    measured: str
    n: int
    rho: float
    p: float
    p_method: str
    p_holm: float | None = None
    separation: float | None = None
    separation_p: float | None = None
    group_means: tuple[float, float] | None = None


def separated(r: CovariateRank) -> bool:
    """Does the covariate separate the two groups completely, at exact p ≤ :data:`SEPARATED_P`?"""
    return (r.separation is not None and abs(r.separation) == 1.0 and r.separation_p is not None
            and r.separation_p <= SEPARATED_P + 1e-12)


def rank_covariates(values: Sequence[float], covariates: Mapping[str, Sequence[float | None]],
                    groups: Sequence[int] | None = None) -> tuple[list[CovariateRank], dict[str, str]]:
    """Rank covariates by how strongly they go with ``values`` (and separate ``groups``).

    Args:
        values: the metric per run.
        covariates: name → value per run (same length; ``None`` or NaN = unknown).
        groups: optional 0/1 label per run (low/high group from :func:`~tokcaliper.stats.clumps.best_split`).

    Returns:
        ``(ranked, skipped)``: ranked covariates, strongest first; skipped maps
        a covariate name to why it was not ranked (too few known values, constant).

    Raises:
        InputError: a covariate or ``groups`` of another length than ``values``.
    """
    from statsmodels.stats.multitest import multipletests  # lazy: slow import

    y = np.asarray(values, dtype=float)
    n = len(y)
    g = None if groups is None else np.asarray(groups, dtype=int)
    if g is not None and len(g) != n:
        raise InputError(f"{len(g)} group labels for {n} runs")
    ranked: list[CovariateRank] = []
    skipped: dict[str, str] = {}
    for name, col in covariates.items():
        if len(col) != n:
            raise InputError(f"covariate {name!r} has {len(col)} values for {n} runs")
        c = np.array([math.nan if v is None else float(v) for v in col])
        known = np.isfinite(c)
        label, measured = covariate_label(name)
        if known.sum() < MIN_PAIRS:
            skipped[name] = f"known for {int(known.sum())} run(s); ranking needs ≥ {MIN_PAIRS}"
            continue
        if np.ptp(c[known]) == 0:
            skipped[name] = f"the same value ({c[known][0]:g}) in every run"
            continue
        rho, p, how = spearman(c[known], y[known])
        if not math.isfinite(rho):
            skipped[name] = "the metric is constant"
            continue
        sep = sep_p = means = None
        if g is not None:
            lo, hi = c[known & (g == 0)], c[known & (g == 1)]
            if len(lo) and len(hi):
                u = _st.mannwhitneyu(hi, lo, alternative="two-sided")
                sep = float(2 * u.statistic / (len(lo) * len(hi)) - 1)
                sep_p = float(u.pvalue)
                means = (float(lo.mean()), float(hi.mean()))
        ranked.append(CovariateRank(name=name, label=label, measured=measured, n=int(known.sum()),
                                    rho=rho, p=p, p_method=how, separation=sep, separation_p=sep_p,
                                    group_means=means))
    # A covariate that follows the run's own throughput (the client's work is per token
    # received) correlates with it as an effect, never as a cause: listed, but after the
    # others whatever its ρ, so that neither analyze nor the noise floor's sentence names it.
    # Ties: a covariate measured during the run (possibly an effect of it) after the others.
    # Among strong correlations (|ρ| ≥ STRONG_RHO) a covariate set outside the run (other
    # processes' load) comes before those measured during it: the server's own CPU falls when
    # other work takes its cores, a mediator that would name the symptom, not the cause.
    # So does one that separates the two groups completely (|r| = 1) at an exact
    # Mann–Whitney p ≤ SEPARATED_P: the bimodal case (contended runs and quiet ones) whose
    # within-group order is noise, where ρ can stay near 0.77 (issue 21).
    ranked.sort(key=lambda r: (r.name in FOLLOWS_THROUGHPUT,
                               not (r.measured == "outside" and (abs(r.rho) >= STRONG_RHO or separated(r))),
                               -abs(r.rho), -abs(r.separation or 0.0), r.measured == "during", r.name))
    if ranked:
        holm = multipletests([r.p for r in ranked], method="holm")[1]
        for r, ph in zip(ranked, holm):
            r.p_holm = float(ph)
    return ranked, skipped
