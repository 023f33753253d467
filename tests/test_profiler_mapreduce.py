"""MapReduce job history, conf, counter and MR1 readers against the real corpus files."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jobgauge.profiler.readers.mapreduce import (
    parse_counter_dump,
    profile_from_counters,
    read_counters,
    read_jhist,
    read_job_conf,
    read_mapreduce,
    read_mr1_history,
    sniff_mapreduce,
)
from jobgauge.profiler.readers.profile import TOTAL_METRICS, Profile

from jobgauge.errors import ParseError

# Parametrisation needs the files at collection time; same rule as conftest's shared_dir.
HADOOP = Path(os.environ.get("JOBGAUGE_SHARED") or Path(__file__).resolve().parents[2] / "shared") \
    / "corpus" / "hadoop-jhist"


def _corpus_files() -> list[Path]:
    return sorted(p for p in HADOOP.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def hadoop_dir(corpus_dir) -> Path:
    return corpus_dir / "hadoop-jhist"


def _jhist(hadoop_dir, pattern) -> Path:
    (path,) = (hadoop_dir / "apache-hadoop").glob(pattern)
    return path


def _events(path: Path) -> list[dict]:
    """The file's events, read independently of the reader under test."""
    lines = path.read_text().split("\n")[2:]
    return [json.loads(line) for line in lines if line.strip()]


def _body(event: dict) -> dict:
    return next(iter(event["event"].values()))


def _job_finished_counters(path: Path, key: str = "totalCounters") -> dict[str, int]:
    (finished,) = [e for e in _events(path) if e["type"] == "JOB_FINISHED"]
    return {c["name"]: c["value"] for g in _body(finished)[key]["groups"] for c in g["counts"]}


EXPECTED_FORMATS = {
    ".jhist": "mapreduce-jhist", "_conf.xml": "mapreduce-conf",
    ".properties": "mapreduce-counters", "truncated-job-tracker-log": "mapreduce-mr1",
}


def _expected_format(path: Path) -> str:
    return next(fmt for suffix, fmt in EXPECTED_FORMATS.items() if path.name.endswith(suffix))


# ---------------------------------------------------------------- every corpus file


def test_corpus_has_the_files_the_readers_are_written_for(hadoop_dir):
    files = [p.relative_to(hadoop_dir).as_posix() for p in _corpus_files()]
    assert len(files) == 13
    assert sum(f.endswith(".jhist") for f in files) == 6


@pytest.mark.parametrize("path", _corpus_files(), ids=lambda p: p.name[:40])
def test_every_corpus_file_parses_to_a_nonempty_profile(path):
    profile = read_mapreduce(path)
    assert isinstance(profile, Profile)
    assert profile.engine == "hadoop"
    assert profile.format == _expected_format(path) == sniff_mapreduce(path)
    assert profile.source == str(path)
    assert set(profile.totals) <= set(TOTAL_METRICS)
    assert profile.config or any(v is not None for v in profile.totals.values())
    json.dumps(profile.to_dict())                 # plain data, storable as JSON
    assert Profile.from_dict(profile.to_dict()) == profile


@pytest.mark.parametrize("path", [p for p in _corpus_files() if p.suffix == ".jhist"],
                         ids=lambda p: p.name[:40])
def test_jhist_task_counts_are_the_task_started_events(path):
    started = {}
    for event in _events(path):
        if event["type"] == "TASK_STARTED":
            body = _body(event)
            started[body["taskid"]] = body["taskType"]
    profile = read_jhist(path)
    maps = sum(kind == "MAP" for kind in started.values())
    reduces = sum(kind == "REDUCE" for kind in started.values())
    assert profile.totals["map_tasks"] == maps
    assert profile.totals["reduce_tasks"] == reduces
    assert profile.n_tasks == maps + reduces
    assert profile.n_jobs == 1
    assert profile.n_stages == (maps > 0) + (reduces > 0)
    assert [s["name"] for s in profile.stages] == [n for n, c in (("map", maps), ("reduce", reduces)) if c]
    if reduces and maps:
        assert profile.stages[1]["parent_ids"] == [profile.stages[0]["stage_id"]]
    submitted = next(_body(e) for e in _events(path) if e["type"] == "JOB_SUBMITTED")
    assert profile.app_id == submitted["jobid"]
    assert profile.app_name == submitted["jobName"]
    assert profile.user == submitted["userName"]


def test_teragen_history_counters_match_the_job_finished_event(hadoop_dir):
    path = _jhist(hadoop_dir, "*TeraGen*.jhist")
    counters = _job_finished_counters(path)
    profile = read_jhist(path)
    assert profile.status == "succeeded"
    assert profile.totals["output_bytes"] == counters["BYTES_WRITTEN"] == 10000
    assert profile.totals["input_records"] == counters["MAP_INPUT_RECORDS"] == 100
    assert profile.totals["output_records"] == counters["MAP_OUTPUT_RECORDS"] == 100  # map-only job
    assert profile.totals["executor_cpu_time_ms"] == counters["CPU_MILLISECONDS"] == 1060
    assert profile.totals["jvm_gc_time_ms"] == counters["GC_TIME_MILLIS"] == 70
    assert profile.totals["map_time_ms"] == counters["MILLIS_MAPS"] == 5956
    assert profile.totals["reduce_time_ms"] == 0 and profile.totals["reduce_tasks"] == 0
    assert profile.totals["input_bytes"] == counters["BYTES_READ"] == 0     # teragen reads no files
    assert profile.totals["shuffle_read_bytes"] is None                     # no shuffle: not a zero
    assert profile.runtime_s == pytest.approx((1416424785433 - 1416424775281) / 1000)
    assert profile.jobs[0]["counters"]["org.apache.hadoop.examples.terasort.TeraGen$Counters"] == \
        {"CHECKSUM": 118655541199 + 114863641618}


def test_sleep_job_history_reads_map_and_reduce_side_counters(hadoop_dir):
    path = _jhist(hadoop_dir, "*Sleep+job*10-1-SUCCEEDED*.jhist")
    total = _job_finished_counters(path)
    maps = _job_finished_counters(path, "mapCounters")
    reduces = _job_finished_counters(path, "reduceCounters")
    profile = read_jhist(path)
    assert profile.status == "succeeded"
    assert profile.totals["shuffle_read_bytes"] == total["REDUCE_SHUFFLE_BYTES"]
    assert profile.totals["shuffle_write_bytes"] == total["MAP_OUTPUT_MATERIALIZED_BYTES"]
    assert profile.totals["spilled_records"] == total["SPILLED_RECORDS"]
    assert profile.totals["executor_cpu_time_ms"] == total["CPU_MILLISECONDS"]
    map_stage, reduce_stage = profile.stages
    assert map_stage["executor_cpu_time_ms"] == maps["CPU_MILLISECONDS"]
    assert reduce_stage["executor_cpu_time_ms"] == reduces["CPU_MILLISECONDS"]
    assert reduce_stage["shuffle_read_bytes"] == reduces["REDUCE_SHUFFLE_BYTES"]
    # the file's JobInited says 1 reduce, but two reduce tasks started and finished
    assert profile.jobs[0]["total_reduces"] == 1 and profile.totals["reduce_tasks"] == 2
    assert profile.totals["executor_run_time_ms"] == \
        profile.totals["map_time_ms"] + profile.totals["reduce_time_ms"]


@pytest.mark.parametrize("pattern, version_note", [
    ("job_0.23.9-FAILED.jhist", "0.23.9: no counters on failed attempts"),
    ("job_2.0.3-alpha-FAILED.jhist", "2.0.3-alpha: empty counter groups on TaskFailed"),
    ("job_2.4.0-FAILED.jhist", "2.4.0"),
])
def test_failed_jobs_report_failure_and_no_invented_counters(hadoop_dir, pattern, version_note):
    path = _jhist(hadoop_dir, pattern)
    profile = read_jhist(path)
    assert profile.status == "failed", version_note
    failed = next(_body(e) for e in _events(path) if e["type"] == "JOB_FAILED")
    assert profile.end_ms == failed["finishTime"]
    # no task finished, so nothing says how many bytes moved: None, never 0
    for name in ("input_bytes", "output_bytes", "shuffle_read_bytes", "spilled_records"):
        assert profile.totals[name] is None
    map_stage = profile.stages[0]
    attempt_events = [e for e in _events(path) if e["type"].startswith("MAP_ATTEMPT_")]
    assert map_stage["attempts"] == len({_body(e)["attemptId"] for e in attempt_events})
    assert map_stage["failed_attempts"] == sum(e["type"] == "MAP_ATTEMPT_FAILED" for e in attempt_events)
    assert map_stage["succeeded_tasks"] == 0


def test_failed_job_with_zero_finished_tasks(hadoop_dir):
    path = _jhist(hadoop_dir, "*Sleep+job*-0-0-FAILED*.jhist")
    profile = read_jhist(path)
    assert profile.status == "failed"
    assert profile.jobs[0]["finished_maps"] == 0 and profile.jobs[0]["finished_reduces"] == 0
    assert profile.n_tasks == 1 and profile.n_stages == 1
    assert profile.stages[0]["failed_tasks"] == 1
    assert profile.totals["input_bytes"] is None   # the failed attempt's counters are not the job's


def test_jhist_with_its_conf(hadoop_dir):
    path = _jhist(hadoop_dir, "*Sleep+job*10-1-SUCCEEDED*.jhist")
    conf = hadoop_dir / "apache-hadoop" / "job_1329348432655_0001_conf.xml"
    profile = read_mapreduce(path, conf_path=conf)
    assert profile.config["mapreduce.job.name"] == "Sleep job"
    assert profile.config["mapreduce.task.io.sort.factor"] == "10"


# ---------------------------------------------------------------- conf XML


@pytest.mark.parametrize("relative, job_id, name, user", [
    ("apache-hadoop/job_1329348432655_0001_conf.xml", "job_1329348432655_0001", "Sleep job", "user"),
    ("dr-elephant/job_1526555215992_0001_conf.xml", "job_1526555215992_0001", "QuasiMonteCarlo", "vasaxena"),
])
def test_job_conf_in_both_styles(hadoop_dir, relative, job_id, name, user):
    path = hadoop_dir / relative
    text = path.read_text()
    profile = read_job_conf(path)
    assert profile.format == "mapreduce-conf"
    assert len(profile.config) == text.count("<property>")
    assert (profile.app_id, profile.app_name, profile.user) == (job_id, name, user)
    assert profile.n_jobs is None and profile.n_tasks is None and profile.n_stages is None
    for prop_name, value in re.findall(r"<name>([^<]*)</name><value>([^<]*)</value>", text)[:50]:
        assert profile.config[prop_name] == value


def test_conf_style_with_source_elements_keeps_values_not_sources(hadoop_dir):
    profile = read_job_conf(hadoop_dir / "dr-elephant" / "job_1526555215992_0001_conf.xml")
    assert profile.config["mapreduce.job.inputformat.class"] == \
        "org.apache.hadoop.mapreduce.lib.input.SequenceFileInputFormat"
    assert all("job.xml" not in value for value in profile.config.values())


# ---------------------------------------------------------------- counter dumps


def test_job_counter_dump(hadoop_dir):
    path = hadoop_dir / "dr-elephant" / "mrdata" / "sampleJobCounter.properties"
    profile = read_counters(path)
    assert profile.format == "mapreduce-counters"
    assert profile.totals["map_tasks"] == 3 and profile.totals["reduce_tasks"] == 1  # TOTAL_LAUNCHED_*
    assert profile.n_tasks == 4 and profile.n_stages == 2 and profile.n_jobs == 1
    assert profile.totals["input_bytes"] == 354                 # FileInputFormatCounter BYTES_READ
    assert profile.totals["output_bytes"] == 97
    assert profile.totals["shuffle_read_bytes"] == 84
    assert profile.totals["jvm_gc_time_ms"] == 173
    assert profile.totals["map_time_ms"] == 7692 and profile.totals["reduce_time_ms"] == 1870
    groups = profile.jobs[0]["counters"]
    assert "Shuffle Errors" in groups                    # from 'Shuffle&nbspErrors'
    assert len(groups) == len([line for line in path.read_text().splitlines() if "={" in line])


def test_task_counter_dumps_have_no_job_level_counts(hadoop_dir):
    mapper = read_counters(hadoop_dir / "dr-elephant" / "mrdata" / "mapperTaskCounter1.properties")
    assert mapper.totals["input_bytes"] == 118 and mapper.totals["jvm_gc_time_ms"] == 46
    assert mapper.totals["map_tasks"] is None and mapper.n_tasks is None and mapper.n_jobs is None
    reducer = read_counters(hadoop_dir / "dr-elephant" / "mrdata" / "reducerTaskCounter1.properties")
    assert reducer.totals["shuffle_read_bytes"] == 84
    assert "Shuffle Errors" in reducer.jobs[0]["counters"]     # from 'Shuffle&nbsp;Errors'


def test_profile_from_counters_takes_task_counts_when_the_counters_lack_them():
    groups = parse_counter_dump("org.apache.hadoop.mapreduce.TaskCounter={MAP_INPUT_RECORDS=7}\n")
    profile = profile_from_counters(groups, map_tasks=2, reduce_tasks=0, app_id="job_local_1")
    assert profile.totals["input_records"] == 7
    assert profile.n_tasks == 2 and [s["name"] for s in profile.stages] == ["map"]
    assert profile.app_id == "job_local_1"


# ---------------------------------------------------------------- MR1


def test_mr1_truncated_log(hadoop_dir):
    path = hadoop_dir / "apache-hadoop" / "mr1-v20" / "truncated-job-tracker-log"
    text = path.read_text()
    profile = read_mr1_history(path)
    assert profile.format == "mapreduce-mr1"
    assert profile.app_id == "job_200904211745_0002" and profile.app_name == "word count"
    assert profile.user == "hadoopqa" and profile.status == "succeeded"
    maps = set(re.findall(r'Task TASKID="(task_\w+_m_\d+)" TASK_TYPE="MAP" START_TIME', text))
    reduces = set(re.findall(r'Task TASKID="(task_\w+_r_\d+)" TASK_TYPE="REDUCE" START_TIME', text))
    assert profile.totals["map_tasks"] == len(maps) == 20
    assert profile.totals["reduce_tasks"] == len(reduces) == 1
    # the final Job record's counters
    assert profile.totals["input_bytes"] == 2019250          # FileSystemCounters HDFS_BYTES_READ
    assert profile.totals["shuffle_read_bytes"] == 705622
    assert profile.totals["spilled_records"] == 212600
    assert profile.totals["input_records"] == 72020
    assert profile.runtime_s == pytest.approx((1240336889659 - 1240335962848) / 1000)
    assert profile.config == {"mapred.child.java.opts": "-server -Xmx640m -Djava.net.preferIPv4Stack=true"}
    # truncation: the cut-short record is reported, and the task it would have closed is not finished
    warnings = profile.jobs[0]["warnings"]
    assert any(w.startswith("line 58:") and "cut short" in w for w in warnings)
    assert profile.stages[0]["succeeded_tasks"] == 19
    assert profile.stages[0]["failed_attempts"] == 1
    assert profile.jobs[0]["history_version"] == "1"


# ---------------------------------------------------------------- sniffing and errors


def test_format_is_sniffed_from_content_not_extension(hadoop_dir, tmp_path):
    source = _jhist(hadoop_dir, "*TeraGen*.jhist")
    renamed = tmp_path / "history.xml"
    shutil.copy(source, renamed)
    assert read_mapreduce(renamed).format == "mapreduce-jhist"
    counters = tmp_path / "job.jhist"
    shutil.copy(hadoop_dir / "dr-elephant" / "mrdata" / "sampleJobCounter.properties", counters)
    assert read_mapreduce(counters).format == "mapreduce-counters"


def _write(tmp_path, name, data) -> Path:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


@pytest.mark.parametrize("data, match", [
    (b"", r"empty"),
    (b"   \n\n", r"empty"),
    (b"Avro-Json\n\x00\x01\x02", r"line 2: binary data"),
    (b"Obj\x01\x04\x14avro.codec", r"binary Avro job history is not supported"),
    (b"\x1f\x8b\x08\x00\x00", r"gzip-compressed"),
    (b"Avro-Json\n\xff\xfe garbage", r"line 2: not UTF-8"),
    ("hello world\nthis is not hadoop\n", r"line 1: not a MapReduce job file \(expected a MapReduce"),
    ('{"Event":"SparkListenerLogStart","Spark Version":"3.3.0"}\n', r"line 1: not a MapReduce job file"),
    ("Avro-Json\n", r"line 2: the Avro schema is missing"),
    ("Avro-Json\n{not json\n", r"line 2, column 2: the Avro schema is not JSON"),
    ('Avro-Json\n{"type":"record","name":"Other"}\n', r"not the job history Event record"),
    ('Avro-Json\n{"type":"record","name":"Event"}\n\n', r"no events after the schema"),
    ('Avro-Json\n{"type":"record","name":"Event"}\n{"type":"X","event":[]}\n', r"line 3: event has the wrong shape"),
    (('Avro-Json\n{"type":"record","name":"Event"}\n'
      '{"type":"TASK_STARTED","event":{"a.TaskStarted":{"taskid":"t1","taskType":"MAP","startTime":1}}}\n'),
     r"line 3: no job event"),
    (('Avro-Json\n{"type":"record","name":"Event"}\n'
      '{"type":"JOB_INITED","event":{"a.JobInited":{"jobid":"job_1_1","launchTime":"soon"}}}\n'),
     r"line 3: field 'launchTime' of JobInited is 'soon' \(expected an integer\)"),
    ("org.apache.hadoop.mapreduce.TaskCounter={MAP_INPUT_RECORDS=x}\n",
     r"line 1, column \d+: bad counter in group .*\(expected NAME=integer\)"),
    ("org.apache.hadoop.mapreduce.TaskCounter={}\nnot a counter line\n",
     r"line 2: not a counter group line"),
    ("org.apache.hadoop.mapreduce.TaskCounter={}\n", r"every counter group is empty"),
    ('<?xml version="1.0"?>\n<configuration>\n<property><name>a</name><value>1</value>\n',
     r"line 4, column \d+: XML error: .*\(expected well-formed <configuration> XML\)"),
    ('<?xml version="1.0"?>\n<configuration>\n</configuration>\n', r"no <property> elements"),
    ('<?xml version="1.0"?>\n<config><property/></config>\n', r"root element is <config>"),
    ('<?xml version="1.0"?>\n<configuration>\n<property><value>1</value></property>\n</configuration>\n',
     r"line 3: <property> without a <name>"),
    ('<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY a "b">]>\n<configuration/>\n', r"DOCTYPE"),
    ('Meta VERSION="1" .\n', r"no Job record in the MR1 history"),
    ('Job JOBID="job_1_1" SUBMIT_TIME="abc" .\n', r"line 1: SUBMIT_TIME is not a number"),
])
def test_bad_input_is_one_parse_error(tmp_path, data, match):
    path = _write(tmp_path, "input", data)
    with pytest.raises(ParseError, match=match) as caught:
        read_mapreduce(path)
    assert caught.value.path == str(path)
    assert str(path) in str(caught.value)


def test_truncated_jhist_names_the_cut_line(hadoop_dir, tmp_path):
    source = _jhist(hadoop_dir, "*TeraGen*.jhist").read_bytes()
    cut = source[: source.rindex(b'"totalCounters"')]
    path = _write(tmp_path, "cut.jhist", cut)
    with pytest.raises(ParseError, match=r"line \d+, column \d+: event cut off \(truncated file\?\) "
                                         r"\(expected one JSON event per line\)") as caught:
        read_mapreduce(path)
    assert caught.value.line == cut.count(b"\n") + 1
    assert caught.value.expected == "one JSON event per line"


def test_jhist_cut_at_a_line_end_is_a_running_job(hadoop_dir, tmp_path):
    source = _jhist(hadoop_dir, "*TeraGen*.jhist").read_text()
    head = source[: source.index('{"type":"MAP_ATTEMPT_FINISHED"')]
    profile = read_mapreduce(_write(tmp_path, "running.jhist", head))
    assert profile.status == "running" and profile.end_ms is None and profile.runtime_s is None
    assert profile.totals["map_tasks"] == 2 and profile.totals["output_bytes"] is None
    assert "still running" in profile.jobs[0]["warnings"][0]


def test_missing_paths_and_wrong_combinations(hadoop_dir, tmp_path):
    with pytest.raises(ParseError, match="no such file"):
        read_mapreduce(tmp_path / "absent.jhist")
    with pytest.raises(ParseError, match="is a directory"):
        read_mapreduce(tmp_path)
    with pytest.raises(ParseError, match="conf_path only goes with a .jhist"):
        read_mapreduce(hadoop_dir / "dr-elephant" / "job_1526555215992_0001_conf.xml",
                       conf_path=hadoop_dir / "dr-elephant" / "job_1526555215992_0001_conf.xml")
    with pytest.raises(ParseError, match="no counters"):
        profile_from_counters({})


# ---------------------------------------------------------------- fuzzing real files


def _check_outcome(path: Path) -> None:
    try:
        profile = read_mapreduce(path)
    except ParseError as exc:
        assert exc.path == str(path)
        return
    assert isinstance(profile, Profile)
    assert profile.format in ("mapreduce-jhist", "mapreduce-conf", "mapreduce-counters", "mapreduce-mr1")
    assert profile.config or profile.n_tasks is not None or \
        any(v is not None for v in profile.totals.values()) or profile.app_id \
        or profile.jobs[0]["counters"]
    json.dumps(profile.to_dict())


_FUZZ = settings(max_examples=120, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@_FUZZ
@given(index=st.integers(0, len(_corpus_files()) - 1), fraction=st.floats(0, 1))
def test_fuzz_truncated_real_files(tmp_path, index, fraction):
    data = _corpus_files()[index].read_bytes()
    path = tmp_path / "fuzz-truncated"
    path.write_bytes(data[: int(len(data) * fraction)])
    _check_outcome(path)


@_FUZZ
@given(index=st.integers(0, len(_corpus_files()) - 1), position=st.floats(0, 1),
       removed=st.integers(0, 64), inserted=st.binary(max_size=16))
def test_fuzz_mutated_real_files(tmp_path, index, position, removed, inserted):
    data = _corpus_files()[index].read_bytes()
    at = int(len(data) * position)
    path = tmp_path / "fuzz-mutated"
    path.write_bytes(data[:at] + inserted + data[at + removed:])
    _check_outcome(path)


@_FUZZ
@given(index=st.integers(0, len(_corpus_files()) - 1), position=st.floats(0, 1),
       replacement=st.sampled_from(['"', "{", "}", "[", "]", ",", ":", "0", "-1", "null", "true",
                                    '""', "\n", "=", "<", ">", "\\", " ."]))
def test_fuzz_json_and_xml_punctuation(tmp_path, index, position, replacement):
    data = _corpus_files()[index].read_bytes()
    at = int(len(data) * position)
    path = tmp_path / "fuzz-punctuation"
    path.write_bytes(data[:at] + replacement.encode() + data[at + 1:])
    _check_outcome(path)
