"""The experiment report as one self-contained HTML page, or as Markdown (issue 19 item 3).

The page opens offline: images are embedded as ``data:`` PNGs, the CSS is
inline, there is no script, font or link to the network. It reads top-down:
the verdict in one sentence, the numbers with their uncertainty, the plots,
the telemetry summary, the exact commands, versions and host, and the caveats
the methods require. :func:`experiment_markdown` gives the same content
without images, sized for a CI job summary.
"""

from __future__ import annotations

import base64
import html

from tokcaliper.experiment.report_data import ExperimentReport
from tokcaliper.model.metrics import get_metric
from tokcaliper.numbers import num, percent
from tokcaliper.report import plots

__all__ = ["experiment_html", "experiment_markdown", "verdict_sentence"]

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;max-width:980px;margin:2em auto;
padding:0 1em;color:#222}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
.verdict{font-size:1.15em;padding:.7em 1em;border-left:5px solid #0072B2;background:#f3f7fb}
.verdict.slower,.verdict.regression{border-color:#D55E00;background:#fdf3ee}
.verdict.faster{border-color:#009E73;background:#eef8f4}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}
td,th{border:1px solid #ddd;padding:.25em .6em;text-align:right}th{background:#f6f6f6}
td:first-child,th:first-child{text-align:left}
img{max-width:100%;height:auto;display:block;margin:.6em 0}
code,pre{font:13px/1.4 ui-monospace,Menlo,Consolas,monospace;background:#f6f6f6}
pre{padding:.6em;overflow-x:auto;white-space:pre-wrap}
.muted{color:#666;font-size:.9em}
"""


def _e(text: object) -> str:
    return html.escape("" if text is None else str(text))


def verdict_sentence(rep: ExperimentReport) -> tuple[str, str]:
    """``(sentence, verdict class)``: the experiment's answer in one sentence, first on the page.

    The governing verdict: for an until-decided experiment the sequential
    decision's sentence; else the primary metric's fixed-n verdict of the
    first comparison (the others follow in the table).
    """
    an = rep.analysis
    if an.governs is not None and an.sequential is not None:
        return an.governs[0].upper() + an.governs[1:], an.sequential.verdict or "inconclusive"
    for c in an.comparisons:
        if c.metrics is not None and c.metrics.metrics:
            m = c.metrics.metrics[0]
            return (f"{c.candidate} against {c.baseline}, {m.metric}: {m.report.summary}",
                    m.verdict)
        return (f"{c.candidate} against {c.baseline}: not comparable yet — {c.error}",
                "inconclusive")
    return "no comparison: the experiment has fewer than two arms with valid runs", "inconclusive"


def _img(fig: object, alt: str) -> str:
    data = base64.b64encode(plots.to_bytes(fig)).decode("ascii")  # type: ignore[arg-type]
    return f'<img alt="{_e(alt)}" src="data:image/png;base64,{data}">'


def _arm_rows(rep: ExperimentReport) -> list[list[str]]:
    rows = []
    for s in rep.analysis.arms:
        d = s.description
        ci = "—" if d is None or d.ci95 is None else f"{num(d.ci95[0], 4)} … {num(d.ci95[1], 4)}"
        rows.append([s.arm, f"{s.n}/{s.planned}", num(None if d is None else d.mean, 4), ci,
                     num(None if d is None else d.std, 3), percent(None if d is None else d.cv)])
    return rows


def _comparison_rows(rep: ExperimentReport) -> list[list[str]]:
    rows = []
    for c in rep.analysis.comparisons:
        for m in (c.metrics.metrics if c.metrics is not None else []):
            ci = m.decision_ci
            ratio = "—" if m.decision_ratio is None else f"×{num(m.decision_ratio, 4)}"
            rows.append([f"{c.candidate} vs {c.baseline}", m.metric, ratio,
                         "—" if ci is None else f"{num(ci[0], 4)} … {num(ci[1], 4)}",
                         num(m.p_used, 2), "—" if m.mde is None else f"±{percent(m.mde)}",
                         m.verdict])
    return rows


def _table(head: list[str], rows: list[list[str]]) -> str:
    out = ["<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>"]
    out += ["<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>" for r in rows]
    return "\n".join(out) + "</table>"


def _caveats(rep: ExperimentReport) -> list[str]:
    an = rep.analysis
    out = []
    for c in an.comparisons:
        for m in (c.metrics.metrics if c.metrics is not None else [])[:1]:
            if m.mde is not None:
                out.append(f"{c.candidate} vs {c.baseline}: with these runs no change smaller than "
                           f"±{percent(m.mde + m.noise_band)} (noise band ±{percent(m.noise_band)} + "
                           f"MDE ±{percent(m.mde)}) can be called on {m.metric}.")
    if an.spec.until_decided:
        out.append("Until-decided experiment: the sequential rule's verdict governs; the fixed-n "
                   "p-values and CIs assume the number of pairs was fixed in advance.")
    out.append("Client-side metrics: TTFT and ITL are measured at the client and include the "
               "network and the client's own scheduling (its self-monitor is stored per run).")
    if not rep.samples:
        out.append("No telemetry was recorded: clocks, power and temperature were not measured, "
                   "so throttling cannot be ruled out as a cause of differences.")
    invalid = [r for r in an.runs if not r.valid]
    if invalid:
        out.append(f"{len(invalid)} run(s) were invalid and left out: "
                   + "; ".join(f"run {r.id} ({r.invalid_reason})" for r in invalid[:5]))
    return out


def experiment_html(rep: ExperimentReport) -> str:
    """The report page (UTF-8 text of one self-contained HTML document)."""
    an = rep.analysis
    spec = an.spec
    metric = get_metric(spec.metric)
    sentence, klass = verdict_sentence(rep)
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        '<meta name=viewport content="width=device-width,initial-scale=1">',
        f"<title>tokcaliper experiment {_e(an.id)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Experiment {_e(an.id)} — {_e(an.name)}</h1>",
        f'<p class="muted">status {_e(an.status)}, created {_e(an.created_at)}; {len(spec.arms)} arms '
        f"× {spec.runs_per_arm} runs, order {_e(spec.order)}; primary metric {_e(spec.metric)} "
        f"({_e(metric.unit)}, {'higher' if metric.higher_is_better else 'lower'} is better)</p>",
        f'<p class="verdict {_e(klass)}" id="verdict">{_e(sentence)}</p>',
        "<h2>Numbers</h2>",
        _table(["arm", "n / planned", f"mean ({metric.unit})", "95% CI of the mean", "sd", "CV"],
               _arm_rows(rep)),
        _table(["comparison", "metric", "ratio", "95% CI", "p (Holm)", "MDE", "verdict"],
               _comparison_rows(rep)),
        "<h2>Plots</h2>",
        _img(plots.runs_by_arm(rep.values, metric=spec.metric, unit=metric.unit, marked=rep.marks),
             f"{spec.metric} per arm"),
    ]
    for c in an.comparisons:
        if c.metrics is not None and c.metrics.metrics and c.metrics.metrics[0].running:
            m = c.metrics.metrics[0]
            parts.append(_img(plots.running_verdict(m.running, noise_band=m.noise_band, mde=m.mde,
                                                    metric=f"{m.metric}, {c.candidate}/{c.baseline}"),
                              "running verdict"))
    parts.append(_img(plots.ecdf(rep.ttft_ms, metric="TTFT", unit="ms"), "TTFT distribution"))
    parts.append(_img(plots.ecdf(rep.itl_ms, metric="ITL", unit="ms"), "ITL distribution"))
    parts.append(_img(plots.telemetry_lanes(rep.samples, runs=rep.spans, title="telemetry"),
                      "telemetry lanes"))
    if rep.roofline_lines:
        parts.append("<h2>Against the physical limit</h2><p>Per-stream decode rate as a fraction "
                     "of the memory-bandwidth roofline (docs/roofline.md):</p><pre>"
                     + _e("\n".join(rep.roofline_lines)) + "</pre>")
    parts += ["<h2>Runs</h2>",
              _table(["run", "pos", "arm", spec.metric, "status"],
                     [[str(r.id), "—" if r.position is None else str(r.position + 1), r.arm,
                       num(r.value, 4), "warm-up (excluded)" if r.warmup_run else
                       ("ok" if r.valid else f"invalid: {r.invalid_reason}")] for r in an.runs])]
    if an.outcomes:
        parts.append("<ul>" + "".join(f"<li>{_e(o.kind)}: {_e(o.reason)}</li>" for o in an.outcomes)
                     + "</ul>")
    parts.append("<h2>Exactly what ran</h2><pre>"
                 + _e("\n".join(f"arm {a}: {cmd}" for a, cmd in rep.server_commands.items()))
                 + "\n" + _e("\n".join(rep.command_lines)) + "</pre>")
    host = rep.host
    parts.append("<p>" + _e(f"tokcaliper {', '.join(rep.tool_versions)}; server "
                            f"{', '.join(rep.server_versions) or 'version unknown'}; host "
                            + ("unknown" if host is None else
                               f"{host.hostname or 'unnamed'}, {host.cpu_model or 'CPU unknown'}, "
                               f"{host.cpu_logical_cores or '?'} logical CPUs, "
                               f"{host.os or 'OS unknown'} {host.kernel or ''}".rstrip()
                               + "".join(f", {g.name}" for g in host.gpus))) + "</p>")
    parts.append("<h2>Caveats</h2><ul>" + "".join(f"<li>{_e(c)}</li>" for c in _caveats(rep))
                 + "</ul>")
    parts.append('<p class="muted">Methods: docs/METHODS.md of tokcaliper (M1 noise floor, '
                 "M2 MDE and runs needed, M9 verdict gate).</p></body></html>")
    return "\n".join(parts) + "\n"


def experiment_markdown(rep: ExperimentReport) -> str:
    """The same content as Markdown without images (a CI job summary)."""
    an = rep.analysis
    spec = an.spec
    sentence, _ = verdict_sentence(rep)

    def table(head: list[str], rows: list[list[str]]) -> list[str]:
        cell = lambda s: str(s).replace("|", "\\|")  # noqa: E731
        return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head),
                *("| " + " | ".join(cell(c) for c in r) + " |" for r in rows)]

    metric = get_metric(spec.metric)
    lines = [f"### Experiment {an.id} — {an.name}", "", f"**{sentence}**", "",
             *table(["arm", "n / planned", f"mean ({metric.unit})", "95% CI of the mean", "sd", "CV"],
                    _arm_rows(rep)), "",
             *table(["comparison", "metric", "ratio", "95% CI", "p (Holm)", "MDE", "verdict"],
                    _comparison_rows(rep)), "", *(["Roofline (docs/roofline.md):", "", "```",
                                                   *rep.roofline_lines, "```", ""]
                                                  if rep.roofline_lines else []), "Caveats:", ""]
    lines += [f"- {c}" for c in _caveats(rep)]
    lines += ["", "Commands:", "", "```", *(f"arm {a}: {c}" for a, c in rep.server_commands.items()),
              "```"]
    return "\n".join(lines) + "\n"
