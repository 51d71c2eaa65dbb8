"""The layering of docs/ARCHITECTURE.md, checked over the import graph.

Every ``import tokcaliper.X`` (lazy imports inside functions included) is an
arrow from the importing package to package X. ``ALLOWED`` lists, per package,
the packages it may import; an arrow outside it fails the test unless it is a
named entry of ``DEBT`` (an existing arrow that an open issue removes). A debt
entry that no longer occurs fails too, so the table cannot go stale.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import tokcaliper

SRC = Path(tokcaliper.__file__).parent

#: The foundation every package may use: errors, number formatting, input
#: validation, safe file reading, process helpers.
BASE = frozenset({"errors", "numbers", "validation", "fileio", "processes"})

#: Package → packages it may import (besides itself). Lower layers first.
ALLOWED: dict[str, frozenset[str]] = {
    "errors": frozenset(),
    "numbers": frozenset({"errors"}),
    "validation": frozenset({"errors", "numbers"}),
    "fileio": frozenset({"errors", "numbers"}),
    "processes": frozenset({"errors"}),
    "model": BASE,
    "stats": BASE | {"model"},
    "telemetry": BASE | {"model", "stats"},
    "load": BASE | {"model", "stats"},
    "servers": BASE | {"model", "stats", "load"},
    "store": BASE | {"model", "telemetry"},
    "audit": BASE | {"model", "stats"},
    "doctor": BASE | {"model", "stats", "telemetry", "servers", "audit"},
    "specdec": BASE | {"model", "stats"},  # the family readers are pure, in model/families
    "experiment": BASE | {"model", "stats", "telemetry", "load", "servers", "store", "specdec"},
    "report": BASE | {"model", "stats", "load", "audit", "experiment", "specdec", "telemetry"},
    "cli": BASE | {"model", "stats", "telemetry", "load", "servers", "store", "audit",
                   "doctor", "experiment", "specdec", "report"},
    "data": frozenset(),  # package data (JSON tables), no code
    "__main__": frozenset({"cli"}),
    "__init__": frozenset(),
}

#: Arrows that break the layering today, each (importing module, imported
#: package), with the issue that removes it. Remove an entry with its arrow.
DEBT: dict[tuple[str, str], str] = {}


def import_edges(src: Path) -> set[tuple[str, str]]:
    """(importing module, imported tokcaliper module) for every import under ``src``.

    ``src`` is the ``tokcaliper`` package directory; relative imports are
    resolved against the importing module. Raises ``SyntaxError`` on a file
    that does not parse.
    """
    edges: set[tuple[str, str]] = set()
    for path in sorted(src.rglob("*.py")):
        parts = ["tokcaliper", *path.relative_to(src).with_suffix("").parts]
        is_pkg = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_pkg else parts)
        package = parts[:-1] if is_pkg else parts[:-1]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    targets = [".".join(base + ([node.module] if node.module else []))]
                else:
                    targets = [node.module or ""]
            else:
                continue
            edges |= {(module, t) for t in targets if t == "tokcaliper" or t.startswith("tokcaliper.")}
    return edges


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def forbidden(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The (importing module, imported package) arrows ``ALLOWED`` does not permit.

    An importing package missing from ``ALLOWED`` is itself a violation (a new
    package must be placed in the table), reported as (module, "<unplaced>").
    """
    out = set()
    for importer, target in edges:
        src_pkg, dst_pkg = _package(importer), _package(target)
        if src_pkg == dst_pkg or target == "tokcaliper":
            continue
        if src_pkg not in ALLOWED:
            out.add((importer, "<unplaced>"))
        elif dst_pkg not in ALLOWED[src_pkg]:
            out.add((importer, dst_pkg))
    return out


def test_no_forbidden_arrow():
    found = forbidden(import_edges(SRC))
    new = sorted(found - DEBT.keys())
    assert not new, "imports against docs/ARCHITECTURE.md's layering:\n" + "\n".join(
        f"  {m} → tokcaliper.{p}" for m, p in new)


def test_debt_table_is_current():
    stale = sorted(DEBT.keys() - forbidden(import_edges(SRC)))
    assert not stale, f"these arrows are gone: delete them from DEBT: {stale}"


def test_every_package_is_placed():
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    modules = {p.stem for p in SRC.glob("*.py")}
    assert packages | modules <= ALLOWED.keys()


def test_a_forbidden_arrow_is_caught(tmp_path):
    # the guard must be able to fail: the model layer importing the CLI
    copy = tmp_path / "tokcaliper"
    shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
    init = copy / "model" / "__init__.py"
    init.write_text(init.read_text() + "\ndef _late():\n    from tokcaliper.cli import app\n")
    assert ("tokcaliper.model", "cli") in forbidden(import_edges(copy)) - DEBT.keys()
