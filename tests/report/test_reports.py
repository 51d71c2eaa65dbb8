"""``tokcaliper report`` for every reportable result: one exporter per format, audits, sweeps.

The audit page is opened offline in headless Chromium (the repository's own record
files, so it always runs); the sweep page is built from stored runs whose levels
have known throughput and TTFT, so the sentence and the drawn SLO band can be checked.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest

from tokcaliper.cli import main
from tokcaliper.errors import InputError
from tokcaliper.numbers import num
from tokcaliper.experiment.spec import ExperimentSpec
from tokcaliper.report.formats import EXPORTERS, Exporter, exporter, outline

from .chromium_page import keep_screenshot, load

REPO = Path(__file__).resolve().parents[2]
H100 = REPO / "examples" / "audit" / "h100_records.json"
#: Real llama-bench output of the local SmolLM2 build (tests/data/peers/PROVENANCE.md).
LLAMA_BENCH = REPO / "tests" / "data" / "peers" / "llama_bench" / "smollm2_cpu_llama_bench_built_here.jsonl"
OFFLINE_BAD = ("<script", "http://", "https://", "<link", "@import", "url(")


def test_every_format_is_one_exporter_behind_one_interface():
    assert set(EXPORTERS) == {"html", "markdown", "json"}
    for name, exp in EXPORTERS.items():
        assert isinstance(exp, Exporter) and exp.format == name
    assert sorted(e.suffix for e in EXPORTERS.values()) == [".html", ".json", ".md"]
    with pytest.raises(InputError, match="--format must be html, markdown, json, got 'pdf'"):
        exporter("pdf")
    with pytest.raises(TypeError, match="not a reportable result: dict"):
        outline({})  # type: ignore[arg-type]


def test_audit_report_opens_offline_in_chromium(tmp_path: Path, capsys):
    page = tmp_path / "audit.html"
    assert main(["report", "--audit", str(H100), "-o", str(page), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "audit" and doc["verdict"] == "fail"
    # the findings first: both records fail A3 (620 tok/s claimed, the roofline allows about a third)
    assert doc["sentence"].startswith("2 record(s) audited: 2 fail, 0 warn, 0 pass, 0 n/a; look first at ")
    assert "A3" in doc["sentence"]
    text = page.read_text(encoding="utf-8")
    for bad in OFFLINE_BAD:
        assert bad not in text, bad
    seen = load(page, tmp_path)
    assert doc["sentence"] in " ".join(html.unescape(seen["text"]).split())
    assert len(seen["images"]) == 1 and all(w > 0 for w in seen["images"]), seen["images"]
    assert seen["resources"] == []  # no request left the page
    assert 'alt="claims against their roofline bound, log scale"' in text
    shot = keep_screenshot(page, tmp_path, "report-audit.png")
    assert shot.stat().st_size > 10_000
    # the same content as Markdown, and the data as JSON: the claim ÷ bound the table shows
    md, js = tmp_path / "audit.md", tmp_path / "audit.json"
    assert main(["report", "--audit", str(H100), "--format", "markdown", "-o", str(md)]) == 0
    assert main(["report", "--audit", str(H100), "--format", "json", "-o", str(js)]) == 0
    data = json.loads(js.read_text())
    claims = data["report"]["claims"]
    assert [c["claimed_tok_s"] for c in claims] == [620, 620]
    for c in claims:
        assert c["over_bound"] == pytest.approx(c["claimed_tok_s"] / c["bound_tok_s"]) and c["over_bound"] > 2
    body = md.read_text()
    assert body.startswith(f"### Audit of {H100}\n") and f"**{doc['sentence']}**" in body
    assert "| check | what | fail | warn | pass | n/a | source-wide |" in body
    row = next(ln for ln in body.splitlines() if ln.startswith(f"| {claims[0]['label']} | {num(620, 4)} |"))
    assert f"| ×{num(claims[0]['over_bound'], 3)} |" in row
    assert "_plot: claims against their roofline bound, log scale" in body


def test_a_record_file_as_the_id_is_audited(tmp_path: Path, capsys):
    # real llama-bench output: no claim has a bound (a CPU without a stated bandwidth), and the page says so
    md = tmp_path / "lb.md"
    assert main(["report", str(LLAMA_BENCH), "--format", "markdown", "-o", str(md), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "audit" and re.match(r"\d+ record\(s\) audited: ", doc["sentence"])
    body = md.read_text()
    assert "Not checked: " in body or "| A3 |" in body
    assert main(["report", str(LLAMA_BENCH), "-o", str(tmp_path / "lb.html")]) == 0
    assert "no record has both a claim and a bound" not in body  # the words live in the image only


def _sweep_db(tmp_path: Path) -> tuple[Path, dict[str, tuple[float, float]]]:
    """A stored 3-level concurrency sweep with an SLO; level → (tok/s, TTFT s) it was built with."""
    from tokcaliper.load.summary import summarize
    from tokcaliper.model.run import LoadConfig, RequestRecord, Run
    from tokcaliper.store import Store

    levels = {"c=1": (100.0, 0.050), "c=2": (180.0, 0.120), "c=4": (250.0, 0.400)}
    spec = {"name": "sweep c", "metric": "aggregate_output_tok_s", "order": "random-blocks", "seed": 3,
            "runs_per_arm": 3, "server_cmd": "srv --port {port}", "load": {"slo": "ttft=200ms"},
            "arms": [{"name": a, "load": {"concurrency": int(a[2:])}} for a in levels]}
    rng = np.random.default_rng(5)
    db = tmp_path / "sweep.db"
    with Store(db) as s:
        s.create_experiment("sw-1", "sweep c", spec, "# toml", "2026-01-01T00:00:00.000Z")
        for pos, arm in ExperimentSpec.model_validate(spec).run_order():
            tok_s, ttft = levels[arm]
            wall = 400.0 / (tok_s * float(rng.normal(1, 0.01)))
            t = ttft * float(rng.normal(1, 0.01))
            recs = [RequestRecord(index=i, start_s=0.0, ttft_s=t, e2e_s=wall, output_tokens=100,
                                  token_count_source="usage", itl_s=[(wall - t) / 99] * 99) for i in range(4)]
            s.save_run(Run(session="sw-1", arm=arm, position=pos, started_at="2026-01-01T00:00:00.000Z",
                           finished_at="2026-01-01T00:00:10.000Z", command_line="tokcaliper bench -c 1,2,4",
                           tool_version="0.1.0", config=LoadConfig(base_url="http://127.0.0.1:1",
                                                                   concurrency=int(arm[2:])),
                           metrics=summarize(recs), requests=recs))
    return db, levels


def test_sweep_report_from_stored_runs(tmp_path: Path, capsys):
    from tokcaliper.experiment.report_data import gather_store_report
    from tokcaliper.store import Store

    db, levels = _sweep_db(tmp_path)
    page = tmp_path / "sweep.html"
    assert main(["report", "sw-1", "--db", str(db), "-o", str(page), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "sweep" and doc["verdict"] == "pass"
    peak = max(levels, key=lambda a: levels[a][0])
    within = max((a for a in levels if levels[a][1] < 0.2), key=lambda a: int(a[2:]))
    assert doc["sentence"].startswith(f"Sweep over concurrency 1, 2, 4: output throughput peaks at {peak} with ")
    assert doc["sentence"].endswith(f"the highest level within the TTFT SLO of 200 ms (its CI's upper end "
                                    f"below it) is {within}")
    text = page.read_text(encoding="utf-8")
    assert all(bad not in text for bad in OFFLINE_BAD)
    assert len(re.findall(r'<img alt="[^"]+" src="data:image/png;base64,', text)) == 2
    # the figure drawn: one error-bar point per level, the SLO band above 200 ms
    with Store(db) as store:
        rep = gather_store_report(store, "sw-1")
    fig = next(p for p in outline(rep).plots if p.alt == "latency against throughput").draw()
    ax = fig.axes[0]
    assert len(ax.containers) == 1 and len(ax.containers[0].lines[0].get_xdata()) == 3
    band = [p for p in ax.patches if "misses the SLO" in (p.get_label() or "")]
    assert len(band) == 1 and band[0].get_extents().height > 0
    assert [lv.meets_slo for lv in rep.levels] == [levels[a][1] < 0.2 for a in levels]
    for lv in rep.levels:  # each level's CI holds the throughput it was built with
        lo, hi = lv.throughput.ci95
        assert lo < levels[lv.arm][0] * 1.03 and hi > levels[lv.arm][0] * 0.97
    md = tmp_path / "sweep.md"
    assert main(["report", "sw-1", "--db", str(db), "--format", "markdown", "-o", str(md)]) == 0
    body = md.read_text()
    assert f"**{doc['sentence']}**" in body
    head = "| level | n | output tok/s [95% CI] | TTFT p50 ms [95% CI] | TTFT p99 (ms) [95% CI] |"
    assert head in body
    rows = [ln for ln in body.splitlines() if ln.split("|")[1:2] and ln.split("|")[1].strip() in levels]
    assert [r.split("|")[7].strip() for r in rows] == ["yes", "yes", "no"]
    assert "| c=2 vs c=1 | aggregate_output_tok_s |" in body and "| c=4 vs c=1 |" in body


def test_html_tables_right_align_figure_columns_and_left_align_words():
    from tokcaliper.report.formats.document import Document, Table
    from tokcaliper.report.formats.html import write_html

    table = Table(head=["arm", "mean (tok/s)", "95% CI", "verdict", "p"],
                  rows=[["t1", "17.00", "-14.53 … 48.53", "inconclusive", "n/a"],
                        ["t2", "31.19", "×1.418 … 2.386", "faster by 3.3%", "0.064"]])
    page = write_html(Document(kind="test", title="t", sentence="s", verdict="inconclusive", blocks=[table]))
    head = re.search(r"<table><tr>(.*?)</tr>", page).group(1)
    assert head == ('<th>arm</th><th class="num">mean (tok/s)</th><th class="num">95% CI</th>'
                    '<th>verdict</th><th class="num">p</th>')
    assert '<td>faster by 3.3%</td><td class="num">0.064</td>' in page
    assert '<td class="num">n/a</td>' in page  # a blank in a figure column lines up with them
