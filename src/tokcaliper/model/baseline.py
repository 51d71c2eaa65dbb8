"""A named baseline: the runs a CI regression gate compares new runs with (issue 19 item 5).

Self-contained: each run's metric values are copied in, so the baseline stays
usable when its runs are deleted or the database is rebuilt.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

__all__ = ["Baseline", "BaselineRun"]


class BaselineRun(BaseModel):
    """One run of a baseline.

    Attributes:
        run_id: the run's id in the database it came from.
        started_at: UTC ISO 8601. values: every registry metric of the run
            (``None`` where the run had no value), in the metric's unit.
    """

    run_id: int | None
    started_at: str
    values: dict[str, float | None]


class Baseline(BaseModel):
    """A named set of runs with where they came from.

    Attributes:
        name: the baseline's name (unique in a database).
        created_at: UTC ISO 8601 (ms). source: ``"experiment ID arm A"`` or
            ``"session S arm A"``. arm: the arm the runs measured.
        commit: the commit the runs measured, if the user gave one.
        tool_version, server_command, server_version: of the first run.
        host: the first run's host description (:class:`~tokcaliper.model.telemetry.HostInfo`
            as a dict). config: its load configuration (``LoadConfig`` as a dict).
        runs: the runs (≥ 2), in run order.
    """

    name: str
    created_at: str
    source: str
    arm: str
    commit: str | None = None
    tool_version: str | None = None
    server_command: str | None = None
    server_version: str | None = None
    host: dict[str, Any] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)
    runs: list[BaselineRun]
