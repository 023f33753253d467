"""Live Hive: a real Spark Thrift server (HiveServer2 protocol) reached with pyhive.

One server is started for this file through ``jobgauge hive start`` on a free
port with a temporary state folder, and stopped through ``jobgauge hive stop``
in teardown (and killed if that failed), so no JVM outlives the tests.
"""

from __future__ import annotations

import itertools
import json
import socket
import time
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from jobgauge.cli import main
from jobgauge.dag import QueryDag
from jobgauge.errors import GaugeError, UsageError
from jobgauge.profiler.hive import (
    HiveConnectionError, HiveQueryError, HiveServerError, HiveSession, read_state, run_query,
    server_command, start_server, translate_knobs,
)
from jobgauge.profiler.workloads._tpch_queries import QUERIES, TABLES
from jobgauge.store import open_store


# The Thrift server fixtures (hive_server, hive) live in conftest.py, shared with
# test_hive_sql.py so one server serves both files.
from conftest import FAST_START, _alive, _free_port  # noqa: E402


# -- with the server ---------------------------------------------------------------
@pytest.mark.spark
def test_status_and_a_second_start(hive_server, capsys):
    state_dir = hive_server.state_dir
    assert main(["hive", "status", "--state-dir", state_dir, "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["running"] and status["answering"] and status["port"] == hive_server.port
    assert Path(status["log_path"]).is_file()
    # the metastore and the warehouse live in the state folder
    assert (Path(state_dir) / "metastore_db").is_dir()
    jvm = Path(f"/proc/{hive_server.pid}/cmdline").read_bytes().decode().split("\0")
    assert f"-Dderby.system.home={state_dir}" in jvm and FAST_START.split()[0] in jvm
    assert main(["hive", "start", "--port", str(_free_port()), "--state-dir", state_dir]) == 1
    err = capsys.readouterr().err
    assert f"already running on 127.0.0.1:{hive_server.port}" in err and "Traceback" not in err


@pytest.mark.spark
def test_pyhive_connects_with_its_defaults(hive_server):
    from pyhive import hive

    connection = hive.connect(host="127.0.0.1", port=hive_server.port)
    try:
        cursor = connection.cursor()
        cursor.execute("SELECT 1 + 1")
        assert cursor.fetchall() == [(2,)]
    finally:
        connection.close()


@pytest.mark.spark
def test_load_tpch_gives_the_parquet_row_counts(hive, tpch_data_root):
    folder = tpch_data_root / "tpch" / "sf0.01"
    assert hive.engine == "spark-thrift" and hive.engine_version.startswith("4.")
    assert hive.get("spark.sql.shuffle.partitions") == "8"  # --conf of hive start reached it
    lineitem = pq.ParquetFile(folder / "lineitem.parquet").metadata.num_rows
    assert hive.execute("SELECT count(*) FROM lineitem") == [(lineitem,)]
    assert hive.execute("SELECT count(*) FROM tpch_sf0_01.nation") == [(25,)]
    again = hive.load_tpch("0.01", tpch_data_root)  # idempotent: nothing re-created
    assert again["created"] == [] and sorted(again["kept"]) == sorted(TABLES)


@pytest.mark.spark
def test_explain_q3_is_a_dag_with_joins(hive, hive_server, tpch_data_root, capsys):
    text = hive.explain(QUERIES[3])
    dag = QueryDag.from_spark_plan(text)
    kinds = [attrs["kind"] for _, attrs in dag.nodes(data=True)]
    assert kinds.count("join") == 2 and kinds.count("scan") == 3
    code = main(["hive", "explain", "--query", "3", "--scale", "0.01", "--data-root",
                 str(tpch_data_root), "--state-dir", hive_server.state_dir, "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["source_format"] == "spark-explain"
    assert sum(node["kind"] == "join" for node in out["nodes"]) == 2
    with pytest.raises(HiveQueryError, match=r"cannot be planned: .*UNRESOLVED_COLUMN"):
        hive.explain("SELECT no_such_column FROM lineitem")


@pytest.mark.spark
def test_cli_run_of_q6_with_knobs_is_recorded_with_its_dag(hive_server, tpch_data_root, tmp_path,
                                                           capsys):
    db = tmp_path / "runs.db"
    code = main(["--store", str(db), "hive", "run", "--query", "6", "--scale", "0.01",
                 "--data-root", str(tpch_data_root), "--state-dir", hive_server.state_dir,
                 "--set", "hive.exec.reducers.max=2", "--set", "hive.exec.parallel=true", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    assert out["status"] == "succeeded" and out["runtime_s"] > 0 and out["rows"] == 1
    li = pd.read_parquet(tpch_data_root / "tpch" / "sf0.01" / "lineitem.parquet")
    ship = pd.to_datetime(li["l_shipdate"])
    chosen = li[(ship >= "1994-01-01") & (ship < "1995-01-01")
                & (li["l_discount"] >= Decimal("0.05")) & (li["l_discount"] <= Decimal("0.07"))
                & (li["l_quantity"] < 24)]
    assert Decimal(out["first"][0]) == sum(chosen["l_extendedprice"] * chosen["l_discount"])
    assert out["settings"]["applied"] == {"spark.sql.shuffle.partitions": "2"}
    assert "hive.exec.parallel" in out["settings"]["ignored"]
    store = open_store(db)
    run = store.runs_list()[0]
    assert (run["source"], run["workload"], run["framework"], run["datasize"]) == (
        "hive-local", "tpch-q6", "spark", "sf0.01")   # Spark SQL, as the corpus's
    assert run["instance_type"] == "local[2]" and run["time_kind"] == "query"
    assert run["engine_version"].startswith("4.") and "l_discount" in run["query_text"]
    assert run["input_bytes"] > 1_000_000 and run["status"] == "succeeded"
    assert run["config"] == {"hive.exec.reducers.max": "2", "hive.exec.parallel": "true",
                             "spark.sql.shuffle.partitions": "2"}
    with store.engine.connect() as connection:
        dag_rows = connection.execute(store.dags.select()).all()
    assert len(dag_rows) == 1 and dag_rows[0].run == run["id"]
    dag = QueryDag.from_dict(json.loads(dag_rows[0].dag_json))
    assert dag_rows[0].source_format == "spark-explain"
    assert {"scan", "aggregate", "exchange"} <= {a["kind"] for _, a in dag.nodes(data=True)}


@pytest.mark.spark
def test_a_translated_hive_knob_changes_the_plan(hive, tmp_path):
    store = open_store(tmp_path / "runs.db")
    run = run_query(hive, "tpch-q3", QUERIES[3], "sf0.01", {"hive.auto.convert.join": "false"},
                    store, timeout_s=300)
    try:
        assert run["status"] == "succeeded" and run["rows"] == 10
        assert hive.get("spark.sql.autoBroadcastJoinThreshold") == "-1"
        operators = {op["type"] for node in run["dag"]["nodes"] for op in node["operators"]}
        assert "SortMergeJoin" in operators and "BroadcastHashJoin" not in operators
        assert store.runs_list()[0]["config"] == {
            "hive.auto.convert.join": "false", "spark.sql.autoBroadcastJoinThreshold": "-1"}
    finally:
        hive.set({"spark.sql.autoBroadcastJoinThreshold": "10485760"})  # Spark's default


@pytest.mark.spark
def test_a_bad_query_is_recorded_as_failed_with_the_server_message(hive, tmp_path):
    result = hive.run("SELECT no_such_column FROM lineitem", timeout_s=120)
    assert result["status"] == "failed" and result["rows"] is None
    assert "UNRESOLVED_COLUMN" in result["error"] and "no_such_column" in result["error"]
    store = open_store(tmp_path / "runs.db")
    run = run_query(hive, "adhoc", "SELEC 1", "none", None, store, timeout_s=120)
    assert run["status"] == "failed" and run["plan"] is None and run["dag"] is None
    assert "PARSE_SYNTAX_ERROR" in run["error"]
    assert store.runs_list()[0]["status"] == "failed"
    with pytest.raises(HiveQueryError, match="CANNOT_MODIFY_CONFIG"):
        hive.set({"spark.executor.memory": "2g"})  # fixed when the server started


@pytest.mark.spark
def test_a_query_past_its_timeout_is_cancelled(hive):
    result = hive.run("SELECT count(*) FROM lineitem a CROSS JOIN lineitem b", timeout_s=2)
    assert result["status"] == "timed_out" and "cancelled" in result["error"]
    assert 2 <= result["runtime_s"] < 10
    started = time.monotonic()
    assert hive.run("SELECT count(*) FROM nation", timeout_s=60)["first"] == ["25"]
    assert time.monotonic() - started < 60  # the cancelled query no longer holds the cores


@pytest.mark.parametrize("sql, message", [
    ("SELECT " + "(" * 3000 + "1" + ")" * 3000, "nests parentheses 3000 deep"),
    ("SELECT length(repeat('x', 2000000000))", "asks for 2,000,000,000 elements"),
    ("SELECT " + "+".join(["1"] * 5000), "too deeply nested or too complex"),   # the server's
])
def test_explain_past_the_planning_limits_is_a_usage_error(hive, sql, message):
    with pytest.raises(UsageError, match=message):
        hive.explain(sql)
    assert "Project" in hive.explain("SELECT 1")    # the server still plans


def test_statements_on_the_server_have_a_time_limit(hive):
    # explain() plans with execute(..., timeout_s=PLAN_TIMEOUT_S); planning is too quick
    # to be caught, so a slow statement shows the limit at work.
    started = time.monotonic()
    with pytest.raises(HiveQueryError, match="took longer than 2 s and was cancelled"):
        hive.execute("SELECT count(*) FROM lineitem a CROSS JOIN lineitem b", timeout_s=2)
    assert time.monotonic() - started < 10
    assert hive.execute("SELECT count(*) FROM nation", timeout_s=60) == [(25,)]


# -- without a server --------------------------------------------------------------
def test_an_unreachable_port_is_one_clear_error(capsys):
    port = _free_port()
    with pytest.raises(HiveConnectionError, match=f"cannot reach HiveServer2 at 127.0.0.1:{port}"):
        HiveSession(port=port, connect_timeout_s=2)
    assert issubclass(HiveConnectionError, GaugeError)
    assert main(["hive", "explain", "--query", "3", "--host", "127.0.0.1", "--port",
                 str(port)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"jobgauge: error: cannot reach HiveServer2 at 127.0.0.1:{port}")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_stop_and_status_when_nothing_runs(tmp_path, capsys):
    assert main(["hive", "stop", "--state-dir", str(tmp_path)]) == 0
    assert "no Hive server is running" in capsys.readouterr().out
    assert main(["hive", "status", "--state-dir", str(tmp_path)]) == 1
    # a state file left by a server that died is cleaned up, not trusted
    (tmp_path / "server.json").write_text(json.dumps({
        "pid": 2 ** 22 + 1, "host": "127.0.0.1", "port": 1, "master": "local[2]",
        "state_dir": str(tmp_path), "log_path": "x", "started_at": "2026-01-01T00:00:00+00:00",
        "startup_s": 1.0}))
    assert read_state(tmp_path) is None and not (tmp_path / "server.json").exists()
    (tmp_path / "server.json").write_text("{not json")
    with pytest.raises(HiveServerError, match="not a jobgauge Hive server state file"):
        read_state(tmp_path)


def test_start_refuses_a_port_in_use(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(UsageError, match="already in use"):
            start_server(port=busy.getsockname()[1], state_dir=tmp_path)
    assert not (tmp_path / "server.json").exists()


def test_server_command_keeps_everything_in_the_state_folder(tmp_path):
    command = server_command(spark_home="/opt/spark", port=10123, state_dir=tmp_path,
                             master="local[2]", conf={"spark.driver.memory": "2g",
                                                      "hive.server2.authentication": "NOSASL"})
    assert command[0] == "/opt/spark/bin/spark-submit" and command[-1] == "spark-internal"
    pairs = list(itertools.pairwise(command))
    assert ("--hiveconf", "hive.server2.thrift.port=10123") in pairs
    assert ("--hiveconf", "hive.server2.authentication=NOSASL") in pairs
    assert ("--conf", "spark.driver.memory=2g") in pairs
    derby_url = (f"javax.jdo.option.ConnectionURL=jdbc:derby:;databaseName="
                 f"{tmp_path.resolve()}/metastore_db;create=true")
    assert ("--hiveconf", derby_url) in pairs
    assert ("--conf", f"spark.sql.warehouse.dir={tmp_path.resolve()}/spark-warehouse") in pairs
    assert f"-Dderby.system.home={tmp_path.resolve()}" in command[command.index(
        "--driver-java-options") + 1]
    with pytest.raises(UsageError, match=r"must start with spark\., hive\. or javax\.jdo\."):
        server_command(spark_home="/x", port=1, state_dir=tmp_path, conf={"mapred.x": "1"})
    with pytest.raises(UsageError, match="use --port"):
        server_command(spark_home="/x", port=1, state_dir=tmp_path,
                       conf={"hive.server2.thrift.port": "5"})


@pytest.mark.parametrize("knobs, applied, ignored", [
    ({"hive.auto.convert.join": "false"}, {"spark.sql.autoBroadcastJoinThreshold": "-1"}, []),
    ({"hive.auto.convert.join": "true", "hive.auto.convert.join.noconditionaltask.size": "2000"},
     {"spark.sql.autoBroadcastJoinThreshold": "2000"}, []),
    ({"hive.auto.convert.join": "false", "hive.auto.convert.join.noconditionaltask.size": "2000"},
     {"spark.sql.autoBroadcastJoinThreshold": "-1"},
     ["hive.auto.convert.join.noconditionaltask.size"]),
    ({"hive.exec.reducers.bytes.per.reducer": "1048576"},
     {"spark.sql.adaptive.advisoryPartitionSizeInBytes": "1048576"}, []),
    ({"hive.exec.reducers.max": "8"}, {"spark.sql.shuffle.partitions": "8"}, []),
    ({"hive.exec.reducers.max": "500"}, {"spark.sql.shuffle.partitions": "200"}, []),
    ({"hive.exec.reducers.max": "4", "spark.sql.shuffle.partitions": "16"},
     {"spark.sql.shuffle.partitions": "4"}, []),
    ({"mapred.reduce.tasks": "-1", "hive.exec.parallel": "true", "hive.optimize.skewjoin": "on"},
     {"spark.sql.adaptive.skewJoin.enabled": "true"}, ["mapred.reduce.tasks",
                                                       "hive.exec.parallel"]),
    ({"spark.sql.autoBroadcastJoinThreshold": "5", "hive.auto.convert.join": "false",
      "hive.exec.dynamic.partition.mode": "nonstrict"},
     {"spark.sql.autoBroadcastJoinThreshold": "5", "hive.exec.dynamic.partition.mode": "nonstrict"},
     []),
])
def test_hive_knobs_become_spark_settings(knobs, applied, ignored):
    plan = translate_knobs(knobs, shuffle_partitions=200)
    assert plan.applied == applied and sorted(plan.ignored) == sorted(ignored)
    assert plan.requested == knobs
    assert plan.settings() == {**knobs, **applied}


def test_a_real_hive_server_gets_the_knobs_as_given():
    knobs = {"hive.exec.parallel": "true", "hive.exec.reducers.max": "8"}
    assert translate_knobs(knobs, engine="hive").applied == knobs


@pytest.mark.parametrize("knobs, message", [
    ({"hive.auto.convert.join": "maybe"}, "hive.auto.convert.join must be true or false"),
    ({"hive.exec.reducers.max": "0"}, "hive.exec.reducers.max must be >= 1"),
    ({"hive.exec.reducers.bytes.per.reducer": "64MB"}, "must be a whole number"),
    ({"bad key": "1"}, "is not a setting name"),
    ({"spark.sql.shuffle.partitions": "4; DROP TABLE lineitem"}, "without ';'"),
    ({"hive.exec.reducers.max": "4"}, "needs the server's current"),
])
def test_bad_knobs_are_refused(knobs, message):
    with pytest.raises(UsageError, match=message):
        translate_knobs(knobs)


@pytest.mark.parametrize("kwargs, message", [
    ({"auth": "PAM"}, "auth must be one of"),
    ({"password": "secret"}, "password is given with auth LDAP or CUSTOM"),
    ({"auth": "LDAP"}, "password is given with auth LDAP or CUSTOM"),
    ({"auth": "KERBEROS"}, "needs kerberos_service_name"),
    ({"port": 0}, "port must be 1..65535"),
])
def test_session_arguments_are_checked_before_connecting(kwargs, message):
    with pytest.raises(UsageError, match=message):
        HiveSession(**kwargs)


@pytest.mark.spark
def test_a_server_that_does_not_answer_in_time_is_stopped(tmp_path):
    with pytest.raises(HiveServerError, match=r"did not answer on 127.0.0.1:\d+ within 2 s; "
                                              r"last lines of .*server.log"):
        start_server(port=_free_port(), state_dir=tmp_path, timeout_s=2, progress=False)
    assert not (tmp_path / "server.json").exists()
    running = [p for p in Path("/proc").glob("[0-9]*/cmdline") if _alive(int(p.parent.name))
               and str(tmp_path) in p.read_bytes().decode("utf-8", "replace")]
    assert running == []
