"""The run store: measured runs, their settings, profiles, DAGs and trained models.

``open_store(None | URL | path | Store)`` is the one factory.  ``None`` means
``$JOBGAUGE_STORE``, else the SQLite file ``DEFAULT_PATH``
(``~/.local/share/jobgauge/jobgauge.db``).  A plain file path means SQLite at
that path; anything with ``://`` is a SQLAlchemy URL (PostgreSQL works the
same way).  SQLAlchemy is imported only here, when a store is opened.

Every write happens inside one transaction (``Store.transaction``): it commits
whole or rolls back and re-raises as :class:`StoreError`; every read
(``Store.reading``) turns a database fault into :class:`StoreError` too.  A
second run with the same (source, run_id) is refused by the database's unique
constraint and raised as :class:`DuplicateRun`, so concurrent writers cannot
both insert it.  ``Store.add_profiled_runs`` writes a batch of runs with their
profiles and DAGs in one transaction; there the same constraint skips a run the
store holds (and says which) instead of failing the batch.
"""

from __future__ import annotations

import json
import math
import os
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

from jobgauge.errors import GaugeError, StoreError
from jobgauge.runtable import GUARD_COLUMNS, config_json

DEFAULT_PATH = Path.home() / ".local" / "share" / "jobgauge" / "jobgauge.db"
RUN_STATUSES = ("succeeded", "failed", "timed_out")
# What a run's ``runtime_s`` timed: the application (SparkContext start to stop, from its
# event log), one query inside it, or only the wall time of the command that ran it (JVM
# start and end included: ``jobgauge-submit`` when no event log was written).
TIME_KINDS = ("application", "query", "wall")
# Columns added to ``runs`` after stores were first made: an older store gains them on open.
ADDED_RUN_COLUMNS = {"wall_s": "FLOAT", "load_at_start": "FLOAT", "cpu_time_s": "FLOAT",
                     "quiet_start": "BOOLEAN", "first_runtime_s": "FLOAT",
                     "host_cores": "INTEGER", "cpu_tasks_s": "FLOAT", "cpu_compiler_s": "FLOAT",
                     "cpu_gc_s": "FLOAT", "machine_probe_s": "FLOAT"}
#: Frameworks a store's runs were once recorded under, and what they are: a query run on
#: Spark's Thrift server (``jobgauge hive run``) was recorded as ``spark-thrift`` until
#: session 29, a job apart from the Spark jobs the web form and ``hive explain --predict``
#: ask.  A store renames them when it is opened (:meth:`Store._rename_frameworks`).
RENAMED_FRAMEWORKS = {"spark-thrift": "spark"}
RUN_KEY_CONSTRAINT = "uq_runs_source_run_id"


class DuplicateRun(StoreError, KeyError):
    """A run with this (source, run_id) is already in the store."""

    def __str__(self):  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class NoStoredModel(StoreError, LookupError):
    """The store is readable but holds no trained model (of that name)."""


def _is_run_key_violation(exc) -> bool:
    """Whether an IntegrityError is the (source, run_id) unique constraint (SQLite names
    the columns, PostgreSQL the constraint)."""
    text = str(getattr(exc, "orig", exc))
    return RUN_KEY_CONSTRAINT in text or "runs.source, runs.run_id" in text


def _database_error(what: str, exc: Exception) -> StoreError:
    """The StoreError for a database error: ``what`` failed, then the error's kind and first line."""
    return StoreError(f"{what}: {exc.__class__.__name__}: {str(exc).splitlines()[0]}")


def _driver_hint(url: str, exc: ImportError) -> str:
    """One line for a database URL whose driver module is not installed."""
    scheme = url.split("://", 1)[0]
    missing = getattr(exc, "name", None) or str(exc)
    package = {"psycopg2": "psycopg2-binary", "psycopg": "psycopg[binary]",
               "pymysql": "pymysql", "asyncpg": "asyncpg"}.get(missing, missing)
    return (f"the store URL scheme {scheme!r} needs the Python database driver {missing!r}, "
            f"which is not installed; install it (pip install {package}) or use a SQLite "
            "file path")


def default_url() -> str:
    env = os.environ.get("JOBGAUGE_STORE")
    return store_url(env) if env else store_url(str(DEFAULT_PATH))


#: PostgreSQL URLs without a driver, as libpq, psql and most hosts write them, and the
#: driver the README names and the tests install (psycopg2-binary): SQLAlchemy 2.1 takes
#: ``postgresql://`` to mean psycopg 3, and does not know ``postgres://`` at all.
PLAIN_POSTGRESQL = ("postgresql://", "postgres://")
POSTGRESQL_DRIVER = "postgresql+psycopg2://"


def store_url(target: str) -> str:
    """A store argument as a SQLAlchemy URL: a URL as given (a PostgreSQL one without a
    driver gets psycopg2, :data:`PLAIN_POSTGRESQL`), else a SQLite file's path (its
    folder made)."""
    if target.startswith(PLAIN_POSTGRESQL):
        return POSTGRESQL_DRIVER + target.split("://", 1)[1]
    if "://" in target:
        return target
    path = Path(target).expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{path}"


def open_store(target=None) -> "Store":
    """Turn ``None | URL | path | Store`` into an open Store."""
    if isinstance(target, Store):
        return target
    url = default_url() if target is None else store_url(str(target))
    return Store(url)


def _schema(sa):
    meta = sa.MetaData()
    runs = sa.Table(
        "runs", meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("source", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(200), nullable=False),
        sa.Column("workload", sa.String(200), nullable=False),
        sa.Column("framework", sa.String(64), nullable=False),
        sa.Column("engine_version", sa.String(64)),
        sa.Column("query_text", sa.Text),
        sa.Column("job_class", sa.String(200)),
        sa.Column("datasize", sa.String(64), nullable=False, default=""),
        sa.Column("input_bytes", sa.Float),
        sa.Column("instance_type", sa.String(64), nullable=False),
        sa.Column("instance_count", sa.Integer, nullable=False),
        sa.Column("vcpus", sa.Float, nullable=False),
        sa.Column("memory_gib", sa.Float, nullable=False),
        sa.Column("hourly_price_usd", sa.Float),
        sa.Column("master", sa.String(200)),
        sa.Column("executor_instances", sa.Integer),
        sa.Column("executor_cores", sa.Integer),
        sa.Column("executor_memory_mb", sa.Integer),
        sa.Column("time_kind", sa.String(16)),
        sa.Column("started_at", sa.DateTime(timezone=True)),
        sa.Column("ended_at", sa.DateTime(timezone=True)),
        sa.Column("runtime_s", sa.Float),
        sa.Column("wall_s", sa.Float),      # the submitting command's wall time, where known
        # the load guard's record (runtable.GUARD_COLUMNS): how quiet the machine was
        sa.Column("load_at_start", sa.Float), sa.Column("cpu_time_s", sa.Float),
        sa.Column("quiet_start", sa.Boolean), sa.Column("first_runtime_s", sa.Float),
        sa.Column("host_cores", sa.Integer),
        # where the JVM's CPU went during the run (driver.jvm_thread_cpu_s)
        sa.Column("cpu_tasks_s", sa.Float), sa.Column("cpu_compiler_s", sa.Float),
        sa.Column("cpu_gc_s", sa.Float),
        sa.Column("machine_probe_s", sa.Float),    # the machine's speed (profiler.speed)
        sa.Column("completed", sa.Boolean, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("source", "run_id", name="uq_runs_source_run_id"),
    )
    settings = sa.Table(
        "run_settings", meta,
        sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
    )
    profiles = sa.Table(
        "profiles", meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE")),
        sa.Column("format", sa.String(64), nullable=False),
        sa.Column("app_id", sa.String(200)),
        sa.Column("n_jobs", sa.Integer), sa.Column("n_stages", sa.Integer),
        sa.Column("n_tasks", sa.Integer),
        sa.Column("summary_json", sa.Text, nullable=False),
        sa.Column("profile_json", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    dags = sa.Table(
        "dags", meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE")),
        sa.Column("workload", sa.String(200)),
        sa.Column("source_format", sa.String(64)),
        sa.Column("dag_json", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    models = sa.Table(
        "models", meta,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("metrics_json", sa.Text, nullable=False),
        sa.Column("payload", sa.LargeBinary, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    return meta, runs, settings, profiles, dags, models


def _clean(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _now():
    return datetime.now(timezone.utc)


class Store:
    """An open run store. Use :func:`open_store` to get one."""

    def __init__(self, url: str):
        import sqlalchemy as sa

        self._sa = sa
        self.url = url
        try:
            self.engine = sa.create_engine(url, future=True)
            if url.startswith("sqlite"):
                @sa.event.listens_for(self.engine, "connect")
                def _sqlite_pragmas(dbapi_connection, _record):
                    cursor = dbapi_connection.cursor()
                    cursor.execute("PRAGMA foreign_keys=ON")
                    cursor.execute("PRAGMA busy_timeout=30000")
                    cursor.close()
            (self.metadata, self.runs, self.settings, self.profiles, self.dags,
             self.models) = _schema(sa)
            try:
                self.metadata.create_all(self.engine)
            except sa.exc.SQLAlchemyError:  # another process created them meanwhile
                self.metadata.create_all(self.engine)
            self._add_run_columns()
            self._rename_frameworks()
        except ImportError as exc:
            raise StoreError(_driver_hint(url, exc)) from None
        except sa.exc.SQLAlchemyError as exc:
            raise _database_error(f"cannot open store {self.display_url}", exc) from None

    def _add_run_columns(self) -> None:
        """``ALTER TABLE runs ADD COLUMN`` for each of ADDED_RUN_COLUMNS an older store lacks."""
        sa = self._sa

        def present():
            return {c["name"] for c in sa.inspect(self.engine).get_columns("runs")}
        existing = present()         # one look at the table, however many columns are new
        for name, kind in ADDED_RUN_COLUMNS.items():
            if name in existing:
                continue
            try:
                with self.engine.begin() as connection:
                    connection.execute(sa.text(f"ALTER TABLE runs ADD COLUMN {name} {kind}"))
            except sa.exc.SQLAlchemyError:
                if name not in present():      # else another process added it meanwhile
                    raise

    def _rename_frameworks(self) -> None:
        """Record the runs of a framework's old name under its name now
        (:data:`RENAMED_FRAMEWORKS`); a store without any is only read."""
        sa, runs = self._sa, self.runs
        for old, new in RENAMED_FRAMEWORKS.items():
            with self.engine.connect() as connection:
                if connection.execute(sa.select(runs.c.id).where(runs.c.framework == old)
                                      .limit(1)).first() is None:
                    continue
            with self.engine.begin() as connection:
                connection.execute(runs.update().where(runs.c.framework == old)
                                   .values(framework=new))

    @property
    def display_url(self) -> str:
        try:
            return self._sa.engine.make_url(self.url).render_as_string(hide_password=True)
        except Exception:  # noqa: BLE001 - only for display
            return "<store>"

    def __repr__(self):
        return f"Store({self.display_url!r})"

    def close(self):
        self.engine.dispose()

    @contextmanager
    def transaction(self):
        """One commit-or-rollback unit; database errors become StoreError."""
        sa = self._sa
        try:
            with self.engine.begin() as connection:
                yield connection
        except GaugeError:
            raise
        except sa.exc.IntegrityError as exc:
            first = str(exc.orig).splitlines()[0]
            if _is_run_key_violation(exc):
                raise DuplicateRun("a run with this source and run_id is already in the store "
                                   f"(store constraint violated: {first})") from None
            raise StoreError(f"store constraint violated: {first}") from None
        except sa.exc.SQLAlchemyError as exc:
            raise _database_error("store write failed", exc) from None
        except OverflowError as exc:  # a number wider than the column (SQLite: 64 bits)
            raise StoreError(f"store write failed: a value is out of range ({exc})") from None

    @contextmanager
    def reading(self):
        """A read-only connection; a database that cannot be read becomes StoreError."""
        try:
            with self.engine.connect() as connection:
                yield connection
        except self._sa.exc.SQLAlchemyError as exc:
            raise _database_error(f"cannot read store {self.display_url}", exc) from None

    # -- runs --------------------------------------------------------------
    _RUN_FIELDS = ("source", "run_id", "workload", "framework", "engine_version", "query_text",
                   "job_class", "datasize", "input_bytes", "instance_type", "instance_count",
                   "vcpus", "memory_gib", "hourly_price_usd", "master", "executor_instances",
                   "executor_cores", "executor_memory_mb", "time_kind", "started_at",
                   "ended_at", "runtime_s", "wall_s", "completed", "status", "error",
                   *GUARD_COLUMNS)

    def _run_values(self, run: dict) -> dict:
        values = {k: _clean(run.get(k)) for k in self._RUN_FIELDS}
        missing = [k for k in ("source", "run_id", "workload", "framework", "instance_type",
                               "instance_count", "vcpus", "memory_gib") if values[k] in (None, "")]
        if missing:
            raise StoreError("a run needs " + ", ".join(missing))
        values["datasize"] = values["datasize"] or ""
        status = values["status"] or ("succeeded" if run.get("completed", True) else "failed")
        if status not in RUN_STATUSES:
            raise StoreError(f"run status must be one of {', '.join(RUN_STATUSES)}; got {status!r}")
        values["status"] = status
        if values["completed"] is None:
            values["completed"] = status == "succeeded"
        values["completed"] = bool(values["completed"])
        if values["time_kind"] is not None and values["time_kind"] not in TIME_KINDS:
            raise StoreError(f"time_kind must be one of {', '.join(TIME_KINDS)}")
        values["created_at"] = _now()
        return values

    def _insert_run(self, connection, run, settings, profile, dag) -> int:
        values = self._run_values(run)
        run_key = connection.execute(self.runs.insert().values(**values)).inserted_primary_key[0]
        if settings:
            connection.execute(self.settings.insert(), [
                {"run": run_key, "key": str(k), "value": v if isinstance(v, str) else json.dumps(v)}
                for k, v in sorted(settings.items())])
        if profile is not None:
            self._insert_profile(connection, profile, run_key)
        if dag is not None:
            connection.execute(self.dags.insert().values(
                run=run_key, workload=values["workload"], source_format=dag.get("source_format"),
                dag_json=json.dumps(dag), created_at=_now()))
        return run_key

    def _insert_profile(self, connection, profile, run_key=None) -> int:
        return connection.execute(self.profiles.insert().values(
            **self._profile_row(profile, run_key))).inserted_primary_key[0]

    @staticmethod
    def _profile_row(profile, run_key) -> dict:
        """The ``profiles`` row of a Profile (its summary and the whole profile as JSON)."""
        return {"run": run_key, "format": profile.format, "app_id": profile.app_id,
                "n_jobs": profile.n_jobs, "n_stages": profile.n_stages,
                "n_tasks": profile.n_tasks,
                "summary_json": json.dumps(profile.summary(), default=str),
                "profile_json": json.dumps(profile.to_dict(), default=str),
                "created_at": _now()}

    def add_run(self, run: dict, settings: dict | None = None, profile=None, dag=None) -> int:
        """Record one run (with its settings, profile and DAG) in one transaction."""
        if settings is None:
            settings = run.get("config") or {}
        with self.transaction() as connection:
            return self._insert_run(connection, run, settings, profile, dag)

    def add_runs(self, rows, *, skip_existing=False, profiles=None) -> tuple[int, int]:
        """Record many run-table rows in ONE transaction; return (added, skipped).

        ``profiles`` maps (source, run_id) to a shipped profile record (a JSON
        object with a ``summary``, as in data/profiles); a run that has one gets
        it stored with it.
        """
        sa = self._sa
        profiles = profiles or {}
        added = skipped = 0
        with self.transaction() as connection:
            existing = set()
            if skip_existing:
                existing = set(connection.execute(
                    sa.select(self.runs.c.source, self.runs.c.run_id)).all())
            for row in rows:
                if (row["source"], row["run_id"]) in existing:
                    skipped += 1
                    continue
                run = dict(row)
                run.setdefault("status", "succeeded" if row.get("completed", True) else "failed")
                run.setdefault("time_kind", row.get("time_kind"))
                run_key = self._insert_run(connection, run, row.get("config") or {}, None, None)
                record = profiles.get((row["source"], row["run_id"]))
                if record is not None:
                    self._insert_profile_record(connection, record, run_key)
                added += 1
        return added, skipped

    def add_profiled_runs(self, items) -> list[int | None]:
        """Record many runs, each with its settings, profile and DAG, in ONE transaction.

        ``items`` are ``(run, settings, profile, dag)`` tuples (``profile`` and
        ``dag`` may be None), as :meth:`add_run` takes them.  Returns, in order,
        each run's key, or None for a run whose (source, run_id) the store already
        holds (committed before, or earlier in ``items``): the database's unique
        constraint decides, so concurrent importers cannot both add it.  Any other
        fault rolls the whole batch back and raises :class:`StoreError`: no run is
        ever stored without its settings, profile and DAG.
        """
        keys, settings_rows, profile_rows, dag_rows = [], [], [], []
        with self.transaction() as connection:
            insert_run = self._run_insert_unless_present(connection)
            for run, settings, profile, dag in items:
                values = self._run_values(run)
                run_key = insert_run(values)
                keys.append(run_key)
                if run_key is None:
                    continue
                settings_rows += [
                    {"run": run_key, "key": str(k),
                     "value": v if isinstance(v, str) else json.dumps(v)}
                    for k, v in sorted((settings or {}).items())]
                if profile is not None:
                    profile_rows.append(self._profile_row(profile, run_key))
                if dag is not None:
                    dag_rows.append({"run": run_key, "workload": values["workload"],
                                     "source_format": dag.get("source_format"),
                                     "dag_json": json.dumps(dag), "created_at": _now()})
            for table, rows in ((self.settings, settings_rows), (self.profiles, profile_rows),
                                (self.dags, dag_rows)):
                if rows:
                    connection.execute(table.insert(), rows)     # one executemany per table
        return keys

    def _run_insert_unless_present(self, connection):
        """A function ``values -> run key | None`` inserting one run row on ``connection``;
        None when the (source, run_id) unique constraint refuses it.

        SQLite and PostgreSQL say so with ``ON CONFLICT DO NOTHING ... RETURNING``
        (the transaction goes on); other databases get one SAVEPOINT per run.
        """
        sa = self._sa
        dialect = connection.dialect.name
        if dialect in ("sqlite", "postgresql"):
            from importlib import import_module

            insert = import_module(f"sqlalchemy.dialects.{dialect}").insert
            statement = insert(self.runs).on_conflict_do_nothing(
                index_elements=["source", "run_id"]).returning(self.runs.c.id)

            def insert_run(values):
                return connection.execute(statement, values).scalar_one_or_none()
            return insert_run

        def insert_run_in_savepoint(values):
            savepoint = connection.begin_nested()
            try:
                run_key = connection.execute(
                    self.runs.insert().values(**values)).inserted_primary_key[0]
            except sa.exc.IntegrityError as exc:
                savepoint.rollback()
                if _is_run_key_violation(exc):
                    return None
                raise
            savepoint.commit()
            return run_key
        return insert_run_in_savepoint

    def _insert_profile_record(self, connection, record: dict, run_key) -> int:
        summary = record.get("summary") or {}
        return connection.execute(self.profiles.insert().values(
            run=run_key, format=str(summary.get("format") or "jobgauge-profile-record"),
            app_id=summary.get("app_id"), n_jobs=summary.get("n_jobs"),
            n_stages=summary.get("n_stages"), n_tasks=summary.get("n_tasks"),
            summary_json=json.dumps(summary, default=str),
            profile_json=json.dumps(record, default=str),
            created_at=_now())).inserted_primary_key[0]

    def add_profile(self, profile, run_key=None) -> int:
        with self.transaction() as connection:
            return self._insert_profile(connection, profile, run_key)

    def has_run(self, source: str, run_id: str) -> bool:
        sa = self._sa
        with self.reading() as connection:
            return connection.execute(sa.select(self.runs.c.id).where(
                self.runs.c.source == source, self.runs.c.run_id == run_id)).first() is not None

    def count_runs(self, **filters) -> int:
        """How many runs match ``filters`` (:meth:`runs_mark`'s count)."""
        return self.runs_mark(**filters)[0]

    def runs_mark(self, **filters) -> tuple[int, int | None]:
        """(count, newest id) of the runs that match ``filters`` (column equality, None
        ignored): it changes whenever such a run is added or deleted, so a result computed
        from those runs can be kept until it does."""
        sa = self._sa
        query = sa.select(sa.func.count(), sa.func.max(self.runs.c.id)).select_from(self.runs)
        for key, value in filters.items():
            if value is not None:
                query = query.where(self.runs.c[key] == value)
        with self.reading() as connection:
            count, newest = connection.execute(query).one()
        return int(count), newest

    def counts_by_source(self) -> dict[str, int]:
        sa = self._sa
        with self.reading() as connection:
            return dict(connection.execute(
                sa.select(self.runs.c.source, sa.func.count()).group_by(self.runs.c.source)
                .order_by(self.runs.c.source)).all())

    def holdings(self, counts: dict[str, int] | None = None) -> str:
        """What the store holds (its :meth:`counts_by_source`, or ``counts`` where already
        read), for a person: ``"local: 12, scout: 40"``, or ``"no runs"``."""
        counts = self.counts_by_source() if counts is None else counts
        return ", ".join(f"{s}: {n}" for s, n in counts.items()) if counts else "no runs"

    def workloads(self) -> dict[str, str]:
        """The distinct workloads (job keys) of the stored runs, sorted, each with its
        framework (``spark``, ``hadoop``; the last in name order where one key has two)."""
        sa = self._sa
        with self.reading() as connection:
            return dict(connection.execute(
                sa.select(self.runs.c.workload, self.runs.c.framework).distinct()
                .order_by(self.runs.c.workload, self.runs.c.framework)).all())

    def runs_list(self, *, limit=50, offset=0, **filters) -> list[dict]:
        sa = self._sa
        query = sa.select(self.runs).order_by(self.runs.c.id.desc()).limit(limit).offset(offset)
        for key, value in filters.items():
            if value is not None:
                query = query.where(self.runs.c[key] == value)
        with self.reading() as connection:
            rows = [dict(r._mapping) for r in connection.execute(query)]
            if rows:
                ids = [r["id"] for r in rows]
                settings = connection.execute(sa.select(self.settings).where(
                    self.settings.c.run.in_(ids))).all()
        by_run = {}
        for run_key, key, value in (settings if rows else []):
            by_run.setdefault(run_key, {})[key] = value
        for row in rows:
            row["config"] = by_run.get(row["id"], {})
        return rows

    def run_frame(self, **filters):
        """All runs (optionally filtered by column equality) as a run-table DataFrame."""
        import pandas as pd

        sa = self._sa
        query = sa.select(self.runs)
        for key, value in filters.items():
            if value is not None:
                query = query.where(self.runs.c[key] == value)
        settings_query = sa.select(self.settings)
        if any(value is not None for value in filters.values()):
            # only the chosen runs' settings: the cost follows the runs asked for
            chosen = query.with_only_columns(self.runs.c.id).scalar_subquery()
            settings_query = settings_query.where(self.settings.c.run.in_(chosen))
        with self.reading() as connection:
            runs = pd.DataFrame([dict(r._mapping) for r in connection.execute(query)])
            # no runs, no settings to read (a question on a job the store has not seen)
            settings = connection.execute(settings_query).all() if len(runs) else []
        from jobgauge.runtable import COLUMNS
        if runs.empty:
            return pd.DataFrame(columns=list(COLUMNS) + ["config"])
        by_run = {}
        for run_key, key, value in settings:
            by_run.setdefault(run_key, {})[key] = value
        runs["config"] = [by_run.get(k, {}) for k in runs["id"]]
        runs["config_json"] = [config_json(c) for c in runs["config"]]
        for column in ("input_bytes", "hourly_price_usd", "runtime_s", "vcpus", "memory_gib"):
            runs[column] = pd.to_numeric(runs[column], errors="coerce").astype(float)
        runs["completed"] = runs["completed"].astype(bool)
        return runs

    def profiles_for(self, run_key: int) -> list[dict]:
        sa = self._sa
        with self.reading() as connection:
            rows = connection.execute(sa.select(self.profiles.c.profile_json).where(
                self.profiles.c.run == run_key)).all()
        return [json.loads(r[0]) for r in rows]

    def run_ids(self, source: str) -> list[str]:
        """The run ids of one source (to skip runs already imported)."""
        sa = self._sa
        with self.reading() as connection:
            return [r[0] for r in connection.execute(
                sa.select(self.runs.c.run_id).where(self.runs.c.source == source))]

    def find_runs(self, run_id: str) -> list[dict]:
        """Runs whose run_id is ``run_id`` or starts with ``run_id/`` (an app id and its attempts)."""
        sa = self._sa
        query = sa.select(self.runs).where(sa.or_(
            self.runs.c.run_id == run_id, self.runs.c.run_id.like(run_id + "/%")))
        with self.reading() as connection:
            return [dict(r._mapping) for r in connection.execute(
                query.order_by(self.runs.c.id.desc()))]

    # -- History Server sync marks: the newest application end time read per server
    def _sync_marks(self):
        table = getattr(self, "_sync_marks_table", None)
        if table is None:            # created on first use, so older stores gain it too
            sa = self._sa
            table = sa.Table(
                "history_sync", self.metadata,
                sa.Column("server", sa.String(500), primary_key=True),
                sa.Column("last_end_ms", sa.BigInteger, nullable=False),
                sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
                extend_existing=True)
            table.create(self.engine, checkfirst=True)
            self._sync_marks_table = table
        return table

    def sync_mark(self, server: str) -> int | None:
        """Epoch ms of the newest application end already imported from ``server`` (or None)."""
        table = self._sync_marks()
        with self.reading() as connection:
            return connection.execute(self._sa.select(table.c.last_end_ms).where(
                table.c.server == server)).scalar_one_or_none()

    def set_sync_mark(self, server: str, last_end_ms: int) -> None:
        table = self._sync_marks()
        with self.transaction() as connection:
            updated = connection.execute(table.update().where(table.c.server == server).values(
                last_end_ms=int(last_end_ms), updated_at=_now())).rowcount
            if not updated:
                connection.execute(table.insert().values(
                    server=server, last_end_ms=int(last_end_ms), updated_at=_now()))

    # -- models ------------------------------------------------------------
    def save_model(self, name: str, kind: str, payload: bytes, metrics: dict | None = None) -> int:
        with self.transaction() as connection:
            return connection.execute(self.models.insert().values(
                name=name, kind=kind, payload=payload,
                metrics_json=json.dumps(metrics or {}, default=str),
                created_at=_now())).inserted_primary_key[0]

    def list_models(self) -> list[dict]:
        sa = self._sa
        with self.reading() as connection:
            rows = connection.execute(sa.select(
                self.models.c.id, self.models.c.name, self.models.c.kind,
                self.models.c.metrics_json, self.models.c.created_at)
                .order_by(self.models.c.id.desc())).all()
        return [{"id": r.id, "name": r.name, "kind": r.kind,
                 "metrics": json.loads(r.metrics_json), "created_at": r.created_at}
                for r in rows]

    def load_model(self, name: str | None = None) -> tuple[dict, bytes]:
        """The newest model (of ``name`` if given) as (meta, payload)."""
        sa = self._sa
        query = sa.select(self.models).order_by(self.models.c.id.desc()).limit(1)
        if name:
            query = query.where(self.models.c.name == name)
        with self.reading() as connection:
            row = connection.execute(query).first()
        if row is None:
            raise NoStoredModel("no trained model in the store" + (f" named {name!r}" if name else "")
                             + "; run 'jobgauge train' first")
        meta = {"id": row.id, "name": row.name, "kind": row.kind,
                "metrics": json.loads(row.metrics_json), "created_at": row.created_at}
        return meta, bytes(row.payload)
