"""Upper bounds of the durations a run takes (seconds), shared by every layer.

Beyond them a value is a typo, and some would overflow the clocks they feed
(``time.sleep(1e300)`` raises OverflowError in a sampler thread). Defined here,
below the layers that check them: the experiment file and ``bench`` options
(:mod:`tokcaliper.experiment.spec`), the open-loop arrivals
(:mod:`tokcaliper.load.arrivals`) and the time budget of ``plan``
(:func:`tokcaliper.stats.resolution.plan`) all read the same figures.
"""

from __future__ import annotations

__all__ = ["MAX_DURATION_S", "MAX_INTERVAL_S", "MAX_TIMEOUT_S"]

#: Longest one run may last (``--duration``, ``duration_s``): 7 days.
MAX_DURATION_S = 7 * 86400.0
#: Longest timeout, rest or cooldown: 1 day.
MAX_TIMEOUT_S = 86400.0
#: Longest sampling interval or idle wait: 1 hour.
MAX_INTERVAL_S = 3600.0
