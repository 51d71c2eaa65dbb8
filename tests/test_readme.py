"""The README's runnable commands run (issue 26 item 5).

Every command of the README block marked ``<!-- runnable: … -->`` is run in
order, in a fresh folder (a fresh ``tokcaliper.db``), against the real
llama-server + SmolLM2, as written except for the load: fewer requests, fewer
tokens, fewer restarts and windows (:func:`_shrink`), and experiment files
copied with 3 runs per arm of 2 requests; no idle-power phase (``--idle-seconds 0``). A command that exits with an error
code (1–4) fails the test, naming the README line; the audit's verdict codes
(10: a record fails, 12: not every check ran) are answers, and the test checks
the ones the README's comments promise.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

from tokcaliper.cli import main

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
MARK = "<!-- runnable"

pytestmark = pytest.mark.server


def runnable_commands(text: str) -> list[str]:
    """The commands of the README's runnable block: continuation lines joined, comments and
    ``source`` lines dropped. Raises AssertionError when the block is missing."""
    assert MARK in text, "README has no block marked runnable"
    block = text.split(MARK, 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    joined = re.sub(r"\\\n\s*", " ", block)
    out = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == "tokcaliper":
            out.append(shlex.join(words))
    return out


def _set(argv: list[str], flag: str, value: str) -> None:
    if flag in argv:
        argv[argv.index(flag) + 1] = value


def _shrink(argv: list[str], tmp: Path) -> list[str]:
    """The same command with a smaller load (and experiment files copied smaller)."""
    argv = list(argv)
    cmd = argv[0]
    if cmd == "bench":
        for f in ("--requests", "-n"):
            _set(argv, f, "2")
        if "--requests" not in argv and "-n" not in argv:
            argv += ["--requests", "2"]
        if "--max-tokens" not in argv and "--output-tokens" not in argv:
            argv += ["--max-tokens", "4"]
        _set(argv, "--max-tokens", "4")
        _set(argv, "--output-tokens", "fixed:4")
        _set(argv, "--restarts", "2")
        if "--restarts" in argv:
            _set(argv, "--repeat", "2")
        if "--repeat" not in argv:
            argv += ["--repeat", "2"]  # bench's default is 5
        argv += ["--idle-seconds", "0"]
    if argv[:2] == ["spec", "sweep"]:
        _set(argv, "--k", "2")
        _set(argv, "--repeat", "2")
        argv += ["--max-tokens", "4"]
    if argv[:2] == ["experiment", "run"]:
        src = REPO / argv[2]
        spec = tomllib.loads(src.read_text())
        small = tmp / src.name
        text = src.read_text()
        text = re.sub(r"(?m)^runs_per_arm = \d+", "runs_per_arm = 3", text)
        text = re.sub(r"(?m)^warmup_runs = \d+", "warmup_runs = 0", text)
        text = re.sub(r"(?m)^rest_s = \d+", "rest_s = 0", text)
        text = re.sub(r"(?m)^requests = \d+", "requests = 2", text)
        text = re.sub(r"(?m)^max_tokens = \d+", "max_tokens = 4", text)
        assert "runs_per_arm" in spec and tomllib.loads(text)["runs_per_arm"] == 3
        small.write_text(text)
        argv[2] = str(small)
    return argv


def test_readme_lists_its_runnable_commands():
    cmds = runnable_commands(README.read_text())
    assert len(cmds) >= 18
    assert not [c for c in cmds if re.search(r"\b(ID|SESSION|RUN_ID|a\.json|records\.json)\b", c)
                and "examples/" not in c], "a template in the runnable block"


def test_readme_runnable_commands_run(tmp_path, monkeypatch, capsys, local_llama):
    """Each command runs in order and exits 0 (audit: the verdict its comment names)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(REPO / "examples")
    (tmp_path / "src").symlink_to(REPO / "src")  # the dataset sample's path is relative to the clone
    verdicts = {"examples/seed003_claim.json": 10, "examples/audit/h100_records.json": 10,
                "examples/audit/h100_unknown_gpu.json": 12, "examples/attribution/records.json#0": 11}
    ran = []
    for line in runnable_commands(README.read_text()):
        argv = _shrink(shlex.split(line, comments=True)[1:], tmp_path)
        rc = main(argv)
        out = capsys.readouterr()
        want = next((code for f, code in verdicts.items() if argv[0] in ("audit", "diff") and f in argv), 0)
        assert rc == want, f"README command {line!r} (run as {argv}) exited {rc}: {out.err[-600:]}"
        if argv[:2] == ["experiment", "run"] and "--json" not in argv:
            assert "result:" in out.out and "next:" in out.out, line
        ran.append(shlex.join(["tokcaliper", *argv]))
    print("\n".join(ran))
