import math

import pytest

from tokcaliper.errors import InputError
from tokcaliper.stats.describe import describe


def test_known_values():
    d = describe([1.0, 2.0, 3.0, 4.0])
    assert d.n == 4
    assert d.mean == pytest.approx(2.5)
    assert d.std == pytest.approx(math.sqrt(5 / 3))  # ddof=1, not ddof=0 (1.118)
    assert d.cv == pytest.approx(math.sqrt(5 / 3) / 2.5)
    assert d.spread == pytest.approx(3 / 2.5)
    assert d.max_over_min == pytest.approx(4.0)
    # t(0.975, 3) = 3.182446
    half = 3.182446305284263 * math.sqrt(5 / 3) / 2
    assert d.ci95[0] == pytest.approx(2.5 - half)
    assert d.ci95[1] == pytest.approx(2.5 + half)
    lo, hi = d.std_ci95
    assert lo < d.std < hi


def test_single_value_has_no_std_but_no_crash():
    d = describe([42.0])
    assert (d.n, d.mean, d.min, d.max) == (1, 42.0, 42.0, 42.0)
    assert d.std is None and d.cv is None and d.ci95 is None and d.cv_ci95 is None
    assert d.spread == 0.0


@pytest.mark.parametrize("bad", [[], [1.0, float("nan")], [float("inf"), 2.0], ["x"]])
def test_bad_input_raises_input_error(bad):
    with pytest.raises(InputError):
        describe(bad)


def test_nonpositive_mean_cv_undefined():
    d = describe([-1.0, 1.0])
    assert d.cv is None and d.spread is None and d.std == pytest.approx(math.sqrt(2))


def test_power_cap_arms_match_published(seed, tol):
    case = seed["power_cap_ab"]
    exp = case["expected"]
    for arm in ("200W", "180W"):
        d = describe(case["arms"][arm])
        assert abs(d.mean - exp[f"mean_{arm}"]) <= tol(exp[f"mean_{arm}"])
        assert abs(d.cv - exp[f"cv_{arm}"]) <= tol(exp[f"cv_{arm}"])
        key = f"spread_max_over_min_{arm}"
        assert abs(d.max_over_min - exp[key]) <= tol(exp[key])
