"""Server-family readers: vLLM and SGLang exposition text, a vLLM log, llama.cpp/SGLang responses."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokcaliper.servers.counters import counter_delta, parse_metrics
from tokcaliper.model.families import detect_server_kind, request_acceptance, spec_counts
from tokcaliper.model.families import sglang, vllm
from tokcaliper.model.specdec import acceptance_metrics, pooled_request_acceptance

DATA = Path(__file__).parent / "data"


def _counters(name: str) -> dict[str, float]:
    return parse_metrics((DATA / name).read_text())[0]


def test_vllm_counter_delta_summed_over_engines():
    before, after = _counters("vllm_metrics_before.txt"), _counters("vllm_metrics_after.txt")
    delta = counter_delta(before, after)
    assert detect_server_kind(delta) == "vllm"
    counts = spec_counts(delta)
    # engine 0: 400/1200/700 (per position 300/250/150); engine 1: 100/300/150 (70/50/30)
    assert (counts.drafts, counts.draft_tokens, counts.accepted) == (500, 1500, 850)
    assert counts.accepted_per_pos == [370, 300, 180]
    m = acceptance_metrics(counts)
    assert m.al == pytest.approx(1 + 850 / 500) == pytest.approx(2.7)
    assert m.acceptance_rate == pytest.approx(850 / 1500)
    assert m.k_eff == pytest.approx(3.0)
    assert m.tokens_per_position == pytest.approx(m.al / (m.k_eff + 1)) == pytest.approx(0.675)
    assert m.per_position == pytest.approx([0.74, 0.60, 0.36])
    assert sum(m.per_position) == pytest.approx(m.al - 1)  # Σ per-position acceptance = AL − 1


def test_vllm_snapshot_is_not_a_run():
    # A single snapshot is cumulative history; the reader computes what it is given, the delta is the run.
    hist = acceptance_metrics(spec_counts(_counters("vllm_metrics_after.txt")))
    run = acceptance_metrics(spec_counts(counter_delta(_counters("vllm_metrics_before.txt"),
                                                       _counters("vllm_metrics_after.txt"))))
    assert hist.al == pytest.approx(1 + 2950 / 1700) and hist.al != pytest.approx(run.al)


def test_sglang_gauges_flagged_not_window_scoped():
    counters, gauges = parse_metrics((DATA / "sglang_metrics.txt").read_text())
    assert detect_server_kind(counters) == "sglang" and detect_server_kind(gauges) == "sglang"
    assert spec_counts(counters) is None  # no counters to difference
    g = sglang.gauges(gauges)
    assert g.accept_length == {"dp_rank=0": 3.21, "dp_rank=1": 2.98}
    assert g.accept_rate == {"dp_rank=0": 0.55, "dp_rank=1": 0.5}
    assert g.window_scoped is False and "per worker" in g.note
    assert sglang.gauges({"sglang:num_running_reqs": 1.0}) is None


def test_sglang_meta_info_summed_not_averaged():
    short = request_acceptance("sglang", {"completion_tokens": 10, "spec_verify_ct": 8}, 0)
    long = request_acceptance("sglang", {"completion_tokens": 1000, "spec_verify_ct": 250,
                                         "spec_accept_length": 4.0, "spec_num_correct_drafts": 750,
                                         "spec_num_proposed_drafts": 1000}, 0)
    assert short.al == pytest.approx(1.25) and long.al == pytest.approx(4.0)
    assert long.acceptance_rate == pytest.approx(0.75) and long.engine_al == 4.0
    pooled = pooled_request_acceptance([short, long])
    assert pooled.al == pytest.approx(1010 / 258)  # 3.915, not the mean of ratios 2.625
    assert request_acceptance("sglang", {"completion_tokens": 10}, 10) is None


def test_llamacpp_timings_per_request():
    r = request_acceptance("llamacpp", {"predicted_n": 256, "draft_n": 226, "draft_n_accepted": 226}, 256)
    assert r.verify_steps == 30 and r.al == pytest.approx(256 / 30) and r.acceptance_rate == 1.0
    assert request_acceptance("llamacpp", {"predicted_n": 20}, 20) is None
    a = request_acceptance(None, {"predicted_n": 100, "draft_n": 80, "draft_n_accepted": 60}, 0)
    b = request_acceptance(None, {"predicted_n": 10, "draft_n": 8, "draft_n_accepted": 2}, 0)
    p = pooled_request_acceptance([a, b])
    assert (p.output_tokens, p.verify_steps, p.draft_tokens, p.accepted) == (110, 48, 88, 62)
    assert p.al == pytest.approx(110 / 48) and p.acceptance_rate == pytest.approx(62 / 88)


def test_vllm_log_lines_summed():
    windows = vllm.parse_log((DATA / "vllm_spec.log").read_text())
    assert [w.line for w in windows] == [3, 5, 6]
    assert [(w.accepted, w.drafted) for w in windows] == [(700, 1500), (400, 750), (400, 900)]
    assert windows[0].mean_acceptance_length == 2.40 and windows[0].per_position == [0.7, 0.5, 0.2]
    assert windows[0].drafts == pytest.approx(500) and windows[1].drafts == pytest.approx(250)
    # 2.333… logged as 0.667 + 0.433 + 0.233: drafts recovered to within the rounding, 0.03%
    assert windows[2].drafts == pytest.approx(300, rel=3e-4)
    m = acceptance_metrics(vllm.counts_from_log(windows))
    assert m.counts.accepted == 1500 and m.counts.draft_tokens == 3150
    assert m.al == pytest.approx(1 + 1500 / 1050, abs=1e-3)
    assert m.k_eff == pytest.approx(3.0, abs=1e-3)
    assert m.acceptance_rate == pytest.approx(1500 / 3150)


def test_vllm_old_log_format_gives_rate_only():
    line = ("INFO 01-01 00:00:00 metrics.py:1 SpecDecoding metrics: Draft acceptance rate: 50.0%, "
            "Accepted: 10 tokens, Drafted: 20 tokens")
    windows = vllm.parse_log(line)
    assert len(windows) == 1 and windows[0].drafts is None and windows[0].mean_acceptance_length is None
    assert vllm.counts_from_log(windows) is None


def test_detect_kind_from_llamacpp_names():
    assert detect_server_kind(["llamacpp:spec_decode_num_drafts_total", "x"]) == "llamacpp"
    assert detect_server_kind(["process_cpu_seconds_total"]) is None
