"""GuideLLM ``benchmarks.json``: one run per benchmark (one per rate or strategy of a sweep).

Layouts: 0.2.x/0.3 (``benchmarks[]`` only; per benchmark ``args.strategy``,
``run_stats``, ``request_totals``, ``worker.backend_model``) and ≥ 0.5
(``metadata.guidellm_version``, ``args``; per benchmark ``config.strategy``,
``metrics.request_totals``). Every ``metrics.<name>`` is
``{successful, errored, incomplete, total}`` distributions; the successful
one is read.

Units (the trap of this format): ``*_ms`` names are **milliseconds**,
``request_latency`` is **seconds**. Mapping: ``time_to_first_token_ms`` →
``ttft_s``; ``inter_token_latency_ms`` ((latency − TTFT) ÷ (output tokens − 1)
per request) → ``tpot_s``; ``request_latency`` → ``e2e_s``; aggregate output
tok/s = Σ successful output tokens ÷ ``duration`` (GuideLLM's headline
``output_tokens_per_second`` is a mean over per-second values, kept in the
notes, not stored as the aggregate); req/s = successful ÷ ``duration``;
completed/failed = ``request_totals.successful``/``errored`` (incomplete
ones noted). Per-request records (``requests.successful``/``errored``) become
samples: start = ``request_start_time`` (0.5+) or ``start_time`` (0.2), s.
The distinguishing setting of each benchmark (strategy, streams or rate) is
its ``benchmark`` label and is in the settings.
"""

from __future__ import annotations

from typing import Any

from tokcaliper.audit.importers.base import FieldError
from tokcaliper.audit.importers.runs import PeerRun, Reader, metrics_from, record_from_peer_run
from tokcaliper.model.record import Record
from tokcaliper.model.run import RequestRecord


class GuideLLMImporter:
    """A GuideLLM benchmarks document (audit record: its first benchmark's headline figures)."""

    name = "guidellm"

    def detect(self, row: Any) -> bool:
        """True for an object whose ``benchmarks`` list holds GuideLLM benchmarks."""
        return detect_document(row)

    def to_record(self, row: dict[str, Any], *, filename: str | None = None) -> Record:
        """The first benchmark as a Record (see :func:`~.runs.record_from_peer_run`)."""
        runs, _ = runs_from_document(row, filename or "<memory>")
        if not runs:
            raise FieldError("benchmarks", "no readable benchmark")
        return record_from_peer_run(runs[0], filename)


def detect_document(doc: Any) -> bool:
    """True for a GuideLLM benchmarks document (either layout)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list) or not doc["benchmarks"]:
        return False
    b = doc["benchmarks"][0]
    return isinstance(b, dict) and isinstance(b.get("metrics"), dict) and "time_to_first_token_ms" in b["metrics"]


def _strategy(b: dict[str, Any]) -> dict[str, Any]:
    s = (b.get("config") or {}).get("strategy") or (b.get("args") or {}).get("strategy") or {}
    return s if isinstance(s, dict) else {}


def _label(s: dict[str, Any]) -> str:
    kind = str(s.get("type_") or "unknown")
    if s.get("streams") is not None:
        return f"{kind} {s['streams']} streams"
    if s.get("rate") is not None:
        return f"{kind} {s['rate']} req/s"
    return kind


def _requests(b: dict[str, Any], r: Reader, i: int) -> list[RequestRecord]:
    reqs = b.get("requests")
    if not isinstance(reqs, dict):
        return []
    rows = [(x, None) for x in reqs.get("successful") or []] + \
           [(x, "errored") for x in reqs.get("errored") or []]
    starts = []
    for x, _ in rows:
        t = x.get("request_start_time", x.get("start_time")) if isinstance(x, dict) else None
        starts.append(t if isinstance(t, (int, float)) and not isinstance(t, bool) else None)
    known = [t for t in starts if t is not None]
    if not known:
        return []
    t0 = min(known)
    out = []
    for k, ((x, err), t) in enumerate(zip(rows, starts)):
        if t is None:
            continue
        src = f"benchmarks[{i}].requests"
        ttft = r.num(x.get("time_to_first_token_ms"), f"{src}.time_to_first_token_ms", None, 1e-3)
        out.append(RequestRecord(
            index=k, start_s=t - t0, ttft_s=ttft, e2e_s=r.num(x.get("request_latency"), f"{src}.request_latency"),
            output_tokens=int(x.get("output_tokens") or 0), prompt_tokens=x.get("prompt_tokens"),
            token_count_source="usage", error=None if err is None else "errored (GuideLLM)",
            error_class=None if err is None else "http_status"))
    return out


def _run(doc: dict[str, Any], b: dict[str, Any], i: int, file: str) -> PeerRun:
    r = Reader()
    m = b["metrics"]
    p = f"benchmarks[{i}].metrics."

    def succ(name: str) -> Any:
        v = m.get(name)
        return v.get("successful") if isinstance(v, dict) else None

    totals = m.get("request_totals") or b.get("request_totals") or {}
    completed = r.num(totals.get("successful"), f"benchmarks[{i}].request_totals.successful", "completed")
    failed = r.num(totals.get("errored"), f"benchmarks[{i}].request_totals.errored", "failed") or 0
    dur = r.num(b.get("duration"), f"benchmarks[{i}].duration", "wall_s", unit="s")
    out_tok = r.num((succ("output_token_count") or {}).get("total_sum"),
                    f"{p}output_token_count.successful.total_sum", "output_tokens")
    in_tok = r.num((succ("prompt_token_count") or {}).get("total_sum"),
                   f"{p}prompt_token_count.successful.total_sum", "prompt_tokens")
    agg = out_tok / dur if out_tok is not None and dur else None
    if agg is not None:
        r.fields["aggregate_output_tok_s"] = (f"{p}output_token_count.successful.total_sum ÷ "
                                              f"benchmarks[{i}].duration")
    rps = completed / dur if completed is not None and dur else None
    if rps is not None:
        r.fields["request_throughput_rps"] = f"request_totals.successful ÷ benchmarks[{i}].duration"
    notes = []
    head = (succ("output_tokens_per_second") or {}).get("mean")
    if head is not None:
        notes.append(f"GuideLLM's headline output_tokens_per_second.mean = {head!r} is a mean over per-second "
                     "values; the stored aggregate is total output tokens ÷ duration")
    if totals.get("incomplete"):
        notes.append(f"{totals['incomplete']} incomplete request(s) (cut at the benchmark's end) not counted")
    s = _strategy(b)
    args = doc.get("args") or {}
    worker = b.get("worker") if isinstance(b.get("worker"), dict) else {}
    backend = (b.get("config") or {}).get("backend") or {}
    settings = {"model": args.get("model") or backend.get("model") or worker.get("backend_model"),
                "url": args.get("target") or backend.get("target") or worker.get("backend_target"),
                "strategy": s.get("type_"), "concurrency": s.get("streams") or s.get("max_concurrency"),
                "rate_rps": s.get("rate") if isinstance(s.get("rate"), (int, float)) and s["rate"] > 0 else None,
                "data": args.get("data")}
    if s.get("type_") == "synchronous":
        settings["concurrency"] = 1
    reqs = _requests(b, r, i)
    ttft = r.dist(succ("time_to_first_token_ms"), f"{p}time_to_first_token_ms.successful", "ttft_s", 1e-3, "ms → s")
    tpot = r.dist(succ("inter_token_latency_ms"), f"{p}inter_token_latency_ms.successful", "tpot_s", 1e-3, "ms → s")
    e2e = r.dist(succ("request_latency"), f"{p}request_latency.successful", "e2e_s", 1.0, "s")
    rates = [(q.output_tokens - 1) / (q.e2e_s - q.ttft_s) for q in reqs
             if q.ok and q.e2e_s is not None and q.ttft_s is not None and q.output_tokens > 1 and q.e2e_s > q.ttft_s]
    dec_mean = dec_med = None
    if rates:
        import statistics

        dec_mean, dec_med = statistics.fmean(rates), statistics.median(rates)
        r.fields["per_stream_decode_tok_s_mean"] = "(output_tokens − 1) ÷ (request_latency − TTFT) per request"
    version = (doc.get("metadata") or {}).get("guidellm_version")
    if not version:
        notes.append("no metadata.guidellm_version: GuideLLM 0.2.x/0.3 layout")
    return PeerRun(tool="guidellm", version=version, format="guidellm", file=file,
                   benchmark=f"benchmark {i}: {_label(s)}", settings={k: v for k, v in settings.items() if v is not None},
                   metrics=metrics_from(wall_s=dur, completed=int(completed or 0), failed=int(failed),
                                        output_tokens=out_tok, prompt_tokens=in_tok, aggregate_output_tok_s=agg,
                                        request_throughput_rps=rps, decode_mean=dec_mean, decode_median=dec_med,
                                        ttft=ttft, tpot=tpot, e2e=e2e),
                   requests=reqs, fields=r.fields, notes=notes + r.notes,
                   started=b.get("start_time") if isinstance(b.get("start_time"), (int, float)) else None,
                   finished=b.get("end_time") if isinstance(b.get("end_time"), (int, float)) else None)


def runs_from_document(doc: dict[str, Any], file: str) -> tuple[list[PeerRun], list[str]]:
    """One run per benchmark; a benchmark that cannot be read is skipped and listed.

    Returns:
        (runs, skipped: ``"file: benchmark N: field F: why"`` each).
    """
    runs, skipped = [], []
    for i, b in enumerate(doc.get("benchmarks") or []):
        try:
            if not isinstance(b, dict) or not isinstance(b.get("metrics"), dict):
                raise FieldError(f"benchmarks[{i}]", "not a benchmark object with metrics")
            runs.append(_run(doc, b, i, file))
        except FieldError as e:
            skipped.append(f"{file}: benchmark {i}: field {e.field}: {e}")
        except (TypeError, ValueError, AttributeError) as e:
            skipped.append(f"{file}: benchmark {i}: unreadable ({' '.join(str(e).split())[:120]})")
    return runs, skipped
