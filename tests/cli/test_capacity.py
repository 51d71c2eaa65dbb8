"""``tokcaliper capacity`` end to end on the fake server of known capacity (issue 18 item 8).

The fake server serves at most 2 requests at once, each for a fixed 100 ms: its capacity is
2 ÷ 0.1 s = 20 req/s. With constant arrivals below it every request meets e2e ≤ 250 ms
(150 ms of slack for a busy machine); above it the queue grows and attainment falls. The CI's coverage and its shrinking with
more runs are tested on simulated draws in tests/stats/test_capacity.py (fast); this test
checks the whole path: the interleaved experiment, the stored attainments, the bracket.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.load.fake_server import FakeServer, FakeTiming

SLOTS, SERVICE_S = 2, 0.1
TRUE_CAPACITY = SLOTS / SERVICE_S  # 20 req/s


def _tok(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tokcaliper", *args], capture_output=True, text=True,
                          timeout=180)


@pytest.fixture
def cli(capsys):
    """``tokcaliper ARGS`` in-process (no interpreter start): (exit code, stdout, stderr)."""
    from tokcaliper.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def test_capacity_of_a_server_of_known_capacity(tmp_path, cli):
    db = tmp_path / "c.db"
    with FakeServer(FakeTiming(ttft_s=SERVICE_S, itl_s=0.0, tokens=1, slots=SLOTS)) as srv:
        proc = _tok("capacity", "--url", srv.base_url, "--slo", "e2e=250ms", "--rates", "8,12,40",
                    "--repeat", "2", "-n", "12", "--arrival", "constant", "--max-tokens", "1",
                    "--telemetry-interval", "0", "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    est = out["estimate"]
    assert est["bracket"] == "bracketed" and est["seed"] == 0
    lo, hi = est["between"]
    assert lo < TRUE_CAPACITY < hi, est["arithmetic"]
    assert lo <= est["capacity_rps"] <= hi and lo <= est["ci95"][0] <= est["ci95"][1] <= hi
    assert [p["rate_rps"] for p in est["points"]] == [8.0, 12.0, 40.0]
    assert all(len(p["attainments"]) == 2 for p in est["points"])
    assert est["points"][0]["mean"] == 1.0 and est["points"][-1]["mean"] < 0.9
    assert est["grid_note"] is not None  # the interpolation, not the runs, limits this figure
    # Recomputed from the store: the same figures (the bootstrap seed is fixed); another
    # target that every rate meets is not bracketed, and says so.
    code, again, err = cli("capacity", "--experiment", out["experiment"], "--db", str(db), "--json")
    assert code == 0 and json.loads(again)["estimate"] == est, err
    code, text, err = cli("capacity", "--experiment", out["experiment"], "--db", str(db), "--target", "5")
    assert code == 0, err
    assert "not bracketed: every tried rate meets 5.0%; the capacity is above 40 req/s" in " ".join(
        text.split())


@pytest.mark.parametrize("args, needle", [
    (["--slo", "e2e=1s", "--rates", "4"], "--rates needs at least 2 rates"),
    (["--slo", "e2e=1s", "--rates", "1,2", "--target", "0"], "--target must be a percentage in (0, 100]"),
    (["--slo", "e2e", "--rates", "1,2"], "--slo item 'e2e' is not KIND=VALUE"),
    (["--rates", "1,2"], "give --slo"),
    (["--slo", "e2e=1s", "--rates", "1,2", "--repeat", "1"], "--repeat must be ≥ 2, got 1"),
])
def test_bad_capacity_options_are_one_line(tmp_path, cli, args, needle):
    db = tmp_path / "x.db"
    code, _out, err = cli("capacity", "--url", "http://127.0.0.1:9", "--db", str(db), *args)
    assert code == 2 and "Traceback" not in err, err
    errors = [ln for ln in err.splitlines() if ln.startswith("tokcaliper: error:")]
    assert len(errors) == 1 and needle in errors[0], err
    assert not db.exists()
