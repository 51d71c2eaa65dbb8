"""Which importer reads a row, and the one call that maps a row without raising.

:data:`IMPORTERS` is asked in order; the first whose ``detect`` says yes
maps the row. The order puts the most specific shapes first: a llama-server
response, LocalMaxxing, SGLang bench_serving (before vllm bench: its lines
also have ``output_throughput`` and ``completed``), vllm bench, llama-bench,
AIPerf, GuideLLM, inference-perf, LLMPerf, and our own Record shape last (it
matches any object sharing a Record field name).
"""

from __future__ import annotations

import os
import re
from typing import Any

from pydantic import ValidationError

from tokcaliper.audit.importers.base import FieldError, Importer, Problem, field_error, note, show
from tokcaliper.audit.importers.aiperf import AIPerfImporter
from tokcaliper.audit.importers.generic import NativeImporter
from tokcaliper.audit.importers.guidellm import GuideLLMImporter
from tokcaliper.audit.importers.inference_perf import InferencePerfImporter
from tokcaliper.audit.importers.llama_bench import LlamaBenchImporter
from tokcaliper.audit.importers.llama_server import LlamaServerImporter
from tokcaliper.audit.importers.llmperf import LLMPerfImporter
from tokcaliper.audit.importers.localmaxxing import LocalMaxxingImporter
from tokcaliper.audit.importers.sglang_bench import SGLangImporter
from tokcaliper.audit.importers.vllm_bench import VllmBenchImporter
from tokcaliper.model.record import Record

#: Importers in the order they are asked (first ``detect`` wins).
IMPORTERS: tuple[Importer, ...] = (LlamaServerImporter(), LocalMaxxingImporter(), SGLangImporter(),
                                   VllmBenchImporter(), LlamaBenchImporter(), AIPerfImporter(), GuideLLMImporter(),
                                   InferencePerfImporter(), LLMPerfImporter(), NativeImporter())


def importer_for(row: Any) -> Importer | None:
    """The first importer of :data:`IMPORTERS` that detects ``row``, or None."""
    return next((imp for imp in IMPORTERS if imp.detect(row)), None)


def detect_shape(row: Any) -> str:
    """Name the shape of one row: llama_server, localmaxxing, vllm_bench, llama_bench, native, unknown."""
    imp = importer_for(row)
    return imp.name if imp is not None else "unknown"


def record_from_row(row: Any, *, file: str = "<memory>", index: int | str = 0,
                    context: dict[str, Any] | None = None) -> tuple[Record | None, Problem | None]:
    """Map and validate one row; never raises.

    After mapping, a record without a quantization whose model name carries
    one (``"zai-org/GLM-5-FP8"``) gets it, with the inference noted in
    ``provenance.assumptions`` (:func:`infer_quant_from_name`). ``provenance``
    gets ``file``, ``index`` and ``importer`` (the shape name).

    Args:
        row: one parsed JSON value or CSV row.
        file: the file it came from, as given.
        index: its position in the file.
        context: scalar fields of a ``{"records": [...]}`` document (``source``
            fills ``source_url`` when the record has none).

    Returns:
        ``(record, None)`` or ``(None, problem)`` naming file, index and field
        in plain words (``field tok_s_decode: expected a number, got 'lots'``).
    """
    imp = importer_for(row)
    if imp is None:
        if isinstance(row, dict):
            keys = ", ".join(str(k) for k in list(row)[:6]) or "none"
            return None, Problem(file, index, "", f"not a recognised record shape (keys: {keys})")
        return None, Problem(file, index, "", f"not a record: expected an object, got {show(row)}")
    fname = os.path.basename(file) if file != "<memory>" else None
    try:
        rec = imp.to_record(row, filename=fname)
    except FieldError as e:
        return None, Problem(file, index, e.field, str(e))
    except ValidationError as e:  # an importer that validated without a RecordBuilder
        fe = field_error(e)
        return None, Problem(file, index, fe.field, str(fe))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        return None, Problem(file, index, "", f"could not read this {imp.name.replace('_', ' ')} record: a field "
                             "has an unexpected type or is missing")
    prov = dict(rec.provenance)
    prov.update({"file": file, "index": index, "importer": imp.name})
    if context and context.get("source") and not rec.source_url:
        rec.source_url = str(context["source"])
        prov["source_fields"] = {**prov.get("source_fields", {}), "source_url": "source (of the file)"}
    rec.provenance = prov
    infer_quant_from_name(rec)
    return rec, None


def infer_quant_from_name(rec: Record) -> None:
    """Fill ``quantization.weights`` from a format named in the model name (``GLM-5-FP8`` → FP8).

    Only when the record gives no quantization and the name holds exactly one
    known format as a whole token (split on ``/ - _ .`` and spaces, K-quant
    names such as ``Q4_K_M`` kept whole). Two different formats → nothing
    inferred (ambiguous). The inference is recorded in the assumptions.
    """
    if rec.quantization.weights or rec.quantization.bytes_per_param or not rec.model.name:
        return
    from tokcaliper.audit.facts.quant import bits_per_weight

    name = rec.model.name.upper()
    found: dict[str, str] = {}
    for m in re.finditer(r"(?<![A-Z0-9])(I?Q\d_K(?:_[A-Z]+)?|IQ\d_[A-Z]+|Q\d_\d)(?![A-Z0-9])", name):
        q = bits_per_weight(m.group(1))
        if q:
            found[q.matched] = m.group(1)
    for tok in re.split(r"[\s/\-_.]+", name):
        if tok and not re.fullmatch(r"\d+B?", tok) and tok not in ("K", "S", "M", "L", "XL"):
            q = bits_per_weight(tok)
            if q is not None and q.confident:
                found.setdefault(q.matched, tok)
    if len(found) != 1:
        return
    matched, _ = next(iter(found.items()))
    rec.quantization.weights = matched
    note(rec, f"quantization {matched} inferred from the model name {rec.model.name!r} (none was given)",
         {"quantization.weights": "model.name"})
