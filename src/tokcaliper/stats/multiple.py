"""Several metrics at once: Holm's step-down correction (Holm 1979).

Testing throughput, TTFT and ITL on the same runs gives three chances to see
a "significant" difference by luck. Holm's procedure keeps the family-wise
error rate at α without assuming independence (Holm, S., 1979, "A simple
sequentially rejective multiple test procedure", Scand. J. Statist. 6:65–70):
sort the m p-values ``p_(1) ≤ … ≤ p_(m)``; the adjusted value is
``p̃_(i) = min(1, max_{j ≤ i} (m − j + 1) · p_(j))``; reject where ``p̃ < α``.
Computed by ``statsmodels.stats.multitest.multipletests(method="holm")``.
Pure function, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from tokcaliper.errors import InputError

__all__ = ["holm", "SOURCE_HOLM"]

SOURCE_HOLM = ("Holm (1979) step-down correction: statsmodels.stats.multitest.multipletests("
               "method='holm')")


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input order (shape (m,) → (m,)).

    Args:
        pvalues: raw two-sided p-values in [0, 1], m ≥ 1.

    Returns:
        Adjusted p-values; compare each with α.

    Raises:
        InputError: empty input or a value outside [0, 1] / not finite.
    """
    ps = [float(p) for p in pvalues]
    if not ps:
        raise InputError("Holm's correction needs at least one p-value")
    for i, p in enumerate(ps):
        if not (math.isfinite(p) and 0 <= p <= 1):
            raise InputError(f"p-value {i + 1} must be in [0, 1], got {p}")
    from statsmodels.stats.multitest import multipletests

    return [float(x) for x in multipletests(ps, method="holm")[1]]
