"""The verdict object every check and comparison returns.

A verdict carries its inputs, the arithmetic it did and the source of every
constant, so that each renderer (terminal, JSON) shows the same evidence
(ARCHITECTURE.md: "one function computes each number").
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, Field


class Status(str, Enum):
    """Outcome of a check. ``NA`` means the check does not apply to the input."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    NA = "n/a"


class Verdict(BaseModel):
    """One check's result with the evidence behind it.

    Attributes:
        check: short identifier, e.g. ``"A1"`` or ``"welch"``.
        title: human name of the check, e.g. ``"acceptance length ÷ draft window"``.
        status: pass / warn / fail / n/a.
        summary: one sentence a person reads first.
        arithmetic: the calculation, one step per line, with numbers substituted.
        inputs: the values the check used, keyed by name (units in the key name).
        sources: where every constant came from (spec section, package, table).
    """

    check: str
    title: str
    status: Status
    summary: str
    arithmetic: list[str] = Field(default_factory=list)
    inputs: dict[str, Any] = Field(default_factory=dict)
    sources: list[str] = Field(default_factory=list)
