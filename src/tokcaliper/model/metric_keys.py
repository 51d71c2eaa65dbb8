"""The flat key of one Prometheus sample, ``name`` or ``name{a="1",b="2"}`` (pure string functions).

Counter snapshots and their differences (``Run.counters_delta``) are stored as
``{sample_key: value}``; every reader of them (the server families, the
prefix-cache figure, the counter reader itself) goes through these three.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def sample_key(name: str, labels: Mapping[str, str]) -> str:
    """The flat key of one sample: ``name`` or ``name{a="1",b="2"}`` (labels sorted; ``\\`` and ``"`` escaped)."""
    if not labels:
        return name

    def esc(v: str) -> str:
        return v.replace("\\", "\\\\").replace('"', '\\"')
    return name + "{" + ",".join(f'{k}="{esc(v)}"' for k, v in sorted(labels.items())) + "}"


def split_key(key: str) -> tuple[str, dict[str, str]]:
    """Inverse of :func:`sample_key`: ``'a{x="1"}'`` → ``("a", {"x": "1"})``."""
    if "{" not in key or not key.endswith("}"):
        return key, {}
    name, _, rest = key.partition("{")
    return name, {k: re.sub(r"\\(.)", r"\1", v) for k, v in _LABEL.findall(rest[:-1])}


def metric_name(key: str) -> str:
    """The metric name of a sample key (``'a{x="1"}'`` → ``"a"``)."""
    return key.partition("{")[0]


def total(values: Mapping[str, float], name: str) -> float | None:
    """Sum of every sample of metric ``name`` over its label sets (None when it has none)."""
    found = [v for k, v in values.items() if metric_name(k) == name]
    return sum(found) if found else None
