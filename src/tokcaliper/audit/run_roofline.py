"""A measured run against its roofline: what share of the physical limit it reached (issue 25).

The audit's A3 bound (:func:`tokcaliper.audit.checks.a3_roofline.compute_roofline`)
is applied to the user's own runs, not re-derived: a stored run becomes a
:class:`~tokcaliper.model.record.Record` (:func:`run_record`) and goes through
the audit's own :func:`~tokcaliper.audit.runner.build_context`, so ``audit`` of
the same run exported as a record (``tokcaliper show ID --record``) gives the
same bound to the digit.

Inputs of one run, each with its source:

* bytes per token = parameters read per token × bytes per weight: the
  parameters from the GGUF header of the file the server loaded (llama.cpp
  ``/props`` ``model_path``; read here with the audit's reader when the file is
  readable, the one file access of this module), else ``/v1/models``
  ``meta.n_params``, else the model-facts table by name; bytes per weight from the quantization the server
  names (``model_ftype``, A3's table);
* bandwidth: the probe stored with the session (:mod:`tokcaliper.telemetry.bandwidth`;
  GPU 0 when NVML saw a GPU, else the host), preferred over the spec sheet,
  which is shown beside it (GPU table; none exists for CPUs);
* per-stream roofline = bandwidth / bytes per token (tok/s); fraction = the
  run's mean per-stream decode rate ((output tokens − 1) ÷ (e2e − TTFT)) ÷ roofline;
* aggregate bound at concurrency C (batched decode reads the weights once per
  step for every stream in the batch): B × roofline with B = min(C, the
  server's slots); it applies when B > 1. KV-cache reads and compute are not
  counted, so both bounds are generous (an upper limit, never reached).

A fact that is missing (no host information, an unknown quantization, no
parameter count, no bandwidth) is named, never guessed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

from tokcaliper.audit.checks.a3_roofline import Roofline, compute_roofline
from tokcaliper.audit.constants import DEFAULT_HOST_BANDWIDTH_GB_S, DEFAULT_HOST_BANDWIDTH_SOURCE
from tokcaliper.audit.runner import build_context
from tokcaliper.errors import TokcaliperError
from tokcaliper.model.record import EngineInfo, HardwareInfo, ModelInfo, QuantInfo, Record
from tokcaliper.model.roofline import ArmRoofline, RunRoofline  # the result types, re-exported here
from tokcaliper.model.run import Run
from tokcaliper.numbers import num, percent


def _device(run: Run) -> tuple[HardwareInfo, str | None, list[str]]:
    """The device the run was served on, with its measured bandwidth; missing facts named."""
    host = run.host
    if host is None:
        return HardwareInfo(), None, ["device: the run stores no host information"]
    if host.gpus:
        g = host.gpus[0]
        probe = host.bandwidth_of(f"gpu{g.index}")
        hw = HardwareInfo(gpu_name=g.name, gpu_count=len(host.gpus), device_kind="gpu",
                          split_mode="none" if len(host.gpus) == 1 else None)
        label = f"gpu{g.index} {g.name or '(unnamed)'} (NVML; the server is taken to run on it)"
    else:
        probe = host.bandwidth_of("host")
        mem = round(host.memory_total_bytes / 1e9, 1) if host.memory_total_bytes else None
        hw = HardwareInfo(gpu_name=host.cpu_model or "host CPU", device_kind="cpu", memory_gb=mem)
        label = f"host CPU {host.cpu_model or '(model unknown)'} (no GPU seen by NVML)"
    if probe is not None:
        hw.bandwidth_measured_gb_s = probe.gb_s
        hw.bandwidth_measured_source = (f"tokcaliper probe at {host.timestamp_utc}: {probe.method}; "
                                        f"spread {percent(probe.spread)}")
    return hw, label, []


@lru_cache(maxsize=16)
def _gguf_params(path: str, size: int, mtime_ns: int) -> tuple[float | None, float | None, bool | None, str]:
    from tokcaliper.audit.importers.model_files import read_model_file

    pf = read_model_file(Path(path))
    return pf.total, pf.active, pf.is_moe, pf.total_source


def model_file_params(path: str | None) -> tuple[float | None, float | None, bool | None, str | None]:
    """``(total, active, is_moe, source)`` from the GGUF header of ``path`` when it is readable
    here (the audit's own reader, cached by size and mtime); all None otherwise."""
    if not path or not path.lower().endswith(".gguf"):
        return None, None, None, None
    try:
        st = os.stat(path)
        return _gguf_params(path, st.st_size, st.st_mtime_ns)
    except (OSError, TokcaliperError):
        return None, None, None, None


def run_record(run: Run) -> Record:
    """The run as an audit record: model, quantization and device facts, its measured rates.

    ``tok_s_decode`` is the run's mean per-stream decode rate, ``tok_s_aggregate``
    its aggregate output rate; the device's measured bandwidth travels in
    ``hardware.bandwidth_measured_gb_s``. Pure.
    """
    served = run.served
    m = run.metrics
    hw, _, _ = _device(run)
    total, active, moe, psrc = model_file_params(served.path if served else None)
    if total is None and served is not None:
        total, active, moe, psrc = served.params_total, served.params_active, served.is_moe, served.params_source
    return Record(
        id=f"tokcaliper run {run.id}" if run.id is not None else "tokcaliper run",
        date=run.started_at[:10],
        model=ModelInfo(name=(served.name if served and served.name else None) or run.config.model,
                        params_total=total, params_active=active if moe else None, is_moe=moe),
        hardware=hw,
        engine=EngineInfo(name=served.engine if served else None, version=run.server_version),
        quantization=QuantInfo(weights=served.quantization if served else None),
        launch_command=run.server_command,
        concurrency=run.config.concurrency,
        output_tokens=m.output_tokens, requests=m.completed or None, seconds=m.wall_s or None,
        tok_s_decode=m.per_stream_decode_tok_s_mean or None,
        tok_s_aggregate=m.aggregate_output_tok_s or None,
        notes=(f"exported from tokcaliper run {run.id} (session {run.session}, arm {run.arm}); "
               f"parameters: {psrc or 'not read'}"),
        provenance={"importer": "tokcaliper run", "run_id": run.id, "session": run.session, "arm": run.arm},
    )


def _missing(run: Run, record: Record, ctx) -> list[str]:  # type: ignore[no-untyped-def]
    """Every fact the bound needs and lacks, one phrase each."""
    out: list[str] = []
    served = run.served
    if record.tok_s_decode is None:
        out.append("per-stream decode rate: no completed request decoded more than one token")
    if served is None:
        out.append("model facts: the run stores none (stored before tokcaliper read /props and /v1/models)")
    elif ctx.quant is None and not record.quantization.bytes_per_param:
        why = served.missing.get("quantization", "not named by the server")
        out.append(f"quantization (bytes per weight) of model {record.model.name!r}: {why}")
    if ctx.params.total is None and ctx.params.active is None:
        why = served.missing.get("parameters", "") if served else ""
        out.append(f"parameter count of model {record.model.name!r}: not from the server, no model-facts "
                   "row and no size in the name" + (f" ({why})" if why else ""))
    if ctx.gpu is None or not ctx.gpu.used_bandwidth_gb_s:
        out.append(f"memory bandwidth of the device: {ctx.gpu_error or 'unknown'}")
    return out


def run_roofline(run: Run) -> RunRoofline:
    """The run's per-stream and aggregate decode rates against their rooflines (module docstring).

    Pure apart from reading the model file's GGUF header (the other facts were
    read when the run was measured). Never raises: a missing fact is named in ``missing``.
    """
    out = RunRoofline(run_id=run.id, arm=run.arm)
    record = run_record(run)
    _, out.device, no_device = _device(run)
    ctx = build_context(record)
    out.missing = no_device + [m for m in _missing(run, record, ctx)
                               if not (no_device and m.startswith("memory bandwidth"))]
    if out.missing:
        return out
    roof, why = compute_roofline(ctx)
    if roof is None:
        out.missing = [why or "roofline not computable"]
        return out
    _fill(out, run, roof, ctx)
    return out


def _fill(out: RunRoofline, run: Run, roof: Roofline, ctx) -> None:  # type: ignore[no-untyped-def]
    out.per_stream_tok_s = roof.claim_tok_s
    out.bound_tok_s = roof.bound_tok_s
    out.fraction = roof.ratio
    out.measured_gb_s = ctx.gpu.achievable_gb_s
    out.spec_gb_s = ctx.gpu.bandwidth_gb_s
    out.arithmetic = list(roof.arithmetic)
    out.sources = list(roof.sources)
    if ctx.gpu.achievable_gb_s is None:  # no probe: the spec sheet is the bandwidth
        out.arithmetic.append("bandwidth not measured (no probe stored with the run): the spec sheet is used")
    else:
        out.spec_source = ctx.gpu.bandwidth_source
        if not out.spec_gb_s and run.host is not None and not run.host.gpus:
            # no CPU table: the audit's assumed host bandwidth stands in, said as such
            out.spec_gb_s = DEFAULT_HOST_BANDWIDTH_GB_S
            out.spec_source = ("no spec-sheet table for CPUs; A3's assumed host bandwidth: "
                               f"{DEFAULT_HOST_BANDWIDTH_SOURCE}")
        if out.spec_gb_s:
            out.spec_bound_tok_s = roof.bound_tok_s * out.spec_gb_s / ctx.gpu.achievable_gb_s
            out.spec_fraction = roof.claim_tok_s / out.spec_bound_tok_s
            out.arithmetic.append(
                f"at the spec sheet's {num(out.spec_gb_s, 4)} GB/s ({out.spec_source}): roofline "
                f"{num(out.spec_bound_tok_s, 3)} tok/s, fraction {num(out.spec_fraction, 3)}")
        else:
            out.arithmetic.append(f"spec sheet: none ({ctx.gpu.bandwidth_source})")
    slots = run.served.slots if run.served else None
    c = run.config.concurrency
    out.batch = max(1, min(c, slots) if slots else c)
    agg = run.metrics.aggregate_output_tok_s
    if out.batch > 1 and agg:
        out.aggregate_tok_s = agg
        out.aggregate_bound_tok_s = out.batch * roof.bound_tok_s
        out.aggregate_fraction = agg / out.aggregate_bound_tok_s
        slot_text = f"min(concurrency {c}, {slots} server slots)" if slots else f"concurrency {c}"
        out.arithmetic.append(
            f"aggregate bound = {out.batch} streams [{slot_text}] × {num(roof.bound_tok_s, 3)} tok/s = "
            f"{num(out.aggregate_bound_tok_s, 3)} tok/s (one read of the weights per batch step serves every "
            f"stream; KV-cache reads and compute not counted); aggregate / bound = {num(agg, 4)} / "
            f"{num(out.aggregate_bound_tok_s, 4)} = {num(out.aggregate_fraction, 3)}")
    if run.served and run.served.size_bytes and run.served.params_total:
        avg = run.served.size_bytes / run.served.params_total
        out.sources.append(f"the file's tensors: {num(run.served.size_bytes / 1e6, 4)} MB over "
                           f"{num(run.served.params_total / 1e9, 4)}e9 params = {num(avg, 3)} B per weight on "
                           f"average (/v1/models meta.size; the quantization's {num(roof.bytes_per_param, 3)} B "
                           "is the audit's figure)")
    psrc = model_file_params(run.served.path if run.served else None)[3] or (run.served.params_source
                                                                            if run.served else None)
    if psrc:
        out.sources.append(f"parameters in the run's record: {psrc}")


def _mean_sd(xs: list[float]) -> tuple[float | None, float | None]:
    if not xs:
        return None, None
    mean = sum(xs) / len(xs)
    if len(xs) < 2:
        return mean, None
    return mean, (sum((x - mean) ** 2 for x in xs) / (len(xs) - 1)) ** 0.5


def arm_rooflines(runs: Sequence[Run], order: Sequence[str] = ()) -> list[ArmRoofline]:
    """Per arm, the valid measured runs' fractions of their rooflines. Pure.

    Arms come in ``order`` (an experiment's arms as its file lists them), then the rest as first seen.
    """
    arms: dict[str, list[RunRoofline]] = {a: [] for a in order if any(r.arm == a for r in runs)}
    for r in runs:
        if r.valid and not r.warmup_run:
            arms.setdefault(r.arm, []).append(run_roofline(r))
    out = []
    for arm, rr in arms.items():
        fr = [x.fraction for x in rr if x.fraction is not None]
        ag = [x.aggregate_fraction for x in rr if x.aggregate_fraction is not None]
        mean, sd = _mean_sd(fr)
        amean, asd = _mean_sd(ag)
        out.append(ArmRoofline(arm=arm, runs=rr, n=len(fr), mean=mean, std=sd,
                               cv=sd / mean if sd is not None and mean else None,
                               aggregate_n=len(ag), aggregate_mean=amean, aggregate_std=asd,
                               missing=[] if fr else (rr[0].missing if rr else ["no valid run"])))
    return out
