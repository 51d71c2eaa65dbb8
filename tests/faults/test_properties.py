"""Property-based tests (hypothesis): no input crashes a parser with anything but a
one-line :class:`~tokcaliper.errors.TokcaliperError`.

Parsers covered: the audit record importers (files of records, and one row),
the experiment-file parser, the prompts parser and the Prometheus ``/metrics``
reader. Inputs are both random text and structured near-misses built from the
formats' own vocabulary (real keys, odd values), which reach the validators
rather than stopping at the first syntax error. Derandomised and bounded
(the ``tokcaliper`` hypothesis profile of ``tests/conftest.py``: fixed seed,
300 examples each, no deadline); ``scripts/fuzz.sh`` runs them with random
seeds and 10⁴ examples each and prints how many inputs each parser survived.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokcaliper.audit.importers import load_records, record_from_row
from tokcaliper.errors import TokcaliperError
from tokcaliper.experiment.spec import parse_experiment
from tokcaliper.load.prompts import _parse_jsonl
from tokcaliper.servers.counters import parse_metrics

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def one_line(e: BaseException) -> None:
    assert isinstance(e, TokcaliperError), f"{type(e).__name__}: {e}"
    msg = str(e)
    assert msg and "\n" not in msg and "Traceback" not in msg, msg


# ---------------------------------------------------------------- values that break naive code
odd_numbers = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1e-320, 1e308, 2**63, True, False]),
)
odd_text = st.one_of(st.text(max_size=30), st.sampled_from(["", "[/x]", "\x1b[2J", "\ud800", "a\u2028b", "NaN",
                                                            "1e999", "  12 ", "0x10", "-", "∞"]))
json_scalar = st.one_of(st.none(), odd_numbers, odd_text)
json_value = st.recursive(json_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(odd_text, inner, max_size=4)), max_leaves=12)

RECORD_KEYS = ["id", "model", "name", "params_total", "params_active", "is_moe", "hardware", "gpu_name",
               "gpu_count", "split_mode", "quantization", "weights", "bytes_per_param", "batch_size",
               "tok_s_decode", "tok_s", "power_w", "acceptance_length", "draft_window", "notes", "source_url",
               "launch_command", "context_length", "prompt_tokens", "output_tokens", "concurrency",
               "engine", "records", "output_throughput", "mean_ttft_ms", "model_id", "max_concurrency"]
record_like = st.recursive(
    json_scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(RECORD_KEYS), inner, max_size=8)),
    max_leaves=16)


def _dump(value) -> str:  # type: ignore[no-untyped-def]
    return json.dumps(value, ensure_ascii=False, allow_nan=True)


# ---------------------------------------------------------------- record importers
@settings(**SETTINGS)
@given(row=record_like)
def test_record_from_row_never_raises(row):
    rec, problem = record_from_row(row, file="f.json", index=0)
    assert (rec is None) != (problem is None) or (rec is not None)
    if problem is not None:
        assert "\n" not in str(problem.message)


@settings(**SETTINGS)
@given(suffix=st.sampled_from([".json", ".jsonl", ".csv"]),
       content=st.one_of(
           st.binary(max_size=200),
           st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
           record_like.map(lambda v: _dump(v).encode("utf-8", "surrogatepass")),
           st.lists(record_like, max_size=4).map(
               lambda vs: "\n".join(_dump(v) for v in vs).encode("utf-8", "surrogatepass")),
           st.lists(st.lists(odd_text, min_size=1, max_size=4), min_size=1, max_size=4).map(
               lambda rows: "\n".join(",".join(r) for r in
                                      [["model.name", "tok_s_decode", "batch_size", "hardware.gpu_name"], *rows])
               .encode("utf-8", "surrogatepass")),
       ))
def test_record_files_never_crash(suffix, content):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / f"records{suffix}"
        p.write_bytes(content)
        try:
            res = load_records(p)
        except Exception as e:  # noqa: BLE001 - the property: only our one-line errors
            one_line(e)
            return
        for prob in res.problems:
            assert "\n" not in str(prob.message)


# ---------------------------------------------------------------- experiment files
TOP_KEYS = ["name", "url", "server_cmd", "runs_per_arm", "warmup_runs", "rest_s", "order", "seed", "metric",
            "effect", "equivalence_margin", "noise_band", "alpha", "until_decided", "bogus"]
LOAD_KEYS = ["model", "concurrency", "requests", "duration_s", "warmup", "max_tokens", "temperature",
             "ignore_eos", "prompts", "unique_prompts", "request_timeout_s", "health_timeout_s",
             "telemetry_interval_s", "idle_seconds", "bogus"]
ARM_KEYS = ["name", "switch", "value", "readback", "expect", "expect_regex", "server_cmd", "shell", "bogus"]
toml_value = st.one_of(
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
    st.sampled_from(["inf", "-inf", "nan", "0.0", "1e308", "true", "false", "[]", "[1, 2]", "{}",
                     '"abba"', '"alternate"', '"random-blocks"', '"{value}"', '"nvidia-smi -pl {value}"',
                     '"llama-server --port {port}"', '"(["', '"http://127.0.0.1:8080"', '"aggregate_output_tok_s"',
                     "1979-05-27T07:32:00Z"]),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.text(max_size=20).map(lambda t: json.dumps(t)),
)


def _table(keys, values):  # type: ignore[no-untyped-def]
    return "\n".join(f"{k} = {v}" for k, v in zip(keys, values))


experiment_text = st.builds(
    lambda top, topv, load, loadv, arms: "\n".join([
        _table(top, topv), "[load]", _table(load, loadv),
        *[f"[[arms]]\n{_table(k, v)}" for k, v in arms]]),
    st.lists(st.sampled_from(TOP_KEYS), max_size=8, unique=True), st.lists(toml_value, min_size=8, max_size=8),
    st.lists(st.sampled_from(LOAD_KEYS), max_size=6, unique=True), st.lists(toml_value, min_size=6, max_size=6),
    st.lists(st.tuples(st.lists(st.sampled_from(ARM_KEYS), max_size=5, unique=True),
                       st.lists(toml_value, min_size=5, max_size=5)), max_size=3),
)


@settings(**SETTINGS)
@given(text=st.one_of(st.text(max_size=300), experiment_text))
def test_experiment_parser_never_crashes(text):
    try:
        spec = parse_experiment(text, "e.toml")
    except Exception as e:  # noqa: BLE001
        one_line(e)
        return
    # whatever validates has finite durations and a usable run order
    assert math.isfinite(spec.rest_s) and math.isfinite(spec.load.request_timeout_s)
    assert spec.run_order()


# ---------------------------------------------------------------- prompts
prompt_line = st.one_of(
    json_value.map(_dump),
    st.builds(lambda p: _dump({"prompt": p}), odd_text),
    st.builds(lambda ms: _dump({"messages": ms}),
              st.lists(st.dictionaries(st.sampled_from(["role", "content", "name"]), json_scalar, max_size=3),
                       max_size=3)),
    st.integers(min_value=1, max_value=3000).map(lambda n: "[" * n),
    st.integers(min_value=4000, max_value=6000).map(lambda n: '{"prompt": "x", "n": ' + "7" * n + "}"),
    st.text(max_size=40),
)


@settings(**SETTINGS)
@given(lines=st.lists(prompt_line, max_size=5), sep=st.sampled_from(["\n", "\r\n"]))
def test_prompts_parser_never_crashes(lines, sep):
    try:
        out = _parse_jsonl(sep.join(lines), "p.jsonl")
    except Exception as e:  # noqa: BLE001
        one_line(e)
        return
    assert out and all(m and all(isinstance(x["content"], str) for x in m) for m in out)


# ---------------------------------------------------------------- Prometheus /metrics
metric_name = st.sampled_from(["llamacpp:tokens_predicted_total", "vllm:spec_decode_num_drafts", "x", "a_b",
                               "bad-name", "9lives", "_total", ""])
metrics_line = st.one_of(
    st.builds(lambda n, t: f"# TYPE {n} {t}", metric_name,
              st.sampled_from(["counter", "gauge", "histogram", "summary", "untyped", "info", "bogus", ""])),
    st.builds(lambda n: f"# HELP {n} some help \\n text", metric_name),
    st.builds(lambda n, lab, v: f"{n}{lab} {v}", metric_name,
              st.sampled_from(["", '{gpu="0"}', '{a="b",c="d"}', '{a="', "{}", '{a="\\"q\\""}', "{=}"]),
              st.one_of(odd_numbers.map(str), st.sampled_from(["NaN", "+Inf", "-Inf", "1e999", "x", ""]))),
    st.text(max_size=40),
)


@settings(**SETTINGS)
@given(lines=st.lists(metrics_line, max_size=8))
def test_metrics_parser_never_crashes(lines):
    try:
        counters, gauges = parse_metrics("\n".join(lines) + "\n")
    except Exception as e:  # noqa: BLE001
        one_line(e)
        return
    assert all(isinstance(v, float) for v in [*counters.values(), *gauges.values()])
