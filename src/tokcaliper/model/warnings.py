"""Every caveat tokcaliper prints, written once: a code and a message template each.

Producers (``stats``, ``telemetry``, ``cli``) build the text with
:meth:`NamedWarning.text`; renderers print it. A warning's wording therefore
lives here only, and tests and tools can match on the code's template instead
of copying the sentence. Pure data, no I/O (hyperfine keeps its warnings in one
module the same way).
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from functools import cache

from pydantic import BaseModel, ConfigDict

__all__ = [
    "ALL",
    "CAP_DISPATCH_LATE",
    "CLIENT_CPU_BOUND",
    "CLIENT_DISPATCH_LATE",
    "CLIENT_LOOP_LAG",
    "CLIENT_LOOP_LAG_KERNEL_STAMPED",
    "COVARIATE_DIFFERS_BY_ARM",
    "COVARIATE_DURING_RUN",
    "COVARIATE_EXPLAINS_LITTLE",
    "CSV_MISSING_CELLS",
    "CV_FROM_FEW_RUNS",
    "CV_UNDEFINED",
    "Caveat",
    "DAMAGED_RUN_SKIPPED",
    "FEW_REPETITIONS",
    "GATE_LOAD_DIFFERS",
    "GPU_OVERRIDE_UNMATCHED",
    "HOST_DISPATCH_LATE",
    "IDENTICAL_RUNS",
    "INDEPENDENT_RUNS_ASSUMED",
    "LENGTHS_APPROXIMATE",
    "LENGTHS_OFF",
    "LENGTHS_UNCOUNTED",
    "MACHINE_CHECK_FINDING",
    "MIXED_TOOLS",
    "NOT_BEST_BUY",
    "NO_GPU",
    "NO_NOISE_FLOOR",
    "NO_POWER_SOURCE",
    "NamedWarning",
    "QUICK_FORMULA_POWER",
    "REPORT_AUDIT_BOUNDS",
    "REPORT_AUDIT_UNCHECKED",
    "REPORT_CLIENT_SIDE",
    "REPORT_NO_SLO",
    "REPORT_NO_TELEMETRY",
    "REPORT_RUNS_LEFT_OUT",
    "REPORT_SMALLEST_CHANGE",
    "REPORT_SWEEP_PERCENTILES",
    "REPORT_UNTIL_DECIDED",
    "RUNS_LEFT_OUT",
    "RUN_LEFT_OUT",
    "SERVER_LEFT_RUNNING",
    "SERVER_RESTARTED",
    "SERVER_STOP_FAILED",
    "SINGLE_REPETITION",
    "SINGLE_RUNS_ANECDOTE",
    "SINGLE_RUN_NO_CV",
    "STORED_RUN_NOTE",
    "TELEMETRY_OFF",
    "TEXT_AT_ONE_INSTANT",
    "TOKENS_PER_CHUNK",
    "caveat_of",
    "named",
]


class Caveat(BaseModel):
    """One warning as a result carries it: its code and its finished message.

    The one shape every command's result uses for its caveats: the text view
    prints each on stderr as ``tokcaliper: warning: <message>``
    (:func:`tokcaliper.report.output.warn`), the JSON keeps them in the
    result's ``warnings`` list, so a script can match on ``code``.

    Attributes:
        code: the :class:`NamedWarning` code, e.g. ``"few-repetitions"``.
        message: the sentence, fields filled in.
    """

    model_config = ConfigDict(frozen=True)

    code: str
    message: str


@dataclass(frozen=True)
class NamedWarning:
    """A caveat with a stable code and a message template.

    Attributes:
        code: short kebab-case identifier, e.g. ``"few-repetitions"``.
        template: :meth:`str.format` template; its ``{fields}`` are the
            keyword arguments :meth:`text` needs.
    """

    code: str
    template: str

    @property
    def fields(self) -> tuple[str, ...]:
        """The names the template needs, in order of first appearance."""
        names: list[str] = []
        for _lit, name, _spec, _conv in string.Formatter().parse(self.template):
            if name and name not in names:
                names.append(name)
        return tuple(names)

    def text(self, **fields: object) -> str:
        """The message with ``fields`` filled in.

        Raises:
            KeyError: a field of the template is missing (a programming error).
        """
        return self.template.format(**fields)

    def caveat(self, **fields: object) -> Caveat:
        """The filled-in warning as a result carries it (:class:`Caveat`).

        Raises:
            KeyError: a field of the template is missing (a programming error).
        """
        return Caveat(code=self.code, message=self.text(**fields))


#: METHODS.md M1: "run one unchanged configuration at least 5 times" — a CV from fewer
#: repetitions is itself uncertain. The one home of the figure: the noise floor, the A/B
#: planner's CV warning, audit check A10 and the warnings below (``{min_n}``) all read it.
M1_MIN_RUNS = 5

#: METHODS.md M1: CV from fewer than :data:`M1_MIN_RUNS` repetitions is itself uncertain.
FEW_REPETITIONS = NamedWarning(
    "few-repetitions",
    "fewer than {min_n} repetitions (n={n}): CV itself is uncertain (see its 95% CI)")
#: One value of a metric: no spread at all.
SINGLE_REPETITION = NamedWarning(
    "single-repetition", "{metric}: one repetition: std, CV and MDE are undefined")
#: CV = std/mean needs a positive mean.
CV_UNDEFINED = NamedWarning("cv-undefined", "{metric}: mean ≤ 0, CV undefined")
#: Zero spread usually means the metric is not measured at all.
IDENTICAL_RUNS = NamedWarning(
    "identical-runs", "{metric}: all {n} runs identical — is the metric really measured?")
#: One stored run shown in detail (``tokcaliper show``): no run-to-run noise (M1).
SINGLE_RUN_NO_CV = NamedWarning(
    "single-run-no-cv",
    "one run has no CV: run-to-run noise needs ≥ {min_n} repetitions "
    "(`tokcaliper bench --repeat {min_n}`, METHODS.md M1)")
#: ``tokcaliper plan --from-runs`` with fewer than 5 runs (METHODS.md M1).
CV_FROM_FEW_RUNS = NamedWarning(
    "cv-from-few-runs",
    "CV estimated from only {n} runs (fewer than {min_n}): CV itself is uncertain, "
    "and so is every figure above (METHODS.md M1)")
#: METHODS.md M3: n = 8·(CV/Δ)² has only about 50% power.
QUICK_FORMULA_POWER = NamedWarning(
    "quick-formula-power",
    "the quick formulas have only about 50% power (here {power_pct} at n={n}); "
    "use the power-based n to find a real {effect} effect with probability {power}")
#: METHODS.md M3, M4: drift makes neighbouring runs dependent.
INDEPENDENT_RUNS_ASSUMED = NamedWarning(
    "independent-runs-assumed",
    "all formulas assume independent runs; clock drift makes neighbouring runs dependent, "
    "so the real floor is worse — interleave arms (METHODS.md M3, M4)")
#: METHODS.md M10: single runs per arm.
SINGLE_RUNS_ANECDOTE = NamedWarning(
    "single-runs-anecdote",
    "single runs per arm: differences below {mde} are anecdotes (METHODS.md M10)")
#: No GPU telemetry (M5); ``reason`` says why (library, driver, zero devices).
NO_GPU = NamedWarning("no-gpu", "no NVIDIA GPU: {reason}")
#: Idle power could not be measured (M5).
NO_POWER_SOURCE = NamedWarning("no-power-source", "no power source (no NVML GPU, no RAPL) — not measured")
#: Stopping a managed server failed (a second timeout, a permission error, …).
SERVER_STOP_FAILED = NamedWarning(
    "server-stop-failed",
    "could not stop the server (pid {pid}): {error}; it may still be running "
    "(kill -KILL -{pid}; log {log})")
#: A server started by an earlier tokcaliper that died (kill -9) is still running.
SERVER_LEFT_RUNNING = NamedWarning(
    "server-left-running",
    "a server started by an earlier tokcaliper (pid {parent}, gone) is still running: pid {pid}, "
    "port {port}: {command} (stop it with kill -TERM -{pgid})")
#: Telemetry switched off by the user.
TELEMETRY_OFF = NamedWarning("telemetry-off", "not sampled (--telemetry-interval 0)")

#: The load client's event loop lagged (tokcaliper.load.monitor), arrivals
#: stamped by the loop: every read time may trail its arrival by the lag.
CLIENT_LOOP_LAG = NamedWarning(
    "client-loop-lag",
    "client event loop lagged p99 {lag_ms} ms (bound {bound_ms} ms): latencies below that are not resolved")
#: The same with arrivals stamped by the kernel (tokcaliper.load.stamped):
#: read times do not trail, but sends can, and tokens closer together than
#: the lag can arrive in one read and share its stamp.
CLIENT_LOOP_LAG_KERNEL_STAMPED = NamedWarning(
    "client-loop-lag-kernel-stamped",
    "client event loop lagged p99 {lag_ms} ms (bound {bound_ms} ms, the larger of 3 ms and the median ITL): "
    "arrivals are kernel-stamped, but requests may have left up to that late and tokens less than that "
    "apart may share one stamp")
#: The load client could not send on schedule (coordinated omission).
CLIENT_DISPATCH_LATE = NamedWarning(
    "client-dispatch-late",
    "requests left {delay_ms} ms after their scheduled time at p99 (bound {bound_ms} ms): the client, "
    "not the server, limited this run — see the TTFT from schedule")
#: Requests left late while the client's own figures (loop lag, CPU share) were within
#: their bounds: the host, not the client, delayed them (issue 21 item 5).
HOST_DISPATCH_LATE = NamedWarning(
    "host-dispatch-late",
    "requests left {delay_ms} ms after their scheduled time at p99 (bound {bound_ms} ms) while the client's "
    "loop lagged p99 {lag_ms} ms and used {share_pct} of a core: the client was not the bottleneck — the "
    "host was (other processes held its CPUs; see their CPU in the telemetry)")
#: Open-loop arrivals that found the in-flight cap reached waited for a slot (issue 21):
#: the load asked more than the cap lets the server serve; neither client nor host was late.
CAP_DISPATCH_LATE = NamedWarning(
    "cap-dispatch-late",
    "requests left {delay_ms} ms after their scheduled time at p99 (bound {bound_ms} ms): {late} of {n} "
    "arrivals found the in-flight cap ({cap} streams) reached and waited for a slot past the bound — "
    "the arrival rate was beyond what {cap} streams serve; the cap, not the client or the host, "
    "delayed them (see the TTFT from schedule)")
#: The load client's loop thread was saturated.
CLIENT_CPU_BOUND = NamedWarning(
    "client-cpu-bound",
    "client loop used {share_pct} of a core (bound {bound_pct}): the client was the bottleneck")

#: Requests whose text all came at one instant (tokcaliper.load.summary.decode_time_s).
TEXT_AT_ONE_INSTANT = NamedWarning(
    "text-at-one-instant",
    "{k} of {n} completed requests delivered all their text at one instant (one text chunk, or every "
    "text chunk in one read): their decode rate and TPOT are undefined and left out")
#: usage counts more tokens per text chunk than a streaming server delivers
#: (tokcaliper.load.summary.MAX_TOKENS_PER_CHUNK).
TOKENS_PER_CHUNK = NamedWarning(
    "tokens-per-chunk",
    "usage counts {ratio} tokens per text chunk ({tokens} tokens in {chunks} chunks; bound {bound}): the "
    "server sends tokens in bunches, so ITL is the gap between bunches, not tokens")

LENGTHS_OFF = NamedWarning(
    "lengths-off",
    "{direction} lengths: {exact}% of {n} requests exact (bound {bound}%), |error| mean {mean}, "
    "max {max} tokens (allowed ±{slack})")

LENGTHS_UNCOUNTED = NamedWarning(
    "lengths-uncounted",
    "{direction} lengths: the server reported no usage count, so the requested lengths are unchecked")

LENGTHS_APPROXIMATE = NamedWarning(
    "lengths-approximate",
    "input lengths approximate: the server has no /tokenize, so prompts were sized from tokens per word "
    "fitted to two probe requests' usage.prompt_tokens (a trace's blocks: one token per word)")

#: ``compare`` of arms measured by different tools (``--allow-mixed-tools``; issue 20 item 3).
MIXED_TOOLS = NamedWarning(
    "mixed-tools",
    "arms measured by different tools ({tools}): {metric} is not defined alike — {differences}; "
    "part of any difference may be the definitions, not the servers (docs/import.md)")

#: ``spec table`` / ``spec sweep``: the highest AL is not the highest AL/(k+1) (METHODS.md M7).
#: ``where`` is ``""`` or `` (table NAME)``; the head of the sentence is the table's own phrase.
NOT_BEST_BUY = NamedWarning(
    "not-best-buy",
    "the highest reading is not the best buy{where}: k={best_al} has the highest AL ({al}), but "
    "k={best_pp} yields ×{times} its tokens per verified position ({pp_best} vs {pp_al})")

#: ``analyze --adjust-for`` a covariate measured during the run (docs/analyze.md).
COVARIATE_DURING_RUN = NamedWarning(
    "covariate-during-run",
    "{covariate} is measured during the run: the arm may change it, so the adjusted effect can be "
    "biased; prefer a start-of-run covariate")

#: ``analyze --adjust-for``: the covariate's mean differs between the arms (Welch p < 0.05).
COVARIATE_DIFFERS_BY_ARM = NamedWarning(
    "covariate-differs-by-arm",
    "{covariate} differs between arms (Welch p = {p}, means {mean_a} vs {mean_b}): if the arm can change "
    "it, adjusting removes part of the arm's own effect — use a covariate measured before the run starts")

#: ``analyze --adjust-for``: the covariate explains under a quarter of the within-arm variance.
COVARIATE_EXPLAINS_LITTLE = NamedWarning(
    "covariate-explains-little",
    "{covariate} explains only {share} of the within-arm variance: the adjusted result adds little; "
    "read the unadjusted one")

# --- the audit, attribution, store-reading and gate commands (issue 19 item 1) ---------------

#: ``audit --bandwidth/--achievable-bandwidth/--tdp NAME=…`` naming a GPU no record has.
GPU_OVERRIDE_UNMATCHED = NamedWarning(
    "gpu-override-unmatched", "{option} {name!r} matched no record's GPU (records name: {names})")
#: A CSV row with fewer cells than the header: the missing ones are read as empty.
CSV_MISSING_CELLS = NamedWarning(
    "csv-missing-cells",
    "{path}: record {index} (line {line}): {cells} cells for {columns} columns; "
    "missing cells ({missing}) read as empty")
#: ``attribute``: runs that cannot enter the analysis (warm-up, invalid, no value of the metric).
RUNS_LEFT_OUT = NamedWarning(
    "runs-left-out", "{n} run(s) left out: warm-up, invalid or without {metric}")
#: A stored run whose row no longer parses (:class:`~tokcaliper.model.stored.DamagedRun`).
DAMAGED_RUN_SKIPPED = NamedWarning("damaged-run-skipped", "{reason}; skipped")
#: The gate's new runs measured another load than the baseline's (``key: baseline → new``).
GATE_LOAD_DIFFERS = NamedWarning(
    "gate-load-differs", "the load differs from the baseline's: {difference}")

#: A ``warn`` finding of the machine check before measuring (``tokcaliper doctor`` lists them all).
MACHINE_CHECK_FINDING = NamedWarning("machine-check", "machine-check {code}: {found}{fix}")


# --- Caveats the report pages state (``tokcaliper report``; issue 19 item 3) ---------------
#: The smallest change a comparison's runs can call (noise band + MDE, METHODS.md M2, M9).
REPORT_SMALLEST_CHANGE = NamedWarning(
    "report-smallest-change",
    "{candidate} vs {baseline}: with these runs no change smaller than ±{smallest} (noise band "
    "±{band} + MDE ±{mde}) can be called on {metric}.")
#: An until-decided experiment: the sequential rule governs (METHODS.md M9).
REPORT_UNTIL_DECIDED = NamedWarning(
    "report-until-decided",
    "Until-decided experiment: the sequential rule's verdict governs; the fixed-n p-values and CIs "
    "assume the number of pairs was fixed in advance.")
#: Latencies are measured at the client.
REPORT_CLIENT_SIDE = NamedWarning(
    "report-client-side",
    "Client-side metrics: TTFT and ITL are measured at the client and include the network and the "
    "client's own scheduling (its self-monitor is stored per run).")
#: No telemetry sample was stored for the runs (M5).
REPORT_NO_TELEMETRY = NamedWarning(
    "report-no-telemetry",
    "No telemetry was recorded: clocks, power and temperature were not measured, so throttling "
    "cannot be ruled out as a cause of differences.")
#: Invalid runs are stored but left out of every figure.
REPORT_RUNS_LEFT_OUT = NamedWarning(
    "report-runs-left-out", "{n} run(s) were invalid and left out: {which}")
#: A sweep without an SLO: no band, no "highest level within the SLO".
REPORT_NO_SLO = NamedWarning(
    "report-no-slo",
    "No SLO was given: the latency plot draws no band and no level is called within or beyond an "
    "objective (give --slo ttft=200ms to the sweep).")
#: A sweep's levels are judged on per-run percentiles.
REPORT_SWEEP_PERCENTILES = NamedWarning(
    "report-sweep-percentiles",
    "Each level's latency is the mean over its runs of the per-run {metric}, with the 95% CI of that "
    "mean (Student's t over runs, n per level in the table); a level meets the SLO when the CI's "
    "upper end is below it.")
#: An audit checks claims against physical bounds; it cannot confirm them.
REPORT_AUDIT_BOUNDS = NamedWarning(
    "report-audit-bounds",
    "An audit compares each published figure with physical bounds (roofline, TDP, acceptance ceiling) "
    "and with the record's own consistency: a pass means not impossible, not measured or confirmed.")
#: Audit checks that applied but could not run (a missing fact).
REPORT_AUDIT_UNCHECKED = NamedWarning(
    "report-audit-unchecked", "Not checked: {what}")


#: ``bench``: a stored run flagged invalid (too many failed requests, the server died) is kept
#: out of its level's noise floor (METHODS.md M1: the floor is of valid runs only).
RUN_LEFT_OUT = NamedWarning(
    "run-left-out", "{arm}: run {repetition} (#{run_id}) left out of the noise floor: {reason}")
#: ``bench``: a level (an arm) whose every run is invalid has no noise floor.
NO_NOISE_FLOOR = NamedWarning("no-noise-floor", "{arm}: no valid run, no noise floor")
#: ``bench --on-server-death restart``: the managed server died during a run (stored as failed)
#: and was started again before the next run.
SERVER_RESTARTED = NamedWarning("server-restarted", "{note}")

#: A stored run's warning text that no template here produces (a run stored by another version).
STORED_RUN_NOTE = NamedWarning("stored-run-note", "{text}")

#: Every named warning by code: each :class:`NamedWarning` defined above.
ALL: dict[str, NamedWarning] = {w.code: w for w in list(globals().values()) if isinstance(w, NamedWarning)}


@cache
def _patterns() -> tuple[tuple[re.Pattern[str], NamedWarning], ...]:
    """Each template with literal text as a full-match pattern, its fields as lazy groups."""
    out = []
    for w in ALL.values():
        parts = list(string.Formatter().parse(w.template))
        if not any(lit.strip() for lit, *_ in parts):
            continue  # "{note}" alone would match every text
        out.append((re.compile("".join(re.escape(lit) + ("(.+?)" if name is not None else "")
                                       for lit, name, _spec, _conv in parts), re.DOTALL), w))
    return tuple(out)


def named(text: str) -> NamedWarning | None:
    """The warning whose template ``text`` was filled from, or ``None``.

    Stored runs keep their caveats as finished sentences (``RunMetrics`` has
    ``stream_warnings``, the client's ``limits``…); this gives them their code
    back for the warning sink and the JSON ``warnings`` list.
    """
    return next((w for pat, w in _patterns() if pat.fullmatch(text)), None)


def caveat_of(text: str, prefix: str = "") -> Caveat:
    """``text`` as a :class:`Caveat` with the code of the template it came from
    (:data:`STORED_RUN_NOTE` when none), ``prefix`` (e.g. ``"run 2: "``) before it."""
    w = named(text)
    return Caveat(code=(w or STORED_RUN_NOTE).code, message=prefix + text)
