"""The draft-window sweep: built as an experiment, tabulated from stored runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tokcaliper.errors import InputError
from tokcaliper.experiment.spec import LoadSpec
from tokcaliper.experiment.specdec_sweep import sweep_experiment

#: For ngram-simple the draft length is --spec-ngram-simple-size-m (a first version swept
#: --spec-draft-n-max, which ngram-simple ignores: the table then showed AL 3.67 > k + 1 = 3
#: at k = 2, flagged "impossible" — the reason the table also reports k_eff above k). The
#: lookup n-gram is 2 long: with n = 3 this build never drafts at m = 2 (checked by hand:
#: the counters stay at 0), which the table reports as a failed row.
TEMPLATE = "{llama_server} -m {smollm2} --host {host} --port {port} --metrics -np 1 -c 2048 -t 2 " \
           "--spec-type ngram-simple --spec-ngram-simple-size-n 2 --spec-ngram-simple-size-m {k}"


def test_the_sweep_is_an_experiment_with_one_arm_per_window():
    spec = sweep_experiment(TEMPLATE, [2, 4, 8], runs_per_k=3, load=LoadSpec(requests=2))
    assert [a.name for a in spec.arms] == ["k=2", "k=4", "k=8"]
    assert all(a.kind == "server" and "{value}" in a.server_cmd and "{k}" not in a.server_cmd for a in spec.arms)
    assert [a.value for a in spec.arms] == [2, 4, 8]
    # abba across 3 windows: ABC CBA ABC — every k 3 times, balanced.
    assert [arm for _p, arm in spec.run_order()] == ["k=2", "k=4", "k=8", "k=8", "k=4", "k=2",
                                                      "k=2", "k=4", "k=8"]


@pytest.mark.parametrize("template,ks,match", [
    ("llama-server --port {port}", [2, 4], "needs {k}"),
    (TEMPLATE, [4], "at least 2 distinct windows"),
    (TEMPLATE, [4, 4], "at least 2 distinct windows"),
    (TEMPLATE, [0, 4], "at least 2 distinct windows"),
])
def test_bad_sweeps_are_input_errors(template, ks, match):
    with pytest.raises(InputError, match=match):
        sweep_experiment(template, ks, runs_per_k=2, load=LoadSpec())


@pytest.mark.server
def test_ngram_sweep_on_the_real_server_prints_the_table(tmp_path: Path, local_llama):
    prompts = tmp_path / "repetitive.jsonl"
    prompts.write_text("\n".join(json.dumps({"prompt": p}) for p in (
        "Repeat this line ten times: the cat sat on the mat.",
        "Write the numbers from 1 to 30 separated by commas.",
    )) + "\n")
    db = tmp_path / "sweep.db"
    proc = subprocess.run(
        [sys.executable, "-m", "tokcaliper", "spec", "sweep", "--server-cmd", TEMPLATE, "--k", "2,4,8",
         "--repeat", "2", "--warmup-runs", "0", "--requests", "2", "--max-tokens", "64",
         "--prompts", str(prompts), "--db", str(db), "--json"],
        capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    rows = {r["k"]: r for r in out["table"]["rows"]}
    assert sorted(rows) == [2, 4, 8]
    for k, row in rows.items():
        assert row["failed"] is None, row
        assert not [n for n in row["notes"] if "impossible" in n or "k_eff" in n], row["notes"]
        assert row["al_n"] == 2 and 1.0 <= row["al"] <= k + 1  # AL counts the bonus token
        assert row["al_per_position"] == pytest.approx(row["al"] / (k + 1))
        assert 0.0 <= row["acceptance_rate"] <= 1.0
        assert row["throughput"] > 0 and row["throughput_n"] == 2
    assert out["table"]["best_k_by_al"] in (2, 4, 8)
    assert out["table"]["best_k_by_al_per_position"] in (2, 4, 8)
    # The text view of the same stored sweep, rebuilt without running anything.
    again = subprocess.run([sys.executable, "-m", "tokcaliper", "spec", "sweep", "--experiment",
                            out["experiment"], "--db", str(db)], capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "AL/(k+1)" in again.stdout
