"""SGLang ``bench_serving --output-file`` JSONL: one line per benchmark run, appended.

Old short schema (2024): ``median_ttft_ms``, ``median_itl_ms``,
``mean_e2e_latency_ms``/``median_e2e_latency_ms`` (**ms**), ``output_throughput``
(tok/s), ``duration`` (s), ``completed``, ``total_input_tokens``,
``total_output_tokens``, ``request_rate``, ``max_concurrency``, dataset and
length settings. The newer schema adds ``{mean,median,p99}_{ttft,tpot,itl}_ms``,
``request_throughput`` and ``concurrency``; every such name is read the same way.
Trap: offline lines carry the bare token ``Infinity`` for ``request_rate``
(Python's JSON reader accepts it): stored as missing (rate unbounded), noted.
Mapping: ``*_ttft_ms`` → ``ttft_s``, ``*_itl_ms`` → ``itl_s``, ``*_tpot_ms`` →
``tpot_s``, ``*_e2e_latency_ms`` → ``e2e_s`` (ms → s); ``output_throughput`` →
aggregate tok/s.
"""

from __future__ import annotations

from typing import Any

from tokcaliper.audit.importers.base import FieldError
from tokcaliper.audit.importers.runs import PeerRun, Reader, metrics_from, record_from_peer_run
from tokcaliper.model.record import Record

_LAT = {"ttft": "ttft_s", "itl": "itl_s", "tpot": "tpot_s", "e2e_latency": "e2e_s"}


class SGLangImporter:
    """One ``bench_serving`` output line (audit record: its headline figures)."""

    name = "sglang_bench"

    def detect(self, row: Any) -> bool:
        """True for a line with ``backend``, ``dataset_name`` and SGLang's length settings."""
        return detect_row(row)

    def to_record(self, row: dict[str, Any], *, filename: str | None = None) -> Record:
        """The line as a Record (see :func:`~.runs.record_from_peer_run`)."""
        return record_from_peer_run(run_from_row(row, 0, filename or "<memory>"), filename)


def detect_row(row: Any) -> bool:
    """True for one SGLang ``bench_serving`` JSONL line."""
    return isinstance(row, dict) and "dataset_name" in row and "output_throughput" in row and (
        "random_input_len" in row or "sharegpt_output_len" in row)


def run_from_row(row: dict[str, Any], i: int, file: str) -> PeerRun:
    """One line → one run (see the module docstring)."""
    r = Reader()
    dists = {}
    for name, target in _LAT.items():
        d = {stat: row[f"{src}_{name}_ms"] for stat, src in (("mean", "mean"), ("p50", "median"), ("p90", "p90"),
                                                              ("p99", "p99")) if f"{src}_{name}_ms" in row}
        dists[target] = r.dist(d, f"{name}_ms", target, 1e-3, "ms → s", keys={k: k for k in d},
                               n=int(row.get("completed") or 0))
    rate = row.get("request_rate")
    rate_v = r.num(rate, "request_rate") if not isinstance(rate, str) else None
    if rate_v is None and rate is not None:
        r.notes[-1:] = [f"field request_rate is {rate!r}: no rate limit (all requests at once); stored as missing"]
    ds = row.get("dataset_name")
    lens = (f"{row.get('random_input_len')}/{row.get('random_output_len')}" if ds == "random"
            else f"out {row.get('sharegpt_output_len') or 'as dataset'}")
    settings = {"engine": row.get("backend"), "dataset": ds, "request_rate": rate if rate_v is not None else "inf",
                "rate_rps": rate_v, "concurrency": row.get("max_concurrency") or row.get("concurrency"),
                "input_tokens": row.get("random_input_len") if ds == "random" else None,
                "output_tokens": row.get("random_output_len") if ds == "random" else row.get("sharegpt_output_len"),
                "random_range_ratio": row.get("random_range_ratio"), "requests": row.get("completed"),
                "model": row.get("model_id") or row.get("model")}
    return PeerRun(tool="sglang", version=row.get("sglang_version"), format="sglang_bench", file=file,
                   benchmark=f"line {i}: {ds} {lens} at rate {settings['request_rate']}",
                   settings={k: v for k, v in settings.items() if v is not None},
                   metrics=metrics_from(
                       wall_s=r.num(row.get("duration"), "duration", "wall_s", unit="s"),
                       completed=int(r.num(row.get("completed"), "completed", "completed") or 0),
                       output_tokens=r.num(row.get("total_output_tokens"), "total_output_tokens", "output_tokens"),
                       prompt_tokens=r.num(row.get("total_input_tokens"), "total_input_tokens", "prompt_tokens"),
                       aggregate_output_tok_s=r.num(row.get("output_throughput"), "output_throughput",
                                                    "aggregate_output_tok_s"),
                       request_throughput_rps=r.num(row.get("request_throughput"), "request_throughput",
                                                    "request_throughput_rps"),
                       ttft=dists["ttft_s"], itl=dists["itl_s"], tpot=dists["tpot_s"], e2e=dists["e2e_s"]),
                   fields=r.fields, notes=r.notes)


def runs_from_rows(rows: list[tuple[int, Any]], file: str) -> tuple[list[PeerRun], list[str]]:
    """One run per line; a line that is not a bench_serving result is skipped and listed."""
    runs, skipped = [], []
    for i, row in rows:
        try:
            if not detect_row(row):
                raise FieldError("output_throughput", "not a bench_serving result line")
            runs.append(run_from_row(row, i, file))
        except FieldError as e:
            skipped.append(f"{file}: record {i}: field {e.field}: {e}")
    return runs, skipped
