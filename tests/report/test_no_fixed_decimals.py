"""Numbers are displayed through tokcaliper.numbers, not with fixed decimals in f-strings."""

import re
from pathlib import Path

import tokcaliper

SRC = Path(tokcaliper.__file__).parent
#: a replacement field with a precision: {x:.1f}, {x:,.0f}, {x:.4g}, {x:.2e}, {x:.1%}
FIXED = re.compile(r"\{[^{}]*:[^{}]*\.\d+[fge%]\}")
#: every package: all of them compute, render or report figures (data/ holds only data files)
PACKAGES = ("stats", "report", "cli", "telemetry", "servers", "audit", "specdec", "experiment", "load", "model",
            "store", "data", "doctor")
#: the one module allowed to format with a fixed precision
FORMATTER = SRC / "numbers.py"


def test_every_package_is_checked():
    packages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert packages == set(PACKAGES)


def test_no_fixed_precision_formatting_outside_the_formatter():
    offenders = []
    paths = [p for p in sorted(SRC.glob("*.py")) if p != FORMATTER]  # errors.py, __main__.py, ...
    paths += [p for pkg in PACKAGES for p in sorted((SRC / pkg).rglob("*.py"))]
    for path in paths:
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if FIXED.search(line):
                offenders.append(f"{path.relative_to(SRC)}:{i}: {line.strip()}")
    assert offenders == []


def test_the_pattern_catches_the_old_bug():
    assert FIXED.search('f"ratio {nb}/{na} = {w.mean_b:.1f} / {w.mean_a:.1f}"')
    assert FIXED.search('f"{b:,.0f} s"') and FIXED.search('f"{d.mean:.4g}"')
    assert not FIXED.search('f"{alpha:g} {num(x)}"')
