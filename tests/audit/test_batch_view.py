"""The batch view: records ranked by claim ÷ bound, and findings said once per source."""

from __future__ import annotations

from tokcaliper.audit.runner import audit_records
from tokcaliper.model.record import Record
from tokcaliper.model.verdict import Status


def _rec(i: int, name: str, tok_s: float, file: str = "board.json") -> Record:
    return Record.model_validate({
        "model": {"name": name}, "hardware": {"gpu_name": "RTX 4090", "gpu_count": 1},
        "quantization": {"weights": "Q4_K_M"}, "tok_s_decode": tok_s, "batch_size": 1,
        "provenance": {"importer": "generic", "file": file, "index": i}})


def test_ranked_by_fails_then_claim_over_bound_with_basis():
    recs = [
        _rec(0, "Qwen/Qwen3-30B-A3B", 150),                 # known MoE, well under its bound: not listed
        _rec(1, "SomeLab/Mystery-30B", 60),                 # unknown: ≈ 1.8× the dense bound, warn
        _rec(2, "meta-llama/Llama-3.1-8B-Instruct", 420),   # known dense: ≈ 2× → fail
        _rec(3, "meta-llama/Llama-3.1-8B-Instruct", 830),   # known dense: ≈ 4× → fail, first
        _rec(4, "SomeLab/Mystery-30B", 90),                 # unknown: ≈ 2.7×, warn, above #1
    ]
    rep = audit_records(recs)
    order = [s.label.split(" ")[0] for s in rep.suspects]
    assert order == ["board.json#3", "board.json#2", "board.json#4", "board.json#1"]
    assert [s.rank for s in rep.suspects] == [1, 2, 3, 4]
    top = rep.suspects[0]
    assert top.fails == 1 and 3.5 < top.over_bound < 4.5
    assert "8.03e9 params [all (dense)]" in top.bound and "1008 GB/s" in top.bound
    assert rep.suspects[2].over_bound > rep.suspects[3].over_bound
    assert "dense or MoE unknown" in rep.suspects[2].bound
    assert rep.exit_code == 10


def test_finding_on_every_record_of_a_source_is_said_once():
    recs = [_rec(i, "meta-llama/Llama-3.1-8B-Instruct", 100) for i in range(4)]
    recs.append(_rec(0, "meta-llama/Llama-3.1-8B-Instruct", 100, file="other.json"))
    rep = audit_records(recs)
    a5 = [f for f in rep.source_findings if f.check == "A5"]
    assert len(a5) == 2 and all(f.source.startswith("board.json") and f.records == 4 for f in a5)
    assert {f.summary.split(":")[0] for f in a5} == {"TTFT empty", "output tokens and seconds not published"}
    board = [a for a in rep.records if a.file == "board.json"]
    assert all("A5" in a.source_wide for a in board)
    other = next(a for a in rep.records if a.file == "other.json")
    assert other.source_wide == []  # one record is not a source-wide pattern
    counts = next(c for c in rep.summary if c.check == "A5")
    assert counts.source_wide == 4 and counts.warn == 1
    # the record's status no longer carries the source-wide warning
    for a in board:
        assert a.status == max((v.status for v in a.verdicts if v.check not in a.source_wide),
                               key=[Status.NA, Status.PASS, Status.WARN, Status.FAIL].index)


def test_a_finding_containing_a_semicolon_is_lifted_whole():
    # Issue 24: findings used to be joined with "; " and split again, so A3's warning
    # "… but not called impossible: dense or mixture-of-experts unknown; split mode unknown"
    # came back as two source-wide findings, the second a fragment without its claim.
    recs = []
    for i in range(3):
        r = _rec(i, "SomeLab/Mystery-30B", 150)
        r.hardware.gpu_count = 2  # no split mode: "split mode unknown" joins the uncertainties
        recs.append(r)
    rep = audit_records(recs)
    a3 = [f for f in rep.source_findings if f.check == "A3"]
    assert len(a3) == 1, [f.summary for f in a3]
    text = a3[0].summary
    assert text.startswith("claim is ") and "but not called impossible: " in text
    assert text.endswith("dense or mixture-of-experts unknown; split mode unknown")
    assert a3[0].records == 3 and all("A3" in a.source_wide for a in rep.records)
    v = next(v for v in rep.records[0].verdicts if v.check == "A3")
    assert [f.text for f in v.findings] == [text] and v.findings[0].code == "A3.above_uncertain"
    assert v.inputs["source_wide_findings"] == [text]
    # the ranked list no longer carries a source-wide warning
    assert rep.suspects == []
