"""The kernel-stamped transport: arrivals are dated by the kernel, not by a late loop."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from time import perf_counter

import pytest

from tokcaliper.load import stamped
from tokcaliper.load.http import ConnectFailed, HttpConnection
from tokcaliper.load.stamped import StampedTransport, kernel_stamps_work, open_stamped

from .kernel_stamps import needs_kernel_stamps


class _Recorder:
    """A protocol that keeps every read with its stamp and every event."""

    def __init__(self) -> None:
        self.reads: list[tuple[bytes, float, bool, float]] = []
        self.eof = False
        self.lost: list[Exception | None] = []
        self.transport: StampedTransport | None = None

    def connection_made(self, transport: StampedTransport) -> None:
        self.transport = transport

    def data_received_at(self, data: bytes, stamp: float, kernel: bool) -> None:
        self.reads.append((data, stamp, kernel, perf_counter()))

    def eof_received(self) -> bool:
        self.eof = True
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.append(exc)


class _Peer:
    """A blocking TCP server in a thread: runs ``script(conn)`` on the first connection."""

    def __init__(self, script) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.script = script
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        conn, _ = self.sock.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.script(conn)
        finally:
            conn.close()
            self.sock.close()


def test_the_probe_agrees_with_what_a_connection_gets():
    """kernel_stamps_work() is what open_stamped delivers on this host."""
    got: list[bool] = []
    peer = _Peer(lambda conn: conn.sendall(b"x"))

    async def main() -> None:
        rec = _Recorder()
        await open_stamped("127.0.0.1", peer.port, rec)
        while not rec.lost:
            await asyncio.sleep(0.001)
        got.extend(kernel for _d, _s, kernel, _r in rec.reads)

    asyncio.run(main())
    assert got and all(k == kernel_stamps_work() for k in got)


@needs_kernel_stamps
def test_a_read_the_loop_reaches_late_keeps_its_arrival_time():
    """The loop is blocked 80 ms while data arrives: the stamp is the arrival, not the read."""
    sent_at: list[float] = []
    go = threading.Event()

    def script(conn: socket.socket) -> None:
        go.wait(5)
        time.sleep(0.01)  # the client's loop is asleep by now
        conn.sendall(b"x" * 100)
        sent_at.append(perf_counter())
        time.sleep(0.2)

    peer = _Peer(script)

    async def main() -> _Recorder:
        rec = _Recorder()
        await open_stamped("127.0.0.1", peer.port, rec)
        go.set()
        time.sleep(0.08)  # block the loop: the data waits in the kernel
        while not rec.reads:
            await asyncio.sleep(0.001)
        rec.transport.close()
        return rec

    rec = asyncio.run(main())
    data, stamp, kernel, read_at = rec.reads[0]
    assert data == b"x" * 100 and kernel
    assert read_at - sent_at[0] > 0.05  # the loop read it late…
    assert abs(stamp - sent_at[0]) < 0.002  # …but the stamp is its arrival


def test_without_the_kernel_option_reads_fall_back_to_the_loop_clock(monkeypatch):
    peer = _Peer(lambda conn: conn.sendall(b"hello"))
    monkeypatch.setattr(stamped, "SO_TIMESTAMPNS", -1)  # setsockopt refuses it

    async def main() -> _Recorder:
        rec = _Recorder()
        tr = await open_stamped("127.0.0.1", peer.port, rec)
        assert tr.kernel_stamps is False
        while not rec.lost:
            await asyncio.sleep(0.001)
        return rec

    rec = asyncio.run(main())
    assert b"".join(r[0] for r in rec.reads) == b"hello"
    assert all(not kernel and abs(stamp - read_at) < 1e-3 for _, stamp, kernel, read_at in rec.reads)
    assert rec.eof and rec.lost == [None]


def test_a_large_write_is_sent_whole_through_a_slow_reader():
    """More than the socket buffers hold: the rest waits for writability, in order."""
    payload = bytes(range(256)) * (16 * 1024)  # 4 MiB
    got = bytearray()

    def script(conn: socket.socket) -> None:
        while len(got) < len(payload):
            time.sleep(0.002)
            chunk = conn.recv(65536)
            if not chunk:
                break
            got.extend(chunk)
        conn.sendall(b"ok")

    peer = _Peer(script)

    async def main() -> _Recorder:
        rec = _Recorder()
        tr = await open_stamped("127.0.0.1", peer.port, rec)
        tr.write(payload)
        assert tr._wbuf  # did not all fit at once
        while not rec.reads:
            await asyncio.sleep(0.005)
        tr.close()
        await asyncio.sleep(0)
        return rec

    rec = asyncio.run(main())
    assert bytes(got) == payload and rec.reads[0][0] == b"ok"


def test_a_reset_reaches_the_protocol_as_an_error():
    def script(conn: socket.socket) -> None:
        conn.recv(10)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")

    peer = _Peer(script)  # closing with linger 0 sends RST

    async def main() -> _Recorder:
        rec = _Recorder()
        tr = await open_stamped("127.0.0.1", peer.port, rec)
        tr.write(b"hi")
        for _ in range(2000):
            if rec.lost:
                break
            await asyncio.sleep(0.001)
        return rec

    rec = asyncio.run(main())
    assert len(rec.lost) == 1 and isinstance(rec.lost[0], ConnectionResetError)


def test_a_refused_connection_raises_connect_failed():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there

    async def main() -> None:
        await HttpConnection.open("127.0.0.1", port)

    with pytest.raises(ConnectFailed, match=f"cannot connect to 127.0.0.1:{port}"):
        asyncio.run(main())


def test_the_probe_says_no_when_the_option_is_refused(monkeypatch):
    monkeypatch.setattr(stamped, "SO_TIMESTAMPNS", -1)
    assert kernel_stamps_work() is False


def test_off_linux_connections_use_asyncios_transport_and_the_loop_clock(monkeypatch):
    """Where the stamped transport is not used, the client still works and says which clock it used."""
    from tokcaliper.load import http
    from tokcaliper.load.driver import run_phase
    from tokcaliper.load.prompts import builtin_prompts
    from tokcaliper.model.run import LoadConfig

    from .fake_server import FakeServer, FakeTiming

    monkeypatch.setattr(http, "STAMPED", False)
    with FakeServer(FakeTiming(ttft_s=0.005, itl_s=0.001, tokens=4)) as srv:
        phase = run_phase(LoadConfig(base_url=srv.base_url, concurrency=2, requests=4, max_tokens=4),
                          builtin_prompts())
    assert all(r.ok for r in phase) and len(phase) == 4
    assert phase.client.reads_kernel_stamped == 0 and phase.client.reads_loop_stamped > 0
    assert phase.client.arrival_clock == "loop"
