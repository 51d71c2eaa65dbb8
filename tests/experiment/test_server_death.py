"""A server that dies mid-run: a clear ServerError, earlier runs kept, the broken run stored as failed."""

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

        with pytest.raises(ServerError, match="server exited with code -9|stopped answering") as err:
            run_repetitions(spec, store, on_request=on_request)
        assert "run 2/3 stored as failed" in str(err.value)
        rows = store.list_runs()
        runs = [store.get_run(r.id) for r in rows]
    # Run 1 finished before the crash and is stored intact; the broken run is
    # stored as failed, with the server's last log lines; run 3 never ran.
    assert len(rows) == 2 and rows[0].completed == 6 and rows[0].failed == 0
    assert runs[0].valid and not runs[1].valid
    assert runs[1].invalid_reason.startswith("server died during the run: ")
    assert "server's last log lines: " in runs[1].invalid_reason
    assert runs[1].metrics.completed == 2
