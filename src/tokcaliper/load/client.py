"""The streaming client: one chat completion, timestamped on arrival.

The request is sent on a connection of the :class:`~tokcaliper.load.pool.ConnectionPool`
(opened ahead or reused, so its set-up is not on the measured path) by
:class:`~tokcaliper.load.http.HttpConnection`, whose per-read path is one
``recvmsg`` with the kernel's receive stamp (:mod:`tokcaliper.load.stamped`),
the C parser and two appends. Parsing the SSE events waits until the phase has ended
(:class:`tokcaliper.load.sse.RawStream`). The client's own overhead is part of
every latency it reports, so this path stays lean; its error against a server
of known timing is measured by ``benchmarks/client_accuracy.py``.
"""

from __future__ import annotations

import asyncio
import json
import ssl
from time import perf_counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tokcaliper.load.http import ConnectFailed, Exchange, HttpConnection, build_post
from tokcaliper.load.pool import ConnectionPool
from tokcaliper.load.sse import RawStream
from tokcaliper.model.run import LoadConfig

__all__ = ["Endpoint", "ServerGone", "chat_body", "endpoint", "send_now", "stream_chat"]


def chat_body(cfg: LoadConfig, messages: list[dict[str, str]], *, max_tokens: int | None = None,
              min_tokens: int | None = None) -> dict[str, Any]:
    """The JSON body of one streamed chat completion for ``cfg``.

    ``max_tokens`` overrides ``cfg.max_tokens`` (a drawn output length);
    ``min_tokens`` (vLLM, SGLang) is sent with ``ignore_eos`` (llama.cpp,
    vLLM, SGLang) so a server holds the output to exactly that length.
    """
    body: dict[str, Any] = {
        "model": cfg.model,
        "messages": messages,
        "max_tokens": cfg.max_tokens if max_tokens is None else max_tokens,
        "temperature": cfg.temperature,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if cfg.ignore_eos:
        body["ignore_eos"] = True  # llama.cpp, vLLM, SGLang extension
        if min_tokens is not None:
            body["min_tokens"] = min_tokens  # vLLM, SGLang
    return body


class ServerGone(Exception):
    """The server refused the connection: it is down, not merely slow."""


@dataclass(frozen=True)
class Endpoint:
    """Where chat completions go: ``host``, ``port``, request ``path``, TLS or not."""

    host: str
    port: int
    path: str
    tls: bool

    def request(self, body: dict[str, Any]) -> bytes:
        """The HTTP bytes of one POST of ``body`` (compact JSON)."""
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        return build_post(self.host, self.port, self.path, data)

    def pool(self, connect_timeout_s: float | None = None) -> ConnectionPool:
        """A connection pool for this endpoint (learned keep-alive shared per server)."""
        return ConnectionPool(self.host, self.port, connect_timeout_s=connect_timeout_s,
                              ssl=ssl.create_default_context() if self.tls else None)


def endpoint(base_url: str) -> Endpoint:
    """The :class:`Endpoint` of ``base_url``'s ``/v1/chat/completions``."""
    u = urlsplit(base_url)
    tls = u.scheme == "https"
    return Endpoint(host=u.hostname or "127.0.0.1", port=u.port or (443 if tls else 80),
                    path=u.path.rstrip("/") + "/v1/chat/completions", tls=tls)


def send_now(pool: ConnectionPool, request: bytes, loop: asyncio.AbstractEventLoop
             ) -> tuple[HttpConnection, Exchange] | None:
    """Send ``request`` at once on an idle connection, or None if none is ready.

    Synchronous, so a request due in a timer callback leaves in that callback
    (no task start, no event-loop pass in between).
    """
    conn = pool.take_idle()
    if conn is None:
        return None
    ex = Exchange(loop)
    conn.send(request, ex)
    pool.note_sent(conn)
    return conn, ex


class _Watchdog:
    """The three per-request timeouts of one exchange, checked only at their deadlines.

    * total: sent → end (``request_timeout_s``);
    * first token: sent → first body byte (``first_token_timeout_s``): a
      server that never answers, never sends headers, or never starts the stream;
    * between tokens: last body read → next (``token_timeout_s``): a stream
      that stalls part-way.

    One timer at a time, re-armed at the next deadline, so the per-chunk path
    gains nothing (the gap is computed from the exchange's own stamps).
    """

    __slots__ = ("loop", "conn", "ex", "total", "first", "gap", "handle")

    def __init__(self, loop: asyncio.AbstractEventLoop, conn: HttpConnection, ex: Exchange,
                 total: float, first: float | None, gap: float | None) -> None:
        self.loop, self.conn, self.ex = loop, conn, ex
        self.total, self.first, self.gap = total, first, gap
        self.handle: asyncio.TimerHandle | None = None
        self.check()

    def check(self) -> None:
        ex = self.ex
        if ex.done.done():
            return
        now = perf_counter()
        sent = ex.sent
        inf = float("inf")
        total_at = sent + self.total
        first_at = sent + self.first if self.first is not None and not ex.stamps else inf
        gap_at = ex.stamps[-1] + self.gap if self.gap is not None and ex.stamps else inf
        if now >= total_at:
            ex.finish(f"request timed out after {self.total:g} s (request timeout)", "timeout_total")
        elif now >= first_at:
            ex.finish(f"no answer within {self.first:g} s of sending (first-token timeout)",
                      "timeout_first_token")
        elif now >= gap_at:
            ex.finish(f"stream stalled: no data for {self.gap:g} s (token timeout)",
                      "timeout_between_tokens")
        else:
            # Before the first body byte there is no gap deadline yet; look
            # again within one gap so a stall right after it is caught on time.
            poll = now + self.gap if self.gap is not None and not ex.stamps else inf
            self.handle = self.loop.call_later(min(total_at, first_at, gap_at, poll) - now, self.check)
            return
        self.conn.close()

    def cancel(self) -> None:
        if self.handle is not None:
            self.handle.cancel()


async def stream_chat(
    pool: ConnectionPool,
    request: bytes,
    raw: RawStream,
    *,
    timeout_s: float,
    first_token_timeout_s: float | None = None,
    token_timeout_s: float | None = None,
    started: tuple[HttpConnection, Exchange] | None = None,
) -> RawStream:
    """Send one streamed chat completion (or finish one already sent) and record it.

    Args:
        pool: the server's connection pool.
        request: the request bytes (:meth:`Endpoint.request`).
        raw: the stream to fill (``index``, ``warmup``, ``scheduled`` set).
        timeout_s: per-request timeout, seconds (sent → end).
        first_token_timeout_s: sent → first body byte, seconds (None: none).
        token_timeout_s: longest gap between body reads, seconds (None: none).
        started: the connection and exchange of :func:`send_now`, when the
            request has already been sent.

    Returns:
        ``raw``, with its stamps, bytes, ``error`` and ``error_class``
        (HTTP status, timeout, reset) filled in.

    Raises:
        ServerGone: the server refused the connection.
    """
    loop = asyncio.get_running_loop()
    while True:
        if started is None:
            try:
                conn = await pool.acquire()  # no suspension when an idle connection is ready
            except ConnectFailed as e:
                raise ServerGone(str(e)) from None
            ex = Exchange(loop)
            conn.send(request, ex)
            pool.note_sent(conn)
        else:
            conn, ex = started
            started = None
        watch = _Watchdog(loop, conn, ex, timeout_s, first_token_timeout_s, token_timeout_s)
        await ex.done
        watch.cancel()
        if (ex.error is not None and not ex.first_byte and conn.exchanges > 1
                and raw.retried == 0 and ex.error.startswith("server closed")):
            # A reused connection the server had already closed: it never
            # saw this request. Re-send on a fresh one (once).
            pool.reuse_failed()
            conn.close()
            raw.retried += 1
            continue
        break
    raw.issued, raw.written, raw.ended = ex.sent, ex.written, ex.ended
    raw.first_byte, raw.headers = ex.first_byte, ex.headers
    raw.connected, raw.connect_s, raw.reused = conn.connected_at, conn.connect_s, conn.exchanges > 1
    raw.error, raw.error_class = ex.error, ex.error_class
    if ex.error is None and ex.status != 200:
        text = " ".join(b"".join(ex.chunks)[:200].decode("utf-8", "replace").split())
        hint = ""
        if ex.status == 404:  # the path is fixed, so the base URL is wrong
            hint = " (is --url the server root? give it without /v1)"
        raw.error = f"HTTP {ex.status}{hint}: {text}" if text else f"HTTP {ex.status}{hint}"
        raw.error_class = "http_status"
        retry_after = ex.retry_after
        if retry_after is not None:
            raw.error += f" (Retry-After: {retry_after})"
    elif ex.error is None:
        raw.chunks, raw.stamps = ex.chunks, ex.stamps
    elif ex.status == 200:
        raw.chunks, raw.stamps = ex.chunks, ex.stamps  # keep what arrived before the failure
    pool.release(conn, ok=ex.complete and ex.error is None, keep_alive_header=ex.keep_alive)
    return raw
