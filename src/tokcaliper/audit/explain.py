"""``tokcaliper audit --explain CHECK``: what a check does and where its constants come from.

The text is the check module's own docstring (one source of truth for the
formula, thresholds and citations), followed by the live constants.
"""

from __future__ import annotations

import inspect
from types import ModuleType

from tokcaliper.audit import constants, diff, importers
from tokcaliper.audit.checks import (
    a1_acceptance,
    a2_power,
    a3_roofline,
    a4_batch_curve,
    a5_denominator,
    a6_context,
    a10_baseline,
    a11_multiplier,
)
from tokcaliper.audit.facts import gpus, params, quant
from tokcaliper.errors import InputError

_MODULES: dict[str, tuple[str, list[ModuleType]]] = {
    "A1": ("acceptance length ÷ draft window", [a1_acceptance]),
    "A2": ("power ÷ TDP (per GPU)", [a2_power, gpus]),
    "A3": ("roofline (bandwidth ÷ bytes per token)", [a3_roofline, gpus, quant, params]),
    "A4": ("curve drawn by the batch", [a4_batch_curve]),
    "A5": ("what the denominator left out", [a5_denominator]),
    "A6": ("context of the number", [a6_context]),
    "A7": ("comparable or not (tokcaliper diff)", [diff]),
    "A9": ("fetch to disk, then parse (importers)", [importers]),
    "A10": ("baseline carries its conditions", [a10_baseline]),
    "A11": ("mechanism vs multiplier", [a11_multiplier]),
}


def known_checks() -> list[str]:
    """Check codes that have an explanation."""
    return list(_MODULES)


def explain(check: str) -> dict[str, object]:
    """Explanation of one check.

    Returns:
        ``{"check", "title", "text", "constants"}``.

    Raises:
        InputError: unknown check code.
    """
    code = check.strip().upper()
    if code not in _MODULES:
        raise InputError(f"unknown check {check!r}: choose one of {', '.join(_MODULES)}")
    title, mods = _MODULES[code]
    text = "\n\n".join(inspect.cleandoc(m.__doc__ or "") for m in mods)
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
    return {"check": code, "title": title, "text": text, "constants": consts}
