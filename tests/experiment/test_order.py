"""Run orders: balanced counts, the documented patterns, reproducible random blocks."""

from collections import Counter

import pytest

from tokcaliper.errors import InputError
from tokcaliper.experiment.order import ORDERS, run_order, schedule


def _arms(order):
    return "".join(arm for _, arm in order)


def test_patterns():
    assert _arms(run_order(["A", "B"], 3, "alternate")) == "ABABAB"
    assert _arms(run_order(["A", "B"], 4, "abba")) == "ABBAABBA"
    assert _arms(run_order(["A", "B"], 3, "blocked")) == "AAABBB"
    assert _arms(run_order(["A", "B", "C"], 2, "abba")) == "ABCCBA"


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("arms,n", [(["A", "B"], 5), (["A", "B", "C"], 4), (["x", "y"], 1)])
def test_balanced_counts_and_positions(order, arms, n):
    seq = run_order(arms, n, order, seed=11)
    assert [p for p, _ in seq] == list(range(len(arms) * n))
    assert Counter(a for _, a in seq) == {a: n for a in arms}


def test_abba_cancels_a_linear_drift():
    seq = run_order(["A", "B"], 4, "abba")
    pos = {a: sum(p for p, x in seq if x == a) for a in "AB"}
    assert pos["A"] == pos["B"]  # equal mean position → a linear drift cancels
    blocked = run_order(["A", "B"], 4, "blocked")
    assert sum(p for p, x in blocked if x == "A") != sum(p for p, x in blocked if x == "B")


def test_random_blocks_reproducible_from_seed():
    one = run_order(["A", "B", "C"], 6, "random-blocks", seed=42)
    assert one == run_order(["A", "B", "C"], 6, "random-blocks", seed=42)
    others = {_arms(run_order(["A", "B", "C"], 6, "random-blocks", seed=s)) for s in range(10)}
    assert len(others) > 1  # the seed matters
    # every block of len(arms) holds each arm once
    s = _arms(one)
    assert all(sorted(s[i:i + 3]) == ["A", "B", "C"] for i in range(0, len(s), 3))
    with pytest.raises(InputError, match="seed"):
        run_order(["A", "B"], 2, "random-blocks")


@pytest.mark.parametrize("args,msg", [
    ((["A"], 3, "alternate"), "at least 2 arms"),
    ((["A", "A"], 3, "alternate"), "listed twice"),
    ((["A", "B"], 0, "alternate"), "≥ 1"),
    ((["A", "B"], 2, "zigzag"), "order must be one of"),
])
def test_bad_orders(args, msg):
    with pytest.raises(InputError, match=msg):
        run_order(*args)


def test_schedule_switches_and_warmups():
    steps = schedule(run_order(["A", "B"], 2, "abba"), warmup_runs=1)
    kinds = [(s.kind, s.arm) for s in steps]
    assert kinds == [("switch", "A"), ("warmup", "A"), ("run", "A"),
                     ("switch", "B"), ("warmup", "B"), ("run", "B"), ("run", "B"),
                     ("switch", "A"), ("warmup", "A"), ("run", "A")]
    assert [s.position for s in steps if s.kind == "run"] == [0, 1, 2, 3]
