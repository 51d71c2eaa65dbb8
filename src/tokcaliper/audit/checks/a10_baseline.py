"""A10 — a stored baseline used as a denominator carries its conditions (METHODS.md A10).

A baseline (``record.baseline``) must say its power cap, whether the GPU was
warmed up, how many runs stand behind it (≥ 5, METHODS.md M1) and when it was
measured. Each missing condition is a warning; a baseline measured more than
90 days before the record is stale. The source got 67 % and then 109 % from
stale denominators, and 74 % after re-measuring (1674 tok/s).
"""

from __future__ import annotations

from datetime import date

from tokcaliper.audit.checks._common import CheckContext, FindingLog, na
from tokcaliper.audit.constants import A10_STALE_DAYS
from tokcaliper.model.warnings import M1_MIN_RUNS
from tokcaliper.model.verdict import Status, Verdict
from tokcaliper.numbers import compact

CHECK, TITLE = "A10", "baseline carries its conditions"


def _date(s: str | None) -> date | None:
    if not s:
        return None
    try:
        return date.fromisoformat(s[:10])
    except ValueError:
        return None


def check(ctx: CheckContext) -> Verdict:
    """A10 verdict: n/a without a baseline; warn for each missing condition or staleness."""
    b = ctx.record.baseline
    if b is None:
        return na(CHECK, TITLE, "no baseline used as a denominator")
    missing = [n for n, v in (("power cap", b.power_cap_w), ("warmed up or not", b.warmed_up),
                              ("number of runs", b.n_runs), ("measurement date", b.measured_at)) if v is None]
    log = FindingLog(CHECK)
    found = log.add

    arith = [f"baseline {compact(b.tok_s, 4)} tok/s ({b.description or 'no description'}); conditions: "
             f"power cap {compact(b.power_cap_w, 4) if b.power_cap_w else '—'} W, warmed up {b.warmed_up}, "
             f"runs {b.n_runs}, measured {b.measured_at or '—'}"]
    if missing:
        found("conditions_missing", Status.WARN, f"baseline lacks {', '.join(missing)}")
    if b.n_runs is not None and b.n_runs < M1_MIN_RUNS:
        found("few_runs", Status.WARN, f"baseline rests on {b.n_runs} run(s), fewer than {M1_MIN_RUNS} (M1)",
              n_runs=b.n_runs)
    d_rec, d_base = _date(ctx.record.date), _date(b.measured_at)
    if d_rec and d_base:
        age = (d_rec - d_base).days
        arith.append(f"age = {d_rec} − {d_base} = {age} days (stale beyond {A10_STALE_DAYS})")
        if age > A10_STALE_DAYS:
            found("stale", Status.WARN, f"baseline is {age} days older than the record: re-measure it", age_days=age)
    if not log.statuses:
        found("complete", Status.PASS, "baseline carries its conditions")
    return Verdict(check=CHECK, title=TITLE, status=log.status, findings=log.findings,
                   arithmetic=arith, inputs=b.model_dump(),
                   sources=["METHODS.md A10", f"runs ≥ {M1_MIN_RUNS}: METHODS.md M1"])
