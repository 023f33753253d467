"""A session on any HiveServer2 (Apache Hive, or Spark's Thrift server) through pyhive.

>>> with HiveSession(port=10000) as session:                     # doctest: +SKIP
...     session.load_tpch("sf0.01")
...     session.set({"hive.auto.convert.join": "false"})
...     print(session.explain("select count(*) from lineitem"))
...     result = session.run("select count(*) from lineitem", timeout_s=60)

The engine behind the endpoint is detected once (``engine``): ``spark-thrift``
when the server answers ``SET spark.sql.shuffle.partitions`` with a value,
``hive`` otherwise.  Hive knobs are translated to Spark SQL settings on a
Spark Thrift server (see :mod:`jobgauge.profiler._hive_knobs`).
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from jobgauge.cli_options import SETTING_NAME
from jobgauge.errors import ParseError, UsageError
from jobgauge.profiler.readers._hive_errors import HiveConnectionError, HiveQueryError
from jobgauge.profiler._hive_knobs import SHUFFLE_PARTITIONS, KnobPlan, translate_knobs
from jobgauge.profiler.runners._hive_server import port_answers, quiet_thrift

AUTH_MODES = ("NONE", "NOSASL", "LDAP", "CUSTOM", "KERBEROS")
EXPLAIN_MODES = ("", "extended", "formatted", "cost", "codegen",  # Spark SQL
                 "cbo", "ast", "dependency", "vectorization", "analyze", "logical",
                 "authorization", "locks")  # Hive
_PLANNING_ERROR = "Error occurred during query planning"
_HIVE_EXCEPTION_PREFIX = re.compile(r"^(?:org\.apache\.hive\.service\.cli\.)?HiveSQLException: ")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_UNDEFINED = "<undefined>"


def _server_message(exc) -> str:
    """The server's own error text from a pyhive error or an operation-status response."""
    response = exc.args[0] if getattr(exc, "args", None) else exc
    status = getattr(response, "status", None)
    message = getattr(response, "errorMessage", None) or getattr(status, "errorMessage", None)
    if not message and getattr(status, "infoMessages", None):
        message = status.infoMessages[0].lstrip("*")
    if not message:
        message = str(exc)
    message = _HIVE_EXCEPTION_PREFIX.sub("", str(message).strip())
    return message.split("\n\tat ")[0][:4000]


def _transport_errors() -> tuple:
    from thrift.Thrift import TException

    return (TException, OSError, EOFError)


# ---- what a planner can be asked -------------------------------------------------------
# Spark's parser overflows the JVM stack between 300 and 1,000 nested parentheses; real
# queries (TPC-DS included) nest fewer than 30.
MAX_NESTING = 200
# Functions whose result grows with a numeric argument, and the largest such argument
# (or product of nested ones) a plan-only request may give.  The optimizer's constant
# folding evaluates them even for EXPLAIN: repeat('x', 2000000000) fills the heap.
SIZE_FUNCTIONS = ("repeat", "lpad", "rpad", "space", "array_repeat", "randstr", "sequence")
MAX_SIZE_ARGUMENT = 1_000_000
# How long planning one query may take.
PLAN_TIMEOUT_S = 30.0
_LITERALS_AND_COMMENTS = re.compile(r"'(?:[^'\\]|\\.|'')*'?|\"(?:[^\"\\]|\\.)*\"?|`[^`]*`?"
                                    r"|--[^\n]*|/\*.*?(?:\*/|$)", re.DOTALL)
_PAREN = re.compile(r"[()]")
_SIZE_CALL = re.compile(r"\b(" + "|".join(SIZE_FUNCTIONS) + r")\s*\(", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)[lLsSyY]?(?![\w.])")


# First words of the statements a plan can be drawn for (queries, not commands).
QUERY_WORDS = ("select", "with", "insert", "from", "values", "table")


def check_statement(sql: str) -> str:
    """One query statement, stripped of a trailing semicolon; ParseError otherwise."""
    text = sql.strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    if not text:
        raise ParseError("the query is empty", expected="a SELECT, WITH or INSERT statement")
    body = _strip_comments(text)
    if ";" in body:
        line = text[:text.index(";")].count("\n") + 1
        raise ParseError("more than one statement", line=line,
                         expected="one query (no ';' between statements)")
    first = re.match(r"\s*\(*\s*([A-Za-z]+)", body)
    if first is None or first.group(1).lower() not in QUERY_WORDS:
        word = first.group(1) if first else body.strip()[:20]
        raise ParseError("only queries can be estimated", line=1,
                         expected="a statement starting with SELECT, WITH, FROM or INSERT",
                         snippet=word)
    return text


def _strip_comments(text: str) -> str:
    """``text`` without SQL comments and string literals (they may hold ';')."""
    text = re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", "''", text)
    text = re.sub(r"--[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.DOTALL)


def check_plan_limits(sql: str) -> None:
    """Refuse a statement no planner should be given (UsageError, before it is sent):
    parentheses nested deeper than ``MAX_NESTING``, or a size-producing function
    (``repeat``, ``lpad``, ``space``, ``array_repeat``, ``sequence``, ...) asked for more
    than ``MAX_SIZE_ARGUMENT`` (the product of nested calls counts)."""
    body = _LITERALS_AND_COMMENTS.sub(lambda m: " " * len(m.group(0)), sql)
    depth = deepest = 0
    opened: list[int] = []
    closes: dict[int, int] = {}
    for paren in _PAREN.finditer(body):
        index, char = paren.start(), paren.group(0)
        if char == "(":
            depth += 1
            deepest = max(deepest, depth)
            opened.append(index)
        elif char == ")" and opened:
            depth -= 1
            closes[opened.pop()] = index
    if deepest > MAX_NESTING:
        raise UsageError(f"the query nests parentheses {deepest} deep; at most {MAX_NESTING} "
                         f"can be planned")
    calls = []     # (start, end, function name) of each size-producing call, in order
    for match in _SIZE_CALL.finditer(body):
        start = match.end() - 1
        calls.append((start, closes.get(start, len(body)), match.group(1).lower()))
    enclosing: list[tuple[int, float]] = []     # (end, product of sizes) of open calls
    for number, (start, end, name) in enumerate(calls):
        while enclosing and enclosing[-1][0] < start:
            enclosing.pop()
        # The call's own numbers: its span less the spans of the size calls inside it.
        own, cursor = [], start
        for inner in range(number + 1, len(calls)):
            inner_start, inner_end, _ = calls[inner]
            if inner_start > end:
                break
            if inner_start >= cursor:
                own += _NUMBER.findall(body, cursor, inner_start)
                cursor = inner_end
        own += _NUMBER.findall(body, cursor, end)
        product = max((float(n) for n in own), default=0.0) * \
            (enclosing[-1][1] if enclosing else 1.0)
        if product > MAX_SIZE_ARGUMENT:
            raise UsageError(f"{name}(...) asks for {product:,.0f} elements; a query to plan "
                             f"may ask for at most {MAX_SIZE_ARGUMENT:,}")
        enclosing.append((end, max(product, 1.0)))


def jvm_limit_error(message: str) -> UsageError | None:
    """The UsageError for a planner that ran out of stack or heap (its JVM error text),
    or None when ``message`` is another error."""
    if "StackOverflowError" in message or "FAILED_TO_PARSE_TOO_COMPLEX" in message:
        return UsageError("the query is too deeply nested or too complex to plan; "
                          "split it or simplify it")
    if "OutOfMemoryError" in message:
        return UsageError("planning the query needs more memory than the planner has; "
                          "it asks for too large a constant")
    return None


def _quote(text: str) -> str:
    return "'" + str(text).replace("\\", "\\\\").replace("'", "\\'") + "'"


class HiveSession:
    """One HiveServer2 session (pyhive), opened at construction; close it when done.

    ``auth`` is the server's ``hive.server2.authentication``: None or NONE (SASL
    PLAIN, any user), NOSASL, LDAP or CUSTOM (with ``password``) or KERBEROS
    (with ``kerberos_service_name``).  Raises :class:`HiveConnectionError` when no
    session can be opened, :class:`UsageError` for settings pyhive cannot use.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 10000, username: str | None = None,
                 auth: str | None = None, password: str | None = None,
                 database: str = "default", *, kerberos_service_name: str | None = None,
                 connect_timeout_s: float = 10):
        mode = (auth or "NONE").upper()
        if mode not in AUTH_MODES:
            raise UsageError(f"auth must be one of {', '.join(AUTH_MODES)}; got {auth!r}")
        if (password is not None) != (mode in ("LDAP", "CUSTOM")):
            raise UsageError("a password is given with auth LDAP or CUSTOM, and only then")
        if (kerberos_service_name is not None) != (mode == "KERBEROS"):
            raise UsageError("auth KERBEROS needs kerberos_service_name (and only it uses one)")
        if not isinstance(port, int) or not 1 <= port <= 65535:
            raise UsageError(f"port must be 1..65535; got {port!r}")
        self.host, self.port, self.username, self.auth = host, port, username, mode
        self.where = f"{host}:{port}"
        self._engine = self._engine_version = None
        if not port_answers(host, port, timeout_s=connect_timeout_s):
            raise HiveConnectionError(
                f"cannot reach HiveServer2 at {self.where}: nothing answers there "
                "(start a local one with 'jobgauge hive start', or give --host/--port)")
        from pyhive import exc as pyhive_errors
        from pyhive import hive

        self._errors = pyhive_errors
        try:
            with quiet_thrift():
                self._connection = hive.connect(
                    host=host, port=port, username=username, auth=None if auth is None else mode,
                    password=password, database=database,
                    kerberos_service_name=kerberos_service_name)
        except pyhive_errors.Error as exc:
            raise HiveConnectionError(f"HiveServer2 at {self.where} refused the session: "
                                      f"{_server_message(exc)}") from None
        except _transport_errors() as exc:
            raise HiveConnectionError(f"cannot open a session on HiveServer2 at {self.where} "
                                      f"(auth {mode}): {exc}") from None
        except ImportError as exc:
            raise UsageError(f"auth {mode} needs a package pyhive could not import: "
                             f"{exc}") from None

    # -- plumbing ---------------------------------------------------------------
    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def __repr__(self):
        return f"HiveSession({self.where!r}, auth={self.auth!r})"

    def close(self) -> None:
        connection, self._connection = getattr(self, "_connection", None), None
        if connection is not None:
            try:
                connection.close()
            except _transport_errors():
                pass  # the server is gone already; nothing left to close

    def _cursor(self):
        if self._connection is None:
            raise UsageError("this HiveSession is closed")
        return self._connection.cursor(arraysize=10_000)

    def execute(self, sql: str, *, timeout_s: float | None = None) -> list[tuple]:
        """Run one statement to completion and return its rows.

        Raises HiveQueryError with the server's message when it rejects the
        statement, HiveConnectionError when the connection is lost.  With
        ``timeout_s``, a statement still running after that long is cancelled on
        the server and HiveQueryError says so.
        """
        cursor = self._cursor()
        try:
            if timeout_s is None:
                cursor.execute(sql)
            else:
                self._execute_within(cursor, sql, timeout_s)
            return cursor.fetchall() if cursor.description is not None else []
        except self._errors.Error as exc:
            raise HiveQueryError(_server_message(exc)) from None
        except _transport_errors() as exc:
            raise HiveConnectionError(f"lost the connection to HiveServer2 at {self.where}: "
                                      f"{exc}") from None
        finally:
            self._close_cursor(cursor)

    def _execute_within(self, cursor, sql: str, timeout_s: float) -> None:
        """Start ``sql`` and wait for it to finish, at most ``timeout_s``."""
        from TCLIService.ttypes import TOperationState

        cursor.execute(sql, async_=True)
        deadline = time.monotonic() + timeout_s
        waiting = (TOperationState.INITIALIZED_STATE, TOperationState.PENDING_STATE,
                   TOperationState.RUNNING_STATE)
        while True:
            response = cursor.poll(get_progress_update=False)
            if response.operationState not in waiting:
                if response.operationState != TOperationState.FINISHED_STATE:
                    raise HiveQueryError(_server_message(response) if response.errorMessage
                                         else "the statement did not finish")
                return
            if time.monotonic() >= deadline:
                cursor.cancel()
                raise HiveQueryError(f"the statement took longer than {timeout_s:g} s and "
                                     f"was cancelled")
            time.sleep(0.05)

    def _close_cursor(self, cursor) -> None:
        try:
            cursor.close()
        except (self._errors.Error, *_transport_errors()):
            pass  # closing a finished or failed operation; nothing to report

    # -- what the server is -----------------------------------------------------
    @property
    def engine(self) -> str:
        """``spark-thrift`` (Spark SQL behind HiveServer2) or ``hive``."""
        if self._engine is None:
            try:
                rows = self.execute(f"SET {SHUFFLE_PARTITIONS}")
            except HiveQueryError:
                rows = []
            spark = bool(rows) and len(rows[0]) == 2 and str(rows[0][1]).isdigit()
            self._engine = "spark-thrift" if spark else "hive"
        return self._engine

    @property
    def engine_version(self) -> str | None:
        """The engine's version (``4.3.0`` for Spark, ``3.1.3`` for Hive), or None."""
        if self._engine_version is None:
            try:
                rows = self.execute("SELECT version()")
            except HiveQueryError:
                return None
            self._engine_version = str(rows[0][0]).split()[0] if rows and rows[0][0] else ""
        return self._engine_version or None

    def get(self, key: str) -> str | None:
        """The session's value of setting ``key``, or None when it is not set."""
        if not SETTING_NAME.match(key):
            raise UsageError(f"{key!r} is not a setting name")
        rows = self.execute(f"SET {key}")
        if not rows:
            return None
        if len(rows[0]) == 2:  # Spark: (key, value)
            value = rows[0][1]
            return None if value in (None, _UNDEFINED) else str(value)
        text = str(rows[0][0])  # Hive: "key=value" or "key is undefined"
        name, sep, value = text.partition("=")
        return value if sep and name == key else None

    # -- settings ---------------------------------------------------------------
    def set(self, knobs: dict) -> KnobPlan:
        """``SET`` each knob for the rest of this session; Hive knobs are translated on
        a Spark Thrift server.  Returns what was requested, applied and ignored."""
        from jobgauge.profiler._hive_knobs import check_knobs

        requested = check_knobs(knobs)
        current = None
        if self.engine == "spark-thrift" and "hive.exec.reducers.max" in requested:
            value = self.get(SHUFFLE_PARTITIONS)
            current = int(value) if value and value.isdigit() else None
        plan = translate_knobs(requested, engine=self.engine, shuffle_partitions=current)
        for key, value in plan.applied.items():
            self.execute(f"SET {key}={value}")
        return plan

    # -- plans and runs ---------------------------------------------------------
    def explain(self, sql: str, mode: str | None = None) -> str:
        """The plan text of ``sql``: ``EXPLAIN FORMATTED`` on Spark, plain ``EXPLAIN``
        on Hive, unless ``mode`` names another (``extended``, ``cbo``, ...).

        Raises HiveQueryError with the server's message when the query cannot be
        planned (Spark returns that as plan text; it is turned into an error here),
        UsageError for a query past the planning limits (:func:`check_plan_limits`,
        or the server's planner out of stack or memory); planning stops after
        ``PLAN_TIMEOUT_S``.
        """
        if mode is None:
            mode = "formatted" if self.engine == "spark-thrift" else ""
        if mode.lower() not in EXPLAIN_MODES:
            named = ", ".join(m for m in EXPLAIN_MODES if m)
            raise UsageError(f"explain mode must be one of {named} or empty; got {mode!r}")
        check_plan_limits(sql)
        words = ["EXPLAIN", mode.upper(), sql.strip().rstrip(";")]
        try:
            rows = self.execute(" ".join(word for word in words if word),
                                timeout_s=PLAN_TIMEOUT_S)
        except HiveQueryError as exc:
            raise jvm_limit_error(str(exc)) or exc from None
        text = "\n".join("" if row[0] is None else str(row[0]) for row in rows)
        if text.lstrip().startswith(_PLANNING_ERROR):
            limit = jvm_limit_error(text)
            if limit is not None:
                raise limit
            message = text.lstrip()[len(_PLANNING_ERROR):].lstrip(": \n").split("\n")[0]
            raise HiveQueryError(f"the query cannot be planned: {message}")
        if not text.strip():
            raise HiveQueryError("the server returned an empty plan")
        return text

    def run(self, sql: str, knobs: dict | None = None, timeout_s: float = 600) -> dict:
        """Run ``sql`` once and measure it; never raises for a failing query.

        Returns ``status`` (succeeded | failed | timed_out), ``runtime_s`` (wall
        time around execute, completion and fetching every row), ``rows``,
        ``first`` (the first row as strings), ``error`` (the server's message),
        ``started_at``/``ended_at`` and ``settings`` (the KnobPlan as a dict, when
        ``knobs`` were given; they stay set for the rest of the session).  A query
        still running after ``timeout_s`` is cancelled on the server and its
        ``runtime_s`` is the limit it ran past (a lower bound).  Connection loss
        raises HiveConnectionError.
        """
        from TCLIService.ttypes import TOperationState

        if not timeout_s or timeout_s <= 0:
            raise UsageError(f"timeout_s must be > 0; got {timeout_s!r}")
        plan = self.set(knobs) if knobs else None
        outcome = {"status": "succeeded", "rows": None, "first": None, "error": None}
        cursor = self._cursor()
        started_at = datetime.now(timezone.utc)
        started = time.perf_counter()
        try:
            try:
                cursor.execute(sql.strip().rstrip(";"), async_=True)
                deadline = started + timeout_s
                interval = 0.005
                while True:
                    response = cursor.poll(get_progress_update=False)
                    state = response.operationState
                    if state == TOperationState.FINISHED_STATE:
                        rows = cursor.fetchall() if cursor.description is not None else []
                        ended = time.perf_counter()
                        outcome["rows"] = len(rows)
                        outcome["first"] = [str(v) for v in rows[0]] if rows else None
                        break
                    if state not in (TOperationState.INITIALIZED_STATE,
                                     TOperationState.PENDING_STATE,
                                     TOperationState.RUNNING_STATE):
                        ended = time.perf_counter()
                        name = TOperationState._VALUES_TO_NAMES.get(state, str(state))
                        outcome.update(status="failed", error=_server_message(response)
                                       if response.errorMessage else f"operation ended {name}")
                        break
                    ended = time.perf_counter()
                    if ended >= deadline:
                        cursor.cancel()
                        outcome.update(status="timed_out",
                                       error=f"ran past the {timeout_s:g} s limit; cancelled "
                                             "on the server")
                        break
                    time.sleep(min(interval, max(deadline - time.perf_counter(), 0)))
                    interval = min(interval * 2, 0.1)
            except self._errors.Error as exc:
                ended = time.perf_counter()
                outcome.update(status="failed", error=_server_message(exc))
            runtime_s = ended - started
            if outcome["status"] == "timed_out":
                self._wait_cancelled(cursor)
        except _transport_errors() as exc:
            raise HiveConnectionError(f"lost the connection to HiveServer2 at {self.where}: "
                                      f"{exc}") from None
        finally:
            self._close_cursor(cursor)
        outcome.update(runtime_s=round(runtime_s, 6), started_at=started_at,
                       ended_at=started_at + timedelta(seconds=runtime_s),
                       settings=plan.to_dict() if plan else None)
        return outcome

    def _wait_cancelled(self, cursor, limit_s: float = 15) -> None:
        from TCLIService.ttypes import TOperationState

        deadline = time.monotonic() + limit_s
        while time.monotonic() < deadline:
            state = cursor.poll(get_progress_update=False).operationState
            if state not in (TOperationState.RUNNING_STATE, TOperationState.PENDING_STATE):
                return
            time.sleep(0.2)

    # -- TPC-H ------------------------------------------------------------------
    def use(self, database: str) -> None:
        if not _IDENTIFIER.match(database):
            raise UsageError(f"{database!r} is not a database name")
        self.execute(f"USE `{database}`")

    def load_tpch(self, scale, data_root=None) -> dict:
        """Make the eight TPC-H tables of ``scale`` queryable in database
        ``tpch_sf<scale>`` (``tpch_sf0_01``), as tables over the parquet files of
        :func:`jobgauge.profiler.workloads.tpch.ensure_data` (generated if missing).

        Idempotent: tables already there over the same files are kept; a table
        over other files (another data root) is re-created.  The files must be
        readable by the server at the same path, so this is for a server on
        this machine (Spark Thrift server); returns ``database``, ``data_path``,
        ``created`` and ``kept``.
        """
        from jobgauge.profiler.runners.runner import DEFAULT_DATA_ROOT
        from jobgauge.profiler.workloads._tpch_queries import TABLES
        from jobgauge.profiler.workloads.tpch import ensure_data
        from jobgauge.units import scale_label

        if self.engine != "spark-thrift":
            raise UsageError("load-tpch needs a Spark Thrift server (CREATE TABLE ... USING "
                             "parquet over local files); this server is Apache Hive")
        label = scale_label(scale)
        database = tpch_database(label)
        data_path = Path(ensure_data(Path(data_root or DEFAULT_DATA_ROOT), label)).resolve()
        self.execute(f"CREATE DATABASE IF NOT EXISTS `{database}` "
                     f"COMMENT {_quote('TPC-H ' + label + ' (jobgauge)')}")
        locations = self._table_locations(database)
        created, kept = [], []
        for table in TABLES:
            path = data_path / f"{table}.parquet"
            if locations.get(table) == path.as_uri() or locations.get(table) == f"file:{path}":
                kept.append(table)
                continue
            if table in locations:
                self.execute(f"DROP TABLE `{database}`.`{table}`")  # external: files stay
            self.execute(f"CREATE TABLE `{database}`.`{table}` USING parquet "
                         f"LOCATION {_quote(str(path))}")
            created.append(table)
        return {"database": database, "scale": label, "data_path": str(data_path),
                "created": created, "kept": kept}

    def _table_locations(self, database: str) -> dict:
        """``{table: location URI}`` of the tables in ``database``, in one statement."""
        rows = self.execute(f"SHOW TABLE EXTENDED IN `{database}` LIKE '*'")
        locations = {}
        for row in rows:
            table, information = row[1], row[-1]
            match = re.search(r"^Location: (\S+)$", str(information or ""), re.MULTILINE)
            locations[str(table)] = match.group(1) if match else None
        return locations


def tpch_database(scale_label_: str) -> str:
    """``sf0.01`` -> ``tpch_sf0_01``."""
    return "tpch_" + scale_label_.replace(".", "_")


def plan_dag(plan_text: str, engine: str):
    """The QueryDag of an EXPLAIN output of ``engine`` (raises ParseError if unreadable)."""
    from jobgauge.dag import QueryDag

    if engine == "spark-thrift":
        return QueryDag.from_spark_plan(plan_text)
    return QueryDag.from_hive_explain(plan_text)
