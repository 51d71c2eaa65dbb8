"""Helpers for the audit tests: build records from the seed cases in tests/data/."""

from __future__ import annotations

from pathlib import Path


from tokcaliper.model.record import Record

REPO = Path(__file__).resolve().parents[2]
#: Reference data in the repository, with provenance (tests/data/README.md).
REFERENCE_DATA = REPO / "tests" / "data"
PUBLIC = REFERENCE_DATA / "public"


def claim_record(c: dict) -> Record:
    """The seed-003 ``audit_claim`` case as a Record (fields copied, no results)."""
    spec = c["speculative"]
    return Record.model_validate({
        "model": {"name": c["model"], "params_total": c["params"], "is_moe": False if "dense" in c["model"] else None},
        "hardware": {"gpu_name": "RTX 5090", "gpu_count": 1},
        "quantization": {"weights": c["quantization"], "bytes_per_param": c["bytes_per_param"]},
        "batch_size": c["batch"],
        "output_tokens": c["output_tokens"],
        "seconds": c["seconds"],
        "tok_s_decode": c["claimed_tok_s"],
        "ttft_ms": c["ttft"],
        "power_w": c["power_w"],
        "notes": c["notes"],
        "speculative": {"method": spec["method"], "window_k": spec["num_draft_tokens"],
                        "block_size": spec["block_size"], "al": spec["acceptance_length"]},
    })
