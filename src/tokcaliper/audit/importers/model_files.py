"""Model files given with ``--model-file``: a GGUF header or a Hugging Face ``config.json``.

Only the reading lives here; the parameter arithmetic is pure and sits with
the other model facts (:func:`~tokcaliper.audit.facts.params.params_from_tensors`,
:func:`~tokcaliper.audit.facts.params.params_from_config`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokcaliper.audit.facts.params import ParamFacts, params_from_config, params_from_tensors
from tokcaliper.audit.importers.files import decode_text, os_reason, parse_json, read_raw
from tokcaliper.errors import InputError


def read_model_file(path: Path) -> ParamFacts:
    """Parameters from a GGUF header (``.gguf``, read with the ``gguf`` package) or a ``config.json``.

    GGUF: exact counts from the tensor list and ``{arch}.expert_count`` /
    ``{arch}.expert_used_count``. config.json: approximate transformer count.

    Raises:
        InputError: a missing or unreadable file, a folder, a GGUF header that
            cannot be parsed, or a config.json that is not an object or lacks sizes.
    """
    if not path.exists():
        raise InputError(f"{path}: no such model file")
    if path.is_dir():
        raise InputError(f"{path}: is a directory (give a .gguf file or a config.json)")
    if path.suffix.lower() == ".gguf":
        try:
            from gguf import GGUFReader

            reader = GGUFReader(str(path))
        except OSError as e:
            raise InputError(f"{path}: cannot read ({os_reason(e)})") from None
        except Exception:
            raise InputError(f"{path}: not a readable GGUF file (its header could not be parsed)") from None
        arch = _gguf_field(reader, "general.architecture")
        return params_from_tensors(((t.name, int(t.n_elements)) for t in reader.tensors),
                                   _gguf_field(reader, f"{arch}.expert_count"),
                                   _gguf_field(reader, f"{arch}.expert_used_count"), path.name)
    data = parse_json(decode_text(read_raw(path), path), path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: not a config.json object")
    return params_from_config(data, path.name)


def _gguf_field(reader: Any, key: str) -> Any:
    f = reader.fields.get(key)
    if f is None:
        return None
    try:
        return f.contents()
    except Exception:  # older gguf without contents()
        part = f.parts[f.data[0]]
        return bytes(part).decode() if part.dtype.kind == "u" and part.dtype.itemsize == 1 else part[0]
