"""Conversation datasets: ShareGPT-style and OpenAI-style JSONL, length-filtered and seeded.

Each record is one of:

* ShareGPT: ``{"conversations": [{"from": "human", "value": "..."}, {"from": "gpt", ...}, ...]}``
  (``from``: ``system``, ``human``/``user``, ``gpt``/``assistant``/``chatgpt``/``bard``/``bing``);
* OpenAI chat: ``{"messages": [{"role": "user", "content": "..."}, ...]}``.

A file may also be one JSON array of such records (ShareGPT's own dumps are).
The request sent is the conversation up to and including its last user turn
(the answers after it are what the server is to generate), system turns kept.

**Bad records.** Text that is not JSON stops the run with one line naming
``file:line`` (a broken file). A JSON record that holds no usable
conversation — no ``conversations``/``messages``, an unknown speaker, a
non-text turn, no user turn — is skipped, as public ShareGPT dumps hold many
such records; the skips are counted by reason with their first line numbers
(:attr:`Dataset.skipped`), printed with the run. A file with no usable record
is an error.

**Sampling.** The usable records are shuffled by ``--dataset-seed`` (stored);
request i (warm-up first, then measured) gets record i of that order, cycling
when there are fewer records than requests.

**Length filters** (``--min-input-tokens`` / ``--max-input-tokens``): a record
is kept when the server's ``/tokenize`` counts its turns' text (summed, the
chat template not included) within the bounds. Records are counted in the
shuffled order until enough are kept for the run, so a large file costs only
the counts it needs. A server without ``/tokenize`` cannot filter: the run
stops with one line before anything is measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tokcaliper.errors import InputError, ServerError
from tokcaliper.fileio import JSONParseError, jsonl_records, loads_json, read_text
from tokcaliper.load.lengths import length_of, parse_length_spec
from tokcaliper.load.prompts import Messages
from tokcaliper.load.synthetic import Planned, _Server
from tokcaliper.model.run import LoadConfig

__all__ = ["Dataset", "DatasetWorkload", "load_dataset", "parse_dataset", "record_messages"]

#: Largest dataset file, bytes (ShareGPT V3's dump is about 0.7 GB).
MAX_DATASET_BYTES = 2 * 2**30

#: ShareGPT speaker → chat role.
SPEAKERS = {"system": "system", "human": "user", "user": "user", "gpt": "assistant",
            "assistant": "assistant", "chatgpt": "assistant", "bard": "assistant", "bing": "assistant"}

#: Line numbers listed per skip reason.
SKIP_LIST = 5


@dataclass
class Dataset:
    """The usable records of a dataset file and what was skipped.

    Attributes:
        records: (line, messages) of each usable record, in file order.
        skipped: reason → line numbers of the records skipped for it.
        origin: the file's name.
    """

    records: list[tuple[int, Messages]]
    skipped: dict[str, list[int]] = field(default_factory=dict)
    origin: str = ""

    def skip_note(self) -> str | None:
        """One sentence listing the skipped records by reason (None when none was)."""
        if not self.skipped:
            return None
        parts = []
        for reason, lines in self.skipped.items():
            shown = ", ".join(str(n) for n in lines[:SKIP_LIST]) + (", …" if len(lines) > SKIP_LIST else "")
            parts.append(f"{len(lines)} {reason} (line {shown})")
        total = sum(len(v) for v in self.skipped.values())
        return f"{self.origin}: {total} record(s) skipped: " + "; ".join(parts)


def record_messages(obj: object) -> Messages | str:
    """The chat messages a record asks to send, or the reason it is unusable (a str).

    Conversation up to and including its last user turn; ShareGPT speakers
    mapped by :data:`SPEAKERS`.
    """
    if not isinstance(obj, dict):
        return "not an object"
    if "conversations" in obj:
        turns = obj["conversations"]
        if not isinstance(turns, list):
            return "conversations not a list"
        msgs: Messages = []
        for t in turns:
            if not isinstance(t, dict) or not isinstance(t.get("value"), str):
                return "turn without a text value"
            role = SPEAKERS.get(str(t.get("from", "")).lower())
            if role is None:
                return "unknown speaker"
            msgs.append({"role": role, "content": t["value"]})
    elif "messages" in obj:
        turns = obj["messages"]
        if not isinstance(turns, list):
            return "messages not a list"
        msgs = []
        for m in turns:
            if not isinstance(m, dict) or not isinstance(m.get("content"), str):
                return "message without text content"
            if m.get("role") not in ("system", "user", "assistant"):
                return "unknown role"
            msgs.append({"role": m["role"], "content": m["content"]})
    else:
        return "no conversations or messages"
    last_user = max((i for i, m in enumerate(msgs) if m["role"] == "user"), default=None)
    if last_user is None:
        return "no user turn"
    msgs = msgs[: last_user + 1]
    if not msgs[-1]["content"].strip():
        return "empty user turn"
    return msgs


def parse_dataset(text: str, origin: str) -> Dataset:
    """The usable records of a JSONL (or JSON array) text.

    Raises:
        InputError: ``origin:LINE: not valid JSON (…)`` for a broken line, or
            no usable record at all (naming the skip reasons).
    """
    out = Dataset(records=[], origin=origin)

    def take(lineno: int, obj: object) -> None:
        got = record_messages(obj)
        if isinstance(got, str):
            out.skipped.setdefault(got, []).append(lineno)
        else:
            out.records.append((lineno, got))

    if text.lstrip().startswith("["):
        try:
            items = loads_json(text)
        except JSONParseError as e:
            raise InputError(f"{origin}: not valid JSON ({e})") from None
        for k, obj in enumerate(items if isinstance(items, list) else [], start=1):
            take(k, obj)  # the element's number stands for its line
    else:
        for lineno, obj in jsonl_records(text, origin):
            take(lineno, obj)
    if not out.records:
        raise InputError(f"{origin}: no usable conversation" + (f" ({out.skip_note()})" if out.skipped else ""))
    return out


def load_dataset(path: str | Path) -> Dataset:
    """:func:`parse_dataset` of the file ``path`` (read by :mod:`tokcaliper.fileio`)."""
    p = Path(path)
    return parse_dataset(read_text(p, MAX_DATASET_BYTES, what=f"dataset {p}"), str(p))


class DatasetWorkload:
    """Per-request messages from ``cfg.dataset``: the workload interface of
    :class:`~tokcaliper.load.synthetic.SyntheticWorkload` (:meth:`prepare`, :meth:`plan`, :meth:`close`).

    ``cfg.output_tokens``, when given, draws the output budgets as for synthetic prompts.

    Attributes:
        dataset: the parsed file. order: record indices in the seeded order
            (only the kept ones once :meth:`prepare` filtered).
        counted: records counted by the tokenizer. method: ``"tokenize"`` with
            filters, else None. template_tokens: None (not measured).
    """

    def __init__(self, cfg: LoadConfig) -> None:
        self.cfg = cfg
        self.dataset = load_dataset(cfg.dataset)  # type: ignore[arg-type]
        rng = np.random.default_rng(cfg.dataset_seed)
        self.order: list[int] = rng.permutation(len(self.dataset.records)).tolist()
        self.out = parse_length_spec(cfg.output_tokens, "--output-tokens") if cfg.output_tokens else None
        self.counted = 0
        self.method: str | None = None
        self.template_tokens: float | None = None

    def prepare(self) -> None:
        """Apply the length filters with the server's tokenizer (HTTP, before the clock).

        Raises:
            ServerError: filters asked for and the server has no ``/tokenize``.
            InputError: no record within the bounds.
        """
        lo, hi = self.cfg.min_input_tokens, self.cfg.max_input_tokens
        if lo is None and hi is None:
            return
        srv = _Server(self.cfg)
        try:
            if not srv.find_tokenizer():
                raise ServerError(f"{self.cfg.base_url} has no /tokenize, so --min-input-tokens/"
                                  "--max-input-tokens cannot count the dataset's prompts; drop them")
            need = None if self.cfg.requests is None else self.cfg.warmup + self.cfg.requests
            kept: list[int] = []
            for k in self.order:
                msgs = self.dataset.records[k][1]
                n = sum(srv.count(m["content"]) or 0 for m in msgs)
                self.counted += 1
                if (lo is None or n >= lo) and (hi is None or n <= hi):
                    kept.append(k)
                    if need is not None and len(kept) >= need:
                        break
        finally:
            srv.close()
        if not kept:
            raise InputError(f"{self.dataset.origin}: no record within --min-input-tokens {lo} / "
                             f"--max-input-tokens {hi} (of {self.counted} counted)")
        self.order, self.method = kept, "tokenize"

    def close(self) -> None:
        """Nothing held between calls."""

    def note(self) -> str | None:
        """What was skipped or filtered, one sentence (None: every record used as is)."""
        parts = [s for s in (self.dataset.skip_note(),) if s]
        if self.method is not None:
            parts.append(f"length filter kept {len(self.order)} of {self.counted} record(s) counted")
        return "; ".join(parts) or None

    def plan(self, index: int, tag: str, messages: Messages) -> Planned:
        """Request ``index``'s messages (the record, its last user turn tagged) and output budget."""
        from tokcaliper.load.driver import salted  # the driver imports this module

        msgs = self.dataset.records[self.order[index % len(self.order)]][1]
        if tag:
            msgs = salted(msgs, tag)
        req_out = length_of(self.out, self.cfg.length_seed, "output", index) if self.out is not None else None
        return Planned(messages=msgs, max_tokens=req_out if req_out is not None else self.cfg.max_tokens,
                       input_tokens=None, output_tokens=req_out)
