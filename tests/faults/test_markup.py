"""Issue 12 item 4: text from users, files and servers is never markup nor a control sequence."""

from __future__ import annotations

import io

from rich.console import Console

from tokcaliper.report.text import SafeConsole, esc, plain
from tokcaliper.store import Store

from tests.faults.conftest import make_run

HOSTILE = "[/x] [bold]b[/bold] \x1b[2J\x07"


def test_plain_and_esc():
    assert plain("a\x1b[31mb\x07\n\t") == "a\\x1b[31mb\\x07\n\t"
    assert plain("x\ud800") == "x\\ud800"
    out = io.StringIO()
    Console(file=out, width=200).print(esc("[/x] [bold]b[/bold]"))
    assert out.getvalue().strip() == "[/x] [bold]b[/bold]"


def test_safe_console_never_raises_on_markup():
    out = io.StringIO()
    SafeConsole(file=out, width=200).print("model [/x] \x1b[2J")
    assert out.getvalue().strip() == "model [/x] \\x1b[2J"


def test_runs_and_show_print_hostile_text_literally(tmp_path, cli):
    db = tmp_path / "t.db"
    with Store(db) as s:
        rid = s.save_run(make_run(arm=HOSTILE, model=HOSTILE, error="HTTP 500: " + HOSTILE,
                                  session="[/s]"))
    code, out, err = cli("runs", "--db", str(db))
    assert code == 0, err
    assert "[/s]" in out and "\x1b" not in out
    code, out, err = cli("show", str(rid), "--db", str(db))
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert "[/x] [bold]b[/bold] \\x1b[2J\\x07" in out  # arm, model and error shown as they are
    assert out.count("[/x]") >= 3


def test_well_formed_markup_in_a_label_is_not_interpreted(tmp_path, cli):
    db = tmp_path / "t.db"
    with Store(db) as s:
        rid = s.save_run(make_run(arm="[red]r[/red]", model="[bold]m[/bold]"))
    code, out, err = cli("runs", "--db", str(db))
    assert code == 0 and "[red]r[/red]" in out
    code, out, err = cli("show", str(rid), "--db", str(db))
    assert code == 0 and "arm [red]r[/red]" in out and "model=[bold]m[/bold]" in out


def test_error_line_shows_control_characters_escaped(cli, tmp_path):
    code, out, err = cli("show", "1", "--db", str(tmp_path / "no\x1b[2Jsuch.db"))
    assert code == 4
    assert "\x1b" not in err and "\\x1b[2J" in err


def test_audit_and_diff_show_a_record_model_name_literally(tmp_path, cli):
    import json

    rec = {"id": "g", "model": {"name": "27B [red]evil[/red] [/x] \x1b[2J", "params_total": 27.8e9,
                                "is_moe": False},
           "hardware": {"gpu_name": "RTX 5090 [/gpu]", "gpu_count": 1},
           "quantization": {"weights": "NVFP4", "bytes_per_param": 0.5}, "batch_size": 1, "tok_s_decode": 79}
    p = tmp_path / "r.json"
    p.write_text(json.dumps([rec, dict(rec, batch_size=2)]))
    code, out, err = cli("audit", str(p))
    assert code in (0, 10), err
    assert "[red]evil[/red] [/x]" in out and "\x1b" not in out and "internal" not in err
    code, out, err = cli("diff", f"{p}#0", f"{p}#1")
    assert code in (0, 11), err
    assert "\x1b" not in out and "internal" not in err
