"""An experiment file's [load] takes --slo and --steady-state, validated by LoadSpec."""

from __future__ import annotations

import pytest

from tokcaliper.errors import InputError
from tokcaliper.experiment.spec import parse_experiment

from .test_spec import GOOD


def test_load_slo_and_steady_state_reach_the_run_config():
    text = GOOD.replace("requests = 256", 'requests = 256\nslo = "ttft=200ms,e2e=10s"\nsteady_state = 0.9')
    cfg = parse_experiment(text).load.to_load_config("http://127.0.0.1:8080")
    assert cfg.slo_s == {"ttft": 0.2, "e2e": 10.0} and cfg.steady_state == 0.9
    plain = parse_experiment(GOOD).load.to_load_config("http://127.0.0.1:8080")
    assert plain.slo_s is None and plain.steady_state is None


@pytest.mark.parametrize("line, needle", [
    ('slo = "ttft=200"', "load.slo: item 'ttft=200' needs a unit, ms or s"),
    ('slo = "tft=2ms"', "load.slo: item 'tft=2ms': unknown SLO 'tft'"),
    ("steady_state = 1.2", "load.steady_state: must be ≤ 1, got 1.2"),
])
def test_bad_values_name_the_key_and_its_line(line, needle):
    text = GOOD.replace("requests = 256", f"requests = 256\n{line}")
    with pytest.raises(InputError) as e:
        parse_experiment(text, "exp.toml")
    msg = str(e.value)
    assert "\n" not in msg and needle in msg, msg
    assert "line 9" in msg, msg
