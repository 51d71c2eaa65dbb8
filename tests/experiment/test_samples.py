"""Samples for compare: comma lists, mean,sd,n and CSV with arm,value[,pair][,position][,metric]."""

import pytest

from tokcaliper.errors import InputError
from tokcaliper.experiment.order import run_order
from tokcaliper.experiment.samples import (
    parse_number_list,
    parse_samples_csv,
    parse_summary_stats,
    samples_from_runs,
)


def test_lists_and_stats():
    assert parse_number_list("754.3, 770.0,639.3", "--a") == [754.3, 770.0, 639.3]
    assert parse_summary_stats("453.2,6.9,4", "--a-stats") == (453.2, 6.9, 4)
    for bad in ("", "1,,2", "1,x", "1,nan"):
        with pytest.raises(InputError, match="--a"):
            parse_number_list(bad, "--a")
    for bad, msg in (("1,2", "mean,sd,n"), ("1,2,1", "n must be ≥ 2"), ("1,2,x", "integer"),
                     ("1,-2,4", "sd must be ≥ 0")):
        with pytest.raises(InputError, match=msg):
            parse_summary_stats(bad, "--a-stats")


def test_paired_csv_in_run_order():
    text = "arm,value,pair,position\nB,2.0,p2,3\nA,1.0,p1,0\nB,1.1,p1,1\nA,2.2,p2,2\n"
    t = parse_samples_csv(text, arms=("A", "B"))
    (s,) = t.metrics
    assert s.paired and s.pairs == ["p1", "p2"]
    assert s.a == [1.0, 2.2] and s.b == [1.1, 2.0]
    # default control: the arm named A, though B is seen first in the file (issue 17 item 6)
    t = parse_samples_csv(text)
    assert t.metrics[0].names == ("A", "B") and t.control_reason == "the arm named 'A'"


def test_unpaired_csv_ordered_by_position():
    text = "value,arm,position\n3,A,2\n1,A,0\n5,B,1\n"
    (s,) = parse_samples_csv(text, arms=("A", "B")).metrics
    assert not s.paired and s.a == [1.0, 3.0] and s.b == [5.0]


def test_metric_column_splits():
    text = "arm,value,metric\nA,1,m1\nB,2,m1\nA,3,m2\nB,4,m2\n"
    t = parse_samples_csv(text)
    assert [m.metric for m in t.metrics] == ["m1", "m2"]


@pytest.mark.parametrize("text,msg", [
    ("", "empty"),
    ("arm,val\nA,1\n", "unknown column 'val'"),
    ("arm,pair\nA,1\n", "needs the columns arm and value"),
    ("arm,value\nA,1\nB,x\n", "line 3 value: 'x' is not a number"),
    ("arm,value\nA,1\nB,2\nC,3\n", "3 arm(s)"),
    ("arm,value,pair\nA,1,1\nB,2,1\nA,3,2\n", "pair '2' has no run of arm 'B'"),
    ("arm,value,pair\nA,1,1\nA,2,1\nB,3,1\n", "line 3: pair '1' has two runs of arm 'A'"),
    ("arm,value\nA,1,5\n", "line 2: 3 fields"),
    ("arm,value\n", "no runs"),
])
def test_bad_csv(text, msg):
    with pytest.raises(InputError) as e:
        parse_samples_csv(text, source="x.csv")
    assert msg in str(e.value)


def test_unknown_arm():
    with pytest.raises(InputError, match="no arm 'C'"):
        parse_samples_csv("arm,value\nA,1\nB,2\n", arms=("A", "C"))


def test_stored_runs_pair_by_block():
    order = run_order(["A", "B"], 4, "abba")  # A B | B A | A B | B A
    value = {0: 1.0, 1: 2.0, 2: 20.0, 3: 10.0, 4: 100.0, 5: 200.0, 6: 2000.0, 7: 1000.0}
    runs = [(p, arm, value[p]) for p, arm in order if p != 4]  # position 4 (A) failed
    s = samples_from_runs(runs, ("A", "B"), "abba", 2)
    assert s.paired and s.pairs == ["block 0", "block 1", "block 3"]
    assert s.a == [1.0, 10.0, 1000.0] and s.b == [2.0, 20.0, 2000.0]
    three = run_order(["A", "B", "C"], 2, "random-blocks", seed=1)
    s3 = samples_from_runs([(p, a, float(p)) for p, a in three], ("C", "A"), "random-blocks", 3)
    assert len(s3.a) == 2 and all(p // 3 == q // 3 for p, q in zip(s3.a, s3.b))
    blocked = samples_from_runs([(p, a, float(p)) for p, a in run_order(["A", "B"], 3, "blocked")],
                                ("A", "B"), "blocked", 2)
    assert not blocked.paired and blocked.a == [0.0, 1.0, 2.0]
    with pytest.raises(InputError, match="no block"):
        samples_from_runs([(0, "A", 1.0), (3, "B", 1.0)], ("A", "B"), "alternate", 2)
