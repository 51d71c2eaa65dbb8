"""Experiment commands: fill ``{value}``, ``{port}``, ``{host}`` and split into argv.

Commands from an experiment file run without a shell: the template is split
with :func:`shlex.split` first and each word is filled afterwards, so a value
with spaces stays one argument and cannot inject a second command. With
``shell = true`` the filled text runs as ``["/bin/sh", "-c", text]`` and each
value is quoted with :func:`shlex.quote`. Values come only from the
experiment file (or the port tokcaliper chose), never from a server's output.

Read-back: the command's stdout, stripped, must equal the expected string, or
fully match the expected regular expression (:func:`re.fullmatch`).

Pure functions, no processes.
"""

from __future__ import annotations

import re
import shlex
import string

from tokcaliper.errors import InputError

__all__ = ["PLACEHOLDERS", "fill_command", "placeholders", "readback_matches"]

#: The only placeholders a command may use.
PLACEHOLDERS = frozenset({"value", "port", "host"})

_FMT = string.Formatter()


def placeholders(template: str, allowed: frozenset[str] | set[str] = PLACEHOLDERS) -> set[str]:
    """Names of the ``{…}`` fields in ``template`` (``{{`` and ``}}`` are literal braces).

    Args:
        template: the command text. allowed: names accepted (default :data:`PLACEHOLDERS`).

    Raises:
        InputError: unbalanced braces, a positional ``{}``, a field with a
            format spec/conversion or attribute, or a name not in ``allowed``.
    """
    names: set[str] = set()
    try:
        parsed = list(_FMT.parse(template))
    except ValueError as e:
        raise InputError(f"command {template!r}: {e} (write {{{{ and }}}} for literal braces)") from None
    for _lit, field, spec, conv in parsed:
        if field is None:
            continue
        names_txt = ", ".join("{" + a + "}" for a in sorted(allowed))
        if field == "" or spec or conv or not field.isidentifier():
            raise InputError(f"command {template!r}: placeholder {{{field}}} is not one of "
                             f"{names_txt}")
        if field not in allowed:
            raise InputError(f"command {template!r}: unknown placeholder {{{field}}} "
                             f"(allowed: {names_txt})")
        names.add(field)
    return names


def fill_command(template: str, *, value: str | None = None, port: int | None = None,
                 host: str | None = None, shell: bool = False) -> list[str]:
    """The argv to run for ``template`` with its placeholders filled.

    Args:
        template: e.g. ``"nvidia-smi -pl {value}"``.
        value, port, host: what to put in; only those the template uses are needed.
        shell: run through ``/bin/sh -c`` (values shell-quoted).

    Returns:
        argv, e.g. ``["nvidia-smi", "-pl", "180"]``; never empty.

    Raises:
        InputError: unknown or missing placeholder, bad quoting, empty command.
    """
    used = placeholders(template)
    given = {"value": value, "port": None if port is None else str(port), "host": host}
    missing = sorted(k for k in used if given[k] is None)
    if missing:
        raise InputError(f"command {template!r} uses {{{missing[0]}}} but no {missing[0]} is given")
    if shell:
        text = template.format(**{k: shlex.quote(v) for k, v in given.items() if v is not None})
        if not text.strip():
            raise InputError("command is empty")
        return ["/bin/sh", "-c", text]
    try:
        words = shlex.split(template)
    except ValueError as e:
        raise InputError(f"command {template!r}: {e}") from None
    if not words:
        raise InputError("command is empty")
    fill = {k: v for k, v in given.items() if v is not None}
    return [w.format(**fill) for w in words]


def readback_matches(output: str, expect: str | None = None,
                     expect_regex: str | None = None) -> bool:
    """Does a read-back command's output show the expected setting?

    Args:
        output: the command's stdout.
        expect: exact string, compared with the stripped output.
        expect_regex: regular expression that must match the whole stripped output.

    Raises:
        InputError: neither or both expectations given, or an invalid regex.
    """
    if (expect is None) == (expect_regex is None):
        raise InputError("give exactly one of expect or expect_regex for a read-back")
    text = output.strip()
    if expect is not None:
        return text == expect.strip()
    try:
        return re.fullmatch(expect_regex, text) is not None  # type: ignore[arg-type]
    except re.error as e:
        raise InputError(f"expect_regex {expect_regex!r}: {e}") from None
