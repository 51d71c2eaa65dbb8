"""Launch settings that make acceptance an input rather than a measurement (METHODS.md A1).

Engines ship test knobs that *set* the acceptance of speculative decoding so
that throughput can be benchmarked without a real draft: a number measured
under them says how fast the engine is at the acceptance someone typed in, not
what acceptance the drafter achieves. Recognised here, in launch commands,
environment strings (``NAME=value`` lists, ``export NAME=value``) and notes:

* llama.cpp: ``--spec-synth-len`` / ``--spec-synth-rates`` and their
  environment forms ``LLAMA_ARG_SPEC_SYNTH_LEN`` / ``LLAMA_ARG_SPEC_SYNTH_RATES``
  (every llama.cpp option has an ``LLAMA_ARG_…`` form);
* SGLang: ``SGLANG_SIMULATE_ACC_LEN`` (with ``SGLANG_SIMULATE_ACC_METHOD``);
* vLLM: the synthetic rejection sampler in ``--speculative-config``:
  ``"rejection_sample_method": "synthetic"`` with ``synthetic_acceptance_length``
  or ``synthetic_acceptance_rate`` (vLLM spec-decode config, a testing tool);
* TensorRT-LLM: ``TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS`` (accepted *draft*
  tokens per step, so AL = value + 1);
* ATOM: ``--spec-decode-acceptance-length``.

Pure string matching; never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ForcedAcceptance", "find_forced_acceptance"]


@dataclass(frozen=True)
class ForcedAcceptance:
    """One setting found.

    Attributes:
        setting: the flag or variable name as written. value: its value (text) or None.
        engine: llama.cpp / SGLang / vLLM / TensorRT-LLM / ATOM.
        where: which text it was found in (``launch command``, ``environment``, ``notes``).
        implied_al: the acceptance length the value sets, where it is one number.
    """

    setting: str
    value: str | None
    engine: str
    where: str
    implied_al: float | None = None

    def describe(self) -> str:
        """``"SGLANG_SIMULATE_ACC_LEN=3.2 in the launch command"``."""
        v = f"={self.value}" if self.value is not None else ""
        return f"{self.engine} {self.setting}{v} in the {self.where}"


_VALUE = r"""(?:\s*[=:]\s*|\s+)["']?([^\s"',}]+)"""
# (regex, engine, how the value maps to AL: "al", "al-1" (accepted drafts), None)
_PATTERNS: tuple[tuple[re.Pattern[str], str, str | None], ...] = (
    (re.compile(r"(--spec-synth-len)\b" + _VALUE), "llama.cpp", "al"),
    (re.compile(r"(--spec-synth-rates)\b" + _VALUE), "llama.cpp", None),
    (re.compile(r"\b(LLAMA_ARG_SPEC_SYNTH_LEN)\b" + _VALUE), "llama.cpp", "al"),
    (re.compile(r"\b(LLAMA_ARG_SPEC_SYNTH_RATES)\b" + _VALUE), "llama.cpp", None),
    (re.compile(r"\b(SGLANG_SIMULATE_ACC_LEN)\b" + _VALUE), "SGLang", "al"),
    (re.compile(r"""["']?\b(synthetic_acceptance_length)\b["']?""" + _VALUE), "vLLM", "al"),
    (re.compile(r"""["']?\b(synthetic_acceptance_rate)\b["']?""" + _VALUE), "vLLM", None),
    (re.compile(r"""["']?\b(rejection_sample_method)\b["']?\s*[=:]\s*["']?(synthetic)\b"""), "vLLM", None),
    (re.compile(r"\b(TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS)\b" + _VALUE), "TensorRT-LLM", "al-1"),
    (re.compile(r"(--spec-decode-acceptance-length)\b" + _VALUE), "ATOM", "al"),
)


def _al(value: str | None, how: str | None) -> float | None:
    if value is None or how is None:
        return None
    try:
        v = float(value)
    except ValueError:
        return None
    return v + 1 if how == "al-1" else v


def find_forced_acceptance(texts: dict[str, str | None]) -> list[ForcedAcceptance]:
    """Every forced-acceptance setting in ``texts``.

    Args:
        texts: ``{where: text}``, e.g. ``{"launch command": cmd, "environment": env, "notes": notes}``;
            None values are skipped.

    Returns:
        The settings found, in pattern order per text (a setting named twice in one text counts once).
    """
    out: list[ForcedAcceptance] = []
    for where, text in texts.items():
        if not text:
            continue
        seen: set[str] = set()
        for pat, engine, how in _PATTERNS:
            for m in pat.finditer(text):
                name = m.group(1)
                if name in seen:
                    continue
                seen.add(name)
                value = m.group(2) if m.lastindex and m.lastindex >= 2 else None
                out.append(ForcedAcceptance(name, value, engine, where, _al(value, how)))
    return out
