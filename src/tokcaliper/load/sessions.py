"""Shared prefixes and multi-turn sessions: traffic a prefix cache can catch (issue 18 item 5).

**Shared prefixes** (``--shared-prefix groups=G,tokens=P``): G system prompts
of P tokens each, one per group; request *n* (or, with sessions, session *n*)
belongs to group ``n mod G`` and its messages start with that group's system
prompt (merged before the text of a system message the prompt already has).
A prefix is the run's unique tag ``[salt.pG] `` then filler words seeded by
``--length-seed`` and G, sized so that the server's ``/tokenize`` counts
exactly P tokens for the whole text (:func:`tokcaliper.load.synthetic.fit_text`;
the chat template's tokens around it are not in P). Within a run every
request of a group sends the same prefix bytes; the tag makes the prefixes of
each run new, so no run is served from a cache an earlier one filled (the
first requests of each group miss, the rest can hit, in every run alike). A
server without ``/tokenize`` gets P filler words (``prefix_sized_by =
"words"``; P is then approximate).

**Sessions** (``--turns N [--think-time S]``): a session is N requests sent one
after the other; turn k's messages are turn 1…k−1's messages as sent (their
user prompts with their tags) and the answers actually received, then turn k's
new user prompt (the prompt set's entry ``session × N + k − 1``, its last user
message after the first turn), tagged ``[salt.sS.tK] ``. After an answer the
session waits ``think_time_s`` before its next turn. C sessions run at once
(closed loop, ``--concurrency``): a worker starts the next session when its
previous one ended. ``--requests`` counts requests: ⌈requests ÷ N⌉ sessions,
the last one shorter when N does not divide it. A failed turn ends its
session (there is no answer to carry), so its later turns are never sent.
Turn k > 1's body is built when turn k − 1 has ended (it holds the answer):
its encoding is client time between the answer and the send, counted in the
request's dispatch delay (``scheduled_s`` is when the think time ended).
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Protocol

from tokcaliper.load.client import Endpoint, chat_body, stream_chat
from tokcaliper.load.lengths import MAX_LENGTH_TOKENS, length_of, parse_length_spec
from tokcaliper.load.pool import ConnectionPool
from tokcaliper.load.prompts import Messages
from tokcaliper.load.sse import RawStream, answer_text
from tokcaliper.model.run import LoadConfig

__all__ = ["MAX_PREFIX_GROUPS", "MAX_THINK_TIME_S", "MAX_TURNS", "SharedPrefix", "SharedPrefixes",
           "parse_shared_prefix", "session_count", "session_loop", "with_prefix"]

#: Most prefix groups (beyond it a value is a typo).
MAX_PREFIX_GROUPS = 100_000
#: Most turns per session.
MAX_TURNS = 1_000
#: Longest think time, s.
MAX_THINK_TIME_S = 3600.0

#: Seed stream of the prefix words (the prompts' words use 7: the two never coincide).
PREFIX_STREAM = 11

_ITEM = re.compile(r"^\s*(groups|tokens)\s*=\s*(\d+)\s*$")


@dataclass(frozen=True)
class SharedPrefix:
    """A parsed ``--shared-prefix``: ``groups`` prefixes of ``tokens`` tokens each."""

    groups: int
    tokens: int


def parse_shared_prefix(text: str) -> SharedPrefix:
    """``"groups=4,tokens=512"`` → ``SharedPrefix(4, 512)``.

    Raises:
        ValueError: one sentence naming the culprit (not ``groups=G,tokens=P``,
            a key missing or given twice, G outside [1, 100 000], P outside
            [1, 1 048 576]).
    """
    found: dict[str, int] = {}
    for item in text.split(","):
        m = _ITEM.match(item)
        if m is None:
            raise ValueError(f"item {item.strip()!r} is not groups=G or tokens=P (e.g. groups=4,tokens=512)")
        if m.group(1) in found:
            raise ValueError(f"gives {m.group(1)} twice")
        found[m.group(1)] = int(m.group(2))
    for key in ("groups", "tokens"):
        if key not in found:
            raise ValueError(f"needs {key}=…, e.g. groups=4,tokens=512")
    if not 1 <= found["groups"] <= MAX_PREFIX_GROUPS:
        raise ValueError(f"groups must be in [1, {MAX_PREFIX_GROUPS}], got {found['groups']}")
    if not 1 <= found["tokens"] <= MAX_LENGTH_TOKENS:
        raise ValueError(f"tokens must be in [1, {MAX_LENGTH_TOKENS}], got {found['tokens']}")
    return SharedPrefix(groups=found["groups"], tokens=found["tokens"])


def with_prefix(messages: Messages, prefix: str) -> Messages:
    """``messages`` starting with the system prompt ``prefix``.

    A leading system message keeps its text after the prefix (one system
    message: some chat templates refuse two); otherwise one is put first.
    """
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = prefix + "\n\n" + out[0]["content"]
        return out
    return [{"role": "system", "content": prefix}, *out]


class SharedPrefixes:
    """The G prefix texts of one run (``cfg.shared_prefix``), sized before the clock.

    Attributes:
        spec: the parsed option.
        texts: prefix of group g at ``texts[g]`` (after :meth:`prepare`).
        method: ``"tokenize"`` or ``"words"`` (no tokenizer: P words, approximate).
    """

    def __init__(self, cfg: LoadConfig) -> None:
        assert cfg.shared_prefix is not None
        self.cfg = cfg
        self.spec = parse_shared_prefix(cfg.shared_prefix)
        self.texts: list[str] = []
        self.method: str | None = None

    def prepare(self) -> None:
        """Build the texts (``/tokenize`` calls: call before the clock).

        Raises:
            ServerError: the server is unreachable.
        """
        from tokcaliper.load.synthetic import sized_texts

        cfg, spec = self.cfg, self.spec
        tags = [f"[{cfg.prompt_salt}.p{g}] " if cfg.prompt_salt is not None else "" for g in range(spec.groups)]
        self.texts, self.method = sized_texts(cfg, [(t, spec.tokens) for t in tags], cfg.length_seed,
                                              PREFIX_STREAM)

    def group(self, n: int) -> int:
        """The group of request (or session) ``n``: ``n mod G``."""
        return n % self.spec.groups

    def apply(self, n: int, messages: Messages) -> tuple[int, Messages]:
        """``(group, messages with its prefix)`` of request (or session) ``n``."""
        g = self.group(n)
        return g, with_prefix(messages, self.texts[g])


class _Out(Protocol):
    """Where finished streams go (:class:`tokcaliper.load.driver._Collector`)."""

    run_start: float

    def add(self, raw: RawStream) -> None: ...


def session_count(requests: int, turns: int) -> int:
    """Sessions that carry ``requests`` requests of ``turns`` turns: ⌈requests ÷ turns⌉."""
    return math.ceil(requests / turns)


def _last_user(messages: Messages) -> Messages:
    for m in reversed(messages):
        if m.get("role") == "user":
            return [dict(m)]
    return [dict(messages[-1])]


async def session_loop(pool: ConnectionPool, cfg: LoadConfig, prompts: Sequence[Messages], ep: Endpoint,
                       out: _Out, *, count: int | None, duration_s: float | None, warmup: bool,
                       index_offset: int, session_offset: int,
                       prefixes: SharedPrefixes | None) -> None:
    """Run multi-turn sessions, ``cfg.concurrency`` at a time (closed loop).

    Args:
        pool: the server's connections.
        cfg: the load (``turns``, ``think_time_s``, ``prompt_salt``…).
        prompts: the prompt set (turn k of session s: entry ``s × turns + k − 1``).
        ep: the endpoint (request bytes).
        out: collector of finished streams (its ``run_start`` set).
        count: requests to send (None: until ``duration_s``).
        duration_s: no new turn starts after this many seconds.
        warmup: the requests are warm-up ones.
        index_offset / session_offset: first request index / session number of the phase.
        prefixes: the run's shared prefixes (session s is in group ``s mod G``), or None.
    """
    from tokcaliper.load.driver import salted

    turns = cfg.turns
    n_sessions = session_count(count, turns) if count is not None else None
    deadline = out.run_start + duration_s if duration_s else None
    out_dist = parse_length_spec(cfg.output_tokens, "--output-tokens") if cfg.output_tokens else None
    state = {"session": 0, "index": 0}

    def over() -> bool:
        return deadline is not None and perf_counter() >= deadline

    async def one_session(local: int) -> None:
        s = session_offset + local
        n_turns = turns if count is None else min(turns, count - local * turns)
        history: Messages = []
        group: int | None = None
        for k in range(1, n_turns + 1):
            if over():
                return
            scheduled = perf_counter()
            entry = prompts[(s * turns + k - 1) % len(prompts)]
            new = [dict(m) for m in entry] if k == 1 else _last_user(entry)
            if cfg.prompt_salt is not None:
                new = salted(new, f"[{cfg.prompt_salt}.s{s}.t{k}] ")
            if k == 1 and prefixes is not None:
                group, new = prefixes.apply(s, new)
            messages = history + new
            req_out = length_of(out_dist, cfg.length_seed, "output", s * turns + k - 1) if out_dist else None
            budget = req_out if req_out is not None else cfg.max_tokens
            body: dict[str, Any] = chat_body(cfg, messages, max_tokens=budget, min_tokens=req_out)
            i = state["index"]
            state["index"] += 1
            raw = RawStream(index=index_offset + i, warmup=warmup, scheduled=scheduled, max_tokens=budget,
                            requested_output_tokens=req_out, session=s, turn=k, prefix_group=group)
            raw = await stream_chat(pool, ep.request(body), raw, timeout_s=cfg.request_timeout_s,
                                    first_token_timeout_s=cfg.first_token_timeout_s,
                                    token_timeout_s=cfg.token_timeout_s)
            answer = answer_text(raw.chunks) if raw.error is None else None
            out.add(raw)
            if not answer:  # failed, or nothing to carry: the conversation cannot go on
                return
            history = messages + [{"role": "assistant", "content": answer}]
            if k < n_turns and cfg.think_time_s > 0:
                await asyncio.sleep(cfg.think_time_s)

    async def worker() -> None:
        while not over():
            if n_sessions is not None and state["session"] >= n_sessions:
                return
            local = state["session"]
            state["session"] += 1
            await one_session(local)

    workers = cfg.concurrency if n_sessions is None else min(cfg.concurrency, n_sessions)
    from tokcaliper.load.driver import run_workers  # driver imports this module

    await run_workers(worker, workers)
