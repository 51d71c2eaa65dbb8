"""SQLite schema and queries for runs.

Each run is written in one transaction the moment it finishes, so an
interrupted session loses nothing already measured. Nested data (config,
metrics, host, telemetry) is kept as JSON validated by the pydantic models on
the way in and out; every metric of the registry (:mod:`tokcaliper.model.metrics`)
also goes to ``run_scalars`` so that queries such as "aggregate tok/s of runs
3–7" need no JSON parsing. ``PRAGMA user_version`` is the schema version; opening
an older database upgrades it step by step (:data:`_MIGRATIONS`), each step in
one transaction.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ValidationError

from tokcaliper.errors import ExperimentBusy, InputError, StoreError
from tokcaliper.model.baseline import Baseline
from tokcaliper.model.experiment import ExperimentRow, ExperimentStatus, Outcome
from tokcaliper.model.metrics import get_metric, run_scalars
from tokcaliper.model.run import LoadConfig, RequestRecord, Run, RunMetrics, RunSource
from tokcaliper.model.served import ServedModel
from tokcaliper.model.stored import DamagedRun, RunList, RunRow, damaged_caveats
from tokcaliper.model.telemetry import HostInfo, TelemetrySample, TelemetrySummary
from tokcaliper.telemetry.raw import FORMAT as SAMPLES_FORMAT
from tokcaliper.telemetry.raw import pack_samples, unpack_samples
from tokcaliper.model.timestamps import normalize_utc_iso, utc_now_iso
from tokcaliper.processes import process_alive, process_start
from tokcaliper.validation import explain

#: Bump with a migration in :data:`_MIGRATIONS` when the schema changes.
SCHEMA_VERSION = 9

_SCHEMA_V1 = """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session TEXT NOT NULL,
        arm TEXT NOT NULL,
        repetition INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT NOT NULL,
        command_line TEXT NOT NULL,
        server_command TEXT,
        server_version TEXT,
        tool_version TEXT NOT NULL,
        host_json TEXT NOT NULL,
        telemetry_json TEXT,
        counters_json TEXT NOT NULL,
        config_json TEXT NOT NULL,
        metrics_json TEXT NOT NULL
    );
    CREATE INDEX runs_session ON runs(session);
    CREATE TABLE run_scalars (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        metric TEXT NOT NULL,
        value REAL,
        PRIMARY KEY (run_id, metric)
    );
    CREATE TABLE requests (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        warmup INTEGER NOT NULL,
        start_s REAL NOT NULL,
        ttft_s REAL,
        e2e_s REAL,
        output_tokens INTEGER NOT NULL,
        prompt_tokens INTEGER,
        token_count_source TEXT NOT NULL,
        content_chunks INTEGER NOT NULL,
        error TEXT,
        itl_json TEXT NOT NULL,
        server_timings_json TEXT,
        PRIMARY KEY (run_id, idx)
    );
    """


def _execute_script(conn: sqlite3.Connection, script: str) -> None:
    """Run ``;``-separated statements inside the caller's transaction
    (``executescript`` would commit first). The scripts here hold no ``;`` in literals."""
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def _migrate_v1(conn: sqlite3.Connection) -> None:
    _execute_script(conn, _SCHEMA_V1)


def _migrate_v2(conn: sqlite3.Connection) -> None:
    """v1 → v2: typed run fields and one home for idle power.

    - new columns ``position`` (run order), ``rest_s`` (rest before the run),
      ``counters_error`` (why /metrics could not be read), ``warmup_run``
      (a stored run excluded from analysis), ``valid`` / ``invalid_reason``
      and ``readback`` (what an experiment's read-back printed);
    - new tables ``experiments`` (the validated experiment file) and
      ``outcomes`` (arms that failed to start, read-back mismatches: M8);
    - timestamps rewritten in the one canonical format (UTC, ms, ``Z``);
    - idle power moves from ``host_json`` (v1 wrote ``idle_power_w`` and
      ``idle_seconds`` there) into the run's telemetry summary;
    - ``run_scalars`` gains every metric of the registry, recomputed from the
      stored summary. v1 bench sessions had one arm, so position = repetition;
    - new table ``telemetry_samples``: the raw telemetry samples of a run as one
      blob (:mod:`tokcaliper.telemetry.raw`, format named in ``format``), for
      timelines. v1 kept no raw samples, so no row is added for old runs.
    """
    _execute_script(conn, """
        ALTER TABLE runs ADD COLUMN position INTEGER;
        ALTER TABLE runs ADD COLUMN rest_s REAL;
        ALTER TABLE runs ADD COLUMN counters_error TEXT;
        ALTER TABLE runs ADD COLUMN warmup_run INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE runs ADD COLUMN valid INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE runs ADD COLUMN invalid_reason TEXT;
        ALTER TABLE runs ADD COLUMN readback TEXT;
        UPDATE runs SET position = repetition;
        CREATE TABLE experiments (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            created_at TEXT NOT NULL,
            status TEXT NOT NULL,
            spec_json TEXT NOT NULL,
            source_text TEXT NOT NULL
        );
        CREATE TABLE outcomes (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            experiment_id TEXT NOT NULL REFERENCES experiments(id),
            position INTEGER,
            arm TEXT NOT NULL,
            kind TEXT NOT NULL,
            reason TEXT NOT NULL,
            at TEXT NOT NULL
        );
        CREATE INDEX outcomes_experiment ON outcomes(experiment_id);
        CREATE TABLE telemetry_samples (
            run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
            format TEXT NOT NULL,
            sample_count INTEGER NOT NULL,
            data BLOB NOT NULL
        )
    """)
    rows = conn.execute(
        "SELECT id, started_at, finished_at, host_json, telemetry_json, metrics_json FROM runs"
    ).fetchall()
    for rid, started, finished, host_json, telemetry_json, metrics_json in rows:
        host = json.loads(host_json)
        idle_power = host.pop("idle_power_w", None)
        idle_seconds = host.pop("idle_seconds", None)
        telemetry = None if telemetry_json is None else json.loads(telemetry_json)
        if telemetry is not None and idle_power is not None:
            telemetry["idle_power_w"] = idle_power
            telemetry["idle_duration_s"] = idle_seconds
        conn.execute(
            "UPDATE runs SET started_at=?, finished_at=?, host_json=?, telemetry_json=? WHERE id=?",
            (normalize_utc_iso(started), normalize_utc_iso(finished), _dumps(host or None),
             None if telemetry is None else _dumps(telemetry), rid),
        )
        scalars = run_scalars(RunMetrics.model_validate_json(metrics_json))
        conn.executemany(
            "INSERT OR REPLACE INTO run_scalars (run_id, metric, value) VALUES (?,?,?)",
            [(rid, k, v) for k, v in scalars.items()],
        )


def _migrate_v3(conn: sqlite3.Connection) -> None:
    """v2 → v3: column ``restart`` (0-based index of the server start a run ran under,
    ``bench --restarts``; NULL for older runs and runs without restarts), so that
    restart-level and run-level variance can be split (issue 17 item 7)."""
    _execute_script(conn, "ALTER TABLE runs ADD COLUMN restart INTEGER")


def _migrate_v4(conn: sqlite3.Connection) -> None:
    """v3 → v4: who runs an experiment now, and the prompts it measured with.

    - ``claimed_pid`` / ``claimed_start`` / ``claimed_at``: the process measuring the
      experiment's positions (:meth:`Store.claim_experiment`), so that a second
      ``experiment resume`` refuses instead of measuring every pending position again;
      ``claimed_start`` is the holder's start time (:mod:`tokcaliper.processes`),
      which tells a live holder from a reused pid;
    - ``prompts_path`` / ``prompts_sha256``: the prompts file the first run resolved
      (relative paths against the experiment file's folder) and a digest of the
      prompts read from it, so that ``resume`` uses the same file and refuses a
      changed one. Experiments stored before v4 have them NULL.
    """
    _execute_script(conn, """
        ALTER TABLE experiments ADD COLUMN claimed_pid INTEGER;
        ALTER TABLE experiments ADD COLUMN claimed_start TEXT;
        ALTER TABLE experiments ADD COLUMN claimed_at TEXT;
        ALTER TABLE experiments ADD COLUMN prompts_path TEXT;
        ALTER TABLE experiments ADD COLUMN prompts_sha256 TEXT
    """)


def _migrate_v5(conn: sqlite3.Connection) -> None:
    """v4 → v5: columns ``requested_prompt_tokens`` / ``requested_output_tokens`` of
    ``requests``: the synthetic lengths each request asked for (``--input-tokens`` /
    ``--output-tokens``), beside the counted ``prompt_tokens`` / ``output_tokens``
    (issue 18 item 2). NULL for older requests and requests that asked for none."""
    _execute_script(conn, """
        ALTER TABLE requests ADD COLUMN requested_prompt_tokens INTEGER;
        ALTER TABLE requests ADD COLUMN requested_output_tokens INTEGER
    """)


def _migrate_v6(conn: sqlite3.Connection) -> None:
    """v5 → v6: column ``source_json`` of ``runs``: the peer tool, version, file, settings
    and field mapping of a run imported by ``tokcaliper import`` (issue 20). NULL for
    runs tokcaliper measured itself."""
    _execute_script(conn, "ALTER TABLE runs ADD COLUMN source_json TEXT")


def _migrate_v7(conn: sqlite3.Connection) -> None:
    """v6 → v7: table ``baselines``: named baselines of the CI regression gate
    (``tokcaliper baseline save``, issue 19 item 5), one validated
    :class:`~tokcaliper.model.baseline.Baseline` document per name."""
    _execute_script(conn, """
        CREATE TABLE baselines (
            name TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            doc_json TEXT NOT NULL
        )
    """)


def _migrate_v8(conn: sqlite3.Connection) -> None:
    """v7 → v8: columns ``cached_tokens``, ``session``, ``turn`` and ``prefix_group`` of
    ``requests``: the prompt tokens the server served from its prefix cache, and the
    multi-turn session, turn and shared-prefix group of each request (issue 18 item 5).
    NULL for older requests and requests outside sessions and prefix groups."""
    _execute_script(conn, """
        ALTER TABLE requests ADD COLUMN cached_tokens INTEGER;
        ALTER TABLE requests ADD COLUMN session INTEGER;
        ALTER TABLE requests ADD COLUMN turn INTEGER;
        ALTER TABLE requests ADD COLUMN prefix_group INTEGER
    """)


def _migrate_v9(conn: sqlite3.Connection) -> None:
    """v8 → v9: column ``served_json`` of ``runs``: what the server said it serves
    (model file, quantization, parameters; :class:`~tokcaliper.model.served.ServedModel`),
    so that a stored run can be bounded by its roofline (issue 25). NULL for older runs."""
    _execute_script(conn, "ALTER TABLE runs ADD COLUMN served_json TEXT")


#: Schema version → the function that upgrades the previous version to it.
_MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _migrate_v1, 2: _migrate_v2, 3: _migrate_v3, 4: _migrate_v4, 5: _migrate_v5,
    6: _migrate_v6, 7: _migrate_v7, 8: _migrate_v8, 9: _migrate_v9}


def _first_error(e: Exception) -> str:
    """One line naming the first problem of a validation or JSON error (no pydantic URL)."""
    if isinstance(e, ValidationError):
        return explain(e, what="value")
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 200 else text[:200] + "…"


def write_recovery_file(run: Run, db_path: Path) -> Path | None:
    """Keep a run that could not be stored: its JSON (``Run.model_dump_json``), next to the
    database if that folder is writable, else in ``$TOKCALIPER_CACHE``/``~/.cache/tokcaliper/recovered``.

    The file name is ``<db name>.run-<session>-<arm>-<repetition>-<UTC time>.json``; the
    run's ``id`` is unset. Returns the file written, or None when neither place is writable.
    """
    import re
    import time as _time

    from tokcaliper.fileio import cache_dir

    stamp = _time.strftime("%Y%m%dT%H%M%SZ", _time.gmtime())
    tag = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{run.session}-{run.arm}-{run.repetition}")[:80]
    name = f"{db_path.name or 'tokcaliper.db'}.run-{tag}-{stamp}.json"
    text = run.model_dump_json(indent=1)
    for folder in (db_path.parent, cache_dir() / "recovered"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            target = folder / name
            target.write_text(text, encoding="utf-8")
            return target.resolve()
        except OSError:
            continue
    return None


#: Tables every database of a schema version has (a missing one means damage).
_TABLES = {1: {"runs", "run_scalars", "requests"},
           2: {"runs", "run_scalars", "requests", "experiments", "outcomes", "telemetry_samples"}}
_TABLES[3] = _TABLES[2]  # v3 adds a column (runs.restart), no table
_TABLES[4] = _TABLES[2]  # v4 adds columns to experiments, no table
_TABLES[5] = _TABLES[2]  # v5 adds two columns to requests, no table
_TABLES[6] = _TABLES[2]  # v6 adds runs.source_json, no table
_TABLES[7] = _TABLES[2] | {"baselines"}  # v7 adds the baselines table
_TABLES[8] = _TABLES[7]  # v8 adds four columns to requests, no table
_TABLES[9] = _TABLES[7]  # v9 adds runs.served_json, no table


def _dumps(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


#: Run fields stored as same-named columns of ``runs``.
_SCALAR_COLUMNS = [
    "session", "arm", "repetition", "position", "rest_s", "started_at", "finished_at",
    "command_line", "server_command", "server_version", "tool_version", "counters_error",
    "warmup_run", "valid", "invalid_reason", "readback", "restart",
]
#: Run fields stored as JSON: column → (field, model or None for plain JSON).
_JSON_FIELDS: dict[str, tuple[str, type[BaseModel] | None]] = {
    "host_json": ("host", HostInfo),
    "telemetry_json": ("telemetry", TelemetrySummary),
    "counters_json": ("counters_delta", None),
    "config_json": ("config", LoadConfig),
    "metrics_json": ("metrics", RunMetrics),
    "source_json": ("source", RunSource),
    "served_json": ("served", ServedModel),
}
_JSON_COLUMNS = list(_JSON_FIELDS)


def _run_columns(run: Run) -> dict[str, object]:
    """Column → value of one run for ``INSERT INTO runs`` (requests go elsewhere)."""
    values: dict[str, object] = {c: getattr(run, c) for c in _SCALAR_COLUMNS}
    for column, (field, _model) in _JSON_FIELDS.items():
        value = getattr(run, field)
        if isinstance(value, BaseModel):
            values[column] = value.model_dump_json()
        else:
            # host_json is NOT NULL since v1: a run without host info stores JSON null.
            values[column] = (None if value is None and column in ("telemetry_json", "source_json", "served_json")
                              else _dumps(value))
    return values


def _run_from_columns(fields: dict[str, object], requests: list[RequestRecord]) -> Run:
    """Inverse of :func:`_run_columns`. Raises ValidationError/ValueError on damaged JSON."""
    data: dict[str, object] = {k: fields[k] for k in ["id", *_SCALAR_COLUMNS]}
    for column, (field, model) in _JSON_FIELDS.items():
        text = fields[column]
        if text is None or text == "null":
            data[field] = None
        elif model is None:
            data[field] = json.loads(text)  # type: ignore[arg-type]
        else:
            try:
                data[field] = model.model_validate_json(text)  # type: ignore[arg-type]
            except ValidationError as e:
                raise ValueError(f"{field}.{_first_error(e)}") from None
    return Run.model_validate({**data, "requests": requests})


_EXPERIMENT_COLUMNS = ("id, name, created_at, status, spec_json, source_text, prompts_path, "
                       "prompts_sha256, claimed_pid")


def _experiment_row(row: Sequence[object]) -> ExperimentRow:
    rid, name, created, status, spec_json, text, prompts_path, prompts_sha256, pid = row
    return ExperimentRow(id=rid, name=name, created_at=created, status=status,  # type: ignore[arg-type]
                         spec=json.loads(spec_json), source_text=text,  # type: ignore[arg-type]
                         prompts_path=prompts_path, prompts_sha256=prompts_sha256,  # type: ignore[arg-type]
                         claimed_pid=pid)  # type: ignore[arg-type]


class Store:
    """A results database at ``path`` (created on first use).

    Args:
        path: the SQLite file.
        create: create the file and schema when missing (writers); readers
            pass False so that a mistyped path is an error, not a new file.

    Raises:
        InputError: ``create`` is False and the file does not exist.
        StoreError: the path is a directory, the file is not a tokcaliper
            database, or was written by a newer schema.
    """

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        if str(path) in ("", "."):  # typer turns --db '' into Path('.')
            raise InputError("the results database path is empty (--db ''): give a file name")
        self.path = Path(path)
        #: Runs found damaged by the reads so far (``list_runs``, ``session_runs``): skipped.
        self.damaged: list[DamagedRun] = []
        if self.path.is_dir():
            raise StoreError(f"results database {self.path} is a directory, not a file")
        if not create and not self.path.is_file():
            raise StoreError(f"results database {self.path} does not exist (run `tokcaliper bench` first)")
        try:
            self.conn = sqlite3.connect(self.path, timeout=30)
            self.conn.execute("PRAGMA foreign_keys = ON")
            self._migrate(create)
            if create:
                self.check_writable()
        except sqlite3.DatabaseError as e:
            raise StoreError(f"cannot use results database {self.path}: {e}") from None

    def _migrate(self, create: bool) -> None:
        """Check the schema version and upgrade an older database step by step.

        The version read before the write lock is only a hint: another process may
        be creating or upgrading the same file at this moment. Each step therefore
        takes the write lock (``BEGIN IMMEDIATE``), reads ``user_version`` again
        and runs only the step that version still needs (issue 22 item 4: two
        processes opening a new ``--db`` at once both ran v1 → v2, "duplicate
        column name: position").
        """
        # The checks read the version and the table list: one read transaction, one
        # snapshot (between two bare reads another process may commit its v1 step).
        self.conn.isolation_level = None
        try:
            self.conn.execute("BEGIN")
            try:
                version = self._check_version(create)
            finally:
                self.conn.execute("COMMIT")
        finally:
            self.conn.isolation_level = ""
        while version < SCHEMA_VERSION:
            # One transaction per step: an interrupted upgrade leaves the
            # previous version intact (executescript would commit early).
            self.conn.isolation_level = None
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                version = self._check_version(create)  # again, under the lock
                if version < SCHEMA_VERSION:
                    _MIGRATIONS[version + 1](self.conn)
                    version += 1
                    self.conn.execute(f"PRAGMA user_version = {version}")
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise
            finally:
                self.conn.isolation_level = ""

    def _check_version(self, create: bool) -> int:
        """The database's schema version after checking it can be used.

        Raises:
            StoreError: not a tokcaliper database (a user's file, another SQLite
                file), a newer schema, or tables of its version missing.
        """
        version = int(self.conn.execute("PRAGMA user_version").fetchone()[0])
        if version == 0 and not create:
            # Never turn a user's file into a database by reading it.
            raise StoreError(f"{self.path} is not a tokcaliper results database")
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"results database {self.path} has schema v{version}; "
                f"this tokcaliper reads up to v{SCHEMA_VERSION}: upgrade tokcaliper"
            )
        if version == 0 and self.conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE type='table'"
        ).fetchone()[0]:
            raise StoreError(f"{self.path} is an SQLite file but not a tokcaliper database")
        if version >= 1:
            have = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            missing = sorted(_TABLES.get(version, set()) - have)
            if missing:
                raise StoreError(f"results database {self.path} is damaged: table(s) "
                                 f"{', '.join(missing)} missing (schema v{version})")
        return version

    def check_writable(self) -> None:
        """Fail now, before anything is measured, if a run could not be written.

        Writes the schema version back inside a transaction and rolls it back:
        that needs a writable file and a writable folder (for the journal), the
        same as storing a run.

        Raises:
            StoreError: the file or its folder is read-only (or the disk is full, locked, …).
        """
        self.conn.isolation_level = None
        try:
            version = self.conn.execute("PRAGMA user_version").fetchone()[0]
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self.conn.execute(f"PRAGMA user_version = {int(version)}")
            finally:
                self.conn.execute("ROLLBACK")
        except sqlite3.DatabaseError as e:
            raise StoreError(f"results database {self.path} cannot be written: {e} "
                             "(nothing was measured; give a writable --db)") from None
        finally:
            self.conn.isolation_level = ""

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -----------------------------------------------------------
    def save_run(self, run: Run, samples: Sequence[TelemetrySample] | None = None) -> int:
        """Insert ``run`` with all its requests (and its raw telemetry ``samples``, when
        given and not empty) in one transaction; return its id."""
        blob = pack_samples(samples) if samples else None
        try:
            with self.conn:
                values = _run_columns(run)
                cur = self.conn.execute(
                    f"INSERT INTO runs ({', '.join(values)}) VALUES ({', '.join('?' * len(values))})",
                    list(values.values()),
                )
                run_id = int(cur.lastrowid)
                self.conn.executemany(
                    "INSERT INTO run_scalars (run_id, metric, value) VALUES (?,?,?)",
                    [(run_id, k, v) for k, v in run_scalars(run.metrics).items()],
                )
                self.conn.executemany(
                    """INSERT INTO requests (run_id, idx, warmup, start_s, ttft_s, e2e_s,
                       output_tokens, prompt_tokens, token_count_source, content_chunks, error,
                       itl_json, server_timings_json, requested_prompt_tokens,
                       requested_output_tokens, cached_tokens, session, turn, prefix_group)
                       VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
                    [
                        (
                            run_id, r.index, int(r.warmup), r.start_s, r.ttft_s, r.e2e_s,
                            r.output_tokens, r.prompt_tokens, r.token_count_source,
                            r.content_chunks, r.error, _dumps(r.itl_s),
                            None if r.server_timings is None else _dumps(r.server_timings),
                            r.requested_prompt_tokens, r.requested_output_tokens,
                            r.cached_tokens, r.session, r.turn, r.prefix_group,
                        )
                        for r in run.requests
                    ],
                )
                if blob is not None:
                    self.conn.execute(
                        "INSERT INTO telemetry_samples (run_id, format, sample_count, data) VALUES (?,?,?,?)",
                        (run_id, SAMPLES_FORMAT, len(samples), blob),  # type: ignore[arg-type]
                    )
        except sqlite3.DatabaseError as e:
            where = write_recovery_file(run, self.path)
            kept = (f"the run is kept in {where} (JSON of the run; nothing was lost)" if where
                    else "and no recovery file could be written either: the run is lost")
            raise StoreError(f"cannot write run to {self.path}: {e}; {kept}") from None
        run.id = run_id
        return run_id

    # -- experiments -------------------------------------------------------
    def create_experiment(self, exp_id: str, name: str, spec: dict, source_text: str, created_at: str,
                          prompts_path: str | None = None) -> None:
        """Record a new experiment (before its first run, so ``resume`` can find it).

        ``prompts_path``: the prompts file resolved to an absolute path (see :class:`ExperimentRow`).
        """
        self._write(
            "INSERT INTO experiments (id, name, created_at, status, spec_json, source_text, prompts_path) "
            "VALUES (?,?,?,?,?,?,?)",
            (exp_id, name, created_at, "running", _dumps(spec), source_text, prompts_path),
        )

    def set_experiment_prompts(self, exp_id: str, path: str | None, sha256: str) -> None:
        """Record the prompts file (absolute path, None: built-in) and digest the experiment measures with."""
        self._write("UPDATE experiments SET prompts_path = ?, prompts_sha256 = ? WHERE id = ?",
                    (path, sha256, exp_id))

    def claim_experiment(self, exp_id: str, pid: int | None = None) -> None:
        """Make process ``pid`` (default: this one) the one that measures ``exp_id``, atomically.

        Read and write happen in one write transaction (``BEGIN IMMEDIATE``), so of two
        processes claiming at once exactly one wins. A claim of this same process is
        renewed; the claim of a process that is gone (or whose pid now names another
        process, :func:`tokcaliper.processes.process_alive`) is taken over.

        Raises:
            ExperimentBusy: a live process holds the experiment (its pid in the message).
            InputError: no experiment ``exp_id``.
            StoreError: the database cannot be written.
        """
        pid = os.getpid() if pid is None else pid
        self.conn.isolation_level = None
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                row = self.conn.execute(
                    "SELECT claimed_pid, claimed_start, claimed_at FROM experiments WHERE id = ?",
                    (exp_id,)).fetchone()
                if row is None:
                    raise InputError(f"no experiment {exp_id!r} in {self.path}")
                holder, holder_start, since = row
                if holder is not None and holder != pid and process_alive(holder, holder_start):
                    raise ExperimentBusy(
                        f"experiment {exp_id} is being measured by process {holder} (since {since}); "
                        f"wait for it to end, or stop it (kill {holder}) and resume again")
                self.conn.execute(
                    "UPDATE experiments SET claimed_pid = ?, claimed_start = ?, claimed_at = ? WHERE id = ?",
                    (pid, process_start(pid), utc_now_iso(), exp_id))
                self.conn.execute("COMMIT")
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as e:
            raise StoreError(f"cannot write to {self.path}: {e}") from None
        finally:
            self.conn.isolation_level = ""

    def release_experiment(self, exp_id: str, pid: int | None = None) -> None:
        """Drop ``pid``'s claim on ``exp_id`` (default: this process); another's claim stays."""
        pid = os.getpid() if pid is None else pid
        self._write("UPDATE experiments SET claimed_pid = NULL, claimed_start = NULL, claimed_at = NULL "
                    "WHERE id = ? AND claimed_pid = ?", (exp_id, pid))

    def set_experiment_status(self, exp_id: str, status: ExperimentStatus) -> None:
        """Mark the experiment with one of :data:`~tokcaliper.model.experiment.ExperimentStatus`."""
        self._write("UPDATE experiments SET status = ? WHERE id = ?", (status, exp_id))

    def save_outcome(self, exp_id: str, outcome: Outcome) -> None:
        """Store a failed start, a read-back mismatch or a stop (M8) at once."""
        self._write(
            "INSERT INTO outcomes (experiment_id, position, arm, kind, reason, at) VALUES (?,?,?,?,?,?)",
            (exp_id, outcome.position, outcome.arm, outcome.kind, outcome.reason, outcome.at),
        )

    def get_experiment(self, exp_id: str) -> ExperimentRow:
        """The stored experiment ``exp_id`` (a unique prefix of the id is enough).

        Raises:
            InputError: no such experiment, or the prefix is ambiguous.
        """
        rows = self.conn.execute(
            f"SELECT {_EXPERIMENT_COLUMNS} FROM experiments "
            "WHERE id = ? OR id LIKE ? ORDER BY created_at", (exp_id, exp_id.replace("%", "") + "%"),
        ).fetchall()
        exact = [r for r in rows if r[0] == exp_id]
        rows = exact or rows
        if not rows:
            raise InputError(f"no experiment {exp_id!r} in {self.path} (`tokcaliper experiment list`)")
        if len(rows) > 1:
            raise InputError(f"experiment id {exp_id!r} is ambiguous in {self.path}: "
                             + ", ".join(r[0] for r in rows))
        return _experiment_row(rows[0])

    def save_baseline(self, baseline: Baseline, replace: bool = False) -> None:
        """Store ``baseline`` under its name.

        Raises:
            InputError: a baseline of that name exists and ``replace`` is False.
        """
        exists = self.conn.execute("SELECT 1 FROM baselines WHERE name = ?",
                                   (baseline.name,)).fetchone()
        if exists and not replace:
            raise InputError(f"baseline {baseline.name!r} exists in {self.path}: "
                             "--replace overwrites it")
        self._write("INSERT OR REPLACE INTO baselines (name, created_at, doc_json) VALUES (?,?,?)",
                    (baseline.name, baseline.created_at, baseline.model_dump_json()))

    def get_baseline(self, name: str) -> Baseline:
        """The stored baseline ``name``.

        Raises:
            InputError: no such baseline (the stored names are listed).
            StoreError: the stored document no longer validates.
        """
        row = self.conn.execute("SELECT doc_json FROM baselines WHERE name = ?", (name,)).fetchone()
        if row is None:
            names = [r[0] for r in self.conn.execute("SELECT name FROM baselines ORDER BY name")]
            raise InputError(f"no baseline {name!r} in {self.path} (stored: "
                             f"{', '.join(names) if names else 'none — `tokcaliper baseline save`'})")
        try:
            return Baseline.model_validate_json(row[0])
        except ValidationError as e:
            raise StoreError(f"baseline {name!r} in {self.path} is damaged: {explain(e)}") from None

    def list_baselines(self) -> list[Baseline]:
        """Every stored baseline, by name (damaged ones reported in :attr:`damaged`)."""
        return [self.get_baseline(r[0]) for r in
                self.conn.execute("SELECT name FROM baselines ORDER BY name").fetchall()]

    def list_experiments(self) -> list[ExperimentRow]:
        """Every stored experiment, oldest first."""
        return [_experiment_row(r) for r in self.conn.execute(
            f"SELECT {_EXPERIMENT_COLUMNS} FROM experiments ORDER BY created_at")]

    def outcomes(self, exp_id: str) -> list[Outcome]:
        """The experiment's outcomes in the order they happened."""
        return [
            Outcome(position=p, arm=a, kind=k, reason=r, at=t)
            for p, a, k, r, t in self.conn.execute(
                "SELECT position, arm, kind, reason, at FROM outcomes WHERE experiment_id = ? ORDER BY id",
                (exp_id,),
            )
        ]

    def _write(self, sql: str, args: Sequence[object]) -> None:
        try:
            with self.conn:
                self.conn.execute(sql, args)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"cannot write to {self.path}: {e}") from None

    # -- reading -----------------------------------------------------------
    def list_runs(self, session: str | None = None, limit: int | None = None) -> list[RunRow]:
        """Stored runs, newest last (optionally one session, the last ``limit``).

        Each row is validated as :meth:`get_run` validates it (every column but the
        request records), so a run that ``show`` calls damaged is never listed as
        intact: it goes to :attr:`damaged` with its reason instead.
        """
        sql = f"""SELECT r.id, {', '.join('r.' + c for c in _SCALAR_COLUMNS + _JSON_COLUMNS)},
                        (SELECT value FROM run_scalars WHERE run_id=r.id AND metric='ttft_p50_ms')
                 FROM runs r"""
        args: list[object] = []
        if session:
            sql += " WHERE r.session = ?"
            args.append(session)
        sql += " ORDER BY r.id"
        rows = self.conn.execute(sql, args).fetchall()
        if limit is not None:
            rows = rows[-limit:]
        out = []
        names = ["id", *_SCALAR_COLUMNS, *_JSON_COLUMNS]
        for row in rows:
            fields = dict(zip(names, row))
            rid = row[0]
            try:
                run = _run_from_columns(fields, [])
                m = run.metrics
                out.append(RunRow(
                    id=rid, session=run.session, arm=run.arm, repetition=run.repetition,
                    started_at=run.started_at, completed=m.completed, failed=m.failed,
                    aggregate_output_tok_s=m.aggregate_output_tok_s, ttft_p50_ms=row[-1],
                    tool=run.measured_by,
                ))
            except (ValueError, TypeError, KeyError, ValidationError) as e:
                self.damaged.append(DamagedRun(id=rid, reason=f"run {rid} in {self.path} is damaged: "
                                                              f"{_first_error(e)}"))
        return out

    def run_list(self, session: str | None = None, limit: int | None = None) -> RunList:
        """``tokcaliper runs``: :meth:`list_runs` with the runs it skipped as damaged and
        one :data:`~tokcaliper.model.warnings.DAMAGED_RUN_SKIPPED` caveat per such run."""
        before = len(self.damaged)
        rows = self.list_runs(session=session, limit=limit)
        damaged = self.damaged[before:]
        return RunList(db=str(self.path), runs=rows, damaged=damaged, warnings=damaged_caveats(damaged))

    def get_run(self, run_id: int, with_requests: bool = True) -> Run:
        """The stored run ``run_id``.

        Raises:
            InputError: no such run.
            StoreError: the stored JSON no longer validates.
        """
        if not 0 < run_id < 2**63:
            raise InputError(f"no run with id {run_id} in {self.path}")
        cur = self.conn.execute(
            f"SELECT id, {', '.join(_SCALAR_COLUMNS + _JSON_COLUMNS)} FROM runs WHERE id = ?",
            (run_id,),
        )
        row = cur.fetchone()
        if row is None:
            raise InputError(f"no run with id {run_id} in {self.path}")
        fields = dict(zip(["id", *_SCALAR_COLUMNS, *_JSON_COLUMNS], row))
        requests: list[RequestRecord] = []
        try:
            if with_requests:
                requests = self._requests(run_id)
            return _run_from_columns(fields, requests)
        except (ValidationError, ValueError, TypeError, KeyError) as e:
            raise StoreError(f"run {run_id} in {self.path} is damaged: {_first_error(e)}") from None

    def _requests(self, run_id: int) -> list[RequestRecord]:
        requests: list[RequestRecord] = []
        for r in self.conn.execute(
            """SELECT idx, warmup, start_s, ttft_s, e2e_s, output_tokens, prompt_tokens,
                      token_count_source, content_chunks, error, itl_json,
                      server_timings_json, requested_prompt_tokens, requested_output_tokens,
                      cached_tokens, session, turn, prefix_group
               FROM requests WHERE run_id = ? ORDER BY idx""",
            (run_id,),
        ):
            requests.append(RequestRecord(
                index=r[0], warmup=bool(r[1]), start_s=r[2], ttft_s=r[3], e2e_s=r[4],
                output_tokens=r[5], prompt_tokens=r[6], token_count_source=r[7],
                content_chunks=r[8], error=r[9], itl_s=json.loads(r[10]),
                server_timings=None if r[11] is None else json.loads(r[11]),
                requested_prompt_tokens=r[12], requested_output_tokens=r[13],
                cached_tokens=r[14], session=r[15], turn=r[16], prefix_group=r[17],
            ))
        return requests

    def telemetry_samples(self, run_id: int) -> list[TelemetrySample]:
        """The raw telemetry samples stored with run ``run_id``, in time order
        (empty when the run has none: telemetry off, or a run from before v2).

        Raises:
            StoreError: the blob is damaged or of an unknown format.
        """
        row = self.conn.execute(
            "SELECT format, data FROM telemetry_samples WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            return []
        if row[0] != SAMPLES_FORMAT:
            raise StoreError(f"telemetry samples of run {run_id} in {self.path} have format "
                             f"{row[0]!r}; this tokcaliper reads {SAMPLES_FORMAT!r}")
        try:
            return unpack_samples(row[1])
        except ValueError as e:
            raise StoreError(f"telemetry samples of run {run_id} in {self.path} are unreadable: {e}") from None

    def telemetry_samples_size(self, run_id: int) -> tuple[int, int] | None:
        """``(sample_count, bytes)`` of the stored blob of run ``run_id``, or None."""
        row = self.conn.execute(
            "SELECT sample_count, length(data) FROM telemetry_samples WHERE run_id = ?", (run_id,)
        ).fetchone()
        return None if row is None else (int(row[0]), int(row[1]))

    def metric_values(self, run_ids: Sequence[int], metric: str) -> list[float]:
        """Values of scalar ``metric`` for ``run_ids``, in the given order.

        Raises:
            InputError: unknown metric name, unknown run id, or a run without
                a value for that metric.
        """
        get_metric(metric)  # unknown name → InputError listing the valid ones
        out = []
        for rid in run_ids:
            if not 0 < rid < 2**63:
                raise InputError(f"no run with id {rid} in {self.path}")
            row = self.conn.execute(
                "SELECT value FROM run_scalars WHERE run_id = ? AND metric = ?", (rid, metric)
            ).fetchone()
            if row is None:
                raise InputError(f"no run with id {rid} in {self.path}")
            if row[0] is None:
                raise InputError(f"run {rid} has no value for {metric}")
            out.append(float(row[0]))
        return out

    def session_runs(self, session: str, with_requests: bool = False) -> list[Run]:
        """Every run of one session or experiment, in execution order (ids grow as runs are stored)."""
        ids = [r[0] for r in self.conn.execute(
            "SELECT id FROM runs WHERE session = ? ORDER BY id", (session,))]
        out = []
        for i in ids:
            try:
                out.append(self.get_run(i, with_requests=with_requests))
            except StoreError as e:  # reported by id (``damaged``) and skipped
                self.damaged.append(DamagedRun(id=i, reason=str(e)))
        return out

    def count_measured_runs(self, session: str) -> int:
        """How many runs of one session or experiment are stored, warm-up runs left out
        (one query: a listing need not read and validate every run)."""
        return self.conn.execute(
            "SELECT COUNT(*) FROM runs WHERE session = ? AND warmup_run = 0", (session,)).fetchone()[0]

    def session_ids(self, session: str) -> list[int]:
        """Run ids of one session, in order."""
        return [r[0] for r in self.conn.execute(
            "SELECT id FROM runs WHERE session = ? ORDER BY id", (session,))]


def ensure_writable(path: str | Path) -> None:
    """Check, before a server is started or anything measured, that runs can be stored at ``path``.

    An existing database is opened and checked (:meth:`Store.check_writable`); for a new
    one, a scratch file is created and removed in its folder, so no database file is left
    behind when the command fails later (a bad ``--url``).

    Raises:
        InputError: empty path. StoreError: not writable, or not a tokcaliper database.
    """
    import tempfile

    p = Path(path)
    if str(path) in ("", "."):
        raise InputError("the results database path is empty (--db ''): give a file name")
    if p.exists():
        Store(p).close()
        return
    try:
        with tempfile.NamedTemporaryFile(dir=p.parent if str(p.parent) else ".", prefix=".tokcaliper-check-"):
            pass
    except OSError as e:
        raise StoreError(f"results database {p} cannot be created: {e.strerror or e} "
                         "(nothing was measured; give a writable --db)") from None


def load_metric_values(db_path: str | Path, run_ids: Iterable[int], metric: str) -> list[float]:
    """Values of one scalar metric for stored runs (see :meth:`Store.metric_values`).

    Raises:
        InputError: the database does not exist, or as ``metric_values``.
    """
    with Store(db_path, create=False) as store:
        return store.metric_values(list(run_ids), metric)
