"""NVIDIA AIPerf exports: ``profile_export_aiperf.json`` / ``.csv`` and ``profile_export.jsonl``.

Two JSON layouts: aiperf 0.1.x puts every metric under ``records`` (short
tags: ``ttft``, ``request_latency`` …); aiperf ≥ 0.8 (``schema_version``
1.x) puts each metric at the top level under a long name
(``time_to_first_token`` …). Every metric object carries its own ``unit``
(``ms``, ``sec``, ``ns``, ``tokens/sec`` …), which is read, never assumed. The CSV
has the unit inside the metric's label (``Time to First Token (ms)``) and
states no settings. ``profile_export.jsonl`` holds one record per request
(``metadata.timestamp_ns`` and ``credit_phase`` up to 0.8, ``request_start_ns`` and
``benchmark_phase`` in 0.13; ``metrics.<tag>.{value,unit}``,
``error``); read beside the JSON it gives the run's per-request samples, read
alone it makes a run summarised by tokcaliper's own rules
(:func:`tokcaliper.load.summary.summarize`, passed in by the caller).

Mapping (AIPerf → RunMetrics, units → s): ``time_to_first_token``/``ttft`` →
``ttft_s``; ``inter_token_latency`` ((latency − TTFT) ÷ (OSL − 1) per
request) → ``tpot_s``; ``inter_chunk_latency`` → ``itl_s``;
``request_latency`` → ``e2e_s``; ``output_token_throughput`` → aggregate
tok/s; ``request_throughput`` → req/s; ``output_token_throughput_per_user``
(avg) → per-stream decode mean (p50 → median); ``request_count`` /
``error_request_count`` → completed / failed; ``benchmark_duration`` →
wall; ``total_osl`` (else ``total_output_tokens``) / ``total_isl`` → tokens.
Schema versions read: 1.x (an unknown major version is refused naming
``schema_version``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tokcaliper.audit.importers.base import FieldError
from tokcaliper.audit.importers.runs import TO_SECONDS, PeerRun, Reader, Summarize, metrics_from, record_from_peer_run
from tokcaliper.model.record import Record
from tokcaliper.model.run import RequestRecord

#: Short 0.1.x tags → the long names of ≥ 0.8.
SHORT = {"ttft": "time_to_first_token", "ttst": "time_to_second_token"}
#: CSV labels (without the unit) → metric names.
LABELS = {"time to first token": "time_to_first_token", "request latency": "request_latency",
          "inter token latency": "inter_token_latency", "inter chunk latency": "inter_chunk_latency",
          "output token throughput": "output_token_throughput", "request throughput": "request_throughput",
          "output token throughput per user": "output_token_throughput_per_user",
          "request count": "request_count", "error request count": "error_request_count",
          "benchmark duration": "benchmark_duration", "total output sequence length": "total_osl",
          "total input sequence length": "total_isl", "output sequence length": "output_sequence_length",
          "input sequence length": "input_sequence_length"}
SCHEMA_MAJOR = "1"


class AIPerfImporter:
    """An AIPerf ``profile_export_aiperf.json`` document (audit record: its run's headline figures)."""

    name = "aiperf"

    def detect(self, row: Any) -> bool:
        """True for a document with ``aiperf_version``/``schema_version`` or a ``records`` object of metric tags."""
        return detect_document(row)

    def to_record(self, row: dict[str, Any], *, filename: str | None = None) -> Record:
        """The run's headline figures as a Record (see :func:`~.runs.record_from_peer_run`)."""
        return record_from_peer_run(runs_from_document(row, filename or "<memory>")[0], filename)


def detect_document(doc: Any) -> bool:
    """True for an AIPerf JSON export (either layout)."""
    if not isinstance(doc, dict):
        return False
    if "aiperf_version" in doc or ("schema_version" in doc and "time_to_first_token" in doc):
        return True
    rec = doc.get("records")
    return isinstance(rec, dict) and "input_config" in doc and any(
        isinstance(v, dict) and "unit" in v for v in rec.values())


def detect_csv(text: str) -> bool:
    """True for AIPerf's CSV (first header ``Metric,avg,…`` with AIPerf's capitalisation)."""
    head = text.lstrip("\ufeff").split("\n", 2)
    return head[0].startswith("Metric,avg") and "Time To First Token" not in text


def detect_jsonl_row(row: Any) -> bool:
    """True for one ``profile_export.jsonl`` record."""
    return isinstance(row, dict) and isinstance(row.get("metadata"), dict) and isinstance(row.get("metrics"), dict) \
        and ("error" in row or "x_request_id" in row["metadata"])


def _table(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    src = doc["records"] if isinstance(doc.get("records"), dict) else doc
    return {SHORT.get(k, k): v for k, v in src.items() if isinstance(v, dict) and "unit" in v}


def _factor(unit: Any, field: str) -> tuple[float, str]:
    u = str(unit or "").strip().lower()
    if u in TO_SECONDS:
        return TO_SECONDS[u], f"{u} → s" if u not in ("s", "sec", "seconds") else "s"
    raise FieldError(f"{field}.unit", f"unit {unit!r} is not a time unit (ms, sec, ns)")


def _summary(t: dict[str, dict[str, Any]], r: Reader, prefix: str) -> dict[str, Any]:
    def dist(name: str, target: str) -> Any:
        m = t.get(name)
        if m is None:
            return None
        f, how = _factor(m.get("unit"), f"{prefix}{name}")
        return r.dist(m, f"{prefix}{name}", target, f, how, keys={"mean": "avg"})

    def scalar(name: str, target: str, factor: float = 1.0, how: str | None = None) -> float | None:
        m = t.get(name)
        return None if m is None else r.num(m.get("avg"), f"{prefix}{name}.avg", target, factor, how)

    dur = t.get("benchmark_duration")
    wall = None
    if dur is not None:
        f, how = _factor(dur.get("unit"), f"{prefix}benchmark_duration")
        wall = r.num(dur.get("avg"), f"{prefix}benchmark_duration.avg", "wall_s", f, how)
    per_user = t.get("output_token_throughput_per_user") or {}
    return dict(
        wall_s=wall, completed=scalar("request_count", "completed"),
        failed=scalar("error_request_count", "failed") or 0,
        output_tokens=scalar("total_osl", "output_tokens") if "total_osl" in t
        else scalar("total_output_tokens", "output_tokens"),
        prompt_tokens=scalar("total_isl", "prompt_tokens"),
        aggregate_output_tok_s=scalar("output_token_throughput", "aggregate_output_tok_s"),
        request_throughput_rps=scalar("request_throughput", "request_throughput_rps"),
        decode_mean=r.num(per_user.get("avg"), f"{prefix}output_token_throughput_per_user.avg",
                          "per_stream_decode_tok_s_mean"),
        decode_median=r.num(per_user.get("p50"), f"{prefix}output_token_throughput_per_user.p50",
                            "per_stream_decode_tok_s_median"),
        ttft=dist("time_to_first_token", "ttft_s"), tpot=dist("inter_token_latency", "tpot_s"),
        itl=dist("inter_chunk_latency", "itl_s"), e2e=dist("request_latency", "e2e_s"))


def _settings(doc: dict[str, Any]) -> dict[str, Any]:
    cfg = doc.get("input_config") or {}
    ep, lg = cfg.get("endpoint") or {}, cfg.get("loadgen") or {}
    prompt = (cfg.get("input") or {}).get("prompt") or {}
    models = ep.get("model_names") or []
    url = ep.get("url") or (ep.get("urls") or [None])[0]
    out: dict[str, Any] = {"model": models[0] if models else None, "url": url,
                           "concurrency": lg.get("concurrency"), "requests": lg.get("request_count"),
                           "rate_rps": lg.get("request_rate"),
                           "output_tokens": (prompt.get("output_tokens") or {}).get("mean"),
                           "input_tokens": (prompt.get("input_tokens") or {}).get("mean"),
                           "streaming": ep.get("streaming"), "cli_command": cfg.get("cli_command")}
    return {k: v for k, v in out.items() if v is not None}


def requests_from_jsonl(rows: list[tuple[int, Any]], r: Reader,
                        file: str) -> tuple[list[RequestRecord], list[str], float | None]:
    """Per-request samples from ``profile_export.jsonl`` rows ``[(line index, row)]``.

    ``start_s`` = ``timestamp_ns`` − the first one; requests of ``credit_phase``
    ``warmup`` are flagged warm-up. A row that cannot be read is skipped and listed.

    Returns:
        (records, skipped: one line each, ``"file: record N: why"``, the first request's
        start in epoch seconds or None).
    """
    skipped: list[str] = []
    parsed: list[tuple[int, float, dict[str, Any], Any, bool]] = []
    for i, row in rows:
        try:
            if not detect_jsonl_row(row):
                raise FieldError("metadata", "not an AIPerf per-request record")
            md = row["metadata"]
            key = "timestamp_ns" if "timestamp_ns" in md else "request_start_ns"  # ≤ 0.8 / ≥ 0.13
            ts = r.num(md.get(key), f"metadata.{key}")
            if ts is None:
                raise FieldError("metadata.timestamp_ns", "missing (nor request_start_ns)")
            phase = md.get("credit_phase", md.get("benchmark_phase"))
            parsed.append((i, ts, row["metrics"], row.get("error"), phase == "warmup"))
        except FieldError as e:
            skipped.append(f"{file}: record {i}: field {e.field}: {e}")
    if not parsed:
        return [], skipped, None
    t0 = min(p[1] for p in parsed)
    out: list[RequestRecord] = []
    for k, (i, ts, m, err, warm) in enumerate(sorted(parsed, key=lambda p: p[1])):
        try:
            def val(*names: str, time: bool = True) -> Any:
                for n in names:
                    x = m.get(n)
                    if isinstance(x, dict) and "value" in x:
                        if not time:
                            return x["value"]
                        f, _ = _factor(x.get("unit"), f"metrics.{n}")
                        v = x["value"]
                        if isinstance(v, list):
                            return [y * f for y in v if isinstance(y, (int, float)) and not isinstance(y, bool)]
                        return r.num(v, f"record {i} metrics.{n}.value", None, f)
                return None

            osl = val("output_sequence_length", "output_token_count", time=False)
            isl = val("input_sequence_length", time=False)
            error = None if err is None else (f"{err.get('code')} {err.get('type')}: {err.get('message')}"
                                              if isinstance(err, dict) else str(err))
            out.append(RequestRecord(
                index=k, warmup=warm, start_s=(ts - t0) * 1e-9, ttft_s=val("time_to_first_token", "ttft"),
                itl_s=val("inter_chunk_latency") or [], e2e_s=val("request_latency"),
                output_tokens=int(osl or 0), prompt_tokens=None if isl is None else int(isl),
                token_count_source="usage", content_chunks=len(val("inter_chunk_latency") or []) + 1,
                error=error, error_class=None if error is None else "http_status"))
        except (FieldError, ValueError, TypeError) as e:
            skipped.append(f"{file}: record {i}: {e}")
    return out, skipped, t0 * 1e-9


def runs_from_document(doc: dict[str, Any], file: str, samples: list[RequestRecord] | None = None,
                       sample_note: str | None = None, samples_t0: float | None = None) -> list[PeerRun]:
    """The one run of an AIPerf JSON export (with ``samples`` from its ``profile_export.jsonl``).

    Start and end: ``min_request_timestamp``/``max_response_timestamp`` (ns, ≤ 0.8), else the
    first sample's start (``samples_t0``, epoch s) and its last end; ``start_time`` (0.13) is
    a time without a zone and is not used.

    Raises:
        FieldError: ``schema_version`` of an unknown major version, or a unit that is not a time unit.
    """
    sv = doc.get("schema_version")
    if sv is not None and str(sv).split(".")[0] != SCHEMA_MAJOR:
        raise FieldError("schema_version", f"AIPerf schema {sv} is not one this tokcaliper reads "
                                           f"({SCHEMA_MAJOR}.x)")
    r = Reader()
    prefix = "records." if isinstance(doc.get("records"), dict) else ""
    s = _summary(_table(doc), r, prefix)
    version = doc.get("aiperf_version") or ("0.1.x" if prefix else None)
    notes = list(r.notes)
    if not doc.get("aiperf_version"):
        notes.append("no aiperf_version in the file: 'records' layout of aiperf 0.1.x")
    if sample_note:
        notes.append(sample_note)
    t = _table(doc)
    starts = (t.get("min_request_timestamp") or {}).get("avg")
    ends = (t.get("max_response_timestamp") or {}).get("avg")
    if not isinstance(starts, (int, float)) and samples and samples_t0 is not None:
        starts = samples_t0 * 1e9
        ends = (samples_t0 + max(q.start_s + (q.e2e_s or 0.0) for q in samples)) * 1e9
    return [PeerRun(tool="aiperf", version=str(version) if version else None, format="aiperf", file=file,
                    benchmark=None, settings=_settings(doc), metrics=metrics_from(**s), requests=samples or [],
                    fields=r.fields, notes=notes,
                    started=starts * 1e-9 if isinstance(starts, (int, float)) else None,
                    finished=ends * 1e-9 if isinstance(ends, (int, float)) else None)]


def runs_from_csv(text: str, file: str) -> list[PeerRun]:
    """The one run of an AIPerf ``profile_export_aiperf.csv`` (no settings: the CSV states none).

    Raises:
        FieldError: a label's unit that is not a time unit where a time is expected.
    """
    import csv
    import io

    table: dict[str, dict[str, Any]] = {}
    header: list[str] | None = None
    for cells in csv.reader(io.StringIO(text.lstrip("\ufeff"))):
        if not cells or not any(c.strip() for c in cells):
            header = None
            continue
        if header is None:
            header = cells
            continue
        m = re.fullmatch(r"\s*(.*?)\s*(?:\(([^)]*)\))?\s*", cells[0])
        label, unit = (m.group(1).lower(), m.group(2)) if m else (cells[0].lower(), None)
        name = LABELS.get(label)
        if name is None or name in table:
            continue
        if header[:2] == ["Metric", "Value"]:
            table[name] = {"unit": unit or "", "avg": cells[1]}
        else:
            table[name] = {"unit": unit or "", **dict(zip(header[1:], cells[1:]))}
    r = Reader()
    s = _summary(table, r, "")
    for k in list(r.fields):
        r.fields[k] = r.fields[k] + " (CSV)"
    return [PeerRun(tool="aiperf", version=None, format="aiperf", file=file, benchmark=None, settings={},
                    metrics=metrics_from(**s), fields=r.fields,
                    notes=r.notes + ["AIPerf CSV: no settings and no version in the file (import the JSON for them)"])]


def run_from_jsonl(rows: list[tuple[int, Any]], file: str, summarize: Summarize) -> tuple[list[PeerRun], list[str]]:
    """A run from ``profile_export.jsonl`` alone, summarised by tokcaliper's rules (``summarize``:
    :func:`tokcaliper.load.summary.summarize`, passed in by the caller: the audit layer does not
    import the load layer)."""
    r = Reader()
    reqs, skipped, _t0 = requests_from_jsonl(rows, r, file)
    if not reqs:
        return [], skipped
    m = summarize(reqs)
    return [PeerRun(tool="aiperf", version=None, format="aiperf", file=file, benchmark=None, settings={},
                    metrics=m, requests=reqs, fields={"*": "profile_export.jsonl per-request records, "
                                                          "summarised by tokcaliper"},
                    notes=r.notes + ["summary computed by tokcaliper from AIPerf's per-request records "
                                     "(no profile_export_aiperf.json given)"])], skipped


def companion_jsonl(path: Path) -> Path | None:
    """``…profile_export_aiperf.json`` → its ``…profile_export.jsonl`` beside it, if present."""
    name = path.name.replace("profile_export_aiperf.json", "profile_export.jsonl")
    cand = path.with_name(name)
    return cand if name != path.name and cand.is_file() else None
