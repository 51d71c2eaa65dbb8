"""The draft-window table (M7/M8) on the published reference figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokcaliper.errors import InputError
from tokcaliper.specdec.table import NOT_BEST_BUY, KInput, window_table
from tokcaliper.specdec.table_file import parse_tables, tables_from_data

DATA = Path(__file__).parent / "data"


def _load(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def test_reference_table_reproduces_published_figures():
    ref = _load("spec_window_table.json")
    [(name, rows)] = tables_from_data(ref, "spec_window_table.json")
    t = window_table(rows, name)
    exp = ref["expected"]
    assert t.best_k_by_al == exp["best_by_al"] == 7
    assert t.best_k_by_al_per_position == exp["best_by_al_per_position"] == 5
    by_k = {r.k: r for r in t.rows}
    for published in ref["rows"]:
        # published AL/(k+1) is rounded to 3 decimals (from unrounded AL: allow one unit in the last place)
        assert by_k[published["k"]].al_per_position == pytest.approx(published["al_per_position"], abs=1.1e-3)
        assert by_k[published["k"]].al_cv == published["al_cv"]
    assert round(by_k[7].relative_to_best, 2) == exp["k5_over_k7_per_position"]
    assert round(by_k[10].relative_to_best, 2) == exp["k5_over_k10_per_position"]
    [w] = t.warnings
    assert w.code == NOT_BEST_BUY.code == "not-best-buy"
    assert w.message.startswith("the highest reading is not the best buy: k=7 has the highest AL (5.177)")
    assert "k=5 yields ×1.22 its tokens per verified position (0.789 vs 0.647)" in w.message
    assert t.uncertainty is None  # every row carries its CV


@pytest.mark.parametrize("group,best_al", [("thinking_on", 8), ("thinking_off", 7)])
def test_published_mtp_table(group, best_al):
    tables = dict(tables_from_data(_load("golden_al_qwen35_mtp.json"), "golden"))
    assert set(tables) == {"al_by_k.thinking_on", "al_by_k.thinking_off"}
    t = window_table(tables[f"al_by_k.{group}"])
    assert [r.k for r in t.rows] == list(range(1, 9))
    assert t.best_k_by_al == best_al
    # k=1 verifies 2 positions for AL ≈ 1.93: the best buy per position by far
    assert t.best_k_by_al_per_position == 1
    best = t.rows[0].al_per_position
    assert best == pytest.approx(t.rows[0].al / 2)
    assert t.rows[best_al - 1].relative_to_best == pytest.approx(best / (t.rows[best_al - 1].al / (best_al + 1)))
    assert [w.code for w in t.warnings] == [NOT_BEST_BUY.code]
    assert t.warnings[0].message.startswith(f"the highest reading is not the best buy: k={best_al} has the highest AL")
    named = window_table(tables[f"al_by_k.{group}"], f"al_by_k.{group}")  # a file's tables name theirs
    assert f"best buy (table al_by_k.{group}): k={best_al} has the highest AL" in named.warnings[0].message
    assert "no CV" in t.uncertainty


def test_no_warning_when_the_highest_is_also_the_best_buy():
    # thinking_off k=7 (4.73) and k=8 (4.71): k=7 wins both ways
    g = _load("golden_al_qwen35_mtp.json")["al_by_k"]["thinking_off"]
    t = window_table([KInput(k=7, al=g["7"]), KInput(k=8, al=g["8"])])
    assert t.best_k_by_al == t.best_k_by_al_per_position == 7 and t.warnings == []


def test_failed_k_is_a_row_with_its_reason_and_no_best():
    t = window_table([KInput(k=5, al=4.733), KInput(k=64, failed="KV cache too small"), KInput(k=7, al=5.177)])
    assert [r.k for r in t.rows] == [5, 7, 64]
    assert t.rows[2].failed == "KV cache too small" and t.rows[2].al is None
    assert t.best_k_by_al == 7 and t.best_k_by_al_per_position == 5


def test_welch_between_neighbours_when_samples_exist():
    t = window_table([
        KInput(k=5, al_samples=[4.60, 4.70, 4.95, 4.68, 4.73], throughput_samples=[700, 760, 640, 720, 690]),
        KInput(k=7, al_samples=[5.14, 5.20, 5.18, 5.16, 5.21], throughput_samples=[690, 650, 770, 700, 720]),
    ])
    r5, r7 = t.rows
    assert r5.welch_al_vs_prev is None and r7.welch_al_vs_prev is not None
    from scipy import stats

    ref = stats.ttest_ind([4.60, 4.70, 4.95, 4.68, 4.73], [5.14, 5.20, 5.18, 5.16, 5.21], equal_var=False)
    assert r7.welch_al_vs_prev.t == pytest.approx(ref.statistic) and r7.welch_al_vs_prev.p < 0.01
    assert r7.welch_throughput_vs_prev.p > 0.5  # throughput cannot tell these apart
    assert r5.al_n == 5 and r5.al_cv == pytest.approx(stats.variation([4.60, 4.70, 4.95, 4.68, 4.73], ddof=1))


def test_red_flag_at_ceiling_row():
    t = window_table([KInput(k=8, al=9.0), KInput(k=3, al=2.5)])
    assert any("predictable by construction" in n for n in t.rows[1].notes)


def test_csv_and_yaml_files_and_bad_input():
    csv_text = "k,AL,failed\n5,4.733,\n7,5.177,\n10,,draft window below block size\n"
    [(_, rows)] = parse_tables(csv_text, "t.csv")
    t = window_table(rows)
    assert t.best_k_by_al == 7 and t.rows[-1].failed == "draft window below block size"
    [(_, rows)] = parse_tables("5: 4.733\n7: 5.177\n10: 4.746\n", "t.yaml")
    assert window_table(rows).best_k_by_al_per_position == 5
    with pytest.raises(InputError, match="t.csv line 2"):
        parse_tables("k,al\nfive,4.7\n", "t.csv")
    with pytest.raises(InputError, match=r"t.json.*k=5.*give an AL"):
        parse_tables('{"5": {"al_cv": 0.1}}', "t.json")
    with pytest.raises(InputError, match="no table of AL per k"):
        parse_tables('{"a": "b"}', "t.json")
    with pytest.raises(InputError, match="k=5 is given more than once"):
        window_table([KInput(k=5, al=2.0), KInput(k=5, al=3.0)])


def test_a_window_the_server_does_not_honour_is_noted():
    from tokcaliper.specdec.table import KInput, window_table

    t = window_table([KInput(k=2, al_samples=[3.6, 3.7], k_eff=5.1), KInput(k=4, al_samples=[3.0, 3.1], k_eff=3.9)])
    notes = {r.k: r.notes for r in t.rows}
    assert any("k_eff = 5.10 > k = 2" in n for n in notes[2])
    assert any("impossible" in n for n in notes[2])
    assert not any("k_eff" in n for n in notes[4])
