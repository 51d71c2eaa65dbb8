"""Goodput under SLOs: parsing --slo, per-request judgement, attainment and goodput.

The fake server (fake_server.py) gives exactly known latencies: every 4th request
is stalled 0.3 s before its first token and every 5th answers HTTP 500, so of 10
requests 2 miss a 200 ms TTFT SLO and 2 fail: attainment is exactly 6/10.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tokcaliper.errors import InputError
from tokcaliper.experiment.spec import LoadSpec
from tokcaliper.load.slo import meets, parse_slo, slo_attainment
from tokcaliper.load.summary import summarize
from tokcaliper.model.metrics import run_scalars
from tokcaliper.model.run import RequestRecord
from tokcaliper.stats.proportion import wilson_interval
from tokcaliper.store import Store

from .fake_server import FakeServer, FakeTiming


def test_parse_slo_units_and_order():
    assert parse_slo("e2e=10s,ttft=200ms, tpot = 50 ms,itl=0.3s") == {
        "ttft": 0.2, "tpot": 0.05, "itl": 0.3, "e2e": 10.0}


@pytest.mark.parametrize("text, needle", [
    ("", "is empty"),
    ("ttf=200ms", "unknown SLO 'ttf'; choose ttft, tpot, itl, e2e"),
    ("ttft=200", "'ttft=200' needs a unit, ms or s"),
    ("ttft=1ms,ttft=2ms", "gives ttft twice"),
    ("ttft=0ms", "must be > 0"),
    ("ttft=nanms", "must be > 0"),
    ("e2e=2e9s", "at most 86400 s"),
    ("ttft=abcms", "'abc' is not a number"),
    ("ttft=2ms,", "empty item"),
    ("ttft", "not KIND=VALUE"),
])
def test_parse_slo_errors_name_the_item(text, needle):
    with pytest.raises(ValueError, match=needle.replace("(", r"\(")):
        parse_slo(text)
    with pytest.raises(InputError) as e:  # bench's and [load]'s one validator
        LoadSpec.from_options(slo=text)
    assert str(e.value).startswith("--slo ") and needle in str(e.value)


def rec(i, ttft, e2e, tokens=11, itl=None, error=None):
    return RequestRecord(index=i, start_s=0.1 * i, ttft_s=ttft, e2e_s=e2e, output_tokens=tokens,
                         itl_s=itl if itl is not None else [(e2e - ttft) / (tokens - 1)] * (tokens - 1),
                         error=error, token_count_source="usage")


def test_each_kind_is_judged_per_request_with_the_bound_inclusive():
    slo = {"ttft": 0.2, "tpot": 0.05, "itl": 0.1, "e2e": 1.0}
    assert meets(rec(0, 0.2, 0.7), slo) == []  # TPOT (0.7 − 0.2) ÷ 10 = 0.05: on the bound meets it
    assert meets(rec(0, 0.21, 0.7), slo) == ["ttft"]
    assert meets(rec(0, 0.1, 0.71), slo) == ["tpot"]  # 0.061 s per token
    assert meets(rec(0, 0.1, 0.5, itl=[0.01] * 8 + [0.15, 0.01]), slo) == ["itl"]
    assert meets(rec(0, 0.1, 1.5, tokens=40), slo) == ["e2e"]
    assert meets(rec(0, 0.1, 0.9, tokens=1, itl=[]), slo) == []  # no TPOT with one token: met (vLLM)
    assert meets(rec(0, None, None, tokens=0, itl=[], error="HTTP 500"), slo) == list(slo)


def test_attainment_counts_failed_requests_as_missing_and_goodput_over_wall_time():
    records = [rec(0, 0.1, 0.5), rec(1, 0.3, 0.6), rec(2, 0.1, 0.5),
               rec(3, None, None, tokens=0, itl=[], error="HTTP 500")]
    a = slo_attainment(records, {"ttft": 0.2}, wall_s=2.0)
    assert (a.n, a.met, a.failed, a.missed) == (4, 2, 1, {"ttft": 1})
    assert a.attainment == 0.5 and a.ci95 == wilson_interval(2, 4)
    assert a.goodput_rps == 1.0 and a.goodput_tok_s == 11.0  # 2 requests, 22 tokens, over 2 s
    m = summarize(records, slo_s={"ttft": 0.2})
    s = run_scalars(m)
    assert s["slo_attainment_pct"] == 50.0 and s["goodput_rps"] == pytest.approx(2 / m.wall_s)
    assert run_scalars(summarize(records))["goodput_rps"] is None  # no --slo, no value


def test_wilson_interval_known_values():
    # Brown, Cai & DasGupta (2001): Wilson 95 % for 0/10 is [0, 0.2775], for 5/10 [0.2366, 0.7634].
    lo, hi = wilson_interval(0, 10)
    assert lo == 0 and hi == pytest.approx(0.2775, abs=1e-4)
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson_interval(10, 10)[1] == 1.0 and wilson_interval(0, 0) is None


def bench(url, db, *extra):
    return subprocess.run(
        [sys.executable, "-m", "tokcaliper", "bench", "--url", url, "--repeat", "1", "-c", "2", "-n", "10",
         "--warmup", "0", "--max-tokens", "8", "--idle-seconds", "0", "--telemetry-interval", "0",
         "--max-error-rate", "0.5", "--db", str(db), *extra],
        capture_output=True, text=True, timeout=120)


def test_goodput_on_the_fake_server_is_the_exact_attainment(tmp_path):
    db = tmp_path / "r.db"
    timing = FakeTiming(ttft_s=0.002, itl_s=0.001, tokens=8, fail_every=5,
                        fault="stall_first", fault_every=4, stall_s=0.3)
    with FakeServer(timing) as srv:
        proc = bench(srv.base_url, db, "--slo", "ttft=200ms,tpot=50ms,e2e=10s", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["config"]["slo_s"] == {"ttft": 0.2, "tpot": 0.05, "e2e": 10.0}
    slo = out["runs"][0]["metrics"]["slo"]
    assert (slo["n"], slo["met"], slo["failed"], slo["missed"]) == (10, 6, 2, {"ttft": 2, "tpot": 0, "e2e": 0})
    assert slo["attainment"] == 0.6
    assert slo["ci95"] == pytest.approx(list(wilson_interval(6, 10)))
    # Across runs: the noise floor (n, CV, MDE) includes the SLO metrics when --slo is given.
    floor = {m["name"]: m["description"] for m in out["noise_floor"]["metrics"]}
    assert floor["SLO attainment (%)"]["n"] == 1 and floor["SLO attainment (%)"]["mean"] == 60.0
    assert "goodput req/s" in floor and "goodput output tok/s" in floor
    with Store(db) as store:  # stored with the run: the SLO asked for, and the registry metrics
        row = store.list_runs()[0]
        run = store.get_run(row.id)
        assert run.config.slo_s == {"ttft": 0.2, "tpot": 0.05, "e2e": 10.0}
        assert store.metric_values([row.id], "slo_attainment_pct") == [60.0]
        assert store.metric_values([row.id], "goodput_rps") == [pytest.approx(6 / run.metrics.wall_s)]


def test_the_text_report_shows_attainment_with_its_interval(tmp_path):
    with FakeServer(FakeTiming(ttft_s=0.002, itl_s=0.001, tokens=8, fail_every=5)) as srv:
        proc = bench(srv.base_url, tmp_path / "r.db", "--slo", "e2e=10s")
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if " 8/10 " in ln)
    assert "80.0" in line and "49.0–94.3" in line and "failed 2" in line  # Wilson 95 % of 8/10


@pytest.mark.parametrize("value, needle", [
    ("ttft=200", "--slo item 'ttft=200' needs a unit, ms or s"),
    ("latency=2s", "--slo item 'latency=2s': unknown SLO 'latency'"),
])
def test_bad_slo_is_one_line_before_any_work(value, needle):
    proc = subprocess.run([sys.executable, "-m", "tokcaliper", "bench", "--url", "http://127.0.0.1:1",
                           "--slo", value], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("tokcaliper: error:")]
    assert len(errors) == 1 and needle in errors[0], proc.stderr
