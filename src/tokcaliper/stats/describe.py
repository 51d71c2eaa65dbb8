"""Descriptive statistics of one arm's repetitions (METHODS.md M1).

Pure functions: plain numbers in, a pydantic :class:`Description` out. No I/O.

Formulas
- mean: arithmetic mean.
- std: *sample* standard deviation, ``ddof=1`` (Bessel's correction).
- CV: coefficient of variation = std / mean (METHODS.md vocabulary).
- spread: (max − min) / mean (METHODS.md M1); max_over_min: max / min (M4).
- ci95 of the mean: mean ± t(0.975, n−1) · std / √n (Student's t;
  ``scipy.stats.t.ppf``).
- std_ci95: chi-square interval for a normal standard deviation,
  [std·√((n−1)/χ²(0.975, n−1)), std·√((n−1)/χ²(0.025, n−1))]
  (``scipy.stats.chi2.ppf``); cv_ci95 divides it by the mean (ignores the
  mean's own uncertainty, which is much smaller than the std's at small n).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel
from scipy import stats as _st

from tokcaliper.errors import InputError
from tokcaliper.numbers import num

__all__ = ["MAX_MAGNITUDE", "Description", "describe", "require_finite_values"]

#: Largest magnitude of a value the statistics take. They sum and square the
#: values: 10⁵ values (the largest table a command reads) of 10¹⁰⁰ square and
#: sum to 10²⁰⁵, far below the largest float (1.8·10³⁰⁸); values near that
#: limit made the mean ∞ and the tests' p-values garbage. No measured figure
#: (tok/s, seconds, watts, MHz) comes near 10¹⁰⁰.
MAX_MAGNITUDE = 1e100


class Description(BaseModel):
    """Summary of n repetitions of one metric (units are those of the input).

    Attributes:
        n: number of values.
        mean: arithmetic mean.
        std: sample standard deviation (ddof=1); ``None`` when n = 1.
        cv: std / mean as a fraction (0.129 = 12.9%); ``None`` when n = 1 or mean ≤ 0.
        min, max: extremes.
        spread: (max − min) / mean as a fraction (METHODS.md M1); ``None`` when mean ≤ 0.
        max_over_min: max / min (``None`` when min ≤ 0).
        ci95: 95% confidence interval of the mean via Student's t, ``(low, high)``;
            ``None`` when n = 1.
        std_ci95: 95% chi-square interval of the std; ``None`` when n = 1.
        cv_ci95: std_ci95 / mean; ``None`` when std or CV is undefined.
    """

    n: int
    mean: float
    std: float | None
    cv: float | None
    min: float
    max: float
    spread: float | None
    max_over_min: float | None
    ci95: tuple[float, float] | None
    std_ci95: tuple[float, float] | None
    cv_ci95: tuple[float, float] | None


def require_finite_values(values: Sequence[float], name: str = "values") -> np.ndarray:
    """Return ``values`` as a 1-D float array, or raise :class:`InputError`.

    Raises:
        InputError: when ``values`` is empty, not numeric, holds NaN/±inf or
            a magnitude above :data:`MAX_MAGNITUDE` (the message names
            ``name`` and the offending position).
    """
    try:
        arr = np.asarray(list(values), dtype=float)
    except (TypeError, ValueError) as e:
        raise InputError(f"{name} must be numbers: {e}") from None
    if arr.ndim != 1:
        raise InputError(f"{name} must be a flat list of numbers")
    if arr.size == 0:
        raise InputError(f"{name} is empty: need at least one value")
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        i = int(bad[0])
        raise InputError(f"{name} must be finite, got {arr[i]} at position {i + 1}")
    huge = np.flatnonzero(np.abs(arr) > MAX_MAGNITUDE)
    if huge.size:
        i = int(huge[0])
        raise InputError(f"{name}: {num(float(arr[i]), 3, trim=True)} at position {i + 1} is beyond "
                         f"±{num(MAX_MAGNITUDE, 1)}: the statistics sum and square the values, which would "
                         "overflow (no measured figure is that large)")
    return arr


def describe(values: Sequence[float], name: str = "values") -> Description:
    """Describe the repetitions of one metric (METHODS.md M1).

    Args:
        values: shape (n,), n ≥ 1, finite numbers in the metric's unit
            (e.g. aggregate output throughput in tok/s).
        name: used in error messages.

    Returns:
        :class:`Description`; with n = 1 the std, CV and intervals are ``None``
        (undefined), not an error.

    Raises:
        InputError: empty or non-finite input.
    """
    arr = require_finite_values(values, name)
    n = int(arr.size)
    mean = float(arr.mean())
    lo, hi = float(arr.min()), float(arr.max())
    positive_mean = mean > 0
    spread = (hi - lo) / mean if positive_mean else None
    max_over_min = hi / lo if lo > 0 else None
    if n == 1:
        return Description(
            n=1, mean=mean, std=None, cv=None, min=lo, max=hi, spread=spread,
            max_over_min=max_over_min, ci95=None, std_ci95=None, cv_ci95=None,
        )
    std = float(arr.std(ddof=1))
    cv = std / mean if positive_mean else None
    half = float(_st.t.ppf(0.975, n - 1)) * std / math.sqrt(n)
    std_lo = std * math.sqrt((n - 1) / float(_st.chi2.ppf(0.975, n - 1)))
    std_hi = std * math.sqrt((n - 1) / float(_st.chi2.ppf(0.025, n - 1)))
    cv_ci = (std_lo / mean, std_hi / mean) if positive_mean else None
    return Description(
        n=n, mean=mean, std=std, cv=cv, min=lo, max=hi, spread=spread,
        max_over_min=max_over_min, ci95=(mean - half, mean + half),
        std_ci95=(std_lo, std_hi), cv_ci95=cv_ci,
    )
