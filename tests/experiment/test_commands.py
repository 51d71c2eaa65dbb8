"""Commands from an experiment file: placeholders, argv without a shell, read-back."""

import pytest

from tokcaliper.errors import InputError
from tokcaliper.experiment.commands import fill_command, readback_matches


def test_no_shell_split_then_fill():
    assert fill_command("nvidia-smi -pl {value}", value="180") == ["nvidia-smi", "-pl", "180"]
    # a value with spaces or shell syntax stays one argument
    assert fill_command("echo {value}", value="1; rm -rf /") == ["echo", "1; rm -rf /"]
    assert fill_command("srv --host {host} --port {port}", host="127.0.0.1", port=8080) == [
        "srv", "--host", "127.0.0.1", "--port", "8080"]
    assert fill_command("awk '{{print $1}}'") == ["awk", "{print $1}"]


def test_shell_mode_quotes_values():
    argv = fill_command("nvidia-smi -pl {value} && echo ok", value="1; reboot", shell=True)
    assert argv == ["/bin/sh", "-c", "nvidia-smi -pl '1; reboot' && echo ok"]


@pytest.mark.parametrize("template,kw,msg", [
    ("x {other}", {}, "unknown placeholder {other}"),
    ("x {value}", {}, "no value is given"),
    ("x {}", {}, "is not one of"),
    ("x {value!r}", {"value": "1"}, "is not one of"),
    ("x {value", {"value": "1"}, "literal braces"),
    ("x 'unclosed", {}, "quotation"),
    ("   ", {}, "empty"),
])
def test_bad_templates(template, kw, msg):
    with pytest.raises(InputError, match=msg):
        fill_command(template, **kw)


def test_readback():
    assert readback_matches("200.00 W\n", expect="200.00 W")
    assert not readback_matches("180.00 W\n", expect="200.00 W")
    assert readback_matches(" 180.00 W\n", expect_regex=r"180(\.0+)? W")
    assert not readback_matches("1180.00 W", expect_regex=r"180(\.0+)? W")  # full match
    with pytest.raises(InputError):
        readback_matches("x")
    with pytest.raises(InputError, match="expect_regex"):
        readback_matches("x", expect_regex="(")
