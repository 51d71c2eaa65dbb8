#!/usr/bin/env python3
"""The ``openai`` SDK as a load client: what a hand-written benchmark gets (a peer of client_accuracy.py).

Runs in the peers' virtual environment (it needs only ``openai``): C workers
in a closed loop, each request a streamed chat completion iterated the
documented way (``async for chunk in stream``), TTFT from just before
``create()`` to the first chunk with content, ITL between content chunks.
Each prompt carries ``[tag.i] `` so the reference server's log matches it.
Prints one JSON line: ``ttft`` (s, per request), ``itl_mean`` (s),
``tok_s`` (content chunks ÷ (last end − first send)), ``failed``.

    python benchmarks/openai_sdk_client.py --port P --concurrency C --requests N --tokens T --tag X
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from time import perf_counter


async def run(port: int, concurrency: int, requests: int, tokens: int, tag: str) -> dict:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0, timeout=120)
    recs: list[dict] = []
    nxt = 0

    async def one(i: int) -> dict:
        times: list[float] = []
        sent = perf_counter()
        error = None
        try:
            stream = await client.chat.completions.create(
                model="ref", messages=[{"role": "user", "content": f"[{tag}.{i}] hello"}], max_tokens=tokens,
                stream=True, stream_options={"include_usage": True})
            async for chunk in stream:
                t = perf_counter()
                if chunk.choices and chunk.choices[0].delta.content:
                    times.append(t)
        except Exception as e:  # noqa: BLE001 - counted as a failure, as the other tools do
            error = f"{type(e).__name__}: {e}"
        return {"sent": sent, "end": perf_counter(), "times": times, "error": error}

    async def worker() -> None:
        nonlocal nxt
        while nxt < requests:
            i, nxt = nxt, nxt + 1
            recs.append(await one(i))

    try:
        await asyncio.gather(*(worker() for _ in range(min(concurrency, requests))))
    finally:
        await client.close()
    ok = [r for r in recs if r["error"] is None and r["times"]]
    gaps = [b - a for r in ok for a, b in zip(r["times"], r["times"][1:])]
    span = max(r["end"] for r in ok) - min(r["sent"] for r in ok)
    return {"ttft": [r["times"][0] - r["sent"] for r in ok], "itl_mean": statistics.mean(gaps),
            "tok_s": sum(len(r["times"]) for r in ok) / span, "failed": len(recs) - len(ok)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--concurrency", type=int, required=True)
    ap.add_argument("--requests", type=int, required=True)
    ap.add_argument("--tokens", type=int, required=True)
    ap.add_argument("--tag", required=True)
    a = ap.parse_args()
    print(json.dumps(asyncio.run(run(a.port, a.concurrency, a.requests, a.tokens, a.tag))))


if __name__ == "__main__":
    main()
