"""Run orders for interleaved experiments (M4).

Clock and thermal drift are monotonic, so AAAAA BBBBB puts the drift into the
difference between arms. Interleaving spreads it over both:

- ``alternate``: A B A B … (one block = every arm once, always in file order);
- ``abba``: A B B A A B B A … (blocks alternate forward and reversed, so a
  linear drift cancels within every two blocks — the ABBA counterbalancing
  of experimental psychology and of bioequivalence crossover designs);
- ``random-blocks``: each block a random permutation of the arms
  (randomized complete blocks), reproducible from the seed
  (``numpy.random.default_rng(seed).permutation``);
- ``blocked``: A A A A B B B B — for calibration and to show what the naive
  order does; biased under drift.

With k arms and n runs per arm every order has exactly n runs of each arm.
Positions are 0-based, in execution order. Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel

from tokcaliper.errors import InputError

__all__ = ["ORDERS", "OrderName", "Step", "run_order", "schedule"]

OrderName = Literal["alternate", "abba", "random-blocks", "blocked"]
ORDERS: tuple[str, ...] = ("alternate", "abba", "random-blocks", "blocked")


def run_order(arms: Sequence[str], n: int, order: str = "alternate",
              seed: int | None = None) -> list[tuple[int, str]]:
    """The measured runs in execution order, as ``(position, arm)``.

    Args:
        arms: arm names, at least 2, unique (file order).
        n: runs per arm (≥ 1).
        order: one of :data:`ORDERS`.
        seed: required for ``random-blocks`` (same seed → same order); ignored otherwise.

    Returns:
        ``len(arms) · n`` tuples; each arm appears exactly n times.

    Raises:
        InputError: fewer than 2 or duplicate arms, n < 1, unknown order, or
            ``random-blocks`` without a seed.
    """
    names = list(arms)
    if len(names) < 2:
        raise InputError(f"an experiment needs at least 2 arms, got {len(names)}")
    if len(set(names)) != len(names):
        dup = next(a for a in names if names.count(a) > 1)
        raise InputError(f"arm {dup!r} is listed twice")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"runs per arm must be an integer ≥ 1, got {n}")
    if order not in ORDERS:
        raise InputError(f"order must be one of {', '.join(ORDERS)}; got {order!r}")
    seq: list[str]
    if order == "blocked":
        seq = [a for a in names for _ in range(n)]
    elif order == "alternate":
        seq = names * n
    elif order == "abba":
        seq = []
        for block in range(n):
            seq.extend(names if block % 2 == 0 else names[::-1])
    else:
        if seed is None:
            raise InputError("order = random-blocks needs a seed")
        rng = np.random.default_rng(seed)
        seq = []
        for _ in range(n):
            seq.extend(names[i] for i in rng.permutation(len(names)))
    return list(enumerate(seq))


class Step(BaseModel):
    """One step of an experiment's schedule.

    Attributes:
        kind: ``"switch"`` (run the arm's switch / restart its server),
            ``"warmup"`` (a stored run excluded from analysis) or ``"run"`` (measured).
        arm: the arm the step belongs to.
        position: for ``"run"`` the position in :func:`run_order`; else ``None``.
    """

    kind: Literal["switch", "warmup", "run"]
    arm: str
    position: int | None = None


def schedule(order: Sequence[tuple[int, str]], warmup_runs: int = 0) -> list[Step]:
    """Insert a switch before every change of arm and ``warmup_runs`` warm-ups after it.

    The first run is preceded by a switch too (the system starts in an unknown state).

    Args:
        order: output of :func:`run_order`. warmup_runs: warm-up runs per switch (≥ 0).

    Raises:
        InputError: negative warmup_runs.
    """
    if isinstance(warmup_runs, bool) or not isinstance(warmup_runs, int) or warmup_runs < 0:
        raise InputError(f"warm-up runs must be an integer ≥ 0, got {warmup_runs}")
    steps: list[Step] = []
    current: str | None = None
    for pos, arm in order:
        if arm != current:
            steps.append(Step(kind="switch", arm=arm))
            steps.extend(Step(kind="warmup", arm=arm) for _ in range(warmup_runs))
            current = arm
        steps.append(Step(kind="run", arm=arm, position=pos))
    return steps
