"""A controlled OpenAI-compatible SSE server with exactly known delays.

Only for what a real server cannot give: exact timing, to measure the
client's own accuracy and overhead, and injected faults. Everything else is
tested against the real llama-server.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass

from aiohttp import web


@dataclass
class FakeTiming:
    """Server-side schedule: wait ``ttft_s``, then one token every ``itl_s``."""

    ttft_s: float = 0.05
    itl_s: float = 0.01
    tokens: int = 16
    fail_every: int = 0  # every n-th request answers HTTP 500 (0 = never)


def _event(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def make_app(timing: FakeTiming) -> web.Application:
    counter = {"n": 0}

    async def chat(request: web.Request) -> web.StreamResponse:
        counter["n"] += 1
        if timing.fail_every and counter["n"] % timing.fail_every == 0:
            return web.Response(status=500, text="injected fault")
        body = await request.json()
        n = min(int(body.get("max_tokens", timing.tokens)), timing.tokens)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        # Sleep to absolute deadlines so the schedule does not drift.
        for i in range(n):
            await asyncio.sleep(max(0.0, t0 + timing.ttft_s + i * timing.itl_s - loop.time()))
            await resp.write(_event({"choices": [{"index": 0, "delta": {"content": f"t{i} "}}]}))
        await resp.write(_event({"choices": [], "usage": {"completion_tokens": n, "prompt_tokens": 7}}))
        await resp.write(b"data: [DONE]\n\n")
        return resp

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/health", health)
    return app


class FakeServer:
    """Run the fake app on a loopback port in a background thread."""

    def __init__(self, timing: FakeTiming) -> None:
        self.timing = timing
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        runner = web.AppRunner(make_app(self.timing))
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._runner = runner
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def main() -> None:
    """``python tests/load/fake_server.py --port N``: serve until killed (for managed-server tests)."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ttft", type=float, default=0.01)
    ap.add_argument("--itl", type=float, default=0.002)
    ap.add_argument("--tokens", type=int, default=16)
    args = ap.parse_args()
    timing = FakeTiming(ttft_s=args.ttft, itl_s=args.itl, tokens=args.tokens)
    web.run_app(make_app(timing), host=args.host, port=args.port, print=None)


if __name__ == "__main__":
    main()
