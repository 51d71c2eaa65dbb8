"""Every caveat tokcaliper prints, written once: a code and a message template each.

Producers (``stats``, ``telemetry``, ``cli``) build the text with
:meth:`NamedWarning.text`; renderers print it. A warning's wording therefore
lives here only, and tests and tools can match on the code's template instead
of copying the sentence. Pure data, no I/O (hyperfine keeps its warnings in one
module the same way).
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

__all__ = [
    "ALL",
    "CAP_DISPATCH_LATE",
    "Caveat",
    "CLIENT_CPU_BOUND",
    "CLIENT_DISPATCH_LATE",
    "CLIENT_LOOP_LAG",
    "CLIENT_LOOP_LAG_KERNEL_STAMPED",
    "CV_FROM_FEW_RUNS",
    "CV_UNDEFINED",
    "FEW_REPETITIONS",
    "HOST_DISPATCH_LATE",
    "IDENTICAL_RUNS",
    "INDEPENDENT_RUNS_ASSUMED",
    "LENGTHS_APPROXIMATE",
    "LENGTHS_OFF",
    "LENGTHS_UNCOUNTED",
    "MIXED_TOOLS",
    "NO_GPU",
    "NO_POWER_SOURCE",
    "NamedWarning",
    "NO_NOISE_FLOOR",
    "RUN_LEFT_OUT",
    "SERVER_RESTARTED",
    "QUICK_FORMULA_POWER",
    "SINGLE_REPETITION",
    "SINGLE_RUN_NO_CV",
    "SINGLE_RUNS_ANECDOTE",
    "SERVER_LEFT_RUNNING",
    "SERVER_STOP_FAILED",
    "TELEMETRY_OFF",
    "TEXT_AT_ONE_INSTANT",
    "TOKENS_PER_CHUNK",
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

#: ``bench``: a stored run flagged invalid (too many failed requests, the server died) is kept
#: out of its level's noise floor (METHODS.md M1: the floor is of valid runs only).
RUN_LEFT_OUT = NamedWarning(
    "run-left-out", "{arm}: run {repetition} (#{run_id}) left out of the noise floor: {reason}")
#: ``bench``: a level (an arm) whose every run is invalid has no noise floor.
NO_NOISE_FLOOR = NamedWarning("no-noise-floor", "{arm}: no valid run, no noise floor")
#: ``bench --on-server-death restart``: the managed server died during a run (stored as failed)
#: and was started again before the next run.
SERVER_RESTARTED = NamedWarning("server-restarted", "{note}")

#: Every named warning by code.
ALL: dict[str, NamedWarning] = {w.code: w for w in (
    FEW_REPETITIONS, SINGLE_REPETITION, CV_UNDEFINED, IDENTICAL_RUNS, SINGLE_RUN_NO_CV,
    CV_FROM_FEW_RUNS, QUICK_FORMULA_POWER, INDEPENDENT_RUNS_ASSUMED, SINGLE_RUNS_ANECDOTE,
    NO_GPU, NO_POWER_SOURCE, TELEMETRY_OFF, SERVER_STOP_FAILED, SERVER_LEFT_RUNNING,
    CLIENT_LOOP_LAG, CLIENT_LOOP_LAG_KERNEL_STAMPED, CLIENT_DISPATCH_LATE, CLIENT_CPU_BOUND,
    HOST_DISPATCH_LATE, CAP_DISPATCH_LATE,
    TEXT_AT_ONE_INSTANT, TOKENS_PER_CHUNK, LENGTHS_OFF, LENGTHS_UNCOUNTED,
    LENGTHS_APPROXIMATE, MIXED_TOOLS, RUN_LEFT_OUT, NO_NOISE_FLOOR, SERVER_RESTARTED)}
