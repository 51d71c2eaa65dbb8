"""The one verdict renderer: a :class:`~tokcaliper.model.verdict.Verdict` as text lines,
rich markup or a JSON dict.

Every command that shows a verdict (``plan``, ``bench``'s noise floor, ``audit``,
``audit diff``) goes through these functions, so a verdict reads the same
everywhere: status, title, summary, then the arithmetic one step per line,
then the sources. The JSON form is the verdict's own fields, made JSON-safe.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from tokcaliper.model.verdict import Status, Verdict
from tokcaliper.report.output import to_jsonable

__all__ = [
    "STATUS_STYLE",
    "print_verdict",
    "status_markup",
    "summary_markup",
    "verdict_dict",
    "verdict_lines",
    "verdict_markup",
]

#: rich style of each status (fail stands out, n/a recedes).
STATUS_STYLE: dict[Status, str] = {
    Status.FAIL: "bold red", Status.WARN: "yellow", Status.PASS: "green", Status.NA: "dim"}


def status_markup(status: Status) -> str:
    """``status`` as its word in its colour, e.g. ``"[bold red]fail[/]"``."""
    return f"[{STATUS_STYLE[status]}]{status.value}[/]"


def verdict_lines(v: Verdict, *, arithmetic: bool = True, sources: bool = True,
                  indent: str = "  ") -> list[str]:
    """The verdict as plain text lines (no markup).

    Returns:
        ``["[fail] M3 resolution of the ruler: don't run: …", "  MDE … = …", …,
        "sources: …"]``: the first line is status, check, title and summary; the
        arithmetic follows one step per line, indented by ``indent``; the
        sources come last, joined by ``"; "``.
    """
    lines = [f"[{v.status.value}] {v.check} {v.title}: {v.summary}"]
    if arithmetic:
        lines += [indent + a for a in v.arithmetic]
    if sources and v.sources:
        lines.append("sources: " + "; ".join(v.sources))
    return lines


def verdict_markup(v: Verdict, *, indent: str = "  ", clean=lambda s: s) -> str:  # type: ignore[no-untyped-def]
    """Summary and arithmetic as rich markup: the summary, then each step dimmed beneath.

    ``clean`` is applied to each piece of text before escaping (e.g. to show
    control characters as escapes).
    """
    return "\n".join([escape(clean(v.summary))]
                     + [f"[dim]{indent}{escape(clean(a))}[/]" for a in v.arithmetic])


def summary_markup(v: Verdict, *, label: str) -> str:
    """One line per verdict in a list of them: ``"- label: summary"`` (markup-escaped)."""
    return f"- {escape(label)}: {escape(v.summary)}"


def print_verdict(console: Console, v: Verdict, *, label: str = "verdict",
                  sources: bool = True) -> None:
    """Print a verdict on ``console``: ``label (status): summary``, ``arithmetic:`` with one
    step per line, then the sources, dimmed."""
    style = f"bold {STATUS_STYLE[v.status]}"
    console.print(f"[{style}]{escape(label)} ({v.status.value}):[/{style}] {escape(v.summary)}")
    if v.arithmetic:
        console.print("arithmetic:")
        for line in v.arithmetic:
            console.print(f"  {escape(line)}")
    if sources and v.sources:
        console.print("sources: " + escape("; ".join(v.sources)), style="dim")


def verdict_dict(v: Verdict) -> dict[str, Any]:
    """The verdict as a JSON-safe dict: check, title, status, summary, arithmetic, inputs,
    sources (NaN/inf inputs become ``None``)."""
    out = to_jsonable(v)
    assert isinstance(out, dict)
    return out
