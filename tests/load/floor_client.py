"""The floor: a minimal raw-asyncio streaming client with keep-alive (no library, no parsing).

What a load client's error cannot go below on a machine: C workers, one kept
TCP connection each, write the request, read the chunked SSE response with
``asyncio.StreamReader`` and take ``perf_counter()`` when a chunk carrying a
token arrives. It knows only the reference server (tests/load/reference_server.py)
and is the yardstick of tests/load/test_accuracy.py and
benchmarks/client_accuracy.py.
"""

from __future__ import annotations

import asyncio
import json
from time import perf_counter


async def floor_run(host: str, port: int, *, concurrency: int, requests: int, max_tokens: int,
                    tag: str, path: str = "/v1/chat/completions") -> list[dict]:
    """Closed loop of ``concurrency`` workers for ``requests`` streamed chat completions.

    Returns one dict per request: ``tag`` (``f"{tag}.{i}"``, also sent in the
    prompt as ``[tag.i] ``), ``sent`` and the token arrival ``stamps``
    (perf_counter), ``end``.
    """
    out: list[dict] = []
    nxt = 0

    async def worker() -> None:
        nonlocal nxt
        reader, writer = await asyncio.open_connection(host, port)
        while nxt < requests:
            i, nxt = nxt, nxt + 1
            body = json.dumps({"model": "ref", "stream": True, "max_tokens": max_tokens, "messages": [
                {"role": "user", "content": f"[{tag}.{i}] hello"}]}).encode()
            req = (f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body
            rec = {"tag": f"{tag}.{i}", "sent": perf_counter(), "stamps": []}
            writer.write(req)
            await reader.readuntil(b"\r\n\r\n")
            while True:
                size = int((await reader.readline()).strip(), 16)
                if size == 0:
                    await reader.readline()
                    break
                data = await reader.readexactly(size + 2)
                if b'"content"' in data:
                    rec["stamps"].append(perf_counter())
            rec["end"] = perf_counter()
            out.append(rec)
        writer.close()

    await asyncio.gather(*(worker() for _ in range(min(concurrency, requests))))
    return out
