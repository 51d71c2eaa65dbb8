"""The one number formatter: every figure tokcaliper prints goes through here.

Shared by ``stats`` and ``audit`` (the arithmetic lines of a verdict) and by
``report`` and ``cli`` (tables, summaries), like :mod:`tokcaliper.errors`;
pure functions, no I/O. Numbers are rounded to *significant digits*, never to
a fixed number of decimals, so a latency of 0.0123 s does not print as "0.0".

Conventions
- ``None`` and NaN print as an em dash ``"—"`` (undefined, not measured);
  ±inf as ``"∞"`` / ``"-∞"``.
- Fixed notation with thousands separators (``12,346``) from 1e-4 up to 1e15;
  outside that, scientific (``1.23e-07``, ``4.57e+18``). Integer digits are
  never rounded away (12,345.6 at 3 digits is ``"12,346"``, not ``"12,300"``).
- Percentages: one decimal (``12.9%``) and at least two significant digits
  below 1% (``0.040%``), so a small CV is never printed as ``0.0%``.
- Ratios: three decimals below 10 (``1.077``: the deviation from 1 is read to
  0.1%), else three significant digits.
- Seconds scale to ms / µs / ns below 1 s (``0.0123`` s → ``12.3 ms``).
- Inside a sentence or an arithmetic line (the audit's verdicts), :func:`compact`:
  no thousands separator, trailing zeros dropped (``2``, ``0.5``, ``12346``),
  scientific from 1e9 (``1.00e+308``); :func:`fixed` for a fixed number of decimals.
- A value with its uncertainty follows the metrology habit (GUM, JCGM 100:2008
  §7.2.6): the standard deviation to two significant digits and the mean to the
  same decimal place, then n and the CV: ``85.5 ± 3.8 (n=5, CV 4.4%)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = [
    "COMPACT_SCI_ABOVE",
    "DASH",
    "compact",
    "display_scale",
    "fixed",
    "num",
    "p_value",
    "percent",
    "quantity",
    "ratio",
    "seconds",
    "signed_percent",
    "statistic",
    "with_uncertainty",
]

#: What an undefined value (``None``, NaN) prints as.
DASH = "—"

#: Fixed notation between these magnitudes; scientific outside.
_SMALLEST_FIXED = 1e-4
_LARGEST_FIXED = 1e15

#: Sub-second units for :func:`seconds`, largest first: (factor, label).
_SECOND_SCALES = ((1.0, "s"), (1e3, "ms"), (1e6, "µs"), (1e9, "ns"))


def _special(x: float | None) -> str | None:
    """The text of a value that is not a finite number, else ``None``."""
    if x is None:
        return DASH
    x = float(x)
    if math.isnan(x):
        return DASH
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    return None


def _magnitude(x: float, sig: int) -> int:
    """Decimal exponent of ``x`` after rounding to ``sig`` digits (9.996 → 10 → 1).

    Read from the text of the rounded value, never from a float of it: rounding
    1.7975e308 to 4 digits gives 1.798e308, past the largest float.
    """
    return int(f"{abs(x):.{sig - 1}e}".partition("e")[2])


def num(x: float | None, sig: int = 3, *, min_decimals: int = 0, signed: bool = False,
        grouping: bool = True, trim: bool = False) -> str:
    """A plain number to ``sig`` significant digits.

    Args:
        x: the value (any unit; the caller adds it). ``None``/NaN → ``"—"``.
        sig: significant digits (≥ 1).
        min_decimals: show at least this many decimals (e.g. 2 for a t statistic).
        signed: prefix ``+`` to positive values.
        grouping: thousands separators in fixed notation.
        trim: drop trailing zeros after the decimal point (for echoing an
            input as given: ``num(190.0, 6, trim=True) == "190"``).

    Returns:
        ``num(0.012345) == "0.0123"``, ``num(366.0, 4) == "366.0"``,
        ``num(12345.6) == "12,346"``, ``num(1.23e-7) == "1.23e-07"``.

    Raises:
        ValueError: ``sig`` < 1.
    """
    if sig < 1:
        raise ValueError(f"sig must be >= 1, got {sig}")
    special = _special(x)
    if special is not None:
        return special
    x = float(x)  # numpy scalars, ints
    sign = "+" if signed else ""
    if x == 0:
        return "0" if min_decimals == 0 else f"{0:.{min_decimals}f}"
    mag = _magnitude(x, sig)
    if abs(x) < _SMALLEST_FIXED or mag >= math.log10(_LARGEST_FIXED):
        text = f"{x:{sign}.{sig - 1}e}"
        if trim and "." in text:
            mant, _, exp = text.partition("e")
            text = mant.rstrip("0").rstrip(".") + "e" + exp
        return text
    decimals = max(min_decimals, sig - 1 - mag, 0)
    text = f"{x:{sign}{',' if grouping else ''}.{decimals}f}"
    if trim and "." in text:
        text = text.rstrip("0")
        whole, _, frac = text.partition(".")
        frac = frac.ljust(min_decimals, "0")
        text = whole + ("." + frac if frac else "")
    return text


#: :func:`compact` prints magnitudes at or above this in scientific notation (``1.00e+308``,
#: not 309 digits): a figure inside a sentence stays short.
COMPACT_SCI_ABOVE = 1e9


def compact(x: float | None, sig: int = 3) -> str:
    """A figure inside a sentence or an arithmetic line: ``sig`` significant digits, short.

    No thousands separator and no trailing zeros (``compact(2.0) == "2"``,
    ``compact(0.5) == "0.5"``, ``compact(12345.6) == "12346"``); whole numbers
    below 1e7 print whole; magnitudes at or above :data:`COMPACT_SCI_ABOVE` or
    below 1e-4 print in scientific notation with ``sig`` digits
    (``compact(1e308) == "1.00e+308"``). ``None``, NaN and ±inf → ``"—"``.

    Raises:
        ValueError: ``sig`` < 1.
    """
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return DASH
    if sig < 1:
        raise ValueError(f"sig must be >= 1, got {sig}")
    if x == 0:
        return "0"
    if abs(x) >= COMPACT_SCI_ABOVE or abs(x) < _SMALLEST_FIXED:
        return f"{x:.{max(sig - 1, 0)}e}"
    if float(x).is_integer() and abs(x) < 1e7:
        return str(int(x))
    return num(x, sig, grouping=False, trim=True)


def fixed(x: float, decimals: int = 3) -> str:
    """``x`` with a fixed number of ``decimals`` (a ratio: ``fixed(0.1723) == "0.172"``).

    At or above :data:`COMPACT_SCI_ABOVE` it is :func:`compact` (scientific, 3 digits);
    NaN and ±inf → ``"—"``.
    """
    if not math.isfinite(x):
        return DASH
    if abs(x) >= COMPACT_SCI_ABOVE:
        return compact(x, 3)
    return f"{x:.{decimals}f}"


def percent(fraction: float | None, *, decimals: int = 1, signed: bool = False) -> str:
    """A fraction as a percentage: 0.129 → ``"12.9%"``, 0.0004 → ``"0.040%"``.

    Args:
        fraction: 1.0 = 100%. ``None``/NaN → ``"—"``.
        decimals: decimals for values ≥ 1%; below 1% at least two
            significant digits are kept instead.
        signed: ``+``/``-`` in front (a change: ``"+7.7%"``).
    """
    special = _special(fraction)
    if special is not None:
        return special + ("%" if special != DASH else "")
    p = 100 * float(fraction)
    if math.isinf(p):  # 100 × a fraction near the largest float
        return ("∞" if p > 0 else "-∞") + "%"
    sign = "+" if signed else ""
    if p != 0 and abs(p) < 1:
        # two significant digits, at least ``decimals`` decimals
        d = max(decimals, 1 - _magnitude(p, 2))
        if abs(p) < _SMALLEST_FIXED:
            return f"{p:{sign}.1e}%"
        return f"{p:{sign}.{d}f}%"
    if abs(p) >= _LARGEST_FIXED:
        return f"{p:{sign}.2e}%"
    return f"{p:{sign}.{decimals}f}%"


def signed_percent(r: float | None) -> str:
    """The change a ratio means, in percent: 1.077 → ``"+7.7%"``, 0.932 → ``"-6.8%"``."""
    return percent(None if r is None else float(r) - 1, signed=True)


def ratio(x: float | None) -> str:
    """A ratio: three decimals below 10 (``"1.077"``, ``"0.932"``), else 3 significant digits.

    Below 0.1 more decimals keep three significant digits (``"0.0123"``).
    """
    special = _special(x)
    if special is not None:
        return special
    return num(x, 3, min_decimals=3 if abs(float(x)) < 10 else 0)


def statistic(x: float | None) -> str:
    """A test statistic (t, F, W) or degrees of freedom: two decimals, ≥ 2 significant digits.

    ``statistic(0.9012) == "0.90"``, ``statistic(-1.859) == "-1.86"``,
    ``statistic(0.0042) == "0.0042"``.
    """
    return num(x, 2, min_decimals=2)


def p_value(p: float | None, decimals: int = 3) -> str:
    """A p-value with ``decimals`` decimals; smaller values keep two significant digits.

    ``p_value(0.3912, 2) == "0.39"``, ``p_value(0.00012) == "0.00012"``.
    """
    special = _special(p)
    if special is not None:
        return special
    p = float(p)
    if p != 0 and p < 10**-decimals:
        return num(p, 2)
    return f"{p:.{decimals}f}"


def display_scale(unit: str, values: Iterable[float | None]) -> tuple[float, str]:
    """The factor and label to show ``values`` of ``unit`` in, chosen once for all of them.

    Only seconds are rescaled: the largest finite magnitude among ``values``
    picks s, ms, µs or ns, so a formula that mixes several numbers keeps one
    unit. Any other unit is returned as is with factor 1.

    Returns:
        ``(factor, label)``; display value = value × factor.
        ``display_scale("s", [0.0123, 0.0114]) == (1000.0, "ms")``.
    """
    if unit != "s":
        return 1.0, unit
    finite = [abs(float(v)) for v in values if v is not None and math.isfinite(float(v)) and v != 0]
    if not finite:
        return 1.0, "s"
    biggest = max(finite)
    for factor, label in _SECOND_SCALES:
        # 0.9996 s rounds to 1.00 s at 3 digits, so compare after rounding
        if float(f"{biggest * factor:.2e}") >= 1:
            return factor, label
    return _SECOND_SCALES[-1]


def seconds(x: float | None, sig: int = 3) -> str:
    """A duration given in seconds, in s / ms / µs / ns: 0.0123 → ``"12.3 ms"``, 1.5 → ``"1.50 s"``."""
    special = _special(x)
    if special is not None:
        return f"{special} s" if special != DASH else DASH
    factor, label = display_scale("s", [x])
    return f"{num(float(x) * factor, sig)} {label}"


def quantity(x: float | None, unit: str = "", sig: int = 3) -> str:
    """A value with its unit: ``"s"`` scales (:func:`seconds`), ``"%"`` takes a fraction
    (:func:`percent`), ``"ratio"`` is :func:`ratio`; any other unit is appended
    (``quantity(85.46, "tok/s") == "85.5 tok/s"``). ``None``/NaN → ``"—"`` without unit.
    """
    if unit == "s":
        return seconds(x, sig)
    if unit == "%":
        return percent(x)
    if unit == "ratio":
        return ratio(x)
    text = num(x, sig)
    if not unit or text == DASH:
        return text
    return f"{text} {unit}"


def with_uncertainty(mean: float | None, std: float | None = None, n: int | None = None,
                     cv: float | None = None, unit: str = "", sig: int = 3) -> str:
    """A mean with its run-to-run spread: ``"85.5 ± 3.8 tok/s (n=5, CV 4.4%)"``.

    The std is shown to two significant digits and the mean to the same
    decimal place (GUM §7.2.6); without a std (n = 1) the mean gets ``sig``
    digits. Seconds are scaled once for both (``"12.3 ± 0.41 ms (n=5, CV 3.3%)"``).

    Args:
        mean: the mean, in ``unit``. std: sample standard deviation or ``None``.
        n: number of values (shown when given). cv: std/mean as a fraction;
            computed from ``mean`` and ``std`` when not given and mean > 0.
        unit: unit of ``mean`` and ``std`` (``"s"`` is rescaled).
        sig: significant digits of the mean when there is no std.
    """
    factor, label = display_scale(unit, [mean])
    u = f" {label}" if label else ""
    m = None if mean is None else float(mean) * factor
    s = None if std is None else float(std) * factor
    if _special(m) is not None:
        text = _special(m) or DASH
    elif s is None or _special(s) is not None:
        text = f"{num(m, sig)}{u}"
    elif s == 0:
        text = f"{num(m, sig)} ± 0{u}"
    else:
        s_txt = num(s, 2)
        decimals = max(0, 1 - _magnitude(s, 2))
        if abs(s) < _SMALLEST_FIXED or abs(m) < _SMALLEST_FIXED:
            m_txt = num(m, max(sig, _magnitude(m, sig) - _magnitude(s, 2) + 2))
        else:
            m_txt = f"{m:,.{decimals}f}"
        text = f"{m_txt} ± {s_txt}{u}"
    if cv is None and mean is not None and std is not None and float(mean) > 0 \
            and math.isfinite(float(std)):
        cv = float(std) / float(mean)
    extra = [f"n={n}"] if n is not None else []
    if cv is not None:
        extra.append(f"CV {percent(cv)}")
    return text + (f" ({', '.join(extra)})" if extra else "")
