"""Red flags of acceptance figures: the output was predictable by construction (METHODS.md A1).

One function, used both on measured runs (``tokcaliper spec show``) and by the
audit check A1 on published records (:mod:`tokcaliper.audit.checks.a1_acceptance`).

A drafter that accepts every token — accepted == drafted, or equivalently
AL at its ceiling k + 1 (every step accepts all k drafts, plus the bonus
token) — is copying text the target was always going to produce (a draft
model identical to the target, an n-gram drafter on repeated text, a prompt
asking for repetition). The figure measures the drafter's copy rate, not the
model's predictability on real tasks.
"""

from __future__ import annotations

from pydantic import BaseModel

from tokcaliper.numbers import num

#: The message of the red flag, shared by ``spec show`` and audit check A1.
PREDICTABLE = "output predictable by construction — this measures the drafter's copy rate, not the model"

#: Tolerance on AL = k + 1 for measured counts (exact integers, so only float noise).
MEASURED_AL_TOL = 1e-9


class RedFlag(BaseModel):
    """One red flag: its code, the finding with its numbers, and the shared message.

    Attributes:
        code: ``"all_accepted"`` (accepted == drafted) or ``"al_at_ceiling"`` (AL = k + 1).
        finding: the measured fact, e.g. ``"accepted == drafted (226/226)"``.
        message: :data:`PREDICTABLE`.
    """

    code: str
    finding: str
    message: str = PREDICTABLE


def all_drafts_accepted(drafted: float | None, accepted: float | None) -> bool:
    """True when something was drafted and every drafted token was accepted."""
    return drafted is not None and accepted is not None and drafted > 0 and accepted == drafted


def al_at_ceiling(al: float | None, k: float | None, tol: float = MEASURED_AL_TOL,
                  without_bonus_too: bool = False) -> bool:
    """True when AL equals its ceiling k + 1 within ``tol``.

    Args:
        al: mean acceptance length, bonus token included.
        k: draft window (configured k, or k_eff from counts).
        tol: absolute tolerance (published figures are rounded: A1 uses 0.005).
        without_bonus_too: also flag AL = k (the ceiling of a source that
            counts accepted drafts only).
    """
    if al is None or k is None or k <= 0:
        return False
    if abs(al - (k + 1)) <= tol:
        return True
    return without_bonus_too and abs(al - k) <= tol


def predictable_by_construction(*, al: float | None = None, k: float | None = None,
                                drafted: float | None = None, accepted: float | None = None,
                                tol: float = MEASURED_AL_TOL) -> list[RedFlag]:
    """Red flags of measured acceptance: accepted == drafted, AL = k + 1.

    Args:
        al: mean acceptance length (bonus token included).
        k: draft window the AL is compared with (configured k or k_eff).
        drafted, accepted: drafted and accepted token counts.
        tol: tolerance on AL = k + 1.

    Returns:
        The flags raised (empty when none).
    """
    flags: list[RedFlag] = []
    if all_drafts_accepted(drafted, accepted):
        flags.append(RedFlag(code="all_accepted",
                             finding=f"acceptance rate 1.0: accepted == drafted ({accepted:g}/{drafted:g})"))
    if al_at_ceiling(al, k, tol):
        flags.append(RedFlag(code="al_at_ceiling", finding=f"AL {num(al, 4, trim=True)} = k + 1 = {k:g} + 1"))
    return flags
