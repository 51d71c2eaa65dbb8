"""The URL of the server under test: the one place it is checked and normalised.

``bench --url``, an experiment file's ``url`` and every live target go through
:func:`server_url`, so they agree on what a server URL is: ``http(s)://HOST[:PORT][/PATH]``,
given as its root. OpenAI clients are configured with ``…/v1``; tokcaliper adds
``/v1/chat/completions`` itself, so a trailing ``/v1`` is dropped (it would
post to ``/v1/v1/…`` otherwise). Pure; no I/O.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from tokcaliper.errors import InputError

__all__ = ["server_url"]


def server_url(text: str, what: str = "--url") -> str:
    """The server root of ``text``: validated, without a trailing ``/`` or ``/v1``.

    ``"http://127.0.0.1:8080/v1/"`` → ``"http://127.0.0.1:8080"``;
    ``"http://h/proxy/v1"`` → ``"http://h/proxy"``.

    Args:
        text: the URL as given. what: how the user gave it, for messages
            (``"--url"``, or ``"url"`` for an experiment file's key).

    Raises:
        InputError: not a string, another scheme than http(s), no host, a port
            outside 1–65535, a query or fragment; the message starts with ``what``.
    """
    if not isinstance(text, str) or not text.strip() or any(c.isspace() for c in text.strip()):
        raise InputError(f"{what} must look like http://HOST:PORT, got {text!r}")
    try:
        u = urlsplit(text.strip())
        port = u.port
    except ValueError as e:
        if "port" in str(e).lower():
            raise InputError(f"{what} port must be 1–65535, got {text!r}") from None
        raise InputError(f"{what} {text!r} is not a valid URL: {e}") from None
    if u.scheme.lower() not in ("http", "https") or not u.hostname:
        raise InputError(f"{what} must look like http://HOST:PORT, got {text!r}")
    if port is not None and not 0 < port < 65536:
        raise InputError(f"{what} port must be 1–65535, got {port}")
    if u.query or u.fragment:
        raise InputError(f"{what} {text!r}: a server URL has no ?query or #fragment")
    root = text.strip().rstrip("/")
    if root.endswith("/v1"):
        root = root[:-3].rstrip("/")
    return root
