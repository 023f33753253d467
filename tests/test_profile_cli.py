"""``jobgauge profile``: JSON lines and table output, content sniffing, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jobgauge.profiler.readers.eventlog import read_eventlog

from jobgauge.cli import main

REQUIRED = ("format", "engine_version", "app_id", "n_jobs", "n_stages", "n_tasks", "runtime_s")


@pytest.fixture(scope="module")
def spark_logs(corpus_dir) -> Path:
    return corpus_dir / "spark-eventlogs"


def _json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def test_json_lines_one_per_input(spark_logs, capsys):
    inputs = [spark_logs / "apache-spark/local-1642039451826",
              spark_logs / "apache-spark/local-1426533911241",
              spark_logs / "dr-elephant/event_log_1"]
    assert main(["profile", "--json", *map(str, inputs)]) == 0
    out, err = capsys.readouterr()
    rows = _json_lines(out)
    assert len(rows) == 3 and err == ""
    for row, path in zip(rows, inputs):
        profile = read_eventlog(path)
        for key in REQUIRED:
            assert row[key] == getattr(profile, key), key
        assert row["source"] == str(path)
    assert rows[1]["engine_version"] == "1.2.0"
    assert rows[2]["app_id"] == "application_1457600942802_0093"


def test_full_json_holds_the_whole_profile(spark_logs, capsys):
    path = spark_logs / "apache-spark/application_1538416563558_0014"
    assert main(["profile", "--json", "--full", str(path)]) == 0
    (row,) = _json_lines(capsys.readouterr().out)
    assert len(row["stages"]) == 14 and len(row["executors"]) == 9
    assert row["totals"]["shuffle_write_bytes"] == 3021


def test_folder_of_event_logs_is_profiled_log_by_log(spark_logs, capsys):
    assert main(["profile", "--json", str(spark_logs / "apache-spark")]) == 0
    rows = _json_lines(capsys.readouterr().out)
    assert len(rows) == 11                        # 10 files and the Spark 1.2 folder
    assert {r["format"] for r in rows} == {"spark-eventlog"}
    assert "local-1426533911241" in {r["app_id"] for r in rows}
    assert sum(r["n_tasks"] for r in rows) == sum(
        read_eventlog(Path(r["source"])).n_tasks for r in rows)


def test_table_output(spark_logs, capsys, tmp_path):
    data = (spark_logs / "sparklens/local-1532512550423").read_bytes()
    running = tmp_path / "local-1532512550423.inprogress"
    running.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 20])
    assert main(["profile", str(spark_logs / "sparklens/local-1532512550423"),
                 str(running)]) == 0
    out, err = capsys.readouterr()
    header, first, second = out.splitlines()
    assert header.split() == ["source", "format", "version", "app_id", "jobs", "stages",
                              "tasks", "runtime_s", "critical_s", "idle_core_s"]
    assert first.split()[:7] == ["local-1532512550423", "spark-eventlog", "2.3.0",
                                 "local-1532512550423", "2", "2", "8"]
    assert second.split()[0] == running.name and second.split()[7] == "-"   # no runtime yet
    assert f"note: {running}" in err and "incomplete" in err


def test_bad_input_is_reported_and_the_others_still_profiled(spark_logs, corpus_dir,
                                                             capsys, tmp_path):
    good = spark_logs / "sparklens/local-1532512550423"
    unrelated = corpus_dir / "hive-explain/tpch/tpch18.q.out"
    missing = tmp_path / "missing-log"
    assert main(["profile", "--json", str(unrelated), str(good), str(missing)]) == 1
    out, err = capsys.readouterr()
    rows = _json_lines(out)
    assert [("error" in r) for r in rows] == [True, False, True]
    assert rows[1]["app_id"] == "local-1532512550423"
    lines = err.splitlines()
    assert lines[0].startswith(f"jobgauge: error: {unrelated}, line 1: not a Spark event "
                               "log, History Server URL or MapReduce job file")
    assert lines[1] == f"jobgauge: error: {missing}: no such file or directory"
    # without --json: the table for the good one, the error line for the bad one
    assert main(["profile", str(good), str(missing)]) == 1
    out, err = capsys.readouterr()
    assert "local-1532512550423" in out and "no such file or directory" in err


def test_corrupt_event_log_names_file_and_line(spark_logs, capsys, tmp_path):
    lines = (spark_logs / "sparklens/local-1532512550423").read_bytes().splitlines(True)
    lines[4] = b'{"Event":"SparkListenerJobStart","Job ID":\n'
    bad = tmp_path / "local-bad"
    bad.write_bytes(b"".join(lines))
    assert main(["profile", str(bad)]) == 1
    assert f"jobgauge: error: {bad}, line 5: corrupt event line" in capsys.readouterr().err


def test_empty_log_still_being_started_is_a_spark_error(capsys, tmp_path):
    empty = tmp_path / "local-1700000000000.inprogress"
    empty.write_bytes(b"")
    assert main(["profile", str(empty)]) == 1
    assert f"jobgauge: error: {empty}: no Spark events in the log" in capsys.readouterr().err


def test_folder_without_logs_is_an_error(corpus_dir, capsys):
    assert main(["profile", str(corpus_dir / "hive-explain")]) == 1
    assert "folder holds no Spark event log" in capsys.readouterr().err


def test_mapreduce_inputs_go_to_the_mapreduce_reader(corpus_dir, capsys):
    mapreduce = pytest.importorskip(
        "jobgauge.profiler.readers.mapreduce",
        reason="TODO(lead): jobgauge.profiler.readers.mapreduce.read_mapreduce not installed yet")
    jhist_dir = corpus_dir / "hadoop-jhist"
    inputs = [next((jhist_dir / "apache-hadoop").glob("*TeraGen*.jhist")),
              jhist_dir / "apache-hadoop/job_1329348432655_0001_conf.xml",
              jhist_dir / "dr-elephant/mrdata/sampleJobCounter.properties",
              jhist_dir / "apache-hadoop/mr1-v20/truncated-job-tracker-log"]
    assert main(["profile", "--json", *map(str, inputs)]) == 0
    rows = _json_lines(capsys.readouterr().out)
    assert [r["format"] for r in rows] == ["mapreduce-jhist", "mapreduce-conf",
                                           "mapreduce-counters", "mapreduce-mr1"]
    for row, path in zip(rows, inputs):
        expected = mapreduce.read_mapreduce(path)
        assert (row["app_id"], row["n_tasks"], row["runtime_s"]) == \
            (expected.app_id, expected.n_tasks, expected.runtime_s)


def test_large_log_goes_through_the_progress_path(spark_logs, capsys, tmp_path):
    lines = (spark_logs / "apache-spark/local-1642039451826").read_bytes().splitlines(True)
    first = next(i for i, ln in enumerate(lines) if b"SparkListenerTask" in ln)
    last = max(i for i, ln in enumerate(lines) if b"SparkListenerTask" in ln)
    tasks = b"".join(lines[first:last + 1])
    big = tmp_path / "local-big"
    big.write_bytes(b"".join(lines[:first]) + tasks * ((33 << 20) // len(tasks) + 1)
                    + b"".join(lines[last + 1:]))
    assert main(["profile", "--json", str(big)]) == 0
    (row,) = _json_lines(capsys.readouterr().out)
    assert row["n_tasks"] == big.read_bytes().count(b'"Event":"SparkListenerTaskEnd"')
