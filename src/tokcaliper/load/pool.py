"""Connections to one server: opened before they are needed, reused when it keeps them.

Connection set-up stays off the measured path two ways:

* :meth:`ConnectionPool.prefill` opens the connections of the first wave
  before a phase's clock starts (a fresh TCP connection per request costs
  far more than its handshake under load: the event loop is busy setting up
  every other connection of the same wave);
* a connection whose streamed response ended is reused — when the server
  really keeps it.

Whether it does is learned per server (:class:`KeepAlive`), since headers do
not tell: llama-server answers a streamed request with ``Keep-Alive:
timeout=5, max=100`` and then closes the connection (the next request on it
fails), while vLLM and SGLang keep it. The rule:

* ``unknown`` (start): a used connection is reused only after it has sat idle
  for :data:`PROBATION_S` without the server closing it; until then
  requests take a fresh connection.
* the server closes a connection within :data:`PROBATION_S` of a complete
  response → ``closes``: used connections are closed, never reused; every
  request after the first wave opens its connection when it is due (the
  connect is recorded apart from TTFT, see :mod:`tokcaliper.load.client`).
* a reused connection carries a complete response, or used connections
  survive probation when a phase ends (:meth:`ConnectionPool.settle`) →
  ``keeps``: connections go back to the pool at once.
* a request on a reused connection that the server closed before any byte of
  the answer is retried once on a fresh connection (the server cannot have
  processed it), and the server is marked ``closes``.

Known behaviour is remembered per ``host:port`` for the life of the process
(:data:`KNOWN`), so the measured phase starts knowing what warm-up learned.
"""

from __future__ import annotations

import asyncio
import resource
from collections import deque
from dataclasses import dataclass, field
from time import perf_counter
from typing import Literal

from tokcaliper.load.http import HttpConnection

__all__ = ["KNOWN", "PROBATION_S", "ConnectionPool", "KeepAlive", "ReuseMode"]

ReuseMode = Literal["unknown", "keeps", "closes"]

#: A used connection that survives this long idle is taken to be kept by the
#: server. llama-server's close arrives within a millisecond of the response
#: on loopback; 50 ms leaves a loaded server margin.
PROBATION_S = 0.05


@dataclass
class KeepAlive:
    """What is known about one server's handling of streamed connections.

    Attributes:
        mode: ``"unknown"``, ``"keeps"`` or ``"closes"``.
        closes_seen: used connections the server closed within probation.
        reuses_ok: responses completed on a reused connection.
        retries: requests retried because a reused connection was dead.
    """

    mode: ReuseMode = "unknown"
    closes_seen: int = 0
    reuses_ok: int = 0
    retries: int = 0


#: Learned behaviour per ``"host:port"`` (process lifetime).
KNOWN: dict[str, KeepAlive] = {}


@dataclass
class PoolStats:
    """Connection figures of one phase (recorded apart from the latencies).

    Attributes:
        opened: connections opened (prefill included).
        prefilled: of which before the phase's clock started.
        reused: requests sent on a connection that had carried one before.
        connect_s: each connect's duration, seconds.
        kernel_reads / loop_reads: network reads stamped by the kernel / by
            the loop's clock (:mod:`tokcaliper.load.stamped`).
    """

    opened: int = 0
    prefilled: int = 0
    reused: int = 0
    connect_s: list[float] = field(default_factory=list)
    kernel_reads: int = 0
    loop_reads: int = 0

    def tally(self, conn: HttpConnection) -> None:
        """Move ``conn``'s read counts into these figures (once: they are zeroed)."""
        self.kernel_reads += conn.kernel_reads
        self.loop_reads += conn.loop_reads
        conn.kernel_reads = conn.loop_reads = 0


class ConnectionPool:
    """Idle connections to ``host:port`` and the rule for reusing them.

    Args:
        host / port: the server.
        keepalive: the server's :class:`KeepAlive` record (default: the one
            in :data:`KNOWN`, created if new).
        ssl: an ``ssl.SSLContext`` for ``https`` servers (None: plain TCP).
        connect_timeout_s: longest wait for one connection, s (None: none).
    """

    def __init__(self, host: str, port: int, keepalive: KeepAlive | None = None,
                 ssl: object = None, connect_timeout_s: float | None = None) -> None:
        self.host, self.port, self.ssl = host, port, ssl
        self.connect_timeout_s = connect_timeout_s
        key = f"{host}:{port}"
        self.keepalive = keepalive if keepalive is not None else KNOWN.setdefault(key, KeepAlive())
        self.idle: deque[HttpConnection] = deque()
        self.stats = PoolStats()
        self._all: set[HttpConnection] = set()

    async def open(self) -> HttpConnection:
        """A new connection (its connect time goes to :attr:`stats`).

        Raises:
            ConnectFailed: the server refused it.
        """
        conn = await HttpConnection.open(self.host, self.port, self.ssl, self.connect_timeout_s)
        conn.on_close = self._on_close
        self._all.add(conn)
        self.stats.opened += 1
        self.stats.connect_s.append(conn.connect_s)
        return conn

    async def prefill(self, n: int) -> None:
        """Open ``n`` idle connections now (before the measured clock starts).

        Raises:
            ConnectFailed: one could not be opened (every other is closed
                first, none is left pending).
        """
        results = await asyncio.gather(*(self.open() for _ in range(n)), return_exceptions=True)
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            for r in results:
                if isinstance(r, HttpConnection):
                    r.close()
            raise failed[0]
        self.idle.extend(results)  # type: ignore[arg-type]
        self.stats.prefilled += n

    def take_idle(self) -> HttpConnection | None:
        """An idle connection that may carry a request now, or None."""
        mode = self.keepalive.mode
        now = perf_counter()
        for _ in range(len(self.idle)):
            conn = self.idle.popleft()
            if conn.closed or conn.transport is None or conn.transport.is_closing():
                continue
            if conn.exchanges == 0 or mode == "keeps":
                return conn
            if mode == "unknown" and now - conn.idle_since >= PROBATION_S:
                return conn
            self.idle.append(conn)  # still on probation
        return None

    async def acquire(self) -> HttpConnection:
        """An idle connection if one may be used, else a new one."""
        conn = self.take_idle()
        return conn if conn is not None else await self.open()

    def note_sent(self, conn: HttpConnection) -> None:
        """Count a request on ``conn`` (call right after sending)."""
        if conn.exchanges > 1:
            self.stats.reused += 1

    def release(self, conn: HttpConnection, *, ok: bool, keep_alive_header: bool) -> None:
        """Return ``conn`` after its exchange ended.

        Args:
            ok: the response was complete (framed end, no error).
            keep_alive_header: the response allowed reuse (HTTP/1.1, no
                ``Connection: close``).
        """
        conn.release()
        ka = self.keepalive
        if ok and conn.exchanges > 1:
            ka.reuses_ok += 1
            if ka.mode == "unknown":
                ka.mode = "keeps"
        if not ok or not keep_alive_header or ka.mode == "closes" or conn.closed:
            conn.close()
            return
        self.idle.append(conn)

    def reuse_failed(self) -> None:
        """A reused connection was found dead: the server closes them."""
        self.keepalive.retries += 1
        self.keepalive.mode = "closes"

    def _on_close(self, conn: HttpConnection) -> None:
        self._all.discard(conn)
        self.stats.tally(conn)
        # Closed by the server while idle, soon after a complete response:
        # this server does not keep streamed connections.
        ex = conn.exchange
        if ex is not None and not ex.complete:
            return  # closed mid-exchange: a failure, not a keep-alive policy
        last_end = conn.idle_since if ex is None else ex.ended
        if (not conn.client_closed and conn.exchanges > 0
                and conn.closed_at - last_end < PROBATION_S):
            self.keepalive.closes_seen += 1
            if self.keepalive.mode == "unknown":
                self.keepalive.mode = "closes"

    async def settle(self) -> None:
        """Learn the keep-alive mode before closing, if still unknown (off the clock).

        Waits until the newest used idle connection has been idle for
        :data:`PROBATION_S`; one that is still open then is taken as kept
        (``keeps``), and if all were closed by the server ``_on_close`` has
        already marked ``closes``. So a warm-up phase teaches the measured one.
        """
        if self.keepalive.mode != "unknown":
            return
        used = [c for c in self.idle if c.exchanges > 0 and not c.closed]
        if not used:
            return
        wait = max(c.idle_since for c in used) + PROBATION_S - perf_counter()
        await asyncio.sleep(max(0.0, wait) + 0.005)
        if self.keepalive.mode == "unknown" and any(not c.closed for c in used):
            self.keepalive.mode = "keeps"

    def close(self) -> None:
        """Close every connection of the pool (their read counts go to :attr:`stats` now)."""
        for conn in list(self._all):
            self.stats.tally(conn)
            conn.close()
        self.idle.clear()


#: Descriptors kept free beside one socket per stream: the database, logs,
#: a managed server's pipes, telemetry readers, the event loop's own.
FD_RESERVE = 64


def ensure_fd_room(streams: int, option: str = "--concurrency") -> None:
    """Make sure the process may open a socket per stream, before anything starts.

    ``streams`` concurrent streams need ``streams + FD_RESERVE`` descriptors.
    When the soft limit (``ulimit -n``) is lower and the hard limit allows,
    the soft limit is raised to what is needed (for this process and the
    servers it starts); otherwise the run is refused, instead of failing
    mid-run on the client's own limit (``EMFILE``) and reading as a server
    that stopped answering.

    Raises:
        InputError: more descriptors needed than the hard limit, or raising
            the soft limit failed; the message gives the figures and ``ulimit -n``.
    """
    from tokcaliper.errors import InputError

    need = streams + FD_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or need <= soft:
        return
    if hard == resource.RLIM_INFINITY or need <= hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
            return
        except (ValueError, OSError):
            pass
    hard_text = "unlimited" if hard == resource.RLIM_INFINITY else f"{hard:,}"
    raise InputError(f"{option} {streams} needs about {need:,} open files (one socket per stream and "
                     f"{FD_RESERVE} for the rest), but this process may open {soft:,} (ulimit -n; hard "
                     f"limit {hard_text}): lower {option} or raise ulimit -n")
