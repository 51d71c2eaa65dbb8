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
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tokcaliper.errors import InputError

__all__ = ["DEFAULT_TIMEOUT_S", "FetchResult", "default_download_dir", "fetch_to_file", "is_url"]

#: Seconds allowed for connecting and for each read.
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


def fetch_to_file(url: str, dest_dir: Path | None = None, max_bytes: int = 256 * 1024 * 1024,
                  timeout_s: float = DEFAULT_TIMEOUT_S) -> FetchResult:
    """Download ``url`` into ``dest_dir`` and return where it was saved.

    Args:
        url: http or https URL.
        dest_dir: folder for the file (default :func:`default_download_dir`).
        max_bytes: largest body accepted, bytes. timeout_s: connect/read timeout, seconds.

    Returns:
        :class:`FetchResult`; the file name is the URL's host and path plus a
        UTC time stamp, with ``.json``/``.jsonl``/``.csv`` from the URL or
        content type (``.json`` otherwise).

    Raises:
        InputError: not http(s), HTTP error status, network error or timeout,
            body over ``max_bytes``, or a body shorter than its Content-Length
            (truncated; the partial bytes are kept as ``<file>.partial``).
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
                                               "Accept": "application/json, text/csv, */*"})
    body = bytearray()
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            ctype = resp.headers.get("Content-Type")
            declared = resp.headers.get("Content-Length")
            expected = int(declared) if declared and declared.isdigit() else None
            if expected is not None and expected > max_bytes:
                raise InputError(f"{url}: Content-Length {expected} bytes exceeds --max-bytes {max_bytes}")
            while True:
                try:
                    chunk = resp.read(_CHUNK)
                except http.client.IncompleteRead as e:
                    body += e.partial
                    chunk = b""
                    expected = expected or len(body) + 1
                if not chunk:
                    break
                body += chunk
                if len(body) > max_bytes:
                    raise InputError(f"{url}: body exceeds --max-bytes {max_bytes} (download stopped)")
    except InputError:
        raise
    except urllib.error.HTTPError as e:
        raise InputError(f"{url}: HTTP {e.code} {e.reason}") from None
    except urllib.error.URLError as e:
        reason = e.reason
        if isinstance(reason, (socket.timeout, TimeoutError)):
            raise InputError(f"{url}: timed out after {timeout_s:g} s") from None
        raise InputError(f"{url}: cannot fetch: {reason}") from None
    except (TimeoutError, socket.timeout):
        raise InputError(f"{url}: timed out after {timeout_s:g} s") from None
    except (http.client.HTTPException, OSError) as e:
        raise InputError(f"{url}: connection failed: {e}") from None
    path = out_dir / (_name(url) + _suffix(url, ctype, bytes(body[:64])))
    if expected is not None and len(body) < expected:
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(bytes(body))
        raise InputError(f"{url}: download truncated: got {len(body)} of {expected} bytes "
                         f"(Content-Length); partial bytes kept in {partial}")
    path.write_bytes(bytes(body))
    return FetchResult(url=url, path=path, size_bytes=len(body), content_type=ctype,
                       sha256=hashlib.sha256(body).hexdigest())
