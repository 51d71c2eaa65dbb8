"""A controlled OpenAI-compatible SSE server with exactly known delays and injected faults.

Only for what a real server cannot give: exact timing, to measure the
client's own accuracy and overhead, and injected faults. Everything else is
tested against the real llama-server.

Faults (``FakeTiming.fault``, applied to every ``fault_every``-th request):

* ``http_429`` / ``http_500`` / ``http_503`` — that status, with
  ``Retry-After: retry_after`` when set;
* ``close_mid_stream`` — two tokens, then the connection is closed;
* ``reset`` — two tokens, then a TCP reset (SO_LINGER 0);
* ``no_done`` — tokens and a clean end of the body without ``data: [DONE]``;
* ``no_headers`` — reads the request, answers nothing for ``stall_s``;
* ``stall_first`` / ``stall_between`` — ``stall_s`` of silence before the
  first token / after the first token;
* ``empty`` — a clean stream with no generated text (``completion_tokens`` 0);
* malformed SSE: ``garbage`` (not JSON), ``done_only``, ``choices_not_list``,
  ``choices_not_objects``, ``delta_string``, ``content_number``,
  ``usage_number``, ``usage_negative``, ``usage_true``, ``usage_huge``,
  ``usage_float``, ``timings_list``, ``deep_json``;
* streams that contradict their own ``usage`` (``n`` = the request's tokens):
  ``one_chunk`` — all the text in one chunk, ``usage.completion_tokens`` n;
  ``chunks_over_usage`` — n text chunks, ``usage.completion_tokens`` 1;
  ``empty_then_one`` — n − 1 chunks with empty content, then one with all
  the text, ``usage.completion_tokens`` n;
* ``huge_event`` — one text chunk, then a ``data:`` line of ``huge_event_bytes``;
* ``exit`` — the process exits (``os._exit(1)``) after sending one token
  (only in a process of its own: ``python tests/load/fake_server.py --fault exit``);
* ``deep_models`` — ``/v1/models`` answers JSON nested 200 000 deep.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web


@dataclass
class FakeTiming:
    """Server-side schedule: wait ``ttft_s``, then one token every ``itl_s``."""

    ttft_s: float = 0.05
    itl_s: float = 0.01
    tokens: int = 16
    fail_every: int = 0  # every n-th request answers HTTP 500 (0 = never)
    fault: str = ""  # see the module docstring ("" = none)
    fault_every: int = 1  # the fault hits every n-th request (1 = all)
    retry_after: str | None = None  # Retry-After header of http_429/503
    stall_s: float = 5.0  # silence of stall_first / stall_between
    huge_event_bytes: int = 80 * 2**20  # length of huge_event's data line
    slots: int = 0  # serve at most this many requests at once, the rest queue (0 = no limit):
    # with a fixed service time S = ttft_s + (tokens − 1) × itl_s the capacity is slots ÷ S req/s
    final: Callable[[int], dict] | None = None  # n tokens → extra top-level fields of the final
    # (usage) chunk, e.g. an SGLang-style meta_info


def _event(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def make_app(timing: FakeTiming) -> web.Application:
    counter = {"n": 0}

    def content(i: int) -> bytes:
        return _event({"choices": [{"index": 0, "delta": {"content": f"t{i} "}}]})

    bad_final = {
        "garbage": b"data: {this is not json\n\n",
        "choices_not_list": _event({"choices": "abc"}),
        "choices_not_objects": _event({"choices": [1, 2]}),
        "delta_string": _event({"choices": [{"index": 0, "delta": "hello"}]}),
        "content_number": _event({"choices": [{"index": 0, "delta": {"content": 5}}]}),
        "usage_number": _event({"choices": [], "usage": 7}),
        "usage_negative": _event({"choices": [], "usage": {"completion_tokens": -4641}}),
        "usage_true": _event({"choices": [], "usage": {"completion_tokens": True}}),
        "usage_huge": _event({"choices": [], "usage": {"completion_tokens": 10**30}}),
        "usage_float": _event({"choices": [], "usage": {"completion_tokens": 3.5}}),
        "timings_list": _event({"choices": [], "timings": [1, 2, 3]}),
        "deep_json": b"data: " + b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"\n\n",
    }

    slots = asyncio.Semaphore(timing.slots) if timing.slots else None

    async def chat(request: web.Request) -> web.StreamResponse:
        if slots is None:
            return await serve(request)
        async with slots:  # a request waits for a free slot; its service starts then
            return await serve(request)

    async def serve(request: web.Request) -> web.StreamResponse:
        counter["n"] += 1
        if timing.fail_every and counter["n"] % timing.fail_every == 0:
            return web.Response(status=500, text="injected fault")
        body = await request.json()
        fault = timing.fault if timing.fault and counter["n"] % timing.fault_every == 0 else ""
        if fault.startswith("http_"):
            headers = {"Retry-After": timing.retry_after} if timing.retry_after else None
            return web.Response(status=int(fault[5:]), text=f"injected {fault[5:]}: server busy",
                                headers=headers)
        if fault == "no_headers":
            await asyncio.sleep(timing.stall_s)
            return web.Response(status=500, text="gave up")
        n = min(int(body.get("max_tokens", timing.tokens)), timing.tokens)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        if fault == "done_only":
            await resp.write(b"data: [DONE]\n\n")
            return resp
        if fault == "empty":
            await resp.write(_event({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}))
            await resp.write(_event({"choices": [], "usage": {"completion_tokens": 0, "prompt_tokens": 7}}))
            await resp.write(b"data: [DONE]\n\n")
            return resp
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        if fault in ("one_chunk", "chunks_over_usage", "empty_then_one"):
            await asyncio.sleep(timing.ttft_s)
            if fault == "chunks_over_usage":
                for i in range(n):
                    await resp.write(content(i))
                    await asyncio.sleep(timing.itl_s)
            else:
                for _ in range(n - 1 if fault == "empty_then_one" else 0):
                    await resp.write(_event({"choices": [{"index": 0, "delta": {"content": ""}}]}))
                    await asyncio.sleep(timing.itl_s)
                text = "".join(f"t{i} " for i in range(n))
                await resp.write(_event({"choices": [{"index": 0, "delta": {"content": text}}]}))
                await asyncio.sleep(timing.itl_s)  # the tail: usage and [DONE] come later
            used = 1 if fault == "chunks_over_usage" else n
            await resp.write(_event({"choices": [], "usage": {"completion_tokens": used, "prompt_tokens": 7}}))
            await resp.write(b"data: [DONE]\n\n")
            return resp
        if fault == "huge_event":
            await asyncio.sleep(timing.ttft_s)
            await resp.write(content(0))
            line = b"data: " + b"x" * timing.huge_event_bytes
            for k in range(0, len(line), 2**20):
                await resp.write(line[k:k + 2**20])
            await resp.write(b"\n\n" + content(1) + b"data: [DONE]\n\n")
            return resp
        if fault == "stall_first":
            t0 += timing.stall_s
        # Sleep to absolute deadlines so the schedule does not drift.
        for i in range(n):
            if fault == "stall_between" and i == 1:
                t0 += timing.stall_s
            await asyncio.sleep(max(0.0, t0 + timing.ttft_s + i * timing.itl_s - loop.time()))
            await resp.write(content(i))
            if fault == "exit":
                print(f"fake_server: injected exit in request {counter['n']}", file=sys.stderr, flush=True)
                os._exit(1)
            if fault in ("close_mid_stream", "reset") and i == 1:
                transport = request.transport
                assert transport is not None
                if fault == "reset":
                    sock = transport.get_extra_info("socket")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    transport.abort()
                else:
                    transport.close()
                return resp
        if fault in bad_final:
            await resp.write(bad_final[fault])
        if not fault.startswith("usage_"):  # a bad usage is the stream's last word on the count
            await resp.write(_event({"choices": [], "usage": {"completion_tokens": n, "prompt_tokens": 7},
                                     **(timing.final(n) if timing.final else {})}))
        if fault != "no_done":
            await resp.write(b"data: [DONE]\n\n")
        return resp

    async def models(_: web.Request) -> web.Response:
        if timing.fault == "deep_models":
            return web.Response(body=b"[" * 200_000 + b"]" * 200_000, content_type="application/json")
        return web.json_response({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
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
    ap.add_argument("--fault", default="", help="a fault of the module docstring")
    ap.add_argument("--fault-every", type=int, default=1)
    ap.add_argument("--exit-after", type=int, default=0,
                    help="exit (code 1) mid-stream in the N-th request (0 = never)")
    args = ap.parse_args()
    timing = FakeTiming(ttft_s=args.ttft, itl_s=args.itl, tokens=args.tokens, fault=args.fault,
                        fault_every=args.fault_every)
    if args.exit_after:
        timing.fault, timing.fault_every = "exit", args.exit_after
    print(f"fake_server: listening on {args.host}:{args.port}", file=sys.stderr, flush=True)
    web.run_app(make_app(timing), host=args.host, port=args.port, print=None)


if __name__ == "__main__":
    main()
