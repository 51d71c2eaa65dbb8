"""benchmarks/scale_out.py's verdicts: the TTFT targets of issue 23 and the largest sustained rate."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location(
    "scale_out", Path(__file__).resolve().parents[2] / "benchmarks" / "scale_out.py")
scale_out = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scale_out)


def _run(layout: str, c: int, ttft_ms: float, tok_s: float) -> dict:
    return {"layout": layout, "c": c, "ttft_err_ms": ttft_ms, "ttft_err_ci_ms": 0.1, "itl_err_us": 1.0,
            "itl_err_ci_us": 0.5, "tput_err_pct": 0.0, "cpu_s_per_1k_tok": 0.02, "truth_tok_s": tok_s,
            "lag_p99_ms": 1.0, "client_limited": False, "server_late_p99_ms": 0.05}


def test_targets_are_1_ms_to_64_streams_then_twice_the_single_process_floor_at_256():
    runs = [_run("1p", 64, 0.5, 12_800), _run("1p", 256, 1.5, 51_000), _run("1p", 1024, 9.0, 80_000),
            _run("2w", 64, 0.9, 12_800), _run("2w", 256, 2.5, 51_000), _run("2w", 1024, 2.8, 200_000),
            _run("4w", 64, 1.2, 12_800), _run("4w", 256, 3.1, 51_000)]
    table = scale_out.summarise(runs)
    rows = {(r["layout"], r["c"]): r for r in table["rows"]}
    assert rows["1p", 64]["target_ms"] == 1.0
    # Above 64 streams: 2 × the single process's error at min(C, 256) = 2 × 1.5 ms, also at 1024.
    assert rows["2w", 1024]["target_ms"] == rows["1p", 256]["target_ms"] == pytest.approx(3.0)
    assert [rows[k]["within_target"] for k in (("1p", 1024), ("2w", 1024), ("4w", 64), ("4w", 256))] == [
        False, True, False, False]
    assert table["largest_sustained_tok_s"] == {"1p": 51_000, "2w": 200_000, "4w": None}
    assert rows["1p", 256]["verdict"] == "ref"  # the floor is not judged against itself


def test_a_rate_is_sustained_only_when_every_smaller_stream_count_held():
    # Over 1 ms at 64 streams, within 2 x the floor at 256: the layout holds no rate.
    table = scale_out.summarise([_run("1p", 64, 1.5, 12_800), _run("1p", 256, 4.0, 42_000),
                                 _run("1w", 64, 1.9, 12_800), _run("1w", 256, 1.7, 42_000),
                                 _run("2w", 64, 0.2, 12_000), _run("2w", 256, 9.0, 11_000)])
    assert table["largest_sustained_tok_s"] == {"1p": None, "1w": None, "2w": 12_000}
    assert scale_out.target_ms(256, {}) is None  # no single-process floor: no verdict
    # Within the target only when the whole CI is; the mean alone is undecided.
    assert [scale_out.verdict(0.8, 0.1, 1.0), scale_out.verdict(0.95, 0.1, 1.0), scale_out.verdict(1.1, 0.0, 1.0),
            scale_out.verdict(0.1, 0.0, None)] == ["yes", "~", "no", "no"]


def test_one_run_cells_carry_the_runs_own_ci_and_the_table_fits_100_columns():
    table = scale_out.summarise([_run("1p", 64, 0.5, 12_800), _run("2w", 64, 0.7, 12_800),
                                 _run("2w", 64, 0.9, 12_800)])
    one, two = sorted(table["rows"], key=lambda r: r["layout"])
    assert one["ttft_err_ms_ci"] == 0.1 and one["tput_err_pct_ci"] is None
    assert two["n"] == 2 and two["ttft_err_ms"] == pytest.approx(0.8)
    assert two["ttft_err_ms_ci"] == pytest.approx(12.706 * 0.1414 / 2 ** 0.5, rel=1e-3)  # t(0.975, 1) · s / √n
    text = scale_out.render(table, (1.0, 1.0, 1.0), {"server_procs": 4, "ttft_ms": 50.0, "itl_ms": 5.0,
                                                     "tokens": 64})
    assert max(map(len, text.splitlines())) <= 100, text
    assert "(n=1)" in text and "it kept its schedule" in text
