"""Prompts: the built-in realistic set or a user's JSONL file.

Each JSONL line is either ``{"prompt": "text"}`` or
``{"messages": [{"role": "user", "content": "..."}, ...]}`` (OpenAI chat
format). Blank lines are skipped. Lines are split on ``\n`` only (JSON Lines;
U+2028 inside a prompt is text), and every parse failure (bad JSON, nesting
deeper than the parser's limit, an over-long integer) is one line naming the
file and line number.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from tokcaliper.errors import InputError
from tokcaliper.fileio import jsonl_records, read_text

#: Ceiling on a prompts file (bytes).
MAX_PROMPTS_BYTES = 256 * 1024 * 1024

Messages = list[dict[str, str]]


def _parse_jsonl(text: str, origin: str) -> list[Messages]:
    out: list[Messages] = []
    for lineno, obj in jsonl_records(text, origin):
        if isinstance(obj, dict) and isinstance(obj.get("prompt"), str):
            out.append([{"role": "user", "content": obj["prompt"]}])
        elif isinstance(obj, dict) and isinstance(obj.get("messages"), list) and all(
            isinstance(m, dict) and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str) for m in obj["messages"]
        ) and obj["messages"]:
            out.append([{"role": m["role"], "content": m["content"]} for m in obj["messages"]])
        else:
            raise InputError(
                f"{origin}:{lineno}: expected {{\"prompt\": str}} or "
                "{\"messages\": [{\"role\", \"content\"}, ...]}"
            )
    if not out:
        raise InputError(f"{origin}: no prompts found")
    return out


def builtin_prompts() -> list[Messages]:
    """The built-in set: 40 everyday chat requests of varied length and topic."""
    text = resources.files("tokcaliper.data").joinpath("prompts.jsonl").read_text("utf-8")
    return _parse_jsonl(text, "builtin prompts")


def load_prompts(path: str | Path | None) -> list[Messages]:
    """Prompts from ``path`` (JSONL), or the built-in set when ``path`` is None.

    Raises:
        InputError: unreadable file, a malformed line (named by line number),
            or no prompts at all.
    """
    if path is None:
        return builtin_prompts()
    p = Path(path)
    text = read_text(p, MAX_PROMPTS_BYTES, what=f"prompts file {p}")
    return _parse_jsonl(text, str(p))
