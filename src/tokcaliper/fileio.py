"""Reading user files safely: regular files only, a byte ceiling, hostile JSON, ``\\n`` lines.

The one reader of every file a user names: the audit importers (record files,
``--model-file``), ``bench --prompts``, ``compare --csv``, ``analyze --csv``,
``spec table``, ``spec log`` and experiment files:

- :func:`read_bytes` opens without blocking (a FIFO would otherwise wait for a
  writer forever), refuses anything but a regular file (``/dev/zero`` reports
  size 0 and never ends) and enforces the ceiling on the bytes actually read,
  not on the size the file system reports;
- :func:`read_text` is :func:`read_bytes` decoded as UTF-8, a leading byte-order
  mark dropped (Excel writes one);
- :func:`first_duplicate` finds a name given twice (JSON object keys, CSV
  header columns): a file that says two things of one key is refused, never
  read at its last value;
- :func:`loads_json` turns every failure of Python's JSON parser (syntax,
  nesting deeper than the recursion limit, integers longer than
  ``sys.get_int_max_str_digits()``) into :class:`JSONParseError` with one line;
- :func:`jsonl_lines` splits JSON Lines on ``\\n`` only (the JSON Lines format;
  ``str.splitlines`` also splits on U+2028, U+2029, U+0085, FF, VT and FS, which
  are legal inside JSON strings);
- :func:`cache_dir` is tokcaliper's own folder outside the repository (the built
  server and model, server records, runs that could not be stored).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from collections.abc import Iterable
from typing import Any

from tokcaliper.errors import InputError
from tokcaliper.numbers import num

__all__ = ["JSONParseError", "cache_dir", "check_max_bytes", "jsonl_records", "check_unique_columns", "decode_text", "first_duplicate",
           "human_bytes", "jsonl_lines", "loads_json", "os_reason", "read_bytes", "read_text"]


def cache_dir() -> Path:
    """tokcaliper's cache folder: ``$TOKCALIPER_CACHE``, else ``$XDG_CACHE_HOME/tokcaliper``,
    else ``~/.cache/tokcaliper`` (not created here; not inside the repository).

    Holds the built server and the model (:mod:`tokcaliper.servers.local`), the
    records of running servers (:mod:`tokcaliper.servers.records`) and runs the
    store could not write (:func:`tokcaliper.store.sqlite.write_recovery_file`).
    """
    env = os.environ.get("TOKCALIPER_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tokcaliper"


def human_bytes(n: float) -> str:
    """``512`` → ``"512 bytes"``, ``20_480`` → ``"20.5 kB"``, ``10_000_000`` → ``"10 MB"`` (SI units)."""
    if n < 1000:
        return f"{int(n)} byte{'s' if n != 1 else ''}"
    for unit, scale in (("kB", 1e3), ("MB", 1e6), ("GB", 1e9), ("TB", 1e12)):
        if n < scale * 1000 or unit == "TB":
            out = f"{n / scale:g}" if n % scale == 0 else num(n / scale, 1, min_decimals=1, grouping=False)
            return f"{out} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def check_max_bytes(max_bytes: int) -> None:
    """Validate a byte ceiling (``--max-bytes``).

    Raises:
        InputError: a ceiling that is not a positive whole number of bytes.
    """
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
        raise InputError(f"--max-bytes {max_bytes!r}: must be a positive number of bytes")


def os_reason(e: OSError) -> str:
    """An OS error in plain words (``"permission denied"``), without ``[Errno N]``."""
    return (e.strerror or "input/output error").lower()


def read_bytes(path: Path, max_bytes: int, *, what: str = "", raise_hint: str | None = "--max-bytes") -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them.

    Args:
        path: the file. max_bytes: ceiling (bytes), enforced on what is read.
        what: how to name the file in messages (default: its path).
        raise_hint: the option that raises the ceiling, named in the message
            (``None``: the command has none).

    Raises:
        InputError: missing or unreadable; a directory; a device, FIFO or socket
            ("not a regular file"); more than ``max_bytes`` bytes.
    """
    check_max_bytes(max_bytes)
    name = what or str(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; no effect on regular files.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except IsADirectoryError:
        raise InputError(f"{name}: is a directory (give a file, or a folder of .json files)") from None
    except OSError as e:
        raise InputError(f"{name}: cannot read ({os_reason(e)})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{name}: is a directory (give a file, or a folder of .json files)")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{name}: not a regular file (a device, FIFO or socket); give a file")
        hint = f" (raise it with {raise_hint})" if raise_hint else ""
        over = InputError(f"{name}: more than {human_bytes(max_bytes)} (over the {human_bytes(max_bytes)} "
                          f"limit{hint})")
        if st.st_size > max_bytes:
            raise InputError(f"{name}: {human_bytes(st.st_size)} is over the {human_bytes(max_bytes)} limit{hint}")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        chunks: list[bytes] = []
        got = 0
        while True:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            if got > max_bytes:
                raise over
        return b"".join(chunks)
    except OSError as e:
        raise InputError(f"{name}: cannot read ({os_reason(e)})") from None
    finally:
        os.close(fd)


def decode_text(data: bytes, what: object, *, errors: str = "strict") -> str:
    """UTF-8 text of a file's bytes, a leading byte-order mark dropped.

    Args:
        data: the bytes. what: the file's name in messages.
        errors: ``"strict"`` (refuse bad bytes) or ``"replace"`` (logs of other programs).

    Raises:
        InputError: bytes that are not UTF-8 (strict), naming the file and the offset.
    """
    try:
        return data.decode("utf-8-sig", errors=errors)
    except UnicodeDecodeError as e:
        raise InputError(f"{what}: not UTF-8 text (bad byte at offset {e.start})") from None


def read_text(path: Path, max_bytes: int, *, what: str = "", raise_hint: str | None = None,
              errors: str = "strict") -> str:
    """The UTF-8 text of the regular file ``path`` (:func:`read_bytes` then :func:`decode_text`).

    Raises:
        InputError: everything :func:`read_bytes` refuses; bytes that are not UTF-8.
    """
    return decode_text(read_bytes(path, max_bytes, what=what, raise_hint=raise_hint), what or path,
                       errors=errors)


def first_duplicate(names: Iterable[object]) -> tuple[object, int, int] | None:
    """The first name given twice, with the 1-based places of both, or ``None``.

    ``["k", "al", "k"]`` → ``("k", 1, 3)``. The one test for "this key twice"
    (JSON objects through :func:`loads_json`, CSV headers through
    :func:`check_unique_columns`).
    """
    seen: dict[object, int] = {}
    for i, n in enumerate(names, 1):
        if n in seen:
            return n, seen[n], i
        seen[n] = i
    return None


def check_unique_columns(names: Iterable[object], source: str) -> None:
    """Refuse a CSV header that names a column twice.

    Raises:
        InputError: ``"{source}: header names column 'x' twice (columns 1 and 3); which
            value to use is ambiguous"``.
    """
    dup = first_duplicate(names)
    if dup is not None:
        raise InputError(f"{source}: header names column {dup[0]!r} twice (columns {dup[1]} and "
                         f"{dup[2]}); which value to use is ambiguous")


class JSONParseError(ValueError):
    """JSON that cannot be parsed, with a plain one-line reason."""


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    dup = first_duplicate(k for k, _v in pairs)
    if dup is not None:
        raise _DuplicateKey(str(dup[0]))
    return dict(pairs)


def loads_json(text: str, *, strict: bool = False) -> Any:
    """``json.loads`` with every failure turned into :class:`JSONParseError` (one line).

    An object that gives one key twice (``{"k": 1, "k": 2}``) is refused, naming
    the key: the JSON standard leaves its meaning open and Python would keep
    the last value silently. Besides syntax errors this covers the two limits of Python's parser that
    hostile or broken files reach: nesting deeper than the interpreter's
    recursion limit (RecursionError) and integers longer than
    ``sys.get_int_max_str_digits()`` (ValueError, CVE-2020-10735 guard).
    ``strict=False`` keeps control characters inside strings (notes fields).
    """
    try:
        return json.loads(text, strict=strict, object_pairs_hook=_unique_pairs)
    except _DuplicateKey as e:
        raise JSONParseError(f"key {e.key!r} is given twice in one object; which value to use is "
                             "ambiguous") from None
    except json.JSONDecodeError as e:
        cut = e.pos >= len(text.rstrip()) - 1 or e.msg.startswith("Unterminated string")
        what = "truncated JSON" if cut else "invalid JSON"
        ch = repr(text[e.pos]) if e.pos < len(text) else "end of file"
        raise JSONParseError(f"{what} at line {e.lineno} column {e.colno} (near {ch}): {e.msg}") from None
    except RecursionError:
        raise JSONParseError(f"JSON nested too deeply (more than about {sys.getrecursionlimit()} levels of "
                             "[ or {)") from None
    except ValueError as e:
        if "digits" in str(e):
            raise JSONParseError(f"a JSON integer has more than {sys.get_int_max_str_digits()} digits") from None
        raise JSONParseError(f"invalid JSON ({' '.join(str(e).split())})") from None


def jsonl_lines(text: str) -> list[str]:
    """Lines of a JSON Lines text: split on ``\\n`` only, a trailing ``\\r`` dropped (CRLF files)."""
    return [ln[:-1] if ln.endswith("\r") else ln for ln in text.split("\n")]


def jsonl_records(text: str, origin: str) -> Iterable[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line of a JSON Lines text (strict JSON).

    Raises:
        InputError: ``"ORIGIN:LINE: not valid JSON (…)"`` for the first line that does not parse.
    """
    for lineno, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip():
            continue
        try:
            obj = loads_json(line, strict=True)
        except JSONParseError as e:
            raise InputError(f"{origin}:{lineno}: not valid JSON ({e})") from None
        yield lineno, obj
