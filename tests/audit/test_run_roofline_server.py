"""The real llama-server with SmolLM2: a run's roofline is the audit's A3 bound (issue 25)."""

from __future__ import annotations

import json

import pytest

from tokcaliper.audit.run_roofline import run_roofline
from tokcaliper.cli import main
from tokcaliper.numbers import num
from tokcaliper.store import Store

pytestmark = pytest.mark.server


def test_run_roofline_equals_a3_for_the_same_file_quantisation_and_bandwidth(
        llama_server, smollm2_gguf, tmp_path, capsys):
    db = tmp_path / "r.db"
    assert main(["bench", "--url", llama_server, "-r", "1", "-n", "2", "-c", "2", "--warmup", "0",
                 "--max-tokens", "8", "--idle-seconds", "0", "--telemetry-interval", "0",
                 "--db", str(db), "--json"]) in (0, None)
    out = json.loads(capsys.readouterr().out)
    (arm,) = out["roofline"]
    with Store(db) as s:
        run = s.get_run(out["runs"][0]["id"])
    assert run.served.quantization == "Q4_1" and run.served.path == str(smollm2_gguf)
    assert run.served.params_total == 134515008  # llama.cpp's n_params: Σ tensor elements
    rr = run_roofline(run)
    assert any("parameters in the run's record: GGUF header of SmolLM2" in s for s in rr.sources)
    assert arm["runs"][0]["bound_tok_s"] == pytest.approx(rr.bound_tok_s)
    assert 0 < rr.fraction <= 1
    # The audit, given the same model file, quantisation and bandwidth by hand, gives the same bound.
    device = {"gpu_name": rr.device.split(" (")[0].split(" ", 1)[1]} if rr.device.startswith("gpu") else \
        {"gpu_name": run.host.cpu_model or "host CPU", "device_kind": "cpu"}
    rec = tmp_path / "claim.json"
    rec.write_text(json.dumps({"model": {"name": "SmolLM2-135M-Instruct"}, "quantization": {"weights": "Q4_1"},
                               "hardware": device, "tok_s_decode": rr.per_stream_tok_s}))
    assert main(["audit", "--json", "--model-file", str(smollm2_gguf), "--achievable-bandwidth",
                 repr(rr.measured_gb_s), str(rec)]) == 0
    a3 = next(v for v in json.loads(capsys.readouterr().out)["records"][0]["verdicts"] if v["check"] == "A3")
    assert num(a3["inputs"]["roofline_tok_s"], 4) == num(rr.bound_tok_s, 4)
    assert num(a3["inputs"]["claim_over_roofline"], 3) == num(rr.fraction, 3)
