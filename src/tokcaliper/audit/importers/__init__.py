"""Importers: other tools' result files → validated :class:`~tokcaliper.model.record.Record` s (METHODS.md A9).

The only audit package that reads files: one home for "reading someone
else's numbers". Raw bytes are read first and parsed from the bytes (A9:
fetch to disk, then parse; never a shell round-trip). JSON is parsed with
``strict=False`` so control characters inside strings (notes fields) are
kept and never break parsing.

Inputs (:mod:`.files`): a ``.json`` file (one record, a list, or
``{"records": [...]}``), ``.jsonl`` (one record per line), ``.csv`` (one
record per row; dotted column names such as ``model.name`` for nested
fields), or a folder of such files.

Row shapes, one module each behind one interface (:class:`.base.Importer`:
``detect(row)``, ``to_record(row)``, and the source field of every value in
``provenance["source_fields"]``), asked in this order (:mod:`.dispatch`):

* :mod:`.llama_server` — a llama-server ``/v1/chat/completions`` response with ``timings``;
* :mod:`.localmaxxing` — LocalMaxxing snapshot rows (``hfId``, ``observedTokS`` …)
  and live rows (``model{hfId,…}``, ``tokSOut`` …);
* :mod:`.vllm_bench` — ``vllm bench serve --save-result`` JSON (milliseconds under
  ``*_ms`` names; seconds under unit-less names from derived clients);
* :mod:`.llama_bench` — ``llama-bench -o json`` rows;
* :mod:`.generic` — this package's own Record shape.

Errors: a file that cannot be read or parsed at all raises
:class:`~tokcaliper.errors.InputError` naming the file; a malformed record is
a :class:`.base.Problem` naming file, record index and field path
(``records.csv: record 3: field tok_s_decode: expected a number, got 'lots'``)
and is skipped; the others are returned. Model files for ``--model-file``
(GGUF header, ``config.json``) are read by :mod:`.model_files`.
"""

from tokcaliper.audit.importers.base import (
    FieldError,
    Importer,
    ImportResult,
    Problem,
    RecordBuilder,
    describe_error,
)
from tokcaliper.audit.importers.dispatch import IMPORTERS, detect_shape, importer_for, record_from_row
from tokcaliper.audit.importers.files import (
    DEFAULT_MAX_BYTES,
    check_max_bytes,
    human_bytes,
    load_records,
    parse_record_ref,
    read_raw,
)
from tokcaliper.audit.importers.generic import record_from_native
from tokcaliper.audit.importers.llama_bench import record_from_llama_bench
from tokcaliper.audit.importers.llama_server import record_from_llama_server_response
from tokcaliper.audit.importers.localmaxxing import record_from_localmaxxing
from tokcaliper.audit.importers.model_files import read_model_file
from tokcaliper.audit.importers.vllm_bench import record_from_vllm_bench

__all__ = [
    "DEFAULT_MAX_BYTES",
    "IMPORTERS",
    "FieldError",
    "ImportResult",
    "Importer",
    "Problem",
    "RecordBuilder",
    "check_max_bytes",
    "describe_error",
    "detect_shape",
    "human_bytes",
    "importer_for",
    "load_records",
    "parse_record_ref",
    "read_model_file",
    "read_raw",
    "record_from_llama_bench",
    "record_from_llama_server_response",
    "record_from_localmaxxing",
    "record_from_native",
    "record_from_row",
    "record_from_vllm_bench",
]
