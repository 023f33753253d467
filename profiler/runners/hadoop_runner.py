"""Real MapReduce jobs (HiBench's wordcount, sort and terasort) in Hadoop's local mode.

The jobs are Java sources in ``profiler/hadoop/`` compiled against the Hadoop
client jars that ship inside pyspark (``$SPARK_HOME/jars/hadoop-client-api-*.jar``
holds the local job runner, ``LocalClientProtocolProvider`` and the shuffle's
``LocalFetcher``, so nothing else is needed).  ``build_jobs`` compiles them
once per source change; ``run_mapreduce_job`` generates the input (seeded,
cached), starts one JVM with ``mapreduce.framework.name=local`` and
``fs.defaultFS=file:///``, and turns the job's counters into a
:class:`~jobgauge.profiler.readers.profile.Profile` with the parsers of
:mod:`jobgauge.profiler.readers.mapreduce`.

Sizes.  ``tiny`` and ``small`` are HiBench's own (``conf/workloads/micro/*.conf``:
bytes of text for wordcount and sort, 100-byte teragen rows for terasort),
except wordcount's ``small``: HiBench's 320,000,000 bytes took 213 s here
(default knobs, 2 cores shared with other work), so it is scaled down to
100,000,000 bytes to fit the 120 s budget.  ``medium-local`` sits between
``tiny`` and ``small``, sized to run 5–120 s on this machine.

==============  ======================  ===================  ==========================
size            wordcount (bytes)       sort (bytes)         terasort (rows × 100 B)
==============  ======================  ===================  ==========================
tiny            32,000                  32,000               32,000 (3.2 MB)
medium-local    32,000,000              1,000,000            320,000 (32 MB)
small           100,000,000 (HiBench:   3,200,000            3,200,000 (320 MB)
                320,000,000)
==============  ======================  ===================  ==========================

Input data.  wordcount and sort read lines shaped like Hadoop's
RandomTextWriter records, which HiBench uses for both: 5–9 key words, a tab,
10–99 value words, drawn uniformly from a fixed 1,000-word dictionary (built
from a fixed seed).  HiBench stores them as SequenceFiles; here they are plain
text, so wordcount counts key and value words alike.  terasort reads
teragen's record layout: a 10-byte random key, ``00 11``, the row id as 32
hex digits, ``88 99 AA BB``, 48 filler letters, ``CC DD EE FF``.

Jobs.  wordcount is Hadoop's (tokenise on whitespace, sum, combiner on unless
``combiner=False``).  sort and terasort are identity map/reduce jobs whose
keys are range-partitioned with ``InputSampler`` + ``TotalOrderPartitioner``
when there is more than one reducer, so their output is globally sorted
(HiBench's Hadoop sort hash-partitions, which only sorts within each part).
The range boundaries come from a random tenth of the keys, or from every key
when that draw holds fewer distinct keys than there are reducers; an input
with fewer distinct keys than reducers fails with a message that says so.

Timing.  ``runtime_s`` is the job's own time, submit to finish as measured in
the driver (including the key sampling of sort/terasort, excluding JVM start
and input generation); ``process_wall_s`` is the whole ``java`` process.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from jobgauge.profiler.readers.mapreduce import parse_counter_dump, profile_from_counters
from jobgauge.profiler.readers.profile import Profile

from jobgauge.errors import ParseError, RunError, UsageError

__all__ = [
    "JOB_CLASSES",
    "KNOBS",
    "SIZES",
    "WORKLOADS",
    "build_jobs",
    "java_command",
    "job_classpath",
    "prepare_input",
    "run_mapreduce_job",
    "spark_home",
    "store_arguments",
    "word_dictionary",
]

WORKLOADS = ("wordcount", "sort", "terasort")

# Amount of input per size: bytes of text (wordcount, sort) or 100-byte rows (terasort).
SIZES: dict[str, dict[str, int]] = {
    "wordcount": {"tiny": 32_000, "medium-local": 32_000_000, "small": 100_000_000},  # HiBench small: 320 MB
    "sort": {"tiny": 32_000, "medium-local": 1_000_000, "small": 3_200_000},
    "terasort": {"tiny": 32_000, "medium-local": 320_000, "small": 3_200_000},
}

JOB_CLASSES = {
    "wordcount": "jobgauge.hadoop.WordCount",
    "sort": "jobgauge.hadoop.Sort",
    "terasort": "jobgauge.hadoop.TeraSort",
}

# Knob name → (type, lowest, highest, what it does).  "combiner" is wordcount's
# switch; every other knob is passed to Hadoop as -D name=value.
KNOBS: dict[str, tuple[str, int | None, int | None, str]] = {
    "mapreduce.job.reduces": ("int", 1, 256, "number of reduce tasks"),
    "mapreduce.task.io.sort.mb": ("int", 1, 2047, "map-side sort buffer in MiB"),
    "mapreduce.task.io.sort.factor": ("int", 2, 10_000, "spill files merged at once"),
    "mapreduce.map.output.compress": ("bool", None, None, "compress map output before the shuffle"),
    "mapreduce.local.map.tasks.maximum": ("int", 1, 64, "map tasks run at once by the local runner"),
    "mapreduce.local.reduce.tasks.maximum": ("int", 1, 64, "reduce tasks run at once by the local runner"),
    "mapreduce.input.fileinputformat.split.maxsize": ("int", 1, None, "largest input split in bytes"),
    "combiner": ("bool", None, None, "wordcount only: run the summing reducer as a combiner"),
}

_SOURCES = ("JobReport.java", "Jobs.java", "WordCount.java", "Sort.java", "TeraSort.java")
_LOG_CONFIG = "log4j2.properties"       # copied next to the classes; errors and task failures only
_SOURCE_DIR = Path(__file__).resolve().parent / "hadoop"
_GENERATOR_VERSION = 1
_DICTIONARY_SEED = 1_000_003
_RUN_FIELDS = ("source", "workload", "framework", "datasize", "input_bytes", "instance_type",
               "instance_count", "vcpus", "memory_gib", "hourly_price_usd", "runtime_s",
               "completed", "run_id", "engine_version", "job_class", "master", "time_kind",
               "started_at", "ended_at", "status", "error")


# ---------------------------------------------------------------- toolchain


def spark_home() -> Path:
    """pyspark's install folder, whose ``jars/`` hold the Hadoop 3 client."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not list((home / "jars").glob("hadoop-client-api-*.jar")):
        raise RunError(f"no hadoop-client-api jar under {home / 'jars'}")
    return home


def _tool(name: str) -> str:
    found = shutil.which(name)
    if not found:
        raise RunError(f"{name!r} not found on PATH; install a JDK (apt-get install openjdk-17-jdk-headless)")
    return found


def job_classpath(build_dir) -> str:
    return f"{Path(build_dir).resolve()}{os.pathsep}{spark_home() / 'jars' / '*'}"


def build_jobs(build_dir) -> Path:
    """Compile the job sources into ``build_dir`` unless they are already built.

    The build is keyed by a hash of the sources and of the Hadoop jar's name,
    so an edited source or another pyspark recompiles.  Safe to call from
    several processes at once (a file lock serialises them).
    """
    build_dir = Path(build_dir)
    build_dir.mkdir(parents=True, exist_ok=True)
    sources = [_SOURCE_DIR / name for name in _SOURCES]
    missing = [str(p) for p in [*sources, _SOURCE_DIR / _LOG_CONFIG] if not p.is_file()]
    if missing:
        raise RunError("job sources missing: " + ", ".join(missing))
    jars = sorted(p.name for p in (spark_home() / "jars").glob("hadoop-client-*.jar"))
    digest = hashlib.sha256()
    for path in [*sources, _SOURCE_DIR / _LOG_CONFIG]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    digest.update("\0".join(jars).encode())
    stamp = build_dir / ".jobgauge-build"
    with open(build_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        classes = build_dir / "jobgauge" / "hadoop"
        if stamp.is_file() and stamp.read_text() == digest.hexdigest() and classes.is_dir():
            return build_dir
        staging = build_dir / f".staging-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        command = [_tool("javac"), "-nowarn", "-encoding", "UTF-8", "-d", str(staging),
                   "-cp", str(spark_home() / "jars" / "*"), *map(str, sources)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise RunError("javac failed:\n" + (done.stderr or done.stdout)[-4000:])
        shutil.copy(_SOURCE_DIR / _LOG_CONFIG, staging / _LOG_CONFIG)
        shutil.rmtree(build_dir / "jobgauge", ignore_errors=True)
        os.replace(staging / "jobgauge", build_dir / "jobgauge")
        os.replace(staging / _LOG_CONFIG, build_dir / _LOG_CONFIG)
        shutil.rmtree(staging, ignore_errors=True)
        stamp.write_text(digest.hexdigest())
    return build_dir


# ---------------------------------------------------------------- knobs


def _knob_error(name, rule, value):
    return UsageError(f"The {name!r} knob must be {rule}. Got {value!r} instead.")


def _hadoop_settings(workload: str, knobs: dict[str, Any] | None) -> dict[str, str]:
    """Validated knobs as Hadoop property name → string value."""
    settings: dict[str, str] = {}
    for name, value in (knobs or {}).items():
        if name not in KNOBS:
            raise UsageError(f"unknown knob {name!r}; known: " + ", ".join(KNOBS))
        kind, low, high, _ = KNOBS[name]
        if kind == "bool":
            if isinstance(value, str) and value.lower() in ("true", "false"):
                value = value.lower() == "true"
            if not isinstance(value, bool):
                raise _knob_error(name, "true or false", value)
            text = "true" if value else "false"
        else:
            try:
                number = int(value)
            except (TypeError, ValueError):
                raise _knob_error(name, "an int", value) from None
            if isinstance(value, bool) or (isinstance(value, float) and value != number) \
                    or (low is not None and number < low) or (high is not None and number > high):
                rule = f"an int in [{low}, {high}]" if high is not None else f"an int >= {low}"
                raise _knob_error(name, rule, value)
            text = str(number)
        if name == "combiner":
            if workload != "wordcount":
                raise UsageError(f"the 'combiner' knob is for wordcount, not {workload}")
            settings["jobgauge.wordcount.combiner"] = text
        else:
            settings[name] = text
    return settings


def java_command(workload: str, build_dir, input_dir, output_dir, report_prefix, settings: dict[str, str],
                 *, java_heap_mb: int = 2048, java: str = "java") -> list[str]:
    """The ``java`` command line of one job run (a pure function)."""
    if workload not in JOB_CLASSES:
        raise UsageError(f"unknown MapReduce workload {workload!r}; known: " + ", ".join(WORKLOADS))
    log_config = Path(build_dir).resolve() / _LOG_CONFIG
    command = [java, f"-Xmx{int(java_heap_mb)}m", f"-Dlog4j2.configurationFile={log_config}",
               "-cp", job_classpath(build_dir), JOB_CLASSES[workload]]
    for name, value in sorted(settings.items()):
        command += ["-D", f"{name}={value}"]
    return command + [str(input_dir), str(output_dir), str(report_prefix)]


# ---------------------------------------------------------------- input data


def word_dictionary(size: int = 1000) -> list[str]:
    """The fixed dictionary the text generator draws from (distinct lowercase words)."""
    rng = np.random.default_rng(_DICTIONARY_SEED)
    letters = np.frombuffer(b"etaoinshrdlcumwfgypbvkjxqz", dtype=np.uint8)
    weights = np.array([12.7, 9.1, 8.2, 7.5, 7.0, 6.7, 6.3, 6.1, 6.0, 4.3, 4.0, 2.8, 2.8, 2.4, 2.4,
                        2.2, 2.0, 2.0, 1.9, 1.5, 1.0, 0.8, 0.2, 0.2, 0.1, 0.1])
    weights /= weights.sum()
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < size:
        length = int(rng.integers(2, 13))
        word = bytes(rng.choice(letters, size=length, p=weights)).decode()
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def _text_chunk(rng, words_matrix, word_lengths, records: int) -> tuple[np.ndarray, np.ndarray]:
    """``records`` RandomTextWriter-like lines as bytes, and each line's byte length."""
    key_words = rng.integers(5, 10, records)
    value_words = rng.integers(10, 100, records)
    per_record = key_words + value_words
    tokens = rng.integers(0, len(word_lengths), int(per_record.sum()))
    separators = np.full(len(tokens), ord(" "), dtype=np.uint8)
    ends = np.cumsum(per_record) - 1
    separators[ends] = ord("\n")
    separators[ends - value_words] = ord("\t")
    lengths = word_lengths[tokens]
    matrix = words_matrix[tokens]
    matrix[np.arange(len(tokens)), lengths] = separators
    mask = np.arange(matrix.shape[1])[None, :] <= lengths[:, None]
    record_bytes = np.add.reduceat(lengths + 1, np.concatenate(([0], ends[:-1] + 1)))
    return matrix[mask], record_bytes


def _write_text(path: Path, target_bytes: int, seed: int) -> tuple[int, int]:
    """Lines until at least ``target_bytes`` (RandomTextWriter stops the same way)."""
    words = word_dictionary()
    width = max(map(len, words)) + 1
    words_matrix = np.zeros((len(words), width), dtype=np.uint8)
    word_lengths = np.array([len(w) for w in words])
    for i, word in enumerate(words):
        words_matrix[i, :len(word)] = np.frombuffer(word.encode(), dtype=np.uint8)
    rng = np.random.default_rng(seed)
    written = records = 0
    with open(path, "wb") as out:
        while written < target_bytes:
            data, record_bytes = _text_chunk(rng, words_matrix, word_lengths, 20_000)
            cumulative = np.cumsum(record_bytes)
            needed = target_bytes - written
            if cumulative[-1] >= needed:
                keep = int(np.searchsorted(cumulative, needed)) + 1
                data = data[:int(cumulative[keep - 1])]
                record_bytes = record_bytes[:keep]
            out.write(data.tobytes())
            written += int(record_bytes.sum())
            records += len(record_bytes)
    return written, records


_HEX = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)


def _write_teragen(path: Path, rows: int, seed: int) -> tuple[int, int]:
    """``rows`` 100-byte records in teragen's layout."""
    rng = np.random.default_rng(seed)
    with open(path, "wb") as out:
        for first in range(0, rows, 100_000):
            count = min(100_000, rows - first)
            block = np.empty((count, 100), dtype=np.uint8)
            block[:, 0:10] = rng.integers(0, 256, (count, 10), dtype=np.uint8)
            block[:, 10:12] = (0x00, 0x11)
            row_ids = np.arange(first, first + count, dtype=np.uint64)
            block[:, 12:28] = ord("0")
            shifts = np.arange(15, -1, -1, dtype=np.uint64) * np.uint64(4)
            block[:, 28:44] = _HEX[(row_ids[:, None] >> shifts[None, :]) & np.uint64(15)]
            block[:, 44:48] = (0x88, 0x99, 0xAA, 0xBB)
            letters = rng.integers(ord("A"), ord("Z") + 1, (count, 12), dtype=np.uint8)
            block[:, 48:96] = np.repeat(letters, 4, axis=1)
            block[:, 96:100] = (0xCC, 0xDD, 0xEE, 0xFF)
            out.write(block.tobytes())
    return rows * 100, rows


def prepare_input(workload: str, size: str, data_dir, *, seed: int = 0) -> Path:
    """The job's input folder under ``data_dir``, generated once per (workload, size, seed)."""
    if workload not in SIZES:
        raise UsageError(f"unknown MapReduce workload {workload!r}; known: " + ", ".join(WORKLOADS))
    if size not in SIZES[workload]:
        raise UsageError(f"unknown size {size!r} for {workload}; known: " + ", ".join(SIZES[workload]))
    amount = SIZES[workload][size]
    data_dir = Path(data_dir)
    name = f"{workload}-{size}-seed{seed}"
    folder = data_dir / name
    marker = data_dir / f"{name}.json"
    expected = {"workload": workload, "size": size, "seed": seed, "amount": amount,
                "generator_version": _GENERATOR_VERSION}
    if marker.is_file() and folder.is_dir():
        try:
            recorded = json.loads(marker.read_text())
        except json.JSONDecodeError:
            recorded = {}
        if {k: recorded.get(k) for k in expected} == expected and \
                _folder_bytes(folder) == recorded.get("input_bytes"):
            return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    part = folder / "part-00000"
    if workload == "terasort":
        written, records = _write_teragen(part, amount, seed)
    else:
        written, records = _write_text(part, amount, seed)
    marker.write_text(json.dumps({**expected, "input_bytes": written, "records": records}))
    return folder


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir()
               if p.is_file() and not p.name.startswith(("_", ".")))


# ---------------------------------------------------------------- running


def _machine() -> dict[str, Any]:
    """vCPUs and memory of this machine, as ``jobgauge.job.Cluster.this_machine`` says."""
    from jobgauge.job import Cluster

    machine = Cluster.this_machine()
    return {"vcpus": int(machine.vcpus), "memory_gib": machine.memory_gib}


def _utc(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000.0, tz=UTC)


def run_mapreduce_job(workload: str, size: str, knobs: dict[str, Any] | None = None,
                      work_dir=None, timeout_s: float = 600, *, seed: int = 0,
                      java_heap_mb: int = 2048, keep_output: bool = True) -> dict[str, Any]:
    """Run one MapReduce job in local mode and return its run record.

    The record has the fields of ``Store.add_run``'s ``run`` (source="local",
    framework="hadoop", datasize=size, runtime_s, completed, status
    succeeded/failed/timed_out, error, ...) plus ``settings`` (the Hadoop
    properties that matter, effective values), ``profile`` (a Profile from the
    job's counters, or None when the job never got that far),
    ``process_wall_s``, ``input_dir``, ``output_dir`` and ``run_dir``.

    A job that fails or runs past ``timeout_s`` (its JVM is killed) is a
    record with that status, not an exception; RunError means the run could
    not be set up (no JDK, no pyspark, sources that do not compile).
    """
    if workload not in JOB_CLASSES:
        raise UsageError(f"unknown MapReduce workload {workload!r}; known: " + ", ".join(WORKLOADS))
    if size not in SIZES[workload]:
        raise UsageError(f"unknown size {size!r} for {workload}; known: " + ", ".join(SIZES[workload]))
    if not timeout_s or timeout_s <= 0:
        raise UsageError(f"timeout_s must be > 0. Got {timeout_s!r} instead.")
    settings = _hadoop_settings(workload, knobs)
    work_dir = Path(work_dir) if work_dir is not None else Path.cwd() / "hadoop-work"
    build_dir = build_jobs(work_dir / "build")
    input_dir = prepare_input(workload, size, work_dir / "data", seed=seed)
    input_bytes = _folder_bytes(input_dir)

    run_id = f"hadoop-{workload}-{size}-{uuid.uuid4().hex[:12]}"
    run_dir = work_dir / "runs" / run_id
    run_dir.mkdir(parents=True)
    output_dir = run_dir / "output"
    report_prefix = run_dir / "report"
    command = java_command(workload, build_dir, input_dir, output_dir, report_prefix, settings,
                           java_heap_mb=java_heap_mb, java=_tool("java"))
    (run_dir / "command.json").write_text(json.dumps(command))

    started = time.time()
    timed_out = False
    with open(run_dir / "stdout.log", "wb") as stdout, open(run_dir / "stderr.log", "wb") as stderr:
        try:
            process = subprocess.Popen(command, stdout=stdout, stderr=stderr, start_new_session=True)
        except OSError as exc:
            raise RunError(f"cannot start java: {exc}") from None
        try:
            returncode = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(process.pid, signal.SIGKILL)   # the JVM's own process group
            returncode = process.wait()
    process_wall_s = time.time() - started

    report = _read_report(report_prefix)
    # with the shipped log4j2 config stderr holds only errors; the cause comes first
    stderr_head = (run_dir / "stderr.log").read_bytes()[:3000].decode("utf-8", "replace").strip()
    if timed_out:
        status, error = "timed_out", f"killed after {timeout_s:g} s (time limit)"
    elif report is not None and report.get("status") == "SUCCEEDED" and returncode == 0:
        status, error = "succeeded", None
    else:
        status = "failed"
        error = "\n".join(part for part in ((report or {}).get("error"), stderr_head) if part) \
            or f"java exited with code {returncode}"

    effective = dict(settings)
    if report is not None:
        effective.update({k: str(v) for k, v in (report.get("settings") or {}).items()})
    if timed_out or report is None or report.get("job_runtime_ms") is None:
        runtime_s = float(timeout_s) if timed_out else process_wall_s
    else:
        runtime_s = report["job_runtime_ms"] / 1000.0
    profile = _profile(report, report_prefix, status, effective) if report else None
    started_ms = report.get("submit_ms") if report else int(started * 1000)
    ended_ms = report.get("finish_ms") if report else int((started + process_wall_s) * 1000)

    if not keep_output:
        shutil.rmtree(output_dir, ignore_errors=True)
    return {
        "source": "local", "workload": workload, "framework": "hadoop", "datasize": size,
        "input_bytes": input_bytes, "instance_type": "local", "instance_count": 1,
        **_machine(), "hourly_price_usd": None, "runtime_s": runtime_s,
        "completed": status == "succeeded", "run_id": run_id,
        "engine_version": (report or {}).get("hadoop_version"),
        "job_class": JOB_CLASSES[workload], "master": "local", "time_kind": "application",
        "started_at": _utc(started_ms), "ended_at": _utc(ended_ms),
        "status": status, "error": error,
        "settings": effective, "profile": profile, "process_wall_s": process_wall_s,
        "input_dir": str(input_dir), "output_dir": str(output_dir), "run_dir": str(run_dir),
    }


def _read_report(report_prefix: Path) -> dict | None:
    path = Path(f"{report_prefix}.json")
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise RunError(f"the job driver wrote an unreadable report {path}: {exc}") from None


def _profile(report: dict, report_prefix: Path, status: str, settings: dict[str, str]) -> Profile | None:
    counters_path = Path(f"{report_prefix}.counters.properties")
    if not counters_path.is_file() or not counters_path.read_text().strip():
        return None                       # the job died before it counted anything
    try:
        groups = parse_counter_dump(counters_path.read_text(), path=counters_path)
    except ParseError as exc:
        raise RunError(f"the job driver wrote unreadable counters: {exc}") from None

    def count(key):
        value = report.get(key)
        return value if isinstance(value, int) and value >= 0 else None

    runtime_ms = report.get("job_runtime_ms")
    profile = profile_from_counters(
        groups, format="mapreduce-counters", source=str(counters_path),
        map_tasks=count("map_tasks"), reduce_tasks=count("reduce_tasks"),
        engine_version=report.get("hadoop_version"), app_id=report.get("job_id"),
        app_name=report.get("job_name"), status=status,
        start_ms=report.get("submit_ms"), end_ms=report.get("finish_ms"),
        runtime_s=None if runtime_ms is None else runtime_ms / 1000.0, config=dict(settings))
    # Phase times from the driver (the local runner reports no task times): maps run
    # from submission until map progress reaches 1, then the reduces until the end.
    bounds = {"map": (count("run_start_ms"), count("maps_done_ms")),
              "reduce": (count("maps_done_ms"), count("finish_ms"))}
    for stage in profile.stages:
        start_ms, end_ms = bounds[stage["name"]]
        stage["start_ms"], stage["end_ms"] = start_ms, end_ms
        stage["duration_s"] = (end_ms - start_ms) / 1000.0 if None not in (start_ms, end_ms) else None
    return profile


def store_arguments(record: dict[str, Any]) -> tuple[dict, dict[str, str], Profile | None]:
    """``(run, settings, profile)`` for ``store.add_run(*store_arguments(record))``."""
    run = {key: record[key] for key in _RUN_FIELDS if key in record}
    return run, dict(record.get("settings") or {}), record.get("profile")
