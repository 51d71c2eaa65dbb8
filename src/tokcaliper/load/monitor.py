"""The ruler's own error: event-loop lag and CPU share of the client, per run.

A probe callback is scheduled every :data:`PROBE_INTERVAL_S` on the client's
event loop; how late it runs is the loop's lag — the time any timestamp taken
on that loop may trail the event it marks (the method of Node.js'
``monitorEventLoopDelay``). Linux's ``epoll_wait`` takes a timeout in whole
milliseconds and Python rounds it up, so an idle loop's probes read 0–1 ms
late; only lag beyond that is the client's own.

The CPU share is the loop thread's CPU time (``time.thread_time``) over the
phase's wall time: near 1.0 the client is saturated and falling behind.

A run is *client-limited* (its latencies partly measure the client) when the
loop lag p99 exceeds :data:`LAG_BOUND_S`, the dispatch delay p99 exceeds
:data:`DISPATCH_BOUND_S` (the client could not send on schedule: coordinated
omission), or the CPU share exceeds :data:`CPU_BOUND_SHARE`.
"""

from __future__ import annotations

import asyncio
import time
from time import perf_counter

from tokcaliper.load.summary import percentiles
from tokcaliper.model.run import ClientHealth

__all__ = ["CPU_BOUND_SHARE", "DISPATCH_BOUND_S", "LAG_BOUND_S", "PROBE_INTERVAL_S", "LoopMonitor"]

#: Probe period, s: Node.js' ``monitorEventLoopDelay`` default resolution.
#: Each probe is a loop wake-up: at one stream of 200 tok/s a 5 ms probe
#: cost ~8 % of the client's CPU (benchmarks/client_accuracy.py).
PROBE_INTERVAL_S = 0.01
#: Lag p99 above which the loop is called late. An idle loop's probes read
#: up to 1 ms late (epoll's rounding) and, on a quiet two-core host with
#: kernel-stamped arrivals, p99 1.7–2.3 ms at 1–64 streams
#: (benchmarks/client_accuracy.py); 3 ms is beyond both.
LAG_BOUND_S = 0.003
#: Dispatch delay p99 above which the client did not keep its schedule, s.
DISPATCH_BOUND_S = 0.005
#: Loop-thread CPU share above which the client is saturated.
CPU_BOUND_SHARE = 0.9


class LoopMonitor:
    """Measure the running loop's lag and the loop thread's CPU while active.

    Use ``start()`` inside the loop, ``stop()`` at the end; ``stop`` returns
    the :class:`ClientHealth` (limits not yet judged: see
    :func:`tokcaliper.load.summary.judge_client`).
    """

    def __init__(self, interval_s: float = PROBE_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.lags: list[float] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._wall0 = self._cpu0 = 0.0

    def start(self) -> None:
        """Begin probing (call from inside the running loop)."""
        self._loop = asyncio.get_running_loop()
        self._wall0, self._cpu0 = perf_counter(), time.thread_time()
        self._due = self._loop.time() + self.interval_s
        self._handle = self._loop.call_at(self._due, self._probe)

    def _probe(self) -> None:
        loop = self._loop
        now = loop.time()  # type: ignore[union-attr]
        self.lags.append(max(0.0, now - self._due))
        self._due = now + self.interval_s
        self._handle = loop.call_at(self._due, self._probe)  # type: ignore[union-attr]

    def stop(self) -> ClientHealth:
        """Stop probing and return the lag and CPU figures."""
        if self._handle is not None:
            self._handle.cancel()
        wall = perf_counter() - self._wall0
        cpu = time.thread_time() - self._cpu0
        lag = percentiles(self.lags)
        lag_max = max(self.lags) if self.lags else None
        return ClientHealth(
            loop_lag_s=lag, loop_lag_max_s=lag_max, probe_interval_s=self.interval_s,
            cpu_s=cpu, wall_s=wall, cpu_share=cpu / wall if wall > 0 else None,
        )
