"""The audit checks, one module each (METHODS.md A1–A6, A10, A11; A7 is ``audit.diff``).

Each per-record module exposes ``CHECK``, ``TITLE`` and ``check(ctx) -> Verdict``;
A4 works on a whole batch (``check_batch(records)``). Checks are pure: they
never open files, sockets or processes.
"""

from tokcaliper.audit.checks import (
    a1_acceptance,
    a2_power,
    a3_roofline,
    a4_batch_curve,
    a5_denominator,
    a6_context,
    a10_baseline,
    a11_multiplier,
)
from tokcaliper.audit.checks._common import CheckContext

#: Per-record checks in display order.
RECORD_CHECKS = (a1_acceptance, a2_power, a3_roofline, a5_denominator, a6_context, a10_baseline, a11_multiplier)

__all__ = ["CheckContext", "RECORD_CHECKS", "a4_batch_curve"]
