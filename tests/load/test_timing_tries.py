"""The timing tests' tries (tests/load/conftest.py), run on small tests of their own."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

HERE = Path(__file__).resolve().parent

BODY = '''
import pytest

CALLS = []

@pytest.mark.timing
def test_late_once(tmp_path):
    CALLS.append(tmp_path)
    assert len(CALLS) > 1, "late"

@pytest.mark.timing
def test_always_late():
    assert False, "p99 9 ms"

def test_untimed_fails_once():
    assert False, "untimed"
'''


@pytest.fixture
def outcome(pytester: pytest.Pytester):
    def run(steal_pct: float | None) -> pytest.RunResult:
        pkg = pytester.mkpydir("load")
        (pkg / "conftest.py").write_text((HERE / "conftest.py").read_text())
        # A meter that reads the same steal in every try (the real one reads /proc/stat).
        (pkg / "host_steal.py").write_text(f'''
STEAL_BOUND_PCT = 1.0
class StealMeter:
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        self.pct = {steal_pct!r}
''')
        (pkg / "test_t.py").write_text(BODY)
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", "markers=timing: t",
                                             "--import-mode=importlib", "-rs")
    return run


def test_a_try_that_passes_passes_and_others_fail_with_the_steal_of_each_try(outcome):
    res = outcome(0.2)
    res.assert_outcomes(passed=1, failed=2)
    out = res.stdout.str()
    assert "failed 3 tries; hypervisor steal per try: 0.2 %, 0.2 %, 0.2 % (bound 1.0 %)" in out
    assert out.count("failed 3 tries") == 1  # the untimed test is run once, as pytest does
    assert "passed on try 2; earlier tries' steal 0.2 %: late" in out


def test_failing_every_try_under_steal_skips_with_the_figures(outcome):
    res = outcome(4.5)
    res.assert_outcomes(passed=1, skipped=1, failed=1)
    out = res.stdout.str()
    assert "the hypervisor took back 4.5 %, 4.5 %, 4.5 % of the CPU time (bound 1.0 %)" in out
    assert "(p99 9 ms" in out


def test_an_unreadable_steal_never_skips(outcome):
    res = outcome(None)
    res.assert_outcomes(passed=1, failed=2)
    assert "steal per try: unreadable, unreadable, unreadable" in res.stdout.str()
