"""Speculative decoding: acceptance metrics, the draft-window table, red flags (METHODS.md M6–M8, A1).

- :mod:`.metrics` — AL, acceptance rate, per-position acceptance, k_eff and
  AL/(k+1) from counter differences; per-request acceptance (pure).
- :mod:`.table` — the per-k table: AL/(k+1), best k by each, "not the best buy" (pure).
- :mod:`.red_flags` — accepted == drafted / AL = k + 1, shared with audit check A1 (pure).
- :mod:`.table_file` — read published AL-per-k tables (CSV, JSON, YAML): ``spec table``'s result.
- :mod:`.log_file` — acceptance summed over a vLLM log's "SpecDecoding metrics" lines: ``spec log``'s result.
- :mod:`.runs` — acceptance of stored runs and across repetitions (mean, CV, MDE).

Server-family readers live in the registry :mod:`tokcaliper.model.families`.
"""

from tokcaliper.model.specdec import (
    COST_PROXY,
    DEFINITIONS,
    LIMIT,
    AcceptanceMetrics,
    RequestAcceptance,
    SpecCounts,
    acceptance_metrics,
    definitions_text,
    pooled_request_acceptance,
    request_acceptance,
)
from tokcaliper.model.specdec_flags import PREDICTABLE, RedFlag, predictable_by_construction
from tokcaliper.specdec.table import NOT_BEST_BUY, KInput, KRow, WindowTable, window_table

__all__ = [
    "COST_PROXY",
    "DEFINITIONS",
    "LIMIT",
    "NOT_BEST_BUY",
    "PREDICTABLE",
    "AcceptanceMetrics",
    "KInput",
    "KRow",
    "RedFlag",
    "RequestAcceptance",
    "SpecCounts",
    "WindowTable",
    "acceptance_metrics",
    "definitions_text",
    "pooled_request_acceptance",
    "predictable_by_construction",
    "request_acceptance",
    "window_table",
]
