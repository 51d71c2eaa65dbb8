"""Wrong numbers believed (issue 22, items 9, 11, 25): figures that overflow, rates over
zero-length intervals, streams that contradict their own usage, verdicts that contradict
their own figures. Each test fails on the code before its fix.
"""

from __future__ import annotations

import sys

import pytest

from tokcaliper import numbers


# ---------------------------------------------------------------- 25: the formatter at the float's edge
@pytest.mark.parametrize("x", [1.7975000000000001e308, sys.float_info.max, -sys.float_info.max, 9.9999e307])
@pytest.mark.parametrize("sig", [1, 2, 3, 4, 6])
def test_num_near_the_largest_float_does_not_overflow(x, sig):
    """Rounding 1.7975e308 to 4 digits gives 1.798e308, past the largest float: the
    exponent is read from the text, never from a float (was OverflowError)."""
    text = numbers.num(x, sig)
    assert text == f"{x:.{sig - 1}e}"


def test_num_of_the_reported_value():
    assert numbers.num(1.7975000000000001e308, 4) == "1.798e+308"


@pytest.mark.parametrize("fn", [numbers.ratio, numbers.statistic, numbers.seconds, numbers.p_value,
                                lambda x: numbers.with_uncertainty(x, x / 10, n=3),
                                lambda x: numbers.quantity(x, "tok/s")])
def test_every_formatter_takes_the_largest_float(fn):
    assert fn(sys.float_info.max)


def test_percent_of_a_huge_fraction_is_infinite_not_inf_text():
    """100 × 1e307 overflows to inf: printed as the formatter's ∞, not Python's 'inf'."""
    assert "inf" not in numbers.percent(1e307)
    assert numbers.percent(sys.float_info.max) == "∞%"
