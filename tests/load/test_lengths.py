"""Synthetic length specs (issue 18 item 2): parsing, one-line errors, the sampler, the report."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from tokcaliper.errors import InputError
from tokcaliper.experiment.spec import LoadSpec, parse_experiment
from tokcaliper.load.lengths import (
    MAX_LENGTH_TOKENS, accuracy, draw_lengths, length_of, length_report, parse_length_spec)
from tokcaliper.model.run import RequestRecord
from tokcaliper.store import Store

from .fake_server import FakeServer, FakeTiming


@pytest.mark.parametrize("spec, kind, params", [
    ("fixed:32", "fixed", (32,)),
    ("32", "fixed", (32,)),
    ("normal:200,40", "normal", (200.0, 40.0)),
    ("lognormal:300,0.5", "lognormal", (300.0, 0.5)),
    ("uniform:10,20", "uniform", (10, 20)),
    (" Normal: 200 , 40 ", "normal", (200.0, 40.0)),
])
def test_each_distribution_parses(spec, kind, params):
    d = parse_length_spec(spec)
    assert (d.kind, d.params, d.spec) == (kind, params, spec)


def test_empirical_reads_a_file_of_lengths(tmp_path):
    f = tmp_path / "lens.txt"
    f.write_text("# ISL from a trace\n12\n\n40  # long one\n7\n", encoding="utf-8")
    d = parse_length_spec(f"empirical:{f}")
    assert d.params == (12.0, 40.0, 7.0)
    assert set(draw_lengths(d, 200, seed=3)) == {7, 12, 40}


@pytest.mark.parametrize("spec, message", [
    ("gauss:1,2", "expected fixed:N, normal:MEAN,SD"),
    ("normal:200", "normal takes 2 number(s), normal:MEAN,SD"),
    ("fixed:0", "N must be an integer in [1, 1048576], got 0"),
    ("fixed:2.5", "N must be an integer in [1, 1048576], got 2.5"),
    ("fixed:99999999", "N must be an integer in [1, 1048576]"),
    ("normal:abc,3", "'abc' is not a number"),
    ("normal:inf,3", "'inf' is not a finite number"),
    ("normal:200,-1", "SD must be in [0, 1048576], got -1"),
    ("lognormal:200,9", "SIGMA must be in [0, 5], got 9"),
    ("uniform:20,10", "LO 20 is above HI 10"),
    ("empirical:", "empirical needs a file"),
])
def test_bad_specs_are_one_line_errors_naming_the_option(spec, message):
    with pytest.raises(InputError) as e:
        parse_length_spec(spec, "--output-tokens")
    text = str(e.value)
    assert text.startswith(f"--output-tokens {spec!r}") and message in text and "\n" not in text


def test_bad_empirical_file_names_the_line(tmp_path):
    f = tmp_path / "lens.txt"
    f.write_text("12\nabc\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"lens.txt:2: --input-tokens lengths file: 'abc' is not an integer"):
        parse_length_spec(f"empirical:{f}")
    with pytest.raises(InputError, match="cannot|not found|no such|missing"):
        parse_length_spec(f"empirical:{tmp_path / 'absent.txt'}")
    (tmp_path / "empty.txt").write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(InputError, match="holds no length"):
        parse_length_spec(f"empirical:{tmp_path / 'empty.txt'}")


def test_sampler_moments_match_the_distribution_within_sampling_error():
    """10 000 draws, fixed seed: mean within 4 standard errors, sd within 4 of its own."""
    n = 10_000
    for spec in ("normal:200,40", "lognormal:300,0.5", "uniform:10,20"):
        d = parse_length_spec(spec)
        x = np.array(draw_lengths(d, n, seed=12345), dtype=float)
        se_mean = d.sd / math.sqrt(n)
        assert abs(x.mean() - d.mean) < 4 * se_mean + 0.5, spec  # + rounding
        kurt = {"normal": 3.0, "uniform": 1.8}.get(d.kind, float(np.mean((x - x.mean()) ** 4) / x.var() ** 2))
        se_sd = d.sd * math.sqrt((kurt - 1) / (4 * n))
        assert abs(x.std(ddof=1) - d.sd) < 4 * se_sd + 0.3, spec
        assert x.min() >= 1 and x.max() <= MAX_LENGTH_TOKENS and np.all(x == np.round(x))


def test_draws_are_integers_at_least_one_and_reproducible():
    d = parse_length_spec("normal:3,50")  # much mass below 1: clipped to 1
    a = draw_lengths(d, 500, seed=1)
    assert min(a) == 1 and all(isinstance(v, int) for v in a)
    assert a == draw_lengths(d, 500, seed=1) != draw_lengths(d, 500, seed=2)
    # Request i's length depends on (seed, direction, i) only: paired across runs and arms.
    assert [length_of(d, 1, "input", i) for i in (10, 3)] == [a[10], a[3]]
    assert draw_lengths(parse_length_spec("fixed:9"), 4, seed=0) == [9, 9, 9, 9]


def test_load_spec_validates_lengths_like_bench():
    assert LoadSpec.model_validate({"input_tokens": "normal:200,40"}).input_tokens == "normal:200,40"
    with pytest.raises(InputError, match=r"^--input-tokens 'normal:1': normal takes 2"):
        LoadSpec.from_options(input_tokens="normal:1")
    with pytest.raises(InputError, match="--input-tokens needs --requests, not --duration"):
        LoadSpec.from_options(input_tokens="fixed:10", duration_s=5.0)
    with pytest.raises(InputError, match="give either --input-tokens or --prompts"):
        LoadSpec.from_options(input_tokens="fixed:10", prompts="p.jsonl")
    with pytest.raises(InputError, match="--length-seed"):
        LoadSpec.from_options(length_seed=-1)
    cfg = LoadSpec(input_tokens="fixed:10", output_tokens="uniform:1,4", length_seed=5).to_load_config("http://x")
    assert (cfg.input_tokens, cfg.output_tokens, cfg.length_seed) == ("fixed:10", "uniform:1,4", 5)


def test_experiment_file_length_spec_is_validated_by_load_spec():
    text = ('url = "http://127.0.0.1:8080"\nruns_per_arm = 2\n\n[load]\nrequests = 8\n'
            'input_tokens = "SPEC"\noutput_tokens = "fixed:32"\n\n'
            '[[arms]]\nname = "a"\nswitch = "true {value}"\nvalue = 1\n\n'
            '[[arms]]\nname = "b"\nswitch = "true {value}"\nvalue = 2\n')
    good = parse_experiment(text.replace("SPEC", "normal:200,40"), "exp.toml")
    assert good.load.input_tokens == "normal:200,40" and good.load.output_tokens == "fixed:32"
    with pytest.raises(InputError) as e:
        parse_experiment(text.replace("SPEC", "uniform:9,3"), "exp.toml")
    msg = str(e.value)
    assert "\n" not in msg and "exp.toml line 6" in msg and "input_tokens" in msg and "LO 9 is above HI 3" in msg


def test_bench_bad_spec_is_one_line_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tokcaliper", "bench", "--url", "http://127.0.0.1:9",
                           "--output-tokens", "lognormal:100", "--db", str(tmp_path / "r.db")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("tokcaliper: error: --output-tokens 'lognormal:100': lognormal takes "
                                   "2 number(s), lognormal:MEDIAN,SIGMA")


def _rec(i: int, req_in: int | None, got_in: int | None, req_out: int | None, got_out: int) -> RequestRecord:
    return RequestRecord(index=i, start_s=0.0, prompt_tokens=got_in, output_tokens=got_out,
                         token_count_source="usage", requested_prompt_tokens=req_in,
                         requested_output_tokens=req_out)


def test_report_figures_and_warning_past_the_bound():
    assert accuracy([]).n == 0
    a = accuracy([(10, 10), (20, 21), (30, 27)])
    assert (a.n, a.max_abs_error, a.share_exact) == (3, 3, pytest.approx(1 / 3))
    assert a.mean_abs_error == pytest.approx(4 / 3) and a.mean_requested == 20 and a.sd_requested == 10
    exact = length_report([_rec(i, 50, 50, 8, 8) for i in range(20)], "tokenize", 30.0)
    assert exact is not None and exact.warnings == [] and exact.input.share_exact == 1.0
    off = length_report([_rec(i, 50, 50 + (i % 3 == 0), 8, 8) for i in range(20)], "tokenize", 30.0)
    assert off is not None and len(off.warnings) == 1 and off.warnings[0].startswith("input lengths: 65% of 20 requests exact (bound 95%), |error| mean 0.350, max 1")
    assert length_report([_rec(0, None, 5, None, 8)], None, None) is None
    approx = length_report([_rec(0, 50, 50, None, 8)], "calibrated", 12.0)
    assert approx is not None and any("approximate" in w for w in approx.warnings)


def _bench(url: str, db, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tokcaliper", "bench", "--url", url, "--repeat", "1", "-c", "2", "-n", "6",
         "--warmup", "0", "--idle-seconds", "0", "--telemetry-interval", "0", "--db", str(db), *extra],
        capture_output=True, text=True, timeout=120)


def test_output_lengths_are_sent_stored_and_checked(tmp_path):
    """--output-tokens: max_tokens = the drawn length; requested and counted stored per request;
    a server that stops short is named with its figures."""
    db = tmp_path / "r.db"
    with FakeServer(FakeTiming(ttft_s=0.002, itl_s=0.001, tokens=8)) as srv:
        ok = _bench(srv.base_url, db, "--output-tokens", "uniform:2,6", "--json")
        short = _bench(srv.base_url, db, "--output-tokens", "fixed:12")
    assert ok.returncode == 0, ok.stderr
    out = json.loads(ok.stdout)
    lengths = out["runs"][0]["metrics"]["lengths"]
    assert lengths["output"]["share_exact"] == 1.0 and lengths["input"] is None and lengths["warnings"] == []
    assert out["config"]["output_tokens"] == "uniform:2,6" and out["config"]["length_seed"] == 0
    with Store(db) as s:
        first, second = (s.get_run(r.id) for r in s.list_runs())
    want = draw_lengths(parse_length_spec("uniform:2,6"), 6, seed=0, option="output")
    assert [r.requested_output_tokens for r in first.requests] == want
    assert [r.output_tokens for r in first.requests] == want
    assert [r.requested_prompt_tokens for r in first.requests] == [None] * 6
    assert second.metrics.lengths.output.max_abs_error == 4
    assert "output lengths: 0% of 6 requests exact" in short.stdout + short.stderr


def test_server_without_usage_growth_cannot_size_prompts(tmp_path):
    """No /tokenize and a prompt count that ignores the prompt: one line, nothing measured."""
    with FakeServer(FakeTiming(ttft_s=0.002, itl_s=0.001, tokens=8)) as srv:
        proc = _bench(srv.base_url, tmp_path / "r.db", "--input-tokens", "fixed:100")
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("tokcaliper: error:") and "--input-tokens" in last


def test_server_without_tokenize_is_calibrated_from_probe_usage(monkeypatch):
    """No /tokenize: tokens per word and the overhead come from two probes' usage.prompt_tokens,
    the prompt is sized from that fit, and the method says it is approximate."""
    from tokcaliper.load import synthetic
    from tokcaliper.model.run import LoadConfig

    def usage(_self, text: str) -> int:  # a server whose template adds 20 tokens, 2 tokens per word
        return 20 + 2 * len(text.split())

    monkeypatch.setattr(synthetic._Server, "find_tokenizer", lambda self: False)
    monkeypatch.setattr(synthetic._Server, "prompt_tokens", usage)
    w = synthetic.SyntheticWorkload(LoadConfig(base_url="http://127.0.0.1:9", input_tokens="fixed:120"))
    w.prepare()
    assert w.method == "calibrated" and w._per_word == 2.0
    plan = w.plan(3, "[s.3] ", [])
    assert plan.input_tokens == 120 and usage(None, plan.messages[0]["content"]) == 120
    flat = synthetic.SyntheticWorkload(LoadConfig(base_url="http://127.0.0.1:9", input_tokens="fixed:120"))
    monkeypatch.setattr(synthetic._Server, "prompt_tokens", lambda self, text: 7)
    with pytest.raises(Exception, match="does not grow with the prompt"):
        flat.prepare()
