"""The outline of each reportable result: its verdict sentence first, then blocks.

One function per kind turns the typed report data into a
:class:`~tokcaliper.report.formats.document.Document`; every exporter writes
that document, so an experiment's page, a bench session's, a sweep's and an
audit's read the same in HTML and in Markdown. The page reads top-down: the
verdict (or the audit's findings) in one sentence, the numbers with their
uncertainty, the plots that apply, the telemetry summary, exactly what ran
(commands, versions, host) and the caveats. Nothing is computed here: the
figures, choices and caveats come with the data
(:mod:`tokcaliper.experiment.report_data`, :mod:`tokcaliper.audit.report_data`).
"""

from __future__ import annotations

from collections.abc import Sequence

from tokcaliper.audit.report_data import AuditFileReport
from tokcaliper.experiment.report_data import (ExperimentReport, SessionReport, SweepReport,
                                               TelemetryRow)
from tokcaliper.model.metrics import get_metric, headline_metrics
from tokcaliper.model.telemetry import HostInfo
from tokcaliper.numbers import num, percent
from tokcaliper.report import plots
from tokcaliper.report.formats.document import (Block, Bullets, Code, Document, Heading, Paragraph,
                                                Plot, Table)
from tokcaliper.stats.describe import Description

__all__ = ["Reportable", "audit_outline", "experiment_outline", "headline", "outline",
           "session_outline", "sweep_outline", "verdict_sentence"]

#: Every result ``tokcaliper report`` can write.
Reportable = ExperimentReport | SessionReport | SweepReport | AuditFileReport


# --- shared pieces ------------------------------------------------------------------------

def _ci(d: Description | None, sig: int = 4) -> str:
    return "—" if d is None or d.ci95 is None else f"{num(d.ci95[0], sig)} … {num(d.ci95[1], sig)}"


def _mean_ci(d: Description | None, sig: int = 4) -> str:
    if d is None:
        return "—"
    return f"{num(d.mean, sig)} [{_ci(d, sig)}]" if d.ci95 is not None else f"{num(d.mean, sig)} (n=1)"


def _host_line(host: HostInfo | None, tools: Sequence[str], servers: Sequence[str]) -> str:
    where = ("unknown" if host is None else
             f"{host.hostname or 'unnamed'}, {host.cpu_model or 'CPU unknown'}, "
             f"{host.cpu_logical_cores or '?'} logical CPUs, "
             f"{host.os or 'OS unknown'} {host.kernel or ''}".rstrip()
             + "".join(f", {g.name}" for g in host.gpus))
    return (f"tokcaliper {', '.join(tools)}; server {', '.join(servers) or 'version unknown'}; "
            f"host {where}")


def _telemetry_blocks(rows: Sequence[TelemetryRow]) -> list[Block]:
    head: list[Block] = [Heading("Telemetry summary")]
    if not rows:
        return head + [Paragraph("No telemetry sample was stored for these runs.")]
    return head + [Table(["device", "series", "n samples", "mean", "min … max"],
                         [[r.device, r.series, str(r.n), num(r.mean, 4), f"{num(r.min, 4)} … {num(r.max, 4)}"]
                          for r in rows])]


def _roofline_blocks(lines: Sequence[str]) -> list[Block]:
    if not lines:
        return []
    return [Heading("Against the physical limit"),
            Paragraph("Per-stream decode rate as a fraction of the memory-bandwidth roofline "
                      "(docs/roofline.md):"), Code(list(lines))]


def _tail(rep: ExperimentReport | SessionReport | SweepReport, commands: list[str],
          extra_caveats: Sequence[str] = ()) -> list[Block]:
    return [*_telemetry_blocks(rep.telemetry),
            Heading("Exactly what ran"), Code(commands + list(rep.command_lines)),
            Paragraph(_host_line(rep.host, rep.tool_versions, rep.server_versions)),
            Heading("Caveats"), Bullets([c.message for c in rep.caveats] + list(extra_caveats))]


def _comparison_rows(comparisons: Sequence[object]) -> list[list[str]]:
    rows = []
    for c in comparisons:
        for m in (c.metrics.metrics if c.metrics is not None else []):  # type: ignore[attr-defined]
            ci = m.decision_ci
            ratio = "—" if m.decision_ratio is None else f"×{num(m.decision_ratio, 4)}"
            rows.append([f"{c.candidate} vs {c.baseline}", m.metric, ratio,  # type: ignore[attr-defined]
                         "—" if ci is None else f"{num(ci[0], 4)} … {num(ci[1], 4)}",
                         num(m.p_used, 2), "—" if m.mde is None else f"±{percent(m.mde)}",
                         m.verdict])
    return rows


_COMPARISON_HEAD = ["comparison", "metric", "ratio", "95% CI", "p (Holm)", "MDE", "verdict"]


# --- experiment ---------------------------------------------------------------------------

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
            return (f"{c.candidate} against {c.baseline}, {m.metric}: {m.report.summary}", m.verdict)
        return (f"{c.candidate} against {c.baseline}: not comparable yet — {c.error}", "inconclusive")
    return "no comparison: the experiment has fewer than two arms with valid runs", "inconclusive"


def experiment_outline(rep: ExperimentReport) -> Document:
    """The experiment's page: verdict, arms and comparisons, runs per arm, running verdicts,
    TTFT/ITL ECDFs, telemetry lanes, roofline, runs, telemetry summary, commands, caveats."""
    an = rep.analysis
    spec = an.spec
    metric = get_metric(spec.metric)
    sentence, klass = verdict_sentence(rep)
    arm_rows = []
    for s in an.arms:
        d = s.description
        arm_rows.append([s.arm, f"{s.n}/{s.planned}", num(None if d is None else d.mean, 4), _ci(d),
                         num(None if d is None else d.std, 3), percent(None if d is None else d.cv)])
    blocks: list[Block] = [
        Heading("Numbers"),
        Table(["arm", "n / planned", f"mean ({metric.unit})", "95% CI of the mean", "sd", "CV"], arm_rows),
        Table(_COMPARISON_HEAD, _comparison_rows(an.comparisons)),
        Heading("Plots"),
        Plot(f"{spec.metric} per arm", lambda: plots.runs_by_arm(
            rep.values, metric=spec.metric, unit=metric.unit, marked=rep.marks)),
    ]
    for c in an.comparisons:
        if c.metrics is not None and c.metrics.metrics and c.metrics.metrics[0].running:
            m = c.metrics.metrics[0]
            blocks.append(Plot(f"running verdict, {c.candidate}/{c.baseline}", lambda m=m, c=c: plots.running_verdict(
                m.running, noise_band=m.noise_band, mde=m.mde, metric=f"{m.metric}, {c.candidate}/{c.baseline}")))
    blocks += [Plot("TTFT distribution", lambda: plots.ecdf(rep.ttft_ms, metric="TTFT", unit="ms")),
               Plot("ITL distribution", lambda: plots.ecdf(rep.itl_ms, metric="ITL", unit="ms")),
               Plot("telemetry lanes", lambda: plots.telemetry_lanes(rep.samples, runs=rep.spans,
                                                                     title="telemetry")),
               *_roofline_blocks(rep.roofline_lines),
               Heading("Runs"),
               Table(["run", "pos", "arm", spec.metric, "status"],
                     [[str(r.id), "—" if r.position is None else str(r.position + 1), r.arm, num(r.value, 4),
                       "warm-up (excluded)" if r.warmup_run else
                       ("ok" if r.valid else f"invalid: {r.invalid_reason}")] for r in an.runs])]
    if an.outcomes:
        blocks.append(Bullets([f"{o.kind}: {o.reason}" for o in an.outcomes]))
    blocks += _tail(rep, [f"arm {a}: {cmd}" for a, cmd in rep.server_commands.items()])
    return Document(
        kind="experiment", title=f"Experiment {an.id} — {an.name}", sentence=sentence, verdict=klass,
        subtitle=(f"status {an.status}, created {an.created_at}; {len(spec.arms)} arms × {spec.runs_per_arm} "
                  f"runs, order {spec.order}; primary metric {spec.metric} ({metric.unit}, "
                  f"{'higher' if metric.higher_is_better else 'lower'} is better)"),
        blocks=blocks)


# --- bench session ------------------------------------------------------------------------

def _session_sentence(rep: SessionReport) -> str:
    label = get_metric(rep.metric).label
    for f in rep.floors:
        for m in (f.noise.metrics if f.noise is not None else []):
            if m.name == label:
                return f"Noise floor of session {rep.session}, arm {f.arm}, {label}: {m.verdict.summary}"
    return f"Session {rep.session} has no valid run of {label}: no noise floor"


def session_outline(rep: SessionReport) -> Document:
    """A bench session's page: the noise-floor sentence, the floor per metric (n, mean with its
    95% CI, sd, CV with its CI, MDE), runs, plots, roofline, telemetry, commands, caveats."""
    cfg = rep.config
    metric = get_metric(rep.metric)
    blocks: list[Block] = [Heading("Noise floor")]
    warnings: list[str] = []
    for f in rep.floors:
        if f.noise is None:
            blocks.append(Paragraph(f"arm {f.arm}: no valid run, no noise floor"))
            continue
        rows = []
        for m in f.noise.metrics:
            d = m.description
            cv = percent(d.cv) + ("" if d.cv_ci95 is None else
                                  f" [{percent(d.cv_ci95[0])} … {percent(d.cv_ci95[1])}]")
            rows.append([m.name, str(d.n), num(d.mean, 4), _ci(d), num(d.std, 3), cv,
                         "—" if m.mde_n1 is None else f"±{percent(m.mde_n1)}",
                         "—" if m.mde_nR is None else f"±{percent(m.mde_nR)}"])
        blocks += [Paragraph(f"arm {f.arm}, {f.n} valid run(s):"),
                   Table(["metric", "n", "mean", "95% CI of the mean", "sd", "CV [95% CI]",
                          "MDE 1 run/arm", f"MDE {f.n} runs/arm"], rows)]
        explained = [m.explanation for m in f.noise.metrics if m.explanation]
        if explained:
            blocks.append(Bullets(explained))
        warnings += [w for w in f.noise.warnings if w not in warnings]
    names = [m.name for m in headline_metrics()][:4]
    blocks += [
        Heading("Plots"),
        Plot(f"{rep.metric} per run", lambda: plots.runs_by_arm(rep.values, metric=rep.metric, unit=metric.unit)),
        Plot("TTFT distribution", lambda: plots.ecdf(rep.ttft_ms, metric="TTFT", unit="ms")),
        Plot("ITL distribution", lambda: plots.ecdf(rep.itl_ms, metric="ITL", unit="ms")),
        Plot("telemetry lanes", lambda: plots.telemetry_lanes(rep.samples, runs=rep.spans, title="telemetry")),
        *_roofline_blocks(rep.roofline_lines),
        Heading("Runs"),
        Table(["run", "arm", "rep", *names, "status"],
              [[str(r.id), r.arm, str(r.repetition + 1), *(num(r.values.get(n), 4) for n in names),
                "ok" if r.valid else f"invalid: {r.invalid_reason}"] for r in rep.runs]),
    ]
    blocks += _tail(rep, [f"server: {rep.server_command or '(a live server, --url)'}"], warnings)
    load = (f"open loop {num(cfg.rate_rps)} req/s" if cfg.rate_rps is not None
            else f"concurrency {cfg.concurrency}")
    return Document(
        kind="session", title=f"Bench session {rep.session}", sentence=_session_sentence(rep),
        verdict="noise-floor",
        subtitle=(f"{len(rep.runs)} run(s) of {', '.join(f.arm for f in rep.floors)} against {cfg.base_url} "
                  f"(model {cfg.model}): {load}, {cfg.requests or '—'} requests per run, max_tokens "
                  f"{cfg.max_tokens}, temperature {num(cfg.temperature, trim=True)}"),
        blocks=blocks)


# --- load sweep ---------------------------------------------------------------------------

def _level(rep: SweepReport, level: float) -> str:
    return (f"c={level:g}" if rep.axis == "concurrency" else f"{level:g} req/s")


def _sweep_sentence(rep: SweepReport) -> tuple[str, str]:
    lat = get_metric(rep.latency_metric)
    what = "concurrency" if rep.axis == "concurrency" else "open-loop rate"
    levels = ", ".join(f"{lv.level:g}" for lv in rep.levels)
    peak = next((lv for lv in rep.levels if lv.arm == rep.peak), None)
    if peak is None or peak.throughput is None:
        return f"Sweep over {what} {levels}: no level has a valid run", "inconclusive"
    d = peak.throughput
    text = (f"Sweep over {what} {levels}: output throughput peaks at {_level(rep, peak.level)} with "
            f"{num(d.mean, 4)} tok/s (95% CI {_ci(d)}, n={d.n})")
    lats = [lv for lv in rep.levels if lv.latency is not None]
    if len(lats) >= 2:
        text += (f"; {lat.label} goes from {num(lats[0].latency.mean, 3)} at {_level(rep, lats[0].level)} "  # type: ignore[union-attr]
                 f"to {num(lats[-1].latency.mean, 3)} at {_level(rep, lats[-1].level)}")  # type: ignore[union-attr]
    if rep.slo_ms is None:
        return text, "sweep"
    within = next((lv for lv in rep.levels if lv.arm == rep.within_slo), None)
    if within is None:
        return text + f"; no level meets the TTFT SLO of {num(rep.slo_ms, 3)} ms", "fail"
    return (text + f"; the highest level within the TTFT SLO of {num(rep.slo_ms, 3)} ms "
            f"(its CI's upper end below it) is {_level(rep, within.level)}"), "pass"


def sweep_outline(rep: SweepReport) -> Document:
    """A sweep's page: the sentence (peak throughput, latency growth, the last level within the
    SLO), per-level figures with 95% CIs, each level against the first, latency against
    throughput with error bars and the SLO band, telemetry, commands, caveats."""
    an = rep.analysis
    spec = an.spec
    lat = get_metric(rep.latency_metric)
    sentence, klass = _sweep_sentence(rep)
    rows = [[_level(rep, lv.level), str(lv.n), _mean_ci(lv.throughput), _mean_ci(lv.ttft_p50_ms, 3),
             _mean_ci(lv.latency, 3), _mean_ci(lv.itl_p50_ms, 3),
             "—" if lv.meets_slo is None else ("yes" if lv.meets_slo else "no")] for lv in rep.levels]
    points = [{"label": _level(rep, lv.level), "x": lv.throughput.mean, "x_ci": lv.throughput.ci95,
               "y": lv.latency.mean, "y_ci": lv.latency.ci95, "n": lv.n}
              for lv in rep.levels if lv.throughput is not None and lv.latency is not None]
    blocks: list[Block] = [
        Heading("Numbers"),
        Table(["level", "n", "output tok/s [95% CI]", "TTFT p50 ms [95% CI]", f"{lat.label} [95% CI]",
               "ITL p50 ms [95% CI]", "meets SLO"], rows),
        Paragraph(f"Each level against {rep.levels[0].arm if rep.levels else 'the first'} "
                  f"(paired over the interleaved runs, {spec.metric}):"),
        Table(_COMPARISON_HEAD, _comparison_rows(an.comparisons)),
        Heading("Plots"),
        Plot("latency against throughput", lambda: plots.latency_vs_throughput(
            points, x_label="aggregate output throughput (tok/s)", y_label=lat.label, slo=rep.slo_ms,
            title=f"{lat.label} against throughput per {rep.axis} level (95% CIs over runs)")),
        Plot("telemetry lanes", lambda: plots.telemetry_lanes(rep.samples, runs=rep.spans, title="telemetry")),
        *_roofline_blocks(rep.roofline_lines),
        Heading("Runs"),
        Table(["run", "pos", "level", spec.metric, "status"],
              [[str(r.id), "—" if r.position is None else str(r.position + 1), r.arm, num(r.value, 4),
                "warm-up (excluded)" if r.warmup_run else ("ok" if r.valid else f"invalid: {r.invalid_reason}")]
               for r in an.runs]),
    ]
    if an.outcomes:
        blocks.append(Bullets([f"{o.kind}: {o.reason}" for o in an.outcomes]))
    blocks += _tail(rep, [f"server: {rep.server_command or spec.url or '(the local default)'}"])
    return Document(
        kind="sweep", title=f"Sweep {an.id} — {an.name}", sentence=sentence, verdict=klass,
        subtitle=(f"status {an.status}, created {an.created_at}; {len(rep.levels)} levels × {spec.runs_per_arm} "
                  f"runs, order {spec.order}" + ("" if spec.seed is None else f" (seed {spec.seed})")
                  + (f"; SLO {spec.load.slo}" if spec.load.slo else "")),
        blocks=blocks)


# --- audit --------------------------------------------------------------------------------

#: Records listed one by one on an audit page (all are in ``--format json``).
AUDIT_RECORDS_SHOWN = 25


def _audit_sentence(rep: AuditFileReport) -> tuple[str, str]:
    text = (f"{rep.records} record(s) audited: {rep.fail} fail, {rep.warn} warn, {rep.passed} pass, "
            f"{rep.na} n/a")
    if rep.top_finding:
        text += f"; look first at {rep.top_finding}"
    klass = "fail" if rep.fail else "warn" if rep.warn else "pass"
    return text, klass


def audit_outline(rep: AuditFileReport) -> Document:
    """An audit's page: the findings in one sentence, the checks' counts, the ranked suspects,
    each claim against its roofline (log scale), the records' verdicts, commands, caveats."""
    a = rep.audit
    sentence, klass = _audit_sentence(rep)
    blocks: list[Block] = [
        Heading("Checks"),
        Table(["check", "what", "fail", "warn", "pass", "n/a", "source-wide"],
              [[c.check, c.title, str(c.fail), str(c.warn), str(c.passed), str(c.na), str(c.source_wide)]
               for c in a.summary]),
    ]
    if a.suspects:
        blocks += [Heading("Ranked suspects"),
                   Table(["rank", "record", "fails", "warns", "claim ÷ bound", "bound and its basis"],
                         [[str(s.rank), s.label, str(s.fails), str(s.warns),
                           "—" if s.over_bound is None else f"×{num(s.over_bound, 3)}", s.bound or "—"]
                          for s in a.suspects]),
                   Bullets([f"{s.label} — {r}" for s in a.suspects[:10] for r in s.reasons])]
    if a.source_findings:
        blocks += [Heading("Said once for a whole source"),
                   Bullets([f"{f.source} ({f.records} records), {f.check}: {f.summary}" for f in a.source_findings])]
    if a.curves:
        blocks += [Heading("Batch curves (A4)"), Bullets([f"{v.status.value}: {v.summary}" for v in a.curves])]
    claims = [{"label": c.label, "claimed": c.claimed_tok_s, "bound": c.bound_tok_s, "status": c.status.value}
              for c in rep.claims]
    blocks += [
        Heading("Claims against their roofline"),
        Plot("claims against their roofline bound, log scale", lambda: plots.roofline_claims(claims)),
        Table(["record", "claimed tok/s", "bound tok/s", "bound", "claim ÷ bound", "firm"],
              [[c.label, num(c.claimed_tok_s, 4), num(c.bound_tok_s, 4), c.bound_kind or (c.why_no_bound or "—"),
                "—" if c.over_bound is None else f"×{num(c.over_bound, 3)}",
                "—" if c.firm is None else ("yes" if c.firm else "no (uncertain input)")] for c in rep.claims]),
        Heading("Records"),
    ]
    for r in a.records[:AUDIT_RECORDS_SHOWN]:
        blocks += [Paragraph(f"{r.label}: {r.status.value}"),
                   Table(["check", "status", "finding"], [[v.check, v.status.value, v.summary] for v in r.verdicts])]
    if len(a.records) > AUDIT_RECORDS_SHOWN:
        blocks.append(Paragraph(f"… and {len(a.records) - AUDIT_RECORDS_SHOWN} more records "
                                "(all of them: --format json)"))
    notes = [*a.warnings, *(f"skipped as malformed: {s}" for s in a.skipped)]
    blocks += [Heading("Exactly what ran"), Code([rep.command, f"exit code {rep.exit_code}"]),
               Paragraph(f"tokcaliper {rep.tool_version}"),
               Heading("Caveats"), Bullets([c.message for c in rep.caveats] + notes)]
    return Document(kind="audit", title=f"Audit of {', '.join(rep.files)}", sentence=sentence, verdict=klass,
                    subtitle=f"{rep.records} record(s) from {len(rep.files)} file(s); METHODS.md Part A",
                    blocks=blocks)


# --- dispatch -----------------------------------------------------------------------------

def outline(report: Reportable) -> Document:
    """The :class:`Document` of any reportable result.

    Raises:
        TypeError: not one of :data:`Reportable`.
    """
    if isinstance(report, ExperimentReport):
        return experiment_outline(report)
    if isinstance(report, SessionReport):
        return session_outline(report)
    if isinstance(report, SweepReport):
        return sweep_outline(report)
    if isinstance(report, AuditFileReport):
        return audit_outline(report)
    raise TypeError(f"not a reportable result: {type(report).__name__}")


def headline(report: Reportable) -> tuple[str, str, str]:
    """``(kind, sentence, verdict class)`` of ``report`` — the first line of its page, without
    drawing anything.

    Raises:
        TypeError: not one of :data:`Reportable`.
    """
    if isinstance(report, ExperimentReport):
        return ("experiment", *verdict_sentence(report))
    if isinstance(report, SessionReport):
        return "session", _session_sentence(report), "noise-floor"
    if isinstance(report, SweepReport):
        return ("sweep", *_sweep_sentence(report))
    if isinstance(report, AuditFileReport):
        return ("audit", *_audit_sentence(report))
    raise TypeError(f"not a reportable result: {type(report).__name__}")
