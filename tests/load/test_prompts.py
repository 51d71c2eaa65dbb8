"""Prompt loading: built-in set and JSONL files with clear errors."""

import pytest

from tokcaliper.errors import InputError
from tokcaliper.load.prompts import builtin_prompts, load_prompts


def test_builtin_set_is_varied_chat():
    ps = builtin_prompts()
    assert len(ps) == 40
    assert all(p[0]["role"] == "user" and len(p[0]["content"]) > 20 for p in ps)
    assert len({p[0]["content"] for p in ps}) == 40


def test_jsonl_both_shapes(tmp_path):
    f = tmp_path / "p.jsonl"
    f.write_text('{"prompt": "hi"}\n\n{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}\n')
    ps = load_prompts(f)
    assert ps[0] == [{"role": "user", "content": "hi"}]
    assert [m["role"] for m in ps[1]] == ["system", "user"]


@pytest.mark.parametrize("text, msg", [('{"prompt": 1}\n', ":1: expected"), ("{oops\n", ":1: not valid JSON"), ("\n", "no prompts")])
def test_bad_files_name_the_line(tmp_path, text, msg):
    f = tmp_path / "bad.jsonl"
    f.write_text(text)
    with pytest.raises(InputError, match=msg):
        load_prompts(f)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="prompts file .*nope.jsonl: cannot read"):
        load_prompts(tmp_path / "nope.jsonl")


def test_salted_tags_only_the_last_user_message():
    from tokcaliper.load.driver import salted

    msgs = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "a"},
            {"role": "user", "content": "second"}]
    out = salted(msgs, "[s.3] ")
    assert [m["content"] for m in out] == ["first", "a", "[s.3] second"]
    assert msgs[2]["content"] == "second"  # the shared prompt set is not mutated
