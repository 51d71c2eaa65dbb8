"""Fetch a URL to disk, then parse it from that file (METHODS.md A9).

``tokcaliper audit URL`` never parses bytes in flight: the raw response is
saved first (a size limit and a timeout apply, the path is printed) so that
the very bytes audited can be re-read, diffed and audited again later — a
benchmark site's JSON API changes under you. A download that ends before its
``Content-Length`` is a clear error (the partial bytes are kept beside the
target as ``….partial`` for inspection); a body over the limit is refused.
"""

from __future__ import annotations

import hashlib
import http.client
import re
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tokcaliper.errors import InputError

__all__ = ["DEFAULT_TIMEOUT_S", "FetchResult", "default_download_dir", "fetch_to_file", "is_url"]

#: Seconds allowed for the whole download (connect, headers, body).
DEFAULT_TIMEOUT_S = 30.0
_CHUNK = 1 << 16


@dataclass(frozen=True)
class FetchResult:
    """A saved download: where it is, how big, and what the server said it was."""

    url: str
    path: Path
    size_bytes: int
    content_type: str | None
    sha256: str


def is_url(text: str) -> bool:
    """True for ``http://…`` and ``https://…``."""
    return bool(re.match(r"^https?://", text, re.I))


def default_download_dir() -> Path:
    """``~/.cache/tokcaliper/downloads`` (created on use)."""
    return Path.home() / ".cache" / "tokcaliper" / "downloads"


def _suffix(url: str, content_type: str | None, head: bytes) -> str:
    path = urllib.parse.urlparse(url).path.lower()
    for s in (".jsonl", ".json", ".csv"):
        if path.endswith(s):
            return s
    ct = (content_type or "").lower()
    if "csv" in ct:
        return ".csv"
    if "ndjson" in ct or "jsonl" in ct:
        return ".jsonl"
    return ".json" if "json" in ct or head.lstrip()[:1] in (b"{", b"[") else ".json"


def _name(url: str) -> str:
    p = urllib.parse.urlparse(url)
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{p.netloc}{p.path}").strip("_.")[:80] or "download"
    base = re.sub(r"\.(jsonl|json|csv)$", "", base, flags=re.I)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{base}-{stamp}"


class _Decoder:
    """Undoes a body's ``Content-Encoding`` (gzip, deflate) as it arrives, the ceiling on decoded bytes.

    Raises (``InputError``): an encoding other than gzip/deflate/identity, named;
    bytes that do not decode; more than ``max_bytes`` once decoded (a small
    compressed body can expand a thousandfold).
    """

    def __init__(self, url: str, encoding: str | None, max_bytes: int) -> None:
        self.url, self.max_bytes = url, max_bytes
        enc = (encoding or "identity").strip().lower()
        self.name = enc
        if enc in ("identity", ""):
            self._z = None
        elif enc in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            self._z = zlib.decompressobj()
        else:
            raise InputError(f"{url}: the server sent Content-Encoding {encoding!r}, which tokcaliper does not "
                             "decode (gzip and deflate are); fetch it uncompressed and audit the file")
        self.out = bytearray()

    def feed(self, data: bytes) -> None:
        if self._z is None:
            self.out += data
        else:
            try:
                self.out += self._z.decompress(data, self.max_bytes + 1 - len(self.out))
            except zlib.error as e:
                raise InputError(f"{self.url}: body is not valid {self.name} data ({e})") from None
        if len(self.out) > self.max_bytes:
            raise InputError(f"{self.url}: body exceeds --max-bytes {self.max_bytes}"
                             + (f" once decoded ({self.name})" if self._z is not None else "")
                             + " (download stopped)")

    def finish(self) -> bytes:
        """The decoded body. Raises InputError when compressed data stops before its end."""
        if self._z is not None and not self._z.eof:
            raise InputError(f"{self.url}: the {self.name} body ends before its compressed data does "
                             "(truncated)")
        return bytes(self.out)


class _Deadline:
    """Cuts a download off at its deadline, wherever it waits (connect, headers, body).

    Each connection the opener makes (redirects make more) registers its socket;
    a timer shuts the current one down when the time is up, which ends any read
    blocked on it. Per-read timeouts alone never stop a server that sends one
    byte just inside each timeout.
    """

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            if self.expired:
                self._shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            if self._sock is not None:
                self._shut(self._sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def opener(self) -> urllib.request.OpenerDirector:
        """A urllib opener whose connections register their sockets here."""
        deadline = self

        def watched(base: type[http.client.HTTPConnection]) -> type[http.client.HTTPConnection]:
            class Watched(base):  # type: ignore[misc,valid-type]
                def connect(self) -> None:
                    super().connect()
                    deadline.watch(self.sock)

            return Watched

        class HTTP(urllib.request.HTTPHandler):
            def http_open(self, req):  # type: ignore[no-untyped-def]
                return self.do_open(watched(http.client.HTTPConnection), req)

        class HTTPS(urllib.request.HTTPSHandler):
            def https_open(self, req):  # type: ignore[no-untyped-def]
                return self.do_open(watched(http.client.HTTPSConnection), req,
                                    context=self._context)  # type: ignore[attr-defined]

        return urllib.request.build_opener(HTTP, HTTPS)


def fetch_to_file(url: str, dest_dir: Path | None = None, max_bytes: int = 256 * 1024 * 1024,
                  timeout_s: float = DEFAULT_TIMEOUT_S) -> FetchResult:
    """Download ``url`` into ``dest_dir`` and return where it was saved.

    Args:
        url: http or https URL.
        dest_dir: folder for the file (default :func:`default_download_dir`).
        max_bytes: largest body accepted, bytes (decoded, for a gzip/deflate body).
        timeout_s: seconds allowed for the whole download, connecting, headers and
            body together (a server that trickles bytes is cut off at the deadline).

    Returns:
        :class:`FetchResult`; the file name is the URL's host and path plus a
        UTC time stamp, with ``.json``/``.jsonl``/``.csv`` from the URL or
        content type (``.json`` otherwise).

    Raises:
        InputError: not http(s), HTTP error status, network error or timeout,
            body over ``max_bytes``, a Content-Encoding other than gzip/deflate,
            or a body shorter than its Content-Length or not finished within
            ``timeout_s`` (the partial bytes are kept as ``<file>.partial``).
    """
    if not is_url(url):
        raise InputError(f"{url}: not an http(s) URL")
    if not (timeout_s > 0):
        raise InputError(f"--timeout must be > 0 s, got {timeout_s}")
    out_dir = Path(dest_dir) if dest_dir is not None else default_download_dir()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create download folder {out_dir}: {e.strerror or e}") from None
    req = urllib.request.Request(url, headers={"User-Agent": "tokcaliper-audit",
                                               "Accept": "application/json, text/csv, */*",
                                               "Accept-Encoding": "gzip, deflate"})
    received = 0  # bytes on the wire (what Content-Length counts)
    decoder: _Decoder | None = None
    expected: int | None = None
    ctype: str | None = None
    late = False
    deadline = _Deadline(timeout_s)
    timed_out = InputError(f"{url}: timed out after {timeout_s:g} s (--timeout)")
    try:
        with deadline, deadline.opener().open(req, timeout=timeout_s) as resp:
            ctype = resp.headers.get("Content-Type")
            declared = resp.headers.get("Content-Length")
            expected = int(declared) if declared and declared.isdigit() else None
            if expected is not None and expected > max_bytes:
                raise InputError(f"{url}: Content-Length {expected} bytes exceeds --max-bytes {max_bytes}")
            decoder = _Decoder(url, resp.headers.get("Content-Encoding"), max_bytes)
            read = getattr(resp, "read1", resp.read)  # read1: what has arrived, not a full chunk
            while not deadline.expired:
                try:
                    chunk = read(_CHUNK)
                except http.client.IncompleteRead as e:
                    received += len(e.partial)
                    decoder.feed(e.partial)
                    chunk = b""
                    expected = expected or received + 1
                except (OSError, http.client.HTTPException):
                    if not deadline.expired:
                        raise
                    chunk = b""
                if not chunk:
                    break
                received += len(chunk)
                decoder.feed(chunk)
            late = deadline.expired
    except InputError:
        raise
    except urllib.error.HTTPError as e:
        raise InputError(f"{url}: HTTP {e.code} {e.reason}") from None
    except urllib.error.URLError as e:
        if deadline.expired or isinstance(e.reason, (socket.timeout, TimeoutError)):
            raise timed_out from None
        raise InputError(f"{url}: cannot fetch: {e.reason}") from None
    except (TimeoutError, socket.timeout):
        raise timed_out from None
    except (http.client.HTTPException, OSError) as e:
        if deadline.expired:
            raise timed_out from None
        raise InputError(f"{url}: connection failed: {e}") from None
    assert decoder is not None
    body = bytes(decoder.out)
    path = out_dir / (_name(url) + _suffix(url, ctype, body[:64]))
    if late:
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(body)
        raise InputError(f"{url}: download not finished within --timeout {timeout_s:g} s (got {received} "
                         f"bytes{f' of {expected}' if expected is not None else ''}); partial bytes kept in "
                         f"{partial}")
    if expected is not None and received < expected:
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(body)
        raise InputError(f"{url}: download truncated: got {received} of {expected} bytes "
                         f"(Content-Length); partial bytes kept in {partial}")
    body = decoder.finish()
    path.write_bytes(body)
    return FetchResult(url=url, path=path, size_bytes=len(body), content_type=ctype,
                       sha256=hashlib.sha256(body).hexdigest())


def resolve_inputs(items: Sequence[str], dest_dir: Path | None = None, *, max_bytes: int = 256 * 1024 * 1024,
                   timeout_s: float = DEFAULT_TIMEOUT_S,
                   on_saved: Callable[[FetchResult], None] | None = None) -> list[Path]:
    """The files ``audit`` reads: each item as a path, a URL downloaded first (:func:`fetch_to_file`).

    ``on_saved`` is called with each download as soon as it is saved (the CLI says where,
    on stderr), so a later failure still leaves the saved path on record.

    Raises:
        InputError: as :func:`fetch_to_file`.
    """
    paths: list[Path] = []
    for item in items:
        if is_url(item):
            got = fetch_to_file(item, dest_dir, max_bytes=max_bytes, timeout_s=timeout_s)
            if on_saved is not None:
                on_saved(got)
            paths.append(got.path)
        else:
            paths.append(Path(item))
    return paths
