"""Acceptance from a vLLM server log's "SpecDecoding metrics" lines (``tokcaliper spec log``).

The lines are parsed by the vLLM reader of the family registry
(:func:`tokcaliper.model.families.vllm.parse_log`); this module reads the file
(through :func:`tokcaliper.fileio.read_text`, undecodable bytes replaced: a
server log may hold any bytes), sums the intervals and builds the command's
result, :class:`LogAcceptance`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from tokcaliper.errors import InputError
from tokcaliper.fileio import read_text
from tokcaliper.model.families.vllm import VllmLogWindow, counts_from_log, parse_log, unread_log_lines
from tokcaliper.model.specdec import LIMIT, AcceptanceMetrics, acceptance_metrics

__all__ = ["MAX_LOG_BYTES", "LogAcceptance", "log_acceptance"]

#: Largest log file read (bytes).
MAX_LOG_BYTES = 64 * 1024 * 1024


class LogAcceptance(BaseModel):
    """What ``tokcaliper spec log FILE`` prints (``--json`` gives this document).

    Attributes:
        source: the log file, as given.
        windows: one entry per "SpecDecoding metrics" line (one logging interval), in order.
        metrics: AL, acceptance rate, per-position acceptance and k_eff of the summed
            intervals (drafts recovered from the rounded AL); ``None`` when no line gives
            a mean acceptance length to recover them from.
        limit: what AL can and cannot answer (:data:`tokcaliper.model.specdec.LIMIT`).
    """

    source: str
    windows: list[VllmLogWindow]
    metrics: AcceptanceMetrics | None
    limit: str = LIMIT

    @property
    def accepted(self) -> int:
        """Accepted tokens over every interval."""
        return sum(w.accepted for w in self.windows)

    @property
    def drafted(self) -> int:
        """Drafted tokens over every interval."""
        return sum(w.drafted for w in self.windows)


def log_acceptance(path: Path) -> LogAcceptance:
    """Read the vLLM log ``path`` (at most :data:`MAX_LOG_BYTES`) and sum its intervals.

    Raises:
        InputError: a missing or unreadable file; a line whose figures are impossible
            (``"FILE line N: …"``); no "SpecDecoding metrics" line, or only lines in
            an unknown format (naming the first).
    """
    text = read_text(path, MAX_LOG_BYTES, errors="replace")
    try:
        windows = parse_log(text)
    except InputError as e:
        raise InputError(f"{path} {e}") from None
    if not windows:
        unread = unread_log_lines(text)
        if unread:
            raise InputError(f"{path}: {len(unread)} line(s) mention \"SpecDecoding metrics\" but none is in "
                             f"the format this reads (first: line {unread[0]}; expected \"… Accepted: N tokens, "
                             "Drafted: N tokens …\")")
        raise InputError(f"{path}: no \"SpecDecoding metrics\" line found")
    counts = counts_from_log(windows)
    metrics = acceptance_metrics(counts) if counts is not None else None
    return LogAcceptance(source=str(path), windows=windows, metrics=metrics)
