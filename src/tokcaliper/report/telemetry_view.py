"""Text rendering of per-run telemetry summaries (METHODS.md M5)."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.table import Table

from tokcaliper.model.run import Run
from tokcaliper.model.telemetry import TelemetrySummary
from tokcaliper.numbers import num, percent


def _throttle(share: dict[str, float]) -> str:
    active = {k: v for k, v in share.items() if v > 0 and k != "gpu_idle"}
    if not active:
        return "none"
    return ", ".join(f"{k} {percent(v, decimals=0)}" for k, v in sorted(active.items(), key=lambda kv: -kv[1]))


def summaries(runs: Sequence[Run]) -> list[tuple[Run, TelemetrySummary]]:
    """The validated telemetry summary of each run that has one."""
    return [(run, TelemetrySummary.model_validate(run.telemetry)) for run in runs if run.telemetry]


#: Telemetry columns: (header, no_wrap). Two-line headers keep the table within 100 columns.
_COLUMNS = (("run", True), ("device", False), ("n", True), ("clock MHz\nstart→end", True),
            ("clock MHz\nmean", True), ("util\n%", True), ("power W\nmean", True), ("energy\nJ", True),
            ("temp °C\nstart→peak", True), ("throttle\n(time share)", False))
_EMPTY = {"—", "—→—", ""}
#: Columns always shown (who and how many samples), even when a row has no figure.
_ALWAYS = {0, 1, 2}


def telemetry_table(summarized: Sequence[tuple[Run, TelemetrySummary]], *,
                    wide: bool = False) -> tuple[Table, list[str]] | None:
    """One row per run and device: clocks, power, energy, temperature, throttling.

    Args:
        summarized: from :func:`summaries`.
        wide: keep every column and every device's name in its row; by default a
            column with no figure in any row (``—``: no GPU, no power sensor) is left
            out and long device names go under the table, so it fits 100 columns.

    Returns:
        ``(table, left_out)`` — the names of the columns left out — or None when no
        run carries telemetry. Each row says how many samples it summarises (n),
        so every figure carries its n.
    """
    rows = [(run, d) for run, summary in summarized for d in summary.devices]
    if not rows:
        return None
    named = wide or len({(d.device, d.name) for _r, d in rows}) == len({d.device for _r, d in rows}) and all(
        len(f"{d.device} {d.name or ''}") <= 16 for _r, d in rows)
    cells = [
        (str(run.id), f"{d.device} {d.name or ''}".strip() if named else d.device, str(d.sample_count),
         f"{num(d.clock_start_mhz, 4)}→{num(d.clock_end_mhz, 4)}", num(d.clock_mean_mhz, 4),
         num(d.utilization_mean_pct), num(d.power_mean_w), num(d.energy_j),
         f"{num(d.temperature_start_c)}→{num(d.temperature_peak_c)}", _throttle(d.throttle_share))
        for run, d in rows
    ]
    keep = [wide or i in _ALWAYS or any(row[i] not in _EMPTY for row in cells) for i in range(len(_COLUMNS))]
    t = Table(title="telemetry per run (M5)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for (col, no_wrap), k in zip(_COLUMNS, keep):
        if k:
            t.add_column(col, justify="left" if col.startswith(("device", "throttle")) else "right",
                         no_wrap=no_wrap, overflow="fold")
    for row in cells:
        t.add_row(*(c for c, k in zip(row, keep) if k))
    if not named:  # long names go under the table, once each
        names = dict.fromkeys(f"{d.device} = {d.name}" for _r, d in rows if d.name)
        if names:
            t.caption = "devices: " + "; ".join(names)
            t.caption_justify = "left"
    dropped = [" ".join(col.split()) for (col, _nw), k in zip(_COLUMNS, keep) if not k]
    return t, dropped


def telemetry_notes(summarized: Sequence[tuple[Run, TelemetrySummary]]) -> list[str]:
    """Why some telemetry is missing (no GPU, no sensors, a back-end absent), each
    reason once; then, per run, host steal time and the load generator's CPU share
    (flagged when it saturated a core)."""
    notes: list[str] = []
    for _run, s in summarized:
        reasons = [s.gpu_unavailable_reason] if s.gpu_unavailable_reason else []
        reasons += [why for name, why in s.backend_errors.items() if why != s.gpu_unavailable_reason]
        for d in s.devices:
            reasons += [f"{d.device}: {why}" for why in d.unavailable.values()]
        for r in reasons:
            if r not in notes:
                notes.append(r)
    for run, s in summarized:
        parts = []
        for d in s.devices:
            if d.kind == "cpu" and d.steal_share is not None:
                parts.append(f"host steal {percent(d.steal_share)} of CPU time (n={d.sample_count} samples)")
            if d.kind == "process" and d.cpu_share_mean is not None:
                parts.append(f"{d.device} process {num(d.cpu_share_mean)} cores")
        if s.client_saturated:
            parts.append(f"[red]{s.client_saturation}[/red]")
        if parts:
            notes.append(f"run {run.id}: " + "; ".join(parts))
    return notes
