"""Renderers of the regression gate (:class:`~tokcaliper.experiment.baseline.GateReport`).

- :func:`render_gate`: the terminal view (outcome first, then the per-metric comparisons);
- :func:`gate_markdown`: the same content as a Markdown summary for a CI job
  summary (``$GITHUB_STEP_SUMMARY``);
- :func:`bencher_bmf`: Bencher Metric Format JSON — ``{benchmark: {measure:
  {"value", "lower_value", "upper_value"}}}`` (https://bencher.dev/docs/reference/bencher-metric-format/);
- :func:`write_gate_files`: those three files, where the user asked for them;
- :func:`render_baseline`, :func:`render_baseline_list`, :func:`render_baseline_saved`:
  the ``tokcaliper baseline`` views;
- :func:`github_benchmark`: github-action-benchmark's ``customSmallerIsBetter`` and
  ``customBiggerIsBetter`` lists of ``{"name", "unit", "value", "range", "extra"}``
  (https://github.com/benchmark-action/github-action-benchmark#examples).

Every exported value is the new runs' mean with its spread: the BMF bounds
and the ``range`` are the 95% CI of the mean (Student's t), ``extra`` holds n,
CV and the gate's verdict, so a dashboard shows the uncertainty too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from tokcaliper.experiment.baseline import BaselineDetail, BaselineList, GateReport
from tokcaliper.model.baseline import Baseline
from tokcaliper.errors import InputError
from tokcaliper.model.metrics import get_metric
from tokcaliper.numbers import num, percent
from tokcaliper.report.compare_view import render_multi

__all__ = ["bencher_bmf", "gate_markdown", "github_benchmark", "render_baseline", "render_baseline_list",
           "render_baseline_saved", "render_gate", "write_gate_files"]

_OUTCOME_STYLE = {"pass": "bold green", "regression": "bold red", "inconclusive": "bold yellow"}


def _ratio_cell(an: Any) -> str:
    """new/baseline with its CI, or the difference with its CI on the difference scale."""
    if an.scale == "difference" and an.difference is not None:
        lo, hi = an.difference_ci or (None, None)
        return f"{num(an.difference, 3)} {an.unit} [{num(lo, 3)}, {num(hi, 3)}]"
    if an.decision_ratio is None:
        return "undefined"
    lo, hi = an.decision_ci or (None, None)
    return f"×{num(an.decision_ratio, 4)} [{num(lo, 4)}, {num(hi, 4)}]"


def _side(d: Any) -> str:
    return f"{num(d.mean, 4)} ± {num(d.std, 2)} (n={d.n}, CV {percent(d.cv)})"


def render_gate(report: GateReport, console: Console) -> None:
    """Print the outcome line, the reason, then the comparisons. The load differences are
    the report's warnings: the warning sink prints them on stderr after this view."""
    style = _OUTCOME_STYLE[report.outcome]
    console.print(f"[{style}]gate: {report.outcome.upper()}[/{style}] — {escape(report.new_source)} "
                  f"against baseline {escape(report.baseline)}")
    console.print(escape(report.because))
    console.print()
    render_multi(report.comparison, console)


def gate_markdown(report: GateReport) -> str:
    """The gate as Markdown: outcome, reason, one table row per metric, load differences."""
    icon = {"pass": "✅", "regression": "❌", "inconclusive": "⚠️"}[report.outcome]
    lines = [f"### {icon} tokcaliper gate: {report.outcome} — {report.new_source} against "
             f"baseline `{report.baseline}`", "", report.because, "",
             "| metric | baseline | new | new vs baseline (95% CI) | verdict |",
             "|---|---|---|---|---|"]
    for an in report.comparison.metrics:
        base, new = report.described[an.metric]
        lines.append(f"| `{an.metric}` ({an.unit}) | {_side(base)} | {_side(new)} | "
                     f"{_ratio_cell(an)} | {an.verdict} |")
    if report.config_differences:
        lines += ["", "Load settings that differ from the baseline's: "
                  + "; ".join(f"`{d}`" for d in report.config_differences)]
    lines += ["", f"{report.comparison.note}. Unpaired: the baseline and the new runs are "
              "separate sessions, so drift between them is part of the comparison."]
    return "\n".join(lines) + "\n"


def bencher_bmf(report: GateReport, benchmark: str) -> dict[str, dict[str, dict[str, float]]]:
    """Bencher Metric Format of the new runs: one benchmark, one measure per metric.

    ``value`` is the mean, ``lower_value``/``upper_value`` its 95% CI; a metric
    without a CI (n < 2 cannot reach here) gets the value alone.
    """
    measures: dict[str, dict[str, float]] = {}
    for name, (_, new) in report.described.items():
        entry = {"value": new.mean}
        if new.ci95 is not None:
            entry.update(lower_value=new.ci95[0], upper_value=new.ci95[1])
        measures[name] = entry
    return {benchmark: measures}


def github_benchmark(report: GateReport, benchmark: str) -> tuple[list[dict], list[dict]]:
    """``(customSmallerIsBetter, customBiggerIsBetter)`` entries of the new runs.

    Each entry: ``name`` = ``"BENCHMARK metric"``, ``unit``, ``value`` (mean),
    ``range`` (``"± half-width"`` of the 95% CI), ``extra`` (n, CV, verdict).
    """
    verdicts = {an.metric: an.verdict for an in report.comparison.metrics}
    smaller, bigger = [], []
    for name, (_, new) in report.described.items():
        m = get_metric(name)
        half = None if new.ci95 is None else (new.ci95[1] - new.ci95[0]) / 2
        entry = {"name": f"{benchmark} {name}", "unit": m.unit, "value": new.mean,
                 "range": f"± {num(half, 3)}" if half is not None else "n/a",
                 "extra": f"n={new.n}, CV {percent(new.cv)}, vs baseline {report.baseline}: "
                          f"{verdicts[name]}"}
        (bigger if m.higher_is_better else smaller).append(entry)
    return smaller, bigger


def write_gate_files(report: GateReport, benchmark: str, *, summary_md: Path | None = None,
                     bmf: Path | None = None, github_benchmark_prefix: Path | None = None) -> list[Path]:
    """Write the files a CI job asked for; return their paths.

    ``summary_md``: :func:`gate_markdown`, appended (GitHub's job summary collects
    every step's text). ``bmf``: :func:`bencher_bmf`. ``github_benchmark_prefix``:
    ``PREFIX.smaller.json`` and ``PREFIX.bigger.json`` (:func:`github_benchmark`).

    Raises:
        InputError: a file that cannot be written (named, with the reason).
    """
    written: list[Path] = []
    try:
        if summary_md is not None:
            with open(summary_md, "a", encoding="utf-8") as f:
                f.write(gate_markdown(report))
            written.append(summary_md)
        if bmf is not None:
            bmf.write_text(json.dumps(bencher_bmf(report, benchmark), indent=1) + "\n", encoding="utf-8")
            written.append(bmf)
        if github_benchmark_prefix is not None:
            smaller, bigger = github_benchmark(report, benchmark)
            for suffix, entries in (("smaller", smaller), ("bigger", bigger)):
                path = github_benchmark_prefix.with_name(f"{github_benchmark_prefix.name}.{suffix}.json")
                path.write_text(json.dumps(entries, indent=1) + "\n", encoding="utf-8")
                written.append(path)
    except OSError as e:
        raise InputError(f"cannot write {e.filename}: {e.strerror}") from None
    return written


def _provenance(b: Baseline) -> str:
    return f"{b.source}, saved {b.created_at}" + (f", commit {b.commit}" if b.commit else "")


def render_baseline_saved(console: Console, b: Baseline) -> None:
    """``baseline save``: the name, how many runs of what, the commit when given."""
    console.print(f"baseline {b.name}: {len(b.runs)} runs of {b.source}"
                  + (f" at commit {b.commit}" if b.commit else ""), markup=False)


def render_baseline_list(console: Console, result: BaselineList) -> None:
    """``baseline list``: one line per baseline (runs, source, when saved, commit)."""
    console.print(f"{len(result.baselines)} baseline(s) in {result.db}", markup=False)
    for b in result.baselines:
        console.print(f"  {b.name}: {len(b.runs)} runs of {b.source}, {b.created_at}"
                      + (f", commit {b.commit}" if b.commit else ""), markup=False)


def render_baseline(console: Console, detail: BaselineDetail) -> None:
    """``baseline show``: provenance, the server and tool, then each headline metric's mean
    with its n and CV."""
    console.print(f"baseline {detail.name}: {_provenance(detail)}", markup=False)
    console.print(f"  server: {detail.server_command or '(a live server, --url)'}; "
                  f"tokcaliper {detail.tool_version}", markup=False)
    for m in detail.summary:
        d = m.description
        console.print(f"  {m.metric}: {num(d.mean, 4)} {m.unit} (n={d.n}, CV {percent(d.cv)})", markup=False)
