"""The prefix-cache hit rate of a set of runs, in text (:mod:`tokcaliper.load.prefix_cache`)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from rich.console import Console

from tokcaliper.model.run import Run
from tokcaliper.numbers import with_uncertainty
from tokcaliper.report.text import esc

__all__ = ["prefix_cache_line", "render_prefix_cache"]

_SOURCES = {"responses": "per-response counts", "counters": "server counters over each run",
            "gauge": "server gauge"}

#: Turns shown one per line (the rest are in --json).
MAX_TURN_LINES = 12


def _spread(values: list[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else None
    return with_uncertainty(statistics.fmean(values), sd, n=len(values), unit="%")


def prefix_cache_line(runs: Sequence[Run]) -> str | None:
    """``prefix-cache hit: 85.3 ± 1.2 % (n=R, CV …) of prompt tokens, from …``, or None.

    The hit rate is each valid run's (``prefix_cache_hit_pct``), its mean ±
    sd over the runs; per turn likewise when the runs are sessions.
    """
    reps = [x.metrics.prefix_cache for x in runs if x.valid and x.metrics.prefix_cache is not None]
    hits = [100 * r.hit_share for r in reps if r.hit_share is not None]
    if not hits:
        return None
    sources = sorted({_SOURCES.get(r.source, r.source) for r in reps})
    line = f"  prefix-cache hit: {_spread(hits)} of prompt tokens, from {'; '.join(sources)}"
    turns = sorted({t for r in reps for t in r.by_turn}, key=int)
    for t in turns[:MAX_TURN_LINES]:
        line += f"\n    turn {t}: {_spread([100 * r.by_turn[t] for r in reps if t in r.by_turn])}"
    if len(turns) > MAX_TURN_LINES:
        line += f"\n    … {len(turns) - MAX_TURN_LINES} more turns in --json (metrics.prefix_cache.by_turn)"
    sized = sorted({r.prefix_sized_by for r in reps if r.prefix_sized_by})
    if sized:
        line += f"\n    shared prefixes sized by {'/'.join(sized)}" + (
            " (no /tokenize: P filler words, approximate)" if "words" in sized else "")
    notes = sorted({r.note for r in reps if r.note})
    for note in notes:
        line += f"\n    note: {note}"
    return line


def render_prefix_cache(console: Console, runs: Sequence[Run]) -> None:
    """Print :func:`prefix_cache_line` of ``runs`` (nothing when no run has a hit rate)."""
    line = prefix_cache_line(runs)
    if line is not None:
        console.print(esc(line))
