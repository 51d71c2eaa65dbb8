"""Render runs against their rooflines (``bench``, ``experiment show``, ``compare --experiment``; issue 25).

Per arm: the mean fraction of the per-stream roofline with its spread across
runs (n and CV), the aggregate fraction where a batch bound applies, then the
first run's arithmetic and sources as ``audit`` prints A3's, or the facts that
are missing. The figures come from :mod:`tokcaliper.audit.run_roofline`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console

from tokcaliper.audit.run_roofline import arm_rooflines
from tokcaliper.model.roofline import ArmRoofline
from tokcaliper.model.run import Run
from tokcaliper.numbers import num, with_uncertainty
from tokcaliper.report.text import esc

HEAD = "roofline: per-stream decode ÷ (bandwidth / bytes per token), docs/roofline.md"


def roofline_payload(arms: Sequence[ArmRoofline]) -> list[dict[str, Any]]:
    """JSON-ready: one object per arm, its runs' figures, arithmetic and missing facts."""
    return [a.model_dump() for a in arms]


def arm_line(a: ArmRoofline) -> str:
    """One arm's fractions: ``"default: 0.0246 ± 0.0012 of 224 tok/s (n=2, CV 4.9%); …"``."""
    if not a.n:
        return f"{a.arm}: not computed — missing: {'; '.join(a.missing) or 'no valid run'}"
    first = next(r for r in a.runs if r.fraction is not None)
    text = (f"{a.arm}: per-stream {with_uncertainty(a.mean, a.std, a.n)} of {num(first.bound_tok_s, 3)} tok/s"
            f" ({num(first.per_stream_tok_s, 3)} tok/s measured in run #{first.run_id})")
    if a.aggregate_n and a.aggregate_mean is not None:
        text += (f"; aggregate at {first.batch} streams {with_uncertainty(a.aggregate_mean, a.aggregate_std, a.aggregate_n)}"
                 f" of {num(first.aggregate_bound_tok_s, 3)} tok/s")
    return text


def render_roofline(console: Console, runs: Sequence[Run], *, wide: bool = False,
                    arms: Sequence[ArmRoofline] | None = None) -> list[ArmRoofline]:
    """Print each arm's fraction of its roofline, then the first computed run's arithmetic.

    ``wide`` adds the memory-fit lines. Returns the arms (for a JSON payload).
    """
    arms = list(arms) if arms is not None else arm_rooflines(runs)
    if not arms:
        return arms
    console.print(f"  {HEAD}")
    for a in arms:
        console.print(f"    {esc(arm_line(a))}")
    shown = next((r for a in arms for r in a.runs if r.fraction is not None), None)
    if shown is not None:
        console.print(f"    run #{shown.run_id} on {esc(shown.device or '?')}:")
        for line in shown.arithmetic:
            if wide or not line.startswith("memory:"):
                console.print(f"      {esc(line)}")
        for line in shown.sources:
            console.print(f"      source: {esc(line)}")
    return arms
