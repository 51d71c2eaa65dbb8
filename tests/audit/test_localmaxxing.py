"""The 60 public LocalMaxxing records: import, explain, MoE honesty, fork versions."""

from __future__ import annotations

import json
import re

import pytest

from tokcaliper.audit import audit_files
from tokcaliper.audit.checks.a6_context import classify_version
from tokcaliper.audit.importers import load_records, record_from_row
from tokcaliper.audit.runner import build_context
from tokcaliper.audit.checks import a1_acceptance, a2_power, a3_roofline
from tokcaliper.model.verdict import Status

from .conftest import PUBLIC

LM = PUBLIC / "localmaxxing_records.json"


@pytest.fixture(scope="module")
def report():
    return audit_files([LM])


def test_all_sixty_import():
    raw = json.loads(LM.read_text())["records"]
    res = load_records(LM)
    assert res.problems == []
    assert len(res.records) == len(raw) == 60
    assert [r.tok_s_decode for r in res.records] == [row["observedTokS"] for row in raw]


def test_every_verdict_is_explained(report):
    assert len(report.records) == 60
    for a in report.records:
        assert [v.check for v in a.verdicts] == ["A1", "A2", "A3", "A4", "A5", "A6", "A10", "A11"]
        for v in a.verdicts:
            assert v.summary.strip(), (a.label, v.check)
            if v.status != Status.NA:
                assert v.sources, (a.label, v.check)
            if v.check == "A3" and v.status != Status.NA:
                assert any("roofline =" in line for line in v.arithmetic)


def test_no_moe_called_impossible_for_missing_active(report):
    for a in report.records:
        f = a.facts
        a3 = next(v for v in a.verdicts if v.check == "A3")
        if f["is_moe"] is not False and f["params_active"] is None:
            assert a3.status != Status.FAIL, a.label
            if a3.status == Status.WARN and a3.inputs["claim_over_roofline"] > 1:
                assert "fits only if" in "\n".join(a3.arithmetic)  # the other bound is given


def test_moe_with_unknown_active_gets_both_bounds_not_fail():
    """MiniMax-M2.7 (#44) renamed to a model no table row knows: 229B, activeParamsB null,
    far above the dense bound → warn with both bounds (an unknown model never fails)."""
    row = dict(json.loads(LM.read_text())["records"][44])
    assert row["activeParamsB"] is None
    row["hfId"] = row["model"] = "SomeLab/Unreleased-229B"
    rec, prob = record_from_row(row)
    assert prob is None
    v = a3_roofline.check(build_context(rec))
    assert v.inputs["claim_over_roofline"] > 1.5
    assert v.status == Status.WARN
    assert "not called impossible" in v.summary


def test_known_moe_uses_active_parameters():
    """The real MiniMax-M2.7 (#44): the facts table knows it is MoE, 10B active → A3 uses 10e9, passes."""
    rec, _ = record_from_row(json.loads(LM.read_text())["records"][44])
    v = a3_roofline.check(build_context(rec))
    assert v.inputs["params_basis"] == "active (MoE)" and v.inputs["params_read"] == 10e9
    assert "minimax-m2.7" in " ".join(v.sources)


def test_fork_and_dirty_versions_flagged(report):
    marker = re.compile(r"-dirty|\.d20\d{6}|local|-[1-9]\d*-g[0-9a-f]{7}")
    flagged = 0
    for a in report.records:
        a6 = next(v for v in a.verdicts if v.check == "A6")
        version = a6.inputs["engine_version"] or ""
        if marker.search(version):
            assert a6.status == Status.WARN, version
            assert a6.inputs["version_kind"] == "fork/local", version
            flagged += 1
    assert flagged >= 20


@pytest.mark.parametrize("version,kind", [
    ("b9049-2-g79b2f3239-dirty", "fork/local"),
    ("0.20.1-local", "fork/local"),
    ("b9626-2-g038121ab1", "fork/local"),
    ("0.20.2rc1.dev2+gc51df4300.d20260523", "fork/local"),
    ("b9626-0-g038121ab1", "release"),
    ("0.20.1", "release"),
    ("0.20.1+rocm721", "release"),
    ("", "missing"),
    ("unknown", "missing"),
])
def test_classify_version(version, kind):
    assert classify_version(version)[0] == kind


def test_live_row_shape_with_spec_counts_and_power():
    """The live LocalMaxxing row shape (issue #3) maps spec counters and power."""
    row = {
        "model": {"hfId": "Qwen/Qwen3.6-27B", "params": 27.8, "activeParams": None, "isMoE": False},
        "hardware": {"gpuName": "RTX 5090", "gpuCount": 1},
        "engine": {"engineName": "sglang", "engineVersion": "0.5.9", "quantization": "NVFP4"},
        "tokSOut": 2103.6, "tokSPrefill": None, "ttftMs": None, "gpuPowerWatts": [99, 100], "batchSize": 1,
        "engineFlags": {"commandSnippet": "python -m sglang.launch_server --speculative-num-draft-tokens 56",
                        "specMethod": "dflash", "specNumTokens": 56, "specDraftTokens": 383,
                        "specAcceptedTokens": 383, "specMeanAcceptedLength": None, "prefixCaching": True,
                        "concurrency": 1},
        "notes": "n-gram fill\x07 (100% acceptance)",
    }
    rec, prob = record_from_row(row)
    assert prob is None
    assert rec.model.is_moe is False and rec.model.params_total == pytest.approx(27.8e9)
    assert rec.notes == row["notes"]
    ctx = build_context(rec)
    a1 = a1_acceptance.check(ctx)
    assert a1.status == Status.FAIL and "383/383" in a1.summary
    assert a2_power.check(ctx).status == Status.FAIL
    assert a3_roofline.check(ctx).status == Status.FAIL


def test_exit_code_follows_fails(report):
    any_fail = any(a.status == Status.FAIL for a in report.records) or any(
        c.status == Status.FAIL for c in report.curves)
    assert report.exit_code == (10 if any_fail else 12 if report.unchecked else 0)
    counts = {c.check: c for c in report.summary}
    assert sum(1 for a in report.records for v in a.verdicts if v.check == "A6" and v.status == Status.WARN) \
        == counts["A6"].warn
