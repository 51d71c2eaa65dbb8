import math

import pytest
from rich.console import Console

from tokcaliper.errors import InputError
from tokcaliper.report.noise_view import render_noise_floor
from tokcaliper.stats.noise import noise_floor
from tokcaliper.stats.resolution import mde_quick

TPUT = "aggregate output throughput (tok/s)"


def test_noise_floor_power_cap_arm(seed, tol):
    case = seed["power_cap_ab"]
    rep = noise_floor({TPUT: case["arms"]["200W"]})
    (m,) = rep.metrics
    assert m.description.n == 5
    assert abs(m.description.cv - case["expected"]["cv_200W"]) <= tol(case["expected"]["cv_200W"])
    assert m.mde_n1 == pytest.approx(2 * m.description.cv * math.sqrt(2))
    assert m.mde_nR == pytest.approx(2 * m.description.cv * math.sqrt(2 / 5))
    assert rep.warnings == []  # R = 5 is enough


def test_fewer_than_five_warns_and_single_value_is_undefined():
    rep = noise_floor({"TTFT p50 (ms)": [120.0, 130.0, 125.0], "x": [5.0]})
    assert any("fewer than 5 repetitions" in w and "CV itself is uncertain" in w for w in rep.warnings)
    single = rep.metrics[1]
    assert single.description.cv is None and single.mde_n1 is None and single.mde_nR is None
    ttft = rep.metrics[0]
    assert ttft.mde_nR == pytest.approx(mde_quick(0.04, 3))


def test_effect_adds_runs_needed():
    rep = noise_floor({TPUT: [366.0, 561.0, 420.0, 480.0, 500.0, 390.0]}, effect=0.05)
    m = rep.metrics[0]
    assert m.n_quick_for_effect == math.ceil(8 * (m.description.cv / 0.05) ** 2)
    assert m.n_power_for_effect > m.n_quick_for_effect
    assert "below" in m.verdict.summary


@pytest.mark.parametrize("bad", [{}, {"m": []}, {"m": [1.0, float("nan")]}])
def test_bad_input(bad):
    with pytest.raises(InputError):
        noise_floor(bad)


def test_renderer_prints_the_table_and_leaves_the_warnings_to_the_sink():
    rep = noise_floor({TPUT: [754.3, 770.0, 639.3, 567.7], "TTFT p50 [ms]": [10.0, 11.0, 12.0, 10.5]})
    con = Console(record=True, width=220)
    render_noise_floor(con, rep)
    out = con.export_text()
    for col in ("metric", "mean", "std", "CV", "95% CI", "min", "max", "(max−min)", "/mean", "MDE", "n=1"):
        assert col in out
    assert "n = 4 runs per metric" in out
    assert TPUT in out and "TTFT p50 [ms]" in out  # brackets are not eaten as markup
    cv = rep.metrics[0].description.cv
    assert f"{100 * cv:.1f}%" in out
    assert f"{100 * rep.metrics[0].mde_nR:.1f}%" in out
    # The caveat belongs to the command's result, printed by the warning sink on stderr.
    assert "fewer than 5 repetitions (n=4): CV itself is uncertain" in rep.warnings[0]
    assert "fewer than 5" not in out


def test_noise_floor_table_fits_100_columns():
    """Every registry metric bench reports, at their widest figures, in 100 columns (issue 22 item 26)."""
    from tokcaliper.model.metrics import METRICS

    longest = sorted((m.label for m in METRICS.values()), key=len)[-6:]
    rep = noise_floor({n: [12345.6, 9876.54, 11111.1] for n in longest[:3]}
                    | {n: [0.0123, 0.00987, 0.0111] for n in longest[3:]})
    con = Console(record=True, width=100)
    render_noise_floor(con, rep)
    out = con.export_text()
    assert "…" not in out
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 100
