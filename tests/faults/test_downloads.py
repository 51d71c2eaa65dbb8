"""Issue 22 item 21: `audit URL --timeout` bounds the whole download; a compressed body is decoded or refused."""

from __future__ import annotations

import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tokcaliper.audit.fetch import fetch_to_file
from tokcaliper.errors import InputError

BODY = b'[{"id": "g", "tok_s_decode": 79}]' * 20


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def _head(self, length: int | None, encoding: str | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if length is not None:
            self.send_header("Content-Length", str(length))
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.end_headers()

    def do_GET(self):  # noqa: N802 (http.server API)
        try:
            if self.path == "/trickle":  # one byte every 0.3 s: each read is quick, the whole is not
                self._head(len(BODY))
                for b in BODY:
                    self.wfile.write(bytes([b]))
                    self.wfile.flush()
                    time.sleep(0.3)
            elif self.path == "/trickle-headers":
                self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                for _ in range(60):
                    self.wfile.write(b"X: y\r\n")
                    self.wfile.flush()
                    time.sleep(0.3)
            elif self.path == "/gzip":
                data = gzip.compress(BODY)
                self._head(len(data), "gzip")
                self.wfile.write(data)
            elif self.path == "/bomb":  # 20 MB of zeros in ~20 kB
                data = gzip.compress(b" " * 20_000_000)
                self._head(len(data), "gzip")
                self.wfile.write(data)
            elif self.path == "/br":
                data = b"\x0b\x02\x80hello\x03"
                self._head(len(data), "br")
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture()
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("path", ["/trickle", "/trickle-headers"])
def test_timeout_is_a_deadline_for_the_whole_download(server, tmp_path, path):
    t0 = time.monotonic()
    with pytest.raises(InputError, match=r"within --timeout 1 s|timed out after 1 s"):
        fetch_to_file(f"{server}{path}", tmp_path, timeout_s=1.0)
    assert time.monotonic() - t0 < 4.0  # before: ran for len(BODY) × 0.3 s ≈ 200 s
    assert not list(tmp_path.glob("*.json"))  # nothing parseable left behind


def test_gzip_body_is_decoded(server, tmp_path):
    got = fetch_to_file(f"{server}/gzip", tmp_path)
    assert got.path.read_bytes() == BODY  # before: the gzip bytes were saved and parsed as JSON


def test_compressed_body_obeys_the_size_limit_once_decoded(server, tmp_path):
    with pytest.raises(InputError, match=r"exceeds --max-bytes 1000000 once decoded \(gzip\)"):
        fetch_to_file(f"{server}/bomb", tmp_path, max_bytes=1_000_000)


def test_unknown_encoding_is_refused_by_name(server, tmp_path):
    with pytest.raises(InputError, match=r"Content-Encoding 'br', which tokcaliper does not decode"):
        fetch_to_file(f"{server}/br", tmp_path)
