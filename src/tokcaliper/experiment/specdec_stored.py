"""Speculative-decoding acceptance of stored runs (``tokcaliper spec show``; METHODS.md M6).

Reads the runs from the store and hands them to the pure per-run and
across-run figures of :mod:`tokcaliper.specdec.runs`.
"""

from __future__ import annotations

from collections.abc import Sequence

from tokcaliper.errors import InputError
from tokcaliper.model.families import ServerKind
from tokcaliper.specdec.runs import AcceptanceAcrossRuns, across_runs, run_acceptance
from tokcaliper.store import Store

__all__ = ["stored_acceptance"]


def stored_acceptance(store: Store, run_ids: Sequence[int] = (), session: str | None = None,
                      kind: ServerKind | None = None, k: int | None = None) -> AcceptanceAcrossRuns:
    """Acceptance of each run (``run_ids``, then every run of ``session`` not listed), and
    mean, CV and MDE across them (per arm when they hold several).

    Args:
        store: an open store. run_ids: stored run ids, in the order shown.
        session: add every run of this session. kind: the server family whose counters
            to read (``None``: detected from their names). k: the configured draft window
            for the red flag AL = k + 1 (``None``: k_eff).

    Raises:
        InputError: no run given, or no run with an id.
    """
    ids = list(run_ids)
    if session is not None:
        ids += [r.id for r in store.list_runs(session=session) if r.id is not None and r.id not in ids]
    if not ids:
        raise InputError("give run ids or --session (see `tokcaliper runs`)")
    return across_runs([run_acceptance(store.get_run(i), kind, k) for i in ids])
