"""genai-perf CSV exports (triton-inference-server/perf_analyzer).

Two CSVs: ``genai-perf analyze``'s sweep table (``Config Name, Concurrency,
ISL, Num Prompts, p99 Time To First Token (ms), p99 Inter Token Latency (ms),
p99 Request Latency (ms), … Avg. Output Token Throughput (tokens/sec),
Request Throughput (requests/sec)``; one run per row, the GPU table after the
blank line skipped and noted) and ``profile_export_genai_perf.csv``, which has
AIPerf's layout (AIPerf is its successor) with ``Time To First Token``
capitalised; the latter is read by :func:`tokcaliper.audit.importers.aiperf.runs_from_csv`
and relabelled. Units from the labels: ``(ms)`` → s. Mapping: ``p99 Time To First
Token`` → ``ttft_s.p99``; ``p99 Inter Token Latency`` ((latency − TTFT) ÷ (OSL − 1))
→ ``tpot_s.p99``; ``p99 Request Latency`` → ``e2e_s.p99``; ``Avg. Output Token
Throughput`` → aggregate tok/s; ``Request Throughput`` → req/s. The analyze
table states no request count, duration or totals.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from tokcaliper.audit.importers.base import FieldError
from tokcaliper.audit.importers.runs import PeerRun, Reader, metrics_from
from tokcaliper.model.run import Percentiles

_COLS = {"p99 Time To First Token (ms)": "ttft_s", "p99 Inter Token Latency (ms)": "tpot_s",
         "p99 Request Latency (ms)": "e2e_s"}


def detect_csv(text: str) -> str | None:
    """``"analyze"`` or ``"profile"`` for a genai-perf CSV, else None."""
    head = text.lstrip("\ufeff").split("\n", 1)[0]
    if head.startswith("Config Name,") and "Time To First Token" in head:
        return "analyze"
    if head.startswith("Metric,") and "Time To First Token" in text:
        return "profile"
    return None


def runs_from_csv(text: str, file: str) -> tuple[list[PeerRun], list[str]]:
    """One run per row of the analyze table (or the one run of a profile CSV); bad rows skipped and listed."""
    if detect_csv(text) == "profile":
        from tokcaliper.audit.importers.aiperf import runs_from_csv as aiperf_csv

        runs = aiperf_csv(text, file)
        for p in runs:
            p.tool, p.format = "genai-perf", "genai_perf"
            p.notes = [n.replace("AIPerf CSV", "genai-perf CSV") for n in p.notes]
        return runs, []
    tables = text.lstrip("\ufeff").replace("\r\n", "\n").split("\n\n")
    rows = list(csv.DictReader(io.StringIO(tables[0])))
    skipped = [f"{file}: table {k + 1} after a blank line (GPU telemetry) not imported" for k in range(1, len(tables))
               if tables[k].strip()]
    runs = []
    for i, row in enumerate(rows):
        try:
            r = Reader()
            d = {t: Percentiles(n=0, p99=r.num(row.get(c), c, f"{t}.p99", 1e-3, "ms → s")) for c, t in _COLS.items()}
            for p in d.values():
                p.n = 0 if p.p99 is None else int(r.num(row.get("Num Prompts"), "Num Prompts") or 0)
            settings = {"config": row.get("Config Name"), "concurrency": r.num(row.get("Concurrency"), "Concurrency"),
                        "input_tokens": r.num(row.get("ISL"), "ISL"),
                        "requests": r.num(row.get("Num Prompts"), "Num Prompts")}
            runs.append(PeerRun(
                tool="genai-perf", version=None, format="genai_perf", file=file,
                benchmark=f"row {i}: {row.get('Config Name')}",
                settings={k: (int(v) if isinstance(v, float) and v.is_integer() else v)
                          for k, v in settings.items() if v is not None},
                metrics=metrics_from(
                    wall_s=None, completed=None,
                    aggregate_output_tok_s=r.num(row.get("Avg. Output Token Throughput (tokens/sec)"),
                                                 "Avg. Output Token Throughput (tokens/sec)", "aggregate_output_tok_s"),
                    request_throughput_rps=r.num(row.get("Request Throughput (requests/sec)"),
                                                 "Request Throughput (requests/sec)", "request_throughput_rps"),
                    ttft=d["ttft_s"], tpot=d["tpot_s"], e2e=d["e2e_s"]),
                fields=r.fields, notes=r.notes + ["genai-perf analyze: p99 figures only; no request count, duration "
                                                  "or totals in the file; no tool version"]))
        except FieldError as e:
            skipped.append(f"{file}: record {i}: field {e.field}: {e}")
    return runs, skipped


