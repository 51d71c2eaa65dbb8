"""A plain-TCP transport whose every read carries the kernel's receive time.

Why: a timestamp taken in a read callback trails the data's arrival by the
event loop's lag. Under load that lag is the client's largest error: one
loop pass over 256 streams that each just received a token takes milliseconds,
and the stream handled last is stamped last. Linux stamps every received
segment in the kernel (``SO_TIMESTAMPNS``, socket(7)) and hands the stamp to
``recvmsg`` as ancillary data (``SCM_TIMESTAMPNS``: a ``struct timespec`` on
CLOCK_REALTIME). For TCP it is the stamp of the newest segment the read
returns (segments waiting in the receive queue are coalesced and keep the
newest stamp, see ``tcp_try_coalesce`` in ``net/ipv4/tcp_input.c``), so a
read's stamp is the arrival of its last byte, however late the loop got to it.

The stamp is moved onto ``time.perf_counter()``'s clock (CLOCK_MONOTONIC) by
reading CLOCK_REALTIME next to it (``now − (realtime_now − kernel_stamp)``):
only the interval is taken from the realtime clock, so the two clocks' offset
never enters and an NTP slew (≤ 500 ppm) moves a 10 ms lag by ≤ 5 µs.

A read without a usable stamp (the option refused, a kernel or sandbox that
does not deliver it, a stamp in the future) falls back to the loop's own
time, and is counted as such by the protocol, so a run says which clock its
arrivals came from. TLS connections keep asyncio's transport
(the stamp of encrypted records cannot be matched to decrypted bytes).

The transport implements the part of :class:`asyncio.Transport` that
:class:`tokcaliper.load.http.HttpConnection` uses: ``write``, ``close``,
``abort``, ``is_closing``, and calls the protocol's
``connection_made``, ``data_received_at(data, stamp, kernel)``, ``eof_received`` and
``connection_lost`` as asyncio does (``connection_lost`` from a later loop
pass).
"""

from __future__ import annotations

import asyncio
import socket
import struct
import sys
from time import perf_counter, time_ns
from typing import Any, Protocol

__all__ = ["READ_SIZE", "SO_TIMESTAMPNS", "SUPPORTED", "StampedProtocol", "StampedTransport", "kernel_stamps_work",
           "open_stamped", "prepare_socket"]

#: ``SO_TIMESTAMPNS`` (= ``SCM_TIMESTAMPNS``) from ``asm-generic/socket.h``;
#: Python's socket module does not export it.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
#: Where this transport is used: Linux (the option number is Linux's, and
#: the loop must offer ``add_reader``); elsewhere asyncio's own transport
#: carries plain TCP too, stamped by the loop.
SUPPORTED = sys.platform.startswith("linux")
#: Bytes per read: asyncio's own default (``max_size`` 256 KiB).
READ_SIZE = 256 * 1024
#: Room for one control message carrying a ``struct timespec``.
_ANC_SIZE = socket.CMSG_SPACE(16)
_TIMESPEC = struct.Struct("@qq")
#: A kernel stamp older than this (ns) is not trusted (a clock step).
_MAX_AGE_NS = 60 * 10**9
#: A stamp this far (ns) in the future is clock jitter, read as "now".
_FUTURE_SLACK_NS = 100_000


class StampedProtocol(Protocol):
    """What :class:`StampedTransport` calls (``HttpConnection`` implements it)."""

    def connection_made(self, transport: Any) -> None: ...
    def data_received_at(self, data: bytes, stamp: float, kernel: bool) -> None: ...
    def eof_received(self) -> bool | None: ...
    def connection_lost(self, exc: Exception | None) -> None: ...


class StampedTransport:
    """A connected non-blocking TCP socket on the running loop, reads kernel-stamped.

    Args:
        loop: the running event loop.
        sock: a connected, non-blocking TCP socket.
        protocol: the receiver of data and events.
        kernel_stamps: whether ``SO_TIMESTAMPNS`` was accepted on ``sock``.

    Each read is handed on as ``protocol.data_received_at(data, stamp,
    kernel)``: ``stamp`` on ``perf_counter``'s clock, ``kernel`` whether it is
    the kernel's (else the loop's own time at the read).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, sock: socket.socket,
                 protocol: StampedProtocol, kernel_stamps: bool) -> None:
        self._loop, self._sock, self._protocol = loop, sock, protocol
        self._fd = sock.fileno()
        self._wbuf = bytearray()
        self._closing = False
        self._closed = False
        self.kernel_stamps = kernel_stamps
        protocol.connection_made(self)
        loop.add_reader(self._fd, self._read_ready)

    # -- reading ------------------------------------------------------------------
    def _read_ready(self) -> None:
        try:
            data, anc, _flags, _addr = self._sock.recvmsg(READ_SIZE, _ANC_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._fatal(e)
            return
        now = perf_counter()
        if not data:
            self._loop.remove_reader(self._fd)
            if not self._protocol.eof_received():
                self.close()
            return
        if anc:
            sec, nsec = _TIMESPEC.unpack_from(anc[-1][2])
            age = time_ns() - (sec * 1_000_000_000 + nsec)
            if -_FUTURE_SLACK_NS < age < _MAX_AGE_NS:
                self._protocol.data_received_at(data, now - max(age, 0) * 1e-9, True)
                return
        self._protocol.data_received_at(data, now, False)

    # -- writing ------------------------------------------------------------------
    def write(self, data: bytes) -> None:
        """Send ``data`` now; what the socket does not take is sent when it can."""
        if self._closing:
            return
        if self._wbuf:
            self._wbuf += data
            return
        try:
            n = self._sock.send(data)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError as e:
            self._fatal(e)
            return
        if n < len(data):
            self._wbuf += data[n:]
            self._loop.add_writer(self._fd, self._write_ready)

    def _write_ready(self) -> None:
        try:
            n = self._sock.send(self._wbuf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._fatal(e)
            return
        del self._wbuf[:n]
        if not self._wbuf:
            self._loop.remove_writer(self._fd)
            if self._closing:
                self._finish(None)

    # -- closing ------------------------------------------------------------------
    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        """Close after any unsent bytes are sent (idempotent)."""
        if self._closing:
            return
        self._closing = True
        self._loop.remove_reader(self._fd)
        if not self._wbuf:
            self._finish(None)

    def abort(self) -> None:
        """Close now, dropping unsent bytes."""
        self._fatal(None)

    def _fatal(self, exc: Exception | None) -> None:
        """Close now, dropping unsent bytes; the protocol hears ``exc``."""
        self._closing = True
        self._wbuf.clear()
        self._finish(exc)

    def _finish(self, exc: Exception | None) -> None:
        if self._closed:
            return
        self._closed = True
        self._loop.remove_reader(self._fd)
        self._loop.remove_writer(self._fd)
        self._sock.close()
        self._loop.call_soon(self._protocol.connection_lost, exc)


#: A socket that keeps the host's receive stamping switched on (see
#: :func:`_keep_stamping_on`).
_HOLDER: socket.socket | None = None


def _keep_stamping_on() -> None:
    """Hold one socket with ``SO_TIMESTAMPNS`` for the life of the process.

    The kernel stamps received packets only while some socket asks for it
    (``net_enable_timestamp`` counts them), and switching it on again after
    the count fell to zero is deferred to a work queue: the first packets on
    a new connection then arrive unstamped (seen here on the first response
    of a run, once in ~40 runs). One idle UDP socket keeps the count above zero.
    """
    global _HOLDER
    if _HOLDER is not None:
        return
    try:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        return
    _HOLDER = sock


def prepare_socket(sock: socket.socket) -> bool:
    """Make ``sock`` non-blocking with ``TCP_NODELAY`` (asyncio's default) and ask for receive stamps.

    Returns:
        Whether the kernel accepted ``SO_TIMESTAMPNS`` (False: reads will be
        stamped by the loop).
    """
    sock.setblocking(False)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    except OSError:
        return False
    return True


async def open_stamped(host: str, port: int, protocol: StampedProtocol) -> StampedTransport:
    """Connect to ``host:port`` and attach ``protocol`` through a :class:`StampedTransport`.

    Tries each address ``getaddrinfo`` gives, in order, like
    ``loop.create_connection``; sets ``TCP_NODELAY`` (asyncio's default) and
    asks for ``SO_TIMESTAMPNS``.

    Raises:
        OSError: no address could be connected (the last error).
    """
    _keep_stamping_on()
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    if not infos:
        raise OSError(f"getaddrinfo({host!r}) returned nothing")
    last: OSError | None = None
    for family, type_, proto, _canon, addr in infos:
        sock = socket.socket(family, type_, proto)
        try:
            kernel = prepare_socket(sock)
            await loop.sock_connect(sock, addr)
        except OSError as e:
            sock.close()
            last = e
            continue
        except BaseException:
            sock.close()
            raise
        return StampedTransport(loop, sock, protocol, kernel)
    assert last is not None
    raise last


def kernel_stamps_work() -> bool:
    """Whether this host's TCP stack hands receive stamps to ``recvmsg`` (a loopback probe).

    Opens a loopback connection, sends one byte and reads it back with
    ``recvmsg``, like :class:`StampedTransport` (blocking, 1 s timeout).
    False where the option is refused or no stamp comes (some sandboxes), and
    off Linux (:data:`SUPPORTED`).
    """
    if not SUPPORTED:
        return False
    _keep_stamping_on()
    try:
        with socket.create_server(("127.0.0.1", 0)) as lsock:
            with socket.create_connection(lsock.getsockname(), timeout=1.0) as cli:
                cli.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                srv, _ = lsock.accept()
                with srv:
                    srv.sendall(b"x")
                    _data, anc, _flags, _addr = cli.recvmsg(16, _ANC_SIZE)
    except OSError:
        return False
    if not anc:
        return False
    sec, nsec = _TIMESPEC.unpack_from(anc[-1][2])
    return -_FUTURE_SLACK_NS < time_ns() - (sec * 1_000_000_000 + nsec) < _MAX_AGE_NS
