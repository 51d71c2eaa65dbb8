"""Real bench sessions on the local llama-server: a session's report, and the CI gate (issue 19 item 5).

Three short sessions are measured once for the module, each against a llama-server
tokcaliper starts with the default's flags and one thread, pinned to core 0 (``taskset -c 0``),
so the client keeps the other core: ``base`` and ``aa`` (the A/A: the same configuration, a
new server) with the default's 4 slots, ``slow`` with one slot (``-np 1``: the four streams of
a wave are served in turn, so the median TTFT waits for 1.5 requests' decode of 64 tokens;
measured ×2.14 and ×2.22, ITL ×0.30-0.40). With 16 tokens at 2 streams the wait was one
decode for half the requests, ×1.56 once and inconclusive (TTFT CV 40.6 %) on a run where
this host's CPU speed moved by ×1.5. Then:

- the report of ``base`` (HTML opened offline in Chromium, and Markdown) states its noise floor first;
- ``baseline save`` of ``base``, then ``compare --baseline`` of ``slow`` exits 20 (regression)
  and of ``aa`` (the same configuration again) exits 0; both Markdown summaries are
  checked against the gate's table.
"""

from __future__ import annotations

import html
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tokcaliper.cli import main
from tokcaliper.errors import EXIT_REGRESSION
from tokcaliper.model.metrics import get_metric
from tokcaliper.model.telemetry import FOREIGN_CPU_BOUND_CORES
from tokcaliper.numbers import num

from .chromium_page import keep_screenshot, load

pytestmark = pytest.mark.server

#: Runs per session, each 4 requests (one wave) × 64 tokens at 4 streams. Five, not three: on the
#: CI host the runs' CV reached 15-19 %, and at n = 3 Welch's df fell to about 2.5, so the slow
#: session's TTFT ×2.23 (CI ×1.49-×3.31) had p = 0.026, 0.052 after Holm's step: inconclusive.
RUNS = 5
LOAD = ["--repeat", str(RUNS), "-c", "4", "-n", "4", "--max-tokens", "64", "--warmup", "2",
        "--idle-seconds", "0", "--telemetry-interval", "0.2"]
#: The gate's metrics, in its table's order (docs/ci-gate.md).
GATED = ["aggregate_output_tok_s", "ttft_p50_ms", "itl_p50_ms"]


def _tk(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tokcaliper", *args], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def sessions(local_llama, tmp_path_factory) -> dict:
    db = tmp_path_factory.mktemp("gate") / "gate.db"

    def pinned(slots: int) -> list[str]:
        # the default server's flags on core 0 only, with one thread, so the client keeps the other
        # core and the runs are steady; with one slot the streams take turns
        return ["--server-cmd", f"taskset -c 0 {local_llama.server} -m {local_llama.model} --host {{host}} "
                f"--port {{port}} --metrics -np {slots} -c 4096 -t 1"]

    out: dict = {"db": db, "seconds": {}}
    for name, target in (("base", pinned(4)), ("aa", pinned(4)), ("slow", pinned(1))):
        t0 = time.monotonic()
        proc = _tk("bench", *target, *LOAD, "--db", str(db), "--json")
        out["seconds"][name] = time.monotonic() - t0
        assert proc.returncode == 0, proc.stderr[-2000:]
        out[name] = json.loads(proc.stdout)
    print("bench seconds:", {k: round(v, 1) for k, v in out["seconds"].items()})
    return out


def test_report_of_a_real_bench_session(sessions, tmp_path: Path, capsys):
    db, base = sessions["db"], sessions["base"]
    sid = base["session"]
    page = tmp_path / "session.html"
    capsys.readouterr()
    assert main(["report", "--session", sid, "--db", str(db), "-o", str(page), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    label = get_metric("aggregate_output_tok_s").label
    assert doc["kind"] == "session" and doc["verdict"] == "noise-floor"
    assert doc["sentence"].startswith(f"Noise floor of session {sid}, arm default, {label}: CV ")
    assert f"over {RUNS} runs" in doc["sentence"] and f"with {RUNS} runs each" in doc["sentence"]
    seen = load(page, tmp_path)
    assert doc["sentence"] in " ".join(html.unescape(seen["text"]).split())
    assert len(seen["images"]) == 4 and all(w > 0 for w in seen["images"]), seen["images"]
    assert seen["resources"] == []
    assert "No telemetry was recorded" not in page.read_text()  # sampled at 5 Hz
    keep_screenshot(page, tmp_path, "report-session.png")
    md = tmp_path / "session.md"
    assert main(["report", sid, "--db", str(db), "--format", "markdown", "-o", str(md)]) == 0
    body = md.read_text()
    assert body.startswith(f"### Bench session {sid}\n") and f"**{doc['sentence']}**" in body
    assert ("| metric | n | mean | 95% CI of the mean | sd | CV [95% CI] | MDE 1 run/arm | "
            f"MDE {RUNS} runs/arm |") in body
    values = [r["metrics"]["aggregate_output_tok_s"] for r in base["runs"] if r["valid"]]
    assert f"| {label} | {len(values)} | {num(sum(values) / len(values), 4)} |" in body
    assert "#### Exactly what ran" in body and "tokcaliper bench --server-cmd" in body


def _gate_rows(text: str) -> list[list[str]]:
    lines = text.splitlines()
    assert "| metric | baseline | new | new vs baseline (95% CI) | verdict |" in lines
    return [[c.strip() for c in ln.split("|")[1:-1]] for ln in lines if ln.startswith("| `")]


def test_the_gate_on_real_runs(sessions, tmp_path: Path, capsys):
    db = str(sessions["db"])
    assert main(["baseline", "save", "base", "--session", sessions["base"]["session"], "--db", db]) == 0
    results = {}
    for name in ("slow", "aa"):
        md = tmp_path / f"{name}.md"
        t0 = time.monotonic()
        capsys.readouterr()
        code = main(["compare", "--baseline", "base", "--session", sessions[name]["session"], "--db", db,
                     "--summary-md", str(md), "--json"])
        results[name] = (code, json.loads(capsys.readouterr().out), md.read_text(), time.monotonic() - t0)
    code, doc, text, _ = results["slow"]
    ratios = {m["metric"]: m["decision_ratio"] for m in doc["comparison"]["metrics"]}
    print(f"slow (1 slot, base 4) against base: exit {code}, ratios new/baseline {ratios}")
    assert code == EXIT_REGRESSION and doc["outcome"] == "regression", text
    rows = _gate_rows(text)
    assert [r[0] for r in rows] == [f"`{m}` ({get_metric(m).unit})" for m in GATED]
    assert "slower" in [r[4] for r in rows]
    assert text.startswith("### ❌ tokcaliper gate: regression — session ")
    for r, m in zip(rows, GATED):  # n of each side, and the ratio cell the JSON has
        assert f"(n={RUNS}, CV " in r[1] and f"(n={RUNS}, CV " in r[2]
        assert r[3].startswith(f"×{num(ratios[m], 4)} [")
    sessions["gate"] = results


def _foreign_cores(db: Path, session: str) -> list[float]:
    from tokcaliper.store import Store

    with Store(db, create=False) as store:
        runs = store.session_runs(session)
    return [r.telemetry.foreign_cpu_cores_mean or 0.0 for r in runs if r.telemetry is not None]


def test_an_a_a_on_real_runs_passes_the_gate(sessions):
    if "gate" not in sessions:
        pytest.skip("needs test_the_gate_on_real_runs first")
    # Unpaired sessions measured one after the other: other processes' CPU during either one is
    # a real drift the gate rightly reports (seen on the shared host: the A/A at x0.25). The
    # telemetry says whether that happened; on a quiet host the A/A must pass.
    foreign = max(f for n in ("base", "aa") for f in _foreign_cores(sessions["db"], sessions[n]["session"]))
    if foreign >= FOREIGN_CPU_BOUND_CORES:
        pytest.skip(f"other processes used {foreign:.2f} cores during base or aa (bound "
                    f"{FOREIGN_CPU_BOUND_CORES}): the host, not the server, changed between them")
    code, doc, text, _ = sessions["gate"]["aa"]
    ratios = {m["metric"]: m["decision_ratio"] for m in doc["comparison"]["metrics"]}
    print(f"A/A against base: exit {code}, outcome {doc['outcome']}, ratios {ratios}")
    assert code == 0 and doc["outcome"] in ("pass", "inconclusive"), text
    rows = _gate_rows(text)
    assert [r[0] for r in rows] == [f"`{m}` ({get_metric(m).unit})" for m in GATED]
    assert set(r[4] for r in rows) <= {"equivalent", "inconclusive", "faster"}
    assert text.startswith(f"### {'✅' if doc['outcome'] == 'pass' else '⚠️'} tokcaliper gate: {doc['outcome']}")
