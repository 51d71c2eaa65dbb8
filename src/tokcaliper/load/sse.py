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

Per-response fields: the numeric entries of the objects the registered server
families declare (:func:`tokcaliper.model.families.response_fields`: llama.cpp's
``timings``, SGLang's ``meta_info``), looked for at an event's top level and in
its choices, only in the events that carry no generated text (the final and the
usage chunk) and in the last one that does: a token's event costs nothing more.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tokcaliper.model.families import ResponseField, cached_token_keys, response_fields
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
        error_class: its class (:data:`tokcaliper.model.run.ERROR_CLASSES`).
        max_tokens: the request's output budget (checked against ``usage``).
        requested_prompt_tokens / requested_output_tokens: synthetic lengths
            asked for (None: not asked for), copied to the record.
        session / turn / prefix_group: the request's multi-turn session, turn
            and shared-prefix group (None: not in one), copied to the record.
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
    error_class: str | None = None
    max_tokens: int | None = None
    requested_prompt_tokens: int | None = None
    requested_output_tokens: int | None = None
    session: int | None = None
    turn: int | None = None
    prefix_group: int | None = None

    @property
    def nbytes(self) -> int:
        """Bytes held in ``chunks``."""
        return sum(len(c) for c in self.chunks)

    def parse(self, run_start: float) -> RequestRecord:
        """The :class:`RequestRecord` of this stream (see :func:`parse_stream`)."""
        rec = parse_stream(
            self.chunks, self.stamps, index=self.index, issued=self.issued, ended=self.ended,
            run_start=run_start, warmup=self.warmup, error=self.error,
            error_class=self.error_class, max_tokens=self.max_tokens,
            scheduled=self.scheduled or None, connected=self.connected or None,
            connect_s=self.connect_s, reused=self.reused, written=self.written or None,
            first_byte=self.first_byte or None, headers=self.headers or None, retried=self.retried,
        )
        rec.requested_prompt_tokens = self.requested_prompt_tokens
        rec.requested_output_tokens = self.requested_output_tokens
        rec.session, rec.turn, rec.prefix_group = self.session, self.turn, self.prefix_group
        return rec


#: Largest token count accepted from ``usage`` (no model's context holds more;
#: a larger figure is a server bug or garbage, not a measurement).
MAX_TOKEN_COUNT = 10_000_000

#: Longest SSE line accepted, bytes (``data: `` included, newline excluded). A
#: chat-completion chunk is a few hundred bytes (one token's text and its JSON
#: envelope; the final one adds usage and timings, under 2 kB): 1 MiB is 500 times
#: that. A longer line is not a token event, and keeping it whole would cost the
#: client memory and, when parsed mid-phase, event-loop time that every other
#: stream's timing pays for.
MAX_EVENT_BYTES = 2**20

#: The error of a line over :data:`MAX_EVENT_BYTES` (client read path and parser alike).
LINE_TOO_LONG = (f"SSE line longer than the 1 MiB limit ({MAX_EVENT_BYTES:,} bytes) without an end: "
                 "the stream was cut there")

#: Text fields of a ``delta`` that carry generated tokens. Reasoning models
#: stream thoughts in ``reasoning_content`` (or ``reasoning``); those are
#: generated tokens too, so they count for TTFT and ITL.
_TEXT_FIELDS = ("content", "reasoning_content", "reasoning")


class StreamError(Exception):
    """One response field a server sent is not what the API allows.

    Attributes:
        error_class: the request's error class (``"malformed_event"`` or
            ``"bad_usage"``; see :data:`tokcaliper.model.run.ERROR_CLASSES`).
    """

    def __init__(self, error_class: str, message: str) -> None:
        super().__init__(message)
        self.error_class = error_class


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def token_count(usage: dict[str, Any], key: str) -> int | None:
    """``usage[key]`` as a token count: an int in 0 … :data:`MAX_TOKEN_COUNT`, or None if absent.

    Raises:
        StreamError: (``bad_usage``) a bool, float, string, negative or huge
            count — JSON ``true`` is not one token.
    """
    v = usage.get(key)
    if v is None:
        return None
    if type(v) is not int or not 0 <= v <= MAX_TOKEN_COUNT:
        raise StreamError("bad_usage", f"usage.{key} is not a token count: {_short(v)}")
    return v


def read_event(event: Any, fields: Sequence[ResponseField] | None = None,
               ) -> tuple[bool, dict[str, int | None] | None, dict[str, Any] | None]:
    """Validate one decoded SSE event of a chat-completion stream.

    Shape accepted (OpenAI API reference, "The chat completion chunk
    object"): an object; ``choices`` absent/null or a list of objects whose
    ``delta`` is absent/null or an object whose text fields are strings or
    null; ``usage`` absent/null or an object with integer token counts; each
    of ``fields`` absent/null or an object (:func:`kept_fields`).

    Args:
        event: the decoded JSON of one ``data:`` line.
        fields: per-response objects to keep (None: the registered families' union).

    Returns:
        ``(has_text, usage, kept)``: whether a choice carried generated
        text; ``{"completion_tokens", "prompt_tokens", "cached_tokens"}``
        (None where absent; ``cached_tokens`` from
        ``usage.prompt_tokens_details``) or None; the kept entries or None.

    Raises:
        StreamError: any field of another type or out of range.
    """
    if not isinstance(event, dict):
        raise StreamError("malformed_event", f"SSE event is not a JSON object: {_short(event)}")
    choices = event.get("choices")
    if choices is not None and not isinstance(choices, list):
        raise StreamError("malformed_event", f"choices is not a list: {_short(choices)}")
    has_text = False
    for choice in choices or ():
        if not isinstance(choice, dict):
            raise StreamError("malformed_event", f"a choice is not an object: {_short(choice)}")
        delta = choice.get("delta")
        if delta is None:
            continue
        if not isinstance(delta, dict):
            raise StreamError("malformed_event", f"delta is not an object: {_short(delta)}")
        for key in _TEXT_FIELDS:
            text = delta.get(key)
            if text is not None and not isinstance(text, str):
                raise StreamError("malformed_event", f"delta.{key} is not a string: {_short(text)}")
            has_text = has_text or bool(text)
    usage = event.get("usage")
    counts: dict[str, int | None] | None = None
    if usage is not None:
        if not isinstance(usage, dict):
            raise StreamError("bad_usage", f"usage is not an object: {_short(usage)}")
        counts = {k: token_count(usage, k) for k in ("completion_tokens", "prompt_tokens")}
        details = usage.get("prompt_tokens_details")
        if details is not None and not isinstance(details, dict):
            raise StreamError("bad_usage", f"usage.prompt_tokens_details is not an object: {_short(details)}")
        counts["cached_tokens"] = token_count(details, "cached_tokens") if details else None
    keep = response_fields() if fields is None else fields
    return has_text, counts, kept_fields(event, keep) if keep else None


def _numbers(obj: Any, name: str, keys: tuple[str, ...] | None) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise StreamError("malformed_event", f"{name} is not an object: {_short(obj)}")
    items = obj.items() if keys is None else ((k, obj[k]) for k in keys if k in obj)
    return {str(k): v for k, v in items if type(v) in (int, float) and math.isfinite(v)}


def kept_fields(event: dict[str, Any], fields: Sequence[ResponseField]) -> dict[str, Any] | None:
    """The finite int/float entries of ``fields``' objects in ``event`` (top level, then each choice), flat.

    An object holding none of them still gives ``{}`` (it was there); None when
    no object is present. Entries of the same name: the later one wins.

    Raises:
        StreamError: (``malformed_event``) an object of that name that is not a JSON object.
    """
    kept: dict[str, Any] | None = None
    choices = event.get("choices")
    places = (event, *(c for c in choices if isinstance(c, dict))) if isinstance(choices, list) else (event,)
    for field in fields:
        for where in places:
            obj = where.get(field.obj)
            if obj is not None:
                kept = {**(kept or {}), **_numbers(obj, field.obj, field.keys)}
    return kept


def _error_text(err: Any) -> str:
    msg = err.get("message") if isinstance(err, dict) else err
    return _short(msg, 200) if not isinstance(msg, str) else msg[:200]


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
    error_class: str | None = None,
    max_tokens: int | None = None,
    scheduled: float | None = None,
    connected: float | None = None,
    connect_s: float | None = None,
    reused: bool = False,
    written: float | None = None,
    first_byte: float | None = None,
    headers: float | None = None,
    retried: int = 0,
    fields: Sequence[ResponseField] | None = None,
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
        error_class: its class (:data:`tokcaliper.model.run.ERROR_CLASSES`).
        max_tokens: the request's output budget; a ``usage.completion_tokens``
            above it is rejected (None: not checked).
        scheduled / connected / written / first_byte / headers: the
            request's other perf_counter stamps (:class:`RawStream`), None
            when unknown; stored relative to ``run_start``.
        connect_s / reused / retried: its connection's set-up time, whether
            it was reused, and how often the request was re-sent.
        fields: per-response objects to keep in ``server_timings`` (None: the
            registered families' union, :func:`tokcaliper.model.families.response_fields`).

    Returns:
        The record. ``error`` and ``error_class`` are set (first fault wins)
        when ``error`` was given, a line was longer than
        :data:`MAX_EVENT_BYTES` (parsing stops there), an event was not valid JSON or not of the
        chunk object's shape (:func:`read_event`), the stream carried an error
        event, it ended without ``data: [DONE]``, carried no generated text,
        or its ``usage`` contradicts the stream: ``completion_tokens`` fewer
        than the events that carried text (the bound is exact: each such event
        holds at least one token) or more than ``max_tokens``. Never raises on
        server data.
    """
    content_times: list[float] = []
    usage: dict[str, int | None] | None = None
    timings: dict[str, Any] | None = None
    keep = tuple(response_fields() if fields is None else fields)
    last_text: dict[str, Any] | None = None  # the last event with text, read once at the end
    done = False
    error_class = error_class if error is not None else None

    def fail(cls: str, message: str) -> None:
        nonlocal error, error_class
        if error is None:
            error, error_class = message, cls

    pending: list[bytes] = []  # the line not yet ended, in pieces (joined once: linear)
    pending_len = 0
    for data, t in zip(chunks, stamps):
        if b"\n" not in data:
            pending.append(data)
            pending_len += len(data)
            if pending_len > MAX_EVENT_BYTES:
                fail("malformed_event", LINE_TOO_LONG)
                break
            continue
        lines = (b"".join(pending) + data if pending else data).split(b"\n")
        tail = lines.pop()
        pending, pending_len = ([tail], len(tail)) if tail else ([], 0)
        if any(len(raw) > MAX_EVENT_BYTES for raw in lines) or pending_len > MAX_EVENT_BYTES:
            fail("malformed_event", LINE_TOO_LONG)
            break
        for raw in lines:
            line = raw.strip()
            if done or not line.startswith(b"data:"):
                continue
            payload = line[5:].strip()
            if payload == b"[DONE]":
                done = True
                continue
            if not payload:
                continue
            try:
                event = json.loads(payload)
            except (ValueError, RecursionError):  # RecursionError: nested deeper than the decoder's limit
                fail("malformed_event", f"malformed SSE event: {payload[:80]!r}")
                continue
            if isinstance(event, dict) and event.get("error"):
                fail("server_error_event", f"server error event: {_error_text(event['error'])}")
                continue
            try:
                has_text, counts, _ = read_event(event, ())
                if has_text:
                    content_times.append(t)
                    last_text = event
                else:
                    times = kept_fields(event, keep)
                    if times is not None:
                        timings = {**(timings or {}), **times}
            except StreamError as e:
                fail(e.error_class, str(e))
                continue
            if counts is not None:
                usage = counts

    if last_text is not None and keep:
        try:  # the final event may carry text as well as the per-response fields
            times = kept_fields(last_text, keep)
            if times is not None:
                timings = {**times, **(timings or {})}  # fields of later text-free events win
        except StreamError as e:
            fail(e.error_class, str(e))

    completion = (usage or {}).get("completion_tokens")
    if error is None:
        if not done:
            fail("no_done", "stream ended without data: [DONE] (cut short)")
        elif not content_times:
            fail("empty_completion", "stream ended without any generated token")
        elif completion is not None and completion < len(content_times):
            # Each event that carries text carries at least one new token (a server
            # may bunch tokens into one event, never split fewer tokens over more).
            fail("bad_usage", f"usage.completion_tokens {completion} is fewer than the {len(content_times)} "
                              "chunks that carried text (each carries at least one token)")
        elif completion is not None and max_tokens is not None and completion > max_tokens:
            fail("bad_usage", f"usage.completion_tokens {completion} exceeds max_tokens {max_tokens}")
    from_usage = completion is not None
    cached = (usage or {}).get("cached_tokens")
    for key in cached_token_keys() if cached is None and timings else ():
        v = timings.get(key)  # type: ignore[union-attr]  # e.g. llama.cpp's timings.cache_n
        if type(v) is int and 0 <= v <= MAX_TOKEN_COUNT:
            cached = v
            break

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
        error_class=error_class,
        server_timings=timings or None,
        cached_tokens=cached,
    )


def answer_text(chunks: Sequence[bytes]) -> str:
    """The assistant's answer in a chat-completion stream: its ``delta.content`` texts joined.

    Reasoning fields (``reasoning_content``) are left out, as a chat client
    leaves them out of the history it sends back. Lines that are not valid
    chunk events are skipped (:func:`parse_stream` reports them); the text up
    to a cut is kept.
    """
    out: list[str] = []
    for raw in b"".join(chunks).split(b"\n"):
        line = raw.strip()
        if not line.startswith(b"data:"):
            continue
        payload = line[5:].strip()
        if not payload or payload == b"[DONE]":
            continue
        try:
            event = json.loads(payload)
        except (ValueError, RecursionError):
            continue
        choices = event.get("choices") if isinstance(event, dict) else None
        for choice in choices if isinstance(choices, list) else ():
            delta = choice.get("delta") if isinstance(choice, dict) else None
            text = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(text, str):
                out.append(text)
    return "".join(out)
