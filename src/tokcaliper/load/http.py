"""A lean HTTP/1.1 client connection for streamed responses (asyncio.Protocol).

Why not aiohttp: its per-chunk path wakes the reading task once per network
chunk (one event-loop pass per token per stream) and it writes the request
body from a new task (one more pass before the request leaves); under load
those passes queue behind every other stream's and read as latency. Here a
network chunk is timestamped on arrival, handed to the
``httptools`` parser (llhttp, the parser of Node.js, in C), and its body bytes
appended to a list: no task, no future, no copy. The request is written
synchronously by :meth:`HttpConnection.send`, so it leaves in the same
callback that decided to send it.

One :class:`Exchange` is one request/response on one connection. Its
timestamps (``time.perf_counter()``, CLOCK_MONOTONIC on Linux, shared by all
processes of the host) are:

* ``sent`` — just before the request bytes were handed to the socket;
* ``written`` — right after (the socket accepted them; loopback: delivered;
  a kernel-stamped answer may arrive before ``send()`` returns);
* ``first_byte`` — the first response bytes arrived;
* ``headers`` — the response headers were complete;
* one stamp per body piece (``stamps``, with the bytes in ``chunks``);
  a 200 body line longer than :data:`~tokcaliper.load.sse.MAX_EVENT_BYTES`
  ends the exchange at once (``malformed_event``) and closes the connection;
* ``ended`` — the response was complete, failed, or the connection closed.

Every stamp is the arrival time of the network read that carried it, and
pieces of one read share it. On plain TCP that time is the kernel's receive
stamp of the read's newest segment (:mod:`tokcaliper.load.stamped`), so
however late the event loop reaches a socket, its stamps are not late; over
TLS (and where the kernel gives no stamp) it is the loop's time at the read.

Errors are data (``Exchange.error``); only a refused or failed connect raises
(:class:`ConnectFailed`).
"""

from __future__ import annotations

import asyncio
from time import perf_counter

import httptools

from tokcaliper.load.sse import LINE_TOO_LONG, MAX_EVENT_BYTES
from tokcaliper.load.stamped import SUPPORTED as STAMPED
from tokcaliper.load.stamped import open_stamped

__all__ = ["ConnectFailed", "Exchange", "HttpConnection", "build_post"]


class ConnectFailed(Exception):
    """The TCP connection could not be opened (refused, unreachable)."""


def build_post(host: str, port: int, path: str, body: bytes, *, accept: str = "text/event-stream") -> bytes:
    """The bytes of one HTTP/1.1 ``POST`` with a JSON body (RFC 9112 §3).

    Persistent connections are HTTP/1.1's default (RFC 9112 §9.3), so no
    ``Connection`` header is sent; whether the server really keeps the
    connection is learned by :mod:`tokcaliper.load.pool`.
    """
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        f"Content-Type: application/json\r\nAccept: {accept}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode("latin-1")
    return head + body


class Exchange:
    """One request and its response on one connection; filled by the parser.

    Attributes:
        sent / written / first_byte / headers / ended: perf_counter stamps
            (0.0 while not reached; see the module docstring).
        status: HTTP status code (0 before the headers).
        keep_alive: the response allows the connection to be reused
            (``httptools``' ``should_keep_alive``: HTTP/1.1 without
            ``Connection: close``). Servers can say so and close anyway.
        chunks / stamps: body pieces (de-chunked) and their arrival times.
        complete: the response ended as framed (chunked terminator or length).
        error: why the exchange failed (None while it has not).
        error_class: its class (:data:`tokcaliper.model.run.ERROR_CLASSES`).
        retry_after: the ``Retry-After`` header's value, if sent (429/503).
        done: resolved when the exchange is over (complete or failed).
    """

    __slots__ = (
        "sent", "written", "first_byte", "headers", "ended", "status", "keep_alive",
        "chunks", "stamps", "complete", "error", "error_class", "retry_after", "done", "now", "parser",
        "framed", "trailing", "line_bytes", "too_long",
    )

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.sent = self.written = self.first_byte = self.headers = self.ended = 0.0
        self.now = 0.0
        self.status = 0
        self.keep_alive = False
        self.chunks: list[bytes] = []
        self.stamps: list[float] = []
        self.complete = False
        self.error: str | None = None
        self.error_class: str | None = None
        self.retry_after: str | None = None
        self.framed = False
        self.trailing = False
        self.line_bytes = 0  # bytes of the 200 body's current line so far (no newline yet)
        self.too_long = False
        self.done: asyncio.Future[None] = loop.create_future()
        self.parser = httptools.HttpResponseParser(self)

    # -- httptools callbacks (run inside HttpConnection.data_received) --------
    def on_message_begin(self) -> None:
        if self.complete:  # a second response on one exchange: bytes nobody asked for
            self.trailing = True

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.complete:
            return
        lname = name.lower()
        if lname == b"retry-after":
            self.retry_after = value[:40].decode("latin-1")
        elif lname in (b"content-length", b"transfer-encoding"):
            self.framed = True  # the body's end is marked, not the connection's close

    def on_headers_complete(self) -> None:
        if self.complete:
            return
        self.headers = self.now
        self.status = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        if self.complete or self.too_long:
            return
        self.stamps.append(self.now)
        self.chunks.append(body)
        if self.status == 200:  # an SSE stream: no line may outgrow MAX_EVENT_BYTES
            nl = body.rfind(b"\n")
            self.line_bytes = self.line_bytes + len(body) if nl < 0 else len(body) - nl - 1
            if self.line_bytes > MAX_EVENT_BYTES:
                self.too_long = True  # the connection closes after this read
                self.finish(LINE_TOO_LONG, "malformed_event")

    def on_message_complete(self) -> None:
        if self.complete:
            return
        self.complete = True
        self.finish(None)

    # -------------------------------------------------------------------------
    def finish(self, error: str | None, error_class: str | None = None) -> None:
        """End the exchange (first call wins) with ``error`` (of ``error_class``) or success."""
        if self.done.done():
            return
        self.ended = self.now if self.complete else perf_counter()
        self.error = error
        self.error_class = error_class if error is not None else None
        self.done.set_result(None)


class HttpConnection(asyncio.Protocol):
    """One client TCP connection carrying one exchange at a time.

    Attributes:
        connected_at: perf_counter when the TCP handshake completed.
        connect_s: seconds the connect took (``create_connection`` call →
            established), set by :meth:`open`.
        exchanges: exchanges sent on this connection so far.
        closed: the connection is closed (by either side).
        closed_at: perf_counter when it closed (0.0 while open).
        idle_since: perf_counter when its last exchange ended (pool use).
        client_closed: the close was ours (not the server's).
        kernel_reads / loop_reads: reads stamped by the kernel / by the
            loop's clock (:mod:`tokcaliper.load.stamped`).
    """

    __slots__ = ("transport", "exchange", "connected_at", "connect_s", "exchanges", "closed",
                 "closed_at", "idle_since", "on_close", "client_closed", "kernel_reads", "loop_reads")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.exchange: Exchange | None = None
        self.connected_at = 0.0
        self.connect_s = 0.0
        self.exchanges = 0
        self.closed = False
        self.closed_at = 0.0
        self.idle_since = 0.0
        self.on_close: object = None  # callable(conn) set by the pool
        self.client_closed = False
        self.kernel_reads = 0
        self.loop_reads = 0

    @classmethod
    async def open(cls, host: str, port: int, ssl: object = None,
                   timeout_s: float | None = None) -> HttpConnection:
        """Open a connection to ``host:port`` (TLS with an ``ssl.SSLContext``) within ``timeout_s``.

        A server whose listen queue is full drops the handshake and the
        kernel retries it for about two minutes, so the connect has its own
        bound (None: none).

        Plain TCP on Linux goes through
        :class:`~tokcaliper.load.stamped.StampedTransport` (reads stamped by
        the kernel); TLS, and every connection elsewhere, through asyncio's
        transport (reads stamped by the loop).

        Raises:
            ConnectFailed: the connection was refused or could not be made.
        """
        loop = asyncio.get_running_loop()
        t0 = perf_counter()
        try:
            if ssl is None and STAMPED:
                conn = cls()
                await asyncio.wait_for(open_stamped(host, port, conn), timeout_s)
            else:
                _, conn = await asyncio.wait_for(
                    loop.create_connection(cls, host, port, ssl=ssl), timeout_s)  # type: ignore[arg-type]
        except TimeoutError:
            raise ConnectFailed(f"cannot connect to {host}:{port}: no connection within {timeout_s:g} s "
                                "(is its listen queue full?)") from None
        except OSError as e:
            raise ConnectFailed(f"cannot connect to {host}:{port}: {e}") from None
        conn.connect_s = conn.connected_at - t0
        return conn

    # -- asyncio.Protocol ---------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.connected_at = perf_counter()
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        """asyncio's read callback (TLS): stamped with the loop's time."""
        self.data_received_at(data, perf_counter(), False)

    def data_received_at(self, data: bytes, now: float, kernel: bool) -> None:
        """Feed one read that arrived at ``now`` (perf_counter clock; ``kernel``: the kernel's stamp)."""
        ex = self.exchange
        if ex is None:  # bytes nobody asked for: the connection is unusable
            self.close()
            return
        if kernel:
            self.kernel_reads += 1
        else:
            self.loop_reads += 1
        if now < ex.sent:  # cannot arrive before the request left: a bad stamp
            now = perf_counter()
        ex.now = now
        if not ex.first_byte:
            ex.first_byte = now
        try:
            ex.parser.feed_data(data)
            if ex.trailing or ex.too_long:  # more after the response / a line past the limit:
                self.close()  # the connection cannot carry another exchange
        except httptools.HttpParserUpgrade:
            ex.finish("unexpected protocol upgrade", "bad_http")
            self.close()
        except httptools.HttpParserError as e:
            ex.finish(f"malformed HTTP response: {e}", "bad_http")
            self.close()

    def eof_received(self) -> bool:
        return False  # half-closed by the server: close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.closed_at = perf_counter()
        ex = self.exchange
        if ex is not None and not ex.done.done():
            if ex.headers and ex.chunks and exc is None and not ex.framed:
                # Neither a length nor chunking: the close ends the body (RFC 9112 §6.3 item 8).
                ex.complete = True
                ex.finish(None)
            elif ex.headers:
                ex.finish("connection closed mid-response" + (f": {exc}" if exc else ""), "closed_mid_stream")
            else:
                ex.finish("server closed the connection before responding" + (f": {exc}" if exc else ""),
                          "closed_before_response")
        if self.on_close is not None:
            self.on_close(self)  # type: ignore[operator]

    # -------------------------------------------------------------------------
    def send(self, request: bytes, ex: Exchange) -> None:
        """Write ``request`` now and let ``ex`` collect the response."""
        self.exchange = ex
        self.exchanges += 1
        ex.sent = perf_counter()
        self.transport.write(request)  # type: ignore[union-attr]
        ex.written = perf_counter()

    def release(self) -> None:
        """Detach the finished exchange (the connection may carry another)."""
        self.exchange = None
        self.idle_since = perf_counter()

    def close(self) -> None:
        """Close the connection now, dropping unsent bytes (idempotent).

        The client closes a connection only when its exchange is over or has
        failed, so nothing left to send matters; a graceful close would wait
        for a server that may never read (a timed-out request still being
        written) and keep the socket open.
        """
        self.client_closed = True
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()
