"""`experiment show` and `compare --experiment` say when a measured covariate explains an arm's
spread, in the noise floor's sentence (issue 21 item 4; one home: stats.noise.explain_spread)."""

from __future__ import annotations

import json

from tokcaliper.cli import main
from tokcaliper.experiment.spec import parse_experiment
from tokcaliper.load.summary import summarize
from tokcaliper.model.run import LoadConfig, RequestRecord, Run
from tokcaliper.model.telemetry import TelemetrySummary
from tokcaliper.store import Store

from tests.experiment.bench_runs import two_arm_spec

SPEC = two_arm_spec(5)
# Arm A's slow runs are those other processes shared the host with; arm B is steady.
A = [(118.0, 0.05), (12.6, 0.90), (110.0, 0.10), (15.0, 0.85), (100.0, 0.20)]
B = [(101.0, 0.30), (99.0, 0.10), (100.5, 0.60), (99.5, 0.05), (100.0, 0.40)]


def _run(exp: str, arm: str, pos: int, tok_s: float, foreign: float) -> Run:
    wall = 200.0 / tok_s  # 2 requests × 100 tokens: the aggregate is tok_s
    recs = [RequestRecord(index=i, start_s=0.0, ttft_s=0.05, e2e_s=wall, output_tokens=100,
                          token_count_source="usage", itl_s=[(wall - 0.05) / 99] * 99) for i in range(2)]
    return Run(session=exp, arm=arm, repetition=pos // 2, position=pos, started_at="2026-01-01T00:00:00.000Z",
               finished_at="2026-01-01T00:00:10.000Z", command_line="t", tool_version="0.1.0",
               config=LoadConfig(base_url="http://127.0.0.1:1", concurrency=2), metrics=summarize(recs),
               requests=recs, telemetry=TelemetrySummary(interval_s=0.1, foreign_cpu_cores_mean=foreign))


def test_an_arm_whose_spread_foreign_load_explains_says_so(tmp_path, capsys):
    db = tmp_path / "x.db"
    spec = parse_experiment(SPEC, "t.toml")
    with Store(db) as s:
        s.create_experiment("e1", "t", spec.model_dump(mode="json"), SPEC, "2026-01-01T00:00:00.000Z")
        for k, ((ta, fa), (tb, fb)) in enumerate(zip(A, B)):
            s.save_run(_run("e1", "A", 2 * k, ta, fa))
            s.save_run(_run("e1", "B", 2 * k + 1, tb, fb))
    assert main(["experiment", "show", "e1", "--db", str(db), "--json"]) in (0, None)
    arms = {a["arm"]: a for a in json.loads(capsys.readouterr().out)["arms"]}
    assert arms["A"]["explained_by"]["name"] == "foreign_cpu_cores"
    assert arms["B"]["explanation"] is None  # B's foreign load does not go with its spread
    sentence = arms["A"]["explanation"]
    assert sentence.startswith("CV 74.1%: other processes' CPU (cores used) 0.875 on average in the 2 "
                               "lowest runs, 0.0750 in the 2 highest (ρ = -1.00 with aggregate_output_tok_s")
    for cmd in (["experiment", "show", "e1"], ["compare", "--experiment", "e1"]):
        assert main([*cmd, "--db", str(db)]) in (0, None)
        out = " ".join(capsys.readouterr().out.split())
        assert f"A: {sentence}" in out and "B: CV" not in out


def test_a_runs_known_cause_names_other_processes_on_its_gpu():
    from tokcaliper.experiment.analysis import run_cause
    from tokcaliper.model.telemetry import DeviceSummary

    run = _run("e", "A", 0, 100.0, 0.1)
    assert run_cause(run) is None
    gpu = DeviceSummary(device="gpu0", kind="nvidia_gpu", foreign_procs_max=1, foreign_sm_mean_pct=12.5)
    run.telemetry = run.telemetry.model_copy(update={"devices": [gpu]})
    assert run_cause(run) == "other processes took 12.5 % of gpu0's SM time"
