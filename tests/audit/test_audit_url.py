"""`tokcaliper audit URL`: the bytes are saved to a file first, then parsed (local server on 127.0.0.1)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tokcaliper.audit.fetch import fetch_to_file
from tokcaliper.cli import main
from tokcaliper.errors import InputError

from .conftest import PUBLIC

BODY = (PUBLIC / "localmaxxing_records.json").read_bytes()


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):  # noqa: N802 (http.server API)
        if self.path.startswith("/api/records"):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)
        elif self.path == "/truncated":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY[:1000])
            self.wfile.flush()
            self.close_connection = True
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()


@pytest.fixture()
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_audit_url_saves_then_parses(server, tmp_path, capsys):
    url = f"{server}/api/records?page=1"
    code = main(["audit", "--brief", "--json", "--save-dir", str(tmp_path), url])
    captured = capsys.readouterr()
    saved = list(tmp_path.glob("*.json"))
    assert len(saved) == 1 and saved[0].read_bytes() == BODY  # the raw bytes, as served
    assert f"to {saved[0]}" in captured.err and f"({len(BODY)} bytes" in captured.err
    doc = json.loads(captured.out)
    assert len(doc["records"]) == 60
    assert all(r["file"] == str(saved[0]) for r in doc["records"])  # parsed from the saved file
    assert code == doc["exit_code"]
    # the same file audits again later, without the server
    assert main(["audit", "--json", str(saved[0])]) == code


def test_truncated_download_is_a_clear_error(server, tmp_path, capsys):
    assert main(["audit", "--save-dir", str(tmp_path), f"{server}/truncated"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("tokcaliper: error: ") and "\n" not in err
    assert f"download truncated: got 1000 of {len(BODY)} bytes" in err
    assert not list(tmp_path.glob("*.json"))  # nothing parseable left behind
    assert len(list(tmp_path.glob("*.partial"))) == 1


def test_size_limit_and_http_errors(server, tmp_path):
    with pytest.raises(InputError, match="exceeds --max-bytes 100"):
        fetch_to_file(f"{server}/api/records", tmp_path, max_bytes=100)
    with pytest.raises(InputError, match="HTTP 404"):
        fetch_to_file(f"{server}/nothing", tmp_path)
    with pytest.raises(InputError, match="not an http"):
        fetch_to_file("ftp://127.0.0.1/x", tmp_path)
