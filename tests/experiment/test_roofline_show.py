"""`experiment show` and `compare --experiment` print each arm's fraction of its roofline (issue 25)."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

from tokcaliper.cli import main
from tokcaliper.experiment.execute import create_experiment, execute_experiment
from tokcaliper.experiment.spec import parse_experiment
from tokcaliper.model.served import ServedModel
from tokcaliper.model.telemetry import BandwidthProbe, HostInfo
from tokcaliper.store import Store

FAKE = Path(__file__).resolve().parents[1] / "load" / "fake_server.py"
SERVE = f"{sys.executable} {FAKE} --host {{host}} --port {{port}}"
SPEC = f'''
runs_per_arm = 2
[[arms]]
name = "A"
server_cmd = "{SERVE}"
[[arms]]
name = "B"
server_cmd = "{SERVE} --itl 0.004"
[load]
concurrency = 1
requests = 2
max_tokens = 4
warmup = 0
idle_seconds = 0
telemetry_interval_s = 0
'''
SMOL = ServedModel(engine="llama.cpp", name="SmolLM2", quantization="Q4_1", params_total=134515008.0,
                   is_moe=False, params_source="/v1/models meta.n_params", slots=4)
HOST = HostInfo(timestamp_utc="2026-12-02T00:00:00.000Z", cpu_model="test CPU",
                bandwidth=[BandwidthProbe(device="host", method="numpy copy", repetitions=5, gb_s=20.0,
                                          gb_s_min=19.0, spread=0.05)])


def test_experiment_show_and_compare_print_the_roofline_per_arm(tmp_path, capsys):
    db = tmp_path / "x.db"
    spec = parse_experiment(SPEC, "t.toml")
    with Store(db) as store:
        exp_id = create_experiment(spec, "", store)
        execute_experiment(exp_id, spec, store, command_line="test")
    # No host information was given, and the fake server has no /props: both facts are named.
    assert main(["experiment", "show", exp_id, "--db", str(db), "--json"]) in (0, None)
    (a, b) = json.loads(capsys.readouterr().out)["roofline"]
    assert a["arm"] == "A" and a["n"] == 0
    assert a["missing"][0] == "device: the run stores no host information"
    assert "quantization (bytes per weight) of model" in a["missing"][1]
    # With the facts a llama-server gives and a stored probe, each arm has its fraction and spread.
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE runs SET served_json = ?, host_json = ?",
                     (SMOL.model_dump_json(), HOST.model_dump_json()))
    conn.close()
    assert main(["experiment", "show", exp_id, "--db", str(db), "--json"]) in (0, None)
    arms = json.loads(capsys.readouterr().out)["roofline"]
    assert [x["arm"] for x in arms] == ["A", "B"] and all(x["n"] == 2 and x["std"] is not None for x in arms)
    assert all(r["fraction"] > 0 for x in arms for r in x["runs"])  # the fake server is no SmolLM2: any size
    for cmd in (["experiment", "show", exp_id], ["compare", "--experiment", exp_id]):
        assert main([*cmd, "--db", str(db)]) in (0, None)
        out = " ".join(capsys.readouterr().out.split())
        assert "roofline: per-stream decode ÷ (bandwidth / bytes per token)" in out
        assert "A: per-stream" in out and "B: per-stream" in out and "(n=2, CV" in out
        assert "bytes per token = 0.1345e9 params [all (dense)] × 0.625 B = 0.0841 GB" in out
