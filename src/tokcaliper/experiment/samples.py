"""Samples for ``tokcaliper compare``: comma lists, ``mean,sd,n`` and CSV text.

CSV: a header row with the columns ``arm,value`` and optionally ``pair``,
``position`` and ``metric`` (any order, extra columns are an error). With a
``pair`` column the runs are paired: every pair id holds exactly one run of
each compared arm, and the pairs are taken in run order (smallest
``position`` in the pair, else the order of the file). Without it the arms
are independent; ``position`` then only orders the runs. With a ``metric``
column each metric is compared separately (and Holm-corrected together).

Stored experiments: :func:`samples_from_runs` pairs measured runs by block
of the run order (see :mod:`tokcaliper.experiment.order`).

Pure text parsing; the CLI reads the file.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from pydantic import BaseModel

from tokcaliper.errors import InputError
from tokcaliper.fileio import check_unique_columns
from tokcaliper.validation import finite_number
from tokcaliper.stats.outliers import RunTags

__all__ = ["CONTROL_NAMES", "ArmSamples", "SampleTable", "choose_control", "parse_number_list",
           "parse_samples_csv", "parse_summary_stats", "samples_from_runs", "tags_of"]

_COLUMNS = ("arm", "value", "pair", "position", "metric")



def parse_number_list(text: str, option: str) -> list[float]:
    """``"754.3,770.0,639.3"`` → ``[754.3, 770.0, 639.3]`` (spaces allowed).

    Raises:
        InputError: empty list or a part that is not a finite number (names ``option``).
    """
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or any(p == "" for p in parts):
        raise InputError(f"{option} must be numbers separated by commas, got {text!r}")
    return [finite_number(p, f"{option} value {i + 1}") for i, p in enumerate(parts)]


def parse_summary_stats(text: str, option: str) -> tuple[float, float, int]:
    """``"453.2,6.9,4"`` → ``(453.2, 6.9, 4)``: mean, sample std (ddof = 1), n.

    Raises:
        InputError: not three parts, n not an integer ≥ 2, sd < 0.
    """
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 3:
        raise InputError(f"{option} must be mean,sd,n (e.g. 453.2,6.9,4), got {text!r}")
    mean, sd = finite_number(parts[0], f"{option} mean"), finite_number(parts[1], f"{option} sd")
    try:
        n = int(parts[2])
    except ValueError:
        raise InputError(f"{option}: n must be an integer, got {parts[2]!r}") from None
    if n < 2:
        raise InputError(f"{option}: n must be ≥ 2, got {n}")
    if sd < 0:
        raise InputError(f"{option}: sd must be ≥ 0, got {parts[1]}")
    return mean, sd, n


class ArmSamples(BaseModel):
    """The runs of two arms for one metric.

    Attributes:
        metric: the metric name (``None`` when the CSV has no metric column).
        names: (baseline, candidate). a, b: their values, in run order.
        paired: True when pair k = (a[k], b[k]) (a ``pair`` column was given).
        pairs: the pair ids in the order used (paired only).
        pos_a, pos_b: each run's position, in the order of ``a`` / ``b``
            (``None`` when the input has no positions).
        ids_a, ids_b: labels of each run (``"line 7"`` for a CSV row), or ``None``.
    """

    metric: str | None
    names: tuple[str, str]
    a: list[float]
    b: list[float]
    paired: bool
    pairs: list[str] | None = None
    pos_a: list[float] | None = None
    pos_b: list[float] | None = None
    ids_a: list[str] | None = None
    ids_b: list[str] | None = None


class SampleTable(BaseModel):
    """Parsed CSV: the arms found (file order) and one :class:`ArmSamples` per metric.

    Attributes:
        arms: every arm of the file, in file order.
        metrics: one :class:`ArmSamples` per metric.
        control: the reference arm (the ratio's denominator). control_reason:
            why it is the reference, in words (printed with every comparison).
    """

    arms: list[str]
    metrics: list[ArmSamples]
    control: str = ""
    control_reason: str = ""


#: Arm names taken as the reference arm when ``--control`` is not given, in this order.
CONTROL_NAMES = ("a", "baseline", "control")


def choose_control(seen: Sequence[str], control: str | None,
                   option: str = "--control") -> tuple[str, str]:
    """The reference arm of a comparison and why (issue 17 item 6).

    ``control`` when given; else an arm named ``A``, ``baseline`` or ``control``
    (case-insensitive, in that order of preference); else the first arm seen.

    Args:
        seen: the arm names, in file order. control: the user's choice or ``None``.

    Returns:
        ``(arm, reason)``.

    Raises:
        InputError: ``control`` is not one of ``seen``.
    """
    if control is not None:
        if control not in seen:
            raise InputError(f"{option} {control!r} is not an arm of the comparison "
                             f"(arms: {', '.join(seen)})")
        return control, f"{option} {control}"
    for name in CONTROL_NAMES:
        for arm in seen:
            if arm.lower() == name:
                return arm, f"the arm named {arm!r}"
    return seen[0], (f"the first arm in the file (no arm is named A, baseline or control; "
                     f"choose with {option})")


def parse_samples_csv(text: str, arms: Sequence[str] | None = None,
                      source: str = "CSV", control: str | None = None) -> SampleTable:
    """Parse ``arm,value[,pair][,position][,metric]`` CSV text.

    Args:
        text: the CSV (header row first).
        arms: (baseline, candidate) to compare; default the two arms of the
            file, the reference chosen by :func:`choose_control`.
        source: name for error messages (the path).
        control: the reference arm (``--control``); with ``arms`` it must be one of them.

    Raises:
        InputError: missing/unknown columns, a bad number (with its line), not
            exactly two arms and no ``arms`` given, an unknown arm, a pair
            without exactly one run of each arm, or an arm with no runs.
    """
    rows = list(csv.reader(io.StringIO(text)))
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        raise InputError(f"{source} is empty: need a header row arm,value[,pair][,position]")
    header = [c.strip().lower() for c in rows[0]]
    if header:
        header[0] = header[0].removeprefix("\ufeff")  # a byte-order mark (Excel) if the caller left it
    unknown = [c for c in header if c not in _COLUMNS]
    if unknown:
        raise InputError(f"{source}: unknown column {unknown[0]!r} (allowed: {', '.join(_COLUMNS)})")
    if "arm" not in header or "value" not in header:
        raise InputError(f"{source}: the header needs the columns arm and value, got {','.join(header)}")
    check_unique_columns(header, source)
    col = {c: header.index(c) for c in header}
    recs = []
    for line_no, r in enumerate(rows[1:], 2):
        if len(r) != len(header):
            raise InputError(f"{source} line {line_no}: {len(r)} fields, the header has {len(header)}")
        arm = r[col["arm"]].strip()
        if not arm:
            raise InputError(f"{source} line {line_no}: empty arm")
        value = finite_number(r[col["value"]], f"{source} line {line_no} value")
        pos = finite_number(r[col["position"]], f"{source} line {line_no} position") if "position" in col else None
        pair = r[col["pair"]].strip() if "pair" in col else None
        if pair == "":
            raise InputError(f"{source} line {line_no}: empty pair")
        metric = r[col["metric"]].strip() if "metric" in col else None
        recs.append((line_no, arm, value, pair, pos, metric))
    if not recs:
        raise InputError(f"{source} has a header but no runs")
    seen = list(dict.fromkeys(rc[1] for rc in recs))
    if arms is None:
        if len(seen) != 2:
            raise InputError(f"{source} has {len(seen)} arm(s) ({', '.join(seen)}): choose two "
                             "with --arms BASELINE,CANDIDATE")
        ctrl, why = choose_control(seen, control)
        names = (ctrl, seen[1] if ctrl == seen[0] else seen[0])
    else:
        names = (arms[0], arms[1])
        for n in names:
            if n not in seen:
                raise InputError(f"{source} has no arm {n!r} (arms: {', '.join(seen)})")
        if control is None:
            why = f"--arms {names[0]},{names[1]} (the first named)"
        else:
            ctrl, why = choose_control(list(names), control)
            names = (ctrl, names[1] if ctrl == names[0] else names[0])
    metrics = list(dict.fromkeys(rc[5] for rc in recs))
    out = []
    for metric in metrics:
        mrecs = [rc for rc in recs if rc[5] == metric and rc[1] in names]
        label = "" if metric is None else f" metric {metric!r}:"
        if "pair" in col:
            out.append(_paired(mrecs, names, metric, source, label))
            continue
        order = sorted(mrecs, key=lambda rc: (rc[4] if rc[4] is not None else 0.0, rc[0]))
        a = [rc[2] for rc in order if rc[1] == names[0]]
        b = [rc[2] for rc in order if rc[1] == names[1]]
        for n, v in zip(names, (a, b)):
            if not v:
                raise InputError(f"{source}:{label} arm {n!r} has no runs")
        out.append(ArmSamples(metric=metric, names=names, a=a, b=b, paired=False,
                              **_where([rc for rc in order if rc[1] == names[0]],
                                       [rc for rc in order if rc[1] == names[1]])))
    return SampleTable(arms=seen, metrics=out, control=names[0], control_reason=why)


def _paired(recs: list[tuple], names: tuple[str, str], metric: str | None, source: str,
            label: str) -> ArmSamples:
    by_pair: dict[str, dict[str, tuple]] = {}
    for rc in recs:
        slot = by_pair.setdefault(rc[3], {})
        if rc[1] in slot:
            raise InputError(f"{source} line {rc[0]}:{label} pair {rc[3]!r} has two runs of arm "
                             f"{rc[1]!r}")
        slot[rc[1]] = rc
    for pid, slot in by_pair.items():
        for n in names:
            if n not in slot:
                raise InputError(f"{source}:{label} pair {pid!r} has no run of arm {n!r}")

    def key(item: tuple[str, dict[str, tuple]]) -> tuple[float, int]:
        slot = item[1]
        poss = [rc[4] for rc in slot.values() if rc[4] is not None]
        return (min(poss) if poss else 0.0, min(rc[0] for rc in slot.values()))

    ordered = sorted(by_pair.items(), key=key)
    if not ordered:
        raise InputError(f"{source}:{label} no pairs of {names[0]!r} and {names[1]!r}")
    return ArmSamples(metric=metric, names=names, a=[s[names[0]][2] for _, s in ordered],
                      b=[s[names[1]][2] for _, s in ordered], paired=True,
                      pairs=[p for p, _ in ordered],
                      **_where([s[names[0]] for _, s in ordered], [s[names[1]] for _, s in ordered]))


def _where(ra: list[tuple], rb: list[tuple]) -> dict[str, list | None]:
    """Positions (when every run has one) and CSV line labels of two arms' records."""
    def pos(recs: list[tuple]) -> list[float] | None:
        p = [rc[4] for rc in recs]
        return None if any(x is None for x in p) else [float(x) for x in p]

    return {"pos_a": pos(ra), "pos_b": pos(rb), "ids_a": [f"line {rc[0]}" for rc in ra],
            "ids_b": [f"line {rc[0]}" for rc in rb]}


def tags_of(s: ArmSamples) -> tuple[RunTags, RunTags]:
    """What the samples know about each arm's runs (positions, labels), for the analysis."""
    return (RunTags(positions=s.pos_a, ids=s.ids_a), RunTags(positions=s.pos_b, ids=s.ids_b))


def samples_from_runs(runs: Sequence[tuple[int, str, float]], names: tuple[str, str],
                      order: str, n_arms: int, metric: str | None = None) -> ArmSamples:
    """Two arms' runs of an experiment, paired by block of the run order.

    Every order but ``blocked`` is made of blocks of ``n_arms`` positions that
    hold each arm once (A B | B A | …), so the runs of a block share their
    moment: block ``position // n_arms`` is the pair. A block missing either
    arm's run (a failed or invalid run, left out by the caller) loses both, as
    a half pair would bias the ratio. ``blocked`` order gives unpaired arms.

    Args:
        runs: measured, valid runs as ``(position, arm, value)`` (warm-ups excluded).
        names: (baseline, candidate). order: the experiment's order name.
        n_arms: number of arms in the experiment (≥ 2). metric: label.

    Raises:
        InputError: a position given twice for the same arm in a block, n_arms < 2,
            or an arm left with no runs.
    """
    if n_arms < 2:
        raise InputError(f"an experiment has at least 2 arms, got {n_arms}")
    ordered = sorted((int(p), a, float(v)) for p, a, v in runs if a in names)
    if order == "blocked":
        a = [v for _, arm, v in ordered if arm == names[0]]
        b = [v for _, arm, v in ordered if arm == names[1]]
        for n, vals in zip(names, (a, b)):
            if not vals:
                raise InputError(f"arm {n!r} has no valid runs")
        return ArmSamples(metric=metric, names=names, a=a, b=b, paired=False,
                          pos_a=[float(p) for p, arm, _ in ordered if arm == names[0]],
                          pos_b=[float(p) for p, arm, _ in ordered if arm == names[1]])
    blocks: dict[int, dict[str, float]] = {}
    where: dict[int, dict[str, int]] = {}
    for pos, arm, v in ordered:
        slot = blocks.setdefault(pos // n_arms, {})
        if arm in slot:
            raise InputError(f"block {pos // n_arms} holds two runs of arm {arm!r}")
        slot[arm] = v
        where.setdefault(pos // n_arms, {})[arm] = pos
    full = [(k, s) for k, s in sorted(blocks.items()) if names[0] in s and names[1] in s]
    if not full:
        raise InputError(f"no block holds valid runs of both {names[0]!r} and {names[1]!r}")
    return ArmSamples(metric=metric, names=names, a=[s[names[0]] for _, s in full],
                      b=[s[names[1]] for _, s in full], paired=True,
                      pairs=[f"block {k}" for k, _ in full],
                      pos_a=[float(where[k][names[0]]) for k, _ in full],
                      pos_b=[float(where[k][names[1]]) for k, _ in full])
