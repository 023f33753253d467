"""``jobgauge import`` of job history and ``jobgauge sync``, on the corpus and a real History Server.

The History Server is the one ``test_profiler_history`` starts (its module
fixture, imported here): Spark's own server over the corpus logs plus a
log of a real Spark 4.3 run.  Later a log of another real run made here
(``test_report.make_crafted_logs``) is copied into its folder, so the sync
tests see an application arrive.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from jobgauge.profiler.readers.eventlog import read_eventlog
from test_profiler_history import _free_port, _listed, history  # noqa: F401 - its fixture
from test_report import make_crafted_logs

from jobgauge.cli import main
from jobgauge.history_cli import interval_seconds, sync
from jobgauge.history_import import (
    SOURCE, job_key, main_from_command, plan_fingerprint, run_from_profile, spark_resources)
from jobgauge.store import open_store

CORPUS_EVENTLOGS = [
    "apache-spark/app-20161116163331-0000", "apache-spark/application_1506645932520_24630151",
    "apache-spark/application_1536831636016_59384_1", "apache-spark/application_1538416563558_0014",
    "apache-spark/application_1628109047826_1317105", "apache-spark/local-1422981780767",
    "apache-spark/local-1426533911241", "apache-spark/local-1430917381534",
    "apache-spark/local-1430917381535_1", "apache-spark/local-1596020211915",
    "apache-spark/local-1642039451826", "dr-elephant/event_log_1",
    "sparklens/local-1532512550423",
]


def _import(store, *inputs, extra=()) -> tuple[int, dict]:
    """Run ``jobgauge import --json`` and return (exit code, the JSON report)."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--store", str(store), "import", *map(str, inputs), "--json", *extra])
    return code, json.loads(out.getvalue().splitlines()[0])


def _runs(store) -> dict[str, dict]:
    return {r["run_id"]: r for r in open_store(str(store)).runs_list(limit=1000, source=SOURCE)}


# ---------------------------------------------------------------------------- corpus

def test_every_corpus_history_imports_as_a_run(tmp_path, corpus_dir):
    store = tmp_path / "store.db"
    code, report = _import(store, corpus_dir / "spark-eventlogs", corpus_dir / "hadoop-jhist")
    assert code == 0 and report["skipped"] == []
    sources = {Path(r["source"]).relative_to(corpus_dir).as_posix(): r for r in report["runs"]}
    jhists = sorted(p.relative_to(corpus_dir).as_posix()
                    for p in (corpus_dir / "hadoop-jhist").rglob("*.jhist"))
    expected = [f"spark-eventlogs/{name}" for name in CORPUS_EVENTLOGS] + jhists + [
        "hadoop-jhist/apache-hadoop/mr1-v20/truncated-job-tracker-log"]
    assert sorted(sources) == sorted(expected)
    assert report["added"] == len(expected) == 20
    runs = _runs(store)
    assert len(runs) == 20
    for row in report["runs"]:
        run = runs[row["run_id"]]
        assert run["runtime_s"] > 0, row
        assert run["config"], row                     # its settings
        assert run["workload"] == row["job_key"] and run["time_kind"] == "application"
    stored = open_store(str(store))
    spark_pi = runs["application_1536831636016_59384/1"]
    assert (spark_pi["framework"], spark_pi["engine_version"]) == ("spark", "3.0.0-SNAPSHOT")
    assert spark_pi["config"]["spark.executor.memory"] == "512m"
    assert spark_pi["workload"] == "Spark Pi (org.apache.spark.examples.SparkPi)"
    assert (spark_pi["instance_type"], spark_pi["instance_count"], spark_pi["vcpus"]) == \
        ("yarn", 2, 4.0)
    (profile,) = stored.profiles_for(spark_pi["id"])
    assert profile["app_id"] == "application_1536831636016_59384" and profile["n_tasks"] == 100
    sleep_job = runs["job_1329348432655_0001"]      # .jhist with its conf.xml beside it
    assert sleep_job["framework"] == "hadoop" and sleep_job["runtime_s"] == pytest.approx(25.374)
    assert sleep_job["config"]["mapreduce.job.name"] == "Sleep job"
    assert len(sleep_job["config"]) > 100


def test_reimport_adds_nothing(tmp_path, corpus_dir):
    store = tmp_path / "store.db"
    assert _import(store, corpus_dir / "spark-eventlogs", corpus_dir / "hadoop-jhist")[0] == 0
    code, again = _import(store, corpus_dir / "spark-eventlogs", corpus_dir / "hadoop-jhist")
    assert code == 0 and (again["added"], again["already_present"]) == (0, 20)
    one_file = corpus_dir / "spark-eventlogs" / "apache-spark" / "local-1642039451826"
    assert _import(store, one_file)[1]["already_present"] == 1
    assert open_store(str(store)).count_runs() == 20


def test_unreadable_logs_are_skipped_with_one_line_each(tmp_path, corpus_dir, capsys):
    folder = tmp_path / "logs"
    folder.mkdir()
    spark = corpus_dir / "spark-eventlogs" / "apache-spark"
    shutil.copy(spark / "local-1642039451826", folder / "good")
    text = (spark / "application_1538416563558_0014").read_bytes()
    (folder / "truncated").write_bytes(text[: len(text) * 6 // 10])      # cut mid-line
    lines = (spark / "local-1596020211915").read_text().splitlines(keepends=True)
    assert '"Spark Version":"3.1.0-SNAPSHOT"' in lines[0]
    lines[0] = lines[0].replace("3.1.0-SNAPSHOT", "9.9.0")
    (folder / "future").write_text("".join(lines))
    store = tmp_path / "store.db"
    assert main(["--store", str(store), "import", str(folder)]) == 1
    out, err = capsys.readouterr()
    assert err.count("\n") == 2, err
    truncated, future = sorted(err.splitlines(), key=lambda line: "future" in line)
    assert truncated.startswith(f"skipped {folder / 'truncated'}: no end of the application")
    assert future == (f"skipped {folder / 'future'}: unknown Spark version '9.9.0' "
                      f"(this reader knows Spark 1.x, 2.x, 3.x, 4.x)")
    assert "imported 1 run(s), 0 already in the store, 2 skipped" in out
    assert set(_runs(store)) == {"local-1642039451826"}


def test_a_file_that_is_no_history_and_a_down_server_are_skipped(tmp_path, corpus_dir):
    port = _free_port()
    code, report = _import(tmp_path / "s.db", corpus_dir / "README.md",
                           f"http://127.0.0.1:{port}",
                           corpus_dir / "hadoop-jhist" / "apache-hadoop" / "job_2.4.0-FAILED.jhist")
    assert code == 1 and report["added"] == 1
    reasons = {Path(s["input"]).name if "://" not in s["input"] else "server": s["reason"]
               for s in report["skipped"]}
    assert reasons["README.md"].startswith("not a Spark event log, MapReduce job history")
    assert "connection refused" in reasons["server"]


def test_an_import_that_adds_nothing_says_the_store_holds_no_runs(tmp_path, corpus_dir,
                                                                   capsys):
    assert main(["--store", str(tmp_path / "s.db"), "import",
                 str(corpus_dir / "README.md")]) == 1
    captured = capsys.readouterr()
    assert "imported 0 run(s), 0 already in the store, 1 skipped" in captured.out
    assert re.search(r"^store now holds: no runs \(\d+\.\d s\)$", captured.out, re.MULTILINE)
    assert "skipped" in captured.err and "README.md" in captured.err


def test_since_keeps_later_applications_only(tmp_path, corpus_dir):
    code, report = _import(tmp_path / "s.db", corpus_dir / "spark-eventlogs",
                           extra=["--since", "2021-01-01"])
    assert code == 0
    assert sorted(r["run_id"] for r in report["runs"]) == [
        "application_1628109047826_1317105", "local-1642039451826"]   # ended 2021-08, 2022-01


def test_progress_bar_on_request(tmp_path, corpus_dir, capsys):
    main(["--store", str(tmp_path / "s.db"), "import", "--progress",
          str(corpus_dir / "spark-eventlogs" / "sparklens")])
    assert "import" in capsys.readouterr().err          # tqdm's bar, on stderr


# ---------------------------------------------------------------------------- batched writes

def test_profile_to_dict_is_what_asdict_gives(corpus_dir):
    import dataclasses

    from jobgauge.history_import import read_mapreduce_history

    spark = [read_eventlog(corpus_dir / "spark-eventlogs" / name) for name in CORPUS_EVENTLOGS]
    hadoop = [read_mapreduce_history(path)
              for path in sorted((corpus_dir / "hadoop-jhist").rglob("*.jhist"))]
    assert len(spark) == 13 and hadoop
    for profile in spark + hadoop:
        fast, slow = profile.to_dict(), dataclasses.asdict(profile)
        assert fast == slow, profile.source
        assert json.dumps(fast, default=str) == json.dumps(slow, default=str)   # order too
    profile = spark[0]
    copied = profile.to_dict()
    copied["stages"][0]["parent_ids"].append(-1)      # a copy, as asdict's
    copied["totals"].clear()
    assert -1 not in profile.stages[0]["parent_ids"] and profile.totals


def _spark_folder(tmp_path, corpus_dir, names) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir()
    for index, name in enumerate(names):
        shutil.copy(corpus_dir / "spark-eventlogs" / "apache-spark" / name,
                    folder / f"{index:02d}-{name}")
    return folder


SPARK_LOGS = ["local-1422981780767", "app-20161116163331-0000", "local-1430917381534",
               "local-1596020211915", "local-1642039451826"]


def test_runs_read_before_a_crash_are_stored_whole(tmp_path, corpus_dir, monkeypatch):
    from jobgauge import history_import

    folder = _spark_folder(tmp_path, corpus_dir, SPARK_LOGS)
    store = open_store(tmp_path / "s.db")
    batches = []
    write = store.add_profiled_runs
    monkeypatch.setattr(store, "add_profiled_runs",
                        lambda items: batches.append(len(items)) or write(items))
    read = history_import.read_spark_eventlog
    calls = []

    def crash_on_the_fourth(path):
        calls.append(path)
        if len(calls) == 4:
            raise RuntimeError("killed mid-import")
        return read(path)

    monkeypatch.setattr(history_import, "read_spark_eventlog", crash_on_the_fourth)
    with pytest.raises(RuntimeError, match="killed mid-import"):
        history_import.import_history(store, [folder], batch_size=2)
    assert batches == [2, 1]            # a full batch, then the rest flushed on the way out
    runs = store.runs_list(limit=10)
    assert sorted(r["run_id"] for r in runs) == sorted(SPARK_LOGS[:3])
    for run in runs:                     # each one whole: settings, profile and DAG
        assert run["config"] and run["runtime_s"] > 0
        assert store.profiles_for(run["id"])[0]["app_id"] == run["run_id"]
    with store.reading() as connection:
        assert len(connection.execute(store.dags.select()).all()) == 3
    monkeypatch.setattr(history_import, "read_spark_eventlog", read)
    again = history_import.import_history(store, [folder], batch_size=2)
    assert (again.added, again.already_present) == (2, 3)
    assert store.count_runs() == 5


def test_a_run_the_store_refuses_is_skipped_alone(tmp_path, corpus_dir, monkeypatch):
    from jobgauge import history_import

    names = SPARK_LOGS[:4] + [SPARK_LOGS[0]]              # the last one: a second copy
    folder = _spark_folder(tmp_path, corpus_dir, names)
    to_run = history_import.run_from_profile

    def refused_status(profile, **kwargs):
        run, settings = to_run(profile, **kwargs)
        if profile.app_id == "local-1430917381534":
            run["status"] = "exploded"
        return run, settings

    monkeypatch.setattr(history_import, "run_from_profile", refused_status)
    store = open_store(tmp_path / "s.db")
    report = history_import.import_history(store, [folder], batch_size=50)
    assert [s["input"] for s in report.skipped] == [str(folder / "02-local-1430917381534")]
    assert "run status must be one of" in report.skipped[0]["reason"]
    assert (report.added, report.already_present) == (3, 1)
    assert [r["source"] for r in report.runs] == [
        str(folder / f"{i:02d}-{n}") for i, n in enumerate(names) if i != 2]
    assert sorted(r["run_id"] for r in store.runs_list()) == sorted(
        n for n in SPARK_LOGS[:4] if n != "local-1430917381534")


# ---------------------------------------------------------------------------- job keys, resources

def test_reruns_share_a_job_key(corpus_dir):
    spark = corpus_dir / "spark-eventlogs" / "apache-spark"
    keys = {job_key(read_eventlog(spark / name), "org.apache.spark.repl.Main")
            for name in ("local-1422981780767", "local-1430917381534", "local-1430917381535_1")}
    assert keys == {"Spark shell (org.apache.spark.repl.Main)"}    # shells without SQL


def test_plan_fingerprint_ignores_ids_and_literals(corpus_dir):
    import re

    profile = read_eventlog(corpus_dir / "spark-eventlogs" / "apache-spark" / "local-1642039451826")
    plans = [s["physical_plan_description"] for s in profile.sql]
    rerun = [re.sub(r"#(\d+)", lambda m: f"#{int(m.group(1)) + 1000}", p) for p in plans]
    rerun = [re.sub(r"\b\d+\b", "7", p) for p in rerun]
    assert plan_fingerprint(rerun) == plan_fingerprint(plans) is not None
    assert plan_fingerprint(plans[:1]) != plan_fingerprint(plans)
    assert plan_fingerprint([None, ""]) is None
    assert job_key(profile, "org.apache.spark.repl.Main") == \
        f"Spark shell (sql {plan_fingerprint(plans)})"


@pytest.mark.parametrize("command, main_name", [
    ("org.apache.spark.deploy.SparkSubmit --master yarn --deploy-mode client --class "
     "org.apache.spark.repl.Main --name Spark shell spark-shell", "org.apache.spark.repl.Main"),
    ("org.apache.spark.deploy.SparkSubmit --master local[2] --conf spark.x=1 "
     "/home/me/jobs/etl.py --day 2024-01-01", "etl.py"),
    ("org.apache.spark.deploy.SparkSubmit --conf a=b pyspark-shell", "pyspark-shell"),
    ("", None),
])
def test_main_from_command(command, main_name):
    assert main_from_command(command) == main_name


@pytest.mark.parametrize("name, expected", [
    ("apache-spark/app-20161116163331-0000",            # local-cluster[4,4,1024]
     {"instance_type": "local-cluster", "instance_count": 4, "vcpus": 4, "memory_gib": 1.0}),
    ("apache-spark/application_1628109047826_1317105",  # yarn, 10 executors of 1 core, 4g
     {"instance_type": "yarn", "instance_count": 10, "vcpus": 1.0, "memory_gib": 4.0,
      "executor_instances": 10, "executor_memory_mb": 4096}),
    ("apache-spark/local-1642039451826",                # local[*] on a driver of 8 cores
     {"instance_type": "local[8]", "instance_count": 1, "vcpus": 8, "memory_gib": 1.0}),
])
def test_resources_from_the_master_and_executor_events(corpus_dir, name, expected):
    resources = spark_resources(read_eventlog(corpus_dir / "spark-eventlogs" / name))
    assert {k: resources[k] for k in expected} == expected


def test_run_row_of_a_failed_mapreduce_job(corpus_dir):
    from jobgauge.profiler.readers.mapreduce import read_mapreduce

    profile = read_mapreduce(corpus_dir / "hadoop-jhist" / "apache-hadoop" / "job_2.4.0-FAILED.jhist")
    run, settings = run_from_profile(profile)
    assert (run["status"], run["completed"], run["framework"]) == ("failed", False, "hadoop")
    assert run["run_id"] == "job_1400204860297_0001" and run["runtime_s"] == pytest.approx(27.01)
    assert settings["mapreduce.job.name"] == "Fail job"       # from the .jhist: no conf.xml


def test_interval_uses_the_one_duration_parser():
    assert interval_seconds("10m") == 600.0 and interval_seconds("30s") == 30.0
    with pytest.raises(Exception, match="--every"):
        interval_seconds("soon")


# ---------------------------------------------------------------------------- History Server

def _wait_listed(base: str, app_id: str, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with urllib.request.urlopen(base + "/api/v1/applications", timeout=5) as reply:
            if app_id in {a["id"] for a in json.load(reply)}:
                return
        time.sleep(1)
    pytest.fail(f"the History Server did not list {app_id} in time")


@pytest.mark.spark
def test_import_from_a_history_server(history, tmp_path):  # noqa: F811
    store = tmp_path / "store.db"
    code, report = _import(store, history["base"])
    assert code == 0 and report["skipped"] == []
    assert report["added"] == len(history["logs"])
    runs = _runs(store)
    assert {r.split("/")[0] for r in runs} == set(history["logs"])
    new = runs[history["new_app"]]
    assert new["engine_version"] == "4.3.0" and new["runtime_s"] > 0
    assert new["instance_type"] == "local[2]" and new["config"]["spark.master"] == "local[2]"
    assert open_store(str(store)).sync_mark(history["base"] + "/api/v1") == max(
        read_eventlog(p).end_ms for p in history["logs"].values())
    # the same applications from their files: already there
    code, again = _import(store, *history["logs"].values())
    assert again["added"] == 0 and again["already_present"] == len(history["logs"])


@pytest.mark.spark
def test_import_from_a_history_server_since(history, tmp_path):  # noqa: F811
    code, report = _import(tmp_path / "s.db", history["base"], extra=["--since", "2021-01-01"])
    since_ms = 1609459200000
    expected = {app for app, path in history["logs"].items() if read_eventlog(path).end_ms > since_ms}
    assert code == 0 and {r["run_id"].split("/")[0] for r in report["runs"]} == expected
    assert history["new_app"] in expected and len(expected) < len(history["logs"])


@pytest.mark.spark
@pytest.mark.slow
def test_sync_imports_only_new_applications(history, tmp_path, tmp_path_factory, capsys):  # noqa: F811
    store = tmp_path / "store.db"
    assert _import(store, history["base"])[1]["added"] == len(history["logs"])
    crafted = make_crafted_logs(tmp_path_factory.getbasetemp() / "h8-crafted-runs")["clean"]
    folder = Path(next(iter(history["logs"].values()))).parent
    shutil.copytree(crafted, folder / crafted.name)
    new_app = read_eventlog(crafted).app_id
    _wait_listed(history["base"], new_app)
    capsys.readouterr()
    assert main(["--store", str(store), "sync", history["base"], "--once", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in report["runs"] if r["job_key"]] == [new_app]
    assert report["added"] == 1
    assert _runs(store)[new_app]["workload"].startswith("jobgauge-clean (sql ")
    assert open_store(str(store)).sync_mark(history["base"] + "/api/v1") >= \
        read_eventlog(crafted).end_ms


class _Forwarder:
    """A TCP port that forwards to the History Server once ``start`` is called."""

    def __init__(self, port: int, target_port: int):
        self.port, self.target_port = port, target_port
        self.server = None

    def start(self):
        self.server = socket.create_server(("127.0.0.1", self.port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source, target):
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        if self.server is not None:
            self.server.close()


@pytest.mark.spark
def test_sync_survives_a_server_that_is_down(history, tmp_path):  # noqa: F811
    import io

    port = _free_port()
    forwarder = _Forwarder(port, int(history["base"].rsplit(":", 1)[1]))
    waits = []

    def sleep(seconds):                # the server comes back while sync waits
        waits.append(seconds)
        if len(waits) == 2:
            forwarder.start()

    store = open_store(str(tmp_path / "s.db"))
    out, err = io.StringIO(), io.StringIO()
    try:
        code = sync(store, [f"http://127.0.0.1:{port}"], every_s=600, rounds=3, sleep=sleep,
                    out=out, err=err)
    finally:
        forwarder.close()
    assert code == 0
    assert waits == [5.0, 10.0]                          # retried with growing waits
    assert err.getvalue().count("connection refused") == 2
    listed = _listed(history["base"])         # (another test may have added an application)
    assert store.count_runs(source=SOURCE) == len(listed)          # caught up: nothing lost
    assert f"imported {len(listed)} run(s)" in out.getvalue()


def test_sync_once_on_a_down_server_says_so_and_fails(tmp_path, capsys):
    port = _free_port()
    assert main(["--store", str(tmp_path / "s.db"), "sync", f"http://127.0.0.1:{port}",
                 "--once"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().count("\n") == 0 and "connection refused" in err


@pytest.mark.spark
def test_report_of_a_history_server_application(history, capsys):  # noqa: F811
    url = f"{history['base']}/api/v1/applications/{history['new_app']}"
    assert main(["report", url, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["app_id"] == history["new_app"] and report["runtime_s"] > 0
    assert report["job_key"].startswith("jobgauge-history")


@pytest.mark.spark
def test_a_running_application_is_left_for_later(spark, spark_eventlog_dir, tmp_path):
    spark.range(0, 1000, numPartitions=2).count()           # the session's log is in progress
    code, report = _import(tmp_path / "s.db", spark_eventlog_dir)
    assert code == 0 and report["added"] == 0 and report["skipped"] == []
    assert report["still_running"] == 1
    (log,) = [p for p in spark_eventlog_dir.iterdir() if not p.name.startswith(".")]
    code, report = _import(tmp_path / "s.db", log)           # named explicitly: one skip line
    assert code == 1 and report["skipped"][0]["reason"].endswith(
        "no end of the application in the log: no SparkListenerApplicationEnd: the log is "
        "marked in progress, the application was still running")
