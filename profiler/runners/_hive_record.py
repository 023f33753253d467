"""Run one query through HiveServer2 and record it, with its plan's DAG, in the store;
name a user's own query, and predict its runtime from its plan."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime
from pathlib import Path

from jobgauge.errors import ParseError, UsageError
from jobgauge.profiler.readers._hive_errors import HiveQueryError
from jobgauge.profiler._hive_knobs import KnobPlan
from jobgauge.profiler.readers._hive_session import check_plan_limits, plan_dag

LOOPBACK = ("127.0.0.1", "localhost", "::1")
RESOURCE_FIELDS = ("instance_type", "instance_count", "vcpus", "memory_gib")


def engine_framework(engine: str) -> str:
    """The framework a server's runs are of: a Spark Thrift server plans and runs Spark
    SQL, so its queries are Spark jobs, as the runs the model learned from and the web
    form's pasted queries are (recorded as ``spark-thrift`` once, a query run with
    ``hive run`` was a job apart: ``hive explain --predict`` of the same text never saw
    its runs; a store renames such runs, ``jobgauge.store.RENAMED_FRAMEWORKS``); an Apache
    Hive server's are ``hive``."""
    from jobgauge.store import RENAMED_FRAMEWORKS

    return RENAMED_FRAMEWORKS.get(engine, engine)


def server_resources(session) -> dict:
    """Where a local Spark Thrift server runs, in the run table's words (from its
    ``spark.master`` and ``spark.driver.memory``)."""
    from jobgauge.profiler.runners.runner import resources

    if session.engine != "spark-thrift":
        raise UsageError("the resources of an Apache Hive server cannot be read over "
                         "HiveServer2; give instance_type, instance_count, vcpus and memory_gib")
    master = session.get("spark.master") or ""
    if not master.startswith("local"):
        raise UsageError(f"the Thrift server runs on {master or 'an unknown master'}, not on "
                         "this machine; give instance_type, instance_count, vcpus and memory_gib")
    return resources(master, {"spark.driver.memory": session.get("spark.driver.memory") or "1g"})


def run_query(session, workload: str, sql: str, size: str, knobs: dict | None = None,
              store=None, *, timeout_s: float = 600, input_bytes: int | None = None,
              resources: dict | None = None, source: str | None = None,
              explain_mode: str | None = None) -> dict:
    """Set ``knobs``, EXPLAIN ``sql``, run it once and record the run (and its DAG)
    in ``store`` when one is given.

    The knobs stay set in ``session`` afterwards.  A failed or timed-out query
    is recorded too.  Returns the run as recorded (with ``id`` when stored) plus
    ``settings`` (requested/applied/translated/ignored), ``plan`` (the EXPLAIN
    text, or None when the query could not be planned), ``dag`` (its
    ``QueryDag.to_dict()`` with ``source_format``), ``rows`` and ``first``.
    """
    check_plan_limits(sql)          # before any setting changes or anything runs
    if resources is None:
        resources = server_resources(session)
    missing = [k for k in RESOURCE_FIELDS if resources.get(k) in (None, "")]
    if missing:
        raise UsageError("resources need " + ", ".join(missing))
    plan = session.set(knobs) if knobs else KnobPlan()
    notes = []
    try:
        plan_text = session.explain(sql, explain_mode)
    except HiveQueryError as exc:
        plan_text = None
        notes.append(f"no plan: {exc}")
    result = session.run(sql, timeout_s=timeout_s)
    dag = None
    if plan_text is not None:
        try:
            drawn = plan_dag(plan_text, session.engine)
        except ParseError as exc:
            notes.append(f"DAG not read from the plan: {exc}")
        else:
            # the scans' files where this machine holds them (a server of this machine),
            # as explain --predict and the web form size a plan: the DAG then says what
            # the query reads, and the run its data set's bytes
            from jobgauge.models.evaluation import size_plan_scans

            size_plan_scans(drawn)
            if input_bytes is None:
                input_bytes = drawn.graph.get("dataset_bytes")
            dag = drawn.to_dict()
            dag["source_format"] = dag["graph"].get("format")
    error = "\n".join(part for part in [result["error"], *notes] if part) or None
    run = {
        "source": source or ("hive-local" if session.host in LOOPBACK else "hive"),
        "run_id": f"{workload}-{size}-{datetime.now():%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}",
        "workload": workload, "framework": engine_framework(session.engine),
        "engine_version": session.engine_version,
        "query_text": sql.strip(), "datasize": size, "input_bytes": input_bytes,
        "hourly_price_usd": None, "time_kind": "query",
        "started_at": result["started_at"], "ended_at": result["ended_at"],
        "runtime_s": result["runtime_s"], "status": result["status"],
        "completed": result["status"] == "succeeded", "error": error, **resources,
    }
    if store is not None:
        run["id"] = store.add_run(run, plan.settings(), dag=dag)
    return {**run, "settings": plan.to_dict(), "plan": plan_text, "dag": dag,
            "rows": result["rows"], "first": result["first"]}


# ---- a user's own query -------------------------------------------------------------
def query_workload(sql: str) -> str:
    """The job key of a user's own query: ``sql-`` and a hash of its text, blind to case,
    white space and a closing semicolon, so the same query asked again groups with its
    earlier runs."""
    text = " ".join(sql.strip().rstrip(";").split()).lower()
    digest = hashlib.sha1(text.encode()).hexdigest()[:10]
    return f"sql-{digest}"


def asked_query(args) -> tuple[str, str, bool]:
    """(job key, query text, TPC-H?) of the options of ``add_query_source_options``
    (``--query N``, ``--sql TEXT``, ``--file PATH``) and ``add_query_key_option``
    (``--workload NAME``, one's own query only, never a name of jobgauge's workloads)."""
    from jobgauge.profiler.workloads import benchmark_of
    from jobgauge.profiler.workloads._tpch_queries import QUERIES

    name = getattr(args, "workload", None)
    if args.query is not None:
        if name:
            raise UsageError("--workload names your own query (--sql or --file); TPC-H "
                             "query N is recorded as tpch-qN")
        if args.query not in QUERIES:
            raise UsageError(f"TPC-H query must be 1..22; got {args.query}")
        return f"tpch-q{args.query}", QUERIES[args.query].strip(), True
    sql = read_query(args.sql, args.file)
    check_plan_limits(sql)      # a query past the planning limits is refused before running
    if name and benchmark_of(name) is not None:
        raise UsageError(f"--workload {name} is one of jobgauge's {benchmark_of(name)} "
                         "workloads; name your own query otherwise")
    return name or query_workload(sql), sql, False


def read_query(sql: str | None = None, file=None) -> str:
    """The query text of ``--sql TEXT`` or ``--file PATH`` (one of them), without a
    trailing semicolon; an empty or unreadable query is a UsageError."""
    if (sql is None) == (file is None):
        raise UsageError("give the query as --sql TEXT or --file PATH (one of them)")
    if file is not None:
        try:
            sql = Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise UsageError(f"cannot read the query file {file}: {reason}") from None
    text = sql.strip().rstrip(";").strip()
    if not text:
        raise UsageError("the query is empty" + (f" ({file})" if file is not None else ""))
    return text


def plan_prediction(model, workload: str, dag, resources: dict, *, store,
                    engine: str = "spark-thrift", datasize: str = "", input_bytes=None,
                    settings=None, coverage: float = 0.8) -> dict:
    """Predicted runtime of a query from its plan: the :class:`jobgauge.job.Job` of
    ``workload`` with its plan ``dag`` (a QueryDag or its dict) on the server's
    ``resources`` (:func:`server_resources`), read by ``model`` as the web service
    reads a pasted query, and calibrated to the query's own runs in ``store`` as the
    web service calibrates it.  Returns ``predict_with_history``'s ``{"runtime_s",
    "low_s", "high_s", "outside_measured", "note", "calibrated_runs",
    "history_factor", ...}`` plus ``coverage``."""
    from jobgauge.job import Cluster, Job
    from jobgauge.models._default import predict_with_history

    cluster = Cluster(str(resources["instance_type"]), resources.get("vcpus"),
                      resources.get("memory_gib"), None, int(resources.get("instance_count") or 1))
    job = Job(workload, datasize, cluster, dict(settings or {}),
              framework=engine_framework(engine),
              input_bytes=input_bytes, dag=dag, source="jobgauge-hive")
    return {**predict_with_history(store, model, job, coverage=coverage), "coverage": coverage}
