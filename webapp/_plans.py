"""Query plans for the form and the API: a HiveServer2 when one is configured,
else a local Spark session that only *plans* queries (EXPLAIN, never runs them).

The local session (``local[1]``, UI off) is created on first use and kept for
the life of the process; every web app in the process shares it.  It knows
the TPC-H tables (tpchgen-cli data at SF 0.01, generated once under
``data_root``) and the HiBench SQL tables (``uservisits``, ``rankings`` and
the tables HiBench writes to, as empty parquet-backed views of the right
schema), so a pasted query over those schemas plans as it would on a cluster.

Join strategies depend on table sizes.  The TPC-H tables here are at SF 0.01,
so a plan for scale ``s`` is drawn with the broadcast threshold multiplied by
``0.01 / s``: a table that would be too big to broadcast at ``s`` is too big
here as well (TPC-H tables grow linearly with the scale factor).  The
threshold is read and checked by the knob table (``jobgauge.knobs``): a
threshold it cannot read is an error, never a silent default.

>>> explainer = LocalSparkPlans("var/plan-data")                   # doctest: +SKIP
>>> dag = explainer.dag("select count(*) from lineitem", scale=1.0)  # doctest: +SKIP
>>> dag.number_of_nodes()                                          # doctest: +SKIP
4
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from jobgauge import knobs
from jobgauge.errors import ParseError, UsageError
from jobgauge.profiler.readers._hive_session import (
    PLAN_TIMEOUT_S, check_plan_limits, check_statement, jvm_limit_error,
)

PLAN_SCALE = 0.01
NO_CONSTANT_FOLDING = "org.apache.spark.sql.catalyst.optimizer.ConstantFolding"
PLAN_SCALE_LABEL = "sf0.01"
BROADCAST = "spark.sql.autoBroadcastJoinThreshold"
DEFAULT_BROADCAST_BYTES = knobs.knob(BROADCAST).default   # Spark's 10 MiB
# Spark settings a user may set that change a plan (others do not, or are unsafe here).
PLAN_SETTINGS = ("spark.sql.adaptive.enabled", "spark.sql.autoBroadcastJoinThreshold",
                 "spark.sql.shuffle.partitions", "spark.sql.join.preferSortMergeJoin",
                 "spark.sql.cbo.enabled")


def _hibench_tables() -> dict[str, str]:
    from jobgauge.profiler.workloads._hibench_sql import (
        AGGREGATION_SCHEMA, JOIN_SCHEMA, USERVISITS_SCHEMA,
    )

    return {"uservisits": USERVISITS_SCHEMA, "uservisits_copy": USERVISITS_SCHEMA,
            "rankings": "pageURL STRING, pageRank INT, avgDuration INT",
            "uservisits_aggre": AGGREGATION_SCHEMA, "rankings_uservisits_join": JOIN_SCHEMA}


def workload_sql(workload: str) -> str | None:
    """The SQL text of a TPC-H or HiBench SQL workload, None for a non-SQL workload."""
    match = re.fullmatch(r"tpch-q(\d+)", workload)
    if match:
        from jobgauge.profiler.workloads._tpch_queries import QUERIES

        return QUERIES[int(match.group(1))].strip()
    from jobgauge.profiler.workloads import _hibench_sql as hibench

    return {"scan": hibench.SCAN_SQL, "aggregation": hibench.AGGREGATION_SQL,
            "join": hibench.JOIN_SQL}.get(workload)


_POSITION = re.compile(r"line (\d+),? pos (\d+)")
_NOISE = re.compile(r"\s*(SQLSTATE: \w+\.?|\(line \d+, pos \d+\)|;? ?line \d+,? pos \d+;?)")


def spark_error(message: str, sql: str, *, line_offset: int = 0) -> ParseError:
    """Spark's message of a ParseException/AnalysisException as a ParseError pointing
    at the query (``line_offset``: lines the statement was moved down by)."""
    text = message.strip()
    first = text.splitlines()[0] if text else "Spark cannot plan this query"
    first = _NOISE.sub("", first).strip()
    line = column = None
    snippet = None
    match = _POSITION.search(text)
    if match and int(match.group(1)) > line_offset:
        line, column = int(match.group(1)) - line_offset, int(match.group(2)) + 1
        lines = sql.splitlines()
        if 1 <= line <= len(lines):
            snippet = lines[line - 1].strip()
    return ParseError(first[:300], line=line, column=column, snippet=snippet)


def _running(session) -> bool:
    """Whether the Spark application under ``session`` still runs (pyspark drops the
    context's JVM handle when it stops)."""
    return getattr(session.sparkContext, "_jsc", None) is not None


class LocalSparkPlans:
    """Plans queries in one lazily created local Spark session (see the module docstring)."""

    def __init__(self, data_root):
        self.data_root = Path(data_root)
        self._session = None
        self._lock = threading.Lock()
        self._empty_dir = None
        self._dataset_bytes = None      # the plan data set's bytes, read once

    def _spark(self):
        if self._session is not None and _running(self._session):
            return self._session
        # First use, or the application under the session was stopped (by the code
        # this process serves beside): plan in a new one.
        from jobgauge.profiler.workloads.tpch import TABLES, ensure_data
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()
        if active is not None:
            # A Spark application already runs in this process (one per JVM): plan in a
            # new session of it, so its settings and temporary views stay untouched.
            session = active.newSession()
        else:
            builder = (SparkSession.builder.master("local[1]").appName("jobgauge-plans")
                       .config("spark.ui.enabled", "false")
                       .config("spark.driver.memory", "1g"))
            session = builder.getOrCreate().newSession()  # own temp views
        session.conf.set("spark.sql.shuffle.partitions", "8")
        session.sparkContext.setLogLevel("ERROR")
        session.conf.set("spark.sql.runSQLOnFiles", "false")  # no `parquet.`/path`` reads
        # Plans only: constant folding would evaluate repeat('x', 10**9) and the like.
        session.conf.set("spark.sql.optimizer.excludedRules", NO_CONSTANT_FOLDING)
        _quiet_query_errors()
        tpch = ensure_data(self.data_root, PLAN_SCALE_LABEL)
        for table in TABLES:
            path = tpch / f"{table}.parquet"
            schema = _ddl_schema(path)
            if schema is None:  # a type not mapped here: let Spark read the schema (slower)
                session.read.parquet(str(path)).createOrReplaceTempView(table)
            else:
                session.sql(f"CREATE OR REPLACE TEMPORARY VIEW {table} ({schema}) USING parquet "
                            f"OPTIONS (path '{path}')")
        # Empty folders behind the HiBench views, kept beside the plan data (not in the
        # temporary directory, where every start used to leave one behind).
        self._empty_dir = self.data_root / "plan-views"
        for name, schema in _hibench_tables().items():
            folder = self._empty_dir / name
            folder.mkdir(parents=True, exist_ok=True)
            session.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name} ({schema}) USING parquet "
                        f"OPTIONS (path '{folder}')")
        self._defaults = {key: session.conf.get(key, None) for key in PLAN_SETTINGS}
        self._session = session
        return session

    def explain(self, sql: str, *, scale: float = 1.0, config: dict | None = None) -> str:
        """EXPLAIN FORMATTED text of one query planned for TPC-H scale ``scale``."""
        text = check_statement(sql)
        check_plan_limits(text)
        if not scale > 0:
            raise UsageError(f"scale must be greater than 0; got {scale!r}")
        # One query plans at a time, for at most PLAN_TIMEOUT_S: past it the request is
        # answered, and the planning thread gives the session back when it ends.
        if not self._lock.acquire(timeout=PLAN_TIMEOUT_S):
            raise UsageError("the planner is busy with a query that takes long to plan; "
                             "try again later")
        handed_over = False
        try:
            spark = self._spark()
            settings = {k: v for k, v in (config or {}).items() if k in PLAN_SETTINGS}
            threshold = knobs.validate(BROADCAST,
                                       settings.get(BROADCAST, DEFAULT_BROADCAST_BYTES))
            if threshold > 0:
                settings[BROADCAST] = str(
                    max(1, int(threshold * PLAN_SCALE / scale)))
            outcome = {}

            def plan():
                try:
                    for key, value in settings.items():
                        spark.conf.set(key, str(value))
                    outcome["plan"] = self._explain(spark, text)
                except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                    outcome["error"] = exc
                finally:
                    try:
                        for key, value in self._defaults.items():
                            if value is None:
                                spark.conf.unset(key)
                            else:
                                spark.conf.set(key, value)
                    finally:
                        self._lock.release()

            worker = threading.Thread(target=plan, name="jobgauge-plan", daemon=True)
            worker.start()
            handed_over = True
            worker.join(PLAN_TIMEOUT_S)
            if worker.is_alive():
                raise UsageError(f"planning the query took longer than {PLAN_TIMEOUT_S:g} s; "
                                 f"simplify it")
            if "error" in outcome:
                raise outcome["error"]
            if "plan" not in outcome:
                raise UsageError("the planner failed on this query")
            return outcome["plan"]
        finally:
            if not handed_over:
                self._lock.release()

    @staticmethod
    def _explain(spark, text: str) -> str:
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException

        try:  # the statement starts on line 2, so Spark's positions are one line down
            rows = spark.sql(f"EXPLAIN FORMATTED\n{text}").collect()
        except PySparkException as exc:
            raise jvm_limit_error(str(exc)) or spark_error(str(exc), text, line_offset=1) \
                from None
        except Py4JJavaError as exc:   # the JVM's own errors: out of stack or heap
            limit = jvm_limit_error(str(exc.java_exception))
            if limit is None:
                raise
            raise limit from None
        plan = "\n".join(str(row[0]) for row in rows)
        if plan.lstrip().startswith("Error occurred during query planning"):
            raise spark_error(plan.strip().split("\n", 1)[-1], text, line_offset=1)
        return plan

    def dag(self, sql: str, *, scale: float = 1.0, config: dict | None = None):
        """The query's plan DAG; each scan of the TPC-H tables knows its files' bytes
        here and how its table grows (``file_bytes``, ``file_growth``), and the DAG the
        bytes of the data set they are of (``dataset_bytes``), so the stage model can
        size the query by what it reads (``models._stage.plan_reads``)."""
        from jobgauge.dag import QueryDag

        dag = QueryDag.from_spark_plan(self.explain(sql, scale=scale, config=config))
        self._size_scans(dag)
        return dag

    def _size_scans(self, dag) -> None:
        from jobgauge.models.evaluation import size_plan_scans
        from jobgauge.profiler.workloads.base import directory_bytes
        from jobgauge.units import scale_label

        if self._dataset_bytes is None:
            self._dataset_bytes = directory_bytes(
                self.data_root / "tpch" / scale_label(PLAN_SCALE))
        size_plan_scans(dag, self._dataset_bytes or None)


class HivePlans:
    """Plans queries on a HiveServer2 (Apache Hive or Spark's Thrift server)."""

    def __init__(self, host: str, port: int):
        self.host, self.port = host, int(port)

    def explain(self, sql: str, *, scale: float = 1.0, config: dict | None = None) -> tuple[str, str]:
        from jobgauge.profiler.hive import HiveQueryError, HiveSession

        text = check_statement(sql)
        with HiveSession(self.host, self.port, connect_timeout_s=5) as session:
            engine = session.engine
            try:
                return session.explain(text), engine
            except HiveQueryError as exc:  # the server's own words about the query
                raise spark_error(str(exc), text) from None

    def dag(self, sql: str, *, scale: float = 1.0, config: dict | None = None):
        """The plan's DAG; where the server's tables are files of this machine, its scans
        know their bytes and the DAG its data set's (``size_plan_scans``), so a query
        never measured is sized by what it reads, as :class:`LocalSparkPlans` sizes it."""
        from jobgauge.models.evaluation import size_plan_scans
        from jobgauge.profiler.hive import plan_dag

        plan, engine = self.explain(sql, scale=scale, config=config)
        dag = plan_dag(plan, engine)
        size_plan_scans(dag)
        return dag


_ARROW_TO_SPARK = {"int64": "BIGINT", "int32": "INT", "int16": "SMALLINT", "int8": "TINYINT",
                   "string": "STRING", "string_view": "STRING", "large_string": "STRING",
                   "double": "DOUBLE", "float": "FLOAT", "date32[day]": "DATE", "bool": "BOOLEAN"}


def _ddl_schema(path: Path) -> str | None:
    """The Spark DDL schema of a parquet file read from its footer (no Spark job needed)."""
    import pyarrow.parquet as pq

    columns = []
    for column in pq.read_schema(path):
        kind = str(column.type)
        decimal = re.fullmatch(r"decimal128\((\d+), (\d+)\)", kind)
        spark_type = f"DECIMAL({decimal.group(1)},{decimal.group(2)})" if decimal \
            else _ARROW_TO_SPARK.get(kind)
        if spark_type is None:
            return None
        columns.append(f"`{column.name}` {spark_type}")
    return ", ".join(columns)


def _quiet_query_errors() -> None:
    """pyspark logs every SQL error with its stack at ERROR; here they are the user's typos."""
    import logging

    from pyspark.logger import PySparkLogger

    PySparkLogger.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)


_SHARED: dict[str, LocalSparkPlans] = {}
_SHARED_LOCK = threading.Lock()


def plans_for(*, hive_host=None, hive_port=None, data_root):
    """The plan source for a configuration (the local Spark one is shared per data root)."""
    if hive_host:
        return HivePlans(hive_host, int(hive_port or 10000))
    key = str(Path(data_root).resolve())
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = LocalSparkPlans(data_root)
        return _SHARED[key]
