"""Bad or hostile input is one clear line naming the culprit; odd values get honest verdicts.

One test (or a small group) per defect found by the QA pass: CSV header and
row problems, JSON parser limits, override validation, A1/A2/A5 edge cases,
vLLM bench files, strict number types, plain error texts, --explain with files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tokcaliper.audit import audit_files, diff_files
from tokcaliper.audit.checks import a1_acceptance, a2_power, a5_denominator
from tokcaliper.audit.facts.gpus import GPUOverrides
from tokcaliper.audit.importers import human_bytes, load_records, record_from_row
from tokcaliper.audit.runner import AuditOptions, build_context
from tokcaliper.cli import main
from tokcaliper.errors import InputError
from tokcaliper.model.record import Record
from tokcaliper.model.verdict import Status
from tokcaliper.numbers import compact
from tokcaliper.stats.covariates import spearman

from .conftest import PUBLIC

VLLM = PUBLIC / "vllm_bench_results"

GOOD = {"id": "g", "model": {"name": "27B dense", "params_total": 27.8e9, "is_moe": False},
        "hardware": {"gpu_name": "RTX 5090", "gpu_count": 1},
        "quantization": {"weights": "NVFP4", "bytes_per_param": 0.5}, "batch_size": 1, "tok_s_decode": 79,
        "power_w": [574, 576]}


def _write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    p = tmp_path / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content)
    return p


def _one_line_error(capsys, argv: list[str]) -> str:
    """Run the CLI, assert exit 2 and exactly one ``tokcaliper: error:`` line; return it."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tokcaliper: error: ") and "\n" not in err, err
    assert "internal error" not in err and "Traceback" not in err
    return err


# 1 ------------------------------------------------------------------ CSV header conflicts


def test_csv_column_both_value_and_group_is_input_error(tmp_path, capsys):
    p = _write(tmp_path, "conflict.csv", "id,model,model.name,tok_s_decode\nc1,x,27B,79\n")
    err = _one_line_error(capsys, ["audit", str(p)])
    assert "conflict.csv" in err and "'model' and 'model.name' conflict" in err


# 2 ------------------------------------------------------------------ long CSV cells


def test_csv_cell_longer_than_csv_module_limit(tmp_path):
    notes = "x" * 200_000
    p = _write(tmp_path, "bigfield.csv", f'id,tok_s_decode,notes\nc1,79,"{notes}"\n')
    res = load_records(p)
    assert res.problems == [] and res.records[0].notes == notes


# 3 ------------------------------------------------------------------ JSON parser limits


@pytest.mark.parametrize("name,content,needle", [
    ("deep.json", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("hugeint.json", '[{"tok_s_decode": 1' + "0" * 5000 + "}]", "more than 4300 digits"),
])
def test_json_parser_limits_are_one_line_errors(tmp_path, capsys, name, content, needle):
    p = _write(tmp_path, name, content)
    err = _one_line_error(capsys, ["audit", str(p)])
    assert name in err and needle in err
    err = _one_line_error(capsys, ["diff", str(p), str(p)])
    assert name in err and needle in err


def test_jsonl_line_too_deep_is_skipped_by_line(tmp_path):
    p = _write(tmp_path, "d.jsonl", json.dumps(GOOD) + "\n" + "[" * 100_000 + "\n")
    res = load_records(p)
    assert len(res.records) == 1
    assert res.problems[0].index == "1 (line 2)" and "nested too deeply" in res.problems[0].message


def test_long_integer_below_parser_limit_is_a_field_error(tmp_path):
    p = _write(tmp_path, "big.json", '[{"tok_s_decode": 1' + "0" * 1000 + "}]")
    res = load_records(p)
    assert res.records == [] and res.problems[0].field == "tok_s_decode"
    assert "number too large" in res.problems[0].message and "1001-digit" in res.problems[0].message


# 4 ------------------------------------------------------------------ --bandwidth / --tdp


@pytest.mark.parametrize("value,needle", [
    ("=5", "GPU name before '=' is empty"),
    ("RTX 5090=0", "must be a positive number"),
    ("RTX 5090=-3", "must be a positive number"),
    ("fast", "expected a number or NAME=NUMBER"),
    ("NVIDIA=100", "names no GPU model"),
])
def test_bad_override_values(value, needle):
    with pytest.raises(InputError, match=needle) as e:
        GPUOverrides.from_options(tdp=[value])
    assert str(e.value).startswith(f"--tdp {value!r}")


def test_override_given_twice_with_different_values():
    with pytest.raises(InputError, match="already given"):
        GPUOverrides.from_options(bandwidth=["RTX 5090=1792", "rtx 5090=1000"])


def test_empty_gpu_name_override_rejected_on_cli(tmp_path, capsys):
    p = _write(tmp_path, "good.json", json.dumps([GOOD]))
    err = _one_line_error(capsys, ["audit", str(p), "--bandwidth", "=5"])
    assert "--bandwidth '=5'" in err


def test_override_matching_no_record_warns(tmp_path, capsys):
    p = _write(tmp_path, "good.json", json.dumps([GOOD]))
    assert main(["audit", str(p), "--bandwidth", "Foo=5", "--tdp", "RTX 5090=575"]) == 0
    cap = capsys.readouterr()
    assert "tokcaliper: warning: --bandwidth 'Foo' matched no record's GPU" in cap.err
    assert "--tdp" not in cap.err  # that one matched
    # --json: the warning sink keeps it inside the document, stderr stays empty
    assert main(["audit", "--json", str(p), "--bandwidth", "Foo=5", "--tdp", "RTX 5090=575"]) == 0
    cap = capsys.readouterr()
    assert "warning" not in cap.err
    doc = json.loads(cap.out)
    assert doc["warnings"] and "'Foo'" in doc["warnings"][0]["message"]
    assert doc["warnings"][0]["code"] == "gpu-override-unmatched"


# 5 ------------------------------------------------------------------ A2 power far above TDP


def _rec(**kw) -> Record:
    d = json.loads(json.dumps(GOOD))
    d.update(kw)
    return Record.model_validate(d)


def test_a2_power_far_above_tdp_fails():
    v = a2_power.check(build_context(_rec(power_w=[5000, 5100])))
    assert v.status == Status.FAIL and "power above TDP: per-GPU or total?" in v.summary
    assert any("5100 W / 575 W = 8.870" in a for a in v.arithmetic)


def test_a2_total_over_gpus_is_named():
    rec = _rec(power_w=[2300], hardware={"gpu_name": "RTX 5090", "gpu_count": 4, "split_mode": "tensor"})
    v = a2_power.check(build_context(rec))
    assert v.status == Status.FAIL and "total over all GPUs" in v.summary


def test_a2_slightly_above_tdp_still_passes_and_raised_limit_warns():
    assert a2_power.check(build_context(_rec(power_w=[600]))).status == Status.PASS  # 1.04 × TDP
    assert a2_power.check(build_context(_rec(power_w=[780]))).status == Status.WARN  # 1.36 × TDP


# 6 ------------------------------------------------------------------ A1 AL < 1


def test_a1_al_below_one_fails_with_convention():
    v = a1_acceptance.check(build_context(_rec(speculative={"method": "eagle", "window_k": 4, "al": 0.5})))
    assert v.status == Status.FAIL and "AL 0.5 < 1" in v.summary and "bonus token" in v.summary
    assert any("AL + 1 = 1.5" in a for a in v.arithmetic)
    assert v.inputs["al_convention"].startswith("bonus token included")


def test_a1_al_above_k_plus_one_shows_ceiling():
    v = a1_acceptance.check(build_context(_rec(speculative={"window_k": 4, "al": 9})))
    assert v.status == Status.FAIL and any("k + 1 = 4 + 1 = 5 < 9" in a for a in v.arithmetic)


# 7 ------------------------------------------------------------------ malformed CSV rows


def test_csv_unbalanced_quote_is_reported_not_audited(tmp_path, capsys):
    p = _write(tmp_path, "quote2.csv", 'id,model.name,tok_s_decode\n"c1,27B,79\n')
    res = load_records(p)
    assert res.records == []
    assert res.problems[0].index == "0 (line 2)" and "unbalanced quote" in res.problems[0].message
    err = _one_line_error(capsys, ["audit", str(p)])
    assert "quote2.csv: record 0 (line 2)" in err


def test_csv_stray_quote_row_skipped_others_kept(tmp_path):
    p = _write(tmp_path, "stray.csv", 'id,tok_s_decode\n"a"x,5\nb,6\n')
    res = load_records(p)
    assert [r.id for r in res.records] == ["b"]
    assert "stray quote on line 2" in res.problems[0].message


def test_csv_unbalanced_quote_in_header(tmp_path):
    p = _write(tmp_path, "quote.csv", 'id,"model.name,tok_s_decode\nc1,27B,79\n')
    with pytest.raises(InputError, match=r"quote.csv: header: unbalanced quote"):
        load_records(p)


def test_csv_duplicate_columns_is_input_error(tmp_path):
    p = _write(tmp_path, "dup.csv", "id,id,tok_s_decode\nc1,c2,79\n")
    with pytest.raises(InputError, match=r"dup.csv: header names column 'id' twice \(columns 1 and 2\)"):
        load_records(p)


def test_csv_extra_cells_skipped_short_rows_warned(tmp_path):
    p = _write(tmp_path, "extra.csv", "id,tok_s_decode,notes\nc1,79,a,extra\nc2,80\nc3,81,ok\n")
    res = load_records(p)
    assert [r.id for r in res.records] == ["c2", "c3"]
    assert res.problems[0].index == "0 (line 2)" and "4 cells for 3 columns" in res.problems[0].message
    assert len(res.warnings) == 1 and res.warnings[0].code == "csv-missing-cells"
    assert "record 1 (line 3)" in res.warnings[0].message and "notes" in res.warnings[0].message


# 8 ------------------------------------------------------------------ --max-bytes


def test_max_bytes_validated_and_sizes_in_units(tmp_path, capsys):
    p = _write(tmp_path, "good.json", json.dumps([GOOD]))
    err = _one_line_error(capsys, ["audit", "--max-bytes", "-1", str(p)])
    assert "--max-bytes -1: must be a positive number of bytes" in err
    err = _one_line_error(capsys, ["audit", "--max-bytes", "100", str(p)])
    assert f"{p.stat().st_size} bytes is over the 100 bytes limit" in err
    assert human_bytes(20_480) == "20.5 kB" and human_bytes(10_000_000) == "10 MB"
    assert human_bytes(52_428_800) == "52.4 MB" and human_bytes(1) == "1 byte"


# 9 ------------------------------------------------------------------ huge values


def test_huge_values_print_in_scientific_notation(tmp_path, capsys):
    assert compact(1e308) == "1.00e+308" and compact(2.5e9, 4) == "2.500e+09" and compact(123456.0) == "123456"
    p = _write(tmp_path, "huge.json", json.dumps([dict(GOOD, tok_s_decode=1e308, power_w=[1e300])]))
    assert main(["audit", str(p)]) == 10
    out = capsys.readouterr().out
    assert "1.0000e+308" in out or "1.00e+308" in out
    assert not re.search(r"\d{20}", out)


# 10 ----------------------------------------------------------------- vLLM bench files


def test_vllm_files_gpu_count_label_quant_and_exact_p(capsys):
    res = load_records(VLLM)
    for rec in res.records:
        assert rec.hardware.gpu_count == 8 and rec.hardware.split_mode == "tensor"
        assert rec.quantization.weights == "FP8"
        assert rec.requests == json.loads(Path(rec.provenance["file"]).read_text())["completed"]
        assert rec.label().startswith(Path(rec.provenance["file"]).name + "#0 ")
        joined = " ".join(rec.provenance["assumptions"])
        assert "'tp8' in the file name" in joined and "inferred from the model name" in joined
    assert main(["audit", "--brief", str(VLLM)]) == 12  # the files name no GPU: A3 did not run
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert "record names no GPU" in flat and "A3 roofline not checked" in flat
    assert "glm5_fp8_vllm_tp8_isl1024_osl128_conc16.json#0" in out and "on 8×" in out
    assert "p = 0," not in out and "exact p = 0.33, n = 3" in out


def test_vllm_tp_field_wins_and_ambiguous_filename_ignored():
    row = json.loads((VLLM / "glm5_fp8_vllm_tp8_isl1024_osl128_conc4.json").read_text())
    rec, _ = record_from_row(dict(row, tensor_parallel_size=4), file="x_tp8.json")
    assert rec.hardware.gpu_count == 4 and any("from tensor_parallel_size" in a for a in rec.provenance["assumptions"])
    rec, _ = record_from_row(row, file="a_tp8_vs_tp4.json")
    assert rec.hardware.gpu_count == 1


def test_quant_not_inferred_when_given_or_ambiguous():
    rec, _ = record_from_row({"model": {"name": "m-AWQ-FP8"}, "tok_s_decode": 5})
    assert rec.quantization.weights is None
    rec, _ = record_from_row({"model": {"name": "GLM-5-FP8"}, "quantization": {"weights": "NVFP4"}, "tok_s_decode": 5})
    assert rec.quantization.weights == "NVFP4"


def test_spearman_exact_p_small_n():
    rho, p, how = spearman([4, 16, 64], [46.8, 29.7, 11.4])
    assert rho == pytest.approx(-1.0) and p == pytest.approx(2 / 6) and how == "exact permutation"
    # A4 reads the same function (one Spearman, stats.covariates) and prints its exact p
    from tokcaliper.audit.checks.a4_batch_curve import check_batch

    recs = [Record.model_validate({"model": {"name": "m"}, "hardware": {"gpu_name": "RTX 4090"},
                                   "tok_s_decode": t, "speculative": {"method": "draft", "window_k": k}})
            for k, t in ((4, 46.8), (16, 29.7), (64, 11.4))]
    (curve,) = check_batch(recs)
    assert "ρ(tok/s, draft window k) = -1.000 (exact p = 0.33, n = 3)" in curve.verdict.arithmetic[0]


# 11 ----------------------------------------------------------------- A5 aggregates


def test_a5_no_decode_only_correction_for_aggregates():
    rec = load_records(VLLM / "glm5_fp8_vllm_tp8_isl1024_osl128_conc16.json").records[0]
    v = a5_denominator.check(build_context(rec))
    assert not any(a.startswith("decode only") for a in v.arithmetic)
    assert any("skipped" in a and "requests 160" in a for a in v.arithmetic)
    single = _rec(output_tokens=790, seconds=10.2, ttft_ms=200.0)
    v = a5_denominator.check(build_context(single))
    assert any(a.startswith("decode only: (790 − 1)") for a in v.arithmetic)


# 12 ----------------------------------------------------------------- strict numbers


@pytest.mark.parametrize("patch,loc", [
    ({"tok_s_decode": True}, "tok_s_decode"),
    ({"batch_size": True}, "batch_size"),
    ({"power_w": [574, False]}, "power_w[1]"),
    ({"hardware": {"gpu_name": "RTX 5090", "gpu_count": True}}, "hardware.gpu_count"),
])
def test_booleans_are_not_numbers(patch, loc):
    rec, prob = record_from_row(dict(GOOD, **patch), file="bool.json")
    assert rec is None and prob.field == loc and "expected a number, got" in prob.message


# 13 ----------------------------------------------------------------- plain error texts


def test_errors_are_plain_sentences(tmp_path, capsys):
    p = _write(tmp_path, "records.csv", "id,tok_s_decode,power_w\na,5,\nb,6,\nc,7,\nd,lots,\ne,5,lots\n")
    rep = audit_files([p])
    msgs = [f"{s.file}: record {s.index}: field {s.field}: {s.message}" for s in rep.skipped]
    assert msgs[0].endswith("records.csv: record 3: field tok_s_decode: expected a number, got 'lots'")
    assert "record 4: field power_w: expected numbers separated by ';', got 'lots'" in msgs[1]
    for m in msgs:
        assert "Error" not in m and "Input should" not in m
    err = _one_line_error(capsys, ["audit", "--model-file", str(tmp_path), str(p)])
    assert "is a directory" in err and "Errno" not in err


def test_folder_entries_that_are_directories_are_not_read(tmp_path):
    (tmp_path / "sub.json").mkdir()
    _write(tmp_path, "a.json", json.dumps([GOOD]))
    assert len(load_records(tmp_path).records) == 1


# 14 ----------------------------------------------------------------- --explain with files


def test_explain_takes_no_files(tmp_path, capsys):
    p = _write(tmp_path, "good.json", json.dumps([GOOD]))
    err = _one_line_error(capsys, ["audit", "--explain", "A3", str(p)])
    assert "--explain takes no files" in err


def test_diff_labels_name_files(tmp_path):
    a = _write(tmp_path, "a.json", json.dumps([GOOD]))
    b = _write(tmp_path, "b.json", json.dumps([GOOD]))
    d = diff_files(str(a), str(b))
    assert d.a_label.startswith("a.json#0 ") and d.b_label.startswith("b.json#0 ") and d.comparable


def test_gpu_overrides_apply_via_options():
    ov = GPUOverrides.from_options(bandwidth=["NVIDIA GeForce RTX 5090=1500"])
    v = build_context(_rec(), AuditOptions(gpu=ov))
    assert v.gpu.bandwidth_gb_s == 1500 and ov.unmatched(["RTX 5090"]) == []
