"""HttpConnection against servers that frame, close and connect oddly (found by attacking it)."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time

import pytest

from tokcaliper.load.http import ConnectFailed, Exchange, HttpConnection, build_post

SSE = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n' * 3 + b"data: [DONE]\n\n"


def _serve_once(respond) -> int:
    """A one-connection server in a thread: reads the request, then ``respond(conn)``."""
    lsock = socket.create_server(("127.0.0.1", 0))
    port = lsock.getsockname()[1]

    def run() -> None:
        conn, _ = lsock.accept()
        with conn:
            conn.recv(65536)
            respond(conn)
        lsock.close()

    threading.Thread(target=run, daemon=True).start()
    return port


def _exchange(port: int) -> tuple[Exchange, HttpConnection]:
    async def main() -> tuple[Exchange, HttpConnection]:
        conn = await HttpConnection.open("127.0.0.1", port, timeout_s=5)
        ex = Exchange(asyncio.get_running_loop())
        conn.send(build_post("127.0.0.1", port, "/v1/chat/completions", b"{}"), ex)
        await asyncio.wait_for(ex.done, 5)
        await asyncio.sleep(0.01)  # let a close run its course
        return ex, conn

    return asyncio.run(main())


def test_an_http11_body_without_length_or_chunking_ends_at_the_close():
    """RFC 9112 §6.3 item 8: neither Content-Length nor chunked — the close delimits the body."""
    port = _serve_once(lambda c: c.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + SSE))
    ex, _ = _exchange(port)
    assert ex.error is None and ex.complete and b"".join(ex.chunks) == SSE


def test_a_body_cut_short_of_its_content_length_is_an_error_even_in_http10():
    port = _serve_once(lambda c: c.sendall(
        b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n" % (len(SSE) + 500) + SSE))
    ex, _ = _exchange(port)
    assert ex.error_class == "closed_mid_stream" and not ex.complete


def test_bytes_after_a_complete_response_do_not_overwrite_it():
    """A second response in the same read: the first keeps its status and body; the connection goes."""
    body = b"%x\r\n%s\r\n0\r\n\r\n" % (len(SSE), SSE)
    port = _serve_once(lambda c: (c.sendall(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + body
        + b"HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n"), time.sleep(0.2)))
    ex, conn = _exchange(port)
    assert ex.error is None and ex.status == 200 and b"".join(ex.chunks) == SSE
    assert conn.closed


def test_a_connect_the_server_never_accepts_is_bounded():
    """A full listen queue drops the handshake (the kernel would retry it for ~2 min)."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(0)
    port = lsock.getsockname()[1]
    fillers = []
    for _ in range(4):  # fill the accept queue; later SYNs are dropped
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(s)
    time.sleep(0.1)

    async def main() -> None:
        await HttpConnection.open("127.0.0.1", port, timeout_s=0.5)

    t0 = time.monotonic()
    try:
        with pytest.raises(ConnectFailed, match=r"no connection within 0.5 s"):
            asyncio.run(main())
    finally:
        for s in fillers:
            s.close()
        lsock.close()
    assert time.monotonic() - t0 < 3


def test_closing_with_a_request_still_unsent_frees_the_socket_at_once():
    """A server that never reads: close() must not wait for the rest of an 8 MiB request to go."""
    lsock = socket.create_server(("127.0.0.1", 0))
    port = lsock.getsockname()[1]
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(lsock.accept()[0]), daemon=True).start()

    def fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    async def main() -> tuple[int, int]:
        conn = await HttpConnection.open("127.0.0.1", port, timeout_s=5)
        ex = Exchange(asyncio.get_running_loop())
        conn.send(build_post("127.0.0.1", port, "/v1/chat/completions", b"x" * (8 << 20)), ex)
        during = fds()
        conn.close()
        await asyncio.sleep(0.05)
        assert conn.closed and ex.done.done()
        return during, fds()

    during, after = asyncio.run(main())
    for s in held:
        s.close()
    lsock.close()
    assert after == during - 1
