"""Text rendering of SLO attainment, goodput and steady-state windows per run."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table

from tokcaliper.model.run import Percentiles, Run
from tokcaliper.numbers import num
from tokcaliper.report.text import esc

__all__ = ["render_slo", "render_steady"]


def _pct(x: float | None) -> str:
    return num(None if x is None else 100 * x)


def _ms(p: Percentiles, stat: str) -> str:
    v = getattr(p, stat)
    return num(None if v is None else 1000 * v)


def render_slo(console: Console, runs: Sequence[Run]) -> None:
    """Per run: requests meeting every SLO, attainment with its Wilson 95 % CI over the
    run's requests, misses by kind, goodput. Nothing when no run has SLOs."""
    from tokcaliper.load.slo import format_slo

    judged = [r for r in runs if r.metrics.slo is not None]
    if not judged:
        return
    slo = judged[0].metrics.slo
    assert slo is not None
    console.print(f"  SLOs: {esc(format_slo(slo.slo_s))}; met = completed within every one, failed = missed\n"
                  "  (TPOT = (E2E − TTFT) ÷ (output tokens − 1), as vLLM; ITL = a request's largest gap)")
    t = Table(title="SLO attainment and goodput", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("run", "met/n", "attainment %", "95 % CI (Wilson) %", "missed by", "goodput\nreq/s",
                "goodput\ntok/s"):
        t.add_column(col, justify="right", no_wrap=col != "missed by")
    for r in judged:
        s = r.metrics.slo
        assert s is not None
        missed = [f"{k} {v}" for k, v in s.missed.items() if v] + ([f"failed {s.failed}"] if s.failed else [])
        ci = "—" if s.ci95 is None else f"{_pct(s.ci95[0])}–{_pct(s.ci95[1])}"
        t.add_row(str(r.id), f"{s.met}/{s.n}", _pct(s.attainment), ci, esc(", ".join(missed) or "none"),
                  num(s.goodput_rps), num(s.goodput_tok_s, 4))
    console.print(t)


def render_steady(console: Console, runs: Sequence[Run]) -> None:
    """Per run: the steady-state window (start, end, length, share of the wall time),
    its peak and threshold, and the figures inside it (the whole run's are in the runs table)."""
    windows = [r for r in runs if r.metrics.steady is not None]
    if not windows:
        return
    share = windows[0].metrics.steady.share  # type: ignore[union-attr]
    console.print(f"  steady state: the window where requests in flight stay ≥ {num(share * 100, trim=True)} % "
                  "of the run's peak;\n  ramp-up and drain are left out of its figures")
    t = Table(title="steady-state window", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("run", "window s", "length s\n(% wall)", "peak/\nthresh.", "≥ thr\n% time",
                "steady\ntok/s", "TTFT p50/\np99 ms (n)", "ITL p50/\np99 ms (n)"):
        t.add_column(col, justify="right", no_wrap="ms" not in col)  # latencies wrap before they cut
    for r in windows:
        w, m = r.metrics.steady, r.metrics
        assert w is not None
        wall = f" ({_pct(w.length_s / m.wall_s)})" if m.wall_s > 0 else ""
        t.add_row(
            # window ends to the millisecond: its first instant is often a few µs in
            str(r.id), f"{num(round(w.start_s, 3))}–{num(round(w.end_s, 3))}", f"{num(w.length_s)}{wall}",
            f"{w.peak}/{num(w.threshold)}", _pct(w.at_threshold_share),
            num(w.output_tok_s, 4),
            f"{_ms(w.ttft_s, 'p50')}/{_ms(w.ttft_s, 'p99')} ({w.ttft_s.n})",
            f"{_ms(w.itl_s, 'p50')}/{_ms(w.itl_s, 'p99')} ({w.itl_s.n})",
        )
    console.print(t)
