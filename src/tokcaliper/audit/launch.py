"""Knobs read from a published launch command (llama.cpp, vLLM, SGLang flags).

Pure string parsing (no files, no processes). Used by importers to fill
record fields a source left out, and by ``diff`` (A7) to list every knob.
Only flags whose meaning is documented by the engine are read:
llama.cpp ``tools/server/README.md`` (``-c``, ``-ctk``/``-ctv``, ``-sm``,
``-ts``, ``-ngl``, ``--cache-reuse``, ``-md``, ``--draft-max``, ``--spec-*``,
``-np``, ``--temp``, ``-ot``/``--n-cpu-moe``) and vLLM ``vllm serve --help``
(``--max-model-len``, ``--kv-cache-dtype``, ``-tp``/``-pp``,
``--enable-prefix-caching``, ``--speculative-config``, ``--max-num-seqs``).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any


@dataclass
class LaunchKnobs:
    """Settings found in a launch command; None when the command does not say.

    Attributes:
        context_length: ``-c``/``--ctx-size``/``--max-model-len``.
        kv_cache_k, kv_cache_v: KV-cache dtypes (``-ctk``/``-ctv``, ``--kv-cache-dtype``).
        prefix_cache: True/False when a flag turns it on/off.
        split_mode: ``layer``/``row``/``tensor``/``pipeline``/``none``.
        tensor_parallel, pipeline_parallel: vLLM/SGLang parallel sizes.
        tensor_split: llama.cpp ``-ts`` string.
        offload: a flag that keeps weights in host memory (``-ot …=CPU``, ``--n-cpu-moe``,
            ``--cpu-offload-gb``). ``-ngl N`` is not one: whether N layers are all of them needs the
            model's layer count, which :func:`tokcaliper.audit.memory.placement` has.
        spec_method, draft_max, draft_model: speculative decoding settings.
        parallel_slots: llama.cpp ``-np`` / vLLM ``--max-num-seqs``.
        temperature: ``--temp``/``--temperature``.
        gpu_layers: llama.cpp ``-ngl``/``--n-gpu-layers``/``--gpu-layers`` as written (``"99"``, ``"all"``).
        cpu_offload_gb: vLLM/SGLang ``--cpu-offload-gb``.
        model_path: ``-m``/``--model`` (llama.cpp) or the ``vllm serve MODEL`` argument.
        env: ``NAME=value`` assignments before the program (``LLAMA_ARG_…=…``).
        flags_seen: every flag name in the command, in order.
    """

    context_length: int | None = None
    kv_cache_k: str | None = None
    kv_cache_v: str | None = None
    prefix_cache: bool | None = None
    split_mode: str | None = None
    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    tensor_split: str | None = None
    offload: str | None = None
    spec_method: str | None = None
    draft_max: int | None = None
    draft_model: str | None = None
    parallel_slots: int | None = None
    temperature: float | None = None
    gpu_layers: str | None = None
    cpu_offload_gb: float | None = None
    model_path: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    flags_seen: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Plain dict (for JSON)."""
        return asdict(self)


def _int(v: str | None) -> int | None:
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return None


def _float(v: str | None) -> float | None:
    try:
        return float(str(v).strip())
    except (TypeError, ValueError):
        return None


_WORD = re.compile(r"""(?:[^\s'"\\]+|'[^']*'|"(?:\\.|[^"\\])*"|\\.)+""")


def _unquote(word: str) -> str:
    out, i = [], 0
    for m in re.finditer(r"""'([^']*)'|"((?:\\.|[^"\\])*)"|\\(.)|([^'"\\]+)""", word):
        out.append(m.group(1) if m.group(1) is not None else
                   re.sub(r"\\(.)", r"\1", m.group(2)) if m.group(2) is not None else
                   m.group(3) if m.group(3) is not None else m.group(4))
    return "".join(out)


def _tokens(cmd: str) -> list[str]:
    """POSIX-shell-like word splitting (quotes, backslashes), fast and never raising."""
    return [_unquote(w) for w in _WORD.findall(cmd.replace("\\\n", " "))]


def parse_launch(cmd: str | list[str] | None) -> LaunchKnobs:
    """Parse a launch command (cached for strings; treat the result as read-only)."""
    if isinstance(cmd, str):
        return _parse_cached(cmd)
    return _parse(cmd)


@lru_cache(maxsize=4096)
def _parse_cached(cmd: str) -> LaunchKnobs:
    return _parse(cmd)


def _parse(cmd: str | list[str] | None) -> LaunchKnobs:
    """Parse a launch command into :class:`LaunchKnobs`.

    Args:
        cmd: the command as one string (shell quoting honoured) or argv list.

    Returns:
        The knobs found; never raises (unparseable parts are ignored).
    """
    k = LaunchKnobs()
    if not cmd:
        return k
    argv = list(cmd) if isinstance(cmd, list) else _tokens(cmd)
    while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
        name, _, value = argv.pop(0).partition("=")
        k.env[name] = value
    if argv and argv[0] == "env":
        argv.pop(0)
        while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
            name, _, value = argv.pop(0).partition("=")
            k.env[name] = value
    vals: dict[str, str | None] = {}
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok.startswith("-") and not _is_number(tok):
            name, eq, inline = tok.partition("=")
            k.flags_seen.append(name)
            if eq:
                vals[name] = inline
            elif i + 1 < len(argv) and not (argv[i + 1].startswith("-") and not _is_number(argv[i + 1])):
                vals[name] = argv[i + 1]
                i += 1
            else:
                vals[name] = None
        i += 1

    def get(*names: str) -> str | None:
        for n in names:
            if n in vals and vals[n] is not None:
                return vals[n]
        return None

    def has(*names: str) -> bool:
        return any(n in vals for n in names)

    k.context_length = _int(get("-c", "--ctx-size", "--max-model-len", "--context-length"))
    k.kv_cache_k = get("-ctk", "--cache-type-k", "--kv-cache-dtype")
    k.kv_cache_v = get("-ctv", "--cache-type-v", "--kv-cache-dtype")
    if has("--cache-reuse") and (_int(get("--cache-reuse")) or 0) > 0:
        k.prefix_cache = True
    if has("--enable-prefix-caching"):
        k.prefix_cache = True
    if has("--no-enable-prefix-caching", "--no-cache-prompt", "--disable-radix-cache"):
        k.prefix_cache = False
    k.tensor_parallel = _int(get("-tp", "--tensor-parallel-size", "--tp", "--tp-size"))
    k.pipeline_parallel = _int(get("-pp", "--pipeline-parallel-size", "--pp", "--pp-size"))
    k.tensor_split = get("-ts", "--tensor-split")
    sm = get("-sm", "--split-mode")
    if sm:
        k.split_mode = sm.lower()
    elif k.tensor_parallel and k.tensor_parallel > 1:
        k.split_mode = "tensor"
    elif k.pipeline_parallel and k.pipeline_parallel > 1:
        k.split_mode = "pipeline"
    ot = get("-ot", "--override-tensor")
    if ot and "cpu" in ot.lower():
        k.offload = f"-ot {ot}"
    elif has("--n-cpu-moe", "-ncmoe", "--cpu-moe", "-cmoe", "--cpu-offload-gb"):
        k.offload = "expert/weight offload to CPU flag"
    k.gpu_layers = get("-ngl", "--gpu-layers", "--n-gpu-layers")
    k.cpu_offload_gb = _float(get("--cpu-offload-gb"))
    if k.cpu_offload_gb:
        k.offload = f"--cpu-offload-gb {get('--cpu-offload-gb')}"
    k.model_path = get("-m", "--model", "--model-path")
    if k.model_path is None:
        for j, tok in enumerate(argv[:-1]):
            if tok == "serve" and not argv[j + 1].startswith("-"):
                k.model_path = argv[j + 1]
                break
    k.draft_model = get("-md", "--model-draft")
    k.draft_max = _int(get("--draft-max", "--draft", "--draft-n", "--spec-draft-n-max",
                           "--speculative-num-draft-tokens", "--num-speculative-tokens"))
    spec_type = get("--spec-type", "--speculative-algorithm", "--speculative-algo")
    spec_cfg = get("--speculative-config", "--speculative_config")
    if spec_cfg:
        try:
            cfg = json.loads(spec_cfg)
            spec_type = spec_type or cfg.get("method") or ("draft-model" if cfg.get("model") else None)
            k.draft_max = k.draft_max or _int(cfg.get("num_speculative_tokens"))
            k.draft_model = k.draft_model or cfg.get("model")
        except (ValueError, AttributeError):
            spec_type = spec_type or "speculative-config (unparsed)"
    if spec_type:
        k.spec_method = spec_type
    elif k.draft_model:
        k.spec_method = "draft-model"
    k.parallel_slots = _int(get("-np", "--parallel", "--max-num-seqs"))
    k.temperature = _float(get("--temp", "--temperature"))
    return k


def _is_number(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False
