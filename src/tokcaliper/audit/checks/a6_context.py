"""A6 — the context of the number (METHODS.md A6).

* batch/concurrency: missing → warn; batch 1 single stream → noted ("says
  nothing about multi-user serving"), not a fault.
* engine version: missing/"unknown" → warn; a fork or local suffix → warn
  (unknown changes). Recognised markers (:func:`classify_version`):
  ``-dirty``, setuptools-scm's dirty date ``.dYYYYMMDD``, git-describe
  ``<tag>-N-g<hash>`` with N > 0 (N commits past the release), ``local``,
  ``fork``, ``wip``, ``patch``, ``lab``, ``hybrid``, ``custom``, ``experimental``.
  A PEP 440 build tag for a platform wheel (``+cu128``, ``+rocm721``, ``+xpu``,
  ``+cpu``) is not a fork.
* no launch command → warn: nothing can be checked.
"""

from __future__ import annotations

import re

from tokcaliper.audit.checks._common import CheckContext, FindingLog
from tokcaliper.model.verdict import Status, Verdict

CHECK, TITLE = "A6", "context of the number"

_FORK_WORDS = re.compile(r"\b(local|fork|forked|wip|patch\w*|lab|hybrid|custom|experimental|hack\w*)\b", re.I)


def classify_version(version: str | None) -> tuple[str, list[str]]:
    """Classify an engine version string.

    Returns:
        ``(kind, reasons)`` with kind ``"missing"``, ``"fork/local"``,
        ``"dev build"`` or ``"release"``.
    """
    if version is None or not version.strip() or version.strip().lower() in ("unknown", "n/a", "none", "?"):
        return "missing", ["engine version not published"]
    v = version.strip()
    reasons: list[str] = []
    if re.search(r"-dirty\b", v):
        reasons.append("'-dirty': built from a tree with uncommitted changes")
    if re.search(r"\.d20\d{6}\b", v):
        reasons.append("'.dYYYYMMDD' (setuptools-scm): built from a tree with uncommitted changes")
    m = re.search(r"\b[bv]?\d[\w.]*-(\d+)-g([0-9a-f]{6,})", v)
    if m and int(m.group(1)) > 0:
        reasons.append(f"git describe: {m.group(1)} commit(s) past the release tag (g{m.group(2)})")
    w = _FORK_WORDS.search(v)
    if w:
        reasons.append(f"'{w.group(0)}' in the version: a local or forked build")
    if reasons:
        return "fork/local", reasons
    if re.search(r"\.dev\d+", v) or re.search(r"\b(master|main)\b", v):
        if not re.search(r"[0-9a-f]{7,}", v):
            return "dev build", ["unreleased development build without a commit hash"]
        return "dev build", []
    return "release", []


def check(ctx: CheckContext) -> Verdict:
    """A6 verdict: warn on missing batch context, fork/local/missing versions, no launch command."""
    rec = ctx.record
    log = FindingLog(CHECK)
    found = log.add
    arith: list[str] = []

    kind, reasons = classify_version(rec.engine.version)
    inputs = {"batch_size": rec.batch_size, "concurrency": rec.concurrency, "engine": rec.engine.name,
              "engine_version": rec.engine.version, "version_kind": kind,
              "launch_command": bool(rec.launch_command)}
    if rec.batch_size is None and rec.concurrency is None:
        found("load_unknown", Status.WARN, "no batch size or concurrency: the load behind the number is unknown")
    elif (rec.batch_size or 1) == 1 and (rec.concurrency or 1) == 1:
        found("single_stream", Status.PASS, "single stream (batch 1): says nothing about multi-user serving")
    else:
        found("load", Status.PASS, f"batch {rec.batch_size or '—'}, concurrency {rec.concurrency or '—'}",
              batch_size=rec.batch_size, concurrency=rec.concurrency)
    arith.append(f"engine version {rec.engine.version!r} → {kind}" + (f": {'; '.join(reasons)}" if reasons else ""))
    if kind == "missing":
        found("version_missing", Status.WARN, "engine version not published: the build is unknown")
    elif kind == "fork/local":
        found("version_fork", Status.WARN,
              f"engine version {rec.engine.version!r} is a fork/local build ({reasons[0]}): unknown changes")
    elif kind == "dev build" and reasons:
        found("version_dev", Status.WARN, reasons[0])
    if not rec.launch_command:
        found("no_launch_command", Status.WARN, "no launch command: nothing about the configuration can be checked")
    return Verdict(check=CHECK, title=TITLE, status=log.status, findings=log.findings,
                   arithmetic=arith, inputs=inputs, sources=["METHODS.md A6"])
