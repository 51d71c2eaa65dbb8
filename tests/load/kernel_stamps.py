"""Skip marker for tests that need the kernel's receive stamps (see tokcaliper.load.stamped)."""

import pytest

from tokcaliper.load.stamped import kernel_stamps_work

#: These tests check what kernel stamps give; where the host has none the
#: client falls back to the loop's clock (tested on its own), so they skip.
needs_kernel_stamps = pytest.mark.skipif(
    not kernel_stamps_work(), reason="this host's TCP stack gives recvmsg no receive stamps (SO_TIMESTAMPNS)")
