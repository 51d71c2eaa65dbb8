"""One timestamp format for everything tokcaliper stores: UTC, ISO 8601, milliseconds.

The canonical form is ``2026-01-31T12:00:00.000Z`` (always UTC, always three
fractional digits, ``Z`` suffix), so stored times sort as text and compare
across runs, hosts and telemetry. Older databases wrote ``+00:00`` with whole
seconds; :data:`UtcTimestamp` normalises any timezone-aware ISO 8601 string on
validation, so they read back in the same format.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Annotated

from pydantic import AfterValidator

__all__ = ["UtcTimestamp", "normalize_utc_iso", "utc_iso", "utc_now_iso"]


def utc_iso(epoch_s: float) -> str:
    """``epoch_s`` (seconds since the Unix epoch, as ``time.time()``) in the canonical form."""
    dt = datetime.fromtimestamp(epoch_s, tz=timezone.utc)
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def utc_now_iso() -> str:
    """The current time in the canonical form (wall clock; use monotonic time for durations)."""
    return utc_iso(time.time())


def normalize_utc_iso(text: str) -> str:
    """Any timezone-aware ISO 8601 time → the canonical UTC form.

    Raises:
        ValueError: ``text`` is not ISO 8601 or has no timezone (a naive time
            is ambiguous across hosts, so it is refused rather than guessed).
    """
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not an ISO 8601 time: {text!r}") from None
    if dt.tzinfo is None:
        raise ValueError(f"time {text!r} has no timezone (expected UTC, e.g. 2026-01-31T12:00:00.000Z)")
    return utc_iso(dt.timestamp())


#: A ``str`` field holding a time in the canonical form (normalised on validation).
UtcTimestamp = Annotated[str, AfterValidator(normalize_utc_iso)]
