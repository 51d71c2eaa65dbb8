"""`bench --slo --steady-state` against the real llama-server (few requests, few tokens)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tokcaliper.load.slo import meets
from tokcaliper.store import Store

pytestmark = pytest.mark.server


def test_slo_and_steady_state_on_the_real_server(tmp_path, llama_server):
    db = tmp_path / "runs.db"
    proc = subprocess.run(
        [sys.executable, "-m", "tokcaliper", "bench", "--url", llama_server, "--repeat", "2", "-c", "4",
         "-n", "12", "--max-tokens", "16", "--idle-seconds", "0", "--telemetry-interval", "0",
         "--slo", "ttft=150ms,tpot=40ms,e2e=60s", "--steady-state", "0.9", "--db", str(db), "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["config"]["slo_s"] == {"ttft": 0.15, "tpot": 0.04, "e2e": 60.0}
    assert out["config"]["steady_state"] == 0.9
    floor = {m["name"] for m in out["noise_floor"]["metrics"]}
    assert {"SLO attainment (%)", "goodput req/s", "steady output tok/s", "steady TTFT p99 (ms)"} <= floor
    with Store(db) as store:
        for row in store.list_runs():
            run = store.get_run(row.id)
            measured = [r for r in run.requests if not r.warmup]
            s, w, m = run.metrics.slo, run.metrics.steady, run.metrics
            # Attainment is exactly the share of stored requests meeting every SLO.
            good = [r for r in measured if not meets(r, run.config.slo_s)]
            assert (s.n, s.met) == (12, len(good)) and s.attainment == len(good) / 12
            assert s.ci95[0] <= s.attainment <= s.ci95[1]
            assert s.goodput_tok_s == pytest.approx(sum(r.output_tokens for r in good) / m.wall_s)
            # Closed loop of 4: the peak is 4 streams, the window lies inside the run and
            # leaves out ramp-up (streams starting) and drain (the last ones finishing).
            first = min(r.start_s for r in measured)
            last = max(r.start_s + r.e2e_s for r in measured)
            assert w.peak == 4 and first <= w.start_s < w.end_s <= last
            assert 0 < w.length_s < m.wall_s and w.ttft_s.n == w.requests > 0
            assert store.metric_values([row.id], "steady_output_tok_s") == [pytest.approx(w.output_tok_s)]
    text = subprocess.run(
        [sys.executable, "-m", "tokcaliper", "show", str(row.id), "--db", str(db)],
        capture_output=True, text=True, timeout=60)
    assert text.returncode == 0, text.stderr
