"""Telemetry gates: flag runs whose GPU slowed down during the measurement (issue 9, M5).

Pure functions on :class:`~tokcaliper.model.telemetry.TelemetrySummary`; no I/O.
Reports call :func:`gate_runs` and show its flags beside every run; ``compare`` can
give the verdict with and without the flagged runs (:func:`unflagged`) and in
clock-normalised units (:func:`clock_normalised`) as a cross-check.

Rules (a run is *flagged* when any applies on any device)
1. ``clock_below_threshold``: the device's clock spent more than
   ``max_share_below`` (default 0: any time at all) of the run below
   ``threshold × reference clock``. The threshold 0.75 is NVBench's default
   ``--throttle-threshold`` ("percentage of the device's default clock rate",
   NVIDIA/nvbench docs/cli_help.md); NVBench discards every sample taken below
   it, so "any time below" is its per-run equivalent.
   *Time share*: taken from ``clock_share_below`` when the caller gives it
   (computed from the samples); otherwise only the run summary is known and
   the gate uses ``clock_min_mhz < threshold × reference`` (the clock was
   below at least once) and reports the *lower bound* of the share implied by
   the mean and the minimum: with T = threshold clock, every sample is ≥
   clock_min and, above T, ≥ T, so ``mean ≥ f·min + (1−f)·T`` and
   ``f ≥ (T − mean)/(T − min)`` (0 when mean ≥ T). It is a bound, not an estimate.
   *Reference clock*: the device's default clock when the caller knows it
   (``reference_clock_mhz``); otherwise the highest ``clock_max_mhz`` that
   device reached over the runs gated together. The highest clock seen is at
   most the default boost clock, so this reference makes the gate lenient.
2. ``slowdown:<reason>``: an NVML clock-event reason of :data:`GATED_REASONS`
   had a time share > 0 (``DeviceSummary.throttle_share``; reason names from
   :data:`tokcaliper.model.telemetry.CLOCK_EVENT_REASON_BITS`). ``sw_power_cap``
   is reported as a note, not a flag: a power cap is often the setting under test.
3. ``client_saturated``: the load generator's own mean CPU share reached
   :data:`tokcaliper.model.telemetry.CLIENT_SATURATION_CORES` of one core
   (``TelemetrySummary.client_saturated``): a saturated client inflates every
   latency it reports.
4. ``foreign_load``: processes other than the server and the client used a mean of
   ≥ :data:`tokcaliper.model.telemetry.FOREIGN_CPU_BOUND_CORES` cores during the run
   (``TelemetrySummary.foreign_cpu_cores_mean``, issue 21): the server shared its
   host, like a GPU that slowed down.
5. ``foreign_gpu``: processes other than the server and the client took a mean of
   ≥ :data:`tokcaliper.model.telemetry.FOREIGN_GPU_SM_BOUND_PCT` % of a GPU's SM time
   (``DeviceSummary.foreign_sm_mean_pct``, NVML per-process utilisation): contexts
   time-slice one GPU, so that share can alone slow the server beyond compare's ±1 %
   band. Other processes' GPU memory without SM time is a note, not a flag (it takes
   capacity, not time); so is their presence where NVML gives no SM share.
A run without telemetry is not flagged; its gate says ``checked = False``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from tokcaliper.errors import InputError
from tokcaliper.model.telemetry import (
    FOREIGN_CPU_BOUND_CORES,
    FOREIGN_GPU_SM_BOUND_PCT,
    GPU_KINDS,
    DeviceSummary,
    TelemetrySummary,
)
from tokcaliper.numbers import num, percent

if TYPE_CHECKING:
    from tokcaliper.model.run import Run

__all__ = [
    "CLOCK_THRESHOLD",
    "GATED_REASONS",
    "GateReason",
    "RunGate",
    "clock_normalised",
    "gate",
    "gate_telemetry",
    "reference_clocks",
    "run_mean_clock_mhz",
    "unflagged",
]

#: Fraction of the default clock below which a sample counts as throttled (NVBench default 75%).
CLOCK_THRESHOLD = 0.75
#: NVML clock-event reasons that flag a run (hardware or thermal slowdowns, power brake).
GATED_REASONS: tuple[str, ...] = (
    "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
)
_NOTED_REASONS: tuple[str, ...] = ("sw_power_cap",)


class GateReason(BaseModel):
    """One reason a run was flagged.

    Attributes:
        code: ``"clock_below_threshold"``, ``"slowdown:<nvml reason>"``, ``"client_saturated"``,
            ``"foreign_load"`` (other processes' CPU) or ``"foreign_gpu"`` (their SM time).
        device: device id, e.g. ``"gpu0"``.
        share: time share of the run (fraction) it applied; for the clock rule
            without samples, the lower bound (``share_is_bound`` True).
        share_is_bound: True when ``share`` is only the lower bound from mean/min.
        detail: one line with the arithmetic.
    """

    code: str
    device: str
    share: float | None = None
    share_is_bound: bool = False
    detail: str


class RunGate(BaseModel):
    """The gate's verdict on one run.

    Attributes:
        run_id: the run's id (None for a summary without a run, or an unsaved run).
        index: position of the run in the list gated.
        checked: False when there was no telemetry to check.
        flagged: True when any :class:`GateReason` applies.
        reasons: why it is flagged.
        notes: facts that do not flag (e.g. ``sw_power_cap`` share, the reference clock used).
    """

    run_id: int | None = None
    index: int
    checked: bool
    flagged: bool
    reasons: list[GateReason] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def reference_clocks(summaries: Sequence[TelemetrySummary | None]) -> dict[str, float]:
    """Per device, the highest ``clock_max_mhz`` (else ``clock_start_mhz``) seen over the runs, MHz."""
    ref: dict[str, float] = {}
    for s in summaries:
        if s is None:
            continue
        for d in s.devices:
            c = d.clock_max_mhz if d.clock_max_mhz is not None else d.clock_start_mhz
            if c is not None and c > 0:
                ref[d.device] = max(ref.get(d.device, 0.0), c)
    return ref


def _clock_rule(d: DeviceSummary, ref: float, threshold: float, share: float | None,
                max_share: float) -> GateReason | None:
    t = threshold * ref
    if share is not None:
        if share > max_share:
            return GateReason(code="clock_below_threshold", device=d.device, share=share,
                              detail=f"{d.device}: clock below {percent(threshold, decimals=0)} of {ref:g} MHz "
                                     f"(= {t:g} MHz) for {percent(share)} of the run "
                                     f"(> {percent(max_share, decimals=0)})")
        return None
    if d.clock_min_mhz is None or d.clock_min_mhz >= t:
        return None
    bound = 0.0
    if d.clock_mean_mhz is not None and d.clock_mean_mhz < t and t > d.clock_min_mhz:
        bound = min(1.0, (t - d.clock_mean_mhz) / (t - d.clock_min_mhz))
    if bound <= max_share and max_share > 0:
        return None
    return GateReason(
        code="clock_below_threshold", device=d.device, share=bound, share_is_bound=True,
        detail=(f"{d.device}: clock fell to {d.clock_min_mhz:g} MHz, below {percent(threshold, decimals=0)} of "
                f"{ref:g} MHz (= {t:g} MHz); time share ≥ {percent(bound)} "
                f"(bound (T − mean)/(T − min) from mean {num(d.clock_mean_mhz, 4, grouping=False)} MHz)"),
    )


def gate_telemetry(
    summaries: Sequence[TelemetrySummary | None],
    *,
    reference_clock_mhz: Mapping[str, float] | float | None = None,
    clock_share_below: Sequence[Mapping[str, float] | None] | None = None,
    threshold: float = CLOCK_THRESHOLD,
    max_share_below: float = 0.0,
    run_ids: Sequence[int | None] | None = None,
) -> list[RunGate]:
    """Gate each run's telemetry summary (rules in the module docstring).

    Args:
        summaries: one :class:`TelemetrySummary` (or None) per run.
        reference_clock_mhz: the default clock, MHz: one number for every
            device, or device → MHz; devices not given use the highest clock seen
            over ``summaries`` (:func:`reference_clocks`).
        clock_share_below: optional per run, device → measured time share below
            ``threshold × reference`` (from the samples); without it the summary's
            min/mean are used (see module docstring).
        threshold: fraction of the reference clock (default 0.75, NVBench).
        max_share_below: the clock rule flags a share above this (default 0).
        run_ids: optional id per run, copied into the results.

    Returns:
        One :class:`RunGate` per summary, in order.

    Raises:
        InputError: threshold outside (0, 1], max_share_below outside [0, 1),
            a reference clock ≤ 0, or lists of different lengths.
    """
    if not 0 < threshold <= 1:
        raise InputError(f"clock threshold must be in (0, 1], got {threshold}")
    if not 0 <= max_share_below < 1:
        raise InputError(f"max share below the threshold must be in [0, 1), got {max_share_below}")
    n = len(summaries)
    for what, seq in (("clock_share_below", clock_share_below), ("run_ids", run_ids)):
        if seq is not None and len(seq) != n:
            raise InputError(f"{what} has {len(seq)} entries for {n} runs")
    seen = reference_clocks(summaries)
    given: dict[str, float] = {}
    if isinstance(reference_clock_mhz, (int, float)):
        given = {dev: float(reference_clock_mhz) for dev in seen}
        default_given: float | None = float(reference_clock_mhz)
    else:
        given = dict(reference_clock_mhz or {})
        default_given = None
    for dev, mhz in given.items():
        if not mhz > 0:
            raise InputError(f"reference clock of {dev} must be > 0 MHz, got {mhz}")
    out: list[RunGate] = []
    for i, s in enumerate(summaries):
        rid = None if run_ids is None else run_ids[i]
        if s is None or not s.devices:
            out.append(RunGate(run_id=rid, index=i, checked=False, flagged=False,
                               notes=["no telemetry: not gated"]))
            continue
        reasons: list[GateReason] = []
        notes: list[str] = []
        shares = None if clock_share_below is None else clock_share_below[i]
        for d in s.devices:
            ref = given.get(d.device, default_given)
            src = "given"
            if ref is None:
                ref, src = seen.get(d.device), "highest clock seen over these runs"
            if ref is not None:
                share = None if shares is None else shares.get(d.device)
                r = _clock_rule(d, ref, threshold, share, max_share_below)
                if r is not None:
                    reasons.append(r)
                notes.append(f"{d.device}: reference clock {ref:g} MHz ({src})")
            for reason in GATED_REASONS:
                sh = d.throttle_share.get(reason, 0.0)
                if sh > 0:
                    reasons.append(GateReason(
                        code=f"slowdown:{reason}", device=d.device, share=sh,
                        detail=f"{d.device}: {reason} active in {percent(sh)} of "
                               f"{d.throttle_samples} samples"))
            for reason in _NOTED_REASONS:
                sh = d.throttle_share.get(reason, 0.0)
                if sh > 0:
                    notes.append(f"{d.device}: {reason} active in {percent(sh)} of samples (not a flag)")
            r = _foreign_gpu_rule(d, notes)
            if r is not None:
                reasons.append(r)
        if s.client_saturated:
            reasons.append(GateReason(
                code="client_saturated", device="client",
                detail=s.client_saturation or "the load generator was CPU-saturated"))
        if s.foreign_cpu_cores_mean is not None and s.foreign_cpu_cores_mean >= FOREIGN_CPU_BOUND_CORES:
            reasons.append(GateReason(
                code="foreign_load", device="host",
                detail=f"{s.foreign_cpu or 'other processes ' + num(s.foreign_cpu_cores_mean) + ' cores'} "
                       f"≥ {num(FOREIGN_CPU_BOUND_CORES)}: the server shared its host"))
        out.append(RunGate(run_id=rid, index=i, checked=True, flagged=bool(reasons),
                           reasons=reasons, notes=notes))
    return out


def _foreign_gpu_rule(d: DeviceSummary, notes: list[str]) -> GateReason | None:
    """Rule 5 on one GPU: a flag when other processes' mean SM share reached the bound;
    a note when they only held memory, or when their SM share was not readable."""
    if d.kind not in GPU_KINDS or not d.foreign_procs_max:
        return None
    held = f"{d.foreign_procs_max} other process{'es' if d.foreign_procs_max > 1 else ''} " \
           f"held up to {num(d.foreign_mem_peak_mib)} MiB"
    sm = d.foreign_sm_mean_pct
    if sm is not None and sm >= FOREIGN_GPU_SM_BOUND_PCT:
        return GateReason(
            code="foreign_gpu", device=d.device, share=sm / 100.0,
            detail=f"{d.device}: {held} and took {num(sm)} % of its SM time on average (max "
                   f"{num(d.foreign_sm_max_pct)} %) ≥ {num(FOREIGN_GPU_SM_BOUND_PCT)} %: the server "
                   "shared its GPU (contexts time-slice; bound = compare's ±1 % band)")
    notes.append(f"{d.device}: {held}, " + ("SM share not readable" if sm is None else
                 f"{num(sm)} % of its SM time (< {num(FOREIGN_GPU_SM_BOUND_PCT)} %)") + " (not a flag)")
    return None


def gate_runs(runs: Sequence[Run], **kwargs: object) -> list[RunGate]:
    """Gate stored runs: :func:`gate_telemetry` on each ``run.telemetry``, with ``run.id``.

    Keyword arguments are those of :func:`gate_telemetry` (except ``run_ids``).
    """
    return gate_telemetry([r.telemetry for r in runs], run_ids=[r.id for r in runs],
                          **kwargs)  # type: ignore[arg-type]


def unflagged(values: Sequence[float], gates: Sequence[RunGate]) -> list[float]:
    """The values of the runs the gate did not flag (same order as ``gates``).

    Raises:
        InputError: lengths differ.
    """
    if len(values) != len(gates):
        raise InputError(f"{len(values)} values for {len(gates)} gated runs")
    return [v for v, g in zip(values, gates) if not g.flagged]


def run_mean_clock_mhz(summary: TelemetrySummary | None, device: str | None = None) -> float | None:
    """Mean clock of a run, MHz: of ``device``, or averaged over the GPUs (the CPU if none).

    Returns None when no device has a mean clock.
    """
    if summary is None:
        return None
    devs = summary.devices
    if device is not None:
        devs = [d for d in devs if d.device == device]
    else:
        gpus = [d for d in devs if d.kind in GPU_KINDS]
        devs = gpus or devs
    clocks = [d.clock_mean_mhz for d in devs if d.clock_mean_mhz is not None]
    return sum(clocks) / len(clocks) if clocks else None


def clock_normalised(value: float, clock_mean_mhz: float) -> float:
    """A throughput divided by the run's mean clock: units of the value per MHz.

    A cross-check for comparisons across runs whose clocks differ (M2, M4):
    throughput of a compute-bound decode scales roughly with the SM clock, so
    tok/s ÷ MHz removes that part of the noise; a memory-bound decode scales
    less than proportionally, so read the normalised figure as a bound, not a
    correction.

    Raises:
        InputError: clock ≤ 0 or not finite.
    """
    if not clock_mean_mhz > 0 or clock_mean_mhz == float("inf"):
        raise InputError(f"mean clock must be a positive number of MHz, got {clock_mean_mhz}")
    return value / clock_mean_mhz
