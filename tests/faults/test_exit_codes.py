"""Issue 12 item 10: verdicts have their own exit codes, distinct from internal errors (1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokcaliper.errors import EXIT_AUDIT_FAIL, EXIT_INTERNAL, EXIT_NOT_COMPARABLE

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = str(REPO / "examples" / "seed003_claim.json")
LM = REPO / "tests" / "data" / "public" / "localmaxxing_records.json"


def test_codes_are_distinct():
    assert len({EXIT_INTERNAL, 2, 3, 4, 5, EXIT_AUDIT_FAIL, EXIT_NOT_COMPARABLE, 130}) == 8


def test_audit_failing_record_is_10_not_1(cli):
    code, out, err = cli("audit", EXAMPLE)
    assert code == EXIT_AUDIT_FAIL == 10, err


def test_diff_not_comparable_is_11(cli):
    code, out, err = cli("diff", f"{LM}#3", f"{LM}#8")
    assert code == EXIT_NOT_COMPARABLE == 11, err


def test_internal_error_is_1(cli, monkeypatch):
    import tokcaliper.cli.runs as runs_mod

    def boom(*a, **k):
        raise RuntimeError("a bug")

    monkeypatch.setattr(runs_mod, "open_existing", boom)
    code, out, err = cli("runs")
    assert code == EXIT_INTERNAL and "internal error: RuntimeError: a bug" in err


@pytest.mark.parametrize("args, needle", [
    (("--cv", "0.1", "--effect", "1e200"), "--effect must be ≤ 10"),
    (("--cv", "1e200", "--effect", "0.05"), "more than 1,000,000,000 runs per arm"),
])
def test_plan_absurd_effect_is_one_line(cli, args, needle):
    code, out, err = cli("plan", *args)
    assert code == 2 and needle in err and err.count("\n") == 1


def test_audit_brief_prints_no_library_warning(tmp_path):
    """A batch whose figures are degenerate made scipy warn with a source path; the CLI
    filters scipy/statsmodels/numpy warnings (TOKCALIPER_DEBUG=1 shows them)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONWARNINGS": "default", "PYTHONPATH": str(REPO / "src")}
    env.pop("TOKCALIPER_DEBUG", None)
    for args in (("audit", "--brief", str(LM)), ("audit", str(LM)), ("audit", "--brief", EXAMPLE)):
        proc = subprocess.run([sys.executable, "-m", "tokcaliper", *args], capture_output=True, text=True,
                              env=env, timeout=120)
        assert proc.returncode in (0, 10, 12), proc.stderr  # 12: not every check ran (issue 26)
        assert "Warning" not in proc.stderr and "site-packages" not in proc.stderr, proc.stderr


def _subprocess_env() -> dict[str, str]:
    import os

    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("TOKCALIPER_DEBUG", None)
    return env


def test_attribute_on_a_missing_database_exits_4_like_every_reader(cli, tmp_path):
    """Issue 22 item 14: `attribute … --db nonexist.db` exited 2; `runs`, `show`,
    `experiment show` exit 4 for a missing database."""
    missing = str(tmp_path / "nonexist.db")
    code, _out, err = cli("attribute", "abc", "--db", missing)
    assert code == 4, err
    assert "nonexist.db" in err and err.count("\n") == 1
    code_runs, _o, _e = cli("runs", "--db", missing)
    assert code_runs == code


@pytest.mark.parametrize("args", [("runs",), ("runs", "--json"), ("show", "1")])
def test_a_closed_stdout_ends_quietly_with_141(tmp_path, args):
    """Issue 22 item 14: `tokcaliper runs | head -1` exited 1 (the internal-error code):
    rich turned the broken pipe into SystemExit(1). Now 141 (128 + SIGPIPE, what a shell
    reports for any tool stopped by a closed pipe), nothing on stderr."""
    import subprocess
    import sys

    from tests.faults.conftest import make_run
    from tokcaliper.errors import EXIT_BROKEN_PIPE
    from tokcaliper.store import Store

    db = tmp_path / "t.db"
    with Store(db) as store:
        for _ in range(3):
            store.save_run(make_run())
    proc = subprocess.Popen([sys.executable, "-m", "tokcaliper", *args, "--db", str(db)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_subprocess_env())
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before anything is written
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_BROKEN_PIPE == 141, err
    assert err == b"", err
