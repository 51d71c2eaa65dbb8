"""Attribution as an experiment plan, and its analysis (METHODS.md A8).

A difference between two records is not explained by naming the knobs they
differ in; it is explained by measuring each knob alone. ``tokcaliper diff A B
--plan`` writes an experiment file for the experiment runner with one arm per
single-knob change from A toward B, plus A and B themselves (arms named ``A``,
``B`` and ``A+<knob>``; the model-file knob is called ``quantization`` when the
records run one model at two quantizations); ``tokcaliper attribute EXPERIMENT`` reads the stored
runs and reports each knob's signed contribution with its CI, and the residual
the knobs do not explain.

Formulas (metric values y, analysed on the log scale, valid non-warm-up runs):

* contribution of knob i: c_i = mean(log y | A+i) − mean(log y | A), shown as
  exp(c_i) − 1 (a signed percentage); its CI is Welch's: se² = s_i²/n_i + s_A²/n_A,
  Welch–Satterthwaite degrees of freedom, t quantile at 1 − α/2 (Welch 1947);
* total: T = mean(log y | B) − mean(log y | A);
* residual: R = T − Σ c_i = mean log B − Σ_i mean log (A+i) + (k − 1) · mean log A,
  a linear combination of arm means; se² = Σ_j w_j² s_j² / n_j, degrees of freedom
  by Welch–Satterthwaite for linear combinations (Satterthwaite 1946). It holds
  interactions between knobs and every knob the plan could not set (GPU,
  engine build…); it is always shown.

Knobs are read from the two launch commands flag by flag (``-m`` model file,
``-md`` draft model, ``-c`` context, ``-ctk``/``-ctv`` KV dtype, ``-ngl``…;
environment assignments before the program count as knobs too). The arm
``A+knob`` is A's command with that knob's flags replaced by B's. Without two
launch commands the plan has switch arms whose ``switch`` command is a clearly
marked TODO the user must fill.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, computed_field

from tokcaliper.audit.diff import KnobValue, diff_records
from tokcaliper.audit.launch import _tokens
from tokcaliper.errors import InputError
from tokcaliper.model.record import Record
from tokcaliper.model.run import Run
from tokcaliper.model.warnings import RUNS_LEFT_OUT, Caveat

__all__ = ["ArmSummary", "Attribution", "AttributionPlan", "Contribution", "ExperimentPlan", "PlanKnob",
           "analyse_attribution", "attribute_runs", "plan_experiment"]

#: Flags grouped into one knob (the first name is the knob's label).
KNOB_GROUPS: dict[str, tuple[str, ...]] = {
    "model file": ("-m", "--model", "--model-path", "<serve>"),
    "draft model": ("-md", "--model-draft"),
    "KV cache dtype": ("-ctk", "-ctv", "--cache-type-k", "--cache-type-v", "--kv-cache-dtype"),
    "context length": ("-c", "--ctx-size", "--max-model-len", "--context-length"),
    "GPU layers": ("-ngl", "--gpu-layers", "--n-gpu-layers"),
    "draft window": ("--draft-max", "--draft", "--draft-n", "--spec-draft-n-max", "--num-speculative-tokens"),
    "split mode": ("-sm", "--split-mode"),
    "tensor split": ("-ts", "--tensor-split"),
    "tensor parallel": ("-tp", "--tensor-parallel-size", "--tp", "--tp-size"),
    "parallel slots": ("-np", "--parallel", "--max-num-seqs"),
    "flash attention": ("-fa", "--flash-attn"),
    "batch size": ("-b", "--batch-size", "-ub", "--ubatch-size"),
    "threads": ("-t", "--threads"),
}
#: Flags that do not change performance (addresses, names, parsers) and are not knobs.
NOT_KNOBS = frozenset({"--port", "--host", "--alias", "--api-key", "--served-model-name", "--no-webui", "--metrics",
                       "--log-disable", "--verbose", "-v", "--tool-call-parser", "--reasoning-parser",
                       "--enable-auto-tool-choice", "--chat-template-kwargs", "--reasoning-format", "--jinja",
                       "--trust-remote-code", "--prio"})
_FLAG_TO_GROUP = {f: g for g, fs in KNOB_GROUPS.items() for f in fs}


@dataclass
class _Cmd:
    env: list[tuple[str, str]]
    program: list[str]          # program and sub-command words before the first flag
    items: list[tuple[str, str | None]]   # (flag or "<serve>", value)


def _is_flag(tok: str) -> bool:
    if not tok.startswith("-") or tok == "-":
        return False
    try:
        float(tok)
        return False
    except ValueError:
        return True


def _parse_cmd(cmd: str) -> _Cmd:
    argv = _tokens(cmd)
    env = []
    while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
        k, _, v = argv.pop(0).partition("=")
        env.append((k, v))
    program: list[str] = []
    while argv and not _is_flag(argv[0]):
        program.append(argv.pop(0))
    items: list[tuple[str, str | None]] = []
    if len(program) >= 3 and program[-2] == "serve":
        items.append(("<serve>", program.pop()))
    i = 0
    while i < len(argv):
        tok = argv[i]
        if _is_flag(tok):
            name, eq, inline = tok.partition("=")
            if eq:
                items.append((name, inline))
            elif i + 1 < len(argv) and not _is_flag(argv[i + 1]):
                items.append((name, argv[i + 1]))
                i += 1
            else:
                items.append((name, None))
        else:
            items.append(("<arg>", tok))
        i += 1
    return _Cmd(env, program, items)


def _knob_of(flag: str) -> str | None:
    if flag in NOT_KNOBS or flag == "<arg>":
        return None
    return _FLAG_TO_GROUP.get(flag, flag)


def _knob_values(c: _Cmd) -> dict[str, list[tuple[str, str | None]]]:
    out: dict[str, list[tuple[str, str | None]]] = {}
    for flag, value in c.items:
        k = _knob_of(flag)
        if k is not None:
            out.setdefault(k, []).append((flag, value))
    for k, v in c.env:
        out.setdefault(f"env {k}", []).append((k, v))
    return out


def _render(c: _Cmd) -> str:
    def q(tok: str) -> str:
        return tok if re.fullmatch(r"\{(host|port|value|llama_server|smollm2)\}", tok) else shlex.quote(tok)

    words = [f"{k}={shlex.quote(v)}" for k, v in c.env] + [q(w) for w in c.program]
    serve = [v for f, v in c.items if f == "<serve>"]
    words += [q(v) for v in serve if v is not None]
    for flag, value in c.items:
        if flag == "<serve>":
            continue
        if flag == "<arg>":
            words.append(q(value or ""))
            continue
        words.append(flag)
        if value is not None:
            words.append(q(value))
    return " ".join(words)


def _with_placeholders(c: _Cmd) -> _Cmd:
    items = [(f, v) for f, v in c.items if f not in ("--port", "--host")]
    items += [("--host", "{host}"), ("--port", "{port}")]
    return _Cmd(list(c.env), list(c.program), items)


def _apply(a: _Cmd, b: _Cmd, knob: str) -> _Cmd:
    """A's command with ``knob`` set as in B (its flags removed from A, B's added at the same place)."""
    if knob.startswith("env "):
        name = knob[4:]
        env = [(k, v) for k, v in a.env if k != name] + [(k, v) for k, v in b.env if k == name]
        return _Cmd(env, list(a.program), list(a.items))
    b_items = [(f, v) for f, v in b.items if _knob_of(f) == knob]
    items: list[tuple[str, str | None]] = []
    placed = False
    for f, v in a.items:
        if _knob_of(f) == knob:
            if not placed:
                items += b_items
                placed = True
            continue
        items.append((f, v))
    if not placed:
        items += b_items
    return _Cmd(list(a.env), list(a.program), items)


def _given(v: object) -> str:
    """A knob's value in a comment: a missing one reads "not given", never ``None``."""
    return "not given" if v is None else str(v)


def _toml_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=True)


class PlanKnob(BaseModel):
    """One knob of an attribution plan, with one arm of its own.

    Attributes:
        knob: its label (``"quantization"``, ``"context length"`` …).
        flags: the launch-flag group that sets it (``"model file"``); ``None`` for a
            switch plan (records without launch commands).
        a, b: its value in record A and in record B (the flags as written,
            ``"(unset)"`` when a command does not give them; a record's field for a switch plan).
    """

    knob: str
    flags: str | None = None
    a: KnobValue
    b: KnobValue


@dataclass
class ExperimentPlan:
    """A generated experiment file.

    Attributes:
        text: the TOML document (experiment-runner format).
        arms: arm names in file order (``A``, ``A+<knob>``…, ``B``).
        knobs: the knobs with one arm each, with A's and B's values.
        unplannable: knobs that differ but no launch flag sets (absorbed by the residual).
        gaps: one sentence per unplannable knob ("engine version: cannot be set by a launch
            flag (0.6.3 → 0.7.0) — measure B as its own arm"); with any, arm B is a TODO that
            fails until B's own server is filled in, never A's binary with B's flags.
        kind: ``"server"`` (arms with ``server_cmd``) or ``"switch"`` (TODO switch commands).
    """

    text: str
    arms: list[str]
    knobs: list[PlanKnob]
    unplannable: list[str]
    kind: str
    gaps: list[str] = field(default_factory=list)


class AttributionPlan(BaseModel):
    """``tokcaliper diff A B --plan``: the experiment file written, and what it measures (A8).

    Attributes:
        path: where the file was written. arms: its arm names in file order.
        knobs: the knobs with one arm each. unplannable: knobs that differ but no launch
            flag sets (in the residual). gaps: one sentence each (see :class:`ExperimentPlan`).
        kind: ``"server"`` (arms with ``server_cmd``) or ``"switch"`` (TODO switch commands).
        runs_per_arm: measured runs per arm; runs_per_arm_source: where that number came from
            (``--runs-per-arm``, or the power-0.8 formula with its CV and effect).
        comparable: whether plain ``diff`` calls the records comparable (A7).
        warnings: the importer's caveats about the two record files.
    """

    path: str
    arms: list[str]
    knobs: list[PlanKnob]
    unplannable: list[str]
    gaps: list[str]
    kind: Literal["server", "switch"]
    runs_per_arm: int
    runs_per_arm_source: str
    comparable: bool
    warnings: list[Caveat] = Field(default_factory=list)


def write_plan(a: Record, b: Record, out: Path, *, runs_per_arm: int | None = None, cv: float = 0.05,
               effect: float = 0.05, metric: str | None = None,
               warnings: Sequence[Caveat] = ()) -> AttributionPlan:
    """Write the attribution plan of records ``a`` → ``b`` to ``out`` and describe it.

    Without ``runs_per_arm`` the runs per arm are those that find a true effect of
    ``effect`` (fraction) at run-to-run CV ``cv`` with power 0.8 (two-sided t,
    α = 0.05; :func:`tokcaliper.stats.resolution.n_power`) — not the quick
    8·(CV/Δ)² that finds it only half the time (METHODS.md M3).

    Raises:
        InputError: the records differ in no plannable knob, or ``out`` cannot be written.
    """
    from tokcaliper.stats.resolution import n_power

    if runs_per_arm is None:
        n = n_power(cv, effect)
        src = f"tokcaliper plan --cv {cv:g} --effect {effect:g}: power 0.8 (two-sided t, α = 0.05) → {n}"
    else:
        n, src = runs_per_arm, "--runs-per-arm"
    p = plan_experiment(a, b, runs_per_arm=n, metric=metric, runs_source=src)
    comparable = diff_records(a, b).comparable
    try:
        out.write_text(p.text, encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot write {out}: {e.strerror or e}") from None
    return AttributionPlan(path=str(out), arms=p.arms, knobs=p.knobs, unplannable=p.unplannable, gaps=p.gaps,
                           kind="switch" if p.kind == "switch" else "server", runs_per_arm=n,
                           runs_per_arm_source=src, comparable=comparable, warnings=list(warnings))


def plan_experiment(a: Record, b: Record, *, runs_per_arm: int, warmup_runs: int = 1, metric: str | None = None,
                    runs_source: str = "") -> ExperimentPlan:
    """The experiment file that measures each knob A and B differ in.

    Args:
        a, b: the two records (A is the reference, B the target).
        runs_per_arm: measured runs per arm (≥ 2), e.g. from ``tokcaliper plan``.
        warmup_runs: runs after each arm change, excluded from analysis.
        metric: primary metric; default per-stream decode rate for batch-1
            records, aggregate output throughput otherwise.
        runs_source: where ``runs_per_arm`` came from (a comment in the file).

    Returns:
        :class:`ExperimentPlan`.

    Raises:
        InputError: fewer than 2 runs per arm, or the records differ in no knob.
    """
    if runs_per_arm < 2:
        raise InputError(f"--runs-per-arm must be ≥ 2, got {runs_per_arm}")
    d = diff_records(a, b)
    batch1 = all((r.concurrency or r.batch_size or 1) == 1 for r in (a, b))
    metric = metric or ("per_stream_decode_tok_s_mean" if batch1 else "aggregate_output_tok_s")
    conc = a.concurrency or a.batch_size or 1
    lines = [
        "# Generated by `tokcaliper diff A B --plan`: one arm per single-knob change from A toward B, plus A and B.",
        f"# A: {a.label()}",
        f"# B: {b.label()}",
        "# After `tokcaliper experiment run THIS_FILE`, `tokcaliper attribute EXPERIMENT_ID` reports each knob's",
        "# contribution log(arm A+knob / A) with its CI and the residual log(B/A) − Σ contributions.",
    ]
    knobs: list[PlanKnob] = []
    gaps: list[str] = []
    arms_toml: list[str] = []
    arm_names: list[str] = []
    unplannable: list[str] = []
    if a.launch_command and b.launch_command:
        kind = "server"
        ca, cb = _parse_cmd(a.launch_command), _parse_cmd(b.launch_command)
        va, vb = _knob_values(ca), _knob_values(cb)
        names = list(dict.fromkeys(list(va) + list(vb)))
        changed = [k for k in names if va.get(k) != vb.get(k)]
        shell = bool(ca.env or cb.env)
        same_model = (a.model.name or "").lower() == (b.model.name or "").lower()
        requant = same_model and (a.quantization.weights or "") != (b.quantization.weights or "")
        for k in changed:
            label = "quantization" if k == "model file" and requant else k
            knobs.append(PlanKnob(knob=label, flags=k, a=_show(va.get(k)), b=_show(vb.get(k))))
        cmd_knobs = {"model file": "quantization", "quantization": "quantization", "draft model": "draft model", "KV cache dtype": "KV cache dtype",
                     "context length": "context length", "draft window": "draft window k", "split mode": "split mode"}
        covered = {cmd_knobs[k.knob] for k in knobs if k.knob in cmd_knobs}
        unplannable = [k.name for k in d.knobs if k.differs and k.matters and k.name not in covered
                       and k.name not in ("model",) and not k.name.startswith("launch flag ")]
        values = {k.name: (k.a, k.b) for k in d.knobs}
        gaps = [f"{name}: cannot be set by a launch flag ({_given(values[name][0])} → "
                f"{_given(values[name][1])}) — measure B as its own arm" for name in unplannable]
        arms = [("A", ca)] + [(f"A+{k.knob}", _apply(ca, cb, k.flags or "")) for k in knobs] + [("B", cb)]
        for name, c in arms:
            arm_names.append(name)
            cmd = _render(_with_placeholders(c))
            arms_toml += ["", "[[arms]]", f"name = {_toml_str(name)}"]
            if name == "B" and gaps:
                # B's flags on A's build and files would measure A + the flag knobs and hide the
                # gap: B must be its own server (its engine build, its model file).
                arms_toml += [f"# TODO: {g}" for g in gaps]
                arms_toml += [f"# B's launch command, to run with B's own engine build / files: {cmd}",
                              f"server_cmd = {_toml_str('sh -c ' + shlex.quote('echo TODO: start B with its own ' + ', '.join(unplannable) + ' >&2; exit 1'))}"]
            else:
                arms_toml.append(f"server_cmd = {_toml_str(cmd)}")
            if shell:
                arms_toml.append("shell = true")
    else:
        kind = "switch"
        differing = [k for k in d.knobs if k.differs and k.matters]
        for k in differing:
            knobs.append(PlanKnob(knob=k.name, a=k.a, b=k.b))
        lines.append("# TODO: the records carry no launch commands, so every arm is a switch arm whose `switch` "
                     "command you must write")
        lines.append("# (it must put the live server into the arm's state); each TODO command fails until replaced.")
        state = {k.knob: k.a for k in knobs}
        arm_states = [("A", dict(state))]
        for k in knobs:
            s = dict(state)
            s[k.knob] = k.b
            arm_states.append((f"A+{k.knob}", s))
        arm_states.append(("B", {k.knob: k.b for k in knobs}))
        for name, s in arm_states:
            arm_names.append(name)
            desc = ", ".join(f"{kk}={vv}" for kk, vv in s.items())
            arms_toml += ["", "[[arms]]", f"name = {_toml_str(name)}",
                          f"# TODO: replace with the command that sets: {desc}",
                          f"switch = {_toml_str('sh -c ' + shlex.quote('echo TODO: set ' + desc + ' >&2; exit 1'))}",
                          f"value = {_toml_str(desc)}"]
    if not knobs:
        raise InputError("the two records differ in no knob a plan could change: nothing to attribute")
    lines.append("# knobs, one arm each: " + "; ".join(
        f"{k.knob}: {_given(k.a)} → {_given(k.b)}" for k in knobs))
    if unplannable:
        lines.append("# differ but no launch flag sets them (in the residual): " + ", ".join(unplannable))
    head = [f"name = {_toml_str(f'attribution {a.label()} → {b.label()}')}"]
    if kind == "switch":
        head.append('url = "http://127.0.0.1:8080"  # TODO: the live server the switch commands act on')
    head += [f"runs_per_arm = {runs_per_arm}" + (f"  # {runs_source}" if runs_source else ""),
             f"warmup_runs = {warmup_runs}", "order = \"random-blocks\"", "seed = 1",
             f"metric = {_toml_str(metric)}", "", "[load]", f"concurrency = {conc}",
             f"max_tokens = {min(max(a.output_tokens or 128, 16), 2048) if a.requests in (None, 1) else 128}"]
    text = "\n".join(lines + head + arms_toml) + "\n"
    return ExperimentPlan(text=text, arms=arm_names, knobs=knobs, unplannable=unplannable, kind=kind,
                          gaps=gaps)


def _show(v: list[tuple[str, str | None]] | None) -> str:
    if not v:
        return "(unset)"
    return " ".join(f"{f}={val}" if val is not None else f for f, val in v)


# ------------------------------------------------------------------ analysis


class Contribution(BaseModel):
    """One knob's (or the residual's, or the total's) effect on the metric, log scale and percent.

    Attributes:
        knob: the knob (``"residual"`` for what the knobs leave unexplained, ``"total"`` for B/A).
        log_effect: the log-ratio (dimensionless); ci_low, ci_high: its CI (log scale).
        df: Welch–Satterthwaite degrees of freedom (``inf`` when every arm has zero spread).
        n: runs used per arm.
        percent, ci_percent: exp(·) − 1, × 100 (JSON too); ci_log: ``[ci_low, ci_high]``.
    """

    knob: str
    log_effect: float
    ci_low: float
    ci_high: float
    df: float
    n: dict[str, int]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ci_log(self) -> tuple[float, float]:
        """``(ci_low, ci_high)``, log scale."""
        return (self.ci_low, self.ci_high)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def percent(self) -> float:
        """exp(log_effect) − 1, in percent."""
        return (math.exp(self.log_effect) - 1) * 100

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ci_percent(self) -> tuple[float, float]:
        """The CI's ends in percent."""
        return (self.percent_low, self.percent_high)

    @property
    def percent_low(self) -> float:
        """Lower CI end in percent."""
        return (math.exp(self.ci_low) - 1) * 100

    @property
    def percent_high(self) -> float:
        """Upper CI end in percent."""
        return (math.exp(self.ci_high) - 1) * 100


class ArmSummary(BaseModel):
    """One arm's metric values: n, mean (the metric's unit) and CV (sample sd / mean)."""

    n: int
    mean: float
    cv: float


def _pc(log_effect: float) -> str:
    from tokcaliper.numbers import percent

    return percent(math.exp(log_effect) - 1, signed=True)


def attribution_closing(res: "Attribution") -> list[str]:
    """The closing ``result:``/``next:`` lines of an attribution (issue 26 item 2), from its figures.

    result: B against A (the total with its CI, decided when the CI excludes 0) and the
    knob of largest |effect| with its CI. next: stop when the total and that knob are
    both decided; else the runs per arm that would make the undecided CI exclude 0 at
    its observed size — a CI's half-width shrinks as 1/√n, so n' = n·(half-width/|effect|)²
    (an approximation: the t quantile is held fixed).
    """
    t = res.total
    level = f"{(1 - res.alpha) * 100:g}% CI"

    def decided(c: Contribution) -> bool:
        return c.ci_low > 0 or c.ci_high < 0

    def runs_for(c: Contribution) -> int | None:
        if c.log_effect == 0:
            return None
        half = (c.ci_high - c.ci_low) / 2
        return math.ceil(max(c.n.values()) * (half / abs(c.log_effect)) ** 2)

    verdict = "decided" if decided(t) else "not decided (the CI includes 0)"
    line = (f"result: B reads {_pc(t.log_effect)} against A on {res.metric} ({level} "
            f"{_pc(t.ci_low)} … {_pc(t.ci_high)}) — {verdict}")
    top = max(res.contributions, key=lambda c: abs(c.log_effect), default=None)
    if top is not None:
        line += (f"; the largest knob is {top.knob}: {_pc(top.log_effect)} ({_pc(top.ci_low)} … "
                 f"{_pc(top.ci_high)}, {'decided' if decided(top) else 'not decided'})")
    open_ = [c for c in ([t] + ([top] if top is not None else [])) if not decided(c)]
    if not open_:
        return [line, "next: stop — the gap and its largest knob are decided"]
    c = open_[0]
    need = runs_for(c)
    have = max(c.n.values())
    name = "B/A" if c is t else c.knob
    if need is None:
        return [line, f"next: {name} reads exactly 0: no number of runs makes its CI exclude 0; stop"]
    if need <= have:
        return [line, f"next: a few more runs per arm ({have} ran) would likely decide {name}"]
    return [line, f"next: about {need} runs per arm ({have} ran) would make {name}'s CI exclude 0 at "
                  f"its observed {_pc(c.log_effect)}; stop if a change that size does not matter"]


class Attribution(BaseModel):
    """``tokcaliper attribute``: each knob's contribution, the residual and the total (A8).

    Attributes:
        experiment: the experiment id. metric: the registry metric analysed.
        alpha: two-sided level of the CIs (0.05 → 95% CIs).
        contributions: one per ``A+<knob>`` arm, in the plan's order.
        residual: B/A minus the knobs (interactions and knobs no flag set).
        total: B/A. arms: per arm, n, mean and CV of the metric.
        warnings: caveats (runs left out), printed by the warning sink.
        closing: the ``result:`` and ``next:`` lines (:func:`attribution_closing`; JSON too).
    """

    experiment: str
    metric: str
    alpha: float
    contributions: list[Contribution]
    residual: Contribution
    total: Contribution
    arms: dict[str, ArmSummary] = Field(default_factory=dict)
    warnings: list[Caveat] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def closing(self) -> list[str]:
        """The closing lines, from the figures (:func:`attribution_closing`)."""
        return attribution_closing(self)


def _linear(knob: str, weights: dict[str, float], logs: dict[str, list[float]], alpha: float) -> Contribution:
    """Σ w_j mean(log y_j) with a Welch–Satterthwaite CI."""
    from scipy import stats

    est, var, denom = 0.0, 0.0, 0.0
    for arm, w in weights.items():
        xs = logs[arm]
        n = len(xs)
        m = sum(xs) / n
        s2 = sum((x - m) ** 2 for x in xs) / (n - 1)
        est += w * m
        term = w * w * s2 / n
        var += term
        denom += term * term / (n - 1)
    se = math.sqrt(var)
    df = (var * var / denom) if denom > 0 else float("inf")
    t = float(stats.t.ppf(1 - alpha / 2, df)) if math.isfinite(df) else float(stats.norm.ppf(1 - alpha / 2))
    return Contribution(knob=knob, log_effect=est, ci_low=est - t * se, ci_high=est + t * se, df=df,
                        n={a: len(logs[a]) for a in weights})


def analyse_attribution(arm_values: dict[str, list[float]], experiment: str = "", metric: str = "",
                        alpha: float = 0.05, higher_is_better: bool = True) -> Attribution:
    """Contributions, residual and total from per-arm metric values (pure; formulas in the module docstring).

    Args:
        arm_values: metric values per arm, keys ``A``, ``B`` and ``A+<knob>``.
        experiment, metric: labels. alpha: two-sided level of the CIs.
        higher_is_better: only used to word warnings.

    Raises:
        InputError: arm A or B missing, an arm with fewer than 2 values, or a value ≤ 0.
    """
    for need in ("A", "B"):
        if need not in arm_values:
            raise InputError(f"experiment {experiment!r} has no arm {need!r}: attribute reads plans written by "
                             "`tokcaliper diff A B --plan` (arms A, A+<knob>…, B)")
    logs: dict[str, list[float]] = {}
    for arm, vals in arm_values.items():
        if len(vals) < 2:
            raise InputError(f"arm {arm!r} has {len(vals)} valid run(s); a CI needs at least 2")
        bad = [v for v in vals if not (v > 0 and math.isfinite(v))]
        if bad:
            raise InputError(f"arm {arm!r} has a non-positive or non-finite {metric or 'metric'} value {bad[0]}")
        logs[arm] = [math.log(v) for v in vals]
    knob_arms = [a for a in arm_values if a.startswith("A+")]
    contribs = [_linear(a[2:], {a: 1.0, "A": -1.0}, logs, alpha) for a in knob_arms]
    total = _linear("total", {"B": 1.0, "A": -1.0}, logs, alpha)
    w: dict[str, float] = {"B": 1.0, "A": -1.0 + len(knob_arms)}
    for a in knob_arms:
        w[a] = -1.0
    residual = _linear("residual", {k: v for k, v in w.items() if v != 0 or k == "A"}, logs, alpha)
    arms = {}
    for arm, vals in arm_values.items():
        n = len(vals)
        m = sum(vals) / n
        sd = math.sqrt(sum((v - m) ** 2 for v in vals) / (n - 1))
        arms[arm] = ArmSummary(n=n, mean=m, cv=sd / m)
    return Attribution(experiment=experiment, metric=metric, alpha=alpha, contributions=contribs,
                       residual=residual, total=total, arms=arms)


def attribute_runs(experiment: str, runs: Sequence[Run], *, arms: Sequence[str] = (),
                   metric: str | None = None, alpha: float = 0.05) -> Attribution:
    """Attribute an experiment's stored runs (the CLI reads them from the store).

    Only valid, non-warm-up runs count; the metric is the experiment's own
    (``metric`` in its file; aggregate output throughput when unset), read with
    :func:`tokcaliper.model.metrics.get_metric`. Runs left out become one
    :data:`~tokcaliper.model.warnings.RUNS_LEFT_OUT` caveat.

    Args:
        experiment: the experiment's id (a label). runs: its runs, any arm, any order.
        arms: the arms its file declares (so an arm without a run is named in the error).
        metric: registry name of the metric, ``None`` for the default. alpha: the CIs' level.

    Raises:
        InputError: an unknown metric, or as :func:`analyse_attribution`.
    """
    from tokcaliper.model.metrics import get_metric

    metric_name = metric or "aggregate_output_tok_s"
    m = get_metric(metric_name)
    values: dict[str, list[float]] = {a: [] for a in arms}
    skipped = 0
    for r in runs:
        if not r.valid or r.warmup_run:
            skipped += 1
            continue
        v = m.extract(r.metrics)
        if v is None:
            skipped += 1
            continue
        values.setdefault(r.arm, []).append(float(v))
    out = analyse_attribution(values, experiment=experiment, metric=metric_name, alpha=alpha,
                              higher_is_better=m.better == "higher")
    if skipped:
        out.warnings.append(RUNS_LEFT_OUT.caveat(n=skipped, metric=metric_name))
    return out
