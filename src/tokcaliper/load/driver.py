"""One run: warm-up, then a closed loop of C workers for N requests or T seconds."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from time import perf_counter

import aiohttp

from tokcaliper.errors import ServerError
from tokcaliper.load.client import ServerGone, chat_body, stream_chat
from tokcaliper.load.prompts import Messages
from tokcaliper.load.sse import RawStream
from tokcaliper.model.run import LoadConfig, RequestRecord

#: Called after each request ends, with the request's index (progress bars).
OnRequest = Callable[[int], None]

#: Parse the kept streams early once they hold this many bytes (a stall that
#: bounds memory; at ~300 B per token it takes ~200k tokens in one phase).
PARSE_BACKLOG_BYTES = 64 * 2**20


def salted(messages: Messages, tag: str) -> Messages:
    """``messages`` with ``tag`` put before the last user message's text.

    A unique tag per request stops a server's prompt cache from serving a
    repetition's prompts from an earlier repetition, which would make run 1
    (cold cache) systematically slower than the rest. Earlier turns stay
    untouched, so a conversation's shared history is still cacheable, as in
    real chat traffic.
    """
    out = [dict(m) for m in messages]
    for m in reversed(out):
        if m.get("role") == "user":
            m["content"] = tag + m["content"]
            break
    return out


async def _closed_loop(
    session: aiohttp.ClientSession,
    cfg: LoadConfig,
    prompts: list[Messages],
    *,
    count: int | None,
    duration_s: float | None,
    warmup: bool,
    index_offset: int,
    on_request: OnRequest | None,
) -> list[RequestRecord]:
    url = cfg.base_url.rstrip("/") + "/v1/chat/completions"
    records: list[RequestRecord] = []
    backlog: list[RawStream] = []
    backlog_bytes = 0
    next_index = 0
    run_start = perf_counter()
    deadline = run_start + duration_s if duration_s else None
    workers = min(cfg.concurrency, count) if count is not None else cfg.concurrency

    async def worker() -> None:
        nonlocal next_index, backlog_bytes
        while True:
            if count is not None and next_index >= count:
                return
            if deadline is not None and perf_counter() >= deadline:
                return
            i = next_index
            next_index += 1
            messages = prompts[(index_offset + i) % len(prompts)]
            if cfg.prompt_salt is not None:
                messages = salted(messages, f"[{cfg.prompt_salt}.{index_offset + i}] ")
            body = chat_body(cfg, messages)
            raw = await stream_chat(session, url, body, index=index_offset + i, warmup=warmup)
            # Parsing waits for the end of the phase: done here it would
            # delay every other stream's timestamps (measured in
            # benchmarks/client_overhead.py).
            backlog.append(raw)
            backlog_bytes += raw.nbytes
            if backlog_bytes > PARSE_BACKLOG_BYTES:
                records.extend(r.parse(run_start) for r in backlog)
                backlog.clear()
                backlog_bytes = 0
            if on_request is not None:
                on_request(raw.index)

    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    try:
        await asyncio.gather(*tasks)
    except ServerGone as e:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise ServerError(
            f"server at {cfg.base_url} stopped answering after {len(records) + len(backlog)} "
            f"requests: {e}"
        ) from None
    records.extend(r.parse(run_start) for r in backlog)
    records.sort(key=lambda r: r.index)
    return records


async def run_phase_async(
    cfg: LoadConfig,
    prompts: list[Messages],
    *,
    warmup: bool = False,
    on_request: OnRequest | None = None,
) -> list[RequestRecord]:
    """Run one phase: ``cfg.warmup`` warm-up requests, or the measured loop.

    Warm-up requests use prompt indices ``0 … warmup−1`` and measured ones
    continue from there, so no measured request reuses a warm-up prompt.

    Returns:
        The phase's records in issue order; ``start_s`` is relative to the
        phase's start.

    Raises:
        ServerError: the server refused connections (it is down).
    """
    timeout = aiohttp.ClientTimeout(total=cfg.request_timeout_s)
    # A fresh connection per request: llama-server closes the connection after
    # each streamed response without saying so, and a pooled connection that
    # is already closed fails the next request ("Can not write request body").
    # The loopback connect this adds (~0.1 ms) is the same for every request.
    connector = aiohttp.TCPConnector(limit=cfg.concurrency + 1, force_close=True)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        if warmup:
            return await _closed_loop(
                session, cfg, prompts, count=cfg.warmup, duration_s=None,
                warmup=True, index_offset=0, on_request=on_request,
            )
        return await _closed_loop(
            session, cfg, prompts, count=cfg.requests, duration_s=cfg.duration_s,
            warmup=False, index_offset=cfg.warmup, on_request=on_request,
        )


def run_phase(
    cfg: LoadConfig,
    prompts: list[Messages],
    *,
    warmup: bool = False,
    on_request: OnRequest | None = None,
) -> list[RequestRecord]:
    """Synchronous wrapper of :func:`run_phase_async` (its own event loop)."""
    if warmup and cfg.warmup == 0:
        return []
    runner = asyncio.Runner()
    try:
        with _sigint_deferred():
            runner.get_loop()  # builds the event loop
        return runner.run(run_phase_async(cfg, prompts, warmup=warmup, on_request=on_request))
    finally:
        runner.close()


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold Ctrl-C until the block ends, then raise it.

    A KeyboardInterrupt inside ``new_event_loop()`` leaves a half-built loop
    whose finalizer prints a traceback; the interrupt is delivered right
    after instead. Outside the main thread signals cannot be handled, so
    nothing changes there.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt
