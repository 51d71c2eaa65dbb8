"""Timing tests (marker ``timing``): a bound in ms on the load generator's own error.

On a 2-core VM the hypervisor or a neighbour can deschedule one run for
milliseconds, which says nothing about the client. So a timing test gets up
to :data:`TIMING_TRIES` tries and passes when one does (re-run, never widen
the bound). When every try failed its assertion while the hypervisor took back
more than ``STEAL_BOUND_PCT`` of the CPU time, it skips with those figures;
otherwise the last failure is raised with each try's steal added to it.
"""

from __future__ import annotations

import inspect
import warnings

import pytest

from .host_steal import STEAL_BOUND_PCT, StealMeter

#: Tries per timing test. Seen on this 2-core VM: 3-10 % steal in a trace
#: replay gave a p99 arrival error of 2.7-5.9 ms, 0.6 % gave 1.1 ms.
TIMING_TRIES = 3


def _steal(pct: float | None) -> str:
    return "unreadable" if pct is None else f"{pct:.1f} %"


def _first_line(exc: AssertionError) -> str:
    text = str(exc)
    return text.splitlines()[0][:200] if text else "assertion failed"


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run a ``timing`` test up to :data:`TIMING_TRIES` times (others: pytest's own call)."""
    if pyfuncitem.get_closest_marker("timing") is None or inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    args = {name: pyfuncitem.funcargs[name] for name in inspect.signature(pyfuncitem.obj).parameters}
    tries: list[tuple[float | None, AssertionError]] = []
    for _ in range(TIMING_TRIES):
        meter = StealMeter()
        try:
            with meter:
                pyfuncitem.obj(**args)
        except AssertionError as exc:
            tries.append((meter.pct, exc))
            continue
        if tries:  # passed, but not at once: say so in the warnings summary
            warnings.warn(f"passed on try {len(tries) + 1}; earlier tries' steal "
                          f"{', '.join(_steal(p) for p, _ in tries)}: "
                          + "; ".join(_first_line(e) for _, e in tries), stacklevel=1)
        return True
    steals = ", ".join(_steal(pct) for pct, _ in tries)
    if all(pct is not None and pct > STEAL_BOUND_PCT for pct, _ in tries):
        pytest.skip(f"the hypervisor took back {steals} of the CPU time (bound {STEAL_BOUND_PCT} %) "
                    f"in every one of {TIMING_TRIES} tries; the last failure "
                    f"({_first_line(tries[-1][1])}) says nothing "
                    "of the client")
    last = tries[-1][1]
    last.add_note(f"failed {TIMING_TRIES} tries; hypervisor steal per try: {steals} "
                  f"(bound {STEAL_BOUND_PCT} %)")
    raise last
