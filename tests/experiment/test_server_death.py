"""A server that dies mid-run: a clear ServerError, and earlier runs are kept."""

from __future__ import annotations

import os
import signal

import pytest

from tokcaliper.errors import ServerError
from tokcaliper.experiment.runner import RepeatSpec, run_repetitions
from tokcaliper.load.prompts import builtin_prompts
from tokcaliper.model.run import LoadConfig
from tokcaliper.servers.managed import ManagedServer
from tokcaliper.store import Store

pytestmark = pytest.mark.server


def test_server_killed_during_second_run(tmp_path, local_llama):
    db = tmp_path / "runs.db"
    with ManagedServer(local_llama.command_template()) as server, Store(db) as store:
        cfg = LoadConfig(base_url=server.base_url, concurrency=2, requests=6, warmup=1, max_tokens=16)
        spec = RepeatSpec(load=cfg, prompts=builtin_prompts(), repeat=3, server=server)
        done: list[int] = []

        def on_request(_index: int) -> None:
            done.append(1)
            if len(done) == 6 + 2:  # third measured request of run 2
                os.killpg(server.proc.pid, signal.SIGKILL)

        with pytest.raises(ServerError, match="server exited with code -9|stopped answering"):
            run_repetitions(spec, store, on_request=on_request)
        rows = store.list_runs()
    # Run 1 finished before the crash and is stored; the broken run is not.
    assert len(rows) == 1 and rows[0].completed == 6 and rows[0].failed == 0
