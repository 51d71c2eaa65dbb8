"""``llama-bench -o json`` rows (llama.cpp's benchmark tool).

``n_gen > 0, n_prompt = 0`` is a decode (tg) test → ``tok_s_decode = avg_ts``;
``n_prompt > 0, n_gen = 0`` a prefill (pp) test → ``tok_s_prefill = avg_ts``.
Bytes per weight = ``model_size / model_n_params`` (exact, from the file).
The launch command is reconstructed from ``model_filename``, ``n_prompt``,
``n_gen``, ``n_gpu_layers`` and ``split_mode`` (noted as an assumption).
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from tokcaliper.audit.importers.base import FieldError, RecordBuilder, num, show, text
from tokcaliper.model.record import Record


class LlamaBenchImporter:
    """One row of ``llama-bench -o json`` output."""

    name = "llama_bench"

    def detect(self, row: Any) -> bool:
        """True for an object with ``avg_ts`` and ``n_gen`` or ``n_prompt``."""
        return isinstance(row, dict) and "avg_ts" in row and ("n_gen" in row or "n_prompt" in row)

    def to_record(self, row: dict[str, Any], *, filename: str | None = None) -> Record:
        """See :func:`record_from_llama_bench`."""
        return record_from_llama_bench(row)


def record_from_llama_bench(row: dict[str, Any]) -> Record:
    """One ``llama-bench -o json`` row (see the module docstring).

    Raises:
        FieldError: a bad field, by record path and source field
            (``tok_s_decode (from avg_ts)``, ``gpu_info``).
    """
    b = RecordBuilder()
    n_gen, n_prompt = int(num(row.get("n_gen"), "n_gen") or 0), int(num(row.get("n_prompt"), "n_prompt") or 0)
    gpu_info = text(row.get("gpu_info") or None, "gpu_info") or ""
    gpus = [g.strip() for g in gpu_info.split(",") if g.strip()]
    size, nparams = num(row.get("model_size"), "model_size"), num(row.get("model_n_params"), "model_n_params")
    mtype = text(row.get("model_type") or None, "model_type") or ""
    mfile = row.get("model_filename")
    argv = ["llama-bench", "-m", str(mfile), "-p", str(n_prompt), "-n", str(n_gen),
            "-ngl", str(row.get("n_gpu_layers")), "-sm", str(row.get("split_mode"))]
    b.take(row, "date", "test_time")
    base = os.path.basename(str(mfile or ""))
    b.put("model.name", base or mtype or None, "model_filename" if base else "model_type")
    b.put("model.params_total", nparams, "model_n_params")
    b.put("hardware.gpu_name", gpus[0] if gpus else None, "gpu_info")
    b.put("hardware.gpu_count", max(1, len(gpus)), "gpu_info" if gpus else None)
    if len(gpus) > 1:
        b.take(row, "hardware.split_mode", "split_mode")
    else:
        b.put("hardware.split_mode", "none", "gpu_info")
    b.put("engine.name", "llama.cpp")
    b.put("engine.version", f"b{row.get('build_number')} ({row.get('build_commit')})", "build_number")
    b.put("quantization.weights", mtype.split()[-1] if mtype.split() else None, "model_type")
    b.put("quantization.kv_cache", f"{row.get('type_k')}/{row.get('type_v')}", "type_k")
    b.put("quantization.bytes_per_param", size / nparams if size and nparams else None, "model_size")
    b.put("launch_command", shlex.join(argv))
    b.put("batch_size", 1)
    b.put("prompt_tokens", n_prompt, "n_prompt")
    b.put("output_tokens", n_gen, "n_gen")
    if n_gen and not n_prompt:
        b.take(row, "tok_s_decode", "avg_ts")
    if n_prompt and not n_gen:
        b.take(row, "tok_s_prefill", "avg_ts")
    samples = row.get("samples_ts") or []
    if not isinstance(samples, list):
        raise FieldError("samples_ts", f"expected a list of per-repetition rates, got {show(samples)}")
    b.put("repetitions", len(samples) or None, "samples_ts")
    b.assumptions += ["launch command reconstructed from llama-bench fields",
                      "bytes per weight = model_size / model_n_params"]
    return b.build()


# --------------------------------------------------------------------------- as runs (issue 20)


def runs_from_rows(rows: list[tuple[int, Any]], file: str) -> tuple[list[Any], list[str]]:
    """One run per ``llama-bench`` row (``-o jsonl`` lines, or a JSON array of them).

    Not a serving benchmark: one stream, no TTFT. A generation test (``n_gen`` > 0,
    ``n_prompt`` = 0) maps ``avg_ts`` → per-stream decode mean and aggregate
    output tok/s (one stream: the same figure); a prompt test has no output
    tokens and only its prefill rate (``avg_ts``, noted: no registry metric).
    ``avg_ns`` (ns → s) is the wall time of one repetition; each repetition
    (``samples_ns``, ns → s; ``samples_ts``) is one request sample. The
    distinguishing setting (``pp512``/``tg128`` at depth ``n_depth``) is the
    benchmark label.
    """
    from tokcaliper.audit.importers.runs import PeerRun, Reader, metrics_from
    from tokcaliper.model.run import RequestRecord

    runs, skipped = [], []
    for i, row in rows:
        try:
            if not isinstance(row, dict) or "avg_ts" not in row:
                raise FieldError("avg_ts", "not a llama-bench row")
            r = Reader()
            n_gen = int(r.num(row.get("n_gen"), "n_gen") or 0)
            n_prompt = int(r.num(row.get("n_prompt"), "n_prompt") or 0)
            depth = int(r.num(row.get("n_depth"), "n_depth") or 0)
            ts = r.num(row.get("avg_ts"), "avg_ts")
            wall = r.num(row.get("avg_ns"), "avg_ns", "wall_s", 1e-9, "ns → s")
            samples = row.get("samples_ns") or []
            if not isinstance(samples, list):
                raise FieldError("samples_ns", f"expected a list, got {show(samples)}")
            gen = n_gen > 0 and n_prompt == 0
            test = f"tg{n_gen}" if gen else f"pp{n_prompt}" if n_gen == 0 else f"pp{n_prompt}+tg{n_gen}"
            reqs = [RequestRecord(index=k, start_s=0.0, e2e_s=float(ns) * 1e-9, output_tokens=n_gen,
                                  prompt_tokens=n_prompt, token_count_source="usage")
                    for k, ns in enumerate(samples) if isinstance(ns, (int, float)) and not isinstance(ns, bool)]
            notes = list(r.notes) + ["llama-bench: one stream, no TTFT; each repetition is one request sample "
                                     "(start_s = 0)"]
            if gen:
                r.fields["per_stream_decode_tok_s_mean"] = r.fields["aggregate_output_tok_s"] = "avg_ts (tok/s)"
            else:
                notes.append(f"prompt-processing rate avg_ts = {ts!r} tok/s (no registry metric; see `audit`)")
            settings = {"model": os.path.basename(str(row.get("model_filename") or "")) or row.get("model_type"),
                        "engine": "llama.cpp", "concurrency": 1, "test": test, "n_prompt": n_prompt, "n_gen": n_gen,
                        "n_depth": depth, "n_batch": row.get("n_batch"), "n_ubatch": row.get("n_ubatch"),
                        "n_gpu_layers": row.get("n_gpu_layers"), "flash_attn": row.get("flash_attn"),
                        "type_k": row.get("type_k"), "type_v": row.get("type_v"),
                        "backends": row.get("backends"), "gpu_info": row.get("gpu_info"),
                        "output_tokens": n_gen or None, "input_tokens": n_prompt or None}
            runs.append(PeerRun(
                tool="llama-bench", version=f"b{row.get('build_number')} ({row.get('build_commit')})",
                format="llama_bench", file=file, benchmark=f"row {i}: {test} @ d{depth}",
                settings={k: v for k, v in settings.items() if v is not None},
                metrics=metrics_from(wall_s=wall, completed=len(reqs) or 1, output_tokens=n_gen,
                                     prompt_tokens=n_prompt, aggregate_output_tok_s=ts if gen else None,
                                     request_throughput_rps=None, decode_mean=ts if gen else None),
                requests=reqs, fields=r.fields, notes=notes))
        except FieldError as e:
            skipped.append(f"{file}: record {i}: field {e.field}: {e}")
    return runs, skipped
