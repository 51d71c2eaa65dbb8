"""Raw telemetry samples as one compact, lossless blob per run (for timelines).

Layout (``FORMAT`` = ``"tokcaliper-samples/1"``), zlib-compressed (RFC 1950, level 6)::

    uint32 LE  header length H
    H bytes    header, UTF-8 JSON:
               {"format": ..., "devices": [{"device": "gpu0", "n": 123,
                 "columns": [["t_mono_s", "<f8", 0], ["clock_mhz", "<f8", 0],
                             ["core_utilization_pct", "<f8", 2], ...]}, ...]}
    then, device by device and column by column, the column's array in
    C order, little-endian: shape (n,) where the third entry is 0, or, for list
    fields, first an ``<i8`` array of each sample's list length (−1 = no list),
    then the (n, width) matrix, width being the third entry.

Columns are numpy-packed per device: ``<f8`` (float64) for every float field, so the
round trip is exact; ``None`` is NaN. ``throttle_mask``, ``rss_bytes``, ``foreign_procs``
and ``foreign_mem_bytes`` are ``<i8``
with −1 for ``None``. A column that is ``None`` in every sample of a device is left
out. Time columns ``t_mono_s`` / ``t_wall_s`` are always kept. For a 10 Hz run of the
host and two processes this is ~20–30 bytes per sample after compression (measured
in ``tests/telemetry/test_raw.py``; ``docs/telemetry.md``).
"""

from __future__ import annotations

import json
import math
import struct
import zlib
from collections.abc import Sequence

import numpy as np

from tokcaliper.model.telemetry import TelemetrySample

__all__ = ["FORMAT", "pack_samples", "unpack_samples"]

FORMAT = "tokcaliper-samples/1"
_FLOATS = ("t_mono_s", "t_wall_s", "clock_mhz", "mem_clock_mhz", "power_w", "power_limit_w",
           "temperature_c", "utilization_pct", "energy_j", "steal_pct", "cpu_time_s", "foreign_sm_pct")
_INTS = ("throttle_mask", "rss_bytes", "foreign_procs", "foreign_mem_bytes")
_LISTS = ("core_utilization_pct",)
_ALWAYS = ("t_mono_s", "t_wall_s")


def pack_samples(samples: Sequence[TelemetrySample]) -> bytes:
    """Pack samples into the blob described in the module docstring.

    Args:
        samples: any devices, in time order (the sampler's order).

    Returns:
        The compressed blob (``len()`` of it is what the store keeps).

    Raises:
        Nothing for valid samples.
    """
    by_dev: dict[str, list[TelemetrySample]] = {}
    for s in samples:
        by_dev.setdefault(s.device, []).append(s)
    header: dict[str, object] = {"format": FORMAT, "devices": []}
    chunks: list[bytes] = []
    for dev, ss in by_dev.items():
        cols: list[list[object]] = []
        for name in _FLOATS:
            vals = [getattr(s, name) for s in ss]
            if name not in _ALWAYS and all(v is None for v in vals):
                continue
            arr = np.array([math.nan if v is None else float(v) for v in vals], dtype="<f8")
            cols.append([name, "<f8", 0])
            chunks.append(arr.tobytes())
        for name in _INTS:
            vals = [getattr(s, name) for s in ss]
            if all(v is None for v in vals):
                continue
            arr = np.array([-1 if v is None else int(v) for v in vals], dtype="<i8")
            cols.append([name, "<i8", 0])
            chunks.append(arr.tobytes())
        for name in _LISTS:
            vals = [getattr(s, name) for s in ss]
            width = max((len(v) for v in vals if v), default=0)
            if not width:
                continue
            lens = np.array([-1 if v is None else len(v) for v in vals], dtype="<i8")
            arr = np.full((len(ss), width), math.nan, dtype="<f8")
            for i, v in enumerate(vals):
                for j, x in enumerate(v or ()):
                    if x is not None:
                        arr[i, j] = x
            cols.append([name, "<f8", width])
            chunks.append(lens.tobytes())
            chunks.append(arr.tobytes())
        header["devices"].append({"device": dev, "n": len(ss), "columns": cols})  # type: ignore[attr-defined]
    head = json.dumps(header, separators=(",", ":")).encode()
    return zlib.compress(struct.pack("<I", len(head)) + head + b"".join(chunks), 6)


def unpack_samples(blob: bytes) -> list[TelemetrySample]:
    """Inverse of :func:`pack_samples`: the samples, ordered by time (device order within a tick).

    Raises:
        ValueError: not a blob of :data:`FORMAT` (damaged, or another format).
    """
    try:
        raw = zlib.decompress(blob)
        (hlen,) = struct.unpack_from("<I", raw, 0)
        header = json.loads(raw[4:4 + hlen])
    except (zlib.error, struct.error, ValueError) as e:
        raise ValueError(f"not a telemetry sample blob: {e}") from None
    if header.get("format") != FORMAT:
        raise ValueError(f"telemetry sample blob of format {header.get('format')!r}, expected {FORMAT!r}")
    off = 4 + hlen
    rows: list[tuple[float, int, TelemetrySample]] = []
    for order, d in enumerate(header["devices"]):
        n = int(d["n"])
        fields: dict[str, list[object]] = {}
        for name, dtype, width in d["columns"]:
            lens: list[int] = []
            if width:
                lens = np.frombuffer(raw, dtype="<i8", count=n, offset=off).tolist()
                off += 8 * n
            arr = np.frombuffer(raw, dtype=dtype, count=n * max(1, width), offset=off)
            off += arr.nbytes
            if width:
                fields[name] = [None if k < 0 else [None if math.isnan(x) else x for x in row[:k]]
                                for k, row in zip(lens, arr.reshape(n, width).tolist())]
            elif dtype == "<i8":
                fields[name] = [None if v < 0 else int(v) for v in arr.tolist()]
            else:
                fields[name] = [None if math.isnan(v) else v for v in arr.tolist()]
        for i in range(n):
            values = {k: v[i] for k, v in fields.items()}
            s = TelemetrySample(device=d["device"], **values)  # type: ignore[arg-type]
            rows.append((s.t_mono_s, order, s))
    rows.sort(key=lambda r: (r[0], r[1]))
    return [s for _, _, s in rows]
