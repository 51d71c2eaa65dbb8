"""The arrival timer (load/timer.py): a timerfd's expiry is not rounded up to a millisecond."""

from __future__ import annotations

import asyncio
import os
from time import perf_counter

import numpy as np
import pytest

from tokcaliper.load import timer as timer_mod
from tokcaliper.load.timer import ArrivalTimer, timerfd_available


def _lateness(gap_s: float, n: int, *, fallback: bool) -> np.ndarray:
    """Fire n timers gap_s apart, each armed when the one before fires; seconds late."""

    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        saved = timer_mod._LIBC
        if fallback:
            timer_mod._LIBC = None
        try:
            t = ArrivalTimer(loop)
        finally:
            timer_mod._LIBC = saved
        assert t.uses_timerfd is (not fallback)
        late: list[float] = []
        done = loop.create_future()
        start = perf_counter() + gap_s

        def fire(k: int) -> None:
            late.append(perf_counter() - (start + k * gap_s))
            if k + 1 < n:
                t.at(start + (k + 1) * gap_s, lambda: fire(k + 1))
            else:
                done.set_result(None)

        t.at(start, lambda: fire(0))
        try:
            await done
        finally:
            t.close()
        return late

    return np.array(asyncio.run(main()))


@pytest.mark.skipif(not timerfd_available(), reason="timerfd is Linux-only: arrivals use loop.call_at there")
def test_timerfd_fires_well_inside_the_millisecond_that_epoll_rounds_to():
    fd_late = _lateness(0.003, 40, fallback=False)
    loop_late = _lateness(0.003, 40, fallback=True)
    assert (fd_late >= 0).all() and (loop_late >= 0).all()  # never early
    # call_at sleeps in epoll_wait, whose timeout is whole ms rounded up: ≈ 0.5 ms late at
    # the median (2-core host); the timerfd wakes the loop at its expiry (≈ 0.05 ms).
    assert np.median(fd_late) < 0.25e-3, np.median(fd_late)
    assert np.median(fd_late) < np.median(loop_late) / 2, (np.median(fd_late), np.median(loop_late))


@pytest.mark.parametrize("fallback", [False, True], ids=["timerfd", "call_at"])
def test_a_due_time_already_past_runs_on_the_next_iteration_and_rearming_replaces(fallback, monkeypatch):
    if fallback:
        monkeypatch.setattr(timer_mod, "_LIBC", None)
    async def main() -> list[str]:
        loop = asyncio.get_running_loop()
        t = ArrivalTimer(loop)
        seen: list[str] = []
        t.at(perf_counter() + 0.05, lambda: seen.append("replaced"))
        t.at(perf_counter() - 1.0, lambda: seen.append("past"))  # replaces the pending one
        await asyncio.sleep(0.01)
        t.at(perf_counter() + 0.2, lambda: seen.append("later"))
        await asyncio.sleep(0.08)  # the replaced expiry (at 0.05 s) must not fire "later"
        fd = t._fd
        t.close()
        t.close()  # idempotent
        if fd >= 0:
            with pytest.raises(OSError):
                os.fstat(fd)  # released
        return seen

    assert asyncio.run(main()) == ["past"]
