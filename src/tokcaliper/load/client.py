"""The async streaming client: one chat completion, timestamped on arrival.

The per-chunk path does two appends and one ``perf_counter()`` call; parsing
is deferred to the end of the phase (:class:`tokcaliper.load.sse.RawStream`).
The client's own
overhead is part of every latency it reports, so this path stays lean
(well-known peers read TTFT 10–20 ms high at concurrency 64 from per-chunk
work; see benchmarks/).
"""

from __future__ import annotations

import asyncio
from time import perf_counter
from typing import Any

import aiohttp

from tokcaliper.load.sse import RawStream
from tokcaliper.model.run import LoadConfig


def chat_body(cfg: LoadConfig, messages: list[dict[str, str]]) -> dict[str, Any]:
    """The JSON body of one streamed chat completion for ``cfg``."""
    body: dict[str, Any] = {
        "model": cfg.model,
        "messages": messages,
        "max_tokens": cfg.max_tokens,
        "temperature": cfg.temperature,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if cfg.ignore_eos:
        body["ignore_eos"] = True  # llama.cpp, vLLM, SGLang extension
    return body


class ServerGone(Exception):
    """The server refused the connection: it is down, not merely slow."""


async def stream_chat(
    session: aiohttp.ClientSession,
    url: str,
    body: dict[str, Any],
    *,
    index: int,
    warmup: bool = False,
) -> RawStream:
    """Send one streamed chat completion and record its timing.

    Args:
        session: an open aiohttp session (its timeout applies).
        url: full ``/v1/chat/completions`` URL.
        body: request body (see :func:`chat_body`).
        index: request index within the run.
        warmup: mark the record as warm-up.

    Returns:
        The unparsed :class:`RawStream`; transport failures are in ``error``.

    Raises:
        ServerGone: the connection was refused (the server is not running).
    """
    raw = RawStream(index=index, warmup=warmup, issued=perf_counter())
    chunks, stamps = raw.chunks, raw.stamps
    try:
        async with session.post(url, json=body) as resp:
            if resp.status != 200:
                text = (await resp.text())[:200].replace("\n", " ")
                raw.error = f"HTTP {resp.status}: {text}"
            else:
                # Hot path: timestamp, keep the bytes, nothing else.
                async for data in resp.content.iter_any():
                    stamps.append(perf_counter())
                    chunks.append(data)
    except aiohttp.ClientConnectorError as e:
        raise ServerGone(str(e)) from None
    except asyncio.TimeoutError:
        raw.error = "request timed out"
    except aiohttp.ClientError as e:
        raw.error = f"{type(e).__name__}: {e}"
    raw.ended = perf_counter()
    return raw
