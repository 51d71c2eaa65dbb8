"""Arrival timers finer than the event loop's: a Linux ``timerfd`` watched by the loop.

asyncio sleeps in ``epoll_wait``, whose timeout is whole milliseconds rounded up,
so a ``loop.call_at`` timer fires 0–1 ms late: on a 2-core host an open-loop
arrival left a median 0.6 ms and a p99 1.9–2.1 ms after its scheduled time
(80 arrivals/s against the reference server; issue 18's trace-replay test on a
fresh-clone CI run). A ``timerfd`` armed at an absolute ``CLOCK_MONOTONIC``
time has nanosecond resolution, and ``epoll`` returns the moment it becomes
readable, so the arrival waits only for the loop's own wake-up — without
spinning a core.

``time.perf_counter`` is ``CLOCK_MONOTONIC`` on Linux (checked at start-up), so
a due time in perf-counter seconds is the timer's absolute expiry. Where
``timerfd`` is not available (not Linux, or ``perf_counter`` on another clock)
the timer falls back to ``loop.call_at``, as before.

Source: timerfd_create(2), epoll_wait(2) ("the timeout … will be rounded up
to the system clock granularity"), CPython ``selectors.EpollSelector.select``
(``math.ceil(timeout * 1e3) * 1e-3``).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
import sys
import time
from collections.abc import Callable
from time import perf_counter

__all__ = ["ArrivalTimer", "timerfd_available"]

_CLOCK_MONOTONIC = 1  # <linux/time.h>
_TFD_NONBLOCK = os.O_NONBLOCK
_TFD_CLOEXEC = os.O_CLOEXEC
_TFD_TIMER_ABSTIME = 1  # <sys/timerfd.h>


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


def _libc() -> ctypes.CDLL | None:
    """The C library with timerfd_create/timerfd_settime, or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    if "CLOCK_MONOTONIC" not in time.get_clock_info("perf_counter").implementation:
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        libc.timerfd_create.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.timerfd_settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec),
                                         ctypes.c_void_p]
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _libc()


def timerfd_available() -> bool:
    """True where arrivals are timed by a ``timerfd`` (Linux), False where by ``loop.call_at``."""
    return _LIBC is not None


class ArrivalTimer:
    """One pending one-shot timer at a time, due in ``perf_counter`` seconds.

    Use inside a running loop: ``at(due, callback)`` replaces any pending timer;
    ``close()`` releases the file descriptor (always call it, e.g. in ``finally``).
    A due time already past runs the callback on the loop's next iteration.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._callback: Callable[[], None] | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._fd = -1
        if _LIBC is not None:
            fd = _LIBC.timerfd_create(_CLOCK_MONOTONIC, _TFD_NONBLOCK | _TFD_CLOEXEC)
            if fd >= 0:
                self._fd = fd
                loop.add_reader(fd, self._expired)
        # perf_counter and loop.time() are both CLOCK_MONOTONIC on Linux; the
        # offset keeps the fallback right where they are not.
        self._to_loop = loop.time() - perf_counter()

    @property
    def uses_timerfd(self) -> bool:
        """Whether this timer is a ``timerfd`` (else ``loop.call_at``)."""
        return self._fd >= 0

    def at(self, due: float, callback: Callable[[], None]) -> None:
        """Call ``callback()`` at ``due`` (``perf_counter`` seconds), replacing any pending timer."""
        self._callback = callback
        if self._handle is not None:  # a replaced timer must not fire the new callback
            self._handle.cancel()
            self._handle = None
        if self._fd < 0:
            self._handle = self._loop.call_at(due + self._to_loop, self._fire)
            return
        past = due <= perf_counter()
        # Already due: disarm (an all-zero expiry) and run on the next iteration.
        sec = 0 if past else int(due)
        nsec = 0 if past else int((due - sec) * 1e9)
        spec = _Itimerspec(_Timespec(0, 0), _Timespec(sec, nsec))
        failed = _LIBC.timerfd_settime(self._fd, _TFD_TIMER_ABSTIME, ctypes.byref(spec), None) != 0  # type: ignore[union-attr]
        if past:
            self._handle = self._loop.call_soon(self._fire)  # type: ignore[assignment]
        elif failed:
            self._handle = self._loop.call_at(due + self._to_loop, self._fire)  # keep the arrival

    def _expired(self) -> None:
        try:
            os.read(self._fd, 8)  # the expiry count; clears readability
        except BlockingIOError:  # disarmed or re-armed since: nothing is due
            return
        self._fire()

    def _fire(self) -> None:
        callback, self._callback = self._callback, None
        self._handle = None
        if callback is not None:
            callback()

    def close(self) -> None:
        """Cancel any pending timer and release the file descriptor (idempotent)."""
        self._callback = None
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._fd >= 0:
            self._loop.remove_reader(self._fd)
            os.close(self._fd)
            self._fd = -1
