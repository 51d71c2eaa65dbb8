"""End to end: `tokcaliper bench` against the real llama-server with SmolLM2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tokcaliper.model.metrics import METRICS, run_scalars
from tokcaliper.store import Store

pytestmark = pytest.mark.server


def test_bench_two_repetitions_against_managed_llama_server(tmp_path, local_llama):
    db = tmp_path / "runs.db"
    proc = subprocess.run(
        [sys.executable, "-m", "tokcaliper", "bench", "--repeat", "2", "--concurrency", "4",
         "--requests", "8", "--max-tokens", "32", "--db", str(db), "--json",
         "--telemetry-interval", "0.2", "--idle-seconds", "0.5"],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert len(out["runs"]) == 2
    assert out["idle_power_w"] is not None

    # The process has exited: both runs must be in the store, complete.
    with Store(db) as store:
        rows = store.list_runs()
        assert [r.repetition for r in rows] == [0, 1]
        stored = [store.get_run(row.id) for row in rows]
        # Run order and the rest actually taken between runs are recorded.
        assert [r.position for r in stored] == [0, 1]
        assert stored[0].rest_s is None and stored[1].rest_s is not None and stored[1].rest_s >= 0
        for row, run in zip(rows, stored):
            m = run.metrics
            measured = [r for r in run.requests if not r.warmup]
            assert len(measured) == 8 and m.completed == 8 and m.failed == 0
            assert m.excluded_warmup == 4
            # Token counts come from the server's usage field, and equal it:
            # with ignore_eos every request generates exactly max_tokens.
            assert m.token_count_source == "usage"
            assert all(r.output_tokens == 32 for r in measured)
            assert m.output_tokens == 8 * 32
            # The server's own counter agrees with the client's total.
            predicted = run.counters_delta.get("llamacpp:tokens_predicted_total")
            assert predicted == m.output_tokens
            # Every token arrived as its own chunk, so ITLs are one fewer.
            assert all(r.content_chunks == 32 and len(r.itl_s) == 31 for r in measured)
            assert all(r.ttft_s > 0 and r.e2e_s > r.ttft_s for r in measured)
            assert all(x >= 0 for r in measured for x in r.itl_s) and m.itl_s.mean > 0
            # Aggregate throughput is total tokens over the run's wall time.
            assert m.aggregate_output_tok_s == pytest.approx(m.output_tokens / m.wall_s)
            span = max(r.start_s + r.e2e_s for r in measured) - min(r.start_s for r in measured)
            assert m.wall_s == pytest.approx(span)
            # Each of the 4 workers yields at most (1 first token + max decode
            # rate × its decode time) per request, so the aggregate is bounded
            # by 4 × the fastest stream plus the first tokens' share.
            fastest = max((r.output_tokens - 1) / (r.e2e_s - r.ttft_s) for r in measured)
            assert 0 < m.aggregate_output_tok_s <= 4 * fastest + m.completed / m.wall_s
            assert run.server_command and "llama-server" in run.server_command
            assert run.host is not None and run.host.cpu_logical_cores
            assert run.telemetry is not None and run.telemetry.devices
            # Idle power was measured before the load; its one home is the
            # telemetry summary (empty dict here: no GPU, no RAPL).
            assert isinstance(run.telemetry.idle_power_w, dict)
            assert run.telemetry.idle_duration_s == 0.5
            assert [d.device for d in run.start_state] == [d.device for d in run.telemetry.devices]
            # Every registry metric is produced by the summary of this real run,
            # and stored under its name.
            scalars = run_scalars(m)
            assert set(scalars) == set(METRICS)
            # (but those that need an option this bench did not give: --slo, --steady-state)
            missing = [name for name, v in scalars.items() if v is None and METRICS[name].needs is None]
            assert not missing, missing
            assert store.metric_values([row.id], "ttft_p90_ms") == [pytest.approx(1000 * m.ttft_s.p90)]

    # Unique prompt tags: run 2 is not served from the prompt cache run 1
    # filled, so it processes about as many new prompt tokens as run 1.
    with Store(db) as store:
        fresh = [store.get_run(r.id, with_requests=False).counters_delta["llamacpp:prompt_tokens_total"]
                 for r in store.list_runs()]
    assert fresh[1] >= 0.7 * fresh[0] > 0

    # The JSON noise floor covers both runs.
    agg = next(x for x in out["noise_floor"]["metrics"] if "aggregate" in x["name"])
    assert agg["description"]["n"] == 2


def test_bench_restarts_tags_runs_by_restart_and_prints_the_split(tmp_path, local_llama):
    """Issue 17 item 7: `bench --restarts 2` starts the managed server twice, stores each run with
    its restart, and prints restart-level against run-level variance with the allocation advice."""
    db = tmp_path / "runs.db"
    cmd = [sys.executable, "-m", "tokcaliper", "bench", "--restarts", "2", "--repeat", "2",
           "--concurrency", "1", "--requests", "2", "--warmup", "1", "--max-tokens", "4",
           "--idle-seconds", "0", "--telemetry-interval", "0", "--metric", "aggregate_output_tok_s",
           "--db", str(db)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = " ".join(proc.stdout.split())
    assert "2 server starts × 2 runs" in out and "where the variance lives" in out, out
    assert "default, aggregate_output_tok_s: restart-level sd" in out and "run-level sd" in out
    assert "restart 2/2: stopping and starting the server" in proc.stderr
    with Store(db) as store:
        stored = [store.get_run(r.id, with_requests=False) for r in store.list_runs()]
    assert [(r.restart, r.position) for r in stored] == [(0, 0), (0, 1), (1, 2), (1, 3)]
    assert len({r.session for r in stored}) == 1
    # the first run after the restart waited for the server: its rest is the restart's cost
    assert stored[2].rest_s > stored[1].rest_s
