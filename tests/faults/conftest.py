"""Helpers for the fault tests: stored runs with hostile text, the CLI in-process."""

from __future__ import annotations

import pytest

from tokcaliper.load.summary import summarize
from tokcaliper.model.run import LoadConfig, RequestRecord, Run

#: The smallest ``[load]`` table of the fault tests' experiment files: 2 requests of
#: 4 tokens per run, one stream, no warm-up, no idle power, no telemetry.
TINY_LOAD = """
[load]
concurrency = 1
requests = 2
max_tokens = 4
warmup = 0
idle_seconds = 0
telemetry_interval_s = 0
"""


def make_run(*, arm: str = "default", model: str = "m", error: str | None = None,
             session: str = "s1", tokens: int = 20) -> Run:
    """A small stored-run fixture: one completed request (and one failed one if ``error``)."""
    recs = [RequestRecord(index=0, start_s=0.0, ttft_s=0.1, e2e_s=2.0, output_tokens=tokens,
                          token_count_source="usage", itl_s=[0.1, 0.2])]
    if error is not None:
        recs.append(RequestRecord(index=1, start_s=0.0, ttft_s=None, e2e_s=None, output_tokens=0,
                                  token_count_source="chunks", itl_s=[], error=error))
    return Run(session=session, arm=arm, started_at="2026-01-01T00:00:00.000Z",
               finished_at="2026-01-01T00:00:02.000Z", command_line="tokcaliper bench",
               tool_version="0.1.0", config=LoadConfig(base_url="http://127.0.0.1:1", model=model),
               metrics=summarize(recs), requests=recs)


@pytest.fixture
def cli(capsys):
    """Run ``tokcaliper ARGS`` in-process; return (exit code, stdout, stderr)."""
    from tokcaliper.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run
