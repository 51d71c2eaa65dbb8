"""Synthetic request lengths: a distribution spec, its seeded draws, and how close the server came.

A spec is one string (``--input-tokens`` / ``--output-tokens``, or an
experiment file's ``[load] input_tokens`` / ``output_tokens``):

* ``fixed:N`` — every request N tokens;
* ``normal:MEAN,SD`` — rounded normal draws;
* ``lognormal:MEDIAN,SIGMA`` — ``MEDIAN · exp(SIGMA · Z)``, rounded (SIGMA is
  the sd of the log, as in ``numpy.random.lognormal``);
* ``uniform:LO,HI`` — integers LO…HI, both included;
* ``empirical:FILE`` — draws with replacement from FILE's lengths (one
  integer per line; blank lines and ``#`` comments skipped), read through
  :mod:`tokcaliper.fileio`.

Every draw is an integer in ``[1, MAX_LENGTH_TOKENS]``: a normal or lognormal
draw outside it is clipped to it (the share clipped is negligible unless the
spec puts mass there, e.g. ``normal:10,20``; :func:`draw_lengths` says so).
Request ``i``'s length depends only on the seed, the option and ``i``
(:func:`length_of`), so every repetition and every arm of a run sends the same
lengths in the same order — paired, like the prompts.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tokcaliper.errors import InputError
from tokcaliper.fileio import read_text
from tokcaliper.model import warnings as W
from tokcaliper.model.run import LengthAccuracy, LengthReport, RequestRecord
from tokcaliper.numbers import num
from tokcaliper.validation import finite_number

__all__ = [
    "EXACT_WARN_SHARE", "LengthDist", "MAX_LENGTH_TOKENS", "accuracy", "draw_lengths",
    "length_of", "length_report", "parse_length_spec",
]

#: Longest synthetic length, tokens (no served context holds more).
MAX_LENGTH_TOKENS = 1_048_576

#: Largest lengths file (bytes).
MAX_EMPIRICAL_BYTES = 64 * 2**20

#: A run warns when fewer than this share of its requests got exactly the asked-for length.
EXACT_WARN_SHARE = 0.95

_KINDS = {"fixed": 1, "normal": 2, "lognormal": 2, "uniform": 2, "empirical": 1}


@dataclass(frozen=True)
class LengthDist:
    """A parsed length spec.

    Attributes:
        kind: ``fixed``, ``normal``, ``lognormal``, ``uniform`` or ``empirical``.
        params: its numbers (fixed: N; normal: mean, sd; lognormal: median,
            sigma; uniform: lo, hi; empirical: the file's lengths).
        spec: the text it was parsed from (stored with the run).
    """

    kind: str
    params: tuple[float, ...]
    spec: str

    @property
    def mean(self) -> float:
        """The distribution's mean, tokens (before rounding and clipping)."""
        k, p = self.kind, self.params
        if k == "fixed":
            return p[0]
        if k == "normal":
            return p[0]
        if k == "lognormal":
            return p[0] * math.exp(p[1] ** 2 / 2)
        if k == "uniform":
            return (p[0] + p[1]) / 2
        return float(np.mean(p))

    @property
    def sd(self) -> float:
        """The distribution's standard deviation, tokens (before rounding and clipping)."""
        k, p = self.kind, self.params
        if k == "fixed":
            return 0.0
        if k == "normal":
            return p[1]
        if k == "lognormal":
            s2 = p[1] ** 2
            return p[0] * math.sqrt((math.exp(s2) - 1) * math.exp(s2))
        if k == "uniform":
            n = p[1] - p[0] + 1
            return math.sqrt((n * n - 1) / 12)
        return float(np.std(p))



def _integer(v: float, option: str, spec: str, what: str) -> int:
    if v != int(v) or not 1 <= v <= MAX_LENGTH_TOKENS:
        raise InputError(f"{option} {spec!r}: {what} must be an integer in [1, {MAX_LENGTH_TOKENS}], got {v:g}")
    return int(v)


def _read_empirical(path: str, option: str, spec: str) -> tuple[float, ...]:
    p = Path(path)
    text = read_text(p, MAX_EMPIRICAL_BYTES, what=f"{option} lengths file {p}")
    out: list[float] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        s = line.split("#", 1)[0].strip()
        if not s:
            continue
        try:
            v = int(s)
        except ValueError:
            raise InputError(f"{p}:{lineno}: {option} lengths file: {s[:40]!r} is not an integer") from None
        if not 1 <= v <= MAX_LENGTH_TOKENS:
            raise InputError(f"{p}:{lineno}: {option} lengths file: {v} is outside [1, {MAX_LENGTH_TOKENS}]")
        out.append(float(v))
    if not out:
        raise InputError(f"{p}: {option} lengths file holds no length")
    return tuple(out)


def parse_length_spec(spec: str, option: str = "--input-tokens") -> LengthDist:
    """Parse ``fixed:N`` / ``normal:M,SD`` / ``lognormal:MED,SIGMA`` / ``uniform:LO,HI`` / ``empirical:FILE``.

    A bare integer ``N`` means ``fixed:N``.

    Args:
        spec: the text.
        option: the option's name, for the error message.

    Raises:
        InputError: one line naming ``option`` and the culprit (unknown kind,
            wrong count of numbers, not a number, out of bounds, bad file).
    """
    text = spec.strip()
    if text.isdigit():
        text = f"fixed:{text}"
    kind, sep, rest = text.partition(":")
    kind = kind.strip().lower()
    if not sep or kind not in _KINDS:
        raise InputError(f"{option} {spec!r}: expected fixed:N, normal:MEAN,SD, lognormal:MEDIAN,SIGMA, "
                         "uniform:LO,HI or empirical:FILE")
    if kind == "empirical":
        if not rest.strip():
            raise InputError(f"{option} {spec!r}: empirical needs a file, empirical:FILE")
        return LengthDist(kind, _read_empirical(rest.strip(), option, spec), spec)
    parts = rest.split(",")
    if len(parts) != _KINDS[kind]:
        shape = {"fixed": "fixed:N", "normal": "normal:MEAN,SD", "lognormal": "lognormal:MEDIAN,SIGMA",
                 "uniform": "uniform:LO,HI"}[kind]
        raise InputError(f"{option} {spec!r}: {kind} takes {_KINDS[kind]} number(s), {shape}")
    nums = [finite_number(x, f"{option} {spec!r}") for x in parts]
    if kind == "fixed":
        return LengthDist(kind, (_integer(nums[0], option, spec, "N"),), spec)
    if kind == "uniform":
        lo = _integer(nums[0], option, spec, "LO")
        hi = _integer(nums[1], option, spec, "HI")
        if lo > hi:
            raise InputError(f"{option} {spec!r}: LO {lo} is above HI {hi}")
        return LengthDist(kind, (lo, hi), spec)
    centre, spread = nums
    name = "MEAN" if kind == "normal" else "MEDIAN"
    if not 1 <= centre <= MAX_LENGTH_TOKENS:
        raise InputError(f"{option} {spec!r}: {name} must be in [1, {MAX_LENGTH_TOKENS}], got {centre:g}")
    limit = MAX_LENGTH_TOKENS if kind == "normal" else 5.0
    if not 0 <= spread <= limit:
        what = "SD" if kind == "normal" else "SIGMA"
        raise InputError(f"{option} {spec!r}: {what} must be in [0, {num(limit, 8, trim=True, grouping=False)}], got {spread:g}")
    return LengthDist(kind, (centre, spread), spec)


def _rng(seed: int, option: str, index: int) -> np.random.Generator:
    key = hashlib.sha256(f"{seed}:{option}:{index}".encode()).digest()[:8]
    return np.random.default_rng(int.from_bytes(key, "big"))


def _draw(dist: LengthDist, rng: np.random.Generator) -> int:
    k, p = dist.kind, dist.params
    if k == "fixed":
        v = p[0]
    elif k == "normal":
        v = rng.normal(p[0], p[1])
    elif k == "lognormal":
        v = p[0] * math.exp(p[1] * rng.standard_normal())
    elif k == "uniform":
        v = float(rng.integers(int(p[0]), int(p[1]) + 1))
    else:
        v = p[int(rng.integers(0, len(p)))]
    return int(min(max(round(v), 1), MAX_LENGTH_TOKENS))


def length_of(dist: LengthDist, seed: int, option: str, index: int) -> int:
    """Request ``index``'s length, tokens: a function of (seed, option, index) only.

    ``option`` (``"input"`` / ``"output"``) keeps the two lengths of one
    request independent under one seed.
    """
    return _draw(dist, _rng(seed, option, index))


def draw_lengths(dist: LengthDist, n: int, seed: int, option: str = "input") -> list[int]:
    """Lengths of requests ``0 … n−1`` (:func:`length_of` for each)."""
    return [length_of(dist, seed, option, i) for i in range(n)]


def accuracy(pairs: list[tuple[int, int]]) -> LengthAccuracy:
    """:class:`~tokcaliper.model.run.LengthAccuracy` of ``(requested, actual)`` pairs, tokens (n = 0: all None)."""
    if not pairs:
        return LengthAccuracy(n=0)
    req = np.array([p[0] for p in pairs], dtype=float)
    err = np.abs(np.array([p[1] for p in pairs], dtype=float) - req)
    return LengthAccuracy(
        n=len(pairs), mean_abs_error=float(err.mean()), max_abs_error=int(err.max()),
        share_exact=float(np.mean(err == 0)), mean_requested=float(req.mean()),
        sd_requested=float(req.std(ddof=1)) if len(req) > 1 else None)


def length_report(records: list[RequestRecord], method: str | None,
                  template_tokens: float | None) -> LengthReport | None:
    """Requested vs counted lengths over a run's measured, completed requests.

    Input: ``requested_prompt_tokens`` vs ``usage.prompt_tokens``; output:
    ``requested_output_tokens`` vs ``output_tokens`` (from ``usage``; a
    count from chunks is left out, it is not the server's count). A
    direction whose share exact is below :data:`EXACT_WARN_SHARE`, or any
    error past ±1 token on input / 0 on output, gets a warning with its figures.

    Returns:
        None when no request asked for a length.
    """
    done = [r for r in records if not r.warmup and r.ok]
    asked = [r for r in records if r.requested_prompt_tokens is not None or r.requested_output_tokens is not None]
    if not asked:
        return None
    inp = accuracy([(r.requested_prompt_tokens, r.prompt_tokens) for r in done
                    if r.requested_prompt_tokens is not None and r.prompt_tokens is not None])
    out = accuracy([(r.requested_output_tokens, r.output_tokens) for r in done
                    if r.requested_output_tokens is not None and r.token_count_source == "usage"])
    rep = LengthReport(method=method, template_tokens=template_tokens,
                       input=inp if any(r.requested_prompt_tokens is not None for r in asked) else None,
                       output=out if any(r.requested_output_tokens is not None for r in asked) else None)
    for name, acc, slack in (("input", rep.input, 1), ("output", rep.output, 0)):
        if acc is None:
            continue
        if acc.n == 0:
            rep.warnings.append(W.LENGTHS_UNCOUNTED.text(direction=name))
        elif (acc.share_exact or 0) < EXACT_WARN_SHARE or (acc.max_abs_error or 0) > slack:
            rep.warnings.append(W.LENGTHS_OFF.text(
                direction=name, exact=num(100 * (acc.share_exact or 0), trim=True), n=acc.n,
                mean=num(acc.mean_abs_error), max=acc.max_abs_error,
                bound=num(100 * EXACT_WARN_SHARE, trim=True), slack=slack))
    if method in ("calibrated", "words") and rep.input is not None:
        rep.warnings.append(W.LENGTHS_APPROXIMATE.text())
    return rep
