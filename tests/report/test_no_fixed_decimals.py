"""Numbers are displayed through tokcaliper.numbers, not with fixed decimals in f-strings."""

import re
from pathlib import Path

import tokcaliper

SRC = Path(tokcaliper.__file__).parent
#: a replacement field with a precision: {x:.1f}, {x:,.0f}, {x:.4g}, {x:.2e}, {x:.1%}
FIXED = re.compile(r"\{[^{}]*:[^{}]*\.\d+[fge%]\}")
#: the packages that compute or render figures (audit/ is checked by its own owners)
PACKAGES = ("stats", "report", "cli", "telemetry", "servers")


def test_no_fixed_precision_formatting_outside_the_formatter():
    offenders = []
    for pkg in PACKAGES:
        for path in sorted((SRC / pkg).rglob("*.py")):
            for i, line in enumerate(path.read_text().splitlines(), 1):
                if FIXED.search(line):
                    offenders.append(f"{path.relative_to(SRC)}:{i}: {line.strip()}")
    assert offenders == []


def test_the_pattern_catches_the_old_bug():
    assert FIXED.search('f"ratio {nb}/{na} = {w.mean_b:.1f} / {w.mean_a:.1f}"')
    assert FIXED.search('f"{b:,.0f} s"') and FIXED.search('f"{d.mean:.4g}"')
    assert not FIXED.search('f"{alpha:g} {num(x)}"')
