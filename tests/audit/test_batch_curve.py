"""Seed 003 ``audit_batch_curve``: the batch draws its own curve (A4)."""

from __future__ import annotations

import pytest

from tokcaliper.audit.checks.a4_batch_curve import check_batch
from tokcaliper.model.record import Record
from tokcaliper.model.verdict import Status


def _records(rows: list[dict]) -> list[Record]:
    out = []
    for i, r in enumerate(rows):
        al_range = r.get("al_range") or [None, None]
        out.append(Record.model_validate({
            "submitter": "seed003", "model": {"name": "27B dense"}, "hardware": {"gpu_name": "RTX 5090"},
            "tok_s_decode": r["tok_s"], "notes": r.get("method"),
            "speculative": {"window_k": r["window"], "al": r.get("al"), "al_min": al_range[0],
                            "al_max": al_range[1]},
            "provenance": {"index": i},
        }))
    return out


def test_monotonic_in_window_fails_with_rho(seed_cases):
    # The write-up's reading: tok/s rises monotonically with the window, i.e. Spearman ρ = +1 exactly.
    case = seed_cases["audit_batch_curve"]
    curves = check_batch(_records(case["records"]))
    assert len(curves) == 1 and curves[0].members == [0, 1, 2, 3]
    v = curves[0].verdict
    assert v.status == Status.FAIL
    assert curves[0].rhos["draft window k"] == pytest.approx(1.0)
    # exact p for n = 4: 2 of the 4! = 24 orderings reach |ρ| = 1 → 2/24 = 0.083
    assert ("ρ(tok/s, draft window k) = +1.000 (exact p = 0.083, n = 4): "
            "24 → 1074, 56 → 2104, 256 → 4547, 512 → 4691") in v.arithmetic
    # the most careful record (window 24: temperature 0, best of 6, cool-down) is the slowest
    assert ("most careful record: #3 (temperature 0, best of N, cool-down) at 1074 tok/s; "
            "slowest in group: 1074 tok/s") in v.arithmetic
    assert "the window, not the model" in v.summary and "rigor against magnitude" in v.summary


def test_non_monotonic_batch_does_not_fail(seed_cases):
    rows = [dict(r) for r in seed_cases["audit_batch_curve"]["records"]]
    rates = [r["tok_s"] for r in rows]
    for r, t in zip(rows, [rates[2], rates[3], rates[0], rates[1]]):  # break the ranking
        r["tok_s"] = t
        r.pop("method", None)
    (curve,) = check_batch(_records(rows))
    # window ranks 4 3 2 1 against rate ranks 2 1 4 3: Σd² = 16, ρ = 1 − 6·16/(4·15) = −0.6;
    # |ρ| ≥ 0.6 in 10 of the 24 orderings of 4 → exact p = 0.42
    assert curve.rhos["draft window k"] == pytest.approx(-0.6)
    assert any(a.startswith("ρ(tok/s, draft window k) = -0.600 (exact p = 0.42, n = 4)")
               for a in curve.verdict.arithmetic)
    assert curve.verdict.status == Status.PASS
    assert "no knob draws the curve by itself" in curve.verdict.summary


def test_groups_need_three_records(seed_cases):
    rows = seed_cases["audit_batch_curve"]["records"][:2]
    assert check_batch(_records(rows)) == []
