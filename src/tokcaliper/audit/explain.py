"""``tokcaliper audit --explain CHECK``: what a check does and where its constants come from.

The text is the check module's own docstring (one source of truth for the
formula, thresholds and citations), followed by a pointer to the method's
section in ``docs/METHODS.md`` (its meaning, reference figures and source
write-up) and the live constants.
"""

from __future__ import annotations

import inspect
from types import ModuleType

from tokcaliper.audit import constants, diff, importers
from tokcaliper.audit.checks import RECORD_CHECKS, a2_power, a3_roofline, a4_batch_curve
from tokcaliper.audit.facts import gpus, params, quant
from tokcaliper.errors import InputError

#: Fact modules whose docstrings also explain a check's constants.
_FACTS: dict[ModuleType, list[ModuleType]] = {a2_power: [gpus], a3_roofline: [gpus, quant, params]}

#: Check code → (title, modules whose docstrings explain it). Titles and codes
#: come from the check modules themselves (one source of truth).
_MODULES: dict[str, tuple[str, list[ModuleType]]] = {
    m.CHECK: (m.TITLE, [m, *_FACTS.get(m, [])]) for m in (*RECORD_CHECKS, a4_batch_curve)
}
_MODULES["A7"] = ("comparable or not (tokcaliper diff)", [diff])
_MODULES["A9"] = ("fetch to disk, then parse (importers)", [importers])
_MODULES = dict(sorted(_MODULES.items(), key=lambda kv: int(kv[0][1:])))

#: The repository's description of the methods, by section code (A1 … A11).
METHODS_DOC = "docs/METHODS.md"


def known_checks() -> list[str]:
    """Check codes that have an explanation."""
    return list(_MODULES)


def explain(check: str) -> dict[str, object]:
    """Explanation of one check.

    Returns:
        ``{"check", "title", "text", "method", "constants"}``; ``method`` names
        the section of ``docs/METHODS.md`` (e.g. ``"docs/METHODS.md A3"``),
        which the text's last line also cites.

    Raises:
        InputError: unknown check code.
    """
    code = check.strip().upper()
    if code not in _MODULES:
        raise InputError(f"unknown check {check!r}: choose one of {', '.join(_MODULES)}")
    title, mods = _MODULES[code]
    method = f"{METHODS_DOC} {code}"
    text = "\n\n".join([*(inspect.cleandoc(m.__doc__ or "") for m in mods),
                        f"Method, reference figures and source write-up: {method}."])
    consts = {k: v for k, v in vars(constants).items() if k.isupper() and k.startswith(("A" + code[1:] + "_",))}
    if code in ("A1", "A3", "A11"):
        consts.update({k: getattr(constants, k) for k in ("REALISTIC_AL", "DFLASH_PUBLISHED_AL",
                                                          "PUBLISHED_MAX_ACCEPT_P", "SPEC_SPEEDUP_RANGE")})
    if code in ("A2", "A3"):
        consts["CURATED_GPUS"] = {g.name: {"bandwidth_gb_s": g.bandwidth_gb_s, "tdp_w": g.tdp_w, "source": g.source}
                                  for g in gpus.CURATED}
    if code == "A3":
        consts["KQUANT_MIX_BITS"] = quant.KQUANT_MIX_BITS
        consts["OTHER_FORMATS"] = {k: {"bits": b, "source": s} for k, (b, s) in quant.OTHER_FORMATS.items()}
    return {"check": code, "title": title, "text": text, "method": method, "constants": consts}
