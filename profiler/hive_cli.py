"""``jobgauge hive start|stop|status|load-tpch|explain|run``: queries on a live HiveServer2.

``explain`` and ``run`` take a TPC-H query (``--query N``) or the user's own
(``--sql TEXT`` / ``--file PATH``); ``explain --predict`` adds the runtime the
store's model predicts from the plan's DAG.

Exit codes: ``start`` 0 once the server answers, 1 when one already runs for
the state folder (or it fails to start); ``stop`` 0, also when no server was
running (it says so); ``status`` 0 when a server runs, 1 when none does;
``run`` 0 when the query succeeded, 1 when it failed or timed out (the run is
recorded either way).  Without ``--host``/``--port`` the commands talk to the
server ``jobgauge hive start`` runs (its state file), else 127.0.0.1:10000.
"""

from __future__ import annotations

import json
import os
import sys

from jobgauge.cli_options import (add_cluster_options, add_command, add_command_group,
                                  add_conf_option, add_data_root_option, add_datasize_option,
                                  add_master_option,
                                  add_query_key_option, add_query_source_options,
                                  add_timeout_option, finish_run, parse_key_values, print_result)


def register(subparsers) -> None:
    """Add ``hive`` and its subcommands."""
    commands = add_command_group(
        subparsers, "hive",
        help="run and measure queries on a HiveServer2 (Hive or Spark Thrift server)",
        description="Start a local HiveServer2 (Spark's Thrift server), load TPC-H into it, "
                    "show query plans and record measured query runs with their DAGs.")

    start = add_command(commands, "start", start_command,
                        help="start a local Spark Thrift server on 127.0.0.1",
                        json="the server's state")
    start.add_argument("--port", type=int, default=None, metavar="P", help="default 10000")
    _state_dir(start)
    add_master_option(start)
    add_conf_option(start, help="spark.* setting (--conf) or hive.* setting (--hiveconf); "
                                "repeatable")
    add_timeout_option(start, default=300, what="stop waiting for the server to answer")

    stop = add_command(commands, "stop", stop_command,
                       help="stop the local server (and its JVM)",
                       json="the stopped server's state")
    _state_dir(stop)

    status = add_command(commands, "status", status_command,
                         help="is the local server running?", json="the server's state")
    _state_dir(status)

    load = add_command(commands, "load-tpch", load_command,
                       help="create the TPC-H tables over parquet files",
                       json="the loaded database")
    _scale(load)
    _connection(load)

    explain = add_command(commands, "explain", explain_command,
                          help="print a query's plan (or its DAG) and, with --predict, its runtime",
                          json="the DAG (with --predict: and the prediction)")
    _query_options(explain)
    explain.add_argument("--mode", default=None, metavar="MODE",
                         help="EXPLAIN variant: formatted (Spark's default), extended, cost, "
                              "codegen; on Hive cbo, vectorization, ... (default: the engine's)")
    explain.add_argument("--predict", action="store_true",
                         help="also predict the query's runtime from its plan (the store's "
                              "model; on a fresh store one trained from the shipped runs)")

    run = add_command(commands, "run", run_command,
                      help="run a query once and record it with its DAG", json="the run")
    _query_options(run)
    add_query_key_option(run)
    add_conf_option(run, old=("--set",),
                    help="a Hive or Spark SQL session setting; repeatable")
    add_timeout_option(run, default=600, what="cancel the query")


def _query_options(parser):
    """Which query (TPC-H or the user's own), at which TPC-H scale, on which server, and
    where that server runs: the options ``explain`` and ``run`` share."""
    _query_source(parser)
    _scale(parser)
    _resource_options(parser)
    _connection(parser)


def _query_source(parser):
    add_query_source_options(parser)
    parser.add_argument("--database", default=None, metavar="NAME",
                        help="--sql/--file: the database the query runs in (default: the "
                             "server's default)")


def _resource_options(parser):
    add_cluster_options(parser, type_help="where the server runs (needed, with the three "
                                          "below, for a server not on this machine)",
                        what="where the server runs")


def _state_dir(parser):
    parser.add_argument("--state-dir", metavar="DIR", default=None,
                        help="the local server's folder (default ~/.local/share/jobgauge/hive "
                             "or $JOBGAUGE_HIVE_STATE)")


def _scale(parser):
    add_datasize_option(parser, default="0.1", tpch=True,
                        help="TPC-H scale, 0.1 or sf0.1 (default 0.1)")
    add_data_root_option(parser, what="TPC-H tables")


def _connection(parser):
    parser.add_argument("--host", default=None, help="HiveServer2 host (default: the local server)")
    parser.add_argument("--port", type=int, default=None, metavar="P",
                        help="HiveServer2 port (default: the local server's, else 10000)")
    parser.add_argument("--username", default=None)
    parser.add_argument("--auth", default=None, metavar="MODE",
                        help="NONE (default), NOSASL, LDAP, CUSTOM or KERBEROS; the password for "
                             "LDAP/CUSTOM is read from $JOBGAUGE_HIVE_PASSWORD")
    parser.add_argument("--kerberos-service-name", default=None, metavar="NAME")
    _state_dir(parser)


# -- server ------------------------------------------------------------------------
def start_command(args) -> int:
    """Start a local Spark Thrift server (a HiveServer2) on 127.0.0.1 and wait until it
    answers. Exit code 1 when one already runs for the state folder."""
    from jobgauge.profiler.hive import DEFAULT_PORT, start_server

    conf = parse_key_values(args.conf, settings=True)
    state = start_server(port=args.port or DEFAULT_PORT, state_dir=args.state_dir,
                         master=args.master, conf=conf, timeout_s=args.timeout)
    print_result(args.json, state.to_dict(), [
        (f"Hive server (Spark Thrift server, {state.master}) answering on "
         f"{state.host}:{state.port}, pid {state.pid}, started in {state.startup_s:.1f} s"),
        f"  log: {state.log_path}", f"  state: {state.state_dir}"])
    return 0


def _none_running(args, payload: dict) -> None:
    from jobgauge.profiler.hive import DEFAULT_STATE_DIR

    where = args.state_dir or DEFAULT_STATE_DIR
    print_result(args.json, payload, f"no Hive server is running (state {where})")


def stop_command(args) -> int:
    """Stop the local server and its JVM (exit code 0 also when none was running)."""
    from jobgauge.profiler.hive import stop_server

    state = stop_server(args.state_dir)
    if state is None:
        _none_running(args, {"stopped": None})
        return 0
    print_result(args.json, {"stopped": state.to_dict()},
                 f"stopped the Hive server on {state.host}:{state.port} (pid {state.pid})")
    return 0


def status_command(args) -> int:
    """Say whether the local server runs and answers (exit code 1 when none runs)."""
    from jobgauge.profiler.hive import server_status

    status = server_status(args.state_dir)
    if status is None:
        _none_running(args, {"running": False})
        return 1
    print_result(args.json, {"running": True, **status}, [
        f"Hive server running on {status['host']}:{status['port']} (pid {status['pid']}, "
        f"{status['master']}, up {status['uptime_s']:.0f} s, "
        + ("answering)" if status["answering"] else "NOT answering)"),
        f"  log: {status['log_path']}"])
    return 0


# -- queries -----------------------------------------------------------------------
def open_session(args, database: str = "default"):
    """A HiveSession on --host/--port, else the local server, else 127.0.0.1:10000."""
    from jobgauge.profiler.hive import DEFAULT_PORT, HiveSession, default_endpoint

    if args.host is None and args.port is None:
        host, port = default_endpoint(args.state_dir)
    else:
        host, port = args.host or "127.0.0.1", args.port or DEFAULT_PORT
    password = os.environ.get("JOBGAUGE_HIVE_PASSWORD") if (args.auth or "").upper() in (
        "LDAP", "CUSTOM") else None
    return HiveSession(host=host, port=port, username=args.username, auth=args.auth,
                       password=password, database=database,
                       kerberos_service_name=args.kerberos_service_name)


def _load(session, args) -> dict:
    print(f"loading TPC-H {args.datasize} into {session.where} ...", file=sys.stderr, flush=True)
    loaded = session.load_tpch(args.datasize, args.data_root)
    session.use(loaded["database"])
    return loaded


def load_command(args) -> int:
    """Create the TPC-H tables of a scale over generated parquet files (tables that are
    already there are kept)."""
    with open_session(args) as session:
        loaded = _load(session, args)
    print_result(args.json, loaded, [
        (f"TPC-H {loaded['scale']} in database {loaded['database']} "
         f"({len(loaded['created'])} tables created, {len(loaded['kept'])} already there) "
         f"over {loaded['data_path']}")])
    return 0


def _asked_query(args):
    """(job key, query text, TPC-H?) of ``--query N``, ``--sql TEXT`` or ``--file PATH``
    (``asked_query``); ``--database`` and ``--workload`` are for one's own query."""
    from jobgauge.errors import UsageError
    from jobgauge.profiler.runners._hive_record import asked_query

    if args.query is not None and (args.database or getattr(args, "workload", None)):
        raise UsageError("--database and --workload are for your own query (--sql or "
                         "--file); a TPC-H query runs in its own database")
    return asked_query(args)


def _prepare(session, args, tpch: bool) -> dict:
    """Load TPC-H for a TPC-H query, else switch to --database: (scale, data_path)."""
    if tpch:
        return _load(session, args)
    if args.database:
        session.use(args.database)
    return {"scale": "", "data_path": None}


def _given_resources(args) -> dict | None:
    from jobgauge.errors import UsageError

    given = {"instance_type": args.instance_type, "instance_count": args.instance_count,
             "vcpus": args.vcpus, "memory_gib": args.memory_gib}
    if all(v is None for v in given.values()):
        return None
    if any(v is None for v in given.values()):
        raise UsageError("give all of --instance-type, --instance-count, --vcpus and "
                         "--memory-gib, or none (then they are read from a local server)")
    return given


def explain_command(args) -> int:
    """EXPLAIN a TPC-H query (--query N, loaded at --datasize) or any query on the connected
    server (--sql TEXT or --file PATH, in --database). --predict adds the runtime the
    store's model predicts from the plan's DAG."""

    from jobgauge.profiler.hive import plan_dag, server_resources

    workload, sql, tpch = _asked_query(args)
    resources = _given_resources(args)
    with open_session(args) as session:
        loaded = _prepare(session, args, tpch)
        text = session.explain(sql, args.mode)
        engine = session.engine
        if args.predict and resources is None:
            resources = server_resources(session)
    dag = plan_dag(text, engine) if (args.json or args.predict) else None
    prediction = None
    if args.predict:
        from jobgauge.models._default import store_model
        from jobgauge.models.evaluation import size_plan_scans
        from jobgauge.profiler.runners._hive_record import plan_prediction
        from jobgauge.store import open_store

        store = open_store(args.store)
        model, _meta = store_model(store, progress=sys.stderr)
        # a server of this machine: its scans' files say what the query reads, and a
        # query of your own is asked at the data its tables hold now
        size_plan_scans(dag)
        prediction = plan_prediction(model, workload, dag, resources, store=store,
                                     engine=engine,
                                     datasize=loaded["scale"],
                                     input_bytes=None if tpch else dag.graph.get("dataset_bytes"))
    if args.json:
        payload = dag.to_dict()
        payload["source_format"] = payload["graph"].get("format")
        if prediction is not None:
            payload["prediction"] = {"workload": workload, **prediction}
        print(json.dumps(payload, default=str))
        return 0
    print(text)
    if prediction is not None:
        if prediction["note"]:   # far outside what the model was trained on; the answer last
            print(prediction["note"])
        where = f"{resources['instance_count']} x {resources['instance_type']}"
        if prediction["answered_from"]:
            print("never measured: answered from the measured queries whose plans read "
                  "most alike, " + ", ".join(prediction["answered_from"]))
        from jobgauge.models._default import calibration_line

        said = calibration_line(prediction["calibrated_runs"], workload,
                                prediction["history_factor"], prediction["busy_runs_left_out"],
                                prediction["far_runs_left_out"], prediction["history_held"],
                                prediction["cluster_runs"], prediction["cluster_jobs"],
                                resources["instance_type"])
        if said:
            print(said)
        print(f"predicted runtime of {workload} on {where}: {prediction['runtime_s']:.1f} s "
              f"({int(prediction['coverage'] * 100)} % interval {prediction['low_s']:.1f} .. "
              f"{prediction['high_s']:.1f} s; {dag.number_of_nodes()} plan operators)")
    return 0


def run_command(args) -> int:
    """Run a TPC-H query (--query N) or any query on the connected server (--sql TEXT or --file
    PATH, in --database) once, measure it and record it in the store with its plan's DAG;
    reruns of the same query share a job key (--workload, default sql-<hash of the text>)."""

    from jobgauge.models._default import retrain_after_runs
    from jobgauge.profiler.hive import run_query
    from jobgauge.profiler.workloads.base import directory_bytes
    from jobgauge.store import open_store

    workload, sql, tpch = _asked_query(args)
    knobs = parse_key_values(args.conf, settings=True)
    resources = _given_resources(args)
    store = open_store(args.store)
    with open_session(args) as session:
        loaded = _prepare(session, args, tpch)
        size = f" at {loaded['scale']}" if loaded["scale"] else ""
        print(f"running {workload}{size} on {session.where} ...", file=sys.stderr, flush=True)
        run = run_query(session, workload, sql, loaded["scale"], knobs, store,
                        timeout_s=args.timeout,
                        input_bytes=directory_bytes(loaded["data_path"])
                        if loaded["data_path"] else None,
                        resources=resources)
    retrain_after_runs(store)
    runtime = f" in {run['runtime_s']:.3f} s" if run["runtime_s"] is not None else ""
    size = f" {run['datasize']}" if run["datasize"] else ""
    lines = [f"run {run['id']}: {workload}{size} on {run['framework']} "
             f"{run['engine_version']} {run['status']}{runtime}, {run['rows']} rows"]
    settings = run["settings"]
    if settings["requested"]:
        lines.append("  applied: " + (", ".join(f"{k}={v}" for k, v in
                                                settings["applied"].items()) or "nothing"))
    lines += [f"  ignored {key}: {reason}" for key, reason in settings["ignored"].items()]
    if run["dag"] is not None:
        lines.append(f"  DAG: {len(run['dag']['nodes'])} operators, "
                     f"{len(run['dag']['edges'])} edges")
    out = {k: v for k, v in run.items() if k not in ("plan", "query_text")}
    return finish_run(args.json, out, lines, status=run["status"], error=run.get("error"))
