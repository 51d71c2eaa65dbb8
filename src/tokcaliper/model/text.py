"""Text from users, files and servers, made safe for the terminal; the warning line.

Below every package that prints (the renderers of :mod:`tokcaliper.report`, the
server's start announcement in :mod:`tokcaliper.servers`), so each uses the one
rule (:mod:`tokcaliper.report.text` re-exports :func:`plain` and :func:`esc`
beside its :class:`~tokcaliper.report.text.SafeConsole`):

- :func:`plain` shows every control character (C0 except newline and tab, DEL,
  C1, which includes ESC's 8-bit twin) as a visible escape (``\\x1b``), so an
  ``ESC [ 2 J`` in a server's error body cannot clear the screen;
- :func:`esc` does that and escapes rich markup (``[/x]`` prints as itself);
- :func:`warning_line` is the one form of a warning on stderr,
  ``tokcaliper: warning: <message>`` (the printers are
  :func:`tokcaliper.report.output.warn` and, where no console exists, e.g. a
  server that cannot be stopped at exit, :mod:`tokcaliper.servers.managed`).

Pure; no I/O.
"""

from __future__ import annotations

import re

__all__ = ["WARNING_PREFIX", "esc", "plain", "warning_line"]

#: Control characters shown as escapes: C0 except \t and \n, DEL, and C1.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

#: What every warning line starts with (errors: ``tokcaliper: error: ``, :mod:`tokcaliper.errors`).
WARNING_PREFIX = "tokcaliper: warning: "


def _visible(m: re.Match[str]) -> str:
    return f"\\x{ord(m.group()):02x}"


def plain(text: object) -> str:
    """``str(text)`` with each control character (ESC, BEL, CR, DEL, C1 …; not newline
    or tab) replaced by its visible escape ``\\xNN``. Lone surrogates become ``\\udXXX``."""
    s = _CONTROL.sub(_visible, str(text))
    if any("\ud800" <= c <= "\udfff" for c in s):
        s = "".join(f"\\u{ord(c):04x}" if "\ud800" <= c <= "\udfff" else c for c in s)
    return s


def esc(text: object) -> str:
    """:func:`plain`, then rich markup escaped (``rich.markup.escape``): safe to interpolate
    into a markup string."""
    from rich.markup import escape

    return escape(plain(text))


def warning_line(message: object) -> str:
    """``"tokcaliper: warning: <message>"``, the message through :func:`plain`: one line
    that cannot restyle the terminal. Print it without markup."""
    return WARNING_PREFIX + plain(message)
