"""The experiment file: TOML + pydantic, errors naming the key and its line."""

import json

import pytest

from tokcaliper.errors import InputError
from tokcaliper.experiment.spec import ExperimentSpec, key_lines, load_experiment, parse_experiment

GOOD = '''\
name = "power cap 200 W against 180 W"
url = "http://127.0.0.1:8080"
runs_per_arm = 5
order = "abba"

[load]
concurrency = 64
requests = 256

[[arms]]
name = "200W"
switch = "nvidia-smi -pl {value}"
value = "200"
readback = "nvidia-smi --query-gpu=power.limit --format=csv,noheader"
expect = "200.00 W"

[[arms]]
name = "180W"
switch = "nvidia-smi -pl {value}"
value = 180
readback = "nvidia-smi --query-gpu=power.limit --format=csv,noheader"
expect_regex = "180(\\\\.0+)? W"
'''


def _err(text: str) -> str:
    with pytest.raises(InputError) as e:
        parse_experiment(text, "exp.toml")
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_good_file():
    spec = parse_experiment(GOOD)
    assert [a.name for a in spec.arms] == ["200W", "180W"]
    assert spec.arms[1].value_text == "180" and spec.arms[0].kind == "switch"
    assert spec.metric == "aggregate_output_tok_s" and spec.higher_is_better
    assert spec.warmup_runs == 1 and spec.rest_s == 0
    assert [a for _, a in spec.run_order()][:4] == ["200W", "180W", "180W", "200W"]
    cfg = spec.load.to_load_config("http://127.0.0.1:8080", model="smol")
    assert (cfg.concurrency, cfg.requests, cfg.warmup, cfg.model) == (64, 256, 64, "smol")


def test_wrong_type_names_key_and_line():
    bad = GOOD.replace("concurrency = 64", 'concurrency = "64"')
    assert _line_of(bad, "concurrency") == 7
    assert _err(bad) == ("exp.toml line 7: load.concurrency: Input should be a valid integer, "
                         "got '64'")


def test_unknown_key_is_an_error():
    bad = GOOD.replace('value = 180\n', 'value = 180\npowr = 3\n')
    assert _err(bad) == f"exp.toml line {_line_of(bad, 'powr')}: arms[1].powr: unknown key"
    bad = "colour = 1\n" + GOOD
    assert _err(bad) == "exp.toml line 1: colour: unknown key"


def _nth_line(text: str, needle: str, nth: int = 0) -> int:
    hits = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    return hits[nth]


@pytest.mark.parametrize("old,new,needle,nth,path,words", [
    ('order = "abba"', 'order = "zigzag"', "order", 0, "order", "'alternate'"),
    ('order = "abba"', 'order = "abba"\nseed = 3', "seed", 0, "seed", "only by order = random-blocks"),
    ("runs_per_arm = 5", "runs_per_arm = 1", "runs_per_arm", 0, "runs_per_arm",
     "greater than or equal to 2"),
    ("runs_per_arm = 5", 'runs_per_arm = 5\nmetric = "speed"', "metric", 0, "metric",
     "unknown metric 'speed'"),
    ('name = "180W"', 'name = "200W"', 'name = "200W"', 1, "arms[1].name", "used twice"),
    ('expect = "200.00 W"\n', "", "readback", 0, "arms[0].readback", "exactly one of expect"),
    # a missing key has no line of its own: its table's header
    ('value = "200"\n', "", "[[arms]]", 0, "arms[0].value", "no value"),
    ("requests = 256", "requests = 256\nduration_s = 30.0", "duration_s", 0, "load.duration_s",
     "not both"),
    ("-pl {value}\"\nvalue = 180", "-pl {watts}\"\nvalue = 180", "{watts}", 0, "arms[1].switch",
     "unknown placeholder {watts}"),
    ('expect_regex = "180(\\\\.0+)? W"', 'expect_regex = "180("', "expect_regex", 0,
     "arms[1].expect_regex", "not a valid regular expression"),
    # a rule about the whole file with its key absent: line 1
    ('url = "http://127.0.0.1:8080"\n', "", None, 0, "url", "switch arms need exactly one of url"),
])
def test_validation_errors(old, new, needle, nth, path, words):
    bad = GOOD.replace(old, new, 1)
    assert bad != GOOD
    msg = _err(bad)
    line = 1 if needle is None else _nth_line(bad, needle, nth)
    assert msg.startswith(f"exp.toml line {line}: {path}: "), msg
    assert words in msg


def test_managed_server_arms():
    text = '''
runs_per_arm = 3
[[arms]]
name = "k5"
server_cmd = "llama-server --port {port} --draft-max {value}"
value = 5
[[arms]]
name = "k7"
server_cmd = "llama-server --port {port} --draft-max {value}"
value = 7
'''
    spec = parse_experiment(text)
    assert {a.kind for a in spec.arms} == {"server"}
    # the embedded default server and model may be named in a server command only
    local = text.replace("llama-server --port", "{llama_server} -m {smollm2} --port")
    assert parse_experiment(local).arms[0].server_cmd.startswith("{llama_server} -m {smollm2}")
    assert "unknown placeholder {smollm2}" in _err(
        GOOD.replace('switch = "nvidia-smi -pl {value}"', 'switch = "nvidia-smi {smollm2}"', 1))
    assert "url" in _err(text.replace("runs_per_arm = 3", 'runs_per_arm = 3\nurl = "http://x:1"'))
    mixed = text.replace('server_cmd = "llama-server --port {port} --draft-max {value}"\nvalue = 7',
                         'switch = "true"')
    assert "not a mix" in _err(mixed)
    both = text.replace('value = 5', 'value = 5\nswitch = "true"')
    assert "exactly one of server_cmd" in _err(both)


def test_toml_syntax_error_and_missing_file(tmp_path):
    assert _err("x = [").startswith("exp.toml: invalid TOML: ")
    with pytest.raises(InputError, match="cannot read experiment file"):
        load_experiment(tmp_path / "missing.toml")
    p = tmp_path / "e.toml"
    p.write_text(GOOD.replace("runs_per_arm = 5", "runs_per_arm = 5.5"), encoding="utf-8")
    with pytest.raises(InputError, match=rf"^{p} line 3: runs_per_arm: "):
        load_experiment(p)


def test_default_order_is_random_blocks_with_a_drawn_stored_seed():
    # issue 17 item 1: alternate puts one run-step of drift into every pair ratio; the
    # default is random-blocks, and a seed the file does not give is drawn and stored
    text = GOOD.replace('order = "abba"\n', "")
    spec = parse_experiment(text)
    assert spec.order == "random-blocks" and isinstance(spec.seed, int)
    again = ExperimentSpec.model_validate(json.loads(json.dumps(spec.model_dump(mode="json"))))
    assert again.seed == spec.seed and again.run_order() == spec.run_order()
    explicit = parse_experiment(GOOD.replace('order = "abba"', 'order = "random-blocks"'))
    assert explicit.seed is not None
    assert parse_experiment(GOOD.replace('order = "abba"', 'order = "random-blocks"\nseed = 9')).seed == 9


def test_stored_spec_round_trips_through_json():
    # the runner stores spec.model_dump(mode="json") and validates it again on resume
    spec = parse_experiment(GOOD.replace('order = "abba"', 'order = "random-blocks"\nseed = 4'))
    again = ExperimentSpec.model_validate(json.loads(json.dumps(spec.model_dump(mode="json"))))
    assert again == spec and again.run_order() == spec.run_order()


def test_key_lines():
    lines = key_lines(GOOD)
    assert lines[("load",)] == 6 and lines[("load", "requests")] == 8
    assert lines[("arms", 0)] == 10 and lines[("arms", 1, "value")] == 20
    text = 'a = """\nb = 1\n"""\nc.d = 2\n[t]\n"q k" = 3\n'
    lines = key_lines(text)
    assert ("b",) not in lines and lines[("c", "d")] == 4 and lines[("t", "q k")] == 6
