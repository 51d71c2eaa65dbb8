"""What the read commands show of a results database: run rows, damaged runs, one run.

The store (:mod:`tokcaliper.store`) builds these; they live here, below it, so
that the renderers in :mod:`tokcaliper.report` can take them without importing
the store.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from tokcaliper.model.run import RequestRecord, Run
from tokcaliper.model.warnings import DAMAGED_RUN_SKIPPED, Caveat, caveat_of

__all__ = ["DamagedRun", "RunList", "RunRow", "ShownRun", "damaged_caveats", "run_caveats", "shown_run"]


class RunRow(BaseModel):
    """One line of ``tokcaliper runs``: identity and headline figures.

    Attributes:
        id, session, arm: the run's identity. repetition: 0-based within its arm.
        started_at: UTC ISO 8601. completed, failed: request counts (n of its figures).
        aggregate_output_tok_s: output tokens per second over the run (tok/s).
        ttft_p50_ms: median time to first token (ms). tool: the measuring tool.
    """

    id: int
    session: str
    arm: str
    repetition: int
    started_at: str
    completed: int
    failed: int
    aggregate_output_tok_s: float | None
    ttft_p50_ms: float | None
    tool: str = "tokcaliper"


class DamagedRun(BaseModel):
    """A stored run whose row no longer parses: reported by id and skipped, the rest shown.

    Attributes:
        id: the run's id. reason: the first problem found, one line.
    """

    id: int
    reason: str


def damaged_caveats(damaged: Sequence[DamagedRun]) -> list[Caveat]:
    """One :data:`~tokcaliper.model.warnings.DAMAGED_RUN_SKIPPED` caveat per damaged run."""
    return [DAMAGED_RUN_SKIPPED.caveat(reason=d.reason) for d in damaged]


class RunList(BaseModel):
    """``tokcaliper runs``: the stored runs' rows, and the runs skipped as damaged.

    Attributes:
        db: the database read. runs: one row per intact run, oldest first.
        damaged: the runs whose rows no longer parse (not in ``runs``).
        warnings: one caveat per damaged run (the warning sink prints them).
    """

    db: str
    runs: list[RunRow]
    damaged: list[DamagedRun] = Field(default_factory=list)
    warnings: list[Caveat] = Field(default_factory=list)


class ShownRun(Run):
    """``tokcaliper show``: one stored run, its request records included or left out.

    Attributes:
        requests: every request record, or ``None`` when they were left out
            (``show --json`` without ``--requests``): ``null``, never ``[]``, so
            "not included" cannot read as "no requests".
        requests_note: says how to include them, when left out.
    """

    requests: list[RequestRecord] | None = None  # type: ignore[assignment]
    requests_note: str | None = None


def shown_run(run: Run, *, include_requests: bool) -> ShownRun:
    """``run`` as ``show`` prints it; without ``include_requests`` its records are left out."""
    fields = dict(run)
    if not include_requests:
        fields.update(requests=None, requests_note="not included: add --requests for every request record")
    return ShownRun.model_validate(fields)


def run_caveats(runs: Sequence[Run], *, label: str = "") -> list[Caveat]:
    """The caveats each stored run carries, named and in run order, for the warning sink.

    Per run: its client's crossed bounds (``limits``, ``host_limits``, ``cap_limits``), the
    streams' contradictions (``stream_warnings``) and the lengths' (``lengths.warnings``);
    each message starts ``"{label}run {repetition}: "`` (``label`` e.g. ``"c=4 "`` in a sweep).
    """
    out: list[Caveat] = []
    for r in runs:
        m, c = r.metrics, r.metrics.client
        client = [*c.limits, *c.host_limits, *c.cap_limits] if c else []
        texts = [*client, *m.stream_warnings, *(m.lengths.warnings if m.lengths else [])]
        out += [caveat_of(t, f"{label}run {r.repetition + 1}: ") for t in texts]
    return out
