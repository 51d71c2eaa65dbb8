"""One SSE line has a ceiling (issue 22 item 18): a ``data:`` line longer than
:data:`tokcaliper.load.sse.MAX_EVENT_BYTES` fails its request as ``malformed_event``
as soon as the limit is crossed, in the client's read path, instead of being kept
whole (an 80 MiB line took 465 MB and 17 s of blocked event loop to parse) — and
the parser, given such a line from elsewhere, refuses it in linear time.
"""

from __future__ import annotations

import socket
import threading
import time

from tokcaliper.load.sse import MAX_EVENT_BYTES, parse_stream

from .fake_server import FakeServer, FakeTiming
from .test_http_framing import _exchange, _serve_once

OK_EVENT = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
MESSAGE = "SSE line longer than the 1 MiB limit (1,048,576 bytes) without an end: the stream was cut there"


def test_the_limit_is_one_mebibyte():
    assert MAX_EVENT_BYTES == 2**20


def test_a_line_over_the_limit_ends_the_exchange_at_once():
    """The server sends 32 MiB of one line (it would send more); the client stops reading
    after the limit, keeps at most the limit and one read, and closes the connection."""
    sent = {"n": 0}

    def respond(c: socket.socket) -> None:
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                  + OK_EVENT + b"data: ")
        piece = b"x" * 65536
        try:
            for _ in range(512):
                c.sendall(piece)
                sent["n"] += len(piece)
        except OSError:
            pass  # the client closed the connection: what the test wants

    port = _serve_once(respond)
    ex, conn = _exchange(port)
    assert (ex.error_class, ex.error) == ("malformed_event", MESSAGE)
    kept = sum(len(c) for c in ex.chunks)
    assert MAX_EVENT_BYTES < kept <= MAX_EVENT_BYTES + 2**20, kept
    assert conn.closed or conn.client_closed
    time.sleep(0.2)
    assert sent["n"] < 16 * 2**20  # the server was stopped well short of its 32 MiB


def test_a_line_at_the_limit_is_accepted_by_the_reader():
    """Exactly MAX_EVENT_BYTES before the newline is still one event (the parser judges it)."""
    import asyncio

    from tokcaliper.load.http import Exchange

    loop = asyncio.new_event_loop()
    ex = Exchange(loop)
    ex.status = 200
    ex.on_body(b"data: " + b"x" * (MAX_EVENT_BYTES - 6))
    ex.on_body(b"\n\n")
    assert ex.error is None
    loop.close()


def test_the_parser_refuses_a_huge_line_in_linear_time():
    """32 MiB of one line in 64 KiB chunks: refused in well under a second (was a
    quadratic re-join of the pending line at every chunk)."""
    piece = b"x" * 65536
    chunks = [OK_EVENT, b"data: "] + [piece] * 512 + [b"\n\n" + OK_EVENT + b"data: [DONE]\n\n"]
    t0 = time.perf_counter()
    r = parse_stream(chunks, [1.0 + i * 1e-6 for i in range(len(chunks))], index=0, issued=0.0, ended=2.0,
                     run_start=0.0)
    elapsed = time.perf_counter() - t0
    assert (r.error_class, r.error) == ("malformed_event", MESSAGE)
    assert elapsed < 1.0, elapsed


def test_a_huge_event_fails_only_its_own_request():
    """Fault ``huge_event`` on every other request: those fail at once as malformed_event,
    the others succeed with their tokens."""
    from tokcaliper.load.driver import run_phase
    from tokcaliper.load.prompts import builtin_prompts
    from tokcaliper.load.summary import summarize
    from tokcaliper.model.run import LoadConfig

    timing = FakeTiming(ttft_s=0.005, itl_s=0.002, tokens=8, fault="huge_event", fault_every=2,
                        huge_event_bytes=16 * 2**20)
    with FakeServer(timing) as srv:
        cfg = LoadConfig(base_url=srv.base_url, concurrency=2, requests=4, warmup=0, max_tokens=8)
        t0 = time.perf_counter()
        records = list(run_phase(cfg, builtin_prompts()))
        elapsed = time.perf_counter() - t0
    m = summarize(records)
    assert sorted(r.error_class or "ok" for r in records) == ["malformed_event"] * 2 + ["ok"] * 2
    assert all(r.error == MESSAGE for r in records if not r.ok)
    assert m.completed == 2 and m.output_tokens == 16
    assert elapsed < 5.0, elapsed
