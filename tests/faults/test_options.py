"""Issue 12 item 7: every option is checked before any work, bench and experiment files alike.

Nothing listens at --url http://127.0.0.1:9: an option checked only after the
server is contacted would exit 3 (server), not 2 (input), and leave no doubt.
"""

from __future__ import annotations

import pytest

from tokcaliper.errors import InputError
from tokcaliper.experiment.spec import parse_experiment

BENCH = ("bench", "--url", "http://127.0.0.1:9", "--repeat", "2")


@pytest.mark.parametrize("args, needle", [
    (("--cooldown", "inf"), "--cooldown must be a number of seconds"),
    (("--cooldown", "nan"), "--cooldown must be a number of seconds"),
    (("--request-timeout", "inf"), "--request-timeout must be a finite number, got inf"),
    (("--telemetry-interval", "inf"), "--telemetry-interval must be a finite number, got inf"),
    (("--telemetry-interval", "1e300"), "--telemetry-interval must be ≤ 3600"),
    (("--health-timeout", "nan"), "--health-timeout must be a finite number"),
    (("--idle-seconds", "inf"), "--idle-seconds must be a finite number"),
    (("--duration", "inf"), "--duration must be a finite number"),
    (("--effect", "inf"), "--effect must be a fraction in (0, 1)"),
    (("--effect", "0"), "--effect must be a fraction in (0, 1)"),
    (("--requests", "10", "--duration", "5"), "give either --requests or --duration, not both"),
    (("--warmup", "-1"), "--warmup must be ≥ 0, got -1"),
    (("--max-tokens", "0"), "--max-tokens must be ≥ 1, got 0"),
])
def test_bench_option_fails_before_any_work(cli, tmp_path, args, needle):
    db = tmp_path / "x.db"
    code, out, err = cli(*BENCH, *args, "--db", str(db))
    assert code == 2, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], err
    assert not db.exists()


_EXP = """
name = "x"
url = "http://127.0.0.1:8080"
{top}
[load]
{load}
[[arms]]
name = "a"
switch = "true"
[[arms]]
name = "b"
switch = "true"
"""


@pytest.mark.parametrize("top, load, needle", [
    ("rest_s = inf", "", "rest_s: must be a finite number, got inf"),
    ("", "request_timeout_s = inf", "load.request_timeout_s: must be a finite number, got inf"),
    ("", "telemetry_interval_s = inf", "load.telemetry_interval_s"),
    ("", "telemetry_interval_s = nan", "load.telemetry_interval_s"),
    ("", "duration_s = 1e300", "load.duration_s"),
    ("effect = inf", "", "effect"),
    ("", "requests = 4\nduration_s = 3.0", "give either requests or duration_s"),
])
def test_experiment_file_gets_the_same_checks(top, load, needle):
    with pytest.raises(InputError, match=None) as info:
        parse_experiment(_EXP.format(top=top, load=load), "e.toml")
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_server_cmd_without_port_placeholder(cli, tmp_path):
    code, _, err = cli("bench", "--server-cmd", "sleep 30", "--health-timeout", "1", "--db", str(tmp_path / "x.db"))
    assert code == 2 and "no {port} placeholder" in err


def test_health_timeout_keeps_and_quotes_the_log(tmp_path):
    from tokcaliper.errors import ServerError
    from tokcaliper.servers.managed import ManagedServer

    server = ManagedServer("sh -c 'echo loading model on {port}; exec sleep 30'", health_timeout_s=0.5)
    with pytest.raises(ServerError) as info:
        server.start()
    msg = str(info.value)
    assert f"last log line: 'loading model on {server.port}'" in msg
    assert server.log_path.exists() and str(server.log_path) in msg
    server.log_path.unlink()


def test_health_timeout_hint_when_a_fixed_template_has_no_port(tmp_path):
    from tokcaliper.errors import ServerError
    from tokcaliper.servers.managed import ManagedServer

    server = ManagedServer("sleep 30", health_timeout_s=0.5)
    with pytest.raises(ServerError, match="no \\{port\\} placeholder"):
        server.start()
    server.log_path.unlink()
