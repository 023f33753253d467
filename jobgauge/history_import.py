"""A cluster's own history -> runs in the store (``jobgauge import`` and ``jobgauge sync``).

Inputs, in any mix (:func:`import_history`):

* Spark event logs: files in every codec and layout ``read_eventlog`` reads,
  and folders of them (walked recursively);
* Spark History Server URLs (``http://host:18080``): every finished
  application, listed page by page newest first, each one's event log fetched
  from ``/api/v1/applications/<id>/<attempt>/logs`` (``read_history`` over REST
  where the server does not hand out logs); ``since`` keeps only applications
  that ended after a time, and the store remembers the newest end time read
  per server (:meth:`Store.sync_mark`), so the next import of that server
  (``jobgauge sync``) asks only for what finished after it;
* MapReduce job-history folders: ``.jhist`` files with their
  ``<job id>_conf.xml`` beside them, and MR1 job-tracker history logs.

Each application or MapReduce job becomes one run (:func:`run_from_profile`)
of source ``history``: ``run_id`` is the application id plus its attempt, so
the same application imported twice (from a file and from the server, too)
is stored once; ``workload`` is its job key (:func:`job_key`), shared by
reruns of the same job.  Its settings, profile and stage DAG are stored with
it.  An input that cannot be read is skipped with one line saying why; the
rest still land.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from jobgauge.errors import GaugeError, ParseError, StoreError, UsageError

__all__ = ["BATCH_RUNS", "ImportReport", "RunBatch", "SOURCE", "import_history", "import_server",
           "is_history_input", "job_key", "list_finished_applications", "plan_fingerprint",
           "run_from_profile", "spark_resources"]

SOURCE = "history"
BATCH_RUNS = 50                      # runs written per store transaction (RunBatch)
LIST_PAGE = 100                      # applications per History Server listing request
# Each sync also looks this far back before the stored mark: a log that reaches the
# server late (copied in, slow upload) but ended earlier is still found.  Runs
# already in the store are recognised from the listing and not fetched again.
SYNC_LOOKBACK_MS = 3_600_000
# Spark versions the event-log reader understands (major versions); a log naming
# another version is skipped rather than read into garbage.
KNOWN_SPARK_MAJORS = (1, 2, 3, 4)
# Interactive shells: their app name and main class say nothing about the job,
# so the job key uses a fingerprint of the SQL plans it ran, where it has any.
SHELL_MAINS = {"org.apache.spark.repl.Main", "pyspark-shell", "sparkr-shell",
               "org.apache.spark.sql.hive.thriftserver.SparkSQLCLIDriver", "spark-shell"}
_JOB_ID = re.compile(r"(job_\d+_\d+)")
_VERSION = re.compile(r"^(\d+)\.(\d+)")
_PLAN_NODE = re.compile(r"^[\s:+\-|*]*(?:\(\d+\)\s*)?([A-Za-z][A-Za-z0-9]*)")
_LOCAL_CLUSTER = re.compile(r"^local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\]$")


@dataclass
class ImportReport:
    """What one import did: counts, one line per skipped input, and the runs read."""

    added: int = 0
    already_present: int = 0
    skipped: list[dict] = field(default_factory=list)     # {"input", "reason"}
    ignored_files: int = 0                                # files in folders that are no history
    still_running: int = 0                                # in-progress logs found in folders
    runs: list[dict] = field(default_factory=list)        # {"run_id", "job_key", ...}
    servers: dict[str, dict] = field(default_factory=dict)  # url -> {"listed", "high_water_ms"}

    def to_dict(self) -> dict:
        return {"added": self.added, "already_present": self.already_present,
                "skipped": self.skipped, "ignored_files": self.ignored_files,
                "still_running": self.still_running,
                "runs": self.runs, "servers": self.servers}

    def summary_line(self) -> str:
        text = (f"imported {self.added} run(s), {self.already_present} already in the store, "
                f"{len(self.skipped)} skipped")
        if self.still_running:
            text += f", {self.still_running} application(s) still running (left for later)"
        if self.ignored_files:
            text += f", {self.ignored_files} file(s) in folders that are not job histories"
        return text


# --------------------------------------------------------------------------- inputs

def is_history_input(item: str) -> bool:
    """True for what this module imports; False for CSV run tables (``.csv``, ``.csv.gz``)."""
    return not str(item).lower().endswith((".csv", ".csv.gz"))


def _is_url(item: str) -> bool:
    return str(item).startswith(("http://", "https://"))


def _is_jhist(path: Path) -> bool:
    return path.suffix == ".jhist"


def _in_progress(path: Path) -> bool:
    from jobgauge.profiler.readers._eventlog_io import resolve_layout

    try:
        return resolve_layout(path).in_progress
    except ParseError:
        return False


def _walk(folder: Path, report: ImportReport):
    """Yield ``("eventlog"|"mapreduce", path)`` for every job history under ``folder``.

    Logs of applications still running (``.inprogress``) are counted, not read:
    a later import or sync takes them once they are finished.
    """
    from jobgauge.profiler.readers._eventlog_io import is_legacy_dir, is_rolling_dir
    from jobgauge.profiler.readers.eventlog import looks_like_eventlog
    from jobgauge.profiler.readers.mapreduce import mapreduce_kind

    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_dir() and not (is_rolling_dir(entry) or is_legacy_dir(entry)):
            yield from _walk(entry, report)
        elif entry.is_dir() or looks_like_eventlog(entry):
            if _in_progress(entry):
                report.still_running += 1
            else:
                yield "eventlog", entry
        elif _is_jhist(entry) or (entry.suffix == "" and
                                  mapreduce_kind(entry) == "mapreduce-mr1"):
            yield "mapreduce", entry
        else:
            report.ignored_files += 1


def _local_items(item: str, report: ImportReport):
    from jobgauge.profiler.readers._eventlog_io import is_legacy_dir, is_rolling_dir
    from jobgauge.profiler.readers.eventlog import looks_like_eventlog
    from jobgauge.profiler.readers.mapreduce import mapreduce_kind

    path = Path(item)
    if not path.exists():
        report.skipped.append({"input": item, "reason": "no such file or directory"})
        return
    if path.is_dir() and not (is_rolling_dir(path) or is_legacy_dir(path)):
        yield from _walk(path, report)
    elif path.is_dir() or looks_like_eventlog(path):
        yield "eventlog", path
    elif mapreduce_kind(path) in ("mapreduce-jhist", "mapreduce-mr1"):
        yield "mapreduce", path
    else:
        report.skipped.append({"input": item, "reason": (
            "not a Spark event log, MapReduce job history (.jhist, MR1 log) or History "
            "Server URL")})


# --------------------------------------------------------------------------- reading

def _check_version(profile) -> None:
    version = profile.engine_version
    if profile.engine != "spark" or version is None:   # Spark < 1.3 logs name no version
        return
    match = _VERSION.match(str(version))
    if not match or int(match.group(1)) not in KNOWN_SPARK_MAJORS:
        majors = ", ".join(f"{m}.x" for m in KNOWN_SPARK_MAJORS)
        raise ParseError(f"unknown Spark version {version!r} (this reader knows Spark {majors})",
                         path=profile.source)


def _check_finished(profile) -> None:
    if profile.runtime_s is None or profile.runtime_s < 0:
        why = next((n for n in profile.notes if "ApplicationEnd" in n or "incomplete" in n), None)
        raise ParseError("no end of the application in the log: "
                         + (why or "it is still running or was cut off"), path=profile.source)


def read_spark_eventlog(path: Path) -> tuple:
    """``(profile, main, attempt)`` of one event log: its Profile (executors with
    their peak JVM heap where the log has it), main class or script, and attempt id."""
    from jobgauge.profiler.readers.eventlog import read_eventlog

    from jobgauge.profiler.readers.app_report import memory_peaks, with_memory_peaks

    profile = read_eventlog(path)
    _check_version(profile)
    _check_finished(profile)
    with_memory_peaks(profile, memory_peaks(path))
    return (profile, *_launch_facts(path))


def _launch_facts(path: Path) -> tuple:
    """``(main, attempt)``: the main class or script (from ``sun.java.command``) and the
    ``App Attempt ID`` of the application start.

    Reads only the first events (the environment and application start come
    before any job), so it adds almost nothing to the import of a long log.
    """
    from jobgauge.profiler.readers.eventlog import iter_events

    main = attempt = None
    seen = 0
    try:
        for event in iter_events(path):
            kind = event.get("Event")
            if kind == "SparkListenerEnvironmentUpdate":
                system = event.get("System Properties") or {}
                if isinstance(system, list):
                    system = dict(system)
                main = main_from_command(system.get("sun.java.command", ""))
                seen += 1
            elif kind == "SparkListenerApplicationStart":
                attempt = event.get("App Attempt ID")
                seen += 1
            elif kind in ("SparkListenerJobStart", "SparkListenerApplicationEnd"):
                break
            if seen == 2:
                break
    except ParseError:
        pass
    return main, None if attempt in (None, "") else str(attempt)


def main_from_command(command: str) -> str | None:
    """``SparkSubmit --class X ... app.jar`` -> ``X``; ``... job.py args`` -> ``job.py``."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if not words:
        return None
    for flag in ("--class",):
        if flag in words[:-1]:
            return words[words.index(flag) + 1]
    with_value = {"--master", "--deploy-mode", "--conf", "-c", "--name", "--jars", "--files",
                  "--py-files", "--archives", "--packages", "--repositories", "--properties-file",
                  "--driver-memory", "--executor-memory", "--driver-cores", "--executor-cores",
                  "--num-executors", "--queue", "--jar", "--arg", "--driver-class-path",
                  "--driver-java-options", "--exclude-packages", "--keytab", "--principal",
                  "--proxy-user", "--total-executor-cores", "--driver-library-path",
                  "--properties"}
    index = 1
    while index < len(words):
        word = words[index]
        if word in with_value:
            index += 2
            continue
        if word.startswith("-"):
            index += 1
            continue
        return Path(word).name if word.endswith((".py", ".R", ".r", ".jar")) else word
    return None


def read_mapreduce_history(path: Path):
    """The Profile of one ``.jhist`` (with ``<job id>_conf.xml`` beside it) or MR1 log."""
    from jobgauge.profiler.readers.mapreduce import read_jhist, read_mapreduce

    if not _is_jhist(path):
        profile = read_mapreduce(path)
    else:
        named = _JOB_ID.match(path.name)
        conf = path.parent / f"{named.group(1)}_conf.xml" if named else None
        profile = read_jhist(path, conf_path=conf if conf and conf.is_file() else None)
        if not profile.config and profile.app_id:
            conf = path.parent / f"{profile.app_id}_conf.xml"
            if conf.is_file():
                profile = read_jhist(path, conf_path=conf)
    if profile.format not in ("mapreduce-jhist", "mapreduce-mr1"):
        raise ParseError(f"a {profile.format} file alone is not a job history",
                         path=path, expected="a .jhist or an MR1 job history log")
    _check_finished(profile)
    return profile


# --------------------------------------------------------------------------- runs

def plan_fingerprint(plans) -> str | None:
    """A short hash of the operators of SQL physical plans, blind to ids, paths and literals.

    Reruns of the same queries over other data or other dates get the same fingerprint.
    """
    names = []
    for plan in plans:
        if not plan:
            continue
        for line in str(plan).split("\n\n", 1)[0].splitlines():
            match = _PLAN_NODE.match(line)
            if match and not line.lstrip().startswith(("==", "(")):
                names.append(match.group(1))
        names.append("|")
    if not any(n != "|" for n in names):
        return None
    return hashlib.sha1(" ".join(names).encode()).hexdigest()[:10]


def job_key(profile, main: str | None = None) -> str:
    """The name reruns of one job share: app name plus main class or script.

    An interactive shell (``Spark shell``, ``pyspark-shell``) runs many kinds
    of work under one name, so its key uses a fingerprint of its SQL plans
    instead of its main class when it ran SQL.
    """
    name = (profile.app_name or "").strip() or (profile.app_id or "unnamed")
    if profile.engine == "hadoop":
        mapper = (profile.config.get("mapreduce.job.map.class")
                  or profile.config.get("mapred.mapper.class"))
        main = mapper or main
    elif main in SHELL_MAINS or main is None:
        plans = [s.get("physical_plan_description") for s in profile.sql]
        fingerprint = plan_fingerprint(plans)
        if fingerprint:
            main = f"sql {fingerprint}"
    key = f"{name} ({main})" if main and main != name else name
    return key[:200]


def run_id_of(profile, attempt: str | None = None) -> str:
    """Application id plus attempt (``application_1_2/1``); a content hash when the log has no id."""
    if profile.app_id:
        return f"{profile.app_id}/{attempt}" if attempt not in (None, "") else profile.app_id
    digest = hashlib.sha1(json.dumps(profile.summary(), sort_keys=True, default=str).encode())
    return "sha1:" + digest.hexdigest()[:20]


def _memory_gib(text, default: str) -> float:
    from jobgauge.job import memory_gib

    try:
        return memory_gib(text or default)
    except UsageError:
        return memory_gib(default)


def spark_resources(profile) -> dict:
    """Where a Spark application ran, in the run table's words.

    ``local[N]``: one machine (``instance_type`` ``local[N]``) with N cores and
    the driver's memory; ``local[*]`` takes the cores of its driver executor
    (this machine's when the log does not say).  ``local-cluster[W,C,M]``: W
    nodes of C cores and M MiB.  A cluster master (``yarn``, ``spark://``,
    ``k8s://``): the hosts of its executors, each with the cores and memory
    of the executors it held; ``executor_*`` say how the executors were asked for.
    """
    from jobgauge.job import DEFAULT_DRIVER_MEMORY, DEFAULT_EXECUTOR_MEMORY

    config = profile.config
    master = config.get("spark.master") or ("yarn" if str(profile.app_id or "").startswith(
        "application_") else "local[*]")
    executors = [e for e in profile.executors if e.get("executor_id") != "driver"]
    executor_memory_gib = _memory_gib(config.get("spark.executor.memory"),
                                      DEFAULT_EXECUTOR_MEMORY)
    if master.startswith("local-cluster"):
        match = _LOCAL_CLUSTER.match(master)
        if match:
            workers, cores, memory_mb = (int(g) for g in match.groups())
            return {"instance_type": "local-cluster", "instance_count": workers, "vcpus": cores,
                    "memory_gib": round(memory_mb / 1024, 3), "master": master,
                    "executor_instances": workers, "executor_cores": cores,
                    "executor_memory_mb": memory_mb}
    if master.startswith("local"):
        from jobgauge.job import local_cores

        driver = [e.get("cores") for e in profile.executors if e.get("cores")]
        try:
            cores = driver[0] if driver and "*" in master else local_cores(master)
        except UsageError:          # local[N,F] (with retries) and other spellings
            cores = driver[0] if driver else local_cores("local[*]")
        memory = _memory_gib(config.get("spark.driver.memory"), DEFAULT_DRIVER_MEMORY)
        return {"instance_type": f"local[{cores}]", "instance_count": 1, "vcpus": cores,
                "memory_gib": round(memory, 3), "master": master, "executor_instances": 1,
                "executor_cores": cores, "executor_memory_mb": int(memory * 1024)}
    kind = ("yarn" if master.startswith("yarn") else "kubernetes" if master.startswith("k8s")
            else "standalone" if master.startswith("spark://") else
            "mesos" if master.startswith("mesos") else master.split(":")[0][:64])
    per_host: dict[str, list[int]] = {}
    for executor in executors:
        per_host.setdefault(executor.get("host") or executor["executor_id"], []).append(
            int(executor.get("cores") or 1))
    asked_cores = config.get("spark.executor.cores")
    executor_cores = (max((c for cs in per_host.values() for c in cs), default=None)
                      or (int(asked_cores) if str(asked_cores or "").isdigit() else 1))
    if per_host:
        busiest = max(per_host.values(), key=lambda cs: (sum(cs), len(cs)))
        hosts, vcpus, memory = len(per_host), sum(busiest), len(busiest) * executor_memory_gib
    else:
        instances = config.get("spark.executor.instances")
        hosts = int(instances) if str(instances or "").isdigit() and int(instances) > 0 else 1
        vcpus, memory = executor_cores, executor_memory_gib
    return {"instance_type": kind, "instance_count": hosts, "vcpus": float(vcpus),
            "memory_gib": round(memory, 3), "master": master,
            "executor_instances": len(executors) or None, "executor_cores": executor_cores,
            "executor_memory_mb": int(executor_memory_gib * 1024)}


def mapreduce_resources(profile) -> dict:
    """A MapReduce job's history names no nodes: one container's size is recorded.

    ``instance_type`` is ``yarn`` (``mr1`` for pre-YARN logs), one instance,
    with the vcores and memory each map container asked for.
    """
    config = profile.config
    vcores = config.get("mapreduce.map.cpu.vcores", "1")
    memory_mb = config.get("mapreduce.map.memory.mb", "1024")
    vcpus = float(vcores) if vcores.replace(".", "", 1).isdigit() else 1.0
    memory = float(memory_mb) / 1024 if memory_mb.isdigit() else 1.0
    return {"instance_type": "mr1" if profile.format == "mapreduce-mr1" else "yarn",
            "instance_count": 1, "vcpus": max(vcpus, 1.0), "memory_gib": max(memory, 0.001),
            "master": None, "executor_instances": None, "executor_cores": None,
            "executor_memory_mb": None}


def _settings(profile) -> dict:
    if profile.engine != "hadoop" or profile.config:
        return dict(profile.config)
    job = profile.jobs[0] if profile.jobs else {}     # a .jhist without its conf.xml
    named = {"mapreduce.job.name": job.get("name"), "mapreduce.job.user.name": job.get("user"),
             "mapreduce.job.queuename": job.get("queue"),
             "mapreduce.job.maps": job.get("total_maps"),
             "mapreduce.job.reduces": job.get("total_reduces")}
    return {k: str(v) for k, v in named.items() if v is not None}


def _utc(ms):
    return None if ms is None else datetime.fromtimestamp(ms / 1000.0, tz=timezone.utc)


def run_from_profile(profile, *, main: str | None = None, attempt: str | None = None) -> tuple:
    """``(run, settings)`` of one application or MapReduce job, as the store records it."""
    resources = spark_resources(profile) if profile.engine == "spark" \
        else mapreduce_resources(profile)
    status = profile.status if profile.status in ("succeeded", "failed") else "failed"
    failures = [j.get("failure") or j.get("diagnostics") for j in profile.jobs
                if j.get("result", j.get("status")) == "failed"]
    run = {
        "source": SOURCE, "run_id": run_id_of(profile, attempt),
        "workload": job_key(profile, main), "framework": profile.engine,
        "engine_version": profile.engine_version, "job_class": (main or None) and main[:200],
        "datasize": "", "input_bytes": profile.input_size(),
        "hourly_price_usd": None, "time_kind": "application",
        "started_at": _utc(profile.start_ms), "ended_at": _utc(profile.end_ms),
        "runtime_s": profile.runtime_s, "completed": status == "succeeded", "status": status,
        "error": next((str(f)[:500] for f in failures if f), None)
        if status != "succeeded" else None,
        **resources,
    }
    return run, _settings(profile)


def stage_dag(profile) -> dict | None:
    """The stage DAG of a profile as the store keeps it (node-link JSON), None when it has none."""
    if not profile.stages:
        return None
    from jobgauge.dag import QueryDag

    try:
        dag = QueryDag.from_profile(profile).to_dict()
    except GaugeError:
        return None
    dag["source_format"] = profile.format
    return dag


class RunBatch:
    """Runs read but not yet in the store, written together every ``size`` runs.

    One store transaction per batch (:meth:`Store.add_profiled_runs`) instead of
    one per run: a commit is the slowest step of an import.  A run lands whole
    (settings, profile, DAG) or not at all.  A run the store already holds is
    counted as present: the store's unique constraint says so, a run read
    twice in one import too.  When a batch cannot be written, each of its runs
    is tried alone, so only the run the store refuses is skipped, with the
    reason.  History Server marks wait in the batch and are written only once
    the runs before them are stored.  Call :meth:`flush` at the end (and on an
    error) so nothing read is lost.
    """

    def __init__(self, store, report: ImportReport, *, existing: set | None = None,
                 size: int = BATCH_RUNS):
        self.store = store
        self.report = report
        self.existing = set(store.run_ids(SOURCE)) if existing is None else existing
        self.size = size
        self.pending: list[tuple[dict, tuple | None]] = []   # (report row, store item | None)
        self.marks: dict[str, int] = {}                       # server root -> end ms

    def add(self, profile, *, main: str | None = None, attempt: str | None = None) -> None:
        """Queue one profile's run (settings, profile, DAG); write the batch when full."""
        run, settings = run_from_profile(profile, main=main, attempt=attempt)
        row = {"run_id": run["run_id"], "job_key": run["workload"], "framework": run["framework"],
               "runtime_s": run["runtime_s"], "status": run["status"], "source": profile.source}
        self.add_row(row, None if run["run_id"] in self.existing
                     else (run, settings, profile, stage_dag(profile)))

    def add_row(self, row: dict, item: tuple | None) -> None:
        """Queue a report row; ``item`` is its ``(run, settings, profile, dag)`` to store,
        None for a run known to be in the store already (it is only counted)."""
        if item is not None:
            self.existing.add(row["run_id"])
        self.pending.append((row, item))
        if sum(1 for _row, queued in self.pending if queued is not None) >= self.size:
            self.flush()

    def mark(self, root: str, end_ms: int) -> None:
        """Record ``end_ms`` as ``root``'s sync mark once the runs queued so far are stored."""
        self.marks[root] = end_ms
        if not self.pending:
            self.flush()

    def flush(self) -> None:
        """Write the queued runs (one transaction), count them, then write the marks."""
        pending, self.pending = self.pending, []
        items = [item for _row, item in pending if item is not None]
        try:
            keys = iter(self.store.add_profiled_runs(items) if items else [])
        except StoreError:
            keys = iter([self._store_alone(item) for item in items])
        for row, item in pending:
            run_key = None if item is None else next(keys)
            if run_key is _REFUSED:
                self.existing.discard(row["run_id"])
                continue
            row["added"] = run_key is not None
            _count(self.report, row)
        marks, self.marks = self.marks, {}
        for root, end_ms in marks.items():
            self.store.set_sync_mark(root, end_ms)

    def _store_alone(self, item: tuple):
        """One run in its own transaction: its key, None when present, _REFUSED when refused."""
        try:
            return self.store.add_profiled_runs([item])[0]
        except StoreError as exc:
            self.report.skipped.append({"input": item[2].source or item[0]["run_id"],
                                        "reason": str(exc)})
            return _REFUSED


_REFUSED = object()        # a run the store would not take (RunBatch._store_alone)


# --------------------------------------------------------------------------- History Server

def server_root(url: str) -> str:
    """``http://host:18080/anything`` -> ``http://host:18080/api/v1``."""
    from jobgauge.profiler.readers.sparkrest import parse_url

    return parse_url(url).root


def _end_ms(attempt: dict) -> int | None:
    from jobgauge.profiler.readers.sparkrest import rest_time_ms

    if attempt.get("endTimeEpoch") not in (None, -1):
        return int(attempt["endTimeEpoch"])
    try:
        return rest_time_ms(attempt.get("endTime"))
    except ValueError:
        return None


def list_finished_applications(root: str, *, after_ms: int | None = None,
                               timeout: float = 30.0, page: int = LIST_PAGE) -> list[dict]:
    """Every finished attempt the server lists that ended after ``after_ms``, oldest first.

    ``/applications`` lists newest first and has no offset, so the listing is
    paged backwards with ``maxEndDate`` until a page comes back short.
    Each item: ``{"app_id", "attempt_id", "end_ms", "name"}``.
    """
    from jobgauge.profiler.readers.sparkrest import SparkRestClient

    client = SparkRestClient(root, timeout_s=timeout, server="Spark History Server")
    seen: dict[tuple, dict] = {}
    max_end = None
    while True:
        apps = client.applications(
            status="completed", limit=page,
            min_end_date=None if after_ms is None else _utc(after_ms + 1),
            max_end_date=None if max_end is None else _utc(max_end))
        new = 0
        oldest = None
        for app in apps:
            for attempt in app.get("attempts") or [{}]:
                if not attempt.get("completed", True):
                    continue
                end = _end_ms(attempt)
                key = (app.get("id"), attempt.get("attemptId"))
                if key not in seen and (after_ms is None or end is None or end > after_ms):
                    seen[key] = {"app_id": app.get("id"), "attempt_id": attempt.get("attemptId"),
                                 "end_ms": end, "name": app.get("name")}
                    new += 1
                if end is not None:
                    oldest = end if oldest is None else min(oldest, end)
        if len(apps) < page or not new or oldest is None:
            break
        max_end = oldest       # inclusive: the same end time again is deduplicated above
    return sorted(seen.values(), key=lambda a: (a["end_ms"] or 0, str(a["app_id"])))


def read_server_application(root: str, item: dict, *, timeout: float = 30.0) -> tuple:
    """``(profile, main)`` of one listed application: its event log, else its REST profile."""
    from jobgauge.profiler.readers.sparkrest import SparkRestClient, SparkRestError

    client = SparkRestClient(root, timeout_s=timeout, server="Spark History Server")
    attempt = item.get("attempt_id") if item.get("attempt_id") not in (None, "") else None
    base = client.app_url(item["app_id"], attempt)
    try:
        body = client.event_logs(item["app_id"], attempt)
    except SparkRestError as exc:
        if exc.status is None:
            raise                     # no answer at all: the server is down
        body = None                   # an error for this log only: read the app over REST
    if body:
        with tempfile.TemporaryDirectory(prefix="jobgauge-logs-") as folder:
            try:
                import io

                with zipfile.ZipFile(io.BytesIO(body)) as archive:
                    _safe_extract(archive, Path(folder))
            except zipfile.BadZipFile:
                raise ParseError("event log download is not a zip archive",
                                 path=base + "/logs") from None
            entries = [p for p in sorted(Path(folder).iterdir()) if not p.name.startswith(".")]
            if len(entries) == 1:
                profile, main, _attempt = read_spark_eventlog(entries[0])
                profile.source = base
                return profile, main
    from jobgauge.profiler.readers.history import read_history

    profile = read_history(base, timeout=timeout)
    _check_version(profile)
    _check_finished(profile)
    return profile, None


def _safe_extract(archive: zipfile.ZipFile, folder: Path) -> None:
    root = folder.resolve()
    for member in archive.infolist():
        target = (folder / member.filename).resolve()
        if root not in target.parents and target != root:
            raise ParseError(f"event log archive holds a path outside it: {member.filename!r}")
    archive.extractall(folder)


def import_server(store, url: str, report: ImportReport, *, since_ms: int | None = None,
                  timeout: float = 30.0, progress=None, existing=None,
                  batch: RunBatch | None = None) -> None:
    """Import every application that finished after max(``since_ms``, the stored mark).

    The mark (newest end time read from this server) advances only over
    applications that were imported or skipped for good, so an application
    that could not be fetched this time is asked for again next time.  Runs go
    through ``batch`` (a :class:`RunBatch`; the caller flushes it), else through
    one of its own over ``existing`` (the run ids already stored), flushed here.
    """
    from jobgauge.profiler.readers.sparkrest import SparkRestError

    if batch is None:
        batch = RunBatch(store, report, existing=existing)
        try:
            return import_server(store, url, report, since_ms=since_ms, timeout=timeout,
                                 progress=progress, batch=batch)
        finally:
            batch.flush()
    root = server_root(url)
    mark = store.sync_mark(root)
    bounds = [v for v in (since_ms, None if mark is None else mark - SYNC_LOOKBACK_MS)
              if v is not None]
    after = max(bounds) if bounds else None
    existing = batch.existing
    listed = list_finished_applications(root, after_ms=after, timeout=timeout)
    info = report.servers.setdefault(root, {"listed": 0, "high_water_ms": mark})
    info["listed"] += len(listed)
    if progress is not None:
        progress.total = (progress.total or 0) + len(listed)
        progress.refresh()
    high = mark
    for item in listed:
        label = f"{root}/applications/{item['app_id']}" + (
            f"/{item['attempt_id']}" if item.get("attempt_id") else "")
        listed_id = str(item["app_id"]) + (
            f"/{item['attempt_id']}" if item.get("attempt_id") not in (None, "") else "")
        try:
            if listed_id in existing:           # imported before: not fetched again
                batch.add_row({"run_id": listed_id, "job_key": None, "source": label}, None)
            else:
                profile, main = read_server_application(root, item, timeout=timeout)
                batch.add(profile, main=main, attempt=item.get("attempt_id"))
        except SparkRestError:
            raise                    # stop here; the mark still points before this one
        except GaugeError as exc:
            report.skipped.append({"input": label, "reason": str(exc)})
        if item["end_ms"] is not None:
            high = item["end_ms"] if high is None else max(high, item["end_ms"])
            batch.mark(root, high)          # written once the runs read so far are stored
            info["high_water_ms"] = high
        if progress is not None:
            progress.update(1)


def _count(report: ImportReport, row: dict) -> None:
    if row.pop("added"):
        report.added += 1
    else:
        report.already_present += 1
    report.runs.append(row)


# --------------------------------------------------------------------------- entry point

def _progress_bar(show: bool | None):
    from tqdm import tqdm

    enabled = sys.stderr.isatty() if show is None else show
    return tqdm(total=0, unit="app", desc="import", file=sys.stderr, disable=not enabled,
                leave=False)


def parse_since(text: str | None) -> int | None:
    """``--since`` (``2024-05-01``, ``2024-05-01T12:00``, ISO with zone) as epoch ms (UTC)."""
    if text in (None, ""):
        return None
    try:
        moment = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--since must be a date or time like 2024-05-01 or "
                         f"2024-05-01T12:00; got {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def import_history(store, inputs, *, since_ms: int | None = None, progress: bool | None = None,
                   timeout: float = 30.0, batch_size: int = BATCH_RUNS) -> ImportReport:
    """Import event logs, History Server URLs and MapReduce histories into ``store``.

    ``since_ms`` keeps only applications that ended after it (for files too).
    An input that cannot be read (a History Server that does not answer, too)
    lands in ``report.skipped`` with the reason; the others are still imported.
    Runs are written ``batch_size`` at a time, one transaction each (:class:`RunBatch`).
    """
    report = ImportReport()
    batch = RunBatch(store, report, size=batch_size)
    with _progress_bar(progress) as bar:
        try:
            for item in inputs:
                item = str(item)
                if _is_url(item):
                    try:
                        import_server(store, item, report, since_ms=since_ms, timeout=timeout,
                                      progress=bar, batch=batch)
                    except GaugeError as exc:     # down, or not a History Server
                        report.skipped.append({"input": item, "reason": str(exc)})
                    continue
                local = list(_local_items(item, report))
                bar.total = (bar.total or 0) + len(local)
                bar.refresh()
                for kind, path in local:
                    try:
                        if kind == "eventlog":
                            profile, main, attempt = read_spark_eventlog(path)
                        else:
                            profile, main, attempt = read_mapreduce_history(path), None, None
                        if since_ms is None or (profile.end_ms or 0) > since_ms:
                            batch.add(profile, main=main, attempt=attempt)
                    except GaugeError as exc:
                        report.skipped.append({"input": str(path), "reason": str(exc)})
                    finally:
                        bar.update(1)
        finally:
            batch.flush()                  # what was read lands, also when an error stops us
    return report


def print_report(report: ImportReport, *, as_json: bool, out=None, err=None) -> None:
    """The skip lines on stderr, then the summary (or the whole report as JSON) on stdout."""
    out = out or sys.stdout
    err = err or sys.stderr
    if as_json:
        print(json.dumps(report.to_dict(), default=str), file=out)
        return
    for skipped in report.skipped:
        reason = skipped["reason"]
        prefix = "" if reason.startswith(skipped["input"]) else skipped["input"] + ": "
        print(f"skipped {prefix}{reason}", file=err)
    print(report.summary_line(), file=out)


def history_import_command(args, inputs) -> int:
    """``jobgauge import`` for history inputs; exit code 1 when some input was skipped."""
    from jobgauge.store import open_store

    store = open_store(args.store)
    started = time.monotonic()
    report = import_history(store, inputs, since_ms=parse_since(getattr(args, "since", None)),
                            progress=True if getattr(args, "progress", False) else None)
    if not args.json:
        print_report(report, as_json=False)
        print(f"store now holds: {store.holdings()} ({time.monotonic() - started:.1f} s)")
    else:
        print_report(report, as_json=True)
    return 1 if report.skipped else 0
