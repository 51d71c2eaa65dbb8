"""Token-exact synthetic prompts: text the server's own tokenizer counts to the requested length.

What is counted: the requested input length is the server's
``usage.prompt_tokens`` — the chat template and any default system prompt the
template adds included, and the unique-prompt tag (``[salt.index] ``)
included. Per run (the probe once, before the warm-up; every prompt sized
before the run's counters are read and its telemetry starts, so no sizing
call is inside the measured window):

1. **Tokenizer.** ``POST /tokenize`` in llama.cpp's shape
   (``{"content", "add_special": false}`` → ``{"tokens": [...]}``), else
   vLLM's / SGLang's (``{"model", "prompt", "add_special_tokens": false}`` →
   ``{"count"}`` or ``{"tokens"}``).
2. **Template overhead.** One probe chat completion (``max_tokens`` 1) of a
   text of the same shape as the real prompts; overhead = its
   ``usage.prompt_tokens`` − the tokenizer's count of the text.
3. **Each request** gets one user message: the tag, then words drawn from a
   fixed list (seeded per request), with the word count adjusted until
   ``/tokenize`` counts exactly ``requested − overhead`` tokens.

The text's own tokens are counted exactly; the template's by the probe, so
the prompt is exact when the template tokenizes the same around every text
(true for ChatML-style templates, where the text sits between fixed special
tokens). The run's :class:`~tokcaliper.model.run.LengthReport` says how close
``usage`` came. A length below the template's own tokens + 1 cannot be made;
such a request gets the shortest prompt and shows in the report's error.

**No tokenize endpoint:** two probes (16 and 64 words) give tokens per word and
the overhead from ``usage.prompt_tokens``; prompts are sized from that fit,
and the run's lengths are marked approximate (``method = "calibrated"``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import numpy as np

from tokcaliper.errors import ServerError
from tokcaliper.load.lengths import LengthDist, length_of, parse_length_spec
from tokcaliper.load.prompts import Messages
from tokcaliper.model.run import LoadConfig

__all__ = ["Planned", "SyntheticWorkload", "WORDS", "fit_text"]

#: The filler vocabulary: common English words, one token each with a leading
#: space in most BPE vocabularies (so the length converges in one or two counts).
WORDS = tuple("""
the of and to in is that for it as was with be by on not he this are or his from at which but have
an had they you were their one all we can her has there been if more when will would who so no time
people year way day man thing woman life child world school state family student group country
problem hand part place case week company system program question work government number night point
home water room mother area money story fact month lot right study book eye job word business issue
side kind head house service friend father power hour game line end member law car city community name
president team minute idea kid body information back parent face others level office door health
person art war history party result change morning reason research girl guy moment air teacher force
education good new first last long great little own other old big high different small large next
early young important few public bad same able make know take see come think look want give use find
tell ask seem feel try leave call keep let begin help talk turn start show hear play run move like
live believe hold bring happen write provide sit stand lose pay meet include continue set learn lead
understand watch follow stop create speak read allow add spend grow open walk win offer remember love
consider appear buy wait serve die send expect build stay fall cut reach kill remain
""".split())

#: Most word-count adjustments per prompt before keeping the closest.
MAX_ROUNDS = 8

#: Probe sizes (words) for a server without a tokenize endpoint.
CALIBRATION_WORDS = (16, 64)


def _tokens(obj: Any) -> int | None:
    if isinstance(obj, dict):
        if isinstance(obj.get("tokens"), list):
            return len(obj["tokens"])
        if isinstance(obj.get("count"), int) and not isinstance(obj.get("count"), bool):
            return obj["count"]
    return None


class _Server:
    """The few synchronous calls prompt sizing needs (before any clock starts)."""

    def __init__(self, cfg: LoadConfig) -> None:
        self.cfg = cfg
        self.http = httpx.Client(base_url=cfg.base_url, timeout=cfg.first_token_timeout_s)
        self.shape: str | None = None  # "llama.cpp" or "vllm"

    def close(self) -> None:
        self.http.close()

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        try:
            r = self.http.post(path, json=body)
        except httpx.HTTPError as e:
            raise ServerError(f"{self.cfg.base_url}{path}: {e}") from None
        if r.status_code != 200:
            return None
        try:
            return r.json()
        except ValueError:
            return None

    def find_tokenizer(self) -> bool:
        """True when the server counts tokens (``/tokenize`` in a known shape)."""
        for shape in ("llama.cpp", "vllm"):
            self.shape = shape
            if self.count("hello world") is not None:
                return True
        self.shape = None
        return False

    def count(self, text: str) -> int | None:
        """Tokens of ``text`` by the server's tokenizer, no special tokens (None: no tokenizer)."""
        if self.shape == "llama.cpp":
            return _tokens(self._post("/tokenize", {"content": text, "add_special": False}))
        if self.shape == "vllm":
            return _tokens(self._post("/tokenize", {"model": self.cfg.model, "prompt": text,
                                                    "add_special_tokens": False}))
        return None

    def prompt_tokens(self, text: str) -> int:
        """``usage.prompt_tokens`` of one chat completion whose user message is ``text``."""
        body = {"model": self.cfg.model, "messages": [{"role": "user", "content": text}],
                "max_tokens": 1, "temperature": 0.0, "stream": False}
        obj = self._post("/v1/chat/completions", body)
        n = ((obj or {}).get("usage") or {}).get("prompt_tokens") if isinstance(obj, dict) else None
        if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
            raise ServerError(f"{self.cfg.base_url}: a probe request for --input-tokens got no "
                              "usage.prompt_tokens, so prompt lengths cannot be sized")
        return n


def _words(seed: int, index: int, n: int) -> list[str]:
    rng = np.random.default_rng([seed, index + 1, 7])  # index −1: the probe
    return [WORDS[i] for i in rng.integers(0, len(WORDS), size=max(n, 0))]


def _text(tag: str, words: list[str]) -> str:
    return tag + " ".join(words) if words else (tag.rstrip() or WORDS[0])


def fit_text(count: Callable[[str], int | None], pool: Callable[[int], list[str]],
             render: Callable[[list[str]], str], start: int, target: int) -> str:
    """The text of the first n words of ``pool`` that ``count`` says is ``target`` tokens.

    Starts at ``start`` words and moves n by the miss (at most
    :data:`MAX_ROUNDS` counts, stopping on a repeat); keeps the closest.

    Args:
        count: the server's tokenizer (tokens of a text; None: it stopped answering).
        pool: ``pool(m)`` is a deterministic list of at least m words whose
            first n do not depend on m (a prefix of every longer pool).
        render: words → the text counted (e.g. the tag, then the words).
        start: first guess of the word count. target: tokens wanted.
    """
    words = pool(max(target, 1) + 16)
    n = max(start, 0)
    best: tuple[int, str] | None = None
    seen: set[int] = set()
    for _ in range(MAX_ROUNDS):
        if n > len(words):
            words = pool(2 * n)
        text = render(words[:n])
        got = count(text)
        if got is None:
            break
        if best is None or abs(got - target) < abs(best[0] - target):
            best = (got, text)
        if got == target or n in seen:
            break
        seen.add(n)
        n = max(n + (target - got), 0)
    return best[1] if best is not None else render(words[:n])


@dataclass
class Planned:
    """One request of a synthetic workload.

    Attributes:
        messages: the chat messages to send.
        max_tokens: its output budget.
        input_tokens / output_tokens: requested lengths, tokens (None: not asked for).
    """

    messages: Messages
    max_tokens: int
    input_tokens: int | None
    output_tokens: int | None


class SyntheticWorkload:
    """Per-request prompts and output budgets for ``cfg.input_tokens`` / ``cfg.output_tokens``.

    :meth:`prepare` talks to the server (tokenizer, template probe); call it
    before the clock. Without ``input_tokens`` the prompts are the given set
    (only the output budget is drawn) and nothing is asked of the server.

    Attributes:
        method: ``"tokenize"``, ``"calibrated"`` or None (no input lengths).
        template_tokens: tokens the server adds around the text (from the probe).
    """

    def __init__(self, cfg: LoadConfig) -> None:
        self.cfg = cfg
        self.inp: LengthDist | None = (parse_length_spec(cfg.input_tokens, "--input-tokens")
                                       if cfg.input_tokens else None)
        self.out: LengthDist | None = (parse_length_spec(cfg.output_tokens, "--output-tokens")
                                       if cfg.output_tokens else None)
        self.method: str | None = None
        self.template_tokens: float | None = None
        self._per_word = 1.0
        self._server: _Server | None = None

    def prepare(self) -> None:
        """Find the tokenizer and measure the template overhead (HTTP, before the clock).

        Raises:
            ServerError: the server is unreachable or its probe has no usage.
        """
        if self.inp is None:
            return
        srv = _Server(self.cfg)
        if srv.find_tokenizer():
            probe = _text("[probe.0] ", _words(self.cfg.length_seed, -1, 24))
            self.template_tokens = float(srv.prompt_tokens(probe) - (srv.count(probe) or 0))
            self.method = "tokenize"
            self._server = srv
            return
        w1, w2 = CALIBRATION_WORDS
        p1 = srv.prompt_tokens(_text("[probe.0] ", _words(self.cfg.length_seed, -1, w1)))
        p2 = srv.prompt_tokens(_text("[probe.0] ", _words(self.cfg.length_seed, -1, w2)))
        srv.close()
        if p2 <= p1:
            raise ServerError(
                f"{self.cfg.base_url} has no /tokenize and its usage.prompt_tokens does not grow with "
                f"the prompt ({w1} words: {p1} tokens, {w2} words: {p2}), so --input-tokens cannot "
                "size prompts")
        self._per_word = (p2 - p1) / (w2 - w1)
        self.template_tokens = p1 - w1 * self._per_word  # the tag's tokens included
        self.method = "calibrated"

    def close(self) -> None:
        """Release the HTTP client."""
        if self._server is not None:
            self._server.close()
            self._server = None

    def _sized(self, target: int, tag: str, index: int) -> Messages:
        """One user message whose text is ``target`` tokens (closest reached)."""
        if self.method == "tokenize" and self._server is None:  # closed after an earlier phase
            self._server = _Server(self.cfg)
            self._server.find_tokenizer()
        srv = self._server
        if srv is None:  # calibrated
            n = max(round((target - (self.template_tokens or 0)) / self._per_word), 0)
            return [{"role": "user", "content": _text(tag, _words(self.cfg.length_seed, index, n))}]
        body = target - int(self.template_tokens or 0)
        tag_n = srv.count(tag) if tag else 0
        text = fit_text(srv.count, lambda n: _words(self.cfg.length_seed, index, n),
                        lambda ws: _text(tag, ws), max(body - (tag_n or 0), 0), body)
        return [{"role": "user", "content": text}]

    def plan(self, index: int, tag: str, messages: Messages) -> Planned:
        """Request ``index``'s messages and lengths; ``tag`` is its unique-prompt tag ('' for none).

        ``messages`` (the prompt set's, already tagged) are kept when there is
        no ``input_tokens``.
        """
        seed = self.cfg.length_seed
        req_in = length_of(self.inp, seed, "input", index) if self.inp is not None else None
        req_out = length_of(self.out, seed, "output", index) if self.out is not None else None
        if req_in is not None:
            messages = self._sized(req_in, tag, index)
        return Planned(messages=messages, max_tokens=req_out if req_out is not None else self.cfg.max_tokens,
                       input_tokens=req_in, output_tokens=req_out)
