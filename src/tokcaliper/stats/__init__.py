"""Pure statistics: plain numbers in, pydantic results out; no I/O (ARCHITECTURE.md).

- :mod:`.describe` — mean, sample std, CV, spread, CI (METHODS.md M1)
- :mod:`.resolution` — MDE and runs per arm, quick and power-based; ``plan`` (M3)
- :mod:`.compare` — Welch's t, per-pair ratios, variance tests, single numbers (M4, M9, M10)
- :mod:`.noise` — noise floor per metric (M1)
- :mod:`.paired`, :mod:`.equivalence`, :mod:`.multiple`, :mod:`.verdict_gate` — paired
  log ratios, TOST, Holm, the faster/slower/equivalent/inconclusive gate
- :mod:`.ab` — the whole A/B analysis behind ``tokcaliper compare``, its one verdict and
  the one "stably slow" rule (M9; docs/compare.md)
- :mod:`.sequential` — always-valid stopping rule of ``--until-decided`` (docs/calibration.md)
- :mod:`.variance_components` — restart-level against run-level variance, allocation
"""

from tokcaliper.stats.compare import (
    PairStep,
    VarianceTest,
    WelchResult,
    f_test_from_summary,
    pair_ratios,
    single_number_comparison,
    variance_test,
    welch,
    welch_from_summary,
)
from tokcaliper.stats.describe import Description, describe
from tokcaliper.stats.noise import MetricNoise, NoiseFloorReport, noise_floor
from tokcaliper.stats.resolution import (
    Plan,
    achieved_power_of_quick_formula,
    mde_power,
    mde_quick,
    n_power,
    n_quick,
    n_quick_raw,
    plan,
    power_at,
)

__all__ = [
    "Description",
    "MetricNoise",
    "NoiseFloorReport",
    "PairStep",
    "Plan",
    "VarianceTest",
    "WelchResult",
    "achieved_power_of_quick_formula",
    "describe",
    "f_test_from_summary",
    "mde_power",
    "mde_quick",
    "n_power",
    "n_quick",
    "n_quick_raw",
    "noise_floor",
    "pair_ratios",
    "plan",
    "power_at",
    "single_number_comparison",
    "variance_test",
    "welch",
    "welch_from_summary",
]
