"""Issue 22 items 12, 23, 24: what reaches the user reads as tokcaliper's own sentence.

12: no library warning (scipy's ConstantInputWarning) and no source path on stderr.
23: pydantic's internals never show ("List should have at least 2 items after validation",
    "arms[0].value.str", "Value error, "); spec log names a line it cannot use.
24: `runs` calls damaged every row `show` calls damaged.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from tokcaliper.store import Store

from .conftest import make_run

INTERNALS = ("Input should", "after validation", "Value error", ".str:", ".int:", ".float:",
             "errors.pydantic.dev", "For further information")


def _rec(batch: int) -> dict:
    return {"id": f"r{batch}", "model": {"name": "27B dense", "params_total": 27.8e9, "is_moe": False},
            "hardware": {"gpu_name": "RTX 5090", "gpu_count": 1},
            "quantization": {"weights": "NVFP4", "bytes_per_param": 0.5},
            "batch_size": batch, "tok_s_decode": 79}


def test_audit_brief_prints_no_library_warning(tmp_path):
    p = tmp_path / "const.json"  # tok/s constant over batch sizes: scipy's spearmanr warns
    p.write_text(json.dumps([_rec(b) for b in (1, 2, 4, 8)]))
    proc = subprocess.run([sys.executable, "-m", "tokcaliper", "audit", "--brief", str(p)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode in (0, 10), proc.stderr
    for text in (proc.stdout, proc.stderr):
        assert "ConstantInputWarning" not in text and "Warning:" not in text  # before: both, with a path
        assert ".py:" not in text


# ---------------------------------------------------------------- 23: pydantic internals

EXP_HEAD = 'url = "http://127.0.0.1:9"\nruns_per_arm = 2\n'
ARM = '[[arms]]\nname = "{name}"\nswitch = "true"\n'


@pytest.mark.parametrize("body, expected", [
    (ARM.format(name="a"), "line 3: arms: needs at least 2 items, got 1"),
    (ARM.format(name="a") + "value = nan\n" + ARM.format(name="b"),
     "line 6: arms[0].value: must be a finite number, got nan"),
    (ARM.format(name="a") + 'value = [1]\n' + ARM.format(name="b"),
     "arms[0].value: expected text, got a list"),
])
def test_experiment_file_messages_have_no_internals(tmp_path, body, expected):
    from tokcaliper.errors import InputError
    from tokcaliper.experiment.spec import load_experiment

    p = tmp_path / "e.toml"
    p.write_text(EXP_HEAD + body)
    with pytest.raises(InputError) as info:
        load_experiment(p)
    msg = str(info.value)
    assert expected in msg and "(and" not in msg, msg  # before: "value.str: Input should … (and 2 more)"
    assert not any(s in msg for s in INTERNALS), msg


def test_damaged_timestamp_message_has_no_internals(tmp_path, cli):
    db = tmp_path / "t.db"
    with Store(db) as s:
        rid = s.save_run(make_run())
    c = sqlite3.connect(db)
    c.execute("UPDATE runs SET started_at = 'yesterday' WHERE id = ?", (rid,))
    c.commit()
    c.close()
    code, _out, err = cli("show", str(rid), "--db", str(db))
    assert code == 4 and "started_at:" in err
    assert not any(s in err for s in INTERNALS), err  # before: "started_at: Value error, …"


def test_spec_sweep_bad_repeat_names_the_option(cli, tmp_path):
    code, _out, err = cli("spec", "sweep", "--server-cmd", "x --n {k} --port {port}", "--k", "2,4",
                          "--repeat", "1", "--db", str(tmp_path / "s.db"))
    assert code == 2 and "--repeat must be ≥ 2, got 1" in err, err
    assert not any(s in err for s in INTERNALS), err  # before: a multi-line pydantic dump


def test_spec_log_names_the_line_with_a_negative_count(tmp_path, cli):
    p = tmp_path / "vllm.log"
    p.write_text("INFO start\nSpecDecoding metrics: Mean acceptance length: 2.45, Accepted: -301 tokens, "
                 "Drafted: 600 tokens\n")
    code, _out, err = cli("spec", "log", str(p))
    assert code == 2 and "line 2: Accepted -301" in err and "negative" in err, err
    # before: 'no "SpecDecoding metrics" line found'
    p.write_text("SpecDecoding metrics: acceptance 0.5\n")
    code, _out, err = cli("spec", "log", str(p))
    assert code == 2 and "1 line(s) mention" in err and "line 1" in err, err


def test_one_translation_collapses_union_members():
    from pydantic import BaseModel, ConfigDict, ValidationError

    from tokcaliper.validation import explain

    class M(BaseModel):
        model_config = ConfigDict(strict=True, allow_inf_nan=False)
        value: str | int | float | None = None

    with pytest.raises(ValidationError) as info:
        M.model_validate({"value": float("nan")})
    assert explain(info.value) == "value: must be a finite number, got nan"


def test_a_bound_reads_the_same_in_records_experiment_files_and_model_configs():
    # Issue 24: one phrasing of a broken bound (validation.must_be) and of "N more".
    from tokcaliper.audit.facts.params import params_from_config
    from tokcaliper.audit.importers import record_from_row
    from tokcaliper.errors import InputError
    from tokcaliper.experiment.spec import parse_experiment

    _, problem = record_from_row({**_rec(0), "tok_s_decode": -1})
    with pytest.raises(InputError) as exp_err:
        parse_experiment(EXP_HEAD.replace("runs_per_arm = 2", "runs_per_arm = 0") + ARM.format(name="a")
                         + ARM.format(name="b"))
    with pytest.raises(InputError) as cfg_err:
        params_from_config({"hidden_size": 0, "num_hidden_layers": 2, "vocab_size": 10})
    assert "batch_size: must be ≥ 1, got 0 (and 1 more)" in str(problem), str(problem)
    assert "runs_per_arm: must be ≥ 2, got 0" in str(exp_err.value), str(exp_err.value)
    assert str(cfg_err.value).endswith("hidden_size must be a whole number ≥ 1, got 0")


# ---------------------------------------------------------------- 24: damaged rows

@pytest.mark.parametrize("column, value", [
    ("started_at", "not a time"),
    ("config_json", json.dumps({"base_url": 5})),
    ("host_json", "{not json"),
    ("metrics_json", json.dumps({"completed": -1})),
    ("finished_at", "2026-13-45"),
    ("telemetry_json", "[1, 2]"),
])
def test_runs_calls_damaged_what_show_calls_damaged(tmp_path, cli, column, value):
    db = tmp_path / "t.db"
    with Store(db) as s:
        good, bad = (s.save_run(make_run()) for _ in range(2))
    c = sqlite3.connect(db)
    c.execute(f"UPDATE runs SET {column} = ? WHERE id = ?", (value, bad))
    c.commit()
    c.close()
    assert cli("show", str(bad), "--db", str(db))[0] == 4
    assert cli("show", str(good), "--db", str(db))[0] == 0
    code, out, err = cli("runs", "--db", str(db), "--json")
    assert code == 0
    doc = json.loads(out)
    assert [r["id"] for r in doc["runs"]] == [good]  # before: the damaged row listed as intact
    assert [d["id"] for d in doc["damaged"]] == [bad]
    # --json: the damaged run is a warning inside the document (the sink), not a stderr line
    assert doc["warnings"][0]["code"] == "damaged-run-skipped" and f"run {bad} in" in doc["warnings"][0]["message"]
