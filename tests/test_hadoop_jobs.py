"""Real MapReduce jobs in Hadoop's local mode: correctness, counters → Profile, failures."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest
from jobgauge.profiler.runners import hadoop_runner
from jobgauge.profiler.runners.hadoop_runner import (
    KNOBS,
    SIZES,
    build_jobs,
    java_command,
    prepare_input,
    run_mapreduce_job,
    store_arguments,
    word_dictionary,
)
from jobgauge.profiler.readers.profile import Profile

from jobgauge.errors import RunError, UsageError

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hadoop-work")


def _parts(output_dir: str) -> list[Path]:
    parts = sorted(Path(output_dir).glob("part-r-*"))
    assert parts, f"no part files in {output_dir}"
    return parts


def _check_record(record: dict, workload: str) -> Profile:
    assert record["status"] == "succeeded", record["error"]
    assert record["completed"] is True and record["error"] is None
    assert (record["source"], record["framework"], record["workload"]) == ("local", "hadoop", workload)
    assert record["instance_type"] == "local" and record["instance_count"] == 1
    assert record["vcpus"] >= 1 and record["memory_gib"] > 0
    assert record["time_kind"] == "application" and record["engine_version"].startswith("3.")
    assert 0 < record["runtime_s"] < record["process_wall_s"]
    assert record["ended_at"] > record["started_at"]
    profile = record["profile"]
    assert isinstance(profile, Profile) and profile.status == "succeeded"
    assert profile.totals["map_tasks"] > 0 and profile.totals["reduce_tasks"] > 0
    assert profile.n_tasks == profile.totals["map_tasks"] + profile.totals["reduce_tasks"]
    assert [s["name"] for s in profile.stages] == ["map", "reduce"]
    assert profile.stages[1]["parent_ids"] == [0]
    # the counters' input bytes are the input on disk, byte for byte
    on_disk = sum(p.stat().st_size for p in Path(record["input_dir"]).iterdir() if p.is_file()
                  and not p.name.startswith(("_", ".")))
    assert profile.totals["input_bytes"] == record["input_bytes"] == on_disk
    assert profile.totals["output_bytes"] == sum(p.stat().st_size for p in _parts(record["output_dir"]))
    assert profile.runtime_s == record["runtime_s"]
    return profile


def test_wordcount_counts_match_python(work_dir):
    record = run_mapreduce_job("wordcount", "tiny", {"mapreduce.job.reduces": 2, "combiner": True},
                               work_dir, timeout_s=300)
    profile = _check_record(record, "wordcount")
    text = (Path(record["input_dir"]) / "part-00000").read_text()
    expected = Counter(text.split())
    counted: Counter = Counter()
    for part in _parts(record["output_dir"]):
        for line in part.read_text().splitlines():
            word, count = line.split("\t")
            assert word not in counted, f"{word} in two reducers' output"
            counted[word] = int(count)
    assert counted == expected
    assert len(_parts(record["output_dir"])) == 2
    assert profile.totals["input_records"] == text.count("\n")
    assert profile.totals["output_records"] == len(expected)
    combine = profile.jobs[0]["counters"]["org.apache.hadoop.mapreduce.TaskCounter"]
    assert combine["COMBINE_INPUT_RECORDS"] == sum(expected.values())   # the combiner ran
    assert record["settings"]["jobgauge.wordcount.combiner"] == "true"
    assert record["settings"]["mapreduce.job.reduces"] == "2"


def test_run_hadoop_records_the_load_at_its_start_and_its_jvms_cpu_time(work_dir, tmp_path,
                                                                       capsys):
    """``jobgauge run hadoop`` records a run as the collector does: other processes'
    load at its start, whether that was quiet, and its JVM's CPU time (it recorded none)."""
    import json

    from jobgauge.cli import main
    from jobgauge.profiler.runners.collect import default_load_threshold
    from jobgauge.store import open_store

    store = tmp_path / "s.db"
    assert main(["--store", str(store), "run", "hadoop", "--workload", "wordcount",
                 "--datasize", "tiny", "--work-dir", str(work_dir), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert said["status"] == "succeeded" and said["load_at_start"] >= 0
    assert said["quiet_start"] == (said["load_at_start"] < default_load_threshold())
    # the JVM's CPU time: its start and JIT alone take seconds of it
    assert said["cpu_time_s"] > 1.0
    row = open_store(store).run_frame().iloc[0]
    assert row["load_at_start"] == said["load_at_start"]
    assert row["cpu_time_s"] == said["cpu_time_s"] and row["host_cores"] >= 1
    assert bool(row["quiet_start"]) == said["quiet_start"]


def test_sort_output_is_globally_sorted(work_dir):
    record = run_mapreduce_job("sort", "tiny", {"mapreduce.job.reduces": 2,
                                                "mapreduce.map.output.compress": True,
                                                "mapreduce.task.io.sort.mb": 16},
                               work_dir, timeout_s=300)
    profile = _check_record(record, "sort")
    input_lines = (Path(record["input_dir"]) / "part-00000").read_bytes().splitlines()
    parts = _parts(record["output_dir"])
    assert len(parts) == 2 and all(p.stat().st_size > 0 for p in parts)   # range-partitioned
    output_lines = [line for part in parts for line in part.read_bytes().splitlines()]
    keys = [line.split(b"\t", 1)[0] for line in output_lines]
    assert keys == sorted(keys)
    assert sorted(output_lines) == sorted(input_lines)
    assert profile.totals["input_records"] == profile.totals["output_records"] == len(input_lines)
    assert record["settings"]["mapreduce.map.output.compress"] == "true"
    assert record["settings"]["mapreduce.task.io.sort.mb"] == "16"


def test_sort_with_more_reducers_than_the_random_sample_holds(work_dir):
    # The tiny sort input is 62 lines, so a random tenth draws about 6 keys, and
    # sometimes 1 or none: Hadoop's writePartitionFile then indexed past the end of
    # the sample (ArrayIndexOutOfBoundsException).  Twenty reducers failed that way
    # every time; the sampler now reads every record when the draw is too small.
    record = run_mapreduce_job("sort", "tiny", {"mapreduce.job.reduces": 20}, work_dir,
                               timeout_s=300)
    _check_record(record, "sort")
    parts = _parts(record["output_dir"])
    assert len(parts) == 20
    keys = [line.split(b"\t", 1)[0] for part in parts for line in part.read_bytes().splitlines()]
    assert keys == sorted(keys) and len(keys) == 62
    assert sum(p.stat().st_size > 0 for p in parts) >= 10   # the ranges spread the keys


def test_sort_with_more_reducers_than_keys_says_so(work_dir):
    record = run_mapreduce_job("sort", "tiny", {"mapreduce.job.reduces": 100}, work_dir,
                               timeout_s=300)
    assert record["status"] == "failed"
    assert "62 distinct keys, fewer than the 100 reducers" in record["error"]
    assert "mapreduce.job.reduces" in record["error"]


def test_terasort_output_is_sorted_by_key(work_dir):
    record = run_mapreduce_job("terasort", "tiny", {"mapreduce.job.reduces": 2}, work_dir,
                               timeout_s=300)
    profile = _check_record(record, "terasort")
    data = (Path(record["input_dir"]) / "part-00000").read_bytes()
    output = b"".join(p.read_bytes() for p in _parts(record["output_dir"]))
    assert len(output) == len(data) == SIZES["terasort"]["tiny"] * 100
    records = [output[i:i + 100] for i in range(0, len(output), 100)]
    keys = [r[:10] for r in records]
    assert keys == sorted(keys)
    assert sorted(records) == sorted(data[i:i + 100] for i in range(0, len(data), 100))
    assert profile.totals["input_records"] == profile.totals["output_records"] == len(records)
    assert profile.totals["shuffle_read_records"] == len(records)
    map_stage, reduce_stage = profile.stages
    assert profile.start_ms <= map_stage["start_ms"] <= map_stage["end_ms"] == reduce_stage["start_ms"]
    assert reduce_stage["end_ms"] == profile.end_ms
    assert map_stage["duration_s"] > 0 and reduce_stage["duration_s"] > 0

    run, settings, stored_profile = store_arguments(record)
    assert set(run) >= {"source", "workload", "framework", "datasize", "input_bytes", "instance_type",
                        "instance_count", "vcpus", "memory_gib", "hourly_price_usd", "runtime_s",
                        "completed", "run_id", "status", "error", "time_kind"}
    assert "profile" not in run and settings == record["settings"] and stored_profile is profile
    assert run["datasize"] == "tiny" and run["run_id"].startswith("hadoop-terasort-tiny-")




def test_failed_job_is_a_record_not_an_exception(work_dir):
    # a 1500 MiB sort buffer cannot be allocated in a 256 MiB heap: the map task dies
    record = run_mapreduce_job("sort", "tiny", {"mapreduce.task.io.sort.mb": 1500}, work_dir,
                               timeout_s=300, java_heap_mb=256)
    assert record["status"] == "failed" and record["completed"] is False
    assert "OutOfMemoryError" in record["error"] or "Java heap space" in record["error"]
    assert record["runtime_s"] > 0
    assert record["profile"] is None or record["profile"].status == "failed"


def test_timeout_kills_the_jvm(work_dir):
    record = run_mapreduce_job("terasort", "tiny", {}, work_dir, timeout_s=1.5)
    assert record["status"] == "timed_out" and record["completed"] is False
    assert record["runtime_s"] == 1.5 and "time limit" in record["error"]
    assert record["profile"] is None
    assert record["process_wall_s"] < 30


# ---------------------------------------------------------------- set-up, knobs, data


def test_build_is_cached_and_follows_the_sources(work_dir, tmp_path, monkeypatch):
    build = build_jobs(work_dir / "build")
    compiled = build / "jobgauge" / "hadoop" / "WordCount.class"
    stamp = compiled.stat().st_mtime_ns
    assert build_jobs(work_dir / "build") == build and compiled.stat().st_mtime_ns == stamp
    sources = tmp_path / "hadoop"
    shutil.copytree(hadoop_runner._SOURCE_DIR, sources)
    with open(sources / "WordCount.java", "a") as handle:
        handle.write("\n// changed\n")
    monkeypatch.setattr(hadoop_runner, "_SOURCE_DIR", sources)
    rebuilt = build_jobs(tmp_path / "build")
    assert (rebuilt / "jobgauge" / "hadoop" / "WordCount.class").is_file()
    with open(sources / "Sort.java", "a") as handle:
        handle.write("class Broken {")
    with pytest.raises(RunError, match="javac failed"):
        build_jobs(tmp_path / "build")


def test_missing_jdk_is_a_run_error(tmp_path, monkeypatch):
    monkeypatch.setattr(hadoop_runner.shutil, "which", lambda name: None)
    with pytest.raises(RunError, match="'javac' not found on PATH"):
        build_jobs(tmp_path / "build")


def test_java_command_line(tmp_path):
    command = java_command("wordcount", tmp_path, "in", "out", "rep",
                           {"mapreduce.job.reduces": "3", "jobgauge.wordcount.combiner": "false"},
                           java_heap_mb=512, java="java")
    assert command[:2] == ["java", "-Xmx512m"]
    assert command[2] == f"-Dlog4j2.configurationFile={tmp_path.resolve() / 'log4j2.properties'}"
    assert command[3] == "-cp"
    assert command[4].startswith(str(tmp_path.resolve()) + os.pathsep) and command[4].endswith("jars/*")
    assert command[5] == "jobgauge.hadoop.WordCount"
    assert command[6:] == ["-D", "jobgauge.wordcount.combiner=false", "-D", "mapreduce.job.reduces=3",
                           "in", "out", "rep"]


@pytest.mark.parametrize("workload, size, knobs, match", [
    ("grep", "tiny", {}, r"unknown MapReduce workload 'grep'"),
    ("sort", "huge", {}, r"unknown size 'huge' for sort"),
    ("sort", "tiny", {"mapreduce.job.maps": 3}, r"unknown knob 'mapreduce.job.maps'"),
    ("sort", "tiny", {"mapreduce.job.reduces": 0},
     r"The 'mapreduce.job.reduces' knob must be an int in \[1, 256\]. Got 0 instead."),
    ("sort", "tiny", {"mapreduce.task.io.sort.mb": "big"},
     r"The 'mapreduce.task.io.sort.mb' knob must be an int. Got 'big' instead."),
    ("sort", "tiny", {"mapreduce.map.output.compress": "yes"},
     r"The 'mapreduce.map.output.compress' knob must be true or false. Got 'yes' instead."),
    ("terasort", "tiny", {"combiner": False}, r"the 'combiner' knob is for wordcount, not terasort"),
])
def test_bad_requests_are_usage_errors(tmp_path, workload, size, knobs, match):
    with pytest.raises(UsageError, match=match):
        run_mapreduce_job(workload, size, knobs, tmp_path, timeout_s=10)
    assert not (tmp_path / "runs").exists()


def test_knob_table_covers_the_documented_knobs():
    assert {"mapreduce.job.reduces", "mapreduce.task.io.sort.mb", "mapreduce.task.io.sort.factor",
            "mapreduce.map.output.compress", "combiner", "mapreduce.local.map.tasks.maximum"} <= set(KNOBS)


def _digest(folder: Path) -> str:
    return hashlib.sha256((folder / "part-00000").read_bytes()).hexdigest()


def test_inputs_are_deterministic_by_seed(tmp_path):
    first = prepare_input("sort", "tiny", tmp_path / "a", seed=3)
    again = prepare_input("sort", "tiny", tmp_path / "b", seed=3)
    other = prepare_input("sort", "tiny", tmp_path / "c", seed=4)
    assert _digest(first) == _digest(again) != _digest(other)
    text = (first / "part-00000").read_text()
    size = len(text.encode())
    longest_line = max(len(line) + 1 for line in text.splitlines())
    assert SIZES["sort"]["tiny"] <= size < SIZES["sort"]["tiny"] + longest_line
    dictionary = set(word_dictionary())
    assert len(dictionary) == 1000
    for line in text.splitlines():
        key, value = line.split("\t")
        assert 5 <= len(key.split(" ")) <= 9 and 10 <= len(value.split(" ")) <= 99
        assert set(key.split(" ")) | set(value.split(" ")) <= dictionary
    stamp = (first / "part-00000").stat().st_mtime_ns
    assert prepare_input("sort", "tiny", tmp_path / "a", seed=3) == first
    assert (first / "part-00000").stat().st_mtime_ns == stamp          # cached, not rewritten


def test_teragen_records(tmp_path):
    folder = prepare_input("terasort", "tiny", tmp_path, seed=0)
    data = (folder / "part-00000").read_bytes()
    assert len(data) == 32_000 * 100
    for row in (0, 1, 31_999):
        record = data[row * 100:(row + 1) * 100]
        assert record[10:12] == b"\x00\x11"
        assert record[12:44] == f"{row:032X}".encode()
        assert record[44:48] == b"\x88\x99\xaa\xbb" and record[96:] == b"\xcc\xdd\xee\xff"
        assert record[48:96].isalpha() and record[48:52] == record[48:49] * 4
    assert len({data[i:i + 10] for i in range(0, len(data), 100)}) == 32_000
