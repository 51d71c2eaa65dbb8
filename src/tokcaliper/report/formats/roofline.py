"""Each arm's fraction of its memory-bandwidth roofline, as the report pages print it (issue 25).

The store-reading report builders (:mod:`tokcaliper.experiment.report_data`) may not
import the audit's facts; they take this function as their ``roofline`` argument.
"""

from __future__ import annotations

from collections.abc import Sequence

from tokcaliper.audit.run_roofline import arm_rooflines
from tokcaliper.model.run import Run
from tokcaliper.report.roofline_view import arm_line

__all__ = ["roofline_lines"]


def roofline_lines(runs: Sequence[Run], arms: Sequence[str]) -> list[str]:
    """One line per arm (:func:`tokcaliper.report.roofline_view.arm_line`), then the first
    computed run's arithmetic (``[]`` when no arm has a valid run).

    Args:
        runs: the stored runs (any order). arms: the arms, in the page's order.
    """
    got = arm_rooflines(list(runs), list(arms))
    first = next((r for a in got for r in a.runs if r.fraction is not None), None)
    return [arm_line(a) for a in got] + ([] if first is None else list(first.arithmetic))
