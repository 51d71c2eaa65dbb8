"""Issue 12 item 8: files are read safely; odd contents give one line or a skipped record."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from tokcaliper.audit import audit_files
from tokcaliper.audit.facts.params import params_from_config
from tokcaliper.audit.importers import load_records, read_model_file
from tokcaliper.audit.importers.files import read_raw
from tokcaliper.errors import InputError
from tokcaliper.load.prompts import load_prompts

GOOD = {"id": "g", "model": {"name": "27B dense", "params_total": 27.8e9, "is_moe": False},
        "hardware": {"gpu_name": "RTX 5090", "gpu_count": 1},
        "quantization": {"weights": "NVFP4", "bytes_per_param": 0.5}, "batch_size": 1, "tok_s_decode": 79}


def test_dev_zero_is_refused_not_read_forever():
    with pytest.raises(InputError, match="not a regular file"):
        read_raw(Path("/dev/zero"), max_bytes=1000)


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "records.json"
    os.mkfifo(fifo)
    result: list[BaseException] = []

    def go() -> None:
        try:
            load_records(fifo)
        except BaseException as e:  # noqa: BLE001
            result.append(e)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(5)
    if t.is_alive():  # unblock the reader before failing
        with open(fifo, "wb"):
            pass
        pytest.fail("reading a FIFO blocked")
    assert isinstance(result[0], InputError) and "not a regular file" in str(result[0])


def test_size_limit_is_enforced_on_bytes_read(tmp_path, monkeypatch):
    """A file whose reported size is wrong (procfs, a growing file) is still capped."""
    p = tmp_path / "r.json"
    p.write_bytes(b"[" + b" " * 5000 + b"]")
    real_stat = Path.stat

    def small_stat(self, *a, **k):
        st = real_stat(self, *a, **k)
        if self == p:
            return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid,
                                   0, st.st_atime, st.st_mtime, st.st_ctime))
        return st

    monkeypatch.setattr(Path, "stat", small_stat)
    with pytest.raises(InputError, match="over the 1 kB limit"):
        read_raw(p, max_bytes=1000)


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c"])
def test_jsonl_is_split_on_newline_only(tmp_path, sep):
    rec = dict(GOOD, notes=f"a{sep}b")
    p = tmp_path / "r.jsonl"
    p.write_text(json.dumps(rec, ensure_ascii=False) + "\n" + json.dumps(GOOD) + "\r\n", encoding="utf-8")
    res = load_records(p)
    assert res.problems == [] and len(res.records) == 2


def test_audit_json_with_a_lone_surrogate(tmp_path, cli):
    p = tmp_path / "r.json"
    rec = dict(GOOD, model=dict(GOOD["model"], name="27B x\ud800y"))
    p.write_text(json.dumps(rec), encoding="utf-8")  # a "\ud800" escape in the file
    code, out, err = cli("audit", "--json", str(p))
    assert code in (0, 10), err
    doc = json.loads(out)
    assert doc["records"][0]["label"].startswith("r.json")
    assert "\\ud800" in out
    code, out, err = cli("audit", str(p))
    assert code in (0, 10), err


def test_prompts_deep_nesting_and_long_integers(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text('{"prompt": "ok"}\n' + "[" * 100000 + "\n")
    with pytest.raises(InputError, match=r"p.jsonl:2: .*nested too deeply"):
        load_prompts(p)
    p.write_text('{"prompt": "ok", "n": ' + "9" * 5000 + "}\n")
    with pytest.raises(InputError, match=r"p.jsonl:1: .*digits"):
        load_prompts(p)


def test_prompts_split_on_newline_only(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text(json.dumps({"prompt": "a\u2028b"}, ensure_ascii=False) + "\n", encoding="utf-8")
    assert len(load_prompts(p)) == 1


def test_prompts_fifo_refused(tmp_path):
    fifo = tmp_path / "p.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        load_prompts(fifo)


@pytest.mark.parametrize("patch, needle", [
    ({"num_attention_heads": 0}, "num_attention_heads must be a whole number ≥ 1, got 0"),
    ({"hidden_size": 0}, "hidden_size must be a whole number ≥ 1, got 0"),
    ({"hidden_size": "abc"}, "hidden_size must be a whole number ≥ 1, got 'abc'"),
    ({"hidden_size": 10**400}, "hidden_size must be a whole number ≥ 1 and ≤"),
    ({"num_hidden_layers": 1.5}, "num_hidden_layers must be a whole number ≥ 1, got 1.5"),
    ({"head_dim": -3}, "head_dim must be a whole number ≥ 1, got -3"),
    ({"text_config": 5}, "text_config must be an object"),
])
def test_model_config_bad_numbers_are_one_line(patch, needle):
    c = {"hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 32000, "num_attention_heads": 32}
    c.update(patch)
    with pytest.raises(InputError) as info:
        params_from_config(c, "config.json")
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_model_file_zero_heads_via_cli(tmp_path, cli):
    rec = tmp_path / "r.json"
    rec.write_text(json.dumps(GOOD))
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 32000,
                               "num_attention_heads": 0}))
    code, out, err = cli("audit", "--model-file", str(cfg), str(rec))
    assert code == 2 and "num_attention_heads" in err and "internal" not in err


@pytest.mark.parametrize("params", [1e-320, 0.5])
def test_tiny_parameter_count_does_not_divide_by_zero(tmp_path, params):
    p = tmp_path / "r.json"
    p.write_text(json.dumps(dict(GOOD, model={"name": "x", "params_total": params, "is_moe": False})))
    rep = audit_files([p])
    # either skipped as malformed (a count below 1) or audited; never a ZeroDivisionError
    assert len(rep.records) + len(rep.skipped) == 1


def test_unreadable_file_in_a_folder_is_skipped(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(GOOD))
    (tmp_path / "b.json").write_text("{broken")
    (tmp_path / "c.json").write_bytes(b"\xff\xfe not utf-8")
    res = load_records(tmp_path)
    assert len(res.records) == 1
    files = sorted(Path(p.file).name for p in res.problems)
    assert files == ["b.json", "c.json"]
    with pytest.raises(InputError):  # a file named on its own still stops with its error
        load_records(tmp_path / "b.json")
