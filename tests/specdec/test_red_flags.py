"""Red flags: one function for measured runs and audit check A1."""

from __future__ import annotations

from tokcaliper.audit.checks import a1_acceptance
from tokcaliper.audit.runner import build_context
from tokcaliper.model.record import Record
from tokcaliper.model.specdec_flags import PREDICTABLE, al_at_ceiling, all_drafts_accepted, predictable_by_construction


def test_all_accepted_and_ceiling():
    flags = predictable_by_construction(al=9.0, k=8, drafted=224, accepted=224)
    assert [f.code for f in flags] == ["all_accepted", "al_at_ceiling"]
    assert all(f.message == PREDICTABLE for f in flags)
    assert "224/224" in flags[0].finding


def test_real_acceptance_raises_nothing():
    assert predictable_by_construction(al=3.02, k=8, drafted=800, accepted=202) == []
    assert not all_drafts_accepted(0, 0)  # nothing drafted is not "all accepted"
    assert not al_at_ceiling(8.99, 8)
    assert al_at_ceiling(8.996, 8, tol=0.005) and al_at_ceiling(8.0, 8, tol=0.005, without_bonus_too=True)


def _a1(**spec):
    rec = Record.model_validate({"tok_s_decode": 100.0, "speculative": spec})
    return a1_acceptance.check(build_context(rec))


def test_audit_a1_uses_the_same_message():
    v = _a1(method="draft", window_k=8, drafted=383, accepted=383)
    assert v.status.value == "fail" and PREDICTABLE in v.summary
    v = _a1(method="DFlash", window_k=56, al=56.0)
    assert v.status.value == "fail" and PREDICTABLE in v.summary
