"""Trace replay: a Mooncake-format JSONL trace as an open loop at the trace's own times.

A trace line is ``{"timestamp": MS, "input_length": N, "output_length": M,
"hash_ids": [h0, h1, ...]}`` (the Mooncake FAST'25 traces,
github.com/kvcache-ai/Mooncake, ``FAST25-release/traces``): ``timestamp`` is
milliseconds from the trace's start, the lengths are tokens, and ``hash_ids``
name the prompt's 512-token blocks — two requests whose first k ids are equal
share their first k blocks of prompt (the prefix a KV cache can reuse).

Replay (``--trace FILE --trace-speedup X``):

* **When.** Request k is scheduled at ``(timestamp_k − timestamp_0) / 1000 / X``
  seconds after the run starts and sent by the driver's open loop
  (:mod:`tokcaliper.load.driver`), so its dispatch delay against that schedule
  is measured as for ``--rate``.
* **What.** One deterministic text block per hash id: words from
  :data:`tokcaliper.load.synthetic.WORDS` drawn by a generator seeded by the
  id (and the run's prompt salt, so no run is served from a cache an earlier
  run filled), each word with its leading space, sized by the server's
  ``/tokenize`` to exactly the block's tokens. A prompt is the concatenation of
  its blocks, so requests sharing leading ids share exactly those blocks'
  bytes and differ after them. The last block carries the rest of the
  request's length (less the chat template's tokens, from one probe as in
  :mod:`tokcaliper.load.synthetic`) and is a prefix of its id's full block;
  a request is never asked shorter than its full blocks + the template + 1
  token (which only tiny blocks under a long chat template reach).
* **Scaling.** The block size B is 512 tokens when every request of the
  window (input + output, template included) fits the server's context;
  otherwise the largest B that makes the longest one fit
  (``--trace-block-tokens`` sets it). Both lengths are scaled by B / 512
  (rounded, at least 1); B, the scale and the context read from the server are
  stored with the run's config and printed.
* **Output lengths** are held with ``max_tokens`` = ``min_tokens`` = the scaled
  length and ``ignore_eos`` (as :mod:`tokcaliper.load.lengths` does).

**A server without /tokenize:** a block is B words (most of the filler words
are one token each), the template is not subtracted, and the run's lengths are
marked approximate (method ``words``). **A server whose context cannot be
read** (llama.cpp ``/props``, vLLM ``/v1/models`` ``max_model_len``): B = 512
unless ``--trace-block-tokens`` is given, and the run says so.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np
from pydantic import BaseModel

from tokcaliper.errors import InputError
from tokcaliper.fileio import JSONParseError, jsonl_lines, loads_json, read_text
from tokcaliper.load.prompts import Messages
from tokcaliper.load.synthetic import WORDS, Planned, _Server, fit_text
from tokcaliper.model.run import LoadConfig, Run

__all__ = ["MOONCAKE_BLOCK_TOKENS", "ReplayFigures", "TraceRecord", "TraceWorkload", "block_tokens_for",
           "load_trace", "parse_trace", "replay_figures", "scaled", "server_context", "trace_offsets"]

#: Tokens per hash block in the Mooncake traces.
MOONCAKE_BLOCK_TOKENS = 512

#: Largest trace file, bytes.
MAX_TRACE_BYTES = 512 * 2**20

#: Tokens kept free of the context beside the template (rounding of the scaled lengths).
CONTEXT_MARGIN_TOKENS = 8

_KEYS = ("timestamp", "input_length", "output_length", "hash_ids")


@dataclass(frozen=True)
class TraceRecord:
    """One request of a trace.

    Attributes:
        timestamp_ms: arrival, ms from the trace's start.
        input_length / output_length: tokens (as in the trace, before scaling).
        hash_ids: the prompt's block ids, in order.
        line: its line in the file (1-based).
    """

    timestamp_ms: float
    input_length: int
    output_length: int
    hash_ids: tuple[int, ...]
    line: int


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def parse_trace(text: str, origin: str) -> list[TraceRecord]:
    """The records of a Mooncake JSONL text (blank lines skipped).

    Raises:
        InputError: one line ``origin:LINE: …`` for bad JSON, a missing or
            ill-typed key, a length below 1, a negative or non-finite
            timestamp, a timestamp earlier than the line before, or an empty
            file.
    """
    out: list[TraceRecord] = []
    last = -math.inf
    for lineno, line in enumerate(jsonl_lines(text), start=1):
        if not line.strip():
            continue
        where = f"{origin}:{lineno}"
        try:
            obj = loads_json(line, strict=True)
        except JSONParseError as e:
            raise InputError(f"{where}: not valid JSON ({e})") from None
        if not isinstance(obj, dict) or any(k not in obj for k in _KEYS):
            raise InputError(f"{where}: a Mooncake trace line needs {', '.join(_KEYS)}")
        ts, n_in, n_out, ids = (obj[k] for k in _KEYS)
        if not (_int(ts) or isinstance(ts, float)) or not math.isfinite(ts) or ts < 0:
            raise InputError(f"{where}: timestamp must be a number of ms ≥ 0, got {ts!r}")
        if ts < last:
            raise InputError(f"{where}: timestamp {ts!r} is earlier than the line before's; "
                             "a trace is replayed in file order, sorted by time")
        for key, v in (("input_length", n_in), ("output_length", n_out)):
            if not _int(v) or v < 1:
                raise InputError(f"{where}: {key} must be an integer ≥ 1, got {v!r}")
        if not isinstance(ids, list) or not ids or not all(_int(h) and h >= 0 for h in ids):
            raise InputError(f"{where}: hash_ids must be a non-empty list of integers ≥ 0")
        last = ts
        out.append(TraceRecord(float(ts), n_in, n_out, tuple(ids), lineno))
    if not out:
        raise InputError(f"{origin}: the trace holds no request")
    return out


_CACHE: dict[tuple[str, int, int], list[TraceRecord]] = {}


def load_trace(path: str | Path) -> list[TraceRecord]:
    """:func:`parse_trace` of the file ``path`` (read by :mod:`tokcaliper.fileio`; kept per file version).

    Raises:
        InputError: unreadable file or a bad line.
    """
    p = Path(path)
    try:
        st = p.stat()
        key = (str(p.resolve()), st.st_mtime_ns, st.st_size)
    except OSError:
        key = None
    if key is not None and key in _CACHE:
        return _CACHE[key]
    records = parse_trace(read_text(p, MAX_TRACE_BYTES, what=f"trace {p}"), str(p))
    if key is not None:
        _CACHE.clear()
        _CACHE[key] = records
    return records


def trace_offsets(records: list[TraceRecord], speedup: float) -> np.ndarray:
    """Scheduled send times, seconds from the run's start: ``(t_k − t_0) / 1000 / speedup``."""
    ts = np.array([r.timestamp_ms for r in records], dtype=float)
    return (ts - ts[0]) / 1000.0 / speedup


def scaled(tokens: int, block_tokens: int) -> int:
    """``tokens`` scaled by ``block_tokens / 512``, rounded, at least 1."""
    return max(1, round(tokens * block_tokens / MOONCAKE_BLOCK_TOKENS))


def block_tokens_for(records: list[TraceRecord], context_tokens: int | None, template_tokens: float) -> int:
    """The block size that makes every request fit ``context_tokens`` (512 when all fit; unknown context: 512).

    The longest request needs ``(input + output) · B/512 + template + margin``
    tokens; B is the largest integer ≤ 512 for which that is ≤ the context.

    Raises:
        InputError: not even a 1-token block fits.
    """
    if context_tokens is None:
        return MOONCAKE_BLOCK_TOKENS
    need = max(r.input_length + r.output_length for r in records)
    room = context_tokens - math.ceil(template_tokens) - CONTEXT_MARGIN_TOKENS
    b = min(MOONCAKE_BLOCK_TOKENS, math.floor(room * MOONCAKE_BLOCK_TOKENS / need))
    if b < 1:
        raise InputError(f"the trace's longest request ({need} tokens) does not fit a context of "
                         f"{context_tokens} tokens even with 1-token blocks")
    return b


def server_context(base_url: str, timeout_s: float = 10.0) -> int | None:
    """Tokens of context one request may use: llama.cpp ``/props``
    (``default_generation_settings.n_ctx``, per slot) or vLLM/SGLang ``/v1/models``
    (``max_model_len``); None when neither says."""
    try:
        with httpx.Client(base_url=base_url, timeout=timeout_s) as http:
            r = http.get("/props")
            if r.status_code == 200:
                obj = r.json()
                gen = obj.get("default_generation_settings") if isinstance(obj, dict) else None
                n = (gen or {}).get("n_ctx") if isinstance(gen, dict) else None
                if _int(n) and n > 0:
                    return n
            r = http.get("/v1/models")
            if r.status_code == 200:
                for m in (r.json() or {}).get("data") or []:
                    n = m.get("max_model_len") if isinstance(m, dict) else None
                    if _int(n) and n > 0:
                        return n
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return None


def _pool(salt: str, hash_id: int, n: int) -> list[str]:
    key = int.from_bytes(hashlib.sha256(f"{salt}:{hash_id}".encode()).digest()[:8], "big")
    return [WORDS[i] for i in np.random.default_rng(key).integers(0, len(WORDS), size=max(n, 0))]


def _render(words: list[str]) -> str:
    return "".join(" " + w for w in words)


class TraceWorkload:
    """Per-request prompts, output budgets and send times of ``cfg.trace``.

    The workload interface of :class:`~tokcaliper.load.synthetic.SyntheticWorkload`
    (:meth:`prepare` before the clock, :meth:`plan`, :meth:`close`).
    Measured request i is the trace's record i (the first ``cfg.requests``);
    warm-up requests (indices below ``cfg.warmup``) send the prompt set's
    messages unchanged, so they fill no block of the trace.

    Attributes:
        records: the replayed records. method: ``"tokenize"`` or ``"words"``.
        template_tokens: the chat template's tokens (probe; 0 with ``words``).
        block_tokens: B, tokens per block. context_tokens: the server's, None if unknown.
    """

    def __init__(self, cfg: LoadConfig) -> None:
        self.cfg = cfg
        records = load_trace(cfg.trace)  # type: ignore[arg-type]
        self.records = records[: cfg.requests] if cfg.requests is not None else records
        self.method: str | None = None
        self.template_tokens: float | None = None
        self.block_tokens: int = cfg.trace_block_tokens or MOONCAKE_BLOCK_TOKENS
        self.context_tokens: int | None = cfg.trace_context_tokens
        self._server: _Server | None = None
        self._blocks: dict[tuple[int, int], str] = {}

    @property
    def offsets(self) -> list[float]:
        """Scheduled send times of the measured requests, s from the run's start."""
        return trace_offsets(self.records, self.cfg.trace_speedup).tolist()

    def prepare(self) -> None:
        """Find the tokenizer, measure the template, read the context and fix B (HTTP, before the clock)."""
        srv = _Server(self.cfg)
        if srv.find_tokenizer():
            probe = _render(_pool("probe", 0, 24))
            self.template_tokens = float(srv.prompt_tokens(probe) - (srv.count(probe) or 0))
            self.method = "tokenize"
            self._server = srv
        else:
            srv.close()
            self.template_tokens, self.method = 0.0, "words"
        if self.context_tokens is None:
            self.context_tokens = server_context(self.cfg.base_url)
        if self.cfg.trace_block_tokens is None:
            self.block_tokens = block_tokens_for(self.records, self.context_tokens, self.template_tokens)

    def config_update(self) -> dict[str, Any]:
        """The fields :meth:`prepare` resolved, to store with the run's config."""
        return {"trace_block_tokens": self.block_tokens, "trace_context_tokens": self.context_tokens}

    def close(self) -> None:
        """Release the HTTP client."""
        if self._server is not None:
            self._server.close()
            self._server = None

    def block(self, hash_id: int, tokens: int) -> str:
        """The text of block ``hash_id`` cut to ``tokens`` tokens (a prefix of its full text)."""
        key = (hash_id, tokens)
        if key in self._blocks:
            return self._blocks[key]
        salt = self.cfg.prompt_salt or ""
        if self.method == "tokenize" and self._server is None:  # closed after an earlier phase
            self._server = _Server(self.cfg)
            self._server.find_tokenizer()
        srv = self._server
        if srv is None:
            text = _render(_pool(salt, hash_id, tokens))
        else:
            full = max(self.block_tokens, tokens)
            text = fit_text(srv.count, lambda n: _pool(salt, hash_id, max(n, 2 * full + 16)),
                            _render, tokens, tokens)
        self._blocks[key] = text
        return text

    def prompt(self, k: int) -> tuple[str, int, int]:
        """Measured request ``k``'s text and its scaled input and output lengths, tokens."""
        rec = self.records[k]
        b = self.block_tokens
        ids = rec.hash_ids
        head = b * (len(ids) - 1)
        template = int(self.template_tokens or 0)
        # Never shorter than its full blocks + the template + 1 token (tiny blocks under a long template).
        n_in = max(scaled(rec.input_length, b), head + template + 1)
        n_out = scaled(rec.output_length, b)
        rest = n_in - template - head
        text = "".join(self.block(h, b) for h in ids[:-1]) + self.block(ids[-1], rest)
        return text, n_in, n_out

    def plan(self, index: int, tag: str, messages: Messages) -> Planned:
        """Request ``index``'s messages and lengths (``tag`` unused: the salt is in the blocks)."""
        if index < self.cfg.warmup:
            return Planned(messages=messages, max_tokens=self.cfg.max_tokens, input_tokens=None,
                           output_tokens=None)
        text, n_in, n_out = self.prompt(index - self.cfg.warmup)
        return Planned(messages=[{"role": "user", "content": text}], max_tokens=n_out,
                       input_tokens=n_in, output_tokens=n_out)


class ReplayFigures(BaseModel):
    """One replayed run's trace figures (:func:`replay_figures`).

    Attributes:
        run_id: the run. block_tokens: tokens per trace block it used (None: not a replay);
            scale: block_tokens ÷ the trace's 512. context_tokens: the server's context per
            slot the blocks were scaled to fit (None: unknown). speedup: the trace's times ÷ this.
        requests: measured requests (completed + failed).
        dispatch_p99_s / dispatch_n: p99 of the send-after-schedule delay, s, over n requests.
        cached_tokens / evaluated_tokens: Σ llama.cpp ``timings.cache_n`` / ``prompt_n`` over the
            measured completed requests (None when no response carried them).
        cache_share: cached ÷ (cached + evaluated), 0–1 (None likewise).
    """

    run_id: int | None
    block_tokens: int | None
    scale: float | None
    context_tokens: int | None
    speedup: float
    requests: int
    dispatch_p99_s: float | None
    dispatch_n: int
    cached_tokens: int | None = None
    evaluated_tokens: int | None = None
    cache_share: float | None = None


def replay_figures(runs: Sequence[Run]) -> list[ReplayFigures]:
    """Per run of a replay: block size, scale, context, speed-up, dispatch delay and prefix-cache use.

    ``cache_share`` is Σ ``timings.cache_n`` ÷ Σ (``cache_n`` + ``prompt_n``)
    over the run's measured, completed requests (llama.cpp's per-response
    timings: prompt tokens taken from the cache vs evaluated); None when no
    response carried them. Pure.

    Args:
        runs: stored runs with their requests.
    """
    out = []
    for run in runs:
        c, m = run.config, run.metrics
        cached = evaluated = 0
        seen = False
        for r in run.requests:
            t = r.server_timings or {}
            if r.warmup or not r.ok or not _int(t.get("cache_n")) or not _int(t.get("prompt_n")):
                continue
            seen = True
            cached += t["cache_n"]
            evaluated += t["prompt_n"]
        b = c.trace_block_tokens
        out.append(ReplayFigures(
            run_id=run.id, block_tokens=b, scale=None if b is None else b / MOONCAKE_BLOCK_TOKENS,
            context_tokens=c.trace_context_tokens, speedup=c.trace_speedup, requests=m.completed + m.failed,
            dispatch_p99_s=m.dispatch_s.p99, dispatch_n=m.dispatch_s.n,
            cached_tokens=cached if seen else None, evaluated_tokens=evaluated if seen else None,
            cache_share=cached / (cached + evaluated) if seen and cached + evaluated > 0 else None,
        ))
    return out
