"""One reading of a record's rate and of the realistic AL, shared by A3, A4, A5, A7 and A11."""

from __future__ import annotations

import pytest

from tokcaliper.audit.checks import a3_roofline, a11_multiplier
from tokcaliper.audit.claims import realistic_al, record_rate
from tokcaliper.audit.constants import DFLASH_PUBLISHED_AL, REALISTIC_AL
from tokcaliper.audit.diff import diff_records
from tokcaliper.audit.runner import build_context
from tokcaliper.model.record import Record, SpeculativeInfo


def _rec(**kw) -> Record:
    return Record.model_validate(kw)


@pytest.mark.parametrize("fields,claimed,per_stream,throughput", [
    ({"tok_s_decode": 40.0, "tok_s_aggregate": 600.0, "concurrency": 16}, 40.0, 40.0, 600.0),
    ({"tok_s_aggregate": 600.0, "concurrency": 16}, 600.0, None, 600.0),
    ({"tok_s_aggregate": 61.0, "concurrency": 1}, 61.0, 61.0, 61.0),
    ({"tok_s_aggregate": 61.0, "batch_size": 1, "concurrency": 4}, 61.0, 61.0, 61.0),
    ({"tok_s_decode": 55.0}, 55.0, 55.0, 55.0),
    ({}, None, None, None),
])
def test_record_rate_uses(fields, claimed, per_stream, throughput):
    rec = _rec(**fields)
    assert record_rate(rec) == claimed == record_rate(rec, "claimed")
    assert record_rate(rec, "per_stream") == per_stream
    assert record_rate(rec, "throughput") == throughput
    with pytest.raises(ValueError, match="unknown rate use"):
        record_rate(rec, "fastest")  # type: ignore[arg-type]


def test_diff_ratio_uses_the_claimed_rate():
    a = _rec(tok_s_aggregate=100.0, concurrency=8)
    b = _rec(tok_s_decode=25.0, tok_s_aggregate=200.0, concurrency=8)
    assert diff_records(a, b).ratio_b_over_a == pytest.approx(25.0 / 100.0)


@pytest.mark.parametrize("spec,al,terms", [
    ({}, 5.46, 1),
    ({"window_k": 3}, 4, 2),
    ({"window_k": 56, "al": 4.2}, 4.2, 3),
    ({"window_k": 16, "al_min": 6.1, "al_max": 7.0}, 5.46, 3),
])
def test_realistic_al_is_the_smallest_term(spec, al, terms):
    r = realistic_al(SpeculativeInfo(**spec))
    assert r.al == pytest.approx(al) and len(r.terms) == terms
    assert r.terms[0] == "5.46 (DFlash GSM8K)" and r.arithmetic.endswith(f"= {al:g}")


def test_realistic_al_is_dflash_gsm8k():
    assert REALISTIC_AL == DFLASH_PUBLISHED_AL["GSM8K"] == max(DFLASH_PUBLISHED_AL.values())


def test_a3_and_a11_use_the_same_realistic_al():
    rec = _rec(model={"name": "Qwen3.6-27B", "params_total": 27.8e9, "is_moe": False},
               hardware={"gpu_name": "RTX 5090"}, quantization={"bytes_per_param": 0.5},
               tok_s_decode=300.0, batch_size=1, speculative={"method": "DFlash", "window_k": 3})
    ctx = build_context(rec)
    v3, v11 = a3_roofline.check(ctx), a11_multiplier.check(ctx)
    assert v3.inputs["al_realistic"] == v11.inputs["ceiling"] == 4
    line = realistic_al(rec.speculative).arithmetic
    assert f"realistic AL = {line}" in v3.arithmetic
    assert any(f"ceiling = {line}×" in a for a in v11.arithmetic)
