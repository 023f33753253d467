"""Spark event logs -> Profile: every corpus log, logs real Spark 4.3 writes
(lz4, snappy, zstd, rolling, in progress), bad input, and a fuzz test.

Expected numbers are read off the event lines here, independently of the
reader (string counts and the standard library's json, not the reader's
streaming/orjson path).
"""

from __future__ import annotations

import functools
import json
import random
import re
import struct
import subprocess
import sys
import tempfile
import textwrap
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobgauge.profiler.readers._eventlog_io import LogPart, codec_from_name, open_part
from jobgauge.profiler.readers.eventlog import (
    EXACT_TASK_VALUES,
    DurationSummary,
    find_eventlogs,
    iter_events,
    looks_like_eventlog,
    read_eventlog,
)
from jobgauge.profiler.readers.profile import Profile

from jobgauge.errors import ParseError

from conftest import run_spark_script

CORPUS_LOGS = [
    "apache-spark/app-20161116163331-0000",
    "apache-spark/application_1506645932520_24630151",
    "apache-spark/application_1536831636016_59384_1",
    "apache-spark/application_1538416563558_0014",
    "apache-spark/application_1628109047826_1317105",
    "apache-spark/local-1422981780767",
    "apache-spark/local-1426533911241",          # Spark 1.2 folder: EVENT_LOG_1 + markers
    "apache-spark/local-1430917381534",
    "apache-spark/local-1430917381535_1",
    "apache-spark/local-1596020211915",
    "apache-spark/local-1642039451826",
    "dr-elephant/event_log_1",
    "sparklens/local-1532512550423",
]


@pytest.fixture(scope="module")
def logs_dir(corpus_dir) -> Path:
    return corpus_dir / "spark-eventlogs"


def _event_file(path: Path) -> Path:
    return path / "EVENT_LOG_1" if path.is_dir() else path


def _lines_of(path: Path) -> list[str]:
    return [line for line in _event_file(path).read_text().splitlines() if line.strip()]


def _count(lines, event) -> int:
    return sum(f'"Event":"{event}"' in line for line in lines)


def _submitted_stages(lines) -> list[tuple[int, int]]:
    out = []
    for line in lines:
        if '"Event":"SparkListenerStageSubmitted"' in line:
            sid = int(re.search(r'"Stage Info":\{"Stage ID":(\d+)', line).group(1))
            attempt = re.search(r'"Stage Attempt ID":(\d+)', line)
            out.append((sid, int(attempt.group(1)) if attempt else 0))
    return out


def _events(path: Path) -> list[dict]:
    return [json.loads(line) for line in _lines_of(path)]


# --- every corpus log --------------------------------------------------------------------

@pytest.mark.parametrize("name", CORPUS_LOGS)
def test_corpus_log_counts_match_the_event_lines(logs_dir, name):
    path = logs_dir / name
    lines = _lines_of(path)
    profile = read_eventlog(path)

    assert isinstance(profile, Profile)
    assert profile.format == "spark-eventlog" and profile.engine == "spark"
    assert profile.n_jobs == _count(lines, "SparkListenerJobStart")
    submitted = _submitted_stages(lines)
    assert profile.n_stages == len({sid for sid, _ in submitted})
    assert profile.n_stage_attempts == len(set(submitted))
    assert profile.n_tasks == _count(lines, "SparkListenerTaskEnd")
    assert profile.n_failed_tasks == sum('"Event":"SparkListenerTaskEnd"' in line
                                         and '"Reason":"Success"' not in line for line in lines)
    version = re.search(r'"Spark Version":"([^"]+)"', "\n".join(lines))
    if version:
        assert profile.engine_version == version.group(1)
    app_id = re.search(r'"App ID":"([^"]+)"', "\n".join(lines))
    assert profile.app_id == app_id.group(1)

    events = _events(path)
    start = next(e["Timestamp"] for e in events if e["Event"] == "SparkListenerApplicationStart")
    end = next(e["Timestamp"] for e in events if e["Event"] == "SparkListenerApplicationEnd")
    assert profile.runtime_s == pytest.approx((end - start) / 1000)
    assert profile.status == "succeeded"
    assert profile.event_counts == dict(Counter(e["Event"].rsplit(".", 1)[-1] for e in events))
    # the whole profile is plain JSON data
    assert Profile.from_dict(json.loads(json.dumps(profile.to_dict()))) == profile


@pytest.mark.parametrize("name", CORPUS_LOGS)
def test_corpus_log_totals_match_summed_task_metrics(logs_dir, name):
    path = logs_dir / name
    ends = [e for e in _events(path) if e["Event"] == "SparkListenerTaskEnd"]
    metrics = [e["Task Metrics"] for e in ends if e.get("Task Metrics")]
    profile = read_eventlog(path)

    def total(get):
        values = [v for v in map(get, metrics) if v is not None]
        return sum(values) if values else None

    expected = {
        "executor_run_time_ms": total(lambda m: m.get("Executor Run Time")),
        "jvm_gc_time_ms": total(lambda m: m.get("JVM GC Time")),
        "input_bytes": total(lambda m: (m.get("Input Metrics") or {}).get("Bytes Read")),
        "shuffle_write_bytes": total(
            lambda m: (m.get("Shuffle Write Metrics") or {}).get("Shuffle Bytes Written")),
        "shuffle_read_records": total(
            lambda m: (m.get("Shuffle Read Metrics") or {}).get("Total Records Read")),
        "memory_spill_bytes": total(lambda m: m.get("Memory Bytes Spilled")),
    }
    cpu_ns = total(lambda m: m.get("Executor CPU Time"))
    expected["executor_cpu_time_ms"] = None if cpu_ns is None else cpu_ns / 1e6
    for metric, value in expected.items():
        assert profile.totals[metric] == pytest.approx(value), metric
    # stage sums add up to the totals
    for metric in ("executor_run_time_ms", "input_bytes", "shuffle_write_bytes"):
        stage_values = [s[metric] for s in profile.stages if s[metric] is not None]
        assert (sum(stage_values) if stage_values else None) == profile.totals[metric]


@pytest.mark.parametrize("name", CORPUS_LOGS)
def test_corpus_stage_duration_percentiles_use_sparks_rank_rule(logs_dir, name):
    path = logs_dir / name
    durations: dict[tuple[int, int], list[int]] = {}
    for e in _events(path):
        if e["Event"] == "SparkListenerTaskEnd" and e["Task End Reason"]["Reason"] == "Success":
            key = (e["Stage ID"], e.get("Stage Attempt ID", 0))
            info = e["Task Info"]
            durations.setdefault(key, []).append(info["Finish Time"] - info["Launch Time"])
    profile = read_eventlog(path)
    for stage in profile.stages:
        values = sorted(durations.get((stage["stage_id"], stage["attempt"]), []))
        if not values:
            assert stage["task_duration_p50_ms"] is None
            continue
        n = len(values)
        for q, key in ((0.5, "task_duration_p50_ms"), (0.9, "task_duration_p90_ms"),
                       (0.99, "task_duration_p99_ms")):
            assert stage[key] == values[min(int(q * n), n - 1)]
        assert stage["task_duration_max_ms"] == values[-1]
        p50 = values[min(n // 2, n - 1)]
        assert stage["task_skew"] == (pytest.approx(values[-1] / p50) if p50 else None)


def _expected_critical_path(events) -> float | None:
    parents, first, last = {}, {}, {}
    for e in events:
        infos = []
        if e["Event"] == "SparkListenerJobStart":
            infos = e.get("Stage Infos", [])
        elif e["Event"] in ("SparkListenerStageSubmitted", "SparkListenerStageCompleted"):
            infos = [e["Stage Info"]]
        for info in infos:
            if "Parent IDs" in info:
                parents[info["Stage ID"]] = info["Parent IDs"]
        if e["Event"] == "SparkListenerStageCompleted":
            info = e["Stage Info"]
            sid = info["Stage ID"]
            first[sid] = min(first.get(sid, info["Submission Time"]), info["Submission Time"])
            last[sid] = max(last.get(sid, info["Completion Time"]), info["Completion Time"])
    if not parents:
        return None

    @functools.cache
    def longest(sid):
        wall = (last[sid] - first[sid]) / 1000 if sid in first else 0.0
        return wall + max((longest(p) for p in parents.get(sid, [])), default=0.0)

    return max(longest(s) for s in set(parents) | set(first))


@pytest.mark.parametrize("name", CORPUS_LOGS)
def test_corpus_critical_path(logs_dir, name):
    events = _events(logs_dir / name)
    profile = read_eventlog(logs_dir / name)
    expected = _expected_critical_path(events)
    if expected is None:          # Spark < 1.4 logs carry no stage parents
        assert profile.critical_path_s is None
        assert all(s["parent_ids"] is None for s in profile.stages)
        return
    assert profile.critical_path_s == pytest.approx(expected)
    # a chain of dependent stages runs one after another: it fits in the runtime
    assert profile.critical_path_s <= profile.runtime_s
    for job in profile.jobs:
        assert job["critical_path_s"] <= profile.critical_path_s + 1e-9


def test_idle_core_seconds_on_yarn_with_executors_coming_and_going(logs_dir):
    path = logs_dir / "apache-spark/application_1538416563558_0014"
    events = _events(path)
    start = next(e["Timestamp"] for e in events if e["Event"] == "SparkListenerApplicationStart")
    end = next(e["Timestamp"] for e in events if e["Event"] == "SparkListenerApplicationEnd")
    added = {e["Executor ID"]: (e["Timestamp"], e["Executor Info"]["Total Cores"])
             for e in events if e["Event"] == "SparkListenerExecutorAdded"}
    removed = {e["Executor ID"]: e["Timestamp"]
               for e in events if e["Event"] == "SparkListenerExecutorRemoved"}
    available = sum(cores * (min(removed.get(x, end), end) - max(t, start)) / 1000
                    for x, (t, cores) in added.items())
    used = sum((e["Task Info"]["Finish Time"] - e["Task Info"]["Launch Time"]) / 1000
               for e in events if e["Event"] == "SparkListenerTaskEnd")
    profile = read_eventlog(path)
    assert len(added) == 9 and len(removed) == 8
    assert profile.available_core_seconds == pytest.approx(available)
    assert profile.task_seconds == pytest.approx(used)
    assert profile.idle_core_seconds == pytest.approx(max(0.0, available - used))
    assert [e["executor_id"] for e in profile.executors] == list(added)
    # the timeline ends with the one executor never removed
    assert profile.cores_timeline[-1]["cores"] == sum(
        cores for x, (_, cores) in added.items() if x not in removed)


def test_local_master_cores_when_no_executor_events(logs_dir, tmp_path):
    # Spark 1.2 wrote no SparkListenerExecutorAdded; with local[N] the driver's N cores
    # are known.  (The corpus copy says local[*]: cores unknown, idle time not claimed.)
    source = logs_dir / "apache-spark/local-1422981780767"
    assert read_eventlog(source).idle_core_seconds is None
    text = source.read_text()
    assert '"spark.master":"local[*]"' in text
    local4 = tmp_path / "local-1422981780767"
    local4.write_text(text.replace('"spark.master":"local[*]"', '"spark.master":"local[4]"'))
    profile = read_eventlog(local4)
    assert profile.executors[0]["cores"] == 4
    assert profile.available_core_seconds == pytest.approx(4 * profile.runtime_s)
    assert profile.idle_core_seconds == pytest.approx(4 * profile.runtime_s
                                                      - profile.task_seconds)
    assert any("assumed the driver ran tasks on 4 cores" in n for n in profile.notes)


def test_spark_1_2_folder_layout(logs_dir):
    profile = read_eventlog(logs_dir / "apache-spark/local-1426533911241")
    assert profile.engine_version == "1.2.0"           # from the SPARK_VERSION_1.2.0 marker
    assert profile.app_id == "local-1426533911241"
    assert (profile.n_jobs, profile.n_stages, profile.n_tasks) == (1, 1, 8)
    assert profile.config["spark.master"] == "local[*]"


def test_log_without_version_and_a_failed_job(logs_dir):
    profile = read_eventlog(logs_dir / "apache-spark/local-1422981780767")
    assert profile.engine_version is None
    failed = [j for j in profile.jobs if j["result"] == "failed"]
    assert len(failed) == 1 and "got a 3, failing" in failed[0]["failure"]
    assert profile.n_failed_tasks == 1
    assert [s["status"] for s in profile.stages].count("failed") == 1


def test_empty_application_is_a_profile(logs_dir):
    profile = read_eventlog(logs_dir / "apache-spark/local-1430917381535_1")
    assert (profile.n_jobs, profile.n_stages, profile.n_tasks) == (0, 0, 0)
    assert profile.jobs == [] and profile.stages == []
    assert profile.runtime_s == pytest.approx(0.01)
    assert profile.critical_path_s is None


def test_vendor_version_and_killed_task(logs_dir):
    profile = read_eventlog(logs_dir / "apache-spark/application_1628109047826_1317105")
    assert profile.engine_version == "3.1.1.119"
    assert profile.stages[0]["n_killed_tasks"] == 1
    assert profile.stages[0]["n_succeeded_tasks"] == 4


def test_dr_elephant_log_with_empty_jvm_sections(logs_dir):
    profile = read_eventlog(logs_dir / "dr-elephant/event_log_1")
    assert profile.config["spark.executor.instances"] == "900"
    assert profile.app_name == "PythonPi" and profile.user == "hdfs"
    assert len(profile.executors) == 2


def test_sql_executions_with_qualified_event_names(logs_dir):
    path = logs_dir / "apache-spark/local-1642039451826"
    events = _events(path)
    profile = read_eventlog(path)
    starts = [e for e in events if e["Event"].endswith(".SparkListenerSQLExecutionStart")]
    updates = [e for e in events if e["Event"].endswith(".SparkListenerSQLAdaptiveExecutionUpdate")]
    assert [s["execution_id"] for s in profile.sql] == [e["executionId"] for e in starts]
    for sql in profile.sql:
        mine = [u for u in updates if u["executionId"] == sql["execution_id"]]
        assert sql["adaptive_updates"] == len(mine)
        assert sql["physical_plan_description"] == mine[-1]["physicalPlanDescription"]
        assert sql["job_ids"] == [j["job_id"] for j in profile.jobs
                                  if j["sql_execution_id"] == sql["execution_id"]]
        assert sql["job_ids"]


def test_structured_streaming_log(logs_dir):
    path = logs_dir / "apache-spark/local-1596020211915"
    lines = _lines_of(path)
    profile = read_eventlog(path)
    assert len(profile.sql) == sum("SparkListenerSQLExecutionStart" in ln for ln in lines) == 24
    assert all(s["end_ms"] is not None for s in profile.sql)
    assert profile.event_counts["StreamingQueryListener$QueryProgressEvent"] == 8


def test_iter_events_and_find_eventlogs(logs_dir, corpus_dir):
    path = logs_dir / "apache-spark/local-1642039451826"
    assert sum(1 for _ in iter_events(path)) == len(_lines_of(path))
    found = find_eventlogs(logs_dir / "apache-spark")
    assert [p.name for p in found] == sorted(Path(n).name for n in CORPUS_LOGS
                                             if n.startswith("apache-spark/"))
    assert looks_like_eventlog(logs_dir / "apache-spark/local-1426533911241")
    jhist = next((corpus_dir / "hadoop-jhist/apache-hadoop").glob("*.jhist"))
    assert not looks_like_eventlog(jhist)


def test_memory_does_not_grow_with_log_size(logs_dir, tmp_path):
    lines = (logs_dir / "apache-spark/local-1642039451826").read_bytes().splitlines(True)
    first = next(i for i, ln in enumerate(lines) if b"SparkListenerTask" in ln)
    last = max(i for i, ln in enumerate(lines) if b"SparkListenerTask" in ln)
    tasks = b"".join(lines[first:last + 1])
    peaks = []
    for megabytes in (4, 16):
        big = tmp_path / f"app-{megabytes}"
        big.write_bytes(b"".join(lines[:first]) + tasks * ((megabytes << 20) // len(tasks))
                        + b"".join(lines[last + 1:]))
        tracemalloc.start()
        try:
            profile = read_eventlog(big)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        assert profile.n_tasks == _count(big.read_text().splitlines(), "SparkListenerTaskEnd")
    assert peaks[1] < peaks[0] + (1 << 20)          # 4x the log, not more memory
    assert peaks[1] < 12 << 20                      # well under the 16 MiB log


# --- the bounded duration summary ---------------------------------------------------------

def test_duration_summary_exact_then_histogram_within_one_percent():
    rng = random.Random(7)
    values = [int(rng.lognormvariate(6, 1.5)) for _ in range(5 * EXACT_TASK_VALUES)]
    summary = DurationSummary()
    for i, value in enumerate(values, 1):
        summary.add(value)
        if i == EXACT_TASK_VALUES:
            ordered = sorted(values[:i])
            assert summary.buckets is None
            assert summary.quantiles() == [ordered[min(int(q * i), i - 1)]
                                           for q in (0.5, 0.9, 0.99)]
    assert summary.buckets is not None and len(summary.exact) == 0
    assert len(summary.buckets) < 2200
    ordered = sorted(values)
    n = len(values)
    for q in (0.5, 0.9, 0.99):
        exact = ordered[min(int(q * n), n - 1)]
        assert summary.quantile(q) == pytest.approx(exact, rel=0.011, abs=1)
    assert summary.maximum == max(values)


def test_duration_summary_zero_and_empty():
    summary = DurationSummary()
    assert summary.quantile(0.5) is None
    for _ in range(EXACT_TASK_VALUES + 5):
        summary.add(0)
    summary.add(100)
    assert summary.quantile(0.5) == 0.0 and summary.maximum == 100


# --- logs real Spark 4.3 writes -------------------------------------------------------------

_WRITE_LOGS = textwrap.dedent('''
    import json, os, sys
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    out = sys.argv[1]
    RUNS = {  # the first run keeps Spark's defaults; the settings of the first session
        # stick to later sessions in the same JVM, so every later run says its own
        "default": {"spark.eventLog.rolling.maxFileSize": "10m"},
        "lz4": {"spark.eventLog.compress": "true", "spark.eventLog.compression.codec": "lz4",
                "spark.eventLog.rolling.enabled": "false"},
        "snappy": {"spark.eventLog.compress": "true",
                   "spark.eventLog.compression.codec": "snappy",
                   "spark.eventLog.rolling.enabled": "false"},
        "plain": {"spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"},
    }
    apps = {}
    for name, settings in RUNS.items():
        builder = SparkSession.builder.master("local[2]").appName(f"jobgauge-{name}")
        conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
                "spark.eventLog.enabled": "true", "spark.sql.shuffle.partitions": "2",
                "spark.eventLog.dir": os.path.join(out, name), **settings}
        for key, value in conf.items():
            builder = builder.config(key, value)
        os.makedirs(os.path.join(out, name), exist_ok=True)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("OFF")
        if name == "default":  # 3 MiB in every job and stage event: rolls past 10 MiB
            spark.sparkContext.setLocalProperty("jobgauge.padding", "x" * (3 << 20))
        df = spark.range(0, 3000, numPartitions=3)
        df.groupBy((df.id % 5).alias("k")).count().collect()
        spark.range(0, 100, numPartitions=2).selectExpr("sum(id)").collect()
        if name == "plain":
            try:
                spark.range(0, 10, numPartitions=2).selectExpr(
                    "raise_error('jobgauge boom')").collect()
            except Exception:
                pass
        apps[name] = spark.sparkContext.applicationId
        spark.stop()

    # Spark's own codecs decode every compressed file, for the test to compare with.
    sc = SparkContext(conf=SparkConf().setMaster("local[1]").setAppName("decode")
                      .set("spark.ui.enabled", "false").set("spark.eventLog.enabled", "false"))
    jvm = sc._jvm
    for root, _dirs, files in os.walk(out):
        for file in files:
            codec = os.path.splitext(file)[1][1:]
            if codec in ("lz4", "snappy", "zstd"):
                path = os.path.join(root, file)
                stream = jvm.org.apache.spark.io.CompressionCodec.createCodec(
                    sc._jsc.sc().conf(), codec).compressedInputStream(
                    jvm.java.io.FileInputStream(path))
                sink = jvm.java.io.FileOutputStream(path + ".decoded-by-spark")
                jvm.org.apache.commons.io.IOUtils.copy(stream, sink)
                stream.close()
                sink.close()
    sc.stop()
    print("APPS=" + json.dumps(apps))
''')


@pytest.fixture(scope="module")
def spark_logs(tmp_path_factory) -> dict[str, Path]:
    """Event logs Spark 4.3 wrote here: Spark's defaults (rolling zstd, 3 parts), lz4,
    snappy, plain with a failed job; each compressed file also decoded by Spark."""
    out = tmp_path_factory.mktemp("spark-logs")
    printed = run_spark_script(_WRITE_LOGS, out / "write_logs.py", out,
                               "Spark could not write the logs")
    apps = json.loads(printed.split("APPS=")[-1])
    logs = {}
    for name in apps:
        entries = [p for p in (out / name).iterdir() if not p.name.endswith("-by-spark")]
        assert len(entries) == 1, entries
        logs[name] = entries[0]
    return logs


def _spark_decoded(path: Path) -> list[str]:
    """The log's lines as Spark's own codec decoded them (all parts, in order)."""
    if path.is_dir():
        parts = sorted(path.glob("events_*.decoded-by-spark"),
                       key=lambda p: int(p.name.split("_")[1]))
    elif path.suffix in (".lz4", ".snappy", ".zstd"):
        parts = [Path(str(path) + ".decoded-by-spark")]
    else:
        parts = [path]
    return [ln for p in parts for ln in p.read_text().splitlines() if ln.strip()]


@pytest.mark.spark
def test_spark_default_is_a_rolling_zstd_folder_read_in_index_order(spark_logs):
    folder = spark_logs["default"]
    assert folder.name.startswith("eventlog_v2_")
    parts = sorted(p.name for p in folder.glob("events_*") if "decoded" not in p.name)
    assert len(parts) >= 3 and all(p.endswith(".zstd") for p in parts)
    assert any(p.name.startswith("appstatus_") for p in folder.iterdir())
    events = list(iter_events(folder))
    assert events[0]["Event"] == "SparkListenerLogStart"
    assert events[-1]["Event"] == "SparkListenerApplicationEnd"
    assert [json.loads(ln)["Event"] for ln in _spark_decoded(folder)] == [
        e["Event"] for e in events]
    profile = read_eventlog(folder)
    assert profile.engine_version == "4.3.0" and profile.status == "succeeded"
    assert [j["job_id"] for j in profile.jobs] == list(range(profile.n_jobs))
    assert profile.notes == []


@pytest.mark.spark
@pytest.mark.parametrize("name", ["default", "lz4", "snappy", "plain"])
def test_spark_written_logs_counts(spark_logs, name):
    lines = _spark_decoded(spark_logs[name])
    profile = read_eventlog(spark_logs[name])
    assert profile.app_id == re.search(r'"App ID":"([^"]+)"', "\n".join(lines)).group(1)
    assert profile.app_name == f"jobgauge-{name}"
    assert profile.n_jobs == _count(lines, "SparkListenerJobStart") >= 3
    assert profile.n_stages == len({s for s, _ in _submitted_stages(lines)})
    assert profile.n_tasks == _count(lines, "SparkListenerTaskEnd")
    assert len(profile.sql) == sum("SparkListenerSQLExecutionStart" in ln for ln in lines)
    assert profile.executors[0]["cores"] == 2
    assert 0 < profile.critical_path_s <= profile.runtime_s
    assert profile.idle_core_seconds == pytest.approx(
        profile.available_core_seconds - profile.task_seconds)


@pytest.mark.spark
def test_lz4_snappy_zstd_decoders_match_sparks_own(spark_logs):
    compressed = [p for p in spark_logs["default"].glob("events_*.zstd")]
    compressed += [spark_logs["lz4"], spark_logs["snappy"]]
    for path in compressed:
        stream, codec = open_part(LogPart(path, codec_from_name(path.name)))
        try:
            mine = stream.read()
        finally:
            stream.close()
        assert codec == path.suffix[1:]
        assert mine == Path(str(path) + ".decoded-by-spark").read_bytes(), path.name
    assert spark_logs["lz4"].read_bytes().startswith(b"LZ4Block")           # lz4-java blocks
    assert spark_logs["snappy"].read_bytes().startswith(b"\x82SNAPPY\x00")  # snappy-java stream


@pytest.mark.spark
def test_failed_job_in_a_spark_4_log(spark_logs):
    profile = read_eventlog(spark_logs["plain"])
    failed = [j for j in profile.jobs if j["result"] == "failed"]
    assert len(failed) == 1 and "jobgauge boom" in failed[0]["failure"]
    assert profile.n_failed_tasks >= 1
    assert any(s["status"] == "failed" for s in profile.stages)


@pytest.mark.spark
def test_truncated_compressed_logs_are_read_up_to_the_cut(spark_logs, tmp_path):
    for name in ("lz4", "snappy"):
        data = spark_logs[name].read_bytes()
        cut = tmp_path / spark_logs[name].name
        cut.write_bytes(data[: len(data) * 9 // 10])
        profile = read_eventlog(cut)
        assert profile.status == "running"
        assert 0 < profile.n_tasks < read_eventlog(spark_logs[name]).n_tasks
        assert any("ends inside a block" in n or "incomplete" in n for n in profile.notes)


@pytest.mark.spark
def test_corrupt_compressed_blocks_are_parse_errors(spark_logs, tmp_path):
    data = bytearray(spark_logs["lz4"].read_bytes())
    dlen = struct.unpack_from("<i", data, 13)[0]
    struct.pack_into("<i", data, 13, dlen - 7)        # first block: wrong decompressed size
    bad = tmp_path / "bad.lz4"
    bad.write_bytes(bytes(data))
    with pytest.raises(ParseError, match=r"bad\.lz4, line 1: corrupt LZ4 block at byte 0"):
        read_eventlog(bad)
    zstd = next(spark_logs["default"].glob("events_1_*.zstd")).read_bytes()
    bad = tmp_path / "bad.zstd"
    bad.write_bytes(zstd[:4] + b"\xff" * 64 + zstd[68:])
    with pytest.raises(ParseError, match=r"bad\.zstd, line 1: corrupt zstd data"):
        read_eventlog(bad)
    plain = tmp_path / "named.lz4"
    plain.write_bytes(spark_logs["plain"].read_bytes())
    with pytest.raises(ParseError, match="file name says lz4 but the data is not lz4"):
        read_eventlog(plain)


@pytest.mark.spark
def test_rolling_log_with_a_missing_part_is_noted(spark_logs, tmp_path):
    folder = tmp_path / spark_logs["default"].name
    folder.mkdir()
    for part in spark_logs["default"].iterdir():
        if "decoded" not in part.name and not part.name.startswith("events_2_"):
            (folder / part.name).write_bytes(part.read_bytes())
    profile = read_eventlog(folder)
    assert any("parts 1 and 3 are not consecutive" in n for n in profile.notes)


@pytest.mark.spark
def test_in_progress_log_of_the_running_session(spark, spark_eventlog_dir):
    import zstandard

    spark.range(0, 1000, numPartitions=2).selectExpr("sum(id)").collect()
    app_id = spark.sparkContext.applicationId
    folder = next(p for p in spark_eventlog_dir.iterdir() if app_id in p.name)

    def decoded_lines():
        out = []
        for part in sorted(folder.glob("events_*"), key=lambda p: int(p.name.split("_")[1])):
            with open(part, "rb") as handle:
                reader = zstandard.ZstdDecompressor().stream_reader(handle,
                                                                    read_across_frames=True)
                out.append(reader.read())
        text = b"".join(out).decode()
        return [ln for ln in text.split("\n")[:-1] if ln.strip()]   # complete lines only

    before = decoded_lines()
    profile = read_eventlog(folder)
    after = decoded_lines()
    assert profile.status == "running" and profile.runtime_s is None
    assert any("marked in progress" in n for n in profile.notes)
    assert _count(before, "SparkListenerJobStart") <= profile.n_jobs \
        <= _count(after, "SparkListenerJobStart")
    assert _count(before, "SparkListenerTaskEnd") <= profile.n_tasks \
        <= _count(after, "SparkListenerTaskEnd")
    assert profile.n_jobs >= 1


# --- bad input ------------------------------------------------------------------------------

def test_truncated_last_line_is_tolerated_and_noted(logs_dir, tmp_path):
    data = (logs_dir / "apache-spark/local-1642039451826").read_bytes()
    cut = tmp_path / "local-1642039451826.inprogress"
    cut.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 40])   # mid last line
    profile = read_eventlog(cut)
    assert profile.status == "running" and profile.end_ms is None
    assert any("last line 115 is incomplete" in n for n in profile.notes)
    assert any("marked in progress" in n for n in profile.notes)
    assert profile.n_tasks == 35


def test_corrupt_line_in_the_middle_is_an_error_with_its_number(logs_dir, tmp_path):
    lines = (logs_dir / "apache-spark/local-1642039451826").read_bytes().splitlines(True)
    lines[9] = lines[9][:50] + b"\n"
    bad = tmp_path / "bad-log"
    bad.write_bytes(b"".join(lines))
    with pytest.raises(ParseError, match=r"bad-log, line 10: corrupt event line: invalid JSON"):
        read_eventlog(bad)


def test_malformed_event_is_an_error_with_its_number(logs_dir, tmp_path):
    text = (logs_dir / "sparklens/local-1532512550423").read_text().splitlines(True)
    index = next(i for i, ln in enumerate(text) if "SparkListenerTaskEnd" in ln)
    text[index] = text[index].replace('"Stage ID":0', '"Stage ID":"zero"', 1)
    bad = tmp_path / "bad-event"
    bad.write_text("".join(text))
    with pytest.raises(ParseError, match=rf"line {index + 1}: malformed SparkListenerTaskEnd"):
        read_eventlog(bad)


def test_scanned_files_link_to_their_stage_and_junk_metrics_are_skipped(logs_dir, tmp_path):
    """A file scan's "size of files read" (driver-side) reaches the stage whose
    completed accumulables hold the scan's task-side metrics, as ``file_bytes`` and
    ``scan_files``; metric entries that are not objects are skipped, never a traceback.
    A real Spark 3.2 log of SQL over a range, given one scan node and its updates."""
    events = [json.loads(ln) for ln in
              (logs_dir / "apache-spark/local-1642039451826").read_text().splitlines()]
    start = next(e for e in events if e["Event"].endswith("SQLExecutionStart"))
    start["sparkPlanInfo"]["children"].append({
        "nodeName": "Scan parquet", "children": [],
        "metadata": {"Location": "InMemoryFileIndex(1 paths)[file:/data/t.parquet]"},
        "metrics": ["junk", {"name": "size of files read", "accumulatorId": 990001},
                    {"name": "scan time", "accumulatorId": 990002}]})
    done = next(e for e in events if e["Event"] == "SparkListenerStageCompleted")
    done["Stage Info"].setdefault("Accumulables", []).extend(
        ["junk", {"ID": "not a number"}, {"ID": 990002, "Name": "scan time", "Value": "5"}])
    at = events.index(done)
    events.insert(at, {"Event": "org.apache.spark.sql.execution.ui."
                                "SparkListenerDriverAccumUpdates",
                       "executionId": start["executionId"], "accumUpdates": [[990001, 4096]]})
    log = tmp_path / "local-1642039451826"
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    stages = {s["stage_id"]: s for s in read_eventlog(log).stages}
    linked = stages[done["Stage Info"]["Stage ID"]]
    assert linked["file_bytes"] == 4096
    assert linked["scan_files"] == {"file:/data/t.parquet": 4096}
    assert [s for s in stages.values() if s.get("file_bytes")] == [linked]


@pytest.mark.parametrize("content, message", [
    (b"", r"no Spark events in the log"),
    (b'{"Event":"SparkListenerLogStart","Spark Ver', r"no Spark events in the log"),
    (bytes(range(256)) * 40, r"line 1: not a Spark event log"),
    (b'{"a": 1}\n{"b": 2}\n', r"line 1: not a Spark event log"),
    (b'{"Event":"SparkListenerLogStart","Spark Version":"3.5.0"}\n[1, 2]\n',
     r"line 2: line is JSON but not a Spark listener event"),
    (b"\n\nhello world\n", r"line 3: not a Spark event log"),
])
def test_not_an_event_log(tmp_path, content, message):
    path = tmp_path / "input"
    path.write_bytes(content)
    with pytest.raises(ParseError, match=message):
        read_eventlog(path)


def test_byte_order_mark_and_blank_lines_are_accepted(logs_dir, tmp_path):
    source = logs_dir / "sparklens/local-1532512550423"
    marked = tmp_path / "marked"
    marked.write_bytes(b"\xef\xbb\xbf\n" + source.read_bytes().replace(b"\n", b"\n\n", 3))
    assert read_eventlog(marked).n_tasks == read_eventlog(source).n_tasks == 8
    assert sum(1 for _ in iter_events(marked)) == len(_lines_of(source))


def test_unrelated_real_files_and_folders(corpus_dir, tmp_path):
    qout = corpus_dir / "hive-explain/tpch/tpch18.q.out"
    with pytest.raises(ParseError, match=r"tpch18\.q\.out, line 1: not a Spark event log"):
        read_eventlog(qout)
    jhist = next((corpus_dir / "hadoop-jhist/apache-hadoop").glob("*.jhist"))
    with pytest.raises(ParseError, match=r"line 1: not a Spark event log"):
        read_eventlog(jhist)
    with pytest.raises(ParseError, match="no such file or directory"):
        read_eventlog(tmp_path / "missing")
    with pytest.raises(ParseError, match="folder is not a Spark event log"):
        read_eventlog(corpus_dir / "hive-explain")
    (tmp_path / "eventlog_v2_local-1").mkdir()
    with pytest.raises(ParseError, match="holds no events_<n>_<app> files"):
        read_eventlog(tmp_path / "eventlog_v2_local-1")


# --- fuzzing ------------------------------------------------------------------------------

_FUZZ_LOGS = ["apache-spark/local-1422981780767", "sparklens/local-1532512550423",
              "dr-elephant/event_log_1", "apache-spark/application_1628109047826_1317105",
              "apache-spark/local-1642039451826"]


def _mutate(data: bytes, draw) -> bytes:
    op = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "duplicate_line",
                               "swap_lines", "replace_value"]))
    at = draw(st.integers(0, max(0, len(data) - 1)))
    if op == "truncate":
        return data[:at]
    if op == "flip":
        return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1:]
    if op == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=16)) + data[at:]
    if op == "delete":
        return data[:at] + data[at + draw(st.integers(1, 2000)):]
    lines = data.split(b"\n")
    i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
    if op == "duplicate_line":
        lines.insert(j, lines[i])
    elif op == "swap_lines":
        lines[i], lines[j] = lines[j], lines[i]
    else:   # a JSON value of another type where a number or string was
        value = draw(st.sampled_from([b'"x"', b"null", b"[]", b"{}", b"-1", b"1e400",
                                      b"true", b"9223372036854775808"]))
        lines[i] = re.sub(rb':(-?\d+|"[^"]*")', b":" + value, lines[i], count=1)
    return b"\n".join(lines)


def _read_or_parse_error(path: Path) -> None:
    try:
        profile = read_eventlog(path)
    except ParseError as exc:
        assert str(exc)
        return
    assert isinstance(profile, Profile)
    json.dumps(profile.to_dict())


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_mutated_corpus_logs_give_a_profile_or_a_parse_error(corpus_dir, data):
    name = data.draw(st.sampled_from(_FUZZ_LOGS))
    raw = (corpus_dir / "spark-eventlogs" / name).read_bytes()
    mutated = _mutate(raw, data.draw)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzzed"
        path.write_bytes(mutated)
        _read_or_parse_error(path)


@pytest.mark.spark
@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_mutated_compressed_logs_give_a_profile_or_a_parse_error(spark_logs, data):
    source = data.draw(st.sampled_from([spark_logs["lz4"], spark_logs["snappy"],
                                        next(spark_logs["default"].glob("events_1_*.zstd"))]))
    mutated = _mutate(source.read_bytes(), data.draw)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / source.name
        path.write_bytes(mutated)
        _read_or_parse_error(path)


def test_no_stray_environment_dependency():
    # the reader must not need Spark or a JVM to read a log
    code = ("import sys; from jobgauge.profiler.readers.eventlog import read_eventlog; "
            "assert 'pyspark' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


# --- a log that is still growing, read by the live tail through the same layer ----------------

def _grow(sources: list[tuple[Path, bytes]], chunk: int, tail_of, on_poll) -> None:
    """Append ``sources``' bytes to their files ``chunk`` bytes at a time, in order (a
    part exists only once the one before it is whole), polling the tail after each write."""
    tail = None
    for target, data in sources:
        target.write_bytes(b"")
        for start in range(0, len(data), chunk):
            with open(target, "ab") as handle:
                handle.write(data[start:start + chunk])
            tail = tail or tail_of()
            on_poll(tail, tail.poll())
    return tail


def test_tail_reads_a_growing_rolled_zstd_log_as_it_is_written(corpus_dir, tmp_path):
    import zstandard
    from jobgauge.profiler.readers.live import EventLogTail, ProgressTracker, read_snapshot

    app = "local-1642039451826"
    source = corpus_dir / "spark-eventlogs" / "apache-spark" / app
    lines = source.read_bytes().splitlines(keepends=True)
    # Spark's rolled layout: three zstd parts, each flushed every few events (a block per
    # flush), the earlier parts closed (frame ended), the last one still open.
    parts = []
    for index, piece in enumerate((lines[:40], lines[40:80], lines[80:]), start=1):
        writer = zstandard.ZstdCompressor(level=3).compressobj()
        out = []
        for at in range(0, len(piece), 7):
            out.append(writer.compress(b"".join(piece[at:at + 7])))
            out.append(writer.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK))
        if index < 3:
            out.append(writer.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH))
        parts.append(b"".join(out))
    folder = tmp_path / f"eventlog_v2_{app}"
    folder.mkdir()
    status = folder / f"appstatus_{app}.inprogress"
    status.write_bytes(b"")
    polls = []

    def check(tail, _applied):
        # after every poll the tail holds exactly the first n events of the log
        n = tail.tracker.n_events
        fresh = ProgressTracker().feed_all(json.loads(line) for line in lines[:n])
        assert tail.snapshot(now=0).counts() == fresh.snapshot(now=0, running=True).counts()
        assert tail.running() is True
        polls.append(n)

    tail = _grow([(folder / f"events_{i}_{app}.zstd", data) for i, data in enumerate(parts, 1)],
                 251, lambda: EventLogTail(folder), check)
    assert polls == sorted(polls) and len(set(polls)) > 10     # read a little at a time
    assert polls[0] == 0 and polls[-2] < len(lines)
    status.rename(folder / f"appstatus_{app}")                  # the application ended
    tail.finish()
    assert tail.tracker.n_events == len(lines)
    finished, whole = tail.snapshot(), read_snapshot(source)
    assert tail.running() is False and finished.status == whole.status == "succeeded"
    assert finished.counts() == whole.counts() and finished.ended_s == whole.ended_s
    assert read_eventlog(folder).n_tasks == read_eventlog(source).n_tasks


def test_tail_follows_the_rename_of_an_in_progress_file(corpus_dir, tmp_path):
    from jobgauge.profiler.readers.live import EventLogTail, read_snapshot

    source = corpus_dir / "spark-eventlogs" / "sparklens" / "local-1532512550423"
    data = source.read_bytes()
    growing = tmp_path / "local-1532512550423.inprogress"
    growing.write_bytes(data[: len(data) // 2])
    tail = EventLogTail(growing)
    first = tail.poll()
    assert first > 0 and tail.running() is True
    with open(growing, "ab") as handle:
        handle.write(data[len(data) // 2:])
    growing.rename(tmp_path / "local-1532512550423")
    assert tail.poll() > 0 and tail.running() is False
    tail.finish()
    assert tail.snapshot().counts() == read_snapshot(source).counts()


@pytest.mark.spark
def test_tail_reads_spark_4_logs_as_they_grow(spark_logs, tmp_path):
    from jobgauge.profiler.readers.live import EventLogTail, read_snapshot

    for name in ("default", "lz4", "snappy"):
        original = spark_logs[name]
        if original.is_dir():                 # rolled zstd parts, in index order
            target = tmp_path / original.name
            target.mkdir()
            parts = sorted(original.glob("events_*.zstd"), key=lambda p: int(p.name.split("_")[1]))
            assert len(parts) >= 2
            sources = [(target / p.name, p.read_bytes()) for p in parts]
        else:
            target = tmp_path / name / original.name
            target.parent.mkdir()
            sources = [(target, original.read_bytes())]
        seen = []
        tail = _grow(sources, 1 << 18 if name == "default" else 1 << 10,
                     lambda target=target: EventLogTail(target),
                     lambda tail, _applied: seen.append(tail.tracker.n_events))
        tail.finish()
        whole = read_snapshot(original)
        assert seen == sorted(seen) and len(set(seen)) > 2, name
        assert tail.snapshot().counts() == whole.counts(), name
        assert tail.tracker.n_events == sum(1 for line in _spark_decoded(original)
                                            if line.strip()), name
