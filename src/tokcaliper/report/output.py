"""One place that decides between rich text and JSON output.

Every command takes ``--json``; with it, the same figures the text view shows
are printed as one JSON document on stdout (and nothing else is printed on
stdout, so the output can be piped to ``jq``).
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel
from rich.console import Console

from tokcaliper.model.text import warning_line
from tokcaliper.model.warnings import Caveat
from tokcaliper.report.text import SafeConsole

from tokcaliper.numbers import num, percent

#: Console for human output. Progress and warnings go to stderr so that
#: ``--json`` output on stdout stays machine-readable.
#: Piped output is 100 columns (rich would take 80, too narrow for the run tables;
#: the project's page is 80–100 columns), or ``COLUMNS`` when that is set.
stdout = SafeConsole(highlight=False, emoji=False,
                     width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 100)
#: Messages on stderr are never wrapped: a command line split over two lines
#: cannot be copied or searched.
stderr = SafeConsole(stderr=True, highlight=False, emoji=False, soft_wrap=True)


def to_jsonable(obj: Any) -> Any:
    """Convert pydantic models, dataclasses-like dicts and floats to JSON-safe data.

    NaN and ±inf become ``None`` (JSON has no such numbers).
    """
    if isinstance(obj, BaseModel):
        return to_jsonable(obj.model_dump(mode="json"))
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalar
        return to_jsonable(obj.item())
    return obj


_SURROGATE = re.compile("[\ud800-\udfff]")


def warn(caveat: Caveat | str) -> None:
    """Print one warning the one way every command prints it: ``tokcaliper: warning: …``.

    One line on stderr (so ``--json`` on stdout stays clean), without markup:
    a record's text inside the message cannot restyle the terminal.
    """
    message = caveat.message if isinstance(caveat, Caveat) else caveat
    stderr.print(warning_line(message), markup=False, highlight=False)


def _caveats(payload: Any, extra: Iterable[Caveat]) -> list[Caveat]:
    """The payload's own ``warnings`` (a result model's field) and then ``extra``, once each."""
    own = getattr(payload, "warnings", None) if isinstance(payload, BaseModel) else None
    found = [w for w in (own or []) if isinstance(w, Caveat)]
    for w in extra:
        if w not in found:
            found.append(w)
    return found


def emit(payload: Any, as_json: bool, render: Callable[[Console], None],
         warnings: Iterable[Caveat] = ()) -> None:
    """Print ``payload`` as JSON when ``as_json``, else call ``render(console)``.

    The warning sink: the caveats of the result (a model's ``warnings`` field of
    :class:`~tokcaliper.model.warnings.Caveat`) and ``warnings`` are printed on
    stderr after the text view (:func:`warn`), or kept in the JSON document's
    ``warnings`` list — never both, never on stdout in text mode.
    """
    caveats = _caveats(payload, warnings)
    if as_json:
        data = to_jsonable(payload)
        if caveats and isinstance(data, dict):
            data["warnings"] = [to_jsonable(w) for w in caveats]
        text = json.dumps(data, indent=2, ensure_ascii=False)
        # A lone surrogate (a "\ud800" escape in a record) cannot be encoded as UTF-8;
        # inside a JSON string its escape is the same value, and valid JSON.
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    else:
        render(stdout)
        for w in caveats:
            warn(w)


def fmt(x: float | None, digits: int = 3) -> str:
    """Alias of :func:`tokcaliper.numbers.num` (``digits`` significant figures), kept for
    callers written before the shared formatter; new code calls :mod:`tokcaliper.numbers`."""
    return num(x, digits)


def pct(x: float | None, decimals: int = 1) -> str:
    """Alias of :func:`tokcaliper.numbers.percent` (0.129 → ``"12.9%"``), kept like :func:`fmt`."""
    return percent(x, decimals=decimals)
