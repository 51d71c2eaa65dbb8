"""The telemetry package's modules import one another without a cycle."""

import ast
import subprocess
import sys
from pathlib import Path

import tokcaliper.telemetry as pkg

PKG = Path(pkg.__file__).parent


def _imports(path: Path) -> set[str]:
    """Sibling telemetry modules ``path`` imports (at any depth, lazy imports included)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tokcaliper.telemetry."):
            out.add(node.module.rsplit(".", 1)[1])
        elif isinstance(node, ast.Import):
            out |= {a.name.rsplit(".", 1)[1] for a in node.names if a.name.startswith("tokcaliper.telemetry.")}
    return out


def test_no_import_cycle():
    graph = {p.stem: _imports(p) for p in PKG.glob("*.py") if p.stem != "__init__"}
    assert "sampler" not in graph["cpu"] and "sampler" not in graph["nvml"]
    assert {"backend"} <= graph["cpu"] and {"backend"} <= graph["nvml"]

    def visit(node: str, path: tuple[str, ...]) -> None:
        assert node not in path, f"import cycle: {' → '.join(path + (node,))}"
        for nxt in graph.get(node, ()):
            visit(nxt, path + (node,))

    for start in graph:
        visit(start, ())


def test_each_backend_imports_alone():
    # a cycle used to make "import tokcaliper.telemetry.cpu" depend on sampler's import order
    for mod in ("cpu", "nvml", "backend", "sampler"):
        r = subprocess.run([sys.executable, "-c", f"import tokcaliper.telemetry.{mod}"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
