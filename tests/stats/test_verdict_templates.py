"""Every verdict sentence agrees with the figures beside it (issue 26 item 1).

Each template is checked against its own numbers: a CI inside the margin is
never "not inside", a tie is never a win, an undefined statistic is printed as
undefined with its reason, an adjusted and an unadjusted p are labelled and one
governs, and the closing line names the arm the figures favour.
"""

from __future__ import annotations

import re

import pytest

from tokcaliper.specdec.table import NOT_BEST_BUY, KInput, window_table
from tokcaliper.stats.ab import analyze_samples, compare_metrics
from tokcaliper.stats.closing import closing_lines
from tokcaliper.stats.equivalence import TostResult
from tokcaliper.stats.verdict_gate import gate

_NUM = r"([0-9]+(?:\.[0-9]+)?)"


def _tost(ci: tuple[float, float], p: float, margin: float = 0.10) -> TostResult:
    return TostResult(margin=margin, bounds=(1 - margin, 1 + margin), ratio=(ci[0] + ci[1]) / 2,
                      t_low=5.0, p_low=p, t_upp=-3.0, p_upp=p, df=3.0, p=p, alpha=0.05,
                      equivalent=p < 0.05, ci=ci)


@pytest.mark.parametrize("ci,raw_p,adj_p", [
    ((1.027, 1.080), 0.029, 0.088),   # the A/A experiment of the issue: inside, adjusted p ≥ α
    ((0.910, 0.945), 0.010, 0.030),   # inside, both p < α
    ((0.850, 1.020), 0.200, 0.400),   # not inside
    ((1.050, 1.150), 0.300, 0.600),   # not inside (upper bound beyond the margin)
])
def test_tost_sentence_reads_inside_from_the_ci(ci, raw_p, adj_p):
    """'inside' iff the printed CI lies within the printed bounds, whatever the adjusted p says."""
    g = gate(ratio=(ci[0] + ci[1]) / 2, ci=(ci[0] - 0.05, ci[1] + 0.05), p=0.5, alpha=0.05,
             higher_is_better=True, tost=_tost(ci, raw_p), tost_p=adj_p)
    [line] = [r for r in g.reasons if r.startswith("TOST")]
    m = re.search(rf"CI \[{_NUM} … {_NUM}\] (lies inside|is not inside) \[{_NUM}, {_NUM}\]", line)
    assert m, line
    lo, hi, word, blo, bhi = float(m[1]), float(m[2]), m[3], float(m[4]), float(m[5])
    inside = blo <= lo and hi <= bhi
    assert (word == "lies inside") == inside, line
    # both p-values are named, and the adjusted one is the one that governs
    assert "Holm-adjusted p" in line and "governs" in line and "unadjusted p" in line
    assert (g.verdict == "equivalent") == (adj_p < 0.05)


def test_tost_sentence_without_correction_names_one_p():
    g = gate(ratio=1.05, ci=(1.0, 1.1), p=0.5, alpha=0.05, higher_is_better=True,
             tost=_tost((1.027, 1.080), 0.029))
    [line] = [r for r in g.reasons if r.startswith("TOST")]
    assert "Holm" not in line and "lies inside" in line and g.verdict == "equivalent"


def test_holm_labels_the_deciding_and_the_tost_p():
    """With several metrics the verdict names the adjusted p, and the TOST sentence both."""
    a = [100.0, 101.0, 99.5, 100.5, 100.2, 99.8]
    b = [103.0, 104.2, 102.9, 103.5, 103.8, 102.7]
    an = [analyze_samples(a, b, ("A", "B"), paired=True, metric=m, higher_is_better=True,
                          margin=0.10) for m in ("aggregate_output_tok_s", "ttft_p50_ms", "itl_p50_ms")]
    first = compare_metrics(an).metrics[0]
    assert "(Holm, 3 metrics)" in first.report.summary or "Holm" in " ".join(first.gate.reasons)
    tline = next(r for r in first.gate.reasons if r.startswith("TOST"))
    assert "Holm-adjusted p" in tline and "unadjusted p" in tline


def test_a_tie_on_tokens_per_position_is_not_a_better_buy():
    """Self-drafting: AL = k + 1 at every k, AL/(k+1) = 1.000 for all — no winner, no warning."""
    t = window_table([KInput(k=2, al_samples=[3.0, 3.0]), KInput(k=4, al_samples=[5.0, 5.0])])
    assert t.warnings == []
    assert not any("not the best buy" in x for x in t.arithmetic)
    assert any("tie on AL/(k+1)" in x for x in t.arithmetic)


def test_a_real_difference_still_warns():
    t = window_table([KInput(k=2, al_samples=[2.9, 3.0]), KInput(k=4, al_samples=[3.4, 3.5])])
    assert [w.code for w in t.warnings] == [NOT_BEST_BUY.code]
    assert t.warnings[0].message.startswith("the highest reading is not the best buy")


def test_welch_of_two_zero_variance_samples_is_undefined_with_its_reason():
    t = window_table([KInput(k=2, al_samples=[3.0, 3.0]), KInput(k=4, al_samples=[5.0, 5.0])])
    row = next(r for r in t.rows if r.k == 4)
    assert row.welch_al_vs_prev is None
    assert any("undefined" in n and "zero variance" in n for n in row.notes)


@pytest.mark.parametrize("b_scale,winner", [(1.3, "B"), (0.7, "A")])
def test_closing_line_names_the_arm_the_figures_favour(b_scale, winner):
    a = [100.0, 102.0, 98.0, 101.0, 99.0, 100.5]
    b = [x * b_scale + d for x, d in zip(a, (0.5, -0.4, 0.3, -0.2, 0.1, 0.0))]
    an = analyze_samples(a, b, ("A", "B"), paired=True, metric="aggregate_output_tok_s",
                         higher_is_better=True)
    result, nxt = closing_lines(an)
    loser = "A" if winner == "B" else "B"
    assert result.startswith(f"result: {winner} beats {loser} on aggregate_output_tok_s")
    assert "— decided" in result and nxt.startswith("next: stop")
    sign = "+" if b_scale > 1 else "-"
    assert f"B reads {sign}" in result


def test_closing_line_of_a_tie_is_not_a_win_and_sizes_nothing_it_cannot_reach():
    a = [100.0, 102.0, 98.0, 101.0, 99.0]
    b = [100.2, 101.7, 98.3, 100.8, 99.1]   # within the ±1% noise band
    an = analyze_samples(a, b, ("A", "B"), paired=True, metric="aggregate_output_tok_s",
                         higher_is_better=True)
    result, nxt = closing_lines(an)
    assert result.startswith("result: not decided") and "beats" not in result
    assert "no number of pairs calls it" in nxt


def test_closing_next_step_is_sized_to_the_observed_change_not_the_file_effect():
    """An observed +20% with a file effect of 5% is sized for 20%, not 5% (issue 26)."""
    a = [100.0, 130.0, 80.0, 110.0]
    b = [125.0, 128.0, 104.0, 121.0]
    an = analyze_samples(a, b, ("A", "B"), paired=True, metric="aggregate_output_tok_s",
                         higher_is_better=True, effect=0.05)
    result, nxt = closing_lines(an)
    assert an.verdict == "inconclusive" and result.startswith("result: not decided")
    observed = abs(an.decision_ratio - 1)
    assert observed > 0.15 and f"observed ±{100 * observed:.1f}%" in nxt and "±5.0%" not in nxt


def test_sequential_closing_names_the_arm_and_its_direction():
    """--until-decided said 'faster by 76.4%' without the arm; the closing line names it."""
    import math

    from tokcaliper.stats.closing import sequential_closing
    from tokcaliper.stats.sequential import sequential_step

    logs = [math.log(1.76 + d) for d in (0.01, -0.02, 0.015, -0.01, 0.0, 0.02, -0.015, 0.01)]
    sq = sequential_step(logs, max_pairs=20, effect=0.05)
    assert sq.decided and sq.verdict == "faster"
    result, nxt = sequential_closing(sq, ("t1", "t2"), "aggregate_output_tok_s")
    assert result.startswith("result (sequential rule, governs): t2 beats t1 on aggregate_output_tok_s")
    assert "t2 reads +7" in result and nxt.startswith("next: stop")
    sq_slow = sequential_step([-x for x in logs], max_pairs=20, effect=0.05)
    result, _ = sequential_closing(sq_slow, ("t1", "t2"), "aggregate_output_tok_s")
    assert "t1 beats t2" in result and "t2 reads -" in result
