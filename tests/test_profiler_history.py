"""Spark History Server REST -> Profile, against a real History Server.

The module fixture starts Spark 4.3's own History Server (pyspark's sbin
scripts) over the corpus event logs plus a log Spark wrote here, waits until
it lists every application, and stops it at the end.  Each application read
over REST must agree with ``read_eventlog`` of the same log.
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import subprocess
import textwrap
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
from jobgauge.profiler.readers.eventlog import read_eventlog
from jobgauge.profiler.readers.history import read_history
from jobgauge.profiler.readers.sparkrest import SparkRestClient, parse_url

from jobgauge.cli import main
from jobgauge.errors import GaugeError, ParseError

from conftest import _free_port, run_spark_script


def _corpus_log_files(corpus_dir: Path) -> list[Path]:
    """Every corpus event log file.  Spark 4.3's History Server no longer reads the Spark
    1.2 folder layout (local-1426533911241/EVENT_LOG_1), so that one log is left out here."""
    return sorted(p for p in (corpus_dir / "spark-eventlogs").glob("*/*") if p.is_file())


_WRITE_LOG = textwrap.dedent('''
    import sys
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[2]").appName("jobgauge-history")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.eventLog.enabled", "true").config("spark.eventLog.dir", sys.argv[1])
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("OFF")
    df = spark.range(0, 3000, numPartitions=3)
    df.groupBy((df.id % 5).alias("k")).count().collect()
    df.selectExpr("id", "id % 7 AS k").write.parquet(sys.argv[2])
    spark.read.parquet(sys.argv[2]).groupBy("k").count().collect()
    # a join: the table's scan runs in more than one task, the one-file dimension's in one
    spark.range(0, 7).selectExpr("id AS k", "id * 10 AS v").coalesce(1).write.parquet(sys.argv[3])
    spark.read.parquet(sys.argv[2]).join(spark.read.parquet(sys.argv[3]), "k") \
        .groupBy("v").count().collect()
    try:
        spark.range(0, 10, numPartitions=2).selectExpr("raise_error('jobgauge boom')").collect()
    except Exception:
        pass
    print("APP=" + spark.sparkContext.applicationId)
    spark.stop()
''')


def _listed(base: str) -> set[str]:
    with urllib.request.urlopen(base + "/api/v1/applications", timeout=5) as reply:
        return {app["id"] for app in json.load(reply)}


@pytest.fixture(scope="module")
def history(tmp_path_factory, corpus_dir):
    """A running Spark History Server over the corpus logs and a Spark 4.3 log."""
    import pyspark

    root = tmp_path_factory.mktemp("history")
    logs, run_dir = root / "logs", root / "run"
    logs.mkdir()
    run_dir.mkdir()
    for path in _corpus_log_files(corpus_dir):
        shutil.copyfile(path, logs / path.name)
    table, dimension = root / "table.parquet", root / "dimension.parquet"
    printed = run_spark_script(_WRITE_LOG, root / "write_log.py", logs,
                               "Spark could not write the log", table, dimension)
    new_app = printed.split("APP=")[-1].strip()

    expected = {read_eventlog(p).app_id: p for p in logs.iterdir()}
    assert new_app in expected
    spark_home = os.path.dirname(pyspark.__file__)
    port = _free_port()
    env = {**os.environ, "SPARK_HOME": spark_home, "SPARK_LOG_DIR": str(run_dir),
           "SPARK_PID_DIR": str(run_dir),
           "SPARK_HISTORY_OPTS": f"-Dspark.history.fs.logDirectory=file://{logs} "
                                 f"-Dspark.history.ui.port={port} "
                                 "-Dspark.history.fs.update.interval=1s"}
    subprocess.run(["bash", os.path.join(spark_home, "sbin", "start-history-server.sh")],
                   env=env, check=True, capture_output=True, timeout=120)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 240
        listed: set[str] = set()
        while time.monotonic() < deadline:
            try:
                listed = _listed(base)
            except OSError:
                listed = set()
            if set(expected) <= listed:
                break
            time.sleep(1)
        else:
            logs_text = "".join(p.read_text()[-2000:] for p in run_dir.glob("*.out"))
            pytest.fail(f"History Server listed {sorted(listed)} of {sorted(expected)} "
                        f"in time:\n{logs_text}")
        yield {"base": base, "logs": expected, "new_app": new_app, "table": table,
               "dimension": dimension}
    finally:
        subprocess.run(["bash", os.path.join(spark_home, "sbin", "stop-history-server.sh")],
                       env=env, capture_output=True, timeout=120, check=False)


@pytest.mark.spark
def test_rest_profile_agrees_with_the_event_log(history):
    for app_id, path in sorted(history["logs"].items()):
        from_log = read_eventlog(path)
        from_rest = read_history(history["base"], app_id)
        assert from_rest.format == "spark-history" and from_rest.engine == "spark"
        for key in ("app_id", "app_name", "user", "engine_version", "status", "start_ms",
                    "end_ms", "runtime_s", "n_jobs", "n_stages", "n_tasks",
                    "n_stage_attempts", "n_failed_tasks", "available_core_seconds"):
            assert getattr(from_rest, key) == getattr(from_log, key), (app_id, key)
        for metric, value in from_log.totals.items():
            if value is None:    # an old log never recorded it: REST says 0 (None: no stage)
                assert from_rest.totals[metric] in (0, None), (app_id, metric)
            else:
                assert from_rest.totals[metric] == pytest.approx(value), (app_id, metric)
        assert [(j["job_id"], j["stage_ids"], j["result"], j["submission_ms"],
                 j["completion_ms"], j["skipped_stage_ids"], j["sql_execution_id"])
                for j in from_rest.jobs] == \
               [(j["job_id"], j["stage_ids"], j["result"], j["submission_ms"],
                 j["completion_ms"], j["skipped_stage_ids"], j["sql_execution_id"])
                for j in from_log.jobs]
        assert len(from_rest.stages) == len(from_log.stages)
        for rest, log in zip(from_rest.stages, from_log.stages):
            for key in ("stage_id", "attempt", "name", "status", "n_tasks",
                        "n_task_attempts", "submission_ms", "completion_ms", "job_ids"):
                assert rest[key] == log[key], (app_id, key)
            if log["n_task_attempts"] == log["n_succeeded_tasks"]:   # see history.py
                for key in ("task_duration_p50_ms", "task_duration_p90_ms",
                            "task_duration_p99_ms", "task_duration_max_ms", "task_skew"):
                    assert rest[key] == log[key], (app_id, rest["stage_id"], key)
        assert [(s["execution_id"], s["description"], s["job_ids"]) for s in from_rest.sql] \
            == [(s["execution_id"], s["description"], s["job_ids"]) for s in from_log.sql]
        redacted = {k for k, v in from_rest.config.items() if v == "*********(redacted)"}
        assert from_rest.config.keys() == from_log.config.keys()
        assert {k: v for k, v in from_rest.config.items() if k not in redacted} == \
            {k: v for k, v in from_log.config.items() if k not in redacted}
        # the bytes of the files its scans read: the UI's text, a tenth of a unit
        if from_log.files_read_bytes is None:
            assert from_rest.files_read_bytes is None, app_id
        else:
            assert from_rest.files_read_bytes == pytest.approx(from_log.files_read_bytes,
                                                               rel=1e-3), app_id
        # the files each stage scanned, where the log names them
        for rest, log in zip(from_rest.stages, from_log.stages):
            if log.get("file_bytes") and rest.get("file_bytes"):
                assert _same_ui_size(rest["file_bytes"], log["file_bytes"]), (app_id, log)
        # what REST cannot tell stays None
        assert from_rest.critical_path_s is None and from_rest.idle_core_seconds is None


def _same_ui_size(shown: float, exact: float) -> bool:
    """Whether ``shown`` (a size the UI printed to a tenth of its unit) is ``exact``."""
    unit = 1024.0 ** max(0, int(math.log(max(exact, 1.0), 1024)))
    return abs(shown - exact) <= 0.05 * unit + 1e-6


@pytest.mark.spark
def test_rest_names_the_files_each_stage_scanned(history):
    """The REST API names a scan's stage only in its metrics' text, and only for a stage
    of more than one task; the one-task scan is paired by rank.  Either way each stage
    gets the bytes of the files it scanned, as the event log's accumulators say."""
    app = history["new_app"]
    from_log = read_eventlog(history["logs"][app])
    from_rest = read_history(history["base"], app)
    logged = {s["stage_id"]: (s["n_tasks"], s["file_bytes"]) for s in from_log.stages
              if s.get("file_bytes")}
    named = {s["stage_id"]: s["file_bytes"] for s in from_rest.stages if s.get("file_bytes")}
    assert set(named) == set(logged)
    tasks = sorted(n for n, _ in logged.values())
    assert len(tasks) == 3 and tasks[0] == 1 and tasks[-1] > 1   # tagged and paired
    for stage_id, (_, exact) in logged.items():
        assert _same_ui_size(named[stage_id], exact), stage_id


@pytest.mark.spark
def test_rest_profile_of_a_spark_4_app_with_a_failed_job(history):
    profile = read_history(f"{history['base']}/api/v1/applications/{history['new_app']}")
    assert profile.engine_version == "4.3.0"
    assert [j["result"] for j in profile.jobs].count("failed") == 1
    assert profile.n_failed_tasks >= 1
    assert profile.sql and "== Physical Plan ==" in profile.sql[0]["physical_plan_description"]
    assert profile.executors[0]["cores"] == 2
    assert profile.cores_timeline[0]["cores"] == 2
    # its input is the Parquet files it read (the table twice, the dimension once), not
    # the few bytes the tasks' counters count
    table, dimension = (sum(p.stat().st_size for p in history[name].glob("*.parquet"))
                        for name in ("table", "dimension"))
    assert profile.files_read_bytes == pytest.approx(2 * table + dimension, rel=1e-3)
    assert profile.input_size() == profile.files_read_bytes


@pytest.mark.spark
def test_url_forms_and_attempts(history):
    base = history["base"]
    app = "application_1536831636016_59384"          # a YARN app with attempt "1"
    forms = [read_history(base, app),
             read_history(f"{base}/api/v1/applications/{app}"),
             read_history(f"{base}/api/v1/applications/{app}/1/jobs"),
             read_history(f"{base}/history/{app}/1/jobs/")]
    assert {(p.app_id, p.n_tasks, p.runtime_s) for p in forms} == {(app, 100, 15.138)}
    with pytest.raises(ParseError, match=r"application .* has no attempt '7'"):
        read_history(f"{base}/api/v1/applications/{app}/7")


@pytest.mark.spark
def test_unknown_application_is_a_clear_error(history):
    with pytest.raises(ParseError, match=r"no application 'app-nope' on the History Server "
                                         r"\(expected one of its application ids \(.*local-"):
        read_history(history["base"], "app-nope")
    with pytest.raises(ParseError, match=r"URL names no application"):
        read_history(history["base"])


@pytest.mark.spark
def test_cli_reads_history_urls(history, capsys):
    url = f"{history['base']}/api/v1/applications/{history['new_app']}"
    assert main(["profile", "--json", url, f"{history['base']}/api/v1/applications/nope"]) == 1
    out, err = capsys.readouterr()
    first, second = (json.loads(line) for line in out.splitlines())
    assert first["format"] == "spark-history" and first["app_id"] == history["new_app"]
    assert first["n_tasks"] == read_eventlog(history["logs"][history["new_app"]]).n_tasks
    assert second["error"].startswith(f"{history['base']}/api/v1/applications/nope")
    assert "no application 'nope'" in err


@pytest.mark.spark
def test_application_filters_of_the_real_server(history):
    client = SparkRestClient.from_url(history["base"], timeout_s=10)
    everything = client.applications()
    assert {app["id"] for app in everything} == set(history["logs"])
    assert len(client.applications(limit=3)) == 3
    assert client.applications(status="running") == []
    assert {app["id"] for app in client.applications(status="completed")} == set(history["logs"])
    assert client.applications(min_end_date="2100-01-01") == []
    # ended since 2021: the Spark 3.3 corpus log and the one Spark 4.3 wrote here
    recent = {app["id"] for app in client.applications(min_end_date="2021-01-01")}
    assert {"local-1642039451826", history["new_app"]} <= recent
    assert "local-1422981780767" not in recent
    sql = client.sql_executions("local-1596020211915", page_size=5)
    assert [entry["id"] for entry in sql] == list(range(24))
    archive = client.event_logs(history["new_app"])
    with zipfile.ZipFile(io.BytesIO(archive)) as logs:
        assert any(history["new_app"] in name for name in logs.namelist())
    assert client.event_logs("app-nope") is None


def test_unreachable_server_is_a_clear_error():
    port = _free_port()                                 # nothing listens there
    with pytest.raises(ParseError, match=rf"127\.0\.0\.1:{port}/api/v1/applications/app-1: "
                                         r"cannot reach the Spark History Server"):
        read_history(f"http://127.0.0.1:{port}/api/v1/applications/app-1", timeout=5)


def test_not_a_history_url():
    with pytest.raises(ParseError, match="not an http"):
        read_history("ftp://host/api/v1/applications/x")
    with pytest.raises(GaugeError, match="URL names application 'a' but 'b' was asked for"):
        read_history("http://host:18080/api/v1/applications/a", "b")


@pytest.mark.parametrize("url, expected", [
    ("http://h:18080/api/v1/applications/app-1", ("http://h:18080/api/v1", "app-1", None)),
    ("http://h:18080/api/v1/applications/app-1/2/stages",
     ("http://h:18080/api/v1", "app-1", "2")),
    ("http://h:18080/api/v1/applications/app-1/jobs", ("http://h:18080/api/v1", "app-1", None)),
    ("https://gw/proxy/spark/history/application_1_2/1/jobs/",
     ("https://gw/proxy/spark/api/v1", "application_1_2", "1")),
    ("http://h:18080/", ("http://h:18080/api/v1", None, None)),
])
def test_parse_url(url, expected):
    assert parse_url(url) == expected
