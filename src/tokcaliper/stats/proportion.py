"""Confidence interval of a proportion k of n (pure computation).

The Wilson score interval (Wilson 1927; recommended over the normal
"Wald" interval by Brown, Cai & DasGupta 2001, *Interval estimation for a
binomial proportion*, Statist. Sci. 16:101): with z the normal quantile,
p̂ = k/n,

    centre = (p̂ + z²/2n) ÷ (1 + z²/n)
    half   = z ÷ (1 + z²/n) · √(p̂(1 − p̂)/n + z²/4n²)

It stays inside [0, 1] and is not degenerate at k = 0 or k = n (where the
Wald interval collapses to a point), which is where SLO attainment lives.
"""

from __future__ import annotations

import math

__all__ = ["wilson_interval"]


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval of the proportion ``k ÷ n``, as fractions in [0, 1].

    Args:
        k: successes, 0 ≤ k ≤ n.
        n: trials; 0 → None (no interval).
        confidence: two-sided level in (0, 1).

    Raises:
        ValueError: k outside [0, n] or confidence outside (0, 1).
    """
    if not 0 <= k <= n:
        raise ValueError(f"k must be in [0, n], got k={k}, n={n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n == 0:
        return None
    from scipy import stats as _st

    z = float(_st.norm.ppf(0.5 + confidence / 2))
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    # At k = 0 (k = n) the lower (upper) end is exactly 0 (1); say so rather than round.
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return lo, hi
