"""Issue 22 items 10, 15, 22: every file a user names goes through the one reader (tokcaliper.fileio).

15: a device (/dev/zero) or a FIFO gives one line at once, for every command that reads a file;
    an experiment file is read once.
22: a UTF-8 byte-order mark (Excel writes one) is accepted everywhere.
10: a key or column given twice is refused, naming it (never read at its last value).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from tokcaliper import fileio

BOM = "\ufeff"

# (command before the file, command after the file, a valid file name, its valid text)
READERS = {
    "compare --csv": (["compare", "--csv"], [], "runs.csv",
                      "arm,value\nA,100\nA,101\nA,99\nB,110\nB,111\nB,109\n"),
    "analyze --csv": (["analyze", "--csv"], ["--value", "tok_s", "--arm-column", "arm", "--arm", "A"], "runs.csv",
                      "arm,tok_s\n" + "".join(f"A,{100 + i % 3}\nB,{110 + i % 3}\n" for i in range(6))),
    "spec table csv": (["spec", "table"], [], "t.csv", "k,al\n2,2.5\n4,3.1\n"),
    "spec table json": (["spec", "table"], [], "t.json", '{"2": 2.5, "4": 3.1}'),
    "spec log": (["spec", "log"], [], "vllm.log",
                 "SpecDecoding metrics: Mean acceptance length: 2.45, Accepted: 301 tokens, "
                 "Drafted: 600 tokens\n"),
    "experiment run": (["experiment", "run"], ["--db", "x.db"], "e.toml", ""),
}


def _args(name: str, path: Path, tmp_path: Path) -> list[str]:
    before, after, _fname, _text = READERS[name]
    return [*before, str(path), *[str(tmp_path / a) if a.endswith(".db") else a for a in after]]


@pytest.mark.parametrize("name", sorted(READERS))
def test_dev_zero_is_one_line_at_once(name, tmp_path, cli):
    code, out, err = cli(*_args(name, Path("/dev/zero"), tmp_path))
    assert code == 2 and err.count("\n") == 1, err
    assert "/dev/zero: not a regular file" in err  # before: read until memory ran out
    assert not (tmp_path / "x.db").exists()  # nothing stored


@pytest.mark.parametrize("name", sorted(READERS))
def test_fifo_is_one_line_without_blocking(name, tmp_path, cli):
    fifo = tmp_path / READERS[name][2]
    os.mkfifo(fifo)
    got: list[tuple[int, str, str]] = []
    t = threading.Thread(target=lambda: got.append(cli(*_args(name, fifo, tmp_path))), daemon=True)
    t.start()
    t.join(10)
    if t.is_alive():  # unblock the reader before failing
        with open(fifo, "wb"):
            pass
        t.join(5)
        pytest.fail(f"{name}: reading a FIFO blocked")  # before: waited for a writer forever
    code, _out, err = got[0]
    assert code == 2 and "not a regular file" in err and err.count("\n") == 1, err


def test_experiment_file_is_read_once(tmp_path, monkeypatch):
    from tokcaliper.experiment.spec import read_experiment

    p = tmp_path / "e.toml"
    p.write_text('url = "http://127.0.0.1:9"\n[[arms]]\nname = "a"\nswitch = "true"\n'
                 '[[arms]]\nname = "b"\nswitch = "true"\n')
    calls: list[Path] = []
    real = fileio.read_bytes

    def counting(path, *a, **k):  # type: ignore[no-untyped-def]
        calls.append(Path(path))
        return real(path, *a, **k)

    monkeypatch.setattr(fileio, "read_bytes", counting)
    spec, text = read_experiment(p)
    assert calls == [p] and text == p.read_text() and [a.name for a in spec.arms] == ["a", "b"]


@pytest.mark.parametrize("name", ["compare --csv", "analyze --csv", "spec table csv", "spec table json",
                                  "spec log"])
def test_byte_order_mark_is_accepted(name, tmp_path, cli):
    _before, _after, fname, text = READERS[name]
    plain_file, bom_file = tmp_path / ("plain-" + fname), tmp_path / ("bom-" + fname)
    plain_file.write_text(text, encoding="utf-8")
    bom_file.write_text(BOM + text, encoding="utf-8")
    code_plain, out_plain, err_plain = cli(*_args(name, plain_file, tmp_path), "--json")
    code, out, err = cli(*_args(name, bom_file, tmp_path), "--json")
    assert code == code_plain == 0, err  # before: "unknown column '\ufeffarm'" (compare), no table (spec)
    a, b = json.loads(out_plain), json.loads(out)
    for doc in (a, b):
        doc.pop("source", None)
    assert a == b


def test_experiment_file_with_a_byte_order_mark(tmp_path):
    from tokcaliper.experiment.spec import load_experiment

    p = tmp_path / "e.toml"
    p.write_text(BOM + 'url = "http://127.0.0.1:9"\n[[arms]]\nname = "a"\nswitch = "true"\n'
                 '[[arms]]\nname = "b"\nswitch = "true"\n', encoding="utf-8")
    assert [a.name for a in load_experiment(p).arms] == ["a", "b"]


# ---------------------------------------------------------------- item 10: a key given twice

GOOD = {"id": "g", "model": {"name": "27B dense", "params_total": 27.8e9, "is_moe": False},
        "hardware": {"gpu_name": "RTX 5090", "gpu_count": 1},
        "quantization": {"weights": "NVFP4", "bytes_per_param": 0.5}, "batch_size": 1}


def test_audit_record_with_a_key_twice_is_refused(tmp_path, cli):
    p = tmp_path / "r.json"
    p.write_text(json.dumps(GOOD)[:-1] + ', "tok_s_decode": 79, "tok_s_decode": 790}')
    code, _out, err = cli("audit", "--json", str(p))
    assert code == 2 and "key 'tok_s_decode' is given twice" in err  # before: audited at 790
    p = tmp_path / "r.jsonl"
    p.write_text(json.dumps(dict(GOOD, tok_s_decode=79)) + "\n"
                 + json.dumps(GOOD)[:-1] + ', "tok_s_decode": 79, "tok_s_decode": 790}\n')
    code, out, err = cli("audit", "--json", str(p))
    doc = json.loads(out)
    assert len(doc["records"]) == 1
    assert any("tok_s_decode" in s["message"] and "twice" in s["message"] for s in doc["skipped"])


@pytest.mark.parametrize("name, text, key", [
    ("analyze --csv", "arm,tok_s,tok_s\nA,1,100\nB,2,110\nA,1,101\nB,2,111\n", "tok_s"),
    ("compare --csv", "arm,value,value\nA,1,100\nB,2,110\n", "value"),
    ("spec table csv", "k,al,AL\n2,2.5,9\n", "al"),
    ("spec table json", '{"2": 2.5, "2": 9}', "2"),
    ("spec table yaml", "2: 2.5\n4: 3.1\n2: 9\n", "2"),
])
def test_a_key_or_column_twice_is_refused_naming_it(name, text, key, tmp_path, cli):
    before, after, fname, _ = READERS.get(name, (["spec", "table"], [], "t.yaml", ""))
    p = tmp_path / fname
    p.write_text(text)
    code, _out, err = cli(*before, str(p), *after)
    assert code == 2 and err.count("\n") == 1, err  # before: the last one won (AL 9; tok_s column 3)
    assert f"{key!r}" in err and "twice" in err


def test_first_duplicate_is_the_one_test():
    assert fileio.first_duplicate(["k", "al", "k"]) == ("k", 1, 3)
    assert fileio.first_duplicate(["k", "al"]) is None
    with pytest.raises(fileio.JSONParseError, match="key 'a' is given twice"):
        fileio.loads_json('{"b": {"a": 1, "a": 1}}')
