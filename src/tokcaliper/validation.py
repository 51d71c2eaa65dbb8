"""pydantic validation errors in words a user can act on: the one translation
(and :func:`as_number` / :func:`finite_number`, the one parser of a number a user gave).

pydantic's own text names its internals: the union member that failed
(``arms[0].value.str: Input should be a valid string``), the stage
(``List should have at least 2 items after validation``), the wrapper
(``Value error, …``), and it counts every member of a union as another error
(``(and 2 more)``). Every place that shows a :class:`pydantic.ValidationError`
to a user (experiment files, bench options, record files, spec tables, stored
runs) goes through :func:`explain` or :func:`describe`, which

- drop the union-member and validator tags from the location
  (``arms[0].value.str`` → ``arms[0].value``) and keep one error per location:
  the most telling one (a value of the right type out of its bounds says more
  than "not a string" for each other member of the union);
- say what is wrong as one sentence with the value given: ``must be ≥ 2, got 1``,
  ``needs at least 2 items, got 1``, ``must be a finite number, got nan``.

Pure; no I/O.
"""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

from pydantic import ValidationError

from tokcaliper.errors import InputError


__all__ = ["Problem", "and_more", "as_number", "describe", "explain", "finite_number", "loc_path", "must_be",
           "problems", "show"]

#: Location parts that name a union member or validator, not a key of the input.
_TAG = re.compile(r"^(str|int|float|bool|none|bytes|list\[.*\]|dict\[.*\]|tuple\[.*\]|literal\[.*\]|"
                  r"function-(after|before|wrap|plain)\[.*\]|lax-or-strict\[.*\]|json-or-python\[.*\]|"
                  r"chain\[.*\]|nullable\[.*\])$")

#: Error types that say the value had the wrong type (less telling than a bound).
_TYPE_ERRORS = {"string_type", "int_type", "int_from_float", "int_parsing", "float_type", "float_parsing",
                "bool_type", "bool_parsing", "none_required", "list_type", "dict_type", "model_type",
                "model_attributes_type", "bytes_type", "is_instance_of"}


def show(v: Any) -> str:
    """A value as a user would recognise it, short: ``'lots'``, ``true``, ``a list``, ``a 400-digit number``."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, (list, tuple)):
        return "a list"
    if isinstance(v, int):
        digits = len(str(abs(v))) if abs(v) < 10 ** 4000 else 4000
        return f"a {digits}-digit integer" if digits > 15 else str(v)
    if isinstance(v, float):
        return repr(v)  # as typed: 1e+300, inf, nan (never rounded into something else)
    if isinstance(v, str):
        return repr(v if len(v) <= 40 else v[:37] + "…")
    return f"a {type(v).__name__}"


def loc_path(loc: tuple[Any, ...]) -> str:
    """A key path → ``"power_w[1]"``, ``"speculative.al"`` (see :func:`problems` for union tags)."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _key_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(p for p in loc if not (isinstance(p, str) and _TAG.match(p)))


def _bound(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


#: pydantic's bound error types → the context key of the bound (:func:`must_be` prints it).
_BOUNDS = {"greater_than": "gt", "greater_than_equal": "ge", "less_than_equal": "le", "less_than": "lt"}


def must_be(got: Any, *, whole: bool = False, **bounds: float) -> str:
    """The one phrasing of a bound a value broke: ``"must be ≥ 2, got 1"``,
    ``"must be a whole number ≥ 1 and ≤ 1099511627776, got 0"``.

    Args:
        got: the value given (shown with :func:`show`).
        whole: the value must be a whole number.
        bounds: any of ``gt``, ``ge``, ``lt``, ``le`` (pydantic's names), in that order.
    """
    signs = {"gt": ">", "ge": "≥", "lt": "<", "le": "≤"}
    words = ["a whole number"] if whole else []
    words += [" and ".join(f"{signs[k]} {_bound(bounds[k])}" for k in signs if bounds.get(k) is not None)]
    return f"must be {' '.join(w for w in words if w)}, got {show(got)}"


def and_more(n: int) -> str:
    """``" (and 2 more)"`` after the first of ``n + 1`` problems; ``""`` when ``n`` is 0."""
    return f" (and {n} more)" if n > 0 else ""


def describe(err: dict[str, Any]) -> str:
    """One pydantic error (an item of ``ValidationError.errors()``) as a plain sentence.

    ``{"type": "greater_than_equal", "ctx": {"ge": 2}, "input": 1}`` → ``"must be ≥ 2, got 1"``.
    The location is not part of it (see :func:`explain`).
    """
    t = err.get("type", "")
    ctx = err.get("ctx") or {}
    raw = err.get("input")
    got = show(raw)
    if t in ("float_parsing", "float_type"):
        if isinstance(raw, int) and not isinstance(raw, bool):
            return f"number too large ({got}; the largest is about 1.8e308)"
        return f"expected a number, got {got}"
    if t in ("int_parsing", "int_type", "int_from_float", "int_parsing_size"):
        return f"expected a whole number, got {got}"
    if t in _BOUNDS:
        return must_be(raw, **{_BOUNDS[t]: ctx.get(_BOUNDS[t])})
    if t == "finite_number":
        return f"must be a finite number, got {got}"
    if t == "extra_forbidden":
        return "unknown key"
    if t == "string_type":
        return f"expected text, got {got}"
    if t in ("string_too_short", "too_short"):
        n = ctx.get("min_length")
        what = "character" if t == "string_too_short" else "item"
        have = len(raw) if t == "string_too_short" and isinstance(raw, str) else ctx.get("actual_length")
        return f"needs at least {n} {what}{'s' if n != 1 else ''}, got {have}"
    if t in ("string_too_long", "too_long"):
        n = ctx.get("max_length")
        what = "character" if t == "string_too_long" else "item"
        return f"takes at most {n} {what}{'s' if n != 1 else ''}"
    if t == "string_pattern_mismatch":
        return f"must match {ctx.get('pattern')!r}, got {got}"
    if t in ("bool_type", "bool_parsing"):
        return f"expected true or false, got {got}"
    if t in ("model_type", "dict_type", "model_attributes_type"):
        return f"expected an object with fields, got {got}"
    if t == "list_type":
        return f"expected a list, got {got}"
    if t == "literal_error":
        return f"expected one of {ctx.get('expected')}, got {got}"
    if t == "missing":
        return "required key is missing"
    if t in ("value_error", "assertion_error"):
        e = ctx.get("error")
        text = str(e) if e is not None else str(err.get("msg", "invalid value"))
        return text.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    msg = str(err.get("msg", "invalid value")).replace("Input should be", "must be")
    return f"{msg[0].lower()}{msg[1:]}, got {got}" if msg else f"invalid value {got}"


class Problem(NamedTuple):
    """One wrong key: its path (union tags dropped, e.g. ``("arms", 0, "value")``) and the
    most telling pydantic error there (an item of ``ValidationError.errors()``)."""

    loc: tuple[Any, ...]
    err: dict[str, Any]


def problems(e: ValidationError) -> list[Problem]:
    """The errors of ``e``, one per key path, in pydantic's order.

    The members of a union that all failed on one value are one problem; the
    error kept is the first that is not a type mismatch (a bound, a finite-number
    rule, a validator's message), else the first.
    """
    by_loc: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for err in e.errors():
        loc = tuple(err.get("loc", ()))
        # an unknown or missing key ends in the key itself, even one called "str"
        key = loc if err.get("type") in ("extra_forbidden", "missing") else _key_loc(loc)
        by_loc.setdefault(key, []).append(err)
    out = []
    for loc, errs in by_loc.items():
        telling = [x for x in errs if x.get("type") not in _TYPE_ERRORS]
        out.append(Problem(loc, (telling or errs)[0]))
    return out


def explain(e: ValidationError, *, what: str = "") -> str:
    """A validation error as one line: ``"arms: needs at least 2 items, got 1"``.

    Args:
        e: the error. what: the name of the whole value, used when the first
            problem is not under a key (``"(top level)"`` otherwise).

    Returns:
        ``"<key path>: <describe()>"`` of the first problem, with ``" (and N more)"``
        when other keys are wrong too.
    """
    probs = problems(e)
    if not probs:
        return "invalid value"
    first = probs[0]
    loc = loc_path(first.loc) or what or "(top level)"
    return f"{loc}: {describe(first.err)}{and_more(len(probs) - 1)}"


def as_number(v: Any) -> float:
    """A value a user gave as a float: a number, or text that reads as one (spaces allowed).

    The one parser behind :func:`finite_number` (options, CSV cells) and the record
    importers' ``num`` (JSON values, whose finiteness the record's own fields check).

    Raises:
        ValueError: a boolean, a list, an object, text that is not a number, or an
            integer too large for a float (caller words the message).
    """
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ValueError(f"not a number: {show(v)}")
    try:
        return float(v)
    except (ValueError, OverflowError):
        raise ValueError(f"not a number: {show(v)}") from None


def finite_number(text: str, what: str) -> float:
    """A finite float from a user's text (an option part, a CSV cell).

    Args:
        text: the text as given (surrounding spaces allowed).
        what: where it came from, for the message (``"--a value 2"``).

    Raises:
        InputError: ``"{what}: 'x' is not a number"`` / ``"… is not a finite number"``.
    """
    try:
        x = as_number(text)
    except ValueError:
        raise InputError(f"{what}: {text.strip()!r} is not a number") from None
    if not math.isfinite(x):
        raise InputError(f"{what}: {text.strip()!r} is not a finite number")
    return x
