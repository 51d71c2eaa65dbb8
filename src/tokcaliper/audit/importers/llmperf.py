"""LLMPerf (ray-project/llmperf): ``*_summary.json`` and ``*_individual_responses.json``.

**All times are in seconds.** Summary: ``results_<metric>_{mean,quantiles_p50,
quantiles_p90,quantiles_p99,…}`` for ``ttft_s`` → ``ttft_s``,
``inter_token_latency_s`` (per request: mean gap, counted over *all* output
tokens including the first) → ``tpot_s``, ``end_to_end_latency_s`` →
``e2e_s``, ``request_output_throughput_token_per_s`` (output tokens ÷ E2E per
request, TTFT included) → per-stream decode mean/median;
``results_mean_output_throughput_token_per_s`` → aggregate tok/s;
``results_num_completed_requests``/``results_number_errors`` →
completed/failed; wall = completed ÷ (``results_num_completed_requests_per_min`` ÷ 60).
Settings: ``model``, ``num_concurrent_requests``, ``mean_input_tokens``,
``mean_output_tokens``, ``version`` (a date). The individual responses (a list)
become per-request samples; they carry no start times (``start_s`` = 0).
"""

from __future__ import annotations

from typing import Any

from tokcaliper.audit.importers.base import FieldError
from tokcaliper.audit.importers.runs import PeerRun, Reader, Summarize, metrics_from, record_from_peer_run
from tokcaliper.model.record import Record
from tokcaliper.model.run import Percentiles, RequestRecord


class LLMPerfImporter:
    """An LLMPerf summary document (audit record: its headline figures)."""

    name = "llmperf"

    def detect(self, row: Any) -> bool:
        """True for an object with ``results_ttft_s_mean`` or ``results_num_completed_requests``."""
        return detect_summary(row)

    def to_record(self, row: dict[str, Any], *, filename: str | None = None) -> Record:
        """The summary as a Record (see :func:`~.runs.record_from_peer_run`)."""
        return record_from_peer_run(runs_from_summary(row, filename or "<memory>")[0], filename)


def detect_summary(doc: Any) -> bool:
    """True for an LLMPerf summary."""
    return isinstance(doc, dict) and ("results_ttft_s_mean" in doc or "results_num_completed_requests" in doc)


def detect_individual(doc: Any) -> bool:
    """True for LLMPerf's individual responses (a list of per-request objects)."""
    return isinstance(doc, list) and bool(doc) and isinstance(doc[0], dict) and "ttft_s" in doc[0] and \
        "end_to_end_latency_s" in doc[0]


def requests_from_individual(rows: list[Any], file: str, r: Reader) -> tuple[list[RequestRecord], list[str]]:
    """Per-request samples; a record that cannot be read is skipped and listed."""
    out, skipped = [], []
    for i, x in enumerate(rows):
        try:
            if not isinstance(x, dict):
                raise FieldError("(record)", "not an object")
            err = x.get("error_code")
            out.append(RequestRecord(
                index=i, start_s=0.0, ttft_s=r.num(x.get("ttft_s"), f"[{i}].ttft_s"),
                e2e_s=r.num(x.get("end_to_end_latency_s"), f"[{i}].end_to_end_latency_s"),
                output_tokens=int(r.num(x.get("number_output_tokens"), f"[{i}].number_output_tokens") or 0),
                prompt_tokens=x.get("number_input_tokens") if isinstance(x.get("number_input_tokens"), int) else None,
                token_count_source="usage",
                error=None if err is None else f"{err}: {x.get('error_msg') or ''}".strip(),
                error_class=None if err is None else "http_status"))
        except FieldError as e:
            skipped.append(f"{file}: record {i}: field {e.field}: {e}")
    return out, skipped


def runs_from_summary(doc: dict[str, Any], file: str, samples: list[RequestRecord] | None = None,
                      sample_note: str | None = None) -> list[PeerRun]:
    """The summary's one run (with ``samples`` from its individual responses)."""
    r = Reader()
    n = int(r.num(doc.get("results_num_completed_requests"), "results_num_completed_requests", "completed") or 0)

    def dist(metric: str, target: str) -> Percentiles:
        keys = {"mean": f"results_{metric}_mean", "p50": f"results_{metric}_quantiles_p50",
                "p90": f"results_{metric}_quantiles_p90", "p99": f"results_{metric}_quantiles_p99"}
        d = {k: doc.get(v) for k, v in keys.items() if v in doc}
        p = r.dist(d, f"results_{metric}", target, 1.0, "s", keys={k: k for k in d}, n=n)
        for k in d:
            if f"{target}.{k}" in r.fields:
                r.fields[f"{target}.{k}"] = f"{keys[k]} (s)"
        return p

    per_min = r.num(doc.get("results_num_completed_requests_per_min"), "results_num_completed_requests_per_min")
    wall = n / (per_min / 60) if per_min else None
    if wall:
        r.fields["wall_s"] = "results_num_completed_requests ÷ (results_num_completed_requests_per_min ÷ 60)"
    out_mean = r.num(doc.get("results_number_output_tokens_mean"), "results_number_output_tokens_mean")
    in_mean = r.num(doc.get("results_number_input_tokens_mean"), "results_number_input_tokens_mean")
    settings = {"model": doc.get("model"), "concurrency": doc.get("num_concurrent_requests"),
                "input_tokens": doc.get("mean_input_tokens"), "output_tokens": doc.get("mean_output_tokens"),
                "requests": doc.get("results_num_requests_started"), "name": doc.get("name"), "api": doc.get("api")}
    notes = r.notes + ([sample_note] if sample_note else [])
    return [PeerRun(tool="llmperf", version=str(doc["version"]) if doc.get("version") else None, format="llmperf",
                    file=file, benchmark=None, settings={k: v for k, v in settings.items() if v is not None},
                    metrics=metrics_from(
                        wall_s=wall, completed=n,
                        failed=int(r.num(doc.get("results_number_errors"), "results_number_errors", "failed") or 0),
                        output_tokens=None if out_mean is None else out_mean * n,
                        prompt_tokens=None if in_mean is None else in_mean * n,
                        aggregate_output_tok_s=r.num(doc.get("results_mean_output_throughput_token_per_s"),
                                                     "results_mean_output_throughput_token_per_s",
                                                     "aggregate_output_tok_s"),
                        decode_mean=r.num(doc.get("results_request_output_throughput_token_per_s_mean"),
                                          "results_request_output_throughput_token_per_s_mean",
                                          "per_stream_decode_tok_s_mean"),
                        decode_median=r.num(doc.get("results_request_output_throughput_token_per_s_quantiles_p50"),
                                            "results_request_output_throughput_token_per_s_quantiles_p50",
                                            "per_stream_decode_tok_s_median"),
                        ttft=dist("ttft_s", "ttft_s"), tpot=dist("inter_token_latency_s", "tpot_s"),
                        e2e=dist("end_to_end_latency_s", "e2e_s")),
                    requests=samples or [], fields=r.fields, notes=notes)]


def run_from_individual(rows: list[Any], file: str, summarize: Summarize) -> tuple[list[PeerRun], list[str]]:
    """A run from the individual responses alone: summarised by tokcaliper's rules (``summarize``,
    as for :func:`.aiperf.run_from_jsonl`), no wall time (the records carry no start times, so no
    throughput)."""
    r = Reader()
    reqs, skipped = requests_from_individual(rows, file, r)
    if not reqs:
        return [], skipped
    m = summarize(reqs).model_copy(update={"wall_s": 0.0, "aggregate_output_tok_s": None,
                                           "request_throughput_rps": None})
    return [PeerRun(tool="llmperf", version=None, format="llmperf", file=file, benchmark=None, settings={},
                    metrics=m, requests=reqs, fields={"*": "individual responses, summarised by tokcaliper"},
                    notes=r.notes + ["no summary given: latencies summarised by tokcaliper; no start times, so no "
                                     "wall time or throughput"])], skipped


def companion(path: Any, suffix_from: str, suffix_to: str) -> Any:
    """``X_summary.json`` ↔ ``X_individual_responses.json`` beside it, if present."""
    if not path.name.endswith(suffix_from):
        return None
    cand = path.with_name(path.name[: -len(suffix_from)] + suffix_to)
    return cand if cand.is_file() else None
