"""A run's and an arm's decode rates as fractions of their memory-bandwidth rooflines (issue 25).

Pure data (pydantic): :mod:`tokcaliper.audit.run_roofline` computes them (the audit's A3
bound applied to stored runs); results of ``bench``, ``experiment show`` and
``compare --experiment`` carry them, and :mod:`tokcaliper.report.roofline_view`
draws them. Here, below every package, so a result class outside ``audit`` can
name the type.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel

from tokcaliper.model.run import Run

__all__ = ["ArmRoofline", "RooflineOf", "RunRoofline"]


class RunRoofline(BaseModel):
    """One run's decode rates as fractions of their rooflines.

    Attributes:
        run_id / arm: the run.
        device: what the bound is for (``"gpu0 NVIDIA H200"``, ``"host CPU AMD EPYC"``).
        per_stream_tok_s: the run's mean per-stream decode rate, tok/s.
        bound_tok_s: the per-stream roofline, tok/s (A3's bound for the run's record).
        fraction: per_stream_tok_s ÷ bound_tok_s.
        measured_gb_s / spec_gb_s: the bandwidth used (measured) and the spec-sheet
            figure beside it (None: no spec sheet), GB/s.
        spec_bound_tok_s / spec_fraction: the same at the spec-sheet bandwidth.
        spec_source: where the spec-sheet figure comes from (for a host CPU, which has
            no table: A3's assumed host bandwidth, said as such).
        batch: streams one batch step serves, B = min(concurrency, slots).
        aggregate_tok_s / aggregate_bound_tok_s / aggregate_fraction: the run's aggregate
            output rate, B × roofline and their ratio (None when B = 1).
        arithmetic / sources: lines as the audit prints them.
        missing: each fact that is not known (then the bound is None).
    """

    run_id: int | None
    arm: str
    device: str | None = None
    per_stream_tok_s: float | None = None
    bound_tok_s: float | None = None
    fraction: float | None = None
    measured_gb_s: float | None = None
    spec_gb_s: float | None = None
    spec_bound_tok_s: float | None = None
    spec_fraction: float | None = None
    spec_source: str | None = None
    batch: int = 1
    aggregate_tok_s: float | None = None
    aggregate_bound_tok_s: float | None = None
    aggregate_fraction: float | None = None
    arithmetic: list[str] = []
    sources: list[str] = []
    missing: list[str] = []


class ArmRoofline(BaseModel):
    """An arm's runs against their rooflines: the fractions' mean and spread across runs.

    Attributes:
        arm: the arm. runs: one :class:`RunRoofline` per valid run.
        n: runs with a fraction. mean / std / cv: of the per-stream fraction over them
            (std and CV None with n = 1). aggregate_mean / aggregate_cv: the same for the
            aggregate fraction (None when no batch bound applies).
        missing: the first run's missing facts, when no run has a fraction.
    """

    arm: str
    runs: list[RunRoofline]
    n: int = 0
    mean: float | None = None
    std: float | None = None
    cv: float | None = None
    aggregate_n: int = 0
    aggregate_mean: float | None = None
    aggregate_std: float | None = None
    missing: list[str] = []


#: The function that gives each arm's rooflines of some runs, arms in the given order
#: first (:func:`tokcaliper.audit.run_roofline.arm_rooflines`): the packages that may not
#: import ``audit`` (``experiment``) take it from their caller.
RooflineOf = Callable[[Sequence[Run], Sequence[str]], list[ArmRoofline]]
