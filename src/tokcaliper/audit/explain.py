"""``tokcaliper audit --explain CHECK``: what a check does and where its constants come from.

The text is written for a reader of the audit (:data:`USER_TEXT`: what the
check asks, when it fails, what to give when it is n/a), followed by a pointer
to the method's section in ``docs/METHODS.md`` and the live constants; the
check module's own docstring (one source of truth for the formula, thresholds
and citations) is ``detail`` in ``--json``.
"""

from __future__ import annotations

import inspect
from types import ModuleType

from pydantic import BaseModel, JsonValue

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

#: What each check asks of a published number, in plain words for a reader of the audit:
#: what passes, what warns or fails, and what to give when it says n/a. The formulas,
#: thresholds and citations stay in the check modules' docstrings (``detail`` in --json)
#: and in docs/METHODS.md.
USER_TEXT: dict[str, str] = {
    "A1": ("Speculative decoding drafts k tokens and the model keeps some of them; the acceptance "
           "length AL (tokens per verification step, counting the one the model adds) cannot exceed "
           "k + 1, and real drafters keep far fewer (AL about 3-6 for a good draft model). An AL at "
           "k or k + 1 means the output was predictable by construction (copying, repetition), so "
           "the speed-up says nothing about real text: fail. n/a when the record does not use "
           "speculative decoding or gives no AL or counts."),
    "A2": ("Power readings against the GPU's rated power (TDP). A GPU doing heavy decode draws a "
           "large share of its TDP; a claimed speed-up at a small share of it (say 100 W on a "
           "575 W card) means the GPU was mostly idle, which fits a number read from a cache "
           "better than real work: warn or fail. n/a when no power is published, or the GPU is "
           "unknown (then the audit lists it under 'Not checked' with the nearest known names)."),
    "A3": ("At batch 1 every generated token reads all the weights (mixture-of-experts models: "
           "the active ones) from GPU memory, so tokens per second cannot beat memory bandwidth "
           "divided by the bytes of weights. A claim above that roofline is impossible: fail; "
           "close to it, or with uncertain inputs: warn. Speculative decoding raises the bound by "
           "a realistic acceptance length. n/a when the GPU or the model's size is unknown: give "
           "the full GPU name (nvidia-smi's is fine) or --bandwidth, and model.params_total or "
           "--model-file."),
    "A4": ("Records of one group (same model, GPU and settings) should draw the curve physics "
           "draws: throughput rising with batch size while per-stream speed falls. A batch whose "
           "numbers run the other way was probably not measured the way it says: warn or fail. "
           "n/a with fewer than 3 rated records in the group."),
    "A5": ("A rate is tokens divided by seconds: which tokens and which seconds? Without time to "
           "first token the prefill cost is hidden; without the token count and the seconds the "
           "rate cannot be re-derived. warn when the record leaves them out."),
    "A6": ("The context a number needs to mean something: batch or concurrency, the launch "
           "command, the engine and its version. A single-stream figure says nothing about "
           "serving many users; an unpublished or forked engine version cannot be reproduced: warn."),
    "A7": ("tokcaliper diff: two records are comparable only when every knob that changes speed "
           "(GPU, quantisation, engine version, batch, context, speculative settings …) is the "
           "same; otherwise the ratio mixes the knobs, and diff exits 11."),
    "A9": ("audit URL first saves what it downloads to a file, then parses that file like any "
           "other, so the audit can be repeated on exactly the bytes it read."),
    "A10": ("A baseline ('×3 faster than normal decode') must carry its own conditions: the same "
            "model, GPU, batch and settings. A baseline without them cannot anchor a multiplier: warn."),
    "A11": ("A speed-up multiplier must fit its mechanism: speculative decoding gives about 2-5× "
            "at most with a real draft model; a larger multiplier needs an explanation the record "
            "does not give: warn or fail."),
}


def known_checks() -> list[str]:
    """Check codes that have an explanation."""
    return list(_MODULES)


class CheckExplanation(BaseModel):
    """``tokcaliper audit --explain CHECK``: what a check does and its constants.

    Attributes:
        check: the code (``"A3"``). title: its name. text: what it does, for users.
        method: the section of ``docs/METHODS.md`` (e.g. ``"docs/METHODS.md A3"``),
            which the text's last line also cites.
        constants: the check's constants by name (numbers, tables of GPUs and formats).
        detail: the modules' docstrings (formulas, thresholds, sources).
    """

    check: str
    title: str
    text: str
    method: str
    constants: dict[str, JsonValue]
    detail: str


def explain(check: str) -> CheckExplanation:
    """Explanation of one check (:class:`CheckExplanation`).

    Raises:
        InputError: unknown check code.
    """
    code = check.strip().upper()
    if code not in _MODULES:
        raise InputError(f"unknown check {check!r}: choose one of {', '.join(_MODULES)}")
    title, mods = _MODULES[code]
    method = f"{METHODS_DOC} {code}"
    detail = "\n\n".join(inspect.cleandoc(m.__doc__ or "") for m in mods)
    text = (USER_TEXT.get(code, inspect.cleandoc(mods[0].__doc__ or "").split("\n\n")[0])
            + f"\n\nThe formula, its thresholds, reference figures and sources: {method} "
              "(and 'detail' in --json).")
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
    return CheckExplanation(check=code, title=title, text=text, method=method,
                            constants={k: _plain_json(v) for k, v in consts.items()}, detail=detail)


def _plain_json(v: object) -> object:
    """A constant as JSON data: tuples (ranges like ``(2.7, 4.6)``) become lists, recursively."""
    if isinstance(v, (tuple, list)):
        return [_plain_json(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain_json(x) for k, x in v.items()}
    return v
