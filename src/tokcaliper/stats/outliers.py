"""Outlying runs: flagged, named, never dropped silently (issue 17 item 2).

One bad run (a request storm, a throttled GPU, a run that hit errors) can
blow up the spread of a comparison and hide a real change. The rule
(Iglewicz & Hoaglin 1993, *How to Detect and Handle Outliers*, ASQC vol. 16):

- modified z-score ``M_i = 0.6745·(x_i − median(x)) / MAD`` with
  ``MAD = median|x_i − median(x)|``; a value is flagged when ``|M_i|``
  exceeds the limit. Iglewicz & Hoaglin suggest 3.5; on clean normal runs that
  flags at least one of 10 values in 12% of comparisons (20 values: 9.7%; 5
  values: 20%; 20000 simulated sets each), far too often for a flag a reader
  should act on. The limit here is 5 (false flag rate 3.5% at 10 values,
  1.5% at 20) and 7 below 8 values, where the MAD itself is noisy (6.3% at
  5 values); a run at 1/5 speed among runs with CV 1% scores above 100.
  When MAD = 0 (more than half the values equal) the mean absolute deviation
  stands in, ``M_i = (x_i − median)/(1.253314·meanAD)``; when that is 0 too
  nothing is flagged.
- Paired runs: the rule runs on the pair log ratios ``ln(b_k/a_k)`` (a pair
  is flagged), and the run of the flagged pair that is further from its
  arm's median (modified z of the ln values within each arm) is named as
  the culprit.
- Independent arms: the rule runs on each arm's ln values.

A flagged run is reported with its arm, position, run id, value, score and,
when the caller knows one, a cause (its error rate or telemetry). The
comparison is then shown with and without the flagged runs; the verdict with
all runs stands.

Pure functions, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from tokcaliper.numbers import num

__all__ = ["FlaggedRun", "OutlierReport", "RunTags", "flag_outliers", "modified_z",
           "MODIFIED_Z_LIMIT", "MODIFIED_Z_LIMIT_SMALL", "SOURCE_OUTLIERS", "z_limit"]

#: |modified z| above which a value is flagged (8 values or more; see the module docstring).
MODIFIED_Z_LIMIT = 5.0
#: The limit below 8 values, where the MAD of so few values is itself noisy.
MODIFIED_Z_LIMIT_SMALL = 7.0

SOURCE_OUTLIERS = ("outliers: modified z = 0.6745·(x − median)/MAD (Iglewicz & Hoaglin 1993) "
                   "above 5 (7 below 8 values), on pair log ratios (paired) or ln values per arm")


def z_limit(n: int) -> float:
    """The |modified z| limit for ``n`` values: 7 below 8 values, else 5."""
    return MODIFIED_Z_LIMIT_SMALL if n < 8 else MODIFIED_Z_LIMIT


def modified_z(x: Sequence[float]) -> np.ndarray:
    """Modified z-scores of ``x``, shape (n,); zeros when x has no spread.

    ``0.6745·(x − median)/MAD``, or with MAD = 0 ``(x − median)/(1.253314·meanAD)``.
    """
    v = np.asarray(x, dtype=float)
    med = float(np.median(v))
    dev = v - med
    mad = float(np.median(np.abs(dev)))
    if mad > 0:
        return 0.6745 * dev / mad
    mean_ad = float(np.mean(np.abs(dev)))
    if mean_ad > 0:
        return dev / (1.253314 * mean_ad)
    return np.zeros_like(v)


class RunTags(BaseModel):
    """What is known about each run of one arm, in the order of its values.

    Attributes:
        positions: run positions (``None`` when unknown). ids: run ids or CSV
            line labels. causes: a known reason a run may be off (e.g.
            "3 of 8 requests failed"), ``None`` where none is known.
    """

    positions: list[float] | None = None
    ids: list[str] | None = None
    causes: list[str | None] | None = None


class FlaggedRun(BaseModel):
    """One flagged run.

    Attributes:
        arm: its arm. index: 0-based index among the arm's values (run order).
        pair: 0-based pair index when paired, else ``None``. position: run
            position when known. run_id: run id or CSV line, when known.
        value: the run's value. z: the modified z that flagged it (of the pair
            log ratio when paired, else of the run's ln value in its arm).
        arm_z: modified z of the run's ln value within its arm.
        cause: a known cause, else ``None``.
    """

    arm: str
    index: int
    pair: int | None
    position: float | None
    run_id: str | None
    value: float
    z: float
    arm_z: float
    cause: str | None

    def describe(self) -> str:
        """``"arm B, position 7, run 42, value 143.2 (modified z −98.1; cause …)"``."""
        where = [f"arm {self.arm}"]
        if self.position is not None:
            where.append(f"position {num(self.position, 6, trim=True)}")
        if self.run_id is not None:
            where.append(f"run {self.run_id}")
        if self.pair is not None:
            where.append(f"pair {self.pair + 1}")
        cause = f"; {self.cause}" if self.cause else "; no known cause"
        return (", ".join(where) + f": value {num(self.value, 6, trim=True)} (modified z "
                f"{num(self.z, 3, signed=True)}{cause})")


class OutlierReport(BaseModel):
    """The flagged runs of a comparison (empty ``runs`` when none).

    Attributes:
        basis: ``"pair log ratios"`` or ``"ln values per arm"``. limit: the |z|
            limit used (the smaller of the two arms' limits when unpaired).
        runs: flagged runs. pairs: 0-based indices of flagged pairs (paired only).
    """

    basis: str
    limit: float
    runs: list[FlaggedRun]
    pairs: list[int] = []

    def shown(self, limit: int = 10) -> list[str]:
        """Descriptions of the first ``limit`` flagged runs, then ``"… and N more (all in --json)"``."""
        out = [r.describe() for r in self.runs[:limit]]
        if len(self.runs) > limit:
            out.append(f"… and {len(self.runs) - limit:,} more (all in --json)")
        return out


def _tag(tags: RunTags | None, field: str, i: int):  # type: ignore[no-untyped-def]
    if tags is None:
        return None
    seq = getattr(tags, field)
    return None if seq is None or i >= len(seq) else seq[i]


def flag_outliers(a: Sequence[float], b: Sequence[float], names: tuple[str, str], *,
                  paired: bool, tags: tuple[RunTags | None, RunTags | None] = (None, None),
                  limit: float | None = None) -> OutlierReport:
    """Flag outlying runs of two arms (values > 0).

    Args:
        a, b: the arms' runs, shapes (n_a,), (n_b,); paired: pair k = (a[k], b[k]).
        names: (a, b) arm names. tags: what is known about each arm's runs.
        limit: |modified z| above which a value is flagged (default :func:`z_limit`
            of the number of pairs, or of each arm's runs).

    Returns:
        :class:`OutlierReport`; fewer than 3 values per arm (or pairs) flag nothing.
    """
    la, lb = np.log(np.asarray(a, dtype=float)), np.log(np.asarray(b, dtype=float))
    za = modified_z(la) if la.size >= 3 else np.zeros_like(la)
    zb = modified_z(lb) if lb.size >= 3 else np.zeros_like(lb)
    arms = ((names[0], a, za, tags[0]), (names[1], b, zb, tags[1]))

    def run(side: int, i: int, z: float, pair: int | None) -> FlaggedRun:
        name, vals, zz, tg = arms[side]
        pos = _tag(tg, "positions", i)
        return FlaggedRun(arm=name, index=i, pair=pair, position=None if pos is None else float(pos),
                          run_id=_tag(tg, "ids", i), value=float(vals[i]), z=float(z),
                          arm_z=float(zz[i]), cause=_tag(tg, "causes", i))

    if paired:
        d = lb - la
        lim = z_limit(d.size) if limit is None else limit
        if d.size < 3:
            return OutlierReport(basis="pair log ratios", limit=lim, runs=[])
        zd = modified_z(d)
        flagged = [int(k) for k in np.flatnonzero(np.abs(zd) > lim)]
        runs = []
        for k in flagged:
            side = 0 if abs(za[k]) > abs(zb[k]) else 1
            runs.append(run(side, k, zd[k], k))
        return OutlierReport(basis="pair log ratios", limit=lim, runs=runs, pairs=flagged)
    lims = [z_limit(x.size) if limit is None else limit for x in (la, lb)]
    runs = [run(side, int(i), z[i], None)
            for side, z in ((0, za), (1, zb)) for i in np.flatnonzero(np.abs(z) > lims[side])]
    return OutlierReport(basis="ln values per arm", limit=min(lims), runs=runs)
