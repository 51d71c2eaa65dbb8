"""``tokcaliper doctor``: check the machine before measuring (issue 21).

* :mod:`~tokcaliper.doctor.facts` — gather what the host, the GPUs (NVML) and the
  server expose (all the I/O).
* :mod:`~tokcaliper.doctor.checks` — pure judgements: each finding says what was
  found, why it matters for noise and the exact command that would change it.
* :func:`machine_check` — both together, as a :class:`~tokcaliper.model.doctor.MachineCheck`;
  ``quick=True`` is the < 1 s check ``bench`` and ``experiment run`` make before
  measuring (stored with every run of the session in ``HostInfo.machine_check``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from tokcaliper.model.doctor import Finding, MachineCheck

__all__ = ["QUICK_WINDOW_S", "FULL_WINDOW_S", "machine_check"]

#: CPU sampling window of the quick check at the start of a bench, s.
QUICK_WINDOW_S = 0.25
#: CPU sampling window of ``tokcaliper doctor``, s.
FULL_WINDOW_S = 1.0


def machine_check(url: str | None = None, server_cmd: str | None = None, *, quick: bool = False,
                  server_pids: Collection[int] = (), unique_prompts: bool | None = None,
                  nvml: Any = None, window_s: float | None = None,
                  host_kwargs: dict[str, Any] | None = None) -> MachineCheck:
    """Gather the facts and judge them: host, then each GPU, then the server.

    Args:
        url: a running server's base URL (its ``/metrics`` and ``/props`` are read;
            on loopback, the process listening on its port is the server).
        server_cmd: the server's launch command (its flags are read; nothing starts).
        quick: the short check before a bench (:data:`QUICK_WINDOW_S`).
        server_pids: the server's pids when known (a managed server).
        unique_prompts: whether every run's prompts are salted (None: not known).
        nvml: NVML module (tests pass a fake).
        window_s: CPU sampling window, s (default by ``quick``).
        host_kwargs: extra arguments of :func:`~tokcaliper.doctor.facts.gather_host` (tests).

    Returns:
        :class:`MachineCheck` (its ``warnings`` are what would make runs differ).

    Raises:
        Nothing for a missing source.
    """
    from tokcaliper.doctor.checks import check_gpu, check_host, check_server
    from tokcaliper.doctor.facts import gather_gpus, gather_host, gather_server
    from tokcaliper.processes import listening_pid

    window = window_s if window_s is not None else (QUICK_WINDOW_S if quick else FULL_WINDOW_S)
    pids = list(server_pids)
    if not pids and url:
        pid = listening_pid(url)
        if pid is not None:
            pids = [pid]
    host = gather_host(window_s=window, server_pids=pids, **(host_kwargs or {}))
    server = gather_server(url, server_cmd, timeout_s=1.0 if quick else 3.0)
    findings: list[Finding] = check_host(host, threads=server.threads)
    gpus, reason = gather_gpus(nvml, server_pids={*pids, *host.server_pids})
    if reason is not None:
        findings.append(Finding(code="gpu", area="gpu", status="info", found=reason))
    for g in gpus:
        findings.extend(check_gpu(g))
    findings.extend(check_server(server, unique_prompts))
    return MachineCheck(quick=quick, window_s=host.window_s, findings=findings)
