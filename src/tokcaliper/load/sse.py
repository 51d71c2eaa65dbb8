"""Turn the raw bytes of one streamed chat completion into a RequestRecord.

The client's hot path only timestamps and keeps each network chunk
(:mod:`tokcaliper.load.client`) in a :class:`RawStream`; all parsing happens
here, after the whole phase has ended (see :mod:`tokcaliper.load.driver`), so
JSON decoding never delays the timestamp of another stream's token or the
issue of the next request.

An event's arrival time is the arrival time of the network chunk that
completed its line. Events that arrive in the same chunk share a timestamp
(their inter-token latency is 0): that is what the client really observed.

Format: OpenAI-compatible Server-Sent Events, ``data: {json}`` lines, ending
with ``data: [DONE]``; ``usage`` arrives in a final chunk when the request
set ``stream_options.include_usage`` (OpenAI API reference, "Chat
Completions: streaming").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tokcaliper.model.run import RequestRecord


@dataclass(slots=True)
class RawStream:
    """What the client kept of one request: chunk bytes and arrival times.

    Attributes:
        index: request index in the run.
        warmup: whether it is a warm-up request.
        issued / ended: ``time.perf_counter()`` at issue and at end of stream.
        chunks / stamps: network chunks and their arrival times (same length).
        error: a transport error (timeout, reset, HTTP status), if any.
    """

    index: int
    warmup: bool
    issued: float
    ended: float = 0.0
    chunks: list[bytes] = field(default_factory=list)
    stamps: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def nbytes(self) -> int:
        """Bytes held in ``chunks``."""
        return sum(len(c) for c in self.chunks)

    def parse(self, run_start: float) -> RequestRecord:
        """The :class:`RequestRecord` of this stream (see :func:`parse_stream`)."""
        return parse_stream(
            self.chunks, self.stamps, index=self.index, issued=self.issued, ended=self.ended,
            run_start=run_start, warmup=self.warmup, error=self.error,
        )


def _has_text(delta: dict[str, Any]) -> bool:
    # Reasoning models stream thoughts in reasoning_content; those are
    # generated tokens too, so they count for TTFT and ITL.
    return bool(delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning"))


def parse_stream(
    chunks: Sequence[bytes],
    stamps: Sequence[float],
    *,
    index: int,
    issued: float,
    ended: float,
    run_start: float,
    warmup: bool = False,
    error: str | None = None,
) -> RequestRecord:
    """Build a :class:`RequestRecord` from chunk bytes and their arrival times.

    Args:
        chunks: network chunks in arrival order (bytes, any split).
        stamps: ``time.perf_counter()`` at each chunk's arrival (same length).
        index: request index in the run.
        issued / ended: perf_counter at request issue and at end of stream.
        run_start: perf_counter at the run's start (for ``start_s``).
        warmup: whether this is a warm-up request.
        error: a transport error already known (connection reset, timeout…).

    Returns:
        The record; ``error`` is set when the stream carried an error event,
        produced no content, or ``error`` was given.
    """
    content_times: list[float] = []
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    buf = b""
    for data, t in zip(chunks, stamps):
        buf += data
        *lines, buf = buf.split(b"\n")
        for raw in lines:
            line = raw.strip()
            if not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if payload == b"[DONE]" or not payload:
                continue
            try:
                event = json.loads(payload)
            except ValueError:
                error = error or f"malformed SSE event: {payload[:80]!r}"
                continue
            if not isinstance(event, dict):
                continue
            if event.get("error"):
                err = event["error"]
                msg = err.get("message") if isinstance(err, dict) else str(err)
                error = error or f"server error event: {msg}"
            for choice in event.get("choices") or ():
                if _has_text(choice.get("delta") or {}):
                    content_times.append(t)
                    break
            if event.get("usage"):
                usage = event["usage"]
            if event.get("timings"):
                timings = event["timings"]

    if not content_times and error is None:
        error = "stream ended without any generated token"
    completion = (usage or {}).get("completion_tokens")
    from_usage = isinstance(completion, int)
    return RequestRecord(
        index=index,
        warmup=warmup,
        start_s=issued - run_start,
        ttft_s=(content_times[0] - issued) if content_times else None,
        itl_s=[b - a for a, b in zip(content_times, content_times[1:])],
        e2e_s=ended - issued,
        output_tokens=completion if from_usage else len(content_times),
        prompt_tokens=(usage or {}).get("prompt_tokens"),
        token_count_source="usage" if from_usage else "chunks",
        content_chunks=len(content_times),
        error=error,
        server_timings=timings,
    )
