"""The verdict object every check and comparison returns.

A verdict carries its inputs, the arithmetic it did and the source of every
constant, so that each renderer (terminal, JSON) shows the same evidence
(ARCHITECTURE.md: "one function computes each number").
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, Field, model_validator

#: What joins the findings of one verdict in its summary sentence.
FINDING_SEPARATOR = "; "


class Status(str, Enum):
    """Outcome of a check. ``NA`` means the check does not apply to the input."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    NA = "n/a"


class Finding(BaseModel):
    """One thing a check found, kept whole (it may itself contain ``"; "``).

    Attributes:
        code: stable identifier of the kind of finding, ``"<check>.<what>"``
            (``"A5.ttft_empty"``); two records share a finding when code and text match.
        status: what this finding alone makes of the check (pass / warn / fail / n/a).
        text: the finding in words, as the summary shows it.
        figures: the numbers the text quotes, keyed by name (units in the key name).
    """

    code: str
    status: Status
    text: str
    figures: dict[str, Any] = Field(default_factory=dict)

    def same(self, other: Finding) -> bool:
        """True when ``other`` says the same thing (same code and text; figures follow from them)."""
        return self.code == other.code and self.text == other.text


def summary_of(findings: list[Finding]) -> str:
    """The summary sentence of ``findings``: their texts joined by ``"; "`` (empty texts skipped)."""
    return FINDING_SEPARATOR.join(f.text for f in findings if f.text)


class Verdict(BaseModel):
    """One check's result with the evidence behind it.

    Attributes:
        check: short identifier, e.g. ``"A1"`` or ``"welch"``.
        title: human name of the check, e.g. ``"acceptance length ÷ draft window"``.
        status: pass / warn / fail / n/a.
        summary: one sentence a person reads first. When not given it is derived
            from ``findings`` (:func:`summary_of`); a caller that changes
            ``findings`` re-derives it with :meth:`set_findings`.
        findings: what the check found, one typed entry each (audit checks);
            empty for verdicts that are one sentence (comparisons).
        arithmetic: the calculation, one step per line, with numbers substituted.
        inputs: the values the check used, keyed by name (units in the key name).
        sources: where every constant came from (spec section, package, table).
    """

    check: str
    title: str
    status: Status
    summary: str = ""
    findings: list[Finding] = Field(default_factory=list)
    arithmetic: list[str] = Field(default_factory=list)
    inputs: dict[str, Any] = Field(default_factory=dict)
    sources: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _derive_summary(cls, data: Any) -> Any:
        """Fill ``summary`` from ``findings`` when the caller gave none."""
        if isinstance(data, dict) and not data.get("summary") and data.get("findings"):
            found = [f if isinstance(f, Finding) else Finding.model_validate(f) for f in data["findings"]]
            data = {**data, "findings": found, "summary": summary_of(found)}
        return data

    def set_findings(self, findings: list[Finding]) -> None:
        """Replace the findings and re-derive the summary.

        A lead the check put before the derived part (A4's ``"group …: "``) is kept.
        """
        old = summary_of(self.findings)
        lead = self.summary[: len(self.summary) - len(old)] if old and self.summary.endswith(old) else ""
        self.findings = list(findings)
        self.summary = lead + summary_of(self.findings)
