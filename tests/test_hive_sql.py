"""The user's own queries on HiveServer2: ``jobgauge hive explain|run --sql|--file``.

The server is the session's one Spark Thrift server (``hive_server`` and ``hive``
in conftest.py, shared with test_hive.py), with TPC-H SF 0.01 loaded.
"""

from __future__ import annotations

import json

import pytest

from jobgauge.cli import main
from jobgauge.dag import QueryDag
from jobgauge.models._default import train_store_model
from jobgauge.profiler.runners._hive_record import query_workload, read_query
from jobgauge.profiler.readers._hive_session import tpch_database
from jobgauge.store import open_store

DATABASE = tpch_database("sf0.01")
# Revenue per region: a query of the user's own, over the TPC-H tables.
REVENUE = """
SELECT r_name, sum(o_totalprice) AS revenue
FROM orders JOIN customer ON o_custkey = c_custkey
            JOIN nation ON c_nationkey = n_nationkey
            JOIN region ON n_regionkey = r_regionkey
GROUP BY r_name ORDER BY revenue DESC;
"""


def _server(hive_server) -> list[str]:
    return ["--state-dir", hive_server.state_dir]


@pytest.fixture
def model_store(tmp_path, monkeypatch):
    """A store holding a quick model trained on the shipped runs (the prior)."""
    monkeypatch.delenv("JOBGAUGE_SHARED_DATASETS", raising=False)
    path = tmp_path / "runs.db"
    train_store_model(open_store(path), kind="tree")
    return path


# ------------------------------------------------------------------ with the server

@pytest.mark.spark
def test_explain_of_your_own_query_is_a_dag_with_its_joins(hive, hive_server, tmp_path,
                                                            capsys):
    assert main(["hive", "explain", "--sql", REVENUE, "--database", DATABASE,
                 *_server(hive_server), "--json"]) == 0
    dag = QueryDag.from_dict(json.loads(capsys.readouterr().out))
    kinds = [attrs["kind"] for _, attrs in dag.nodes(data=True)]
    assert kinds.count("join") == 3 and kinds.count("scan") == 4
    query = tmp_path / "revenue.sql"
    query.write_text(REVENUE)
    assert main(["hive", "explain", "--file", str(query), "--database", DATABASE,
                 *_server(hive_server)]) == 0
    text = capsys.readouterr().out
    assert "== Physical Plan ==" in text and "region" in text


@pytest.mark.spark
def test_explain_predict_gives_the_runtime_from_the_plan(hive, hive_server, model_store,
                                                         tpch_data_root, capsys):
    argv = ["--store", str(model_store), "hive", "explain", "--sql", REVENUE, "--database",
            DATABASE, "--predict", *_server(hive_server)]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    prediction = out["prediction"]
    assert prediction["workload"] == query_workload(REVENUE)
    assert 0 < prediction["low_s"] <= prediction["runtime_s"] <= prediction["high_s"]
    assert out["source_format"] == "spark-explain" and len(out["nodes"]) > 4
    assert main(argv) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith(f"predicted runtime of {query_workload(REVENUE)} on 1 x local[2]: ")
    # a TPC-H query is predicted at its scale, as the web form predicts it
    # (over the session's tables: a load from another data root would re-create them)
    assert main(["--store", str(model_store), "hive", "explain", "--query", "6", "--scale",
                 "0.01", "--data-root", str(tpch_data_root), "--predict",
                 *_server(hive_server), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["prediction"]["runtime_s"] > 0


@pytest.mark.spark
def test_run_of_your_own_query_is_recorded_under_its_job_key(hive, hive_server, tmp_path,
                                                             capsys):
    db = tmp_path / "runs.db"
    argv = ["--store", str(db), "hive", "run", "--database", DATABASE, *_server(hive_server),
            "--json"]
    assert main([*argv, "--sql", REVENUE]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["status"] == "succeeded" and first["rows"] == 5 and first["runtime_s"] > 0
    # the same query, written differently, groups with it; --workload names it
    assert main([*argv, "--sql", " ".join(REVENUE.upper().split())]) == 0
    capsys.readouterr()
    assert main([*argv, "--sql", REVENUE, "--workload", "revenue-by-region"]) == 0
    capsys.readouterr()
    store = open_store(db)
    runs = store.runs_list()
    assert [r["workload"] for r in runs] == ["revenue-by-region", query_workload(REVENUE),
                                             query_workload(REVENUE)]
    run = runs[-1]
    assert run["datasize"] == "" and run["time_kind"] == "query" and "r_name" in run["query_text"]
    with store.engine.connect() as connection:
        dag_rows = connection.execute(store.dags.select()).all()
    assert len(dag_rows) == 3
    recorded = json.loads(dag_rows[0].dag_json)
    assert sum(n["kind"] == "join" for n in recorded["nodes"]) == 3
    # the server runs on this machine: the DAG holds its scans' file bytes, and the run
    # the bytes of the data set they are of, as explain --predict and the form size a plan
    scans = [n for n in recorded["nodes"] if n["kind"] == "scan"]
    assert len(scans) == 4 and all(n.get("file_bytes", 0) > 0 for n in scans)
    assert run["input_bytes"] == recorded["graph"]["dataset_bytes"] > sum(
        n["file_bytes"] for n in scans)


@pytest.mark.spark
@pytest.mark.parametrize("command", ["explain", "run"])
def test_your_query_meets_the_planning_limits(hive, hive_server, tmp_path, capsys, command):
    db = tmp_path / "runs.db"
    assert main(["--store", str(db), "hive", command, "--sql",
                 "SELECT length(repeat('x', 2000000000))", *_server(hive_server)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "asks for 2,000,000,000 elements" in err[0]
    assert open_store(db).count_runs() == 0            # refused before it ran


@pytest.mark.spark
def test_a_query_the_server_cannot_plan_is_one_clear_line(hive, hive_server, capsys):
    assert main(["hive", "explain", "--sql", "SELECT no_such_column FROM region",
                 "--database", DATABASE, *_server(hive_server)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot be planned" in err[0] and "UNRESOLVED_COLUMN" in err[0]


# ------------------------------------------------------------------ without a server

def test_one_query_source_is_asked_for(capsys):
    for argv in (["--sql", "SELECT 1", "--query", "3"], []):
        with pytest.raises(SystemExit) as exit_info:
            main(["hive", "explain", *argv, "--port", "1"])
        assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert "argument --query: not allowed with argument --sql" in err
    assert "one of the arguments --query --sql --file is required" in err


@pytest.mark.parametrize("argv, message", [
    (["--file", "/nonexistent/q.sql"], "cannot read the query file /nonexistent/q.sql"),
    (["--sql", "  ;  "], "the query is empty"),
    (["--query", "3", "--database", "mine"], "--database and --workload are for your own"),
    (["--sql", "SELECT " + "(" * 300 + "1" + ")" * 300], "nests parentheses 300 deep"),
])
def test_bad_query_arguments_are_one_line_before_connecting(argv, message, capsys):
    assert main(["hive", "explain", *argv, "--port", "1"]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "cannot reach" not in err


def test_a_query_names_the_same_job_however_it_is_written(tmp_path):
    assert query_workload("select 1") == query_workload("  SELECT\n  1 ;") != \
        query_workload("select 2")
    file = tmp_path / "q.sql"
    file.write_text("select 1;\n")
    assert read_query(file=file) == read_query(sql="select 1") == "select 1"
    from jobgauge.webapp.requests import parse_estimate

    pasted = parse_estimate({"sql": "SELECT  1"}, known_workloads=[], catalog_names=[])
    assert pasted.workload == query_workload("select 1")   # the web form's key for it


@pytest.mark.spark
def test_explain_predict_answers_your_own_query_from_what_its_plan_reads(hive, hive_server,
                                                                        tmp_path, capsys,
                                                                        monkeypatch):
    """On a server of this machine the plan's scans name files it holds: each scan gets
    its files' bytes (a table that does not grow with the data, region, keeps its size),
    the query is asked at the data its tables hold, and the stage model answers it from
    the measured queries whose plans read most alike, naming them.  (Before, such a
    query was answered from the data set's size alone, with no size given.)"""
    monkeypatch.delenv("JOBGAUGE_SHARED_DATASETS", raising=False)
    path = tmp_path / "stage.db"
    train_store_model(open_store(path), kind="stage")
    argv = ["--store", str(path), "hive", "explain", "--sql", REVENUE, "--database",
            DATABASE, "--predict", *_server(hive_server)]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    scans = [node for node in out["nodes"] if node.get("kind") == "scan"]
    assert len(scans) == 4 and all(node["file_bytes"] > 0 for node in scans)
    growth = {node["location"].rpartition("/")[2]: node["file_growth"] for node in scans}
    assert growth["region.parquet"] == 0 and growth["orders.parquet"] > 0.9
    assert out["graph"]["dataset_bytes"] > sum(node["file_bytes"] for node in scans)
    prediction = out["prediction"]
    borrowed = prediction["answered_from"]
    assert len(borrowed) == 5 and all(name.startswith("tpch-q") for name in borrowed)
    assert 0 < prediction["low_s"] < prediction["runtime_s"] < prediction["high_s"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2] == ("never measured: answered from the measured queries whose plans "
                         "read most alike, " + ", ".join(borrowed))
    # run once (the model retrains after 5 runs): the answer is calibrated to the run and
    # the run counts as measured, as the web form and jobgauge predict answer
    assert prediction["outside_measured"] and prediction["calibrated_runs"] == 0
    assert main(["--store", str(path), "hive", "run", "--sql", REVENUE, "--database",
                 DATABASE, *_server(hive_server)]) == 0
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)["prediction"]
    assert again["calibrated_runs"] == 1 and again["history_factor"] != 1.0
    assert not again["outside_measured"] and again["note"] is None
    assert main(argv) == 0
    assert "calibrated to the 1 measured run of" in capsys.readouterr().out


@pytest.mark.spark
def test_the_web_services_plans_from_a_server_of_this_machine_know_what_they_read(
        hive, hive_server):
    """The web service's HiveServer2 planner sizes a pasted query's scans as the CLI
    does: each scan its files' bytes, the DAG the bytes of the data set they are of."""
    from jobgauge.models._stage import plan_reads
    from jobgauge.webapp._plans import HivePlans

    sql = REVENUE.replace("FROM orders", f"FROM {DATABASE}.orders")
    for table in ("customer", "nation", "region"):
        sql = sql.replace(f"JOIN {table} ", f"JOIN {DATABASE}.{table} ")
    reads = plan_reads(HivePlans(hive_server.host, hive_server.port).dag(sql).to_dict())
    tables = sorted(table for table, _, _ in reads["scans"])
    assert tables == ["customer.parquet", "nation.parquet", "orders.parquet", "region.parquet"]
    assert all(size > 0 for _, size, _ in reads["scans"]) and reads["joins"] == 3
    assert reads["dataset_bytes"] > sum(size for _, size, _ in reads["scans"])
