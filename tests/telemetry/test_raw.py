"""Raw samples: the compact blob round-trips exactly, through the store too; bytes per sample."""

from __future__ import annotations

import math
import random
import sqlite3
import zlib
from pathlib import Path

import pytest

from tokcaliper.load.summary import summarize
from tokcaliper.model.run import LoadConfig, RequestRecord, Run
from tokcaliper.model.telemetry import TelemetrySample
from tokcaliper.telemetry import pack_samples, unpack_samples

#: The committed schema-v1 database (see tests/store/test_migration.py for its provenance).
V1_DB = Path(__file__).resolve().parent.parent / "store" / "data" / "schema_v1.db"


def make_run(tokens: int) -> Run:
    recs = [RequestRecord(index=0, start_s=0.0, ttft_s=0.1, e2e_s=2.0, output_tokens=tokens,
                          token_count_source="usage", itl_s=[0.1, 0.2])]
    return Run(session="s1", started_at="2026-01-01T00:00:00Z", finished_at="2026-01-01T00:00:02Z",
               command_line="tokcaliper bench", tool_version="0.1.0",
               config=LoadConfig(base_url="http://127.0.0.1:1"), metrics=summarize(recs), requests=recs)


def _run_samples(ticks: int = 600, seed: int = 1) -> list[TelemetrySample]:
    """60 s at 10 Hz of one GPU, the host (2 cores) and the client process, as the sampler writes them."""
    rnd = random.Random(seed)
    out = []
    t0, w0, e0, cpu = 5000.123456, 1.79e9 + 0.5, 1.2e6, 3.0
    for i in range(ticks):
        t = t0 + 0.1 * i + rnd.uniform(0, 2e-4)
        w = w0 + (t - t0)
        out.append(TelemetrySample(
            device="gpu0", t_mono_s=t, t_wall_s=w, clock_mhz=1980.0 if i < 300 else 1755.0,
            mem_clock_mhz=2619.0, power_w=round(rnd.uniform(380, 700), 3), power_limit_w=700.0,
            temperature_c=float(60 + i // 60), utilization_pct=100.0, throttle_mask=4 if i % 7 else 0,
            energy_j=e0 + 0.06 * i * 100))
        out.append(TelemetrySample(
            device="cpu", t_mono_s=t, t_wall_s=w, clock_mhz=None,
            utilization_pct=None if i == 0 else rnd.uniform(20, 100),
            steal_pct=None if i == 0 else rnd.choice([0.0, 0.0, 0.5, 1.0]),
            core_utilization_pct=None if i == 0 else [rnd.uniform(0, 100), None if i == 5 else 50.0]))
        cpu += rnd.choice([0.01, 0.02, 0.03])
        out.append(TelemetrySample(device="client", t_mono_s=t, t_wall_s=w, cpu_time_s=round(cpu, 2),
                                   rss_bytes=48_000_000 + 4096 * (i // 100)))
    return out


def test_round_trip_is_exact_and_compact():
    samples = _run_samples()
    blob = pack_samples(samples)
    back = unpack_samples(blob)
    assert back == samples  # every field, None included, bit for bit
    assert back[3 * 1 + 1].core_utilization_pct is not None  # tick 1, device cpu
    assert back[3 * 5 + 1].core_utilization_pct[1] is None  # a None inside a list field survives
    per_sample = len(blob) / len(samples)
    json_size = len("[" + ",".join(s.model_dump_json() for s in samples) + "]")
    # measured: ~15-20 B per sample with random (incompressible) readings; JSON is ~300 B
    assert per_sample < 30, per_sample
    assert len(blob) < json_size / 10
    # constant or all-None columns cost ~nothing: the mem clock column is one value repeated
    header_len = int.from_bytes(zlib.decompress(blob)[:4], "little")
    assert b'"mem_clock_mhz"' in zlib.decompress(blob)[4:4 + header_len]
    assert b'"power_w"' not in zlib.decompress(blob)[4:4 + header_len].split(b'"device":"cpu"')[1]


def test_damaged_blob_is_a_value_error():
    with pytest.raises(ValueError, match="not a telemetry sample blob"):
        unpack_samples(b"not zlib")
    with pytest.raises(ValueError, match="format"):
        head = b'{"format":1}'
        unpack_samples(zlib.compress(len(head).to_bytes(4, "little") + head))
    assert unpack_samples(pack_samples([])) == []


def test_store_keeps_samples_with_the_run(tmp_path):
    from tokcaliper.errors import StoreError
    from tokcaliper.store import Store

    samples = _run_samples(ticks=50)
    db = tmp_path / "r.db"
    with Store(db) as store:
        rid = store.save_run(make_run(8), samples)
        other = store.save_run(make_run(8))  # telemetry off: no row
        assert store.telemetry_samples(rid) == samples
        assert store.telemetry_samples(other) == []
        n, size = store.telemetry_samples_size(rid)
        assert n == 150 and size == len(pack_samples(samples))
        assert store.telemetry_samples_size(other) is None
    conn = sqlite3.connect(db)
    conn.execute("UPDATE telemetry_samples SET data = x'00'")
    conn.commit()
    conn.close()
    with Store(db) as store, pytest.raises(StoreError, match=f"telemetry samples of run {rid}"):
        store.telemetry_samples(rid)


def test_v1_database_upgrades_with_an_empty_samples_table(tmp_path):
    import shutil

    from tokcaliper.store import Store

    db = tmp_path / "old.db"
    shutil.copy(V1_DB, db)
    with Store(db) as store:
        ids = [r.id for r in store.list_runs()]
        assert ids and all(store.telemetry_samples(i) == [] for i in ids)
        cols = [r[1] for r in store.conn.execute("PRAGMA table_info(telemetry_samples)")]
    assert cols == ["run_id", "format", "sample_count", "data"]


def test_nan_free_json_summary_of_samples():
    # the per-sample model dumps None (not NaN) so the JSON side stays valid
    s = unpack_samples(pack_samples(_run_samples(ticks=2)))[1]
    assert s.utilization_pct is None and not any(
        isinstance(v, float) and math.isnan(v) for v in s.model_dump().values())
