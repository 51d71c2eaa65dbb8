"""Plots with their uncertainty drawn (issue 19 item 2), headless (matplotlib's Agg canvas).

Every function takes plain values or typed results and returns a
:class:`matplotlib.figure.Figure` with a title, axis units and n; :func:`to_bytes`
turns one into PNG or SVG bytes and :func:`save` writes it. No global pyplot
state is used (figures are built on their own canvas), so the functions are
safe to call from any thread and leave nothing open.

What each draws:

- :func:`runs_by_arm` — each arm's runs as points over a box, one colour per
  arm, outlier and clump runs marked;
- :func:`running_verdict` — the cumulative ratio with its CI after each pair,
  the noise band and the MDE;
- :func:`telemetry_lanes` — one lane per telemetry series with run boundaries
  (a run without telemetry gives a figure that says so);
- :func:`covariate_fit` — a metric against a covariate with the fitted line;
- :func:`latency_vs_throughput` — a sweep's points with error bars (95% CIs
  over repeated runs) and an SLO band where given;
- :func:`ecdf` — latency distributions per arm (empirical CDF);
- :func:`window_table` — speculative decoding: AL and AL/(k+1) against k with
  error bars;
- :func:`roofline_claims` — audit records' claims against their roofline bound, log scale.
"""

from __future__ import annotations

import io
import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from tokcaliper.numbers import num, percent

__all__ = ["covariate_fit", "ecdf", "latency_vs_throughput", "no_data", "roofline_claims",
           "running_verdict", "runs_by_arm", "save", "telemetry_lanes", "to_bytes", "window_table"]

#: One colour per arm, colour-blind safe (Okabe & Ito 2008).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


def _figure(width: float = 7.0, height: float = 4.0) -> Figure:
    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def to_bytes(fig: Figure, fmt: Literal["png", "svg"] = "png") -> bytes:
    """The figure encoded as PNG or SVG."""
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt)
    return buf.getvalue()


def save(fig: Figure, path: Path) -> Path:
    """Write ``fig`` to ``path``; the format is the suffix (``.png`` or ``.svg``).

    Raises:
        ValueError: another suffix.
    """
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in ("png", "svg"):
        raise ValueError(f"plots are .png or .svg, got {path.name}")
    path.write_bytes(to_bytes(fig, fmt))  # type: ignore[arg-type]
    return path


def no_data(title: str, why: str) -> Figure:
    """A figure that says what is missing instead of an empty axis."""
    fig = _figure(7.0, 1.6)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, why, ha="center", va="center", fontsize=11, color="#555555",
            transform=ax.transAxes, wrap=True)
    return fig


def runs_by_arm(values: Mapping[str, Sequence[float]], *, metric: str, unit: str,
                marked: Mapping[str, Sequence[str | None]] | None = None) -> Figure:
    """Each arm's runs as points over a box (median, quartiles, 1.5 IQR whiskers).

    Args:
        values: arm → its runs' values (in run order), in ``unit``.
        metric, unit: labels.
        marked: arm → per run a mark (``"outlier"``, ``"clump"``…) or ``None``,
            in the order of ``values``; marked runs are drawn as crosses and named
            in the legend.
    """
    arms = [a for a, v in values.items() if len(v)]
    if not arms:
        return no_data(metric, "no runs with a value of this metric")
    fig = _figure()
    ax = fig.add_subplot()
    ax.boxplot([list(values[a]) for a in arms], widths=0.5, showfliers=False,
               medianprops={"color": "#333333"})
    seen_marks: set[str] = set()
    for i, arm in enumerate(arms, start=1):
        colour = PALETTE[(i - 1) % len(PALETTE)]
        vals = list(values[arm])
        marks = list((marked or {}).get(arm, [None] * len(vals)))
        offsets = [((j % 7) - 3) * 0.03 for j in range(len(vals))]  # deterministic jitter
        for v, m, dx in zip(vals, marks, offsets):
            if m:
                label = m if m not in seen_marks else None
                seen_marks.add(m)
                ax.scatter(i + dx, v, marker="x", s=60, color="#D55E00", zorder=3, label=label)
            else:
                ax.scatter(i + dx, v, s=22, color=colour, zorder=3, alpha=0.85)
    ax.set_xticks(range(1, len(arms) + 1), [f"{a}\nn={len(values[a])}" for a in arms])
    ax.set_ylabel(f"{metric} ({unit})")
    ax.set_title(f"{metric}: runs per arm (box: median and quartiles)")
    ax.grid(axis="y", alpha=0.3)
    if seen_marks:
        ax.legend(loc="best", fontsize=8)
    return fig


def running_verdict(steps: Sequence[object], *, noise_band: float, mde: float | None,
                    metric: str) -> Figure:
    """The cumulative ratio B/A with its CI after each pair, the noise band and the MDE.

    Args:
        steps: :class:`~tokcaliper.stats.ab.RunningStep` objects (``k``,
            ``cum_ratio``, ``ci``).
        noise_band: the ±band around 1 (fraction). mde: the final MDE (fraction) or ``None``.
    """
    pts = [s for s in steps if getattr(s, "ci", None) is not None]
    if not pts:
        return no_data(f"{metric}: running verdict", "fewer than 2 complete pairs: no interval yet")
    fig = _figure()
    ax = fig.add_subplot()
    ks = [s.k for s in pts]  # type: ignore[attr-defined]
    mid = [s.cum_ratio for s in pts]  # type: ignore[attr-defined]
    lo = [m - s.ci[0] for m, s in zip(mid, pts)]  # type: ignore[attr-defined]
    hi = [s.ci[1] - m for m, s in zip(mid, pts)]  # type: ignore[attr-defined]
    ax.axhspan(1 - noise_band, 1 + noise_band, color="#999999", alpha=0.25,
               label=f"noise band ±{percent(noise_band)}")
    if mde is not None and math.isfinite(mde):
        for sign in (-1, 1):
            ax.axhline(1 + sign * (noise_band + mde), color="#CC79A7", ls="--", lw=1,
                       label=f"band + MDE (±{percent(noise_band + mde)})" if sign > 0 else None)
    ax.errorbar(ks, mid, yerr=[lo, hi], fmt="o-", color=PALETTE[0], capsize=3,
                label="ratio B/A, 95% CI")
    ax.axhline(1.0, color="#333333", lw=0.8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    ax.set_xlim(ks[0] - 0.5, ks[-1] + 0.5)  # whole pairs on the axis, even for one point
    ax.set_xlabel("complete pairs (n)")
    ax.set_ylabel("ratio B/A (1 = no difference)")
    ax.set_title(f"{metric}: running verdict after each pair (n = {ks[-1]} pairs)")
    ax.legend(loc="best", fontsize=8)
    ax.grid(alpha=0.3)
    return fig


#: Telemetry series drawn as lanes: (sample attribute, label with unit).
LANES = (("clock_mhz", "clock (MHz)"), ("power_w", "power (W)"), ("temperature_c", "temperature (°C)"),
         ("utilization_pct", "utilisation (%)"), ("steal_pct", "steal (%)"))


#: A gap between samples longer than this many times their median spacing is drawn as a break.
GAP_FACTOR = 3.0


def _break_gaps(xs: Sequence[float], ys: Sequence[float]) -> tuple[list[float], list[float]]:
    """``xs, ys`` (in sample order, so in time) with a NaN point inside each sampling gap, so
    the line breaks there instead of drawing a straight segment through time nobody sampled."""
    steps = sorted(b - a for a, b in zip(xs, xs[1:]) if b > a)
    if not steps:
        return list(xs), list(ys)
    limit = GAP_FACTOR * steps[len(steps) // 2]
    out_x, out_y = list(xs[:1]), list(ys[:1])
    for a, b, v in zip(xs, xs[1:], ys[1:]):
        if b - a > limit:
            out_x.append((a + b) / 2)
            out_y.append(math.nan)
        out_x.append(b)
        out_y.append(v)
    return out_x, out_y


def telemetry_lanes(samples: Sequence[object], *, runs: Sequence[tuple[float, float, str]] = (),
                    title: str = "telemetry") -> Figure:
    """One lane per telemetry series that has data, per device, with run boundaries.

    Args:
        samples: :class:`~tokcaliper.model.telemetry.TelemetrySample` objects, in time order (as stored).
        runs: ``(start, end, label)`` of each run on the samples' ``t_mono_s`` clock (s).
        title: the figure's title.

    A run without telemetry gives :func:`no_data` saying so.
    """
    if not samples:
        return no_data(title, "no telemetry was recorded for this run (sampling off or unavailable)")
    t0 = min(s.t_mono_s for s in samples)  # type: ignore[attr-defined]
    lanes = []
    for attr, label in LANES:
        by_dev: dict[str, tuple[list[float], list[float]]] = {}
        for s in samples:
            v = getattr(s, attr, None)
            if v is not None:
                xs, ys = by_dev.setdefault(s.device, ([], []))  # type: ignore[attr-defined]
                xs.append(s.t_mono_s - t0)  # type: ignore[attr-defined]
                ys.append(v)
        if by_dev:
            lanes.append((label, by_dev))
    if not lanes:
        return no_data(title, "the samples hold none of clock, power, temperature, utilisation, steal")
    fig = _figure(8.0, 1.6 * len(lanes) + 0.8)
    axes = fig.subplots(len(lanes), 1, sharex=True, squeeze=False)[:, 0]
    n = len(samples)
    for ax, (label, by_dev) in zip(axes, lanes):
        for j, (dev, (xs, ys)) in enumerate(sorted(by_dev.items())):
            ax.plot(*_break_gaps(xs, ys), lw=1, color=PALETTE[j % len(PALETTE)], label=dev)
        for start, end, name in runs:
            ax.axvspan(start - t0, end - t0, color="#999999", alpha=0.12)
        ax.set_ylabel(label, fontsize=8)
        ax.grid(alpha=0.3)
        if len(by_dev) > 1:
            ax.legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel("time since the first sample (s); shaded: runs")
    axes[0].set_title(f"{title} (n = {n} samples, {len(runs)} runs)")
    return fig


def covariate_fit(x: Sequence[float], y: Sequence[float], *, slope: float, intercept: float,
                  covariate: str, x_unit: str, metric: str, unit: str,
                  rho: float | None = None) -> Figure:
    """A metric against a covariate, one point per run, with the fitted line y = a + b·x."""
    if len(x) < 2:
        return no_data(f"{metric} against {covariate}", "fewer than 2 runs with both values")
    fig = _figure()
    ax = fig.add_subplot()
    ax.scatter(x, y, color=PALETTE[0], s=24, zorder=3, label="runs")
    xs = [min(x), max(x)]
    ax.plot(xs, [intercept + slope * v for v in xs], color=PALETTE[1],
            label=f"fit: {num(intercept, 4)} + {num(slope, 3)}·x")
    ax.set_xlabel(f"{covariate} ({x_unit})")
    ax.set_ylabel(f"{metric} ({unit})")
    extra = f", Spearman ρ = {num(rho, 2)}" if rho is not None else ""
    ax.set_title(f"{metric} against {covariate} (n = {len(x)} runs{extra})")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def latency_vs_throughput(points: Sequence[Mapping[str, object]], *, x_label: str, y_label: str,
                          slo: float | None = None, title: str = "latency against throughput") -> Figure:
    """A sweep: one point per level with 95% CI error bars on both axes.

    Args:
        points: per level ``{"label", "x", "x_ci": (lo, hi) | None, "y",
            "y_ci": (lo, hi) | None, "n"}``.
        x_label, y_label: axis labels with units. slo: a latency bound drawn as
            a band above it (the region that misses the SLO).
    """
    pts = [p for p in points if p.get("x") is not None and p.get("y") is not None]
    if not pts:
        return no_data(title, "no level has both figures")
    fig = _figure()
    ax = fig.add_subplot()

    def err(p: Mapping[str, object], key: str, mid: float) -> tuple[float, float]:
        ci = p.get(key)
        return (0.0, 0.0) if ci is None else (mid - ci[0], ci[1] - mid)  # type: ignore[index]

    xs = [float(p["x"]) for p in pts]  # type: ignore[arg-type]
    ys = [float(p["y"]) for p in pts]  # type: ignore[arg-type]
    xe = [err(p, "x_ci", x) for p, x in zip(pts, xs)]
    ye = [err(p, "y_ci", y) for p, y in zip(pts, ys)]
    ax.errorbar(xs, ys, xerr=list(zip(*xe)), yerr=list(zip(*ye)), fmt="o-", color=PALETTE[0],
                capsize=3, label="mean, 95% CI")
    for p, x, y in zip(pts, xs, ys):
        ax.annotate(f"{p.get('label')} (n={p.get('n')})", (x, y), textcoords="offset points",
                    xytext=(4, 4), fontsize=7)
    if slo is not None:
        ax.axhspan(slo, max(max(ys) * 1.2, slo * 1.05), color="#D55E00", alpha=0.12,
                   label=f"misses the SLO (> {num(slo, 3)})")
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def ecdf(values: Mapping[str, Sequence[float]], *, metric: str, unit: str) -> Figure:
    """The empirical CDF of each arm's values (e.g. every request's TTFT), n in the legend."""
    arms = [a for a, v in values.items() if len(v)]
    if not arms:
        return no_data(f"{metric} distribution", "no values")
    fig = _figure()
    ax = fig.add_subplot()
    for j, arm in enumerate(arms):
        xs = sorted(values[arm])
        n = len(xs)
        ax.step(xs, [(i + 1) / n for i in range(n)], where="post",
                color=PALETTE[j % len(PALETTE)], label=f"{arm} (n={n})")
    ax.set_xlabel(f"{metric} ({unit})")
    ax.set_ylabel("share of values ≤ x")
    ax.set_title(f"{metric}: empirical CDF per arm")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def window_table(rows: Sequence[Mapping[str, object]]) -> Figure:
    """Speculative decoding: AL and AL/(k+1) against the draft window k, with error bars.

    Args:
        rows: per k ``{"k", "al", "al_ci": (lo, hi) | None, "n"}`` (AL = tokens per
            verification step; AL/(k+1) its share of the most a step can yield).
    """
    pts = [r for r in rows if r.get("al") is not None]
    if not pts:
        return no_data("acceptance length against k", "no window has an acceptance length")
    fig = _figure()
    ax1 = fig.add_subplot()
    ks = [int(r["k"]) for r in pts]  # type: ignore[call-overload]
    al = [float(r["al"]) for r in pts]  # type: ignore[arg-type]
    lo = [a - (r["al_ci"][0] if r.get("al_ci") else a) for a, r in zip(al, pts)]  # type: ignore[index]
    hi = [(r["al_ci"][1] if r.get("al_ci") else a) - a for a, r in zip(al, pts)]  # type: ignore[index]
    ax1.errorbar(ks, al, yerr=[lo, hi], fmt="o-", color=PALETTE[0], capsize=3, label="AL, 95% CI")
    ax1.plot(ks, [k + 1 for k in ks], ls=":", color="#999999", label="ceiling k + 1")
    ax1.set_xlabel("draft window k (tokens)")
    ax1.set_ylabel("acceptance length AL (tokens/step)")
    ax2 = ax1.twinx()
    ax2.errorbar(ks, [a / (k + 1) for a, k in zip(al, ks)],
                 yerr=[[x / (k + 1) for x, k in zip(lo, ks)], [x / (k + 1) for x, k in zip(hi, ks)]],
                 fmt="s--", color=PALETTE[1], capsize=3, label="AL/(k+1)")
    ax2.set_ylabel("AL/(k+1) (share of the ceiling)")
    ax2.set_ylim(0, 1.05)
    ns = ", ".join(f"k={k}: n={r.get('n')}" for k, r in zip(ks, pts))
    ax1.set_title(f"acceptance length against the draft window ({ns})", fontsize=9)
    h1, l1 = ax1.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax1.legend(h1 + h2, l1 + l2, fontsize=8, loc="lower right")
    ax1.grid(alpha=0.3)
    return fig


def roofline_claims(records: Sequence[Mapping[str, object]]) -> Figure:
    """Each record's claimed throughput against its roofline bound, log scale.

    Args:
        records: ``{"label", "claimed", "bound", "status"}`` (tok/s; bound
            ``None`` when it could not be computed — listed, not drawn).
    """
    pts = [r for r in records if r.get("claimed") and r.get("bound")]
    if not pts:
        return no_data("claims against the roofline", "no record has both a claim and a bound")
    fig = _figure(7.0, 0.55 * len(pts) + 1.8)
    ax = fig.add_subplot()
    ys = list(range(len(pts)))
    claimed = [float(r["claimed"]) for r in pts]  # type: ignore[arg-type]
    bound = [float(r["bound"]) for r in pts]  # type: ignore[arg-type]
    # A bar from 0 has no left end on a log axis: each bound is a tick, joined to its claim.
    ax.hlines(ys, [min(c, b) for c, b in zip(claimed, bound)], [max(c, b) for c, b in zip(claimed, bound)],
              color="#BBBBBB", linewidth=2, zorder=1)
    ax.scatter(bound, ys, marker="|", s=400, linewidths=2.5, color="#444444", zorder=2, label="roofline bound")
    colours = ["#D55E00" if c > b else PALETTE[2] for c, b in zip(claimed, bound)]
    ax.scatter(claimed, ys, color=colours, s=40, zorder=3, label="claimed (red: above the bound)")
    ax.set_yticks(ys, [textwrap.shorten(str(r.get("label")), 48, placeholder="…") for r in pts], fontsize=7)
    ax.set_ylim(-0.7, len(pts) - 0.3)
    lo, hi = min(claimed + bound), max(claimed + bound)
    ax.set_xscale("log")
    ax.set_xlim(lo / 1.6, hi * 1.6)
    # Ticks at 1, 2, 5 × 10^k, written plainly: a span inside one decade still gets labels.
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("tokens/s (log scale)")
    ax.set_title(f"claims against their roofline bound (n = {len(pts)} records)", fontsize=10)
    ax.legend(fontsize=8, loc="best")
    ax.grid(axis="x", alpha=0.3)
    return fig
