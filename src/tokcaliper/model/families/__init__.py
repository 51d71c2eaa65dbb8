"""The server-family registry: one module per inference engine (METHODS.md M6).

Every public module of this package defines ``FAMILY``, a
:class:`~tokcaliper.model.families._base.ServerFamily` that declares how the
engine is recognised (its metric prefixes), how its counters become acceptance
(:class:`~tokcaliper.model.specdec.SpecCounts`) and prefix-cache figures, and
which per-response fields a run keeps. The modules are found by listing the
package, so adding an engine is one module (and its test); :func:`register`
adds a family defined elsewhere.

Registered: :mod:`.llamacpp`, :mod:`.sglang`, :mod:`.tgi`, :mod:`.trtllm`, :mod:`.vllm`.

Why here, in the model layer: the families are pure declarations and pure
arithmetic, and their lowest reader is the load layer's SSE parser (the
per-response fields to keep) and its prefix-cache figure, which may not import
``servers``; one home below both keeps every reader on the same declaration.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Mapping
from typing import Any

from tokcaliper.errors import InputError
from tokcaliper.model.families._base import ResponseField, ServerFamily
from tokcaliper.model.specdec import RequestAcceptance, SpecCounts

#: A registered family's name (``--server-kind``); checked by :func:`check_server_kind`.
ServerKind = str

_REGISTRY: dict[str, ServerFamily] = {}
_DISCOVERED = False


def _families() -> dict[str, ServerFamily]:
    global _DISCOVERED
    if not _DISCOVERED:
        _DISCOVERED = True
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
            if not info.name.startswith("_"):
                register(importlib.import_module(f"{__name__}.{info.name}").FAMILY)
    return _REGISTRY


def register(family: ServerFamily) -> ServerFamily:
    """Add ``family`` to the registry (every reader below sees it from then on).

    Raises:
        ValueError: another family already has its name.
    """
    if family.name in _REGISTRY and _REGISTRY[family.name] is not family:
        raise ValueError(f"server family {family.name!r} is registered twice")
    _REGISTRY[family.name] = family
    return family


def unregister(name: str) -> None:
    """Remove a family (for a test that registered one of its own)."""
    _REGISTRY.pop(name, None)


def families() -> tuple[ServerFamily, ...]:
    """The registered families, built-in ones in module-name order, then those registered later."""
    return tuple(_families().values())


def server_kinds() -> tuple[str, ...]:
    """The registered families' names."""
    return tuple(_families())


def family(kind: str) -> ServerFamily:
    """The family called ``kind``.

    Raises:
        InputError: no family has that name.
    """
    found = _families().get(kind)
    if found is None:
        raise InputError(f"--server-kind {kind!r}: expected one of {', '.join(server_kinds())}")
    return found


def check_server_kind(kind: str | None) -> ServerKind | None:
    """Validate a ``--server-kind`` value (None passes).

    Raises:
        InputError: not a registered family's name.
    """
    return None if kind is None else family(kind).name


def detect_server_kind(names: Iterable[str]) -> ServerKind | None:
    """The family whose metric prefixes most of ``names`` carry (the first registered on a tie).

    Args:
        names: metric or sample keys, e.g. the keys of a counter snapshot.

    Returns:
        The family's name, or None when no name carries a registered prefix.
    """
    fams = families()
    hits = dict.fromkeys((f.name for f in fams), 0)
    for name in names:
        for f in fams:
            if name.startswith(f.prefixes):
                hits[f.name] += 1
    best = max(hits, key=lambda k: hits[k], default=None)
    return best if best is not None and hits[best] else None


def spec_counts(counters: Mapping[str, float], kind: ServerKind | None = None) -> SpecCounts | None:
    """Speculative counts from a counter snapshot or difference.

    Args:
        counters: ``{sample_key: value}`` as stored in ``Run.counters_delta``.
        kind: server family; detected from the names when None.

    Returns:
        The counts, or None when the family exposes no such counters
        (SGLang publishes gauges only; a server without speculation has none).

    Raises:
        ValueError: a malformed position label (from the family's reader).
    """
    kind = kind or detect_server_kind(counters)
    reader = family(kind).counts if kind else None
    return reader(counters) if reader else None


def step_acceptance(counters: Mapping[str, float], kind: ServerKind | None = None) -> RequestAcceptance | None:
    """Tokens per target step from counters, for a family that counts steps but not drafts (TGI)."""
    kind = kind or detect_server_kind(counters)
    reader = family(kind).step_acceptance if kind else None
    return reader(counters) if reader else None


def request_acceptance(kind: ServerKind | None, response_fields: Mapping[str, Any] | None,
                       output_tokens: int) -> RequestAcceptance | None:
    """Acceptance of one response from the fields its engine returned (``RequestRecord.server_timings``).

    Args:
        kind: server family; None tries every registered family's reader in order.
        response_fields: the kept per-response entries.
        output_tokens: tokens generated for the request (usage.completion_tokens).
    """
    if not response_fields:
        return None
    readers = [family(kind).request] if kind else [f.request for f in families()]
    for reader in readers:
        r = reader(response_fields, output_tokens) if reader else None
        if r is not None:
            return r
    return None


def response_fields() -> tuple[ResponseField, ...]:
    """The union of the registered families' per-response fields (what the SSE parser keeps).

    Two families declaring the same object are merged: every entry if either keeps
    every entry, else the union of their keys.
    """
    merged: dict[str, tuple[str, ...] | None] = {}
    for f in families():
        for field in f.response_fields:
            if field.obj not in merged:
                merged[field.obj] = field.keys
            elif merged[field.obj] is not None and field.keys is not None:
                merged[field.obj] = tuple(dict.fromkeys((*merged[field.obj], *field.keys)))  # type: ignore[misc]
            else:
                merged[field.obj] = None
    return tuple(ResponseField(obj, keys) for obj, keys in merged.items())


def cached_token_keys() -> tuple[str, ...]:
    """Entries of the kept fields that give a response's cached prompt tokens, in registry order."""
    return tuple(dict.fromkeys(f.cached_tokens_key for f in families() if f.cached_tokens_key))


def kept_histograms() -> tuple[str, ...]:
    """Histogram families whose ``_sum`` / ``_count`` the counter reader keeps as counters."""
    return tuple(dict.fromkeys(h for f in families() for h in f.histograms))


def metrics_paths() -> tuple[str, ...]:
    """The registered Prometheus paths, ``/metrics`` first."""
    return tuple(dict.fromkeys(("/metrics", *(f.metrics_path for f in families()))))


def __getattr__(name: str) -> Any:
    if name == "SERVER_KINDS":  # a tuple that follows the registry
        return server_kinds()
    raise AttributeError(name)


__all__ = ["ResponseField", "ServerFamily", "ServerKind", "cached_token_keys", "check_server_kind",
           "detect_server_kind", "families", "family", "kept_histograms", "metrics_paths", "register",
           "request_acceptance", "response_fields", "server_kinds", "spec_counts", "step_acceptance",
           "unregister"]
