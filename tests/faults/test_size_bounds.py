"""Large inputs in linear time and bounded memory, or a clear refusal (issue 22 item 17).

``compare``'s per-pair running verdict re-ran Welch's test on every prefix (10,000 per arm:
37 s); ``analyze`` formed n × n matrices (Mann–Kendall's sign matrix, scipy's Theil–Sen
differences) and ~10 temporaries of 2·10⁷ cells for its null distribution (10,000 rows:
3.4 GB; 100,000 rows: "Unable to allocate 74.5 GiB"). Results stay as they were.
"""

from __future__ import annotations

import math
import time
import tracemalloc

import numpy as np
import pytest
from scipy import stats


def _peak_mb(fn) -> float:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def _reference_pairs(a, b):  # type: ignore[no-untyped-def]
    """The old per-prefix computation (one scipy test per prefix)."""
    out = []
    for k in range(1, len(a) + 1):
        t = p = None
        if k >= 2:
            r = stats.ttest_ind(a[:k], b[:k], equal_var=False)
            t = float(r.statistic) if math.isfinite(r.statistic) else None
            p = float(r.pvalue) if math.isfinite(r.pvalue) else None
        out.append((float(np.mean(b[:k]) / np.mean(a[:k])), t, p))
    return out


@pytest.mark.parametrize("case", ["noise", "constant", "constant-apart", "tiny-cv"])
def test_pair_ratios_give_the_per_prefix_figures(case):
    from tokcaliper.stats.compare import pair_ratios

    rng = np.random.default_rng(11)
    a, b = 500 + 5 * rng.standard_normal(40), 503 + 5 * rng.standard_normal(40)
    if case == "constant":
        a, b = np.full(40, 500.0), np.full(40, 500.0)
    elif case == "constant-apart":
        a, b = np.full(40, 500.0), np.full(40, 505.0)
    elif case == "tiny-cv":
        a, b = 500 * (1 + 1e-6 * rng.standard_normal(40)), 500 * (1 + 1e-6 * rng.standard_normal(40))
    got = [(s.cum_ratio, s.t, s.p) for s in pair_ratios(a, b)]
    for (gr, gt, gp), (er, et, ep) in zip(got, _reference_pairs(a, b)):
        assert gr == pytest.approx(er, rel=1e-12)
        assert (gt is None, gp is None) == (et is None, ep is None)
        if gt is not None:  # at CV 1e-6 the means' last digits depend on the summation order
            tol = 1e-6 if case == "tiny-cv" else 1e-9
            assert gt == pytest.approx(et, rel=tol) and gp == pytest.approx(ep, rel=tol, abs=1e-300)


def test_pair_ratios_are_linear():
    """30,000 pairs: well under a few seconds (was one scipy test per prefix: minutes)."""
    from tokcaliper.stats.compare import pair_ratios

    rng = np.random.default_rng(2)
    a, b = 500 + rng.standard_normal(30_000), 505 + rng.standard_normal(30_000)
    t0 = time.perf_counter()
    steps = pair_ratios(a, b)
    assert time.perf_counter() - t0 < 6.0
    assert len(steps) == 30_000 and steps[-1].p < 1e-10 and steps[-1].cum_ratio > 1.009


def test_theil_sen_is_scipys_bit_for_bit():
    from tokcaliper.stats.drift import theil_sen

    rng = np.random.default_rng(4)
    for n in (5, 6, 50, 301):
        for y in (rng.normal(100, 5, n), np.round(rng.normal(100, 2, n)), 0.1 * np.arange(n) + rng.normal(0, 1, n)):
            x = np.arange(n, dtype=float)
            ts = stats.theilslopes(y, x, alpha=0.95)
            assert theil_sen(y, x) == (float(ts.slope), float(ts.low_slope), float(ts.high_slope))


def test_mann_kendall_has_no_n_by_n_matrix():
    """n = 3000: the sign matrix alone was 72 MB and scipy's Theil–Sen two more of that size;
    now the pairwise slopes (4.5·10⁶ × 8 B = 36 MB) and one block of 10⁶ cells are all. S unchanged."""
    from tokcaliper.stats.drift import mann_kendall

    rng = np.random.default_rng(9)
    x = np.round(rng.normal(500, 3, 3000))  # ties included
    res: list = []
    peak = _peak_mb(lambda: res.append(mann_kendall(x)))
    assert peak < 80, peak  # was > 200 MB
    small = x[:400]
    s_ref = int(np.triu(np.sign(small[None, :] - small[:, None]), 1).sum())
    assert mann_kendall(small).s == s_ref


def test_the_split_null_is_simulated_in_bounded_memory():
    """n = 200: 20,000 null draws × 200 values; its ~10 temporaries of that size took ~320 MB."""
    from tokcaliper.stats import clumps

    clumps._null_r2.cache_clear()
    peak = _peak_mb(lambda: clumps._null_r2(200, 2))
    clumps._null_r2.cache_clear()
    assert peak < 120, peak


def test_analyze_refuses_more_runs_than_it_takes():
    from tokcaliper.errors import InputError
    from tokcaliper.stats.spread import MAX_RUNS, analyze_values

    assert MAX_RUNS == 10_000
    values = list(500 + np.random.default_rng(1).standard_normal(MAX_RUNS + 1))
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=r"^tok_s: 10,001 runs; analyze takes at most 10,000 \(the drift test"):
        analyze_values(values, metric="tok_s")
    assert time.perf_counter() - t0 < 1.0


# ---------------------------------------------------------------- compare on paired input


def _reference_running(pa, pb, alpha, higher_is_better, band):  # type: ignore[no-untyped-def]
    """The old ``stats.ab._running``: one paired test and one gate per prefix (quadratic)."""
    from tokcaliper.numbers import p_value, percent
    from tokcaliper.stats.paired import paired_log_ratio
    from tokcaliper.stats.verdict_gate import gate, reading

    steps = []
    for k in range(1, len(pa) + 1):
        ai, bi = float(pa[k - 1]), float(pb[k - 1])
        if k == 1:
            r = bi / ai
            rd = reading(r, higher_is_better, band)
            steps.append(dict(k=1, ratio=r, cum_ratio=r, ci=None, p=None, mde=None, reading=rd,
                              verdict="insufficient data", sd=None,
                              text=f"1: {rd} → insufficient data (one pair, no test)"))
            continue
        pr = paired_log_ratio(pa[:k], pb[:k], alpha)
        mde = 2 * pr.sd_log / math.sqrt(k)
        g = gate(ratio=pr.ratio, ci=pr.ratio_ci, p=pr.p, alpha=alpha,
                 higher_is_better=higher_is_better, noise_band=band, mde=mde)
        rd = reading(pr.ratio, higher_is_better, band)
        ptxt = "p undefined" if pr.p is None else f"paired p = {p_value(pr.p, 2)}"
        steps.append(dict(k=k, ratio=bi / ai, cum_ratio=pr.ratio, ci=pr.ratio_ci, p=pr.p, mde=mde,
                          reading=rd, verdict=g.verdict, sd=pr.sd_log,
                          text=f"{k}: {rd} → {g.verdict} ({ptxt}, MDE ±{percent(mde)}, {k} pairs)"))
    return steps


def _paired_case(case: str, n: int, rng):  # type: ignore[no-untyped-def]
    a = 500 * np.exp(0.02 * rng.standard_normal(n))
    b = 510 * np.exp(0.02 * rng.standard_normal(n))
    if case == "ties":  # coarse values: many equal ratios and repeated prefixes
        a, b = np.round(a / 10) * 10, np.round(b / 10) * 10
    elif case == "constant-start":  # the first 6 pairs have one ratio, exactly
        a[:6], b[:6] = 500.0, 505.0
    elif case == "constant-then-one":  # equal ratios up to rounding, then one that differs
        a[:-1] = 500.0 * np.arange(1, n)
        b[:-1] = 505.0 * np.arange(1, n)
    elif case == "clear-change":  # the verdict moves from inconclusive to faster/slower
        b = 540 * np.exp(0.01 * rng.standard_normal(n))
    return list(a), list(b)


@pytest.mark.parametrize("case", ["noise", "ties", "constant-start", "constant-then-one",
                                  "clear-change"])
@pytest.mark.parametrize("higher,alpha,band", [(True, 0.05, 0.01), (False, 0.1, 0.0)])
def test_running_verdicts_are_the_per_prefix_ones(case, higher, alpha, band):
    """Every prefix's figures from cumulative sums give the old per-prefix steps: the same
    verdicts and texts, figures to 1e-9. One intended difference: a prefix whose log ratios
    are equal up to rounding (sd < 1e-12, the bound ``analyze_samples`` applies to all the
    pairs) has no test; the old code gave p ≈ 0 from an sd of 1e-17 there."""
    from tokcaliper.stats.ab import _running

    rng = np.random.default_rng(len(case) * 7 + int(higher))
    a, b = _paired_case(case, 60, rng)
    got = _running(a, b, alpha, higher, band, None)
    ref = _reference_running(a, b, alpha, higher, band)
    assert len(got) == len(ref) == 60
    verdicts = set()
    for g, r in zip(got, ref):
        assert g.k == r["k"] and g.ratio == r["ratio"] and g.reading == r["reading"]
        assert g.cum_ratio == pytest.approx(r["cum_ratio"], rel=1e-12)
        if r["sd"] is not None and r["sd"] < 1e-12:  # equal up to rounding: no test now
            assert g.p is None and g.ci is None and g.verdict == "inconclusive"
            continue
        assert g.verdict == r["verdict"] and g.text == r["text"]
        verdicts.add(g.verdict)
        assert (g.p is None) == (r["p"] is None) and (g.ci is None) == (r["ci"] is None)
        if g.p is not None:
            assert g.p == pytest.approx(r["p"], rel=1e-9, abs=1e-300)
            assert g.ci == pytest.approx(r["ci"], rel=1e-12)
        if g.mde is not None:
            assert g.mde == pytest.approx(r["mde"], rel=1e-9, abs=1e-15)
    if case == "clear-change":
        assert ("slower" if not higher else "faster") in verdicts


def test_walsh_order_statistics_without_the_walsh_averages():
    """The exact selection equals sorting all n(n+1)/2 averages, ties and tiny values included."""
    from tokcaliper.stats.signed_rank import walsh_order_stat

    rng = np.random.default_rng(17)
    for trial in range(120):
        n = int(rng.integers(1, 150))
        d = rng.standard_normal(n)
        if trial % 4 == 1:
            d = np.round(d, 1)
        elif trial % 4 == 2:
            d = np.full(n, 0.3)
        elif trial % 4 == 3:
            d = np.concatenate([np.zeros(n // 2), 1e-300 * rng.standard_normal(n - n // 2)])
        i, j = np.triu_indices(n)
        walsh = np.sort((d[i] + d[j]) / 2)
        s = np.sort(d)
        for r in {0, walsh.size - 1, walsh.size // 2, int(rng.integers(0, walsh.size))}:
            assert walsh_order_stat(s, r) == walsh[r]


def test_rank_companion_on_many_pairs_is_the_same_and_small(monkeypatch):
    """Hodges–Lehmann on 30,000 pairs formed 4.5·10⁸ Walsh averages and their indices (~14 GB);
    now a few arrays of n. Below the switch both ways give the same figures bit for bit."""
    from tokcaliper.stats import signed_rank as sr

    rng = np.random.default_rng(3)
    d = np.round(0.02 * rng.standard_normal(1200), 4)  # ties
    direct = sr.signed_rank(d)
    monkeypatch.setattr(sr, "_DIRECT_MAX", 0)
    assert sr.signed_rank(d) == direct
    monkeypatch.undo()
    big = 0.02 * rng.standard_normal(30_000) + 0.005
    t0 = time.perf_counter()
    res: list = []
    peak = _peak_mb(lambda: res.append(sr.signed_rank(big)))
    assert time.perf_counter() - t0 < 10.0
    assert peak < 60, peak
    assert res[0].ratio_ci is not None and res[0].ratio_ci[0] < 1.005 < res[0].ratio_ci[1]


def test_robust_slope_is_scipys_and_bounded():
    from tokcaliper.stats.ab import analyze_samples
    from tokcaliper.stats.outliers import RunTags
    from tokcaliper.stats.paired_drift import ROBUST_SLOPE_MAX_PAIRS, robust_slope

    rng = np.random.default_rng(8)
    a, b = 500 + 5 * rng.standard_normal(80), 505 + 5 * rng.standard_normal(80)
    pa, pb = np.arange(80) * 2.0, np.arange(80) * 2.0 + 1
    m, c = (np.log(a) + np.log(b)) / 2, (pa + pb) / 2
    assert robust_slope(a, b, pa, pb) == float(stats.theilslopes(m, c).slope)
    n = ROBUST_SLOPE_MAX_PAIRS + 1
    a, b = 500 * np.exp(0.02 * rng.standard_normal(n)), 505 * np.exp(0.02 * rng.standard_normal(n))
    tags = (RunTags(positions=list(np.arange(n) * 2.0)), RunTags(positions=list(np.arange(n) * 2.0 + 1)))
    an = analyze_samples(a, b, paired=True, tags=tags)
    assert an.rank is None
    assert any(x.startswith("rank companion not computed: its drift correction") for x in an.notes)


def test_compare_refuses_more_runs_per_arm_than_it_takes():
    from tokcaliper.errors import InputError
    from tokcaliper.stats.ab import MAX_RUNS_PER_ARM, analyze_samples

    assert MAX_RUNS_PER_ARM == 100_000
    n = MAX_RUNS_PER_ARM + 1
    a = list(500 + np.random.default_rng(1).standard_normal(n))
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=r"^tok_s: 100,001 runs in arm A; compare takes at most "
                                         r"100,000 per arm"):
        analyze_samples(a, a, ("A", "B"), paired=True, metric="tok_s")
    assert time.perf_counter() - t0 < 1.0


def _pairs_csv(path, n: int, seed: int) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    a, b = 500 * np.exp(0.02 * rng.standard_normal(n)), 503 * np.exp(0.02 * rng.standard_normal(n))
    rows = ["arm,value,pair,position"]
    for k in range(n):
        rows += [f"A,{a[k]:.3f},{k + 1},{2 * k}", f"B,{b[k]:.3f},{k + 1},{2 * k + 1}"]
    path.write_text("\n".join(rows) + "\n")


def test_compare_30000_pairs_is_quick_and_readable(tmp_path, cli):
    """compare --csv with 30,000 pairs (and positions): > 200 s and ~30,000 lines before
    (a paired test and a gate per prefix; Hodges–Lehmann on n² Walsh averages); now seconds
    and a page, the per-pair lines summarised."""
    f = tmp_path / "p.csv"
    _pairs_csv(f, 30_000, 5)
    t0 = time.perf_counter()
    code, out, err = cli("compare", "--csv", str(f), "--verbose")  # the per-pair lines are --verbose's
    took = time.perf_counter() - t0
    assert code == 0, err
    assert took < 20.0, took
    lines = out.splitlines()
    assert len(lines) < 150, len(lines)
    assert "… 29,980 more pairs (all in --json); over all 30,000 the verdict changed" in out
    assert "… 29,980 more (all in --json; min" in out


def test_compare_json_keeps_every_pair(tmp_path, cli):
    import json

    f = tmp_path / "p.csv"
    _pairs_csv(f, 50, 6)
    code, out, err = cli("compare", "--csv", str(f), "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert len(doc["running"]) == 50 and len(doc["paired"]["ratios"]) == 50
    code, text, _ = cli("compare", "--csv", str(f), "--verbose")
    assert "… 30 more pairs (all in --json)" in text
    import re

    assert sum(1 for x in text.splitlines() if re.match(r"  \d+: .* → ", x)) == 20


def test_many_flagged_runs_are_summarised_in_text(tmp_path, cli):
    """30 wild pairs of 500 printed 30 outlier lines, a verdict sentence naming all 30 and
    every pair number; now 10 of each and a count (all in --json)."""
    import json

    rng = np.random.default_rng(12)
    n = 500
    a, b = 500 * np.exp(0.01 * rng.standard_normal(n)), 505 * np.exp(0.01 * rng.standard_normal(n))
    b[::17] *= 0.2  # 30 pairs with a run at 1/5 speed
    rows = ["arm,value,pair"] + [f"{arm},{v:.3f},{k + 1}" for k in range(n)
                                 for arm, v in (("A", a[k]), ("B", b[k]))]
    f = tmp_path / "w.csv"
    f.write_text("\n".join(rows) + "\n")
    code, out, err = cli("compare", "--csv", str(f), "--verbose")  # the per-pair lines are --verbose's
    assert code == 0, err
    assert sum(1 for x in out.splitlines() if x.startswith("outlier: arm")) == 10
    assert "outlier: … and 20 more (all in --json)" in out
    assert "pair 1, 18, 35" in out and "… and 10 more" in out
    code, js, _ = cli("compare", "--csv", str(f), "--json")
    assert len(json.loads(js)["outliers"]["runs"]) == 30
