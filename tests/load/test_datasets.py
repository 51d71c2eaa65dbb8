"""Conversation datasets: ShareGPT/OpenAI JSONL, skips listed, seeded order, length filters (issue 18 item 3)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from tokcaliper.errors import InputError, ServerError
from tokcaliper.experiment.spec import LoadSpec
from tokcaliper.load import datasets as D
from tokcaliper.model.run import LoadConfig

SAMPLE = Path(str(resources.files("tokcaliper.data").joinpath("datasets/sharegpt_sample.jsonl")))


def _file(tmp_path: Path, lines: list[object]) -> Path:
    p = tmp_path / "d.jsonl"
    p.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return p


def _sg(*turns: tuple[str, str]) -> dict:
    return {"conversations": [{"from": a, "value": v} for a, v in turns]}


def test_sharegpt_maps_speakers_and_stops_at_the_last_user_turn():
    msgs = D.record_messages(_sg(("system", "S"), ("human", "Q1"), ("gpt", "A1"), ("human", "Q2"), ("gpt", "A2")))
    assert msgs == [{"role": "system", "content": "S"}, {"role": "user", "content": "Q1"},
                    {"role": "assistant", "content": "A1"}, {"role": "user", "content": "Q2"}]
    oa = D.record_messages({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"}]})
    assert oa == [{"role": "user", "content": "hi"}]


def test_unusable_records_are_skipped_and_listed_by_line(tmp_path):
    p = _file(tmp_path, [_sg(("human", "ok")), _sg(("gpt", "only an answer")), {"id": 3}, "",
                         _sg(("robot", "x")), {"messages": [{"role": "user", "content": "fine"}]}])
    ds = D.load_dataset(p)
    assert [n for n, _ in ds.records] == [1, 6]
    note = ds.skip_note()
    assert note == (f"{p}: 3 record(s) skipped: 1 no user turn (line 2); 1 no conversations or messages "
                    "(line 3); 1 unknown speaker (line 5)")


def test_broken_json_is_one_line_error_naming_file_and_line(tmp_path):
    p = _file(tmp_path, [_sg(("human", "ok")), '{"conversations": [', _sg(("human", "x"))])
    with pytest.raises(InputError, match=rf"^{p}:2: not valid JSON") as e:
        D.load_dataset(p)
    assert "\n" not in str(e.value)
    with pytest.raises(InputError, match="no usable conversation"):
        D.load_dataset(_file(tmp_path, [{"id": 1}]))


def test_a_json_array_file_is_read_too(tmp_path):
    p = tmp_path / "a.json"
    p.write_text(json.dumps([_sg(("human", "a")), _sg(("human", "b"))]))
    assert len(D.load_dataset(p).records) == 2


def test_the_bundled_sample_is_usable_and_has_its_provenance():
    ds = D.load_dataset(SAMPLE)
    assert len(ds.records) == 20 and not ds.skipped
    readme = (SAMPLE.parent / "README.md").read_text()
    assert "CC0" in readme and "written by hand" in readme


def _cfg(path: Path, **kw) -> LoadConfig:
    return LoadConfig(base_url="http://127.0.0.1:9", dataset=str(path), **kw)


def test_order_is_seeded_and_cycles():
    a = D.DatasetWorkload(_cfg(SAMPLE, dataset_seed=1))
    b = D.DatasetWorkload(_cfg(SAMPLE, dataset_seed=1))
    c = D.DatasetWorkload(_cfg(SAMPLE, dataset_seed=2))
    first = [a.plan(i, "", []).messages for i in range(25)]
    assert first == [b.plan(i, "", []).messages for i in range(25)]
    assert first != [c.plan(i, "", []).messages for i in range(25)]
    assert first[20] == first[0]  # 20 records: request 20 is record 0 of the order again
    tagged = a.plan(3, "[t.3] ", []).messages
    assert tagged[-1]["content"] == "[t.3] " + first[3][-1]["content"] and tagged[:-1] == first[3][:-1]


class _Words:
    def __init__(self, *_a) -> None:
        pass

    def find_tokenizer(self) -> bool:
        return True

    def count(self, text: str) -> int:
        return len(text.split())

    def close(self) -> None:
        pass


def test_length_filters_keep_records_within_bounds_counting_only_what_is_needed(monkeypatch):
    monkeypatch.setattr(D, "_Server", _Words)
    w = D.DatasetWorkload(_cfg(SAMPLE, min_input_tokens=8, max_input_tokens=14, requests=3, warmup=1))
    w.prepare()
    assert len(w.order) == 4 and w.method == "tokenize" and w.counted <= 20
    for k in w.order:
        n = sum(len(m["content"].split()) for m in w.dataset.records[k][1])
        assert 8 <= n <= 14
    every = D.DatasetWorkload(_cfg(SAMPLE, min_input_tokens=8, max_input_tokens=14, requests=None, duration_s=5))
    every.prepare()
    assert every.counted == 20 and w.order == every.order[:4]  # same seed: the same records first
    with pytest.raises(InputError, match="no record within"):
        D.DatasetWorkload(_cfg(SAMPLE, min_input_tokens=10_000)).prepare()


def test_length_filters_need_a_tokenizer(monkeypatch):
    class NoTok(_Words):
        def find_tokenizer(self) -> bool:
            return False

    monkeypatch.setattr(D, "_Server", NoTok)
    with pytest.raises(ServerError, match="has no /tokenize"):
        D.DatasetWorkload(_cfg(SAMPLE, max_input_tokens=10)).prepare()
    D.DatasetWorkload(_cfg(SAMPLE)).prepare()  # no filter: nothing asked of the server


def test_load_spec_checks_dataset_options_like_bench():
    with pytest.raises(InputError, match="give one of --prompts or --dataset"):
        LoadSpec.from_options(dataset="d.jsonl", prompts="p.jsonl")
    with pytest.raises(InputError, match="filter a --dataset"):
        LoadSpec.from_options(max_input_tokens=5)
    with pytest.raises(InputError, match="--min-input-tokens 9 is above --max-input-tokens 3"):
        LoadSpec.from_options(dataset="d.jsonl", min_input_tokens=9, max_input_tokens=3)
    cfg = LoadSpec(dataset="d.jsonl", dataset_seed=4, max_input_tokens=50).to_load_config("http://x")
    assert (cfg.dataset, cfg.dataset_seed, cfg.max_input_tokens) == ("d.jsonl", 4, 50)


def test_bench_broken_dataset_is_one_line_exit_2(tmp_path):
    p = _file(tmp_path, ['{"conversations": ['])
    proc = subprocess.run([sys.executable, "-m", "tokcaliper", "bench", "--url", "http://127.0.0.1:9",
                           "--dataset", str(p), "--db", str(tmp_path / "r.db")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f"tokcaliper: error: {p}:1: not valid JSON") and proc.stderr.count("\n") == 1


def test_experiment_file_takes_the_same_dataset_and_trace_keys(tmp_path):
    from tokcaliper.experiment.spec import parse_experiment

    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"timestamp": 0, "input_length": 600, "output_length": 4, "hash_ids": [0, 1]}) + "\n")
    head = 'url = "http://127.0.0.1:8080"\nruns_per_arm = 2\n\n[load]\n'
    arms = ('\n[[arms]]\nname = "a"\nswitch = "true {value}"\nvalue = 1\n\n'
            '[[arms]]\nname = "b"\nswitch = "true {value}"\nvalue = 2\n')
    ds = parse_experiment(head + f'dataset = "{SAMPLE}"\ndataset_seed = 3\nmax_input_tokens = 40\n' + arms, "e.toml")
    assert (ds.load.dataset, ds.load.dataset_seed, ds.load.max_input_tokens) == (str(SAMPLE), 3, 40)
    tr = parse_experiment(head + f'trace = "{trace}"\ntrace_speedup = 2.0\ntrace_block_tokens = 8\n' + arms, "e.toml")
    cfg = tr.load.to_load_config("http://127.0.0.1:8080")
    assert (cfg.trace, cfg.trace_speedup, cfg.trace_block_tokens, cfg.requests) == (str(trace), 2.0, 8, 1)
    with pytest.raises(InputError, match="e.toml line 5") as e:
        parse_experiment(head + f'trace = "{trace}"\ndataset = "{SAMPLE}"\n' + arms, "e.toml")
    assert "give one of dataset or trace" in str(e.value)
