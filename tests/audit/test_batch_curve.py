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
    case = seed_cases["audit_batch_curve"]
    curves = check_batch(_records(case["records"]))
    assert len(curves) == 1
    v = curves[0].verdict
    assert case["expected"]["tok_s_monotonic_in_window"] is True
    assert v.status == Status.FAIL
    assert curves[0].rhos["draft window k"] == pytest.approx(1.0)
    assert any("ρ(tok/s, draft window k) = +1.000" in a for a in v.arithmetic)
    # the most careful record (temperature 0, best of 6, cool-down) is the slowest
    assert "rigor against magnitude" in v.summary


def test_non_monotonic_batch_does_not_fail(seed_cases):
    rows = [dict(r) for r in seed_cases["audit_batch_curve"]["records"]]
    rates = [r["tok_s"] for r in rows]
    for r, t in zip(rows, [rates[2], rates[3], rates[0], rates[1]]):  # break the ranking
        r["tok_s"] = t
        r.pop("method", None)
    v = check_batch(_records(rows))[0].verdict
    assert v.status != Status.FAIL
    assert abs(check_batch(_records(rows))[0].rhos["draft window k"]) < 0.9


def test_groups_need_three_records(seed_cases):
    rows = seed_cases["audit_batch_curve"]["records"][:2]
    assert check_batch(_records(rows)) == []
