"""The server a command measures: one already running, or one we start."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tokcaliper.errors import InputError
from tokcaliper.model.text import esc
from tokcaliper.servers.local import fill_local_placeholders, find_local_llama, server_version
from tokcaliper.servers.managed import ManagedServer, check_reachable
from tokcaliper.servers.url import server_url


@dataclass(frozen=True)
class Target:
    """Where the load goes.

    Attributes:
        base_url: server root, e.g. ``http://127.0.0.1:8080``.
        server: the managed process when tokcaliper started it, else None.
        version: the server's version string when known.
    """

    base_url: str
    server: ManagedServer | None
    version: str | None


@contextmanager
def target_server(
    url: str | None,
    server_cmd: str | None,
    *,
    health_timeout_s: float = 180.0,
    announce: Callable[[str], None] = lambda _msg: None,
) -> Iterator[Target]:
    """Yield the server to measure, stopping it afterwards if we started it.

    With ``url``: check that something answers there. Else start
    ``server_cmd``, or with neither the local llama-server + SmolLM2 default;
    the process is stopped on exit, on error and on Ctrl-C.

    Raises:
        InputError: a bad URL or command template; the local default missing.
        ServerError: nothing answers at ``url``; the command fails to start.
    """
    if url is not None:
        base_url = server_url(url)
        check_reachable(base_url)
        yield Target(base_url=base_url, server=None, version=None)
        return
    version = None
    if server_cmd is None:
        local = find_local_llama()
        server_cmd = local.command_template()
        version = local.version()
    server = ManagedServer(fill_local_placeholders(server_cmd), health_timeout_s=health_timeout_s)
    if server.port_placeholder is False:
        raise InputError(
            "--server-cmd has no {port} placeholder: tokcaliper picks a free port, fills it in and "
            "waits for /health there (e.g. `llama-server -m M --port {port}`)")
    announce(f"starting server: {esc(server.command_line)}")
    try:
        server.start()
        yield Target(
            base_url=server.base_url, server=server,
            version=version or server_version(server.argv[0]),
        )
    finally:
        server.stop()
