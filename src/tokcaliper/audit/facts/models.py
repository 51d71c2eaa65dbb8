"""Model facts with sources: a curated, versioned table of well-known models (METHODS.md A3).

The table lives in ``tokcaliper/data/model_facts.json`` (``version``, one row
per model size): dense or mixture-of-experts, total and active parameters,
layers, hidden size, KV heads and head dimension where known, and the model
card or ``config.json`` each row comes from. A figure not known for certain is
``null`` there — never guessed. docs/model-facts.md describes the table.

Matching (:func:`match_model`) is by the record's model name, robust to an
organisation prefix (``Qwen/``), case, ``_``/space for ``-``, and suffixes
after the model's own name (``-Instruct``, ``-it``, ``-GGUF``, ``-Q4_K_M``,
``-AWQ-4bit``, fine-tune names): a row's alias matches when the normalised
name equals it or continues with ``-``. A version continuing with ``.``
(``GLM-5.2`` against ``glm-5``) does not match, and neither does a name whose
rest carries another size (``DeepSeek-V4-Flash-180B``: a derived, pruned
model): for those the name-pattern fallback (``facts.params``) or "unknown"
is the honest answer. The longest matching alias wins.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["ModelFacts", "ModelMatch", "facts_table", "facts_version", "match_model", "normalise_name"]


@dataclass(frozen=True)
class ModelFacts:
    """One row of the table.

    Attributes:
        id: row id (``"qwen3-30b-a3b"``). family: ``"Qwen3"``.
        aliases: normalised names that match the row.
        moe: True for mixture-of-experts, False for dense.
        params_total: parameters (count) or None. params_active: parameters
            read per token (MoE), or effective parameters (Gemma ``E4B``), or None.
        layers, hidden, kv_heads, head_dim: architecture, None when not known
            for certain (or when the KV formula does not hold: MLA, hybrid attention).
        kv_layers: layers that keep a KV cache when fewer than all do.
        source: the model card / config.json the row comes from. note: caveats.
        max_bytes_per_param: an upper bound on bytes per weight from the native
            checkpoint (gpt-oss ships MXFP4 experts, so a label "F16" cannot mean 2 B everywhere).
    """

    id: str
    family: str
    aliases: tuple[str, ...]
    moe: bool
    params_total: float | None
    params_active: float | None
    layers: int | None
    hidden: int | None
    kv_heads: int | None
    head_dim: int | None
    kv_layers: int | None
    source: str
    note: str | None = None
    max_bytes_per_param: float | None = None

    def kv_bytes_per_token(self, bytes_per_element: float) -> float | None:
        """KV-cache bytes per token of context: 2 (K and V) × KV layers × kv_heads × head_dim × bytes.

        Returns None when the row lacks any of the figures (MLA, hybrid
        attention, or simply not recorded). Source: the standard GQA cache
        layout (one K and one V vector of ``kv_heads × head_dim`` per layer per token).
        """
        layers = self.kv_layers or self.layers
        if not (layers and self.kv_heads and self.head_dim):
            return None
        return 2.0 * layers * self.kv_heads * self.head_dim * bytes_per_element


@dataclass(frozen=True)
class ModelMatch:
    """A table row matched to a record's name, with how it matched."""

    row: ModelFacts
    alias: str
    name: str
    version: str

    @property
    def source(self) -> str:
        """``"model facts v… row 'id' (name 'X' matched alias 'y'): <row source>"``."""
        return (f"model facts v{self.version} row '{self.row.id}' (name '{self.name}' matched "
                f"'{self.alias}'): {self.row.source}")


def _path_text() -> str:
    return resources.files("tokcaliper.data").joinpath("model_facts.json").read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _load() -> tuple[str, tuple[ModelFacts, ...]]:
    doc: dict[str, Any] = json.loads(_path_text())
    rows = []
    for r in doc["models"]:
        rows.append(ModelFacts(
            id=r["id"], family=r["family"], aliases=tuple(normalise_name(a) for a in r["aliases"]),
            moe=bool(r["moe"]), params_total=r.get("params_total"), params_active=r.get("params_active"),
            layers=r.get("layers"), hidden=r.get("hidden"), kv_heads=r.get("kv_heads"),
            head_dim=r.get("head_dim"), kv_layers=r.get("kv_layers"), source=r["source"], note=r.get("note"),
            max_bytes_per_param=r.get("max_bytes_per_param")))
    return str(doc["version"]), tuple(rows)


def facts_table() -> tuple[ModelFacts, ...]:
    """Every row of the table (loaded once)."""
    return _load()[1]


def facts_version() -> str:
    """The table's version string."""
    return _load()[0]


def normalise_name(name: str) -> str:
    """Last path part, lower case, ``_`` and spaces as ``-`` (``"Qwen/Qwen3_30B A3B"`` → ``"qwen3-30b-a3b"``)."""
    short = name.strip().replace("\\", "/").rstrip("/").split("/")[-1]
    return re.sub(r"[_\s]+", "-", short.lower())


#: A size in what follows the alias means a different (derived) model: ``-180b``, ``-8b``.
_OTHER_SIZE = re.compile(r"(?:^|-)\d+(?:\.\d+)?[bm](?=$|-)")


def match_model(name: str | None) -> ModelMatch | None:
    """The table row for a model name, or None.

    Args:
        name: as published (``"unsloth/Qwen3-30B-A3B-Instruct-2507-GGUF"``).

    Returns:
        :class:`ModelMatch` (row, the alias that matched, table version), or
        None when no alias matches (see the module docstring for the rules).
    """
    if not name:
        return None
    norm = normalise_name(name)
    norm = norm.removeprefix("meta-") if norm.startswith("meta-llama-") else norm
    best: tuple[int, ModelFacts, str] | None = None
    version, rows = _load()
    for row in rows:
        for alias in row.aliases:
            if norm != alias and not norm.startswith(alias + "-"):
                continue
            if _OTHER_SIZE.search(norm[len(alias):]):
                continue
            if best is None or len(alias) > best[0]:
                best = (len(alias), row, alias)
    if best is None:
        return None
    return ModelMatch(row=best[1], alias=best[2], name=name, version=version)


def nearest_model_names(name: str, n: int = 3) -> list[str]:
    """Up to ``n`` table rows whose aliases are closest to ``name``: a suggestion, never a match.

    ``difflib.get_close_matches`` (ratio ≥ 0.6) over every row's aliases against
    :func:`normalise_name` of ``name``; returns row ids, deterministic.
    """
    import difflib

    by_alias = {alias: row.id for row in facts_table() for alias in (row.id, *row.aliases)}
    out: list[str] = []
    for alias in difflib.get_close_matches(normalise_name(name), list(by_alias), n=3 * n, cutoff=0.6):
        if by_alias[alias] not in out:
            out.append(by_alias[alias])
    return out[:n]
