"""CLI: ``tokcaliper doctor`` — check the machine before measuring (issue 21)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from tokcaliper.cli._app import JSON_HELP, app


@app.command("doctor")
def doctor_cmd(
    url: Annotated[Optional[str], typer.Option(
        help="Base URL of the server to be measured (checks /metrics and its prompt cache).")] = None,
    server_cmd: Annotated[Optional[str], typer.Option(
        help="The server's launch command (its flags are read; nothing is started).")] = None,
    window: Annotated[float, typer.Option(
        help="Seconds over which process CPU and steal time are sampled.")] = 1.0,
    json_out: Annotated[bool, typer.Option("--json", help=JSON_HELP)] = False,
) -> None:
    """Check this machine for what makes runs differ: CPU governor and boost, SMT, usable
    cores, load and the processes using the CPU, memory, swap, THP, steal time; on NVIDIA
    GPUs persistence, clocks, power limit, ECC, MIG, throttling, other processes,
    temperature; and the server's /metrics and prompt cache. Each item says why it
    matters and the exact command that would change it; tokcaliper changes nothing."""
    import math

    from tokcaliper.doctor import machine_check
    from tokcaliper.errors import InputError
    from tokcaliper.report.doctor_view import render_machine_check
    from tokcaliper.report.output import emit

    if url and server_cmd:
        raise InputError("give either --url or --server-cmd, not both")
    if not (math.isfinite(window) and 0 < window <= 60):
        raise InputError(f"--window must be seconds in (0, 60], got {window:g}")
    if url is not None:
        from tokcaliper.servers.url import server_url

        url = server_url(url)
    check = machine_check(url, server_cmd, window_s=window)
    emit(check, json_out, lambda console: render_machine_check(console, check))
