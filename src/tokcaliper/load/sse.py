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
    """What the client kept of one request: chunk bytes, arrival times, its stamps.

    Every time is ``time.perf_counter()`` (0.0 = not reached).

    Attributes:
        index: request index in the run.
        warmup: whether it is a warm-up request.
        issued: the request's first byte was handed to the socket (TTFT's zero).
        ended: the response ended (or failed).
        scheduled: when the request was due (closed loop: its worker was
            free; open loop: its arrival time). ``issued − scheduled`` is the
            client's dispatch delay.
        connected: when the connection it went out on was established.
        connect_s: how long that connection took to open, s.
        reused: the connection had carried an earlier request.
        written: the socket had taken the whole request.
        first_byte / headers: first response bytes / complete headers.
        retried: times it was re-sent after a reused connection was dead.
        chunks / stamps: network chunks and their arrival times (same length).
        error: a transport error (timeout, reset, HTTP status), if any.
    """

    index: int
    warmup: bool
    issued: float = 0.0
    ended: float = 0.0
    scheduled: float = 0.0
    connected: float = 0.0
    connect_s: float | None = None
    reused: bool = False
    written: float = 0.0
    first_byte: float = 0.0
    headers: float = 0.0
    retried: int = 0
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
            scheduled=self.scheduled or None, connected=self.connected or None,
            connect_s=self.connect_s, reused=self.reused, written=self.written or None,
            first_byte=self.first_byte or None, headers=self.headers or None, retried=self.retried,
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
    scheduled: float | None = None,
    connected: float | None = None,
    connect_s: float | None = None,
    reused: bool = False,
    written: float | None = None,
    first_byte: float | None = None,
    headers: float | None = None,
    retried: int = 0,
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
        scheduled / connected / written / first_byte / headers: the
            request's other perf_counter stamps (:class:`RawStream`), None
            when unknown; stored relative to ``run_start``.
        connect_s / reused / retried: its connection's set-up time, whether
            it was reused, and how often the request was re-sent.

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
    def rel(t: float | None) -> float | None:
        return None if t is None else t - run_start

    return RequestRecord(
        index=index,
        warmup=warmup,
        start_s=issued - run_start,
        scheduled_s=rel(scheduled),
        connected_s=rel(connected),
        connect_s=connect_s,
        connection_reused=reused,
        written_s=rel(written),
        headers_s=rel(headers),
        first_byte_s=rel(first_byte),
        first_token_s=rel(content_times[0]) if content_times else None,
        last_token_s=rel(content_times[-1]) if content_times else None,
        retried=retried,
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
