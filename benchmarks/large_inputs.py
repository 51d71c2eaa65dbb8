"""Time the statistics on large inputs against the straightforward scipy way.

Each row runs one of tokcaliper's linear-time statistics and the peer it
replaced, on the same data, and prints both times and their ratio (peer ÷
tokcaliper):

- per-prefix paired verdicts (``stats.ab._running``; the "verdict after each
  pair" lines) against ``scipy.stats.ttest_1samp`` on every prefix of the log
  ratios, which is what the per-prefix code amounted to;
- the Theil–Sen slope (``stats.drift.theil_sen``) against
  ``scipy.stats.theilslopes``;
- the Hodges–Lehmann CI (``stats.signed_rank.signed_rank``) against sorting
  all n(n+1)/2 Walsh averages with numpy;
- a whole paired ``compare`` (``stats.ab.analyze_samples``), timed alone.

The peers are skipped above the size where they would need more than about
2 GB or a minute (``--peer-max``). Results are checked to agree where both
ran. Timings are best of ``--repeat``; take them on a quiet machine and give
the load average with them.

Usage: ``python benchmarks/large_inputs.py [--sizes 1000,3000,30000] [--repeat 3] [--peer-max 3000]``
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import numpy as np  # noqa: E402
from scipy import stats as sps  # noqa: E402

from tokcaliper.numbers import num, ratio  # noqa: E402
from tokcaliper.stats import ab  # noqa: E402
from tokcaliper.stats.drift import theil_sen  # noqa: E402
from tokcaliper.stats.signed_rank import signed_rank  # noqa: E402


def best(fn, repeat: int) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    """Best wall time of ``repeat`` calls (s) and the last result."""
    out, t_best = None, math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        t_best = min(t_best, time.perf_counter() - t0)
    return t_best, out


def data(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Paired runs, CV 2%, B +0.6%: shape (n,) each."""
    rng = np.random.default_rng(seed)
    a = 100 * np.exp(rng.normal(0, 0.02, n))
    b = 100.6 * np.exp(rng.normal(0, 0.02, n))
    return a, b


def row(name: str, n: int, ours: float, peer: float | None, agree: str) -> None:
    peer_s = "—" if peer is None else f"{num(peer, 3)} s"
    r = "—" if peer is None else ratio(peer / ours)
    print(f"{name:<28} {n:>7,} {num(ours, 3):>9} s {peer_s:>11} {r:>8}  {agree}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,3000,30000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--peer-max", type=int, default=3000, help="largest n the peers run at")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"load average {', '.join(num(x, 3) for x in os.getloadavg())}; best of {args.repeat}")
    print(f"{'statistic':<28} {'n':>7} {'tokcaliper':>11} {'peer':>11} {'peer ÷ us':>8}  agreement")
    for n in sizes:
        a, b = data(n)
        d = np.log(b / a)
        run_peer = n <= args.peer_max

        t_ours, running = best(lambda: ab._running(list(a), list(b), 0.05, True, 0.01, None), args.repeat)
        t_peer = None
        agree = "peer skipped"
        if run_peer:
            t_peer, ps = best(lambda: [sps.ttest_1samp(d[:k], 0.0).pvalue for k in range(2, n + 1)],
                              1)
            ours_p = [s.p for s in running[1:]]  # type: ignore[index,union-attr]
            worst = max(abs(x - y) for x, y in zip(ours_p, ps) if x is not None)  # type: ignore[arg-type]
            agree = f"max |Δp| {num(worst, 2)}"
        row("per-prefix paired verdicts", n, t_ours, t_peer, agree)

        x = np.arange(n, dtype=float)
        t_ours, ts = best(lambda: theil_sen(d, x), args.repeat)
        t_peer, agree = None, "peer skipped"
        if run_peer:
            t_peer, ref = best(lambda: sps.theilslopes(d, x), 1)
            agree = "same slope" if ts[0] == ref.slope else f"slopes {ts[0]} vs {ref.slope}"  # type: ignore[index,union-attr]
        row("Theil–Sen slope", n, t_ours, t_peer, agree)

        t_ours, sr = best(lambda: signed_rank(list(d)), args.repeat)
        t_peer, agree = None, "peer skipped"
        if run_peer:
            def walsh_median() -> float:
                i, j = np.triu_indices(n)
                return float(np.median((d[i] + d[j]) / 2))
            t_peer, hl = best(walsh_median, 1)
            agree = f"HL |Δ| {num(abs(sr.hl_log - hl), 2)}"  # type: ignore[union-attr]
        row("Hodges–Lehmann + Wilcoxon", n, t_ours, t_peer, agree)

        t_ours, _ = best(lambda: ab.analyze_samples(list(a), list(b), ("A", "B"), paired=True), 1)
        row("whole paired compare", n, t_ours, None, "")


if __name__ == "__main__":
    main()
