"""Acceptance metrics from counter differences: the five definitions, written out."""

from __future__ import annotations

import pytest

from tokcaliper.model.specdec import DEFINITIONS, SpecCounts, acceptance_metrics


def test_definitions_hold_on_counts():
    m = acceptance_metrics(SpecCounts(drafts=40, draft_tokens=200, accepted=130, accepted_per_pos=[38, 33, 27, 20, 12]))
    assert m.al == pytest.approx(1 + 130 / 40) == pytest.approx(4.25)
    assert m.acceptance_rate == pytest.approx(0.65)
    assert m.k_eff == pytest.approx(5.0)
    assert m.tokens_per_position == pytest.approx(4.25 / 6) == pytest.approx((40 + 130) / (40 + 200))
    assert m.per_position == pytest.approx([0.95, 0.825, 0.675, 0.5, 0.3])
    assert "1 + 130/40 = 4.2500" in m.arithmetic[0]


def test_nothing_drafted_gives_none_not_division_by_zero():
    m = acceptance_metrics(SpecCounts(drafts=0, draft_tokens=0, accepted=0))
    assert m.al is None and m.acceptance_rate is None and m.k_eff is None and m.tokens_per_position is None
    assert "AL undefined" in m.arithmetic[0]


def test_impossible_counts_raise():
    with pytest.raises(ValueError, match="accepted 11 > drafted 10"):
        acceptance_metrics(SpecCounts(drafts=2, draft_tokens=10, accepted=11))


def test_every_definition_is_named():
    assert [n for n, _ in DEFINITIONS] == ["AL", "acceptance rate", "per-position acceptance", "k_eff", "AL/(k+1)"]
