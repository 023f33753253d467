"""The store: the same contract on the embedded SQLite file and on a real PostgreSQL server."""

import json
from datetime import datetime, timezone

import pytest

from jobgauge.errors import StoreError
from jobgauge.profiler.readers.profile import Profile
from jobgauge.runtable import read_run_table
from jobgauge.store import open_store


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "sqlite":
        yield open_store(tmp_path / "store.db")
    else:
        url = request.getfixturevalue("postgres_url")
        store = open_store(url)
        with store.transaction() as connection:
            for table in reversed(store.metadata.sorted_tables):
                connection.execute(table.delete())
        yield store
    # nothing to clean for SQLite: tmp_path goes away


RUN = {
    "source": "local", "run_id": "r-1", "workload": "tpch-q1", "framework": "spark",
    "engine_version": "4.3.0", "query_text": "select 1", "datasize": "sf0.1",
    "input_bytes": 1000.0, "instance_type": "local[2]", "instance_count": 1, "vcpus": 2,
    "memory_gib": 1.0, "master": "local[2]", "executor_instances": 1, "executor_cores": 2,
    "executor_memory_mb": 1024, "time_kind": "query",
    "started_at": datetime(2026, 11, 21, 6, 0, tzinfo=timezone.utc),
    "ended_at": datetime(2026, 11, 21, 6, 0, 2, tzinfo=timezone.utc),
    "runtime_s": 2.0, "status": "succeeded",
}


def test_run_with_settings_profile_and_dag(store):
    profile = Profile(format="spark-eventlog", engine="spark", app_id="local-1", n_jobs=3,
                      n_stages=5, n_tasks=17, totals={"input_bytes": 1000})
    key = store.add_run(RUN, {"spark.sql.shuffle.partitions": "8"}, profile=profile,
                        dag={"nodes": [{"id": "a"}], "edges": []})
    listed = store.runs_list()
    assert [r["id"] for r in listed] == [key]
    assert listed[0]["config"] == {"spark.sql.shuffle.partitions": "8"}
    assert listed[0]["completed"] is True
    assert store.profiles_for(key)[0]["n_tasks"] == 17
    frame = store.run_frame(workload="tpch-q1")
    assert frame.loc[0, "config"] == {"spark.sql.shuffle.partitions": "8"}
    assert frame.loc[0, "runtime_s"] == 2.0


def test_a_filtered_run_frame_holds_only_the_chosen_runs_and_their_settings(store):
    """``run_frame(workload=...)`` reads the chosen runs' settings only (the what-if
    answer prices a job's own history on every request, whatever the store's size)."""
    mine = store.add_run(RUN, {"spark.sql.shuffle.partitions": "8"})
    other = store.add_run(dict(RUN, run_id="r-other", workload="tpch-q9"),
                          {"spark.sql.shuffle.partitions": "64", "spark.driver.memory": "4g"})
    frame = store.run_frame(workload="tpch-q1")
    assert frame["id"].tolist() == [mine]
    assert frame.loc[0, "config"] == {"spark.sql.shuffle.partitions": "8"}
    whole = store.run_frame()
    assert sorted(whole["id"]) == sorted([mine, other])
    assert whole.set_index("id").loc[other, "config"]["spark.driver.memory"] == "4g"
    assert store.run_frame(workload="tpch-q1", framework="hadoop").empty


def test_the_runs_mark_changes_with_the_chosen_runs_only(store):
    """``runs_mark`` (count, newest id) keeps a cluster's calibration until its runs
    change: another instance type's run leaves it, one of its own moves it."""
    assert store.runs_mark(instance_type="local[2]") == (0, None)
    first = store.add_run(RUN)
    mark = store.runs_mark(instance_type="local[2]", framework="spark")
    assert mark == (1, first)
    store.add_run(dict(RUN, run_id="r-2", instance_type="r5.xlarge"))
    assert store.runs_mark(instance_type="local[2]", framework="spark") == mark
    assert store.runs_mark(instance_type="local[2]", framework=None) == mark
    second = store.add_run(dict(RUN, run_id="r-3"))
    assert store.runs_mark(instance_type="local[2]", framework="spark") == (2, second)
    assert store.runs_mark() == (3, second)


def test_failed_run_is_kept_with_its_error(store):
    failed = dict(RUN, run_id="r-2", status="failed", runtime_s=None, error="OutOfMemoryError")
    store.add_run(failed, {})
    row = store.runs_list()[0]
    assert row["status"] == "failed" and row["completed"] is False
    assert row["error"] == "OutOfMemoryError" and row["runtime_s"] is None


def test_a_write_is_one_transaction(store, datasets_dir):
    rows = read_run_table(datasets_dir / "scout_multinode.csv")[:20]
    rows.append(dict(rows[0]))  # the duplicate makes the whole batch fail
    with pytest.raises(StoreError, match="constraint"):
        store.add_runs(rows)
    assert store.count_runs() == 0
    assert store.add_runs(rows[:20]) == (20, 0)
    assert store.add_runs(rows[:20], skip_existing=True) == (0, 20)
    assert store.counts_by_source() == {"scout-multinode": 20}


def _corpus_profiles(corpus_dir, names):
    from jobgauge.profiler.readers.eventlog import read_eventlog

    return [read_eventlog(corpus_dir / "spark-eventlogs" / "apache-spark" / name)
            for name in names]


def test_a_batch_of_profiled_runs_is_one_transaction(store, corpus_dir):
    profiles = _corpus_profiles(corpus_dir, ["local-1642039451826", "local-1596020211915",
                                             "local-1430917381534"])
    items = [(dict(RUN, run_id=p.app_id, runtime_s=p.runtime_s), {"spark.app.name": p.app_name},
              p, {"nodes": [{"id": i}], "edges": [], "source_format": p.format})
             for i, p in enumerate(profiles)]
    refused = dict(RUN, run_id="r-bad", status="exploded")
    with pytest.raises(StoreError, match="run status must be one of"):
        store.add_profiled_runs([*items[:2], (refused, {}, None, None)])
    assert store.count_runs() == 0                # the two good runs rolled back with it
    keys = store.add_profiled_runs(items[:2])
    assert all(isinstance(k, int) for k in keys)
    stored = store.profiles_for(keys[1])
    assert stored == [json.loads(json.dumps(profiles[1].to_dict(), default=str))]
    assert store.runs_list(limit=5)[0]["config"] == {"spark.app.name": profiles[1].app_name}
    with store.reading() as connection:       # each run with its own DAG
        dags = connection.execute(store.dags.select().order_by(store.dags.c.run)).all()
    assert [(d.run, d.source_format) for d in dags] == [(k, "spark-eventlog") for k in keys]
    # a run the store holds (committed before, or earlier in the batch) is skipped, not an error
    again = store.add_profiled_runs([items[0], items[2], items[2]])
    assert again[0] is None and isinstance(again[1], int) and again[2] is None
    assert store.count_runs() == 3
    with store.reading() as connection:
        assert len(connection.execute(store.profiles.select()).all()) == 3


def test_an_older_store_gains_the_wall_time_column(store):
    import sqlalchemy as sa

    with store.transaction() as connection:         # a store made before wall_s existed
        connection.execute(sa.text("ALTER TABLE runs DROP COLUMN wall_s"))
    store.close()
    reopened = open_store(store.url)
    reopened.add_run(dict(RUN, time_kind="wall", runtime_s=3.5, wall_s=3.5), {})
    row = reopened.runs_list()[0]
    assert (row["time_kind"], row["runtime_s"], row["wall_s"]) == ("wall", 3.5, 3.5)
    assert open_store(store.url).runs_list()[0]["wall_s"] == 3.5     # added once


def test_a_runs_load_at_its_start_is_kept_and_an_older_store_gains_its_columns(store, capsys):
    import sqlalchemy as sa

    with store.transaction() as connection:    # a store made before the load was kept
        for column in ("load_at_start", "cpu_time_s", "quiet_start", "first_runtime_s",
                       "host_cores"):
            connection.execute(sa.text(f"ALTER TABLE runs DROP COLUMN {column}"))
    store.close()
    reopened = open_store(store.url)
    reopened.add_run(dict(RUN, run_id="busy", load_at_start=1.73, cpu_time_s=4.2,
                          quiet_start=False, host_cores=2), {})
    reopened.add_run(dict(RUN, run_id="unguarded"), {})
    frame = reopened.run_frame().set_index("run_id")
    assert frame.loc["busy", ["load_at_start", "cpu_time_s", "host_cores"]].tolist() == \
        [1.73, 4.2, 2]
    quiet = frame.loc["busy", "quiet_start"]
    assert quiet is not None and not quiet
    # jobgauge runs lists it with its load, said busy; a run without the guard's reading
    # has none
    from jobgauge.cli import main

    assert main(["--store", store.url, "runs"]) == 0
    listed = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    by_id = dict(zip(frame["id"].astype(str), frame.index))
    assert {by_id[key]: line.endswith("1.73 busy") for key, line in listed.items()} == \
        {"busy": True, "unguarded": False}
    unguarded = next(key for key, run_id in by_id.items() if run_id == "unguarded")
    assert listed[unguarded].endswith("succeeded       2.00")
    assert frame.loc["unguarded", ["load_at_start", "quiet_start"]].isna().all()


def test_a_thrift_servers_runs_recorded_as_spark_thrift_become_spark_jobs(store):
    """A store written before ``hive run`` recorded a Spark Thrift server's queries as
    Spark jobs: opened again, its ``spark-thrift`` runs are Spark runs of the same job,
    the runs the web form and ``hive explain --predict`` calibrate the job's answers to;
    the others keep their framework."""
    store.add_run(dict(RUN, run_id="thrift-1", workload="sql-abc", framework="spark-thrift"), {})
    store.add_run(dict(RUN, run_id="hive-1", workload="sql-abc", framework="hive"), {})
    store.close()
    reopened = open_store(store.url)
    frameworks = {r["run_id"]: r["framework"] for r in reopened.runs_list()}
    assert frameworks == {"thrift-1": "spark", "hive-1": "hive"}
    assert reopened.count_runs(workload="sql-abc", framework="spark") == 1
    assert reopened.count_runs(framework="spark-thrift") == 0


def test_bad_runs_are_refused(store):
    with pytest.raises(StoreError, match="a run needs workload"):
        store.add_run(dict(RUN, workload=""), {})
    with pytest.raises(StoreError, match="run status must be one of"):
        store.add_run(dict(RUN, status="exploded"), {})
    assert store.count_runs() == 0


def test_models_round_trip(store):
    with pytest.raises(StoreError, match="no trained model"):
        store.load_model()
    store.save_model("default", "forest", b"first", {"mdape": 0.1})
    store.save_model("default", "forest", b"second", {"mdape": 0.05})
    meta, payload = store.load_model("default")
    assert payload == b"second" and meta["metrics"] == {"mdape": 0.05}
    assert [m["kind"] for m in store.list_models()] == ["forest", "forest"]


def test_default_location_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("JOBGAUGE_STORE", str(tmp_path / "env.db"))
    store = open_store()
    assert store.url == f"sqlite:///{tmp_path / 'env.db'}"
    assert (tmp_path / "env.db").exists()


def test_unreachable_database_is_a_store_error():
    with pytest.raises(StoreError, match="cannot open store"):
        open_store("postgresql+psycopg2://nobody@127.0.0.1:1/none")
    # a URL without a driver takes the one jobgauge installs: SQLAlchemy 2.1 asked for
    # psycopg 3 ("pip install psycopg[binary]") and did not know postgres:// at all
    for url in ("postgresql://nobody@127.0.0.1:1/none", "postgres://nobody@127.0.0.1:1/none"):
        with pytest.raises(StoreError, match=r"cannot open store postgresql\+psycopg2://nobody"
                                             r"@127\.0\.0\.1:1/none: OperationalError"):
            open_store(url)
