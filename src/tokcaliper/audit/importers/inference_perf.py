"""kubernetes-sigs/inference-perf lifecycle reports: one run per stage file.

``stage_N_lifecycle_metrics.json`` is one stage of a sweep (``load_summary``
states its ``requested_rate``/``achieved_rate``/``send_duration``);
``summary_lifecycle_metrics.json`` aggregates every stage (imported as one run
labelled "all stages": never import it beside its own stage files, or the
requests count twice). **All latencies are in seconds.** Mapping:
``successes.latency.time_to_first_token`` → ``ttft_s``;
``inter_token_latency`` → ``itl_s``; ``time_per_output_token`` → ``tpot_s``;
``request_latency`` → ``e2e_s`` (``median`` → p50; ``p0.1``/``p99.9`` stay in
the file); ``throughput.output_tokens_per_sec`` → aggregate tok/s,
``requests_per_sec`` → req/s; ``successes.count``/``failures.count`` →
completed/failed; wall = completed ÷ requests_per_sec; output tokens =
``output_len.mean`` × completed. The Prometheus summary (no ``successes.latency``) is
server-side, not a client measurement: refused, naming that field.
"""

from __future__ import annotations

import re
from typing import Any

from tokcaliper.audit.importers.base import FieldError
from tokcaliper.audit.importers.runs import PeerRun, Reader, metrics_from, record_from_peer_run
from tokcaliper.model.record import Record


class InferencePerfImporter:
    """An inference-perf lifecycle report (audit record: its headline figures)."""

    name = "inference_perf"

    def detect(self, row: Any) -> bool:
        """True for an object with ``load_summary`` and ``successes.latency``."""
        return detect_document(row)

    def to_record(self, row: dict[str, Any], *, filename: str | None = None) -> Record:
        """The report as a Record (see :func:`~.runs.record_from_peer_run`)."""
        return record_from_peer_run(runs_from_document(row, filename or "<memory>")[0], filename)


def detect_document(doc: Any) -> bool:
    """True for an inference-perf lifecycle report (or its Prometheus summary, refused later)."""
    return isinstance(doc, dict) and isinstance(doc.get("successes"), dict) and "load_summary" in doc


def runs_from_document(doc: dict[str, Any], file: str) -> list[PeerRun]:
    """The report's one run (one stage, or all stages of a summary).

    Raises:
        FieldError: a Prometheus summary (``load_summary`` missing): server-side figures, not a run.
    """
    if "latency" not in doc["successes"]:
        raise FieldError("successes.latency", "missing: this is inference-perf's server-side Prometheus summary "
                                              "(successes.kv_cache_usage_percentage …), not a client measurement; "
                                              "import the lifecycle reports")
    r = Reader()
    s, ls = doc["successes"], doc.get("load_summary") or {}
    lat = s.get("latency") or {}
    tp = s.get("throughput") or doc.get("throughput") or {}
    n = int(r.num(s.get("count"), "successes.count", "completed") or 0)
    failed = int(r.num((doc.get("failures") or {}).get("count"), "failures.count", "failed") or 0)
    rps = r.num(tp.get("requests_per_sec"), "throughput.requests_per_sec", "request_throughput_rps")
    wall = n / rps if rps else None
    if wall:
        r.fields["wall_s"] = "successes.count ÷ throughput.requests_per_sec"
    out_mean = r.num((s.get("output_len") or {}).get("mean"), "successes.output_len.mean")
    in_mean = r.num((s.get("prompt_len") or {}).get("mean"), "successes.prompt_len.mean")

    def dist(name: str, target: str) -> Any:
        return r.dist(lat.get(name), f"successes.latency.{name}", target, 1.0, "s", n=n)

    m = re.search(r"stage_(\d+)", file)
    stage = f"stage {m.group(1)}" if m else ("all stages" if "requested_rate" not in ls else "stage")
    settings = {"requested_rate": ls.get("requested_rate"), "achieved_rate": ls.get("achieved_rate"),
                "rate_rps": ls.get("requested_rate"), "send_duration": ls.get("send_duration"),
                "requests": ls.get("count")}
    return [PeerRun(tool="inference-perf", version=None, format="inference_perf", file=file, benchmark=stage,
                    settings={k: v for k, v in settings.items() if v is not None},
                    metrics=metrics_from(
                        wall_s=wall, completed=n, failed=failed,
                        output_tokens=None if out_mean is None else out_mean * n,
                        prompt_tokens=None if in_mean is None else in_mean * n,
                        aggregate_output_tok_s=r.num(tp.get("output_tokens_per_sec"), "throughput.output_tokens_per_sec",
                                                     "aggregate_output_tok_s"),
                        request_throughput_rps=rps, ttft=dist("time_to_first_token", "ttft_s"),
                        itl=dist("inter_token_latency", "itl_s"), tpot=dist("time_per_output_token", "tpot_s"),
                        e2e=dist("request_latency", "e2e_s")),
                    fields=r.fields,
                    notes=r.notes + ["no tool version in the file"] + (
                        ["summary of every stage: do not import it beside its stage files (requests would "
                         "count twice)"] if stage == "all stages" else []))]
