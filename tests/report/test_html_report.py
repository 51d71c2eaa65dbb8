"""The experiment report: plots with their uncertainty, an offline HTML page read in Chromium."""

from __future__ import annotations

import html
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tokcaliper.cli import main
from tokcaliper.model.telemetry import TelemetrySample
from tokcaliper.report import plots
from tokcaliper.store import Store

from .chromium_page import keep_screenshot, load

REPO = Path(__file__).resolve().parents[2]


def _png_ok(fig) -> None:
    data = plots.to_bytes(fig)
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 3000
    assert plots.to_bytes(fig, "svg").lstrip().startswith(b"<?xml")


def test_each_plot_draws_and_missing_data_says_so():
    rng = np.random.default_rng(3)
    _png_ok(plots.runs_by_arm({"A": [100, 101, 99.5], "B": [104, 103, 90.0]}, metric="tok/s",
                              unit="tok/s", marked={"B": [None, None, "outlier"]}))
    _png_ok(plots.ecdf({"A": rng.normal(50, 5, 40).tolist()}, metric="TTFT", unit="ms"))
    _png_ok(plots.covariate_fit([1, 2, 3], [2, 4, 6.5], slope=2.2, intercept=-0.2, covariate="clock",
                                x_unit="MHz", metric="tok/s", unit="tok/s", rho=1.0))
    _png_ok(plots.latency_vs_throughput(
        [{"label": "c=1", "x": 10, "x_ci": (9, 11), "y": 50, "y_ci": (45, 55), "n": 3},
         {"label": "c=4", "x": 30, "x_ci": (28, 33), "y": 80, "y_ci": (70, 90), "n": 3}],
        x_label="tok/s", y_label="TTFT p99 (ms)", slo=85))
    _png_ok(plots.window_table([{"k": 2, "al": 2.1, "al_ci": (2.0, 2.2), "n": 3},
                                {"k": 4, "al": 2.9, "al_ci": (2.7, 3.1), "n": 3}]))
    _png_ok(plots.roofline_claims([{"label": "H100 8B bf16", "claimed": 620, "bound": 210},
                                   {"label": "A100 8B int4", "claimed": 90, "bound": 400}]))
    samples = [TelemetrySample(device="gpu0", t_mono_s=t / 10, t_wall_s=t / 10, clock_mhz=1980 - t,
                               power_w=300 + t, temperature_c=60) for t in range(50)]
    _png_ok(plots.telemetry_lanes(samples, runs=[(0.5, 2.0, "A 1"), (2.5, 4.5, "B 2")]))
    empty = plots.telemetry_lanes([], title="telemetry")
    _png_ok(empty)
    assert "no telemetry" in " ".join(t.get_text() for ax in empty.axes for t in ax.texts)
    with pytest.raises(ValueError, match="png or .svg"):
        plots.save(empty, Path("x.pdf"))


def test_telemetry_lanes_break_between_runs_and_one_pair_has_whole_pair_ticks():
    # Sampled at 0.1 s during two runs, nothing between 2.0 s and 4.0 s: the line breaks there.
    ts = [t / 10 for t in range(21)] + [4 + t / 10 for t in range(11)]
    samples = [TelemetrySample(device="cpu", t_mono_s=t, t_wall_s=t, utilization_pct=50 + t) for t in ts]
    fig = plots.telemetry_lanes(samples, runs=[(0.0, 2.0, "A 1"), (4.0, 5.0, "B 2")])
    (line,) = fig.axes[0].get_lines()
    ys = list(line.get_ydata())
    assert len(ys) == len(ts) + 1 and sum(1 for y in ys if y != y) == 1  # one NaN: one break
    assert line.get_xdata()[21] == 3.0  # inside the gap, between 2.0 and 4.0
    step = type("Step", (), {"k": 2, "cum_ratio": 1.84, "ci": (1.42, 2.39)})()
    ax = plots.running_verdict([step], noise_band=0.01, mde=0.041, metric="tok/s").axes[0]
    ax.figure.canvas.draw()
    assert [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]] == [2.0]




@pytest.mark.server
def test_report_of_a_real_experiment_opens_offline_in_chromium(tmp_path: Path, local_llama):
    exp = tmp_path / "threads.toml"
    exp.write_text("""
name = "threads, report test"
runs_per_arm = 2
warmup_runs = 0
order = "alternate"
[load]
concurrency = 2
requests = 4
max_tokens = 8
idle_seconds = 0
telemetry_interval_s = 0.2
[[arms]]
name = "t1"
server_cmd = "{llama_server} -m {smollm2} --host {host} --port {port} -np 2 -c 1024 -t 1"
[[arms]]
name = "t2"
server_cmd = "{llama_server} -m {smollm2} --host {host} --port {port} -np 2 -c 1024 -t 2"
""")
    db = tmp_path / "r.db"
    run = subprocess.run([sys.executable, "-m", "tokcaliper", "experiment", "run", str(exp),
                          "--db", str(db), "--json"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    with Store(db) as store:
        (row,) = store.list_experiments()
    page = tmp_path / "report.html"
    out = subprocess.run([sys.executable, "-m", "tokcaliper", "report", row.id, "--db", str(db),
                          "-o", str(page), "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    text = page.read_text(encoding="utf-8")
    for bad in ("<script", "http://", "https://", "<link", "@import", "url("):
        assert bad not in text, bad  # self-contained: nothing to fetch
    seen = load(page, tmp_path)
    assert html.unescape(doc["sentence"]).split(":")[0] in html.unescape(seen["text"])
    assert "t2 against t1" in html.unescape(seen["text"])
    assert len(seen["images"]) >= 5 and all(w > 0 for w in seen["images"]), seen["images"]
    assert seen["resources"] == []  # no request left the page
    shot = keep_screenshot(page, tmp_path, "report-experiment.png")
    assert shot.stat().st_size > 10_000
    md = tmp_path / "report.md"
    assert main(["report", row.id, "--db", str(db), "--format", "markdown", "-o", str(md)]) == 0
    body = md.read_text()
    assert body.startswith(f"### Experiment {row.id}") and "| t2 vs t1 | aggregate_output_tok_s |" in body
    assert "#### Against the physical limit" in body and "t2: per-stream" in body
    assert "Against the physical limit" in text  # the real runs know their model and device


def test_report_of_a_stored_experiment_opens_offline(tmp_path: Path):
    # the same page from stored runs (no server): the browser half of the test above
    from tokcaliper.load.summary import summarize
    from tokcaliper.model.run import LoadConfig, RequestRecord, Run

    rng = np.random.default_rng(4)
    db = tmp_path / "s.db"
    spec = {"name": "ab", "metric": "aggregate_output_tok_s", "order": "alternate",
            "arms": [{"name": "A", "server_cmd": "srv -t 1"}, {"name": "B", "server_cmd": "srv -t 2"}]}
    with Store(db) as s:
        s.create_experiment("exp-9", "ab", spec, "# toml", "2026-01-01T00:00:00.000Z")
        for pos in range(8):
            arm, base = ("A", 100.0) if pos % 2 == 0 else ("B", 120.0)
            wall = 200.0 / (base * float(rng.normal(1, 0.01)))
            recs = [RequestRecord(index=i, start_s=0.0, ttft_s=0.05 + 0.01 * i, e2e_s=wall,
                                  output_tokens=100, token_count_source="usage",
                                  itl_s=[(wall - 0.05) / 99] * 99) for i in range(2)]
            s.save_run(Run(session="exp-9", arm=arm, position=pos, started_at="2026-01-01T00:00:00.000Z",
                           finished_at="2026-01-01T00:00:10.000Z", command_line="tokcaliper experiment run",
                           tool_version="0.1.0", config=LoadConfig(base_url="http://127.0.0.1:1"),
                           metrics=summarize(recs), requests=recs))
    page = tmp_path / "r.html"
    assert main(["report", "exp-9", "--db", str(db), "-o", str(page)]) == 0
    seen = load(page, tmp_path)
    assert "B against A, aggregate_output_tok_s: faster by" in html.unescape(seen["text"])
    assert len(seen["images"]) == 5 and all(w > 0 for w in seen["images"]) and seen["resources"] == []
    assert "no telemetry was recorded" in page.read_text().lower()
    # each arm against its roofline (issue 25): these stored runs name the facts they lack
    assert "Against the physical limit" in page.read_text() and "missing" in page.read_text()


def test_report_errors_are_one_line(tmp_path, capsys):
    db = tmp_path / "e.db"
    with Store(db):
        pass
    assert main(["report", "nope", "--db", str(db)]) == 2
    assert "no experiment or session 'nope'" in capsys.readouterr().err
    assert main(["report", "nope", "--db", str(db), "--format", "pdf"]) == 2
    assert "--format must be html, markdown, json, got 'pdf'" in capsys.readouterr().err
    assert main(["report", "--db", str(db)]) == 2
    assert "give one of: an ID, --session NAME or --audit FILE" in capsys.readouterr().err
    assert main(["report", "--audit", str(tmp_path / "none.json"), "--db", str(db)]) == 2
