"""A measured run against its roofline (issue 25): A3's bound applied to the run's own facts."""

from __future__ import annotations

import json

import pytest

from tokcaliper.audit.run_roofline import arm_rooflines, run_record, run_roofline
from tokcaliper.cli import main
from tokcaliper.load.summary import summarize
from tokcaliper.model.run import LoadConfig, RequestRecord, Run
from tokcaliper.model.served import ServedModel
from tokcaliper.model.telemetry import BandwidthProbe, GpuInfo, HostInfo
from tokcaliper.numbers import num
from tokcaliper.store import Store

SMOL = ServedModel(engine="llama.cpp", name="SmolLM2-135M-Instruct.Q4_1.gguf", path="/m/SmolLM2.gguf",
                   quantization="Q4_1", params_total=134515008.0, is_moe=False,
                   params_source="/v1/models meta.n_params (llama.cpp: Σ tensor elements of the loaded file)",
                   size_bytes=96576768, slots=4)


def host(gpus: list[GpuInfo] | None = None, gb_s: float | None = 20.0) -> HostInfo:
    probes = [BandwidthProbe(device="host", name="AMD EPYC", method="numpy copy", repetitions=5,
                             gb_s=gb_s, gb_s_min=gb_s * 0.9, spread=0.1)] if gb_s else []
    if gpus:
        probes.append(BandwidthProbe(device="gpu0", name=gpus[0].name, method="torch copy", repetitions=5,
                                     gb_s=4000.0, gb_s_min=3900.0, spread=0.025))
    return HostInfo(timestamp_utc="2026-12-02T00:00:00.000Z", cpu_model="AMD EPYC",
                    memory_total_bytes=32 * 10**9, gpus=gpus or [], bandwidth=probes,
                    gpu_unavailable_reason=None if gpus else "no NVIDIA GPU: test")


def make_run(served: ServedModel | None = SMOL, h: HostInfo | None = None, decode_s: float = 1.0,
             concurrency: int = 1, run_id: int = 1, arm: str = "default") -> Run:
    # 17 tokens, first at 0.1 s, the other 16 over decode_s: 16 / decode_s tok/s per stream
    recs = [RequestRecord(index=i, start_s=0.0, ttft_s=0.1, e2e_s=0.1 + decode_s, output_tokens=17,
                          token_count_source="usage", itl_s=[decode_s / 16] * 16) for i in range(concurrency)]
    return Run(id=run_id, session="s", arm=arm, started_at="2026-12-02T00:00:00+00:00",
               finished_at="2026-12-02T00:00:02+00:00", command_line="tokcaliper bench", tool_version="0",
               host=h if h is not None else host(), served=served,
               config=LoadConfig(base_url="http://127.0.0.1:1", concurrency=concurrency),
               metrics=summarize(recs), requests=recs)


def test_cpu_run_bound_arithmetic_and_fraction():
    rr = run_roofline(make_run())
    # bytes per token = 134515008 × 20/32 B; roofline = 20 GB/s / that
    weight_gb = 134515008 * 0.625 / 1e9
    assert rr.bound_tok_s == pytest.approx(20.0 / weight_gb)
    assert rr.per_stream_tok_s == pytest.approx(16.0)
    assert rr.fraction == pytest.approx(16.0 / (20.0 / weight_gb))
    assert rr.measured_gb_s == 20.0 and rr.spec_gb_s == 102.4  # no CPU table: A3's assumed host figure
    assert "A3's assumed host bandwidth" in rr.spec_source
    assert rr.spec_fraction == pytest.approx(rr.fraction * 20.0 / 102.4)
    text = "\n".join(rr.arithmetic + rr.sources)
    assert "bytes per token = 0.1345e9 params [all (dense)] × 0.625 B = 0.0841 GB" in text
    assert "tokcaliper probe" in text and "no spec-sheet table for CPUs" in text
    assert "at the spec sheet's 102.4 GB/s" in text
    assert "/v1/models meta.n_params" in text  # the file /m/SmolLM2.gguf is not readable here
    assert rr.batch == 1 and rr.aggregate_bound_tok_s is None  # one stream: no batch bound


def test_batch_bound_at_concurrency_capped_by_slots():
    rr = run_roofline(make_run(concurrency=6))
    assert rr.batch == 4  # min(concurrency 6, 4 slots)
    assert rr.aggregate_bound_tok_s == pytest.approx(4 * rr.bound_tok_s)
    assert rr.aggregate_fraction == pytest.approx(rr.aggregate_tok_s / rr.aggregate_bound_tok_s)
    assert any(line.startswith("aggregate bound = 4 streams") for line in rr.arithmetic)


def test_gpu_run_uses_measured_and_shows_spec_sheet():
    rr = run_roofline(make_run(h=host([GpuInfo(index=0, name="NVIDIA H200 SXM 141 GB")])))
    assert rr.measured_gb_s == 4000.0
    assert rr.spec_gb_s and rr.spec_gb_s > 4000.0  # H200 spec sheet 4.8 TB/s
    assert rr.spec_bound_tok_s == pytest.approx(rr.bound_tok_s * rr.spec_gb_s / 4000.0)
    assert rr.spec_fraction < rr.fraction
    assert "gpu0 NVIDIA H200 SXM" in rr.device


@pytest.mark.parametrize("served, h, needle", [
    (ServedModel(name="mystery-model", missing={"quantization": "the server's /props gives no model_ftype"}),
     None, "quantization (bytes per weight) of model 'mystery-model'"),
    (ServedModel(name="mystery-model", quantization="Q4_1"), None, "parameter count of model 'mystery-model'"),
    (None, None, "model facts: the run stores none"),
    (SMOL, "no probe", "memory bandwidth of the device"),
])
def test_unknown_fact_is_named(served, h, needle):
    hi = host(gb_s=None) if h == "no probe" else None
    rr = run_roofline(make_run(served=served, h=hi))
    assert rr.bound_tok_s is None and rr.fraction is None
    assert any(needle in m for m in rr.missing), rr.missing


def test_no_host_names_the_device():
    run = make_run()
    run.host = None
    assert run_roofline(run).missing == ["device: the run stores no host information"]  # bandwidth not repeated


def test_arm_fraction_spread_across_runs():
    runs = [make_run(decode_s=d, run_id=i) for i, d in enumerate((1.0, 1.25, 0.8), 1)]
    (arm,) = arm_rooflines(runs)
    fr = [run_roofline(r).fraction for r in runs]
    assert arm.n == 3 and arm.mean == pytest.approx(sum(fr) / 3)
    sd = (sum((x - arm.mean) ** 2 for x in fr) / 2) ** 0.5
    assert arm.std == pytest.approx(sd) and arm.cv == pytest.approx(sd / arm.mean)


def test_exported_record_audits_to_the_same_bound(tmp_path, capsys):
    run = make_run()
    db = tmp_path / "r.db"
    with Store(db) as s:
        rid = s.save_run(run)
        assert s.get_run(rid).served == SMOL  # stored with the run (schema v6)
    assert main(["show", str(rid), "--record", "--db", str(db)]) in (0, None)
    p = tmp_path / "rec.json"
    p.write_text(capsys.readouterr().out)
    assert main(["audit", "--json", str(p)]) == 0
    a3 = next(v for v in json.loads(capsys.readouterr().out)["records"][0]["verdicts"] if v["check"] == "A3")
    assert a3["inputs"]["roofline_tok_s"] == pytest.approx(run_roofline(run).bound_tok_s, rel=1e-12)
    assert run_record(run).hardware.device_kind == "cpu"


def test_gpu_without_spec_sheet_keeps_the_measured_figure():
    # A GPU no facts row names (NVML's "NVIDIA H200" is now an alias of its row, issue 26):
    # the measured bandwidth still bounds the run, and the missing spec sheet is said
    rr = run_roofline(make_run(h=host([GpuInfo(index=0, name="NVIDIA Imaginary X900")])))
    assert rr.measured_gb_s == 4000.0 and rr.spec_gb_s is None and rr.fraction is not None
    assert any("NVIDIA Imaginary X900" in line for line in rr.arithmetic + rr.sources)
    known = run_roofline(make_run(h=host([GpuInfo(index=0, name="NVIDIA H200")])))
    assert known.measured_gb_s == 4000.0 and known.spec_gb_s is not None  # the alias finds its row
