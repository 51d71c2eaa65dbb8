"""The draft-window table: AL per k, divided by what each k spends (METHODS.md M7, M8).

Pure arithmetic: per-k inputs in, a pydantic :class:`WindowTable` out.

For each draft window k the target verifies k + 1 positions per step, so the
figure to compare is tokens per verified position ``AL/(k+1)``, not AL
itself. The table gives:

* per row: AL (mean, CV, n), acceptance rate, ``AL/(k+1)``, throughput
  (mean, CV), and Welch's t-test of AL (and of throughput) against the
  neighbouring smaller k when both rows have ≥ 2 samples
  (:func:`tokcaliper.stats.welch`);
* best k by AL and best k by ``AL/(k+1)``, each row's ``AL/(k+1)`` relative
  to the best, and the warning "the highest reading is not the best buy" when
  the two bests differ;
* a k that failed to start is a row with its reason, left out of the bests
  (METHODS.md M8); so is a row whose AL is impossible (< 1 or > k + 1),
  with its note;
* a red flag on a row whose AL sits at its ceiling k + 1 (:mod:`.red_flags`).

Reference (METHODS.md M7): AL 4.733 / 5.177 / 4.746 for k = 5 / 7 / 10 gives
``AL/(k+1)`` = 0.789 / 0.647 / 0.432: best by AL is k = 7, best per position
k = 5, which yields ×1.22 the tokens per position of k = 7 and ×1.83 of k = 10.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated

from pydantic import BaseModel, Field, model_validator

from tokcaliper.errors import InputError
from tokcaliper.numbers import num
from tokcaliper.model import warnings as W
from tokcaliper.model.specdec import COST_PROXY, LIMIT
from tokcaliper.model.warnings import Caveat
from tokcaliper.model.specdec_flags import PREDICTABLE, al_at_ceiling
from tokcaliper.stats import WelchResult, describe, welch

#: The warning when the highest AL is not the highest AL/(k+1) (its wording lives in
#: :mod:`tokcaliper.model.warnings`, re-exported here).
NOT_BEST_BUY = W.NOT_BEST_BUY

#: A finite number (AL = inf read as "×∞ tokens per verified position").
Finite = Annotated[float, Field(allow_inf_nan=False)]

#: Tolerance for "AL = k + 1" on published (rounded, 2-decimal) figures.
PUBLISHED_AL_TOL = 0.005


def _spread(samples: Sequence[float]) -> bool:
    """Whether the runs vary at all (Welch's t is undefined when neither arm does)."""
    return max(samples) > min(samples)


class KInput(BaseModel):
    """What is known about one draft window k.

    Give either ``al`` (optionally with ``al_cv`` and ``al_n``) or
    ``al_samples`` (one AL per run); samples give mean, CV and n and enable
    Welch's t. Throughput alike. ``failed`` marks a k that could not start.

    Attributes:
        k: draft window (≥ 1).
        al: mean acceptance length (bonus token included), > 0.
        al_cv: CV of AL across runs, fraction.
        al_n: runs behind ``al``.
        al_samples: AL of each run.
        acceptance_rate: accepted / drafted, 0…1.
        throughput: mean throughput, tok/s.
        throughput_cv: its CV, fraction.
        throughput_samples: throughput of each run, tok/s.
        failed: why this k failed to start (then no figures are needed).
        k_eff: measured mean draft length Δdraft_tokens/Δdrafts, when known (a
            sweep); above k it means the server did not honour the window.
    """

    k: int = Field(ge=1)
    al: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    al_cv: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    al_n: int | None = Field(default=None, ge=1)
    al_samples: list[Finite] = Field(default_factory=list)
    acceptance_rate: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)
    throughput: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    throughput_cv: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    throughput_samples: list[Finite] = Field(default_factory=list)
    failed: str | None = None
    k_eff: float | None = Field(default=None, ge=0, allow_inf_nan=False)

    @model_validator(mode="after")
    def _needs_al(self) -> KInput:
        if self.failed is None and self.al is None and not self.al_samples:
            raise ValueError(f"k={self.k}: give an AL (or AL samples), or the reason it failed to start")
        return self


class KRow(BaseModel):
    """One row of the table.

    Attributes:
        k: draft window.
        failed: reason it failed to start (all figures None then).
        al, al_cv, al_n: AL mean, CV and number of runs.
        acceptance_rate: accepted / drafted.
        al_per_position: AL / (k + 1), tokens per verified position.
        relative_to_best: best AL/(k+1) ÷ this row's (1.0 for the best row;
            None for an impossible row).
        impossible: its AL is outside 1 … k + 1 (beyond the published
            rounding): a row that cannot be true is left out of the best k.
        throughput, throughput_cv, throughput_n: throughput mean (tok/s), CV, n.
        welch_al_vs_prev / welch_throughput_vs_prev: Welch's t of the previous
            (smaller) started k against this one, when both have ≥ 2 samples.
        notes: red flags and range problems of this row.
    """

    k: int
    failed: str | None = None
    al: float | None = None
    al_cv: float | None = None
    al_n: int | None = None
    acceptance_rate: float | None = None
    al_per_position: float | None = None
    relative_to_best: float | None = None
    throughput: float | None = None
    throughput_cv: float | None = None
    throughput_n: int | None = None
    welch_al_vs_prev: WelchResult | None = None
    welch_throughput_vs_prev: WelchResult | None = None
    notes: list[str] = Field(default_factory=list)
    impossible: bool = False


class WindowTable(BaseModel):
    """The draft-window table with its verdicts.

    Attributes:
        name: label of the table (e.g. a group in the input file).
        rows: one per k, in increasing k.
        best_k_by_al: k with the highest AL (ties → smaller k) among the rows
            that started and are possible; None if there is none.
        best_k_by_al_per_position: k with the highest AL/(k+1).
        warnings: the :data:`NOT_BEST_BUY` caveat with its numbers when the two bests
            differ (printed on stderr by the command, kept in the JSON), else empty.
        uncertainty: a note when started rows carry no CV (published single figures).
        arithmetic: the divisions and ratios, written out.
        cost_proxy: which column is a proxy and when it holds.
        limit: what AL can and cannot answer.
    """

    name: str = ""
    rows: list[KRow]
    best_k_by_al: int | None
    best_k_by_al_per_position: int | None
    warnings: list[Caveat] = []
    uncertainty: str | None = None
    arithmetic: list[str]
    cost_proxy: str = COST_PROXY
    limit: str = LIMIT


def _times(x: float | None) -> str:
    """A "×" factor between k's tokens per verified position to two decimals, as the write-up
    publishes it (``1.22``), at least two significant digits."""
    return num(x, 2, min_decimals=2)


def _three(x: float | None) -> str:
    """AL/(k+1) to three decimals, as the write-up publishes it (``0.172``)."""
    return num(x, 3, min_decimals=3)


def _summary(mean: float | None, cv: float | None, n: int | None,
             samples: Sequence[float], what: str) -> tuple[float | None, float | None, int | None]:
    if samples:
        d = describe(samples, what)
        return d.mean, d.cv, d.n
    return mean, cv, n


def window_table(inputs: Sequence[KInput], name: str = "") -> WindowTable:
    """Build the draft-window table of METHODS.md M7 from per-k inputs.

    Args:
        inputs: one :class:`KInput` per k (any order; k must be unique).
        name: table label.

    Raises:
        InputError: no rows, or a k given twice (a non-finite figure is
            refused by :class:`KInput`).
    """
    if not inputs:
        raise InputError("the draft-window table needs at least one k")
    ks = [i.k for i in inputs]
    dup = sorted({k for k in ks if ks.count(k) > 1})
    if dup:
        raise InputError(f"k={dup[0]} is given more than once")
    rows: list[KRow] = []
    arith: list[str] = []
    prev: KInput | None = None
    for inp in sorted(inputs, key=lambda i: i.k):
        if inp.failed is not None:
            rows.append(KRow(k=inp.k, failed=inp.failed))
            continue
        al, al_cv, al_n = _summary(inp.al, inp.al_cv, inp.al_n, inp.al_samples, f"AL samples at k={inp.k}")
        tp, tp_cv, tp_n = _summary(inp.throughput, inp.throughput_cv, None, inp.throughput_samples,
                                   f"throughput samples at k={inp.k}")
        assert al is not None
        row = KRow(k=inp.k, al=al, al_cv=al_cv, al_n=al_n, acceptance_rate=inp.acceptance_rate,
                   al_per_position=al / (inp.k + 1), throughput=tp, throughput_cv=tp_cv, throughput_n=tp_n)
        arith.append(f"k={inp.k}: AL/(k+1) = {num(al, 4, trim=True)}/{inp.k + 1} = {_three(row.al_per_position)}")
        if al < 1:
            row.impossible = True
            row.notes.append(f"AL {num(al, 4, trim=True)} < 1: impossible when AL counts the bonus token "
                             "(a source counting accepted drafts only reads 1 lower)")
        elif al > inp.k + 1 + PUBLISHED_AL_TOL:
            row.impossible = True
            row.notes.append(f"AL {num(al, 4, trim=True)} > k + 1 = {inp.k + 1}: impossible")
        elif al_at_ceiling(al, inp.k, PUBLISHED_AL_TOL):
            row.notes.append(f"AL {num(al, 4, trim=True)} = k + 1: {PREDICTABLE}")
        if inp.k_eff is not None and inp.k_eff > inp.k + 1e-9:
            row.notes.append(f"measured k_eff = {num(inp.k_eff, 3)} > k = {inp.k}: the server drafted "
                             "longer than the configured window (the flag swept does not set it), so "
                             "AL/(k+1) is not tokens per verified position")
        if inp.acceptance_rate is not None and inp.acceptance_rate == 1.0:
            row.notes.append(f"acceptance rate 1.0: {PREDICTABLE}")
        if prev is not None:
            if len(prev.al_samples) >= 2 and len(inp.al_samples) >= 2:
                if _spread(prev.al_samples) or _spread(inp.al_samples):
                    row.welch_al_vs_prev = welch(prev.al_samples, inp.al_samples)
                else:
                    row.notes.append(f"Welch t of AL against k={prev.k} undefined: AL is the same in "
                                     "every run of both k (zero variance)")
            if len(prev.throughput_samples) >= 2 and len(inp.throughput_samples) >= 2:
                if _spread(prev.throughput_samples) or _spread(inp.throughput_samples):
                    row.welch_throughput_vs_prev = welch(prev.throughput_samples, inp.throughput_samples)
        prev = inp
        rows.append(row)
    started = [r for r in rows if r.failed is None]
    impossible = [r.k for r in started if r.impossible]
    if impossible:
        arith.append(f"{', '.join(f'k={k}' for k in impossible)} left out of the best k: impossible AL "
                     "(outside 1 … k + 1)")
    started = [r for r in started if not r.impossible]
    best_al = best_pp = None
    warnings: list[Caveat] = []
    if started:
        best_al = max(started, key=lambda r: (r.al or -math.inf, -r.k)).k
        best_row = max(started, key=lambda r: (r.al_per_position or -math.inf, -r.k))
        best_pp = best_row.k
        for r in started:
            assert r.al_per_position is not None and best_row.al_per_position is not None
            r.relative_to_best = best_row.al_per_position / r.al_per_position
            if r.k != best_pp:
                arith.append(f"k={best_pp} over k={r.k}: {num(best_row.al_per_position, 4, min_decimals=4)}/"
                             f"{num(r.al_per_position, 4, min_decimals=4)} = ×{_times(r.relative_to_best)} "
                             "tokens per verified position")
        al_row = next(r for r in started if r.k == best_al)
        # A tie on AL/(k+1) (equal at the 3 decimals shown, e.g. every k at the AL = k + 1
        # ceiling) is not a better buy: no warning names a winner the figures do not show.
        tie = _three(best_row.al_per_position) == _three(al_row.al_per_position)
        if best_al != best_pp and tie:
            arith.append(f"k={best_al} and k={best_pp} tie on AL/(k+1) "
                         f"({_three(best_row.al_per_position)}): neither is the better buy")
        if best_al != best_pp and not tie:
            warnings.append(NOT_BEST_BUY.caveat(
                where=f" (table {name})" if name else "", best_al=best_al, al=num(al_row.al, 4, trim=True),
                best_pp=best_pp, times=_times(al_row.relative_to_best),
                pp_best=_three(best_row.al_per_position), pp_al=_three(al_row.al_per_position)))
    no_cv = [r.k for r in started if r.al_cv is None]
    uncertainty = None
    if no_cv:
        uncertainty = (f"no CV for k={', '.join(map(str, no_cv))}: single figures without run-to-run spread; "
                       "a difference between neighbouring k smaller than the (unknown) CV cannot be judged")
    return WindowTable(name=name, rows=rows, best_k_by_al=best_al, best_k_by_al_per_position=best_pp,
                       warnings=warnings, uncertainty=uncertainty, arithmetic=arith)
