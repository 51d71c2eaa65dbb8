"""The shared number formatter (tokcaliper.numbers)."""

import math

import numpy as np
import pytest

from tokcaliper.numbers import (
    DASH,
    display_scale,
    num,
    p_value,
    percent,
    quantity,
    ratio,
    seconds,
    signed_percent,
    statistic,
    with_uncertainty,
)


@pytest.mark.parametrize("x, text", [
    (0.0123, "12.3 ms"), (0.01234567, "12.3 ms"), (1.5, "1.50 s"), (12.345, "12.3 s"),
    (0.9996, "1.00 s"),  # rounds up into the next unit, not "1,000 ms"
    (0.000456, "456 µs"), (3.2e-8, "32.0 ns"), (0.0, "0 s"), (754.3, "754 s"),
])
def test_seconds_scale_latencies(x, text):
    assert seconds(x) == text


def test_significant_digits_not_decimals():
    assert num(0.0123) == "0.0123"  # fixed one decimal would print 0.0
    assert num(0.0123, 4) == "0.01230"
    assert num(366.0, 4) == "366.0"
    assert num(12345.6) == "12,346"  # integer digits are kept
    assert num(9.996) == "10.0"  # rounding carries into the next decade: still 3 digits
    assert num(-0.0123) == "-0.0123"
    assert num(0.5, signed=True) == "+0.500"
    assert num(190.0, 6, trim=True) == "190" and num(0.15, 6, trim=True) == "0.15"
    assert num(np.float64(2.5)) == "2.50"  # numpy scalars
    assert num(7) == "7.00"


def test_tiny_and_huge_values_go_scientific():
    assert num(1.23e-7) == "1.23e-07"
    assert num(4.567e18) == "4.57e+18"
    assert num(1e-4) == "0.000100"  # the smallest fixed-notation value
    assert num(123456789.0) == "123,456,789"
    assert num(2.5e-9, 4, trim=True) == "2.5e-09"
    assert percent(4e-9) == "4.0e-07%"
    assert percent(4.567e18).endswith("e+20%")


@pytest.mark.parametrize("bad", [None, float("nan"), np.nan])
def test_undefined_is_a_dash(bad):
    for f in (num, seconds, ratio, statistic, p_value, percent, signed_percent):
        assert f(bad) == DASH
    assert quantity(bad, "tok/s") == DASH
    assert with_uncertainty(bad, 1.0, 5).startswith(DASH)


def test_infinities():
    assert num(math.inf) == "∞" and num(-math.inf) == "-∞"
    assert seconds(math.inf) == "∞ s" and percent(math.inf) == "∞%" and ratio(math.inf) == "∞"


def test_percent():
    assert percent(0.129) == "12.9%"
    assert percent(0.05) == "5.0%"
    assert percent(1.23) == "123.0%"
    assert percent(0.0004) == "0.040%"  # never 0.0% for a small non-zero CV
    assert percent(0.42, decimals=0) == "42%"
    assert percent(0.0) == "0.0%"
    assert signed_percent(1.077) == "+7.7%" and signed_percent(0.932) == "-6.8%"


def test_ratio_statistic_p():
    assert ratio(1.0769) == "1.077" and ratio(0.932) == "0.932" and ratio(1.1) == "1.100"
    assert ratio(0.0123) == "0.0123" and ratio(12.34) == "12.3"
    assert statistic(0.9012) == "0.90" and statistic(-1.859) == "-1.86"
    assert statistic(0.0042) == "0.0042"
    assert p_value(0.3912, 2) == "0.39" and p_value(0.3912) == "0.391"
    assert p_value(0.00012) == "0.00012" and p_value(1.0) == "1.000"


def test_units():
    assert quantity(85.46, "tok/s") == "85.5 tok/s"
    assert quantity(0.0123, "s") == "12.3 ms"
    assert quantity(0.044, "%") == "4.4%"
    assert quantity(1.0769, "ratio") == "1.077"
    assert display_scale("s", [0.0123, 0.0114]) == (1000.0, "ms")
    assert display_scale("s", [2.0, 0.5]) == (1.0, "s")
    assert display_scale("tok/s", [0.001]) == (1.0, "tok/s")
    assert display_scale("s", [None, float("nan")]) == (1.0, "s")


def test_value_with_uncertainty():
    assert with_uncertainty(85.46, 3.77, 5) == "85.5 ± 3.8 (n=5, CV 4.4%)"
    assert with_uncertainty(456.7, 12.2, 5, unit="tok/s") == "457 ± 12 tok/s (n=5, CV 2.7%)"
    assert with_uncertainty(0.0123, 0.00041, 5, unit="s") == "12.30 ± 0.41 ms (n=5, CV 3.3%)"
    assert with_uncertainty(100.0, None, 1) == "100 (n=1)"
    assert with_uncertainty(100.0, 0.0, 3) == "100 ± 0 (n=3, CV 0.0%)"
    assert with_uncertainty(2e-7, 3e-9, 4) == "2.000e-07 ± 3.0e-09 (n=4, CV 1.5%)"


def test_bad_sig():
    with pytest.raises(ValueError):
        num(1.0, 0)
