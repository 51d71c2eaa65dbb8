"""Text from users, files and servers, made safe for the terminal.

Nothing that comes from outside tokcaliper (an arm label, a model id from
``/v1/models``, an HTTP error body, a record's model name, a file name) is ever
read as rich markup or reaches the terminal as a control sequence:

- :func:`plain` shows every control character (C0 except newline and tab, DEL,
  C1, which includes ESC's 8-bit twin) as a visible escape (``\\x1b``), so an
  ``ESC [ 2 J`` in a server's error body cannot clear the screen;
- :func:`esc` does that and escapes rich markup (``[/x]`` prints as itself);
  both are defined in :mod:`tokcaliper.model.text` (below the servers, which
  announce a command line too) and re-exported here;
- :class:`SafeConsole` is the console every command prints through: a string
  whose markup does not parse prints as plain text instead of raising
  :class:`rich.errors.MarkupError`, and control characters are shown as escapes
  even where a caller forgot :func:`esc` (a safety net; callers still escape).
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.errors import MarkupError
from rich.text import Text

from tokcaliper.model.text import esc, plain

__all__ = ["SafeConsole", "esc", "plain"]


class SafeConsole(Console):
    """A rich console that never raises on markup and never prints control characters.

    Strings are converted as usual (tokcaliper's own ``[bold]…[/bold]`` works);
    one whose markup does not parse (``"model [/x]"``) is printed literally.
    """

    def on_broken_pipe(self) -> None:
        """The reader of stdout went away (``tokcaliper runs | head -1``): raise
        :class:`BrokenPipeError` for :func:`tokcaliper.cli.main` to end quietly with
        :data:`tokcaliper.errors.EXIT_BROKEN_PIPE` (rich's default exits 1, the code of a bug)."""
        self.quiet = True
        raise BrokenPipeError("stdout closed by its reader")

    def render_str(self, text: str, **kwargs: Any) -> Text:  # type: ignore[override]
        text = plain(text)
        try:
            return super().render_str(text, **kwargs)
        except MarkupError:
            kwargs["markup"] = False
            return super().render_str(text, **kwargs)
