"""An experiment as stored: its validated file, its status, and what happened instead of a run.

Domain types, not storage: :mod:`tokcaliper.store` persists them, and
``experiment/`` and ``specdec/`` read them without importing the SQLite module.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

#: Where an experiment stands: ``running`` (a process is measuring it or died doing so;
#: ``resume`` continues), ``finished`` (every position measured, or the sequential rule
#: decided), ``incomplete`` (the loop ended with positions left, e.g. a failed arm),
#: ``stopped`` (interrupted, or a read-back mismatch stopped it; the reason is an outcome).
ExperimentStatus = Literal["running", "finished", "incomplete", "stopped"]

#: What happened instead of a run (METHODS.md M8): the arm's server did not start; its
#: switch command failed; its read-back did not match; a run failed (the server died);
#: the sequential rule decided; or it reached its cap of pairs undecided.
OutcomeKind = Literal["failed_start", "switch_failed", "readback_mismatch", "run_failed",
                      "decided", "cap_reached"]


class ExperimentRow(BaseModel):
    """One stored experiment: the validated file and where it stands.

    Attributes:
        id: experiment id; its runs carry it as their ``session``.
        name: the experiment's name from its file.
        created_at: UTC ISO 8601 (ms).
        status: see :data:`ExperimentStatus`.
        spec: the validated experiment file as JSON data.
        source_text: the file exactly as it was read (provenance; ``resume`` uses ``spec``).
        prompts_path: the prompts file as the first run resolved it (absolute), None for
            the built-in set or an experiment stored before schema v4.
        prompts_sha256: digest of the prompts read from it by the first run (None until then).
        claimed_pid: the process measuring it now, or last (see :meth:`Store.claim_experiment`).
    """

    id: str
    name: str
    created_at: str
    status: ExperimentStatus
    spec: dict
    source_text: str
    prompts_path: str | None = None
    prompts_sha256: str | None = None
    claimed_pid: int | None = None


class Outcome(BaseModel):
    """Something that happened instead of a run (M8): a failed start, a read-back mismatch, a stop.

    Attributes:
        position: position in the run order it concerns (None: the whole arm or experiment).
        arm: the arm. kind: see :data:`OutcomeKind`.
        reason: one line saying why. at: UTC ISO 8601 (ms).
    """

    position: int | None
    arm: str
    kind: OutcomeKind
    reason: str
    at: str
