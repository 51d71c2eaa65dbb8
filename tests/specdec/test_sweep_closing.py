"""spec sweep's closing lines name the best-buy window's comparison (issue 26 item 2)."""

from types import SimpleNamespace

from tokcaliper.experiment.specdec_sweep import sweep_closing
from tokcaliper.stats.ab import analyze_samples, compare_metrics


def _cmp(cand: str, b: list[float]) -> SimpleNamespace:
    an = analyze_samples([100.0, 101.0, 99.5, 100.4], b, ("k=2", cand), paired=True,
                         metric="aggregate_output_tok_s")
    return SimpleNamespace(candidate=cand, metrics=compare_metrics([an]), error=None)


def test_the_best_buy_window_closes_the_sweep():
    comps = [_cmp("k=4", [120.0, 121.0, 119.0, 120.5]), _cmp("k=8", [100.2, 100.9, 99.0, 100.1])]
    lines = sweep_closing(comps, best_k=4)
    assert lines[0].startswith("result: k=4 beats k=2") and lines[1].startswith("next: stop")
    other = sweep_closing(comps, best_k=8)
    assert other[0].startswith("result: not decided") and "k=8 reads" in other[0]
    assert sweep_closing(comps, best_k=2)[0].startswith("result: k=4 beats k=2")  # first k: first comparison
    assert sweep_closing([SimpleNamespace(candidate="k=4", metrics=None, error="x")], 4) == []
