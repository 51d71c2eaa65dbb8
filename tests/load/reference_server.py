#!/usr/bin/env python3
"""A reference OpenAI-compatible SSE server of known timing that logs the truth.

Used to measure a load client's own error (tests/load/test_accuracy.py,
benchmarks/client_accuracy.py). For each request it starts the clock when the
request has been parsed (``parsed``), writes token i at ``parsed + ttft + i·itl``
and logs, on CLOCK_MONOTONIC (``time.perf_counter``, shared by every process
of the host), when the request's first bytes arrived, when it was parsed and
when each token was really written. The truth of a run is what it logged:
TTFT = first token written − parsed; ITL = gaps between written tokens;
throughput = tokens ÷ (last token written − first request parsed). Its own
emission error (written − scheduled) is logged too, so a reader can see that
the server kept its schedule.

Lean by design: one ``asyncio.Protocol`` per connection, ``httptools`` for
parsing, one timer per stream, pre-encoded chunks. Python's epoll rounds
timer waits up to whole milliseconds; :class:`SpinSelector` stops waiting
:data:`SPIN_S` early and polls, so tokens leave within microseconds of their
schedule (at the cost of some CPU: run it pinned to its own core).

Endpoints: ``POST /v1/chat/completions`` and ``/v1/completions`` (streamed or
not), ``GET /v1/models``, ``GET /health``, ``GET /_truth`` (the log since the
last call, as JSON, then cleared).

Several processes (so that the server is not the limit of a benchmark's client,
benchmarks/scale_out.py): ``--reuse-port`` binds the port with ``SO_REUSEPORT``,
so N processes started on one port share its connections (the kernel deals each
new connection to one of them by a hash of its addresses); each also listens on
a control port of its own for ``/_truth`` (a ``/_truth`` on the shared port would
reach one process at random). :class:`RefServer` with ``processes=N`` starts and
merges them; their truths share the host's monotonic clock.

Keep-alive: ``--close-after-stream`` imitates llama-server: it answers a
streamed request with ``Keep-Alive: timeout=5, max=100`` and closes the
connection after the response anyway.

Run: ``python tests/load/reference_server.py --port 0 [--cpu 1] [--nice -5] [--reuse-port]``;
it prints ``PORT <n>`` (with ``--reuse-port``: ``PORT <n> <control port>``) on
stdout when ready and stops when stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import selectors
import socket
import sys
import threading
from dataclasses import dataclass, field
from time import perf_counter

import httptools

#: Stop blocking in epoll this long before the next timer and poll instead.
SPIN_S = 0.0012
TAG_RE = re.compile(rb"\[([^\]\[]{1,80})\] ")


class SpinSelector(selectors.EpollSelector):
    """An epoll selector that never oversleeps a timer by epoll's 1 ms rounding."""

    def select(self, timeout: float | None = None):  # type: ignore[override]
        if timeout is not None and timeout > 0:
            timeout = 0.0 if timeout < SPIN_S else timeout - SPIN_S
        return super().select(timeout)


@dataclass
class Timing:
    """Schedule: first token ``ttft_s`` after the request is parsed, then one every ``itl_s``."""

    ttft_s: float = 0.05
    itl_s: float = 0.005
    tokens: int = 128
    close_after_stream: bool = False
    token_text: str = " tok"


@dataclass
class Log:
    """The truth: one entry per request (see the module docstring)."""

    entries: list[dict] = field(default_factory=list)

    def take(self) -> list[dict]:
        out, self.entries = self.entries, []
        return out


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _sse(obj: dict) -> bytes:
    return _chunk(b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n")


class _Conn(asyncio.Protocol):
    def __init__(self, timing: Timing, log: Log) -> None:
        self.timing, self.log = timing, log
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()
        self._reset()

    def _reset(self) -> None:
        self.parser = httptools.HttpRequestParser(self)
        self.url = b""
        self.body: list[bytes] = []
        self.recv_first = 0.0
        self.recv_kernel = 0.0

    # -- protocol -------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.data_received_at(data, 0.0, False)

    def data_received_at(self, data: bytes, stamp: float, kernel: bool) -> None:
        """One read; ``stamp`` is the kernel's receive time when ``kernel`` (see :func:`serve`)."""
        if not self.recv_first:
            self.recv_first = perf_counter()
        # The read that completes the request dates its arrival (on_message_complete runs inside feed_data).
        self.recv_kernel = stamp if kernel else 0.0
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.close()  # type: ignore[union-attr]

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    # -- httptools callbacks ---------------------------------------------------------
    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        parsed = perf_counter()
        method = self.parser.get_method()
        url, body, recv_first, recv_kernel = self.url, b"".join(self.body), self.recv_first, self.recv_kernel
        self._reset()
        if method == b"GET":
            self._get(url)
        elif url.endswith(b"/completions"):
            self._completion(url, body, parsed, recv_first, recv_kernel)
        else:
            self._respond(404, b"application/json", b'{"error":"not found"}')

    # -- responses ------------------------------------------------------------------
    def _respond(self, status: int, ctype: bytes, payload: bytes, close: bool = False) -> None:
        if self.transport is None:
            return
        reason = {200: b"OK", 404: b"Not Found"}.get(status, b"Error")
        self.transport.write(
            b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s\r\n%s"
            % (status, reason, ctype, len(payload), b"Connection: close\r\n" if close else b"", payload))

    def _get(self, url: bytes) -> None:
        if url.startswith(b"/_truth"):
            self._respond(200, b"application/json", json.dumps(self.log.take()).encode())
        elif url.startswith(b"/v1/models"):
            self._respond(200, b"application/json", b'{"object":"list","data":[{"id":"ref","object":"model"}]}')
        else:
            self._respond(200, b"application/json", b'{"status":"ok"}')

    def _completion(self, url: bytes, body: bytes, parsed: float, recv_first: float,
                    recv_kernel: float = 0.0) -> None:
        t = self.timing
        try:
            req = json.loads(body)
        except ValueError:
            req = {}
        n = min(int(req.get("max_tokens") or req.get("max_completion_tokens") or t.tokens), t.tokens)
        m = TAG_RE.search(body)
        entry = {"tag": m.group(1).decode() if m else None, "recv_first": recv_first,
                 "recv_kernel": recv_kernel or None, "parsed": parsed,
                 "tokens": n, "written": [], "due": parsed + t.ttft_s}
        self.log.entries.append(entry)
        chat = url.endswith(b"/chat/completions")
        if not req.get("stream"):
            self._non_streamed(entry, n, chat)
            return
        self.transport.write(  # type: ignore[union-attr]
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            b"Transfer-Encoding: chunked\r\nKeep-Alive: timeout=5, max=100\r\n\r\n")
        if chat:
            ev = _sse({"id": "r", "object": "chat.completion.chunk", "model": "ref",
                       "choices": [{"index": 0, "delta": {"content": t.token_text}, "finish_reason": None}]})
        else:
            ev = _sse({"id": "r", "object": "text_completion", "model": "ref",
                       "choices": [{"index": 0, "text": t.token_text, "finish_reason": None}]})
        usage = {"prompt_tokens": 8, "completion_tokens": n, "total_tokens": 8 + n}
        tail = _sse({"id": "r", "object": "chat.completion.chunk" if chat else "text_completion",
                     "model": "ref", "choices": [], "usage": usage}) + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"
        written = entry["written"]
        transport = self.transport
        loop = self.loop
        to_loop = loop.time() - perf_counter()
        due0 = parsed + t.ttft_s

        def emit(i: int) -> None:
            if transport.is_closing():  # type: ignore[union-attr]
                return
            if i == n - 1:
                transport.write(ev + tail)  # type: ignore[union-attr]
                written.append(perf_counter())
                if t.close_after_stream:
                    transport.close()  # type: ignore[union-attr]
                return
            transport.write(ev)  # type: ignore[union-attr]
            written.append(perf_counter())
            loop.call_at(due0 + (i + 1) * t.itl_s + to_loop, emit, i + 1)

        loop.call_at(due0 + to_loop, emit, 0)

    def _non_streamed(self, entry: dict, n: int, chat: bool) -> None:
        t = self.timing
        text = t.token_text * n
        choice = ({"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
                  if chat else {"index": 0, "text": text, "finish_reason": "length"})
        payload = json.dumps({"id": "r", "object": "chat.completion" if chat else "text_completion",
                              "model": "ref", "choices": [choice],
                              "usage": {"prompt_tokens": 8, "completion_tokens": n,
                                        "total_tokens": 8 + n}}).encode()
        delay = t.ttft_s + (n - 1) * t.itl_s
        self.loop.call_at(entry["due"] - t.ttft_s + delay + (self.loop.time() - perf_counter()),
                          self._respond, 200, b"application/json", payload)


async def serve(timing: Timing, port: int, ready: threading.Event | None = None,
                holder: dict | None = None, announce: bool = False, kernel_stamps: bool = False,
                reuse_port: bool = False, host: str = "127.0.0.1") -> None:
    """Serve until cancelled; ``holder['port']`` / ``holder['log']`` are set when listening.

    ``reuse_port``: bind ``port`` with ``SO_REUSEPORT`` (other processes may serve
    it too) and also serve a control port of this process's own
    (``holder['control']``, announced after the port) for ``/_truth``. ``host``:
    the address to serve on (``0.0.0.0``: every interface, for load workers on
    other nodes); the control port is on the loopback.

    ``kernel_stamps``: also log ``recv_kernel``, the kernel's receive time of
    the segment that completed each request (:func:`_stamped_listener`),
    which splits a client's TTFT error into the request's way to this host
    and this server's read queue (``parsed − recv_kernel``).
    """
    log = Log()
    loop = asyncio.get_running_loop()
    if kernel_stamps:
        lsock = _stamped_listener(loop, port, lambda: _Conn(timing, log), reuse_port, host)
        bound = lsock.getsockname()[1]
    else:
        server = await loop.create_server(lambda: _Conn(timing, log), host, port, backlog=1024,
                                          reuse_port=reuse_port or None)
        bound = server.sockets[0].getsockname()[1]
    control = None
    if reuse_port:
        ctl = await loop.create_server(lambda: _Conn(timing, log), "127.0.0.1", 0)
        control = ctl.sockets[0].getsockname()[1]
    if holder is not None:
        holder["port"] = bound
        holder["log"] = log
        holder["control"] = control
    if ready is not None:
        ready.set()
    if announce:
        print(f"PORT {bound}" + (f" {control}" if control else ""), flush=True)
    if kernel_stamps:
        try:
            await asyncio.Event().wait()
        finally:
            loop.remove_reader(lsock.fileno())
            lsock.close()
    else:
        async with server:
            await asyncio.Event().wait()


def _stamped_listener(loop: asyncio.AbstractEventLoop, port: int, factory,
                      reuse_port: bool = False, host: str = "127.0.0.1") -> socket.socket:
    """Listen on ``port``; each accepted connection reads through a kernel-stamped transport.

    Only ``recv_kernel`` (when the request's last segment reached this
    host's TCP stack) comes from it; the truth (``parsed``, ``written``) is
    this loop's own ``perf_counter``, as before. Writes behave as asyncio's
    (send at once, buffer the rest).
    """
    try:
        from tokcaliper.load.stamped import StampedTransport, prepare_socket
    except ImportError:  # run from a checkout without installing
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src"))
        from tokcaliper.load.stamped import StampedTransport, prepare_socket

    lsock = socket.create_server((host, port), backlog=1024, reuse_port=reuse_port)
    lsock.setblocking(False)

    def accept() -> None:
        while True:
            try:
                csock, _ = lsock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            StampedTransport(loop, csock, factory(), prepare_socket(csock))

    loop.add_reader(lsock.fileno(), accept)
    return lsock


def emission_errors(entries: list[dict], timing: Timing) -> list[float]:
    """Written − scheduled, seconds, for every token of ``entries``."""
    out: list[float] = []
    for e in entries:
        due0 = e["parsed"] + timing.ttft_s
        out.extend(w - (due0 + i * timing.itl_s) for i, w in enumerate(e["written"]))
    return out


class RefServer:
    """Run this server in child processes (pinned, prioritised) for a test or a benchmark.

    Args:
        timing: the schedule.
        cpu: CPU to pin the server to (None: no pinning); with several
            processes, process i is pinned to ``cpus[i % len(cpus)]``.
        nice: niceness to set (negative raises priority; needs root).
        kernel_stamps: log ``recv_kernel`` too (see :func:`serve`).
        processes: how many processes serve the one port (``--reuse-port``;
            1: a single process, no control port).
        cpus: CPUs to pin the processes to, in turn (overrides ``cpu``).
        host: the address to serve on; ``base_url`` names it (``0.0.0.0`` is
            served on every interface and named by this host's name).

    Use as a context manager; :meth:`truth` returns (and clears) the log, the
    processes' logs merged in order of arrival.

    Raises:
        RuntimeError: a process did not start.
    """

    def __init__(self, timing: Timing, cpu: int | None = None, nice: int | None = None,
                 kernel_stamps: bool = False, processes: int = 1,
                 cpus: list[int] | None = None, host: str = "127.0.0.1") -> None:
        pins = cpus or ([cpu] if cpu is not None else [None])
        self.timing = timing
        self.host = host
        self.procs: list = []
        self.controls: list[int] = []
        try:
            port = 0
            for i in range(processes):
                proc, line = self._spawn(timing, port, pins[i % len(pins)], nice, kernel_stamps, processes > 1,
                                         host)
                self.procs.append(proc)
                parts = line.split()
                port = int(parts[1])
                if processes > 1:
                    self.controls.append(int(parts[2]))
        except BaseException:
            self.close()
            raise
        self.port = port
        self.proc = self.procs[0]

    @staticmethod
    def _spawn(timing: Timing, port: int, cpu: int | None, nice: int | None, kernel_stamps: bool,
               reuse_port: bool, host: str):
        import subprocess

        args = [sys.executable, os.path.abspath(__file__), "--port", str(port), "--host", host,
                "--ttft-ms", str(timing.ttft_s * 1000),
                "--itl-ms", str(timing.itl_s * 1000), "--tokens", str(timing.tokens),
                "--token-text", timing.token_text]
        if timing.close_after_stream:
            args.append("--close-after-stream")
        if kernel_stamps:
            args.append("--kernel-stamps")
        if reuse_port:
            args.append("--reuse-port")
        if cpu is not None:
            args += ["--cpu", str(cpu)]
        if nice is not None:
            args += ["--nice", str(nice)]
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if not line.startswith("PORT "):
            proc.kill()
            proc.wait()
            raise RuntimeError(f"reference server did not start: {line!r}")
        return proc, line

    @property
    def base_url(self) -> str:
        host = socket.gethostname() if self.host == "0.0.0.0" else self.host
        return f"http://{host}:{self.port}"

    def truth(self) -> list[dict]:
        """The log since the last call (then cleared on the server); of every process, by ``parsed``."""
        import urllib.request

        urls = [f"http://127.0.0.1:{c}/_truth" for c in self.controls] or [
            f"http://{'127.0.0.1' if self.host == '0.0.0.0' else self.host}:{self.port}/_truth"]
        out: list[dict] = []
        for i, url in enumerate(urls):
            with urllib.request.urlopen(url, timeout=30) as r:
                out.extend(dict(e, process=i) for e in json.loads(r.read()))
        return sorted(out, key=lambda e: e["parsed"])

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.stdin.close()  # type: ignore[union-attr]
        for proc in self.procs:
            try:
                proc.wait(5)
            except Exception:
                proc.kill()
                proc.wait()

    def __enter__(self) -> RefServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1", help="address to serve on (0.0.0.0: every interface)")
    ap.add_argument("--ttft-ms", type=float, default=50.0)
    ap.add_argument("--itl-ms", type=float, default=5.0)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--close-after-stream", action="store_true")
    ap.add_argument("--kernel-stamps", action="store_true",
                    help="also log each request's kernel receive time (recv_kernel)")
    ap.add_argument("--token-text", default=" tok")
    ap.add_argument("--reuse-port", action="store_true",
                    help="bind the port with SO_REUSEPORT (several processes share it) and "
                         "serve /_truth on a control port of this process's own")
    ap.add_argument("--cpu", type=int, default=None, help="pin to this CPU")
    ap.add_argument("--nice", type=int, default=None, help="set this niceness (negative needs root)")
    a = ap.parse_args()
    if a.cpu is not None:
        os.sched_setaffinity(0, {a.cpu})
    if a.nice is not None:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, a.nice)
        except OSError:
            pass
    timing = Timing(a.ttft_ms / 1000, a.itl_ms / 1000, a.tokens, a.close_after_stream, a.token_text)
    loop = asyncio.SelectorEventLoop(SpinSelector())
    asyncio.set_event_loop(loop)
    task = loop.create_task(serve(timing, a.port, announce=True, kernel_stamps=a.kernel_stamps,
                                  reuse_port=a.reuse_port, host=a.host))

    def watch_stdin() -> None:
        sys.stdin.read()
        loop.call_soon_threadsafe(task.cancel)

    threading.Thread(target=watch_stdin, daemon=True).start()
    try:
        loop.run_until_complete(task)
    except asyncio.CancelledError:
        pass


if __name__ == "__main__":
    main()
