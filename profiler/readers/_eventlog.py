"""Spark event log -> :class:`Profile`, in one streaming pass.

The log is read line by line (see ``_eventlog_io`` for files, codecs and
rolling folders) and folded into per-stage-attempt, per-job, per-SQL and
per-executor aggregates as events arrive; task events are never kept.  Memory
therefore grows with the number of jobs, stages, SQL executions and executors
(the things the profile lists), not with the number of tasks or bytes.

Task duration percentiles use a bounded summary per stage attempt
(:class:`DurationSummary`): the exact values while there are at most
``EXACT_TASK_VALUES`` of them, then a log-bucketed histogram whose quantiles
are within ``HISTOGRAM_RELATIVE_ERROR`` (1 %) of the exact ones, with at most
about 2,100 buckets for durations up to 11 days.  Quantiles use Spark's own
rank rule (``sorted[min(int(q * n), n - 1)]``, as the History Server's
``taskSummary``) over successful task attempts.  A stage attempt's summary is
frozen when its ``SparkListenerStageCompleted`` arrives; task ends arriving
after that (killed speculative copies) still count in task numbers and sums.

Counting rules (what a test can read off the lines):

* ``n_jobs``: distinct ``Job ID`` of ``SparkListenerJobStart``;
* ``n_stages``: distinct ``Stage ID`` of ``SparkListenerStageSubmitted``
  (a retried stage counts once; ``n_stage_attempts`` counts each attempt;
  stages a job skipped are never submitted and are not counted);
* ``n_tasks``: ``SparkListenerTaskEnd`` events (every task attempt that
  ended, whatever its reason); ``n_failed_tasks``: those not ``Success``.

Bad input: a line that is not JSON, or JSON that is not a Spark listener event,
raises :class:`ParseError` naming the file and line.  One exception: the very
last line of the log when it has no newline and does not parse - a log still
being written, or cut off - is skipped with a note in ``Profile.notes``.
A log with no Spark event at all is an error, not an empty profile.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from array import array
from pathlib import Path

from jobgauge.profiler.readers._eventlog_io import iter_lines, open_part, resolve_layout
from jobgauge.profiler.readers.profile import TOTAL_METRICS, Profile

from jobgauge.errors import ParseError

from orjson import loads as _fast_loads   # 3-4x faster than the standard library

EXACT_TASK_VALUES = 10_000
HISTOGRAM_RELATIVE_ERROR = 0.01
QUANTILES = (0.5, 0.9, 0.99)

_LOG_BASE = math.log1p(HISTOGRAM_RELATIVE_ERROR * 2)   # bucket width 2 %: midpoint within 1 %
_LOCAL_MASTER = re.compile(r"^local\[(\d+)(?:,\s*\d+)?\]$")   # local[N] or local[N,F]

# Metric names of TOTAL_METRICS that Spark's task metrics fill.
SPARK_TASK_METRICS = (
    "input_bytes", "input_records", "output_bytes", "output_records",
    "shuffle_read_bytes", "shuffle_read_records",
    "shuffle_write_bytes", "shuffle_write_records",
    "memory_spill_bytes", "disk_spill_bytes",
    "executor_run_time_ms", "executor_cpu_time_ms", "jvm_gc_time_ms",
)
assert set(SPARK_TASK_METRICS) <= set(TOTAL_METRICS)


def _loads(line: bytes):
    try:
        return _fast_loads(line)
    except ValueError:
        pass  # NaN, huge integers: let the standard library decide
    try:
        return json.loads(line)
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc


class DurationSummary:
    """Bounded summary of task durations: exact up to a limit, then a log histogram."""

    __slots__ = ("buckets", "exact", "maximum", "n", "non_positive")

    def __init__(self):
        self.exact = array("d")
        self.buckets = None          # dict bucket index -> count, once past the limit
        self.n = 0
        self.maximum = None
        self.non_positive = 0        # values <= 0 while in histogram mode

    def add(self, value: float) -> None:
        self.n += 1
        if self.maximum is None or value > self.maximum:
            self.maximum = value
        if self.buckets is None:
            self.exact.append(value)
            if len(self.exact) > EXACT_TASK_VALUES:
                values, self.exact, self.buckets = self.exact, array("d"), {}
                for v in values:
                    self._bucket(v)
        else:
            self._bucket(value)

    def _bucket(self, value: float) -> None:
        if value <= 0:
            self.non_positive += 1
        else:
            index = math.floor(math.log(value) / _LOG_BASE)
            self.buckets[index] = self.buckets.get(index, 0) + 1

    def quantile(self, q: float) -> float | None:
        if not self.n:
            return None
        rank = min(int(q * self.n), self.n - 1)
        if self.buckets is None:
            return sorted(self.exact)[rank]
        if rank < self.non_positive:
            return 0.0
        rank -= self.non_positive
        for index in sorted(self.buckets):
            count = self.buckets[index]
            if rank < count:
                # geometric middle of [base^i, base^(i+1)): within 1 % of any value inside
                return min(math.exp((index + 0.5) * _LOG_BASE), self.maximum)
            rank -= count
        return self.maximum  # pragma: no cover - ranks always land in a bucket

    def quantiles(self, qs=QUANTILES) -> list[float | None]:
        if self.buckets is None and self.n:
            ordered = sorted(self.exact)
            return [ordered[min(int(q * self.n), self.n - 1)] for q in qs]
        return [self.quantile(q) for q in qs]


class _StageAttempt:
    __slots__ = (
        "attempt",
        "completion_ms",
        "declared_tasks",
        "durations",
        "ended",
        "failed",
        "failure_reason",
        "frozen",
        "killed",
        "name",
        "parent_ids",
        "peak_execution_memory",
        "stage_id",
        "status",
        "submission_ms",
        "succeeded",
        "sums",
        "task_ms",
    )

    def __init__(self, stage_id: int, attempt: int):
        self.stage_id = stage_id
        self.attempt = attempt
        self.name = None
        self.declared_tasks = None
        self.parent_ids = None
        self.submission_ms = None
        self.completion_ms = None
        self.failure_reason = None
        self.status = "running"
        self.ended = self.succeeded = self.failed = self.killed = 0
        self.sums = {}
        self.durations = DurationSummary()
        self.frozen = None           # (p50, p90, p99) once the stage completed
        self.task_ms = 0
        self.peak_execution_memory = None

    def freeze(self):
        if self.frozen is None:
            self.frozen = self.durations.quantiles()
            self.durations.exact = array("d")     # release the values
            self.durations.buckets = None if self.durations.buckets is None else {}

    def to_dict(self, job_ids) -> dict:
        p50, p90, p99 = self.frozen if self.frozen is not None else self.durations.quantiles()
        maximum = self.durations.maximum
        duration = None
        if self.submission_ms is not None and self.completion_ms is not None:
            duration = (self.completion_ms - self.submission_ms) / 1000.0
        out = {
            "stage_id": self.stage_id, "attempt": self.attempt, "name": self.name,
            "status": self.status, "parent_ids": self.parent_ids,
            "job_ids": job_ids,
            "n_tasks": self.declared_tasks, "n_task_attempts": self.ended,
            "n_succeeded_tasks": self.succeeded, "n_failed_tasks": self.failed,
            "n_killed_tasks": self.killed,
            "submission_ms": self.submission_ms, "completion_ms": self.completion_ms,
            "duration_s": duration,
            "task_duration_p50_ms": p50, "task_duration_p90_ms": p90,
            "task_duration_p99_ms": p99, "task_duration_max_ms": maximum,
            "task_skew": (maximum / p50) if (p50 and maximum is not None) else None,
            "task_time_ms": self.task_ms,
            "peak_execution_memory_bytes": self.peak_execution_memory,
            "failure_reason": self.failure_reason,
        }
        out.update(_from_sums(self.sums))
        return out


def _from_sums(sums: dict) -> dict:
    """Metric sums in TOTAL_METRICS units (CPU time is summed in exact nanoseconds)."""
    out = {name: sums.get(name) for name in SPARK_TASK_METRICS}
    if out["executor_cpu_time_ms"] is not None:
        out["executor_cpu_time_ms"] = out["executor_cpu_time_ms"] / 1e6
    return out


def _num(value):
    """A JSON number as int/float; Spark 1.x wrote some as strings."""
    if value is None or isinstance(value, (int, float)):
        return value
    return float(value)


# "Task Metrics" field -> TOTAL_METRICS name; CPU time is in nanoseconds (Spark >= 2.1),
# summed as integers and turned into ms by _from_sums.
_TASK_FIELDS = (("Executor Run Time", "executor_run_time_ms"),
                ("Executor CPU Time", "executor_cpu_time_ms"),
                ("JVM GC Time", "jvm_gc_time_ms"),
                ("Memory Bytes Spilled", "memory_spill_bytes"),
                ("Disk Bytes Spilled", "disk_spill_bytes"))
_TASK_GROUPS = (("Input Metrics", (("Bytes Read", "input_bytes"),
                                   ("Records Read", "input_records"))),
                ("Output Metrics", (("Bytes Written", "output_bytes"),
                                    ("Records Written", "output_records"))),
                ("Shuffle Read Metrics", (("Total Records Read", "shuffle_read_records"),)),
                ("Shuffle Write Metrics", (("Shuffle Bytes Written", "shuffle_write_bytes"),
                                           ("Shuffle Records Written", "shuffle_write_records"))))


def _task_metrics(tm: dict) -> dict:
    """TOTAL_METRICS-named values of one task's "Task Metrics" (any Spark version)."""
    out = {}
    for field_name, metric in _TASK_FIELDS:
        value = tm.get(field_name)
        if value is not None:
            out[metric] = value
    for group, fields in _TASK_GROUPS:
        metrics = tm.get(group)
        if metrics:
            for field_name, metric in fields:
                value = metrics.get(field_name)
                if value is not None:
                    out[metric] = value
    shuffle = tm.get("Shuffle Read Metrics")
    if shuffle:
        remote, local = shuffle.get("Remote Bytes Read"), shuffle.get("Local Bytes Read")
        if remote is not None or local is not None:
            out["shuffle_read_bytes"] = (remote or 0) + (local or 0)
    return out


def _local_cores(master: str) -> int | None:
    """Cores of a local master URL (``local``, ``local[4]``); None for ``local[*]`` or a cluster."""
    if master == "local":
        return 1
    match = _LOCAL_MASTER.match(master)
    return int(match.group(1)) if match else None


def _short_event_name(name: str) -> str:
    """``org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart`` -> last part."""
    return name.rsplit(".", 1)[-1]


class EventLogAggregator:
    """Folds Spark listener events, one at a time, into a :class:`Profile`."""

    def __init__(self):
        self.app_id = self.app_name = self.user = self.attempt_id = None
        self.version = None
        self.start_ms = self.end_ms = None
        self.exit_code = None
        self.app_ended = False
        self.last_ms = None
        self.config: dict[str, str] = {}
        self.event_counts: dict[str, int] = {}
        self.jobs: dict[int, dict] = {}
        self.stage_owner: dict[int, int] = {}        # stage id -> first job listing it
        self.stage_parents: dict[int, list[int]] = {}
        self.stages: dict[tuple[int, int], _StageAttempt] = {}
        self.submitted_stage_ids: set[int] = set()
        self.sql: dict[int, dict] = {}
        self.executors: dict[str, dict] = {}
        self.block_manager_ids: list[str] = []
        self.n_tasks = self.n_failed_tasks = 0
        self.task_ms_total = 0
        self.totals: dict[str, float] = {}
        # each file scan's "size of files read" accumulator -> the files it names
        self.scan_locations: dict[int, str | None] = {}
        self.scan_task_metrics: dict[int, int] = {}  # a scan's task-side metric -> the above
        self.stage_scans: dict[int, set[int]] = {}   # stage id -> the scans it ran
        self.driver_metrics: dict[int, float] = {}   # accumulator id -> driver-side value
        self.notes: list[str] = []
        self._short_names: dict[str, str] = {}
        self._handlers = {
            "SparkListenerLogStart": self._log_start,
            "SparkListenerApplicationStart": self._app_start,
            "SparkListenerApplicationEnd": self._app_end,
            "SparkListenerEnvironmentUpdate": self._environment,
            "SparkListenerJobStart": self._job_start,
            "SparkListenerJobEnd": self._job_end,
            "SparkListenerStageSubmitted": self._stage_submitted,
            "SparkListenerStageCompleted": self._stage_completed,
            "SparkListenerTaskEnd": self._task_end,
            "SparkListenerExecutorAdded": self._executor_added,
            "SparkListenerExecutorRemoved": self._executor_removed,
            "SparkListenerBlockManagerAdded": self._block_manager_added,
            "SparkListenerSQLExecutionStart": self._sql_start,
            "SparkListenerSQLExecutionEnd": self._sql_end,
            "SparkListenerSQLAdaptiveExecutionUpdate": self._sql_adaptive,
            "SparkListenerDriverAccumUpdates": self._driver_metrics,
        }

    # -- dispatch ---------------------------------------------------------------------------

    def add(self, event: dict) -> None:
        name = event["Event"]
        short = self._short_names.get(name)
        if short is None:
            short = self._short_names[name] = _short_event_name(name)
        self.event_counts[short] = self.event_counts.get(short, 0) + 1
        handler = self._handlers.get(short)
        if handler is not None:
            handler(event)

    def _seen(self, ms) -> None:
        if ms is not None and (self.last_ms is None or ms > self.last_ms):
            self.last_ms = ms

    # -- application ------------------------------------------------------------------------

    def _log_start(self, event):
        self.version = event.get("Spark Version") or self.version

    def _app_start(self, event):
        self.app_name = event.get("App Name")
        self.app_id = event.get("App ID") or self.app_id
        self.user = event.get("User")
        self.attempt_id = event.get("App Attempt ID")
        self.start_ms = _num(event.get("Timestamp"))
        self._seen(self.start_ms)

    def _app_end(self, event):
        self.app_ended = True
        self.end_ms = _num(event.get("Timestamp"))
        self.exit_code = event.get("ExitCode")
        self._seen(self.end_ms)

    def _environment(self, event):
        props = event.get("Spark Properties") or {}
        if isinstance(props, list):                       # [[key, value], ...]
            props = dict(props)
        for key, value in props.items():
            self.config[str(key)] = str(value)

    # -- jobs -------------------------------------------------------------------------------

    def _job_start(self, event):
        job_id = int(event["Job ID"])
        stage_ids = [int(s) for s in event.get("Stage IDs") or []]
        for info in event.get("Stage Infos") or []:
            stage_id = int(info["Stage ID"])
            if stage_id not in stage_ids:
                stage_ids.append(stage_id)
            parents = info.get("Parent IDs")
            if parents is not None:
                self.stage_parents.setdefault(stage_id, [int(p) for p in parents])
        for stage_id in stage_ids:
            self.stage_owner.setdefault(stage_id, job_id)
        props = event.get("Properties") or {}
        sql_id = props.get("spark.sql.execution.id")
        submitted = _num(event.get("Submission Time"))
        self._seen(submitted)
        self.jobs[job_id] = {
            "job_id": job_id, "stage_ids": sorted(stage_ids),
            "submission_ms": submitted, "completion_ms": None, "duration_s": None,
            "result": "running", "failure": None,
            "sql_execution_id": int(sql_id) if sql_id not in (None, "") else None,
            "description": props.get("spark.job.description"),
            "job_group": props.get("spark.jobGroup.id"),
        }
        if sql_id not in (None, "") and int(sql_id) in self.sql:
            self.sql[int(sql_id)]["job_ids"].append(job_id)

    def _job_end(self, event):
        job_id = int(event["Job ID"])
        job = self.jobs.get(job_id)
        if job is None:                    # log started mid-application
            job = self.jobs[job_id] = {
                "job_id": job_id, "stage_ids": [], "submission_ms": None,
                "completion_ms": None, "duration_s": None, "result": "running",
                "failure": None, "sql_execution_id": None, "description": None,
                "job_group": None}
        job["completion_ms"] = _num(event.get("Completion Time"))
        self._seen(job["completion_ms"])
        result = event.get("Job Result") or {}
        kind = result.get("Result")
        job["result"] = {"JobSucceeded": "succeeded", "JobFailed": "failed"}.get(kind, kind)
        exc = result.get("Exception")
        if isinstance(exc, dict):
            message = exc.get("Message")
            job["failure"] = message.splitlines()[0][:500] if message else None
        if job["submission_ms"] is not None and job["completion_ms"] is not None:
            job["duration_s"] = (job["completion_ms"] - job["submission_ms"]) / 1000.0

    # -- stages and tasks -------------------------------------------------------------------

    def _stage(self, stage_id, attempt) -> _StageAttempt:
        key = (int(stage_id), int(attempt or 0))
        stage = self.stages.get(key)
        if stage is None:
            stage = self.stages[key] = _StageAttempt(*key)
        return stage

    def _stage_info(self, info) -> _StageAttempt:
        stage = self._stage(info["Stage ID"], info.get("Stage Attempt ID"))
        stage.name = info.get("Stage Name", stage.name)
        if info.get("Number of Tasks") is not None:
            stage.declared_tasks = int(info["Number of Tasks"])
        parents = info.get("Parent IDs")
        if parents is not None:
            stage.parent_ids = sorted(int(p) for p in parents)
            self.stage_parents[stage.stage_id] = stage.parent_ids
        if info.get("Submission Time") is not None:
            stage.submission_ms = _num(info["Submission Time"])
            self._seen(stage.submission_ms)
        if info.get("Completion Time") is not None:
            stage.completion_ms = _num(info["Completion Time"])
            self._seen(stage.completion_ms)
        return stage

    def _stage_submitted(self, event):
        stage = self._stage_info(event["Stage Info"])
        self.submitted_stage_ids.add(stage.stage_id)

    def _stage_completed(self, event):
        info = event["Stage Info"]
        stage = self._stage_info(info)
        self.submitted_stage_ids.add(stage.stage_id)
        if self.scan_task_metrics:
            self._stage_scans(stage.stage_id, info)
        reason = info.get("Failure Reason")
        if reason:
            stage.status = "failed"
            stage.failure_reason = str(reason).splitlines()[0][:500]
        else:
            stage.status = "complete"
        stage.freeze()

    def _task_end(self, event):
        stage = self._stage(event["Stage ID"], event.get("Stage Attempt ID"))
        info = event.get("Task Info") or {}
        self.n_tasks += 1
        stage.ended += 1
        reason = (event.get("Task End Reason") or {}).get("Reason")
        launch, finish = info.get("Launch Time"), info.get("Finish Time")
        duration = None
        if launch is not None and finish:
            duration = finish - launch
            stage.task_ms += duration
            self.task_ms_total += duration
            self._seen(finish)
        if reason == "Success":
            stage.succeeded += 1
            if duration is not None and stage.frozen is None:
                stage.durations.add(duration)
            elif duration is not None and (stage.durations.maximum is None
                                           or duration > stage.durations.maximum):
                stage.durations.maximum = duration
        else:
            self.n_failed_tasks += 1
            if reason in ("TaskKilled", "TaskCommitDenied"):
                stage.killed += 1
            else:
                stage.failed += 1
        tm = event.get("Task Metrics")
        if tm:
            sums = stage.sums
            totals = self.totals
            for key, value in _task_metrics(tm).items():
                sums[key] = sums.get(key, 0) + value
                totals[key] = totals.get(key, 0) + value
            peak = tm.get("Peak Execution Memory")
            if peak is not None and (stage.peak_execution_memory is None
                                     or peak > stage.peak_execution_memory):
                stage.peak_execution_memory = peak

    # -- executors --------------------------------------------------------------------------

    def _executor_added(self, event):
        executor_id = str(event["Executor ID"])
        info = event.get("Executor Info") or {}
        added = _num(event.get("Timestamp"))
        self._seen(added)
        self.executors[executor_id] = {
            "executor_id": executor_id, "host": info.get("Host"),
            "cores": None if info.get("Total Cores") is None else int(info["Total Cores"]),
            "added_ms": added,
            "removed_ms": None, "removed_reason": None,
        }

    def _executor_removed(self, event):
        executor_id = str(event["Executor ID"])
        executor = self.executors.setdefault(executor_id, {
            "executor_id": executor_id, "host": None, "cores": None, "added_ms": None,
            "removed_ms": None, "removed_reason": None})
        executor["removed_ms"] = _num(event.get("Timestamp"))
        self._seen(executor["removed_ms"])
        reason = event.get("Removed Reason")
        executor["removed_reason"] = str(reason).splitlines()[0][:500] if reason else None

    def _block_manager_added(self, event):
        manager = event.get("Block Manager ID") or {}
        executor_id = manager.get("Executor ID")
        if executor_id is not None:
            self.block_manager_ids.append(str(executor_id))
        self._seen(_num(event.get("Timestamp")))

    # -- SQL --------------------------------------------------------------------------------

    def _sql_start(self, event):
        execution_id = int(event["executionId"])
        start = _num(event.get("time"))
        self._seen(start)
        self.sql[execution_id] = {
            "execution_id": execution_id, "description": event.get("description"),
            "physical_plan_description": event.get("physicalPlanDescription"),
            "start_ms": start, "end_ms": None, "duration_s": None,
            "job_ids": [j["job_id"] for j in self.jobs.values()
                        if j["sql_execution_id"] == execution_id],
            "adaptive_updates": 0, "error": None,
        }
        self._plan_metrics(event.get("sparkPlanInfo"))

    def _sql_end(self, event):
        execution_id = int(event["executionId"])
        sql = self.sql.get(execution_id)
        if sql is None:
            return                        # its start was before this log began
        sql["end_ms"] = _num(event.get("time"))
        self._seen(sql["end_ms"])
        if sql["start_ms"] is not None and sql["end_ms"] is not None:
            sql["duration_s"] = (sql["end_ms"] - sql["start_ms"]) / 1000.0
        error = event.get("errorMessage")
        if error:
            sql["error"] = str(error).splitlines()[0][:500]

    def _sql_adaptive(self, event):
        sql = self.sql.get(int(event["executionId"]))
        if sql is not None:
            sql["adaptive_updates"] += 1
            if event.get("physicalPlanDescription"):
                sql["physical_plan_description"] = event["physicalPlanDescription"]
        self._plan_metrics(event.get("sparkPlanInfo"))

    def _plan_metrics(self, info):
        """Note the accumulators of the file scans' "size of files read" in a plan (a
        driver-side metric: the bytes of the files the scan lists), each scan's files
        (its ``Location`` metadata) and its task-side metrics ("scan time", "number of
        output rows"), which name the stage that ran it when that stage completes."""
        from jobgauge.dag import scan_location

        pending = [info] if isinstance(info, dict) else []
        while pending:
            node = pending.pop()
            ids, size = [], None
            for metric in node.get("metrics") or ():
                if not isinstance(metric, dict):
                    continue
                with contextlib.suppress(KeyError, TypeError, ValueError):
                    if metric.get("name") == "size of files read":
                        size = int(metric["accumulatorId"])
                    else:
                        ids.append(int(metric["accumulatorId"]))
            if size is not None:
                metadata = node.get("metadata")
                self.scan_locations[size] = scan_location(
                    metadata.get("Location") if isinstance(metadata, dict) else None)
                self.scan_task_metrics.update((i, size) for i in ids)
            pending.extend(c for c in node.get("children") or () if isinstance(c, dict))

    def _stage_scans(self, stage_id, info):
        """The scans whose task-side metrics a completed stage updated."""
        for accumulable in info.get("Accumulables") or ():
            if not isinstance(accumulable, dict):
                continue
            with contextlib.suppress(TypeError, ValueError):
                scan = self.scan_task_metrics.get(int(accumulable.get("ID")))
                if scan is not None:
                    self.stage_scans.setdefault(stage_id, set()).add(scan)

    def _driver_metrics(self, event):
        for update in event.get("accumUpdates") or ():
            if isinstance(update, (list, tuple)) and len(update) == 2:
                key, value = update
                if isinstance(key, int) and isinstance(value, (int, float)):
                    self.driver_metrics[key] = value

    # -- result -----------------------------------------------------------------------------

    def _stage_walls(self) -> dict[int, float]:
        """Wall seconds per stage id: first submission to last completion over attempts."""
        first, last = {}, {}
        for stage in self.stages.values():
            sid = stage.stage_id
            if stage.submission_ms is not None:
                first[sid] = min(first.get(sid, stage.submission_ms), stage.submission_ms)
            end = stage.completion_ms if stage.completion_ms is not None else self.last_ms
            if end is not None:
                last[sid] = max(last.get(sid, end), end)
        return {sid: max(0.0, (last[sid] - first[sid]) / 1000.0)
                for sid in first if sid in last}

    def _longest_path(self, nodes, weight) -> float:
        """Longest weighted path through the stage DAG restricted to ``nodes``.

        Iterative post-order walk (no recursion limit); an edge that would close
        a cycle (only a corrupt log has one) is ignored.
        """
        best: dict[int, float] = {}
        for root in sorted(nodes):
            if root in best:
                continue
            stack, on_path = [(root, False)], set()
            while stack:
                node, expanded = stack.pop()
                parents = [p for p in self.stage_parents.get(node, ()) if p in nodes]
                if expanded:
                    on_path.discard(node)
                    best[node] = weight(node) + max((best.get(p, 0.0) for p in parents),
                                                    default=0.0)
                    continue
                if node in best or node in on_path:
                    continue
                on_path.add(node)
                stack.append((node, True))
                stack.extend((p, False) for p in parents if p not in best and p not in on_path)
        return max(best.values(), default=0.0)

    def _critical_paths(self):
        if not self.stage_parents:
            return None                   # Spark < 1.4 logs: the DAG is not in the log
        walls = self._stage_walls()
        nodes = set(self.stage_parents) | set(walls)
        app_path = self._longest_path(nodes, lambda s: walls.get(s, 0.0))
        for job in self.jobs.values():
            members = set(job["stage_ids"])
            job_id = job["job_id"]
            job["critical_path_s"] = self._longest_path(
                members, lambda s, owner=job_id: walls.get(s, 0.0)
                if self.stage_owner.get(s) == owner else 0.0)
        return app_path

    def _cores(self, horizon):
        """Executors with cores, the total-cores timeline and available core-seconds."""
        executors = list(self.executors.values())
        if not executors:
            master = self.config.get("spark.master", "")
            cores = _local_cores(master)
            if cores is not None and self.start_ms is not None:
                executors = [{"executor_id": "driver", "host": None, "cores": cores,
                              "added_ms": self.start_ms, "removed_ms": None,
                              "removed_reason": None}]
                self.notes.append(f"no SparkListenerExecutorAdded events: assumed the driver "
                                  f"ran tasks on {cores} cores (spark.master={master})")
        if not executors or horizon is None or self.start_ms is None:
            return executors, [], None
        if any(e["cores"] is None for e in executors):
            return executors, [], None
        changes: dict[float, int] = {}
        available_ms = 0.0
        for e in executors:
            start = max(e["added_ms"] if e["added_ms"] is not None else self.start_ms,
                        self.start_ms)
            end = min(e["removed_ms"] if e["removed_ms"] is not None else horizon, horizon)
            if end > start:
                available_ms += e["cores"] * (end - start)
            changes[start] = changes.get(start, 0) + e["cores"]
            if e["removed_ms"] is not None:
                changes[end] = changes.get(end, 0) - e["cores"]
        timeline, total = [], 0
        for time_ms in sorted(changes):
            total += changes[time_ms]
            timeline.append({"time_ms": time_ms, "cores": total})
        return executors, timeline, available_ms / 1000.0

    def _scanned_files(self, stage_id) -> dict:
        """``file_bytes`` (the bytes of the files a stage's scans list, as Spark split
        them into its tasks) and ``scan_files`` ({location: bytes}) of one stage; empty
        for a stage that ran no file scan, or whose scans' sizes the log lacks."""
        scans = [m for m in self.stage_scans.get(stage_id, ()) if m in self.driver_metrics]
        if not scans:
            return {}
        files = {self.scan_locations[m]: self.driver_metrics[m] for m in scans
                 if self.scan_locations.get(m)}
        return {"file_bytes": sum(self.driver_metrics[m] for m in scans), "scan_files": files}

    def profile(self, source: str, *, in_progress=False, version_hint=None,
                app_id_hint=None, notes=()) -> Profile:
        for stage in self.stages.values():
            if stage.frozen is None:
                stage.freeze()
        horizon = self.end_ms if self.end_ms is not None else self.last_ms
        critical = self._critical_paths()
        executors, timeline, available = self._cores(horizon)
        used = self.task_ms_total / 1000.0
        idle = None if available is None else max(0.0, available - used)

        jobs_of_stage: dict[int, list[int]] = {}
        for job in self.jobs.values():
            for sid in job["stage_ids"]:
                jobs_of_stage.setdefault(sid, []).append(job["job_id"])
        stages = [self.stages[k].to_dict(jobs_of_stage.get(k[0], []))
                  for k in sorted(self.stages)]
        for stage in stages:
            stage.update(self._scanned_files(stage["stage_id"]))
        for job in self.jobs.values():
            job["skipped_stage_ids"] = [s for s in job["stage_ids"]
                                        if s not in self.submitted_stage_ids]
        if self.app_ended:
            status = "succeeded" if self.exit_code in (None, 0) else "failed"
        else:
            status = "running"
            self.notes.append(
                "no SparkListenerApplicationEnd: the log is marked in progress, the "
                "application was still running" if in_progress else
                "no SparkListenerApplicationEnd although the log is not marked in progress: "
                "the driver died, or the log was cut off")
        runtime = None
        if self.app_ended and self.start_ms is not None and self.end_ms is not None:
            runtime = (self.end_ms - self.start_ms) / 1000.0
        totals = _from_sums(self.totals)
        scanned = [self.driver_metrics[m] for m in self.scan_locations
                   if m in self.driver_metrics]
        return Profile(
            format="spark-eventlog", engine="spark",
            engine_version=self.version or version_hint,
            app_id=self.app_id or self.config.get("spark.app.id") or app_id_hint,
            app_name=self.app_name or self.config.get("spark.app.name"),
            user=self.user, status=status,
            start_ms=self.start_ms, end_ms=self.end_ms if self.app_ended else None,
            runtime_s=runtime,
            n_jobs=len(self.jobs), n_stages=len(self.submitted_stage_ids),
            n_tasks=self.n_tasks,
            totals=totals,
            jobs=[self.jobs[j] for j in sorted(self.jobs)],
            stages=stages,
            sql=[self.sql[s] for s in sorted(self.sql)],
            executors=executors,
            critical_path_s=critical,
            idle_core_seconds=idle,
            config=dict(sorted(self.config.items())),
            source=source,
            n_stage_attempts=len(self.stages),
            n_failed_tasks=self.n_failed_tasks,
            available_core_seconds=available,
            task_seconds=used,
            cores_timeline=timeline,
            event_counts=dict(sorted(self.event_counts.items())),
            notes=list(notes) + self.notes,
            files_read_bytes=float(sum(scanned)) if scanned else None,
        )


def _snippet(line: bytes) -> str:
    return line[:80].decode("utf-8", errors="replace")


_EXPECTED_EVENT = 'one JSON Spark listener event per line, like {"Event": "SparkListener...", ...}'


def _checked_events(layout, notes: list[str], on_read=None):
    """Yield ``(part path, line number, line, event)`` for every event of the log.

    Applies the rules of the module docstring: each line one JSON object with
    an ``"Event"`` string; only the very last line may be cut short (noted in
    ``notes``); a compressed part may end inside a block only if it is the last.
    """
    last_part = len(layout.parts) - 1
    n_events = 0
    for index, part in enumerate(layout.parts):
        stream, _codec = open_part(part, on_read)
        try:
            for lineno, line, ended in iter_lines(stream, part.path, expect=b"{",
                                                  expected=_EXPECTED_EVENT):
                if not line.strip():
                    continue
                try:
                    event = _loads(line)
                except ValueError as exc:
                    if not ended and index == last_part:
                        notes.append(f"{part.path}: last line {lineno} is incomplete (log "
                                     "still being written, or cut off) and was skipped")
                        break
                    what = "not a Spark event log" if n_events == 0 else "corrupt event line"
                    raise ParseError(f"{what}: invalid JSON ({exc})", path=part.path,
                                     line=lineno, expected=_EXPECTED_EVENT,
                                     snippet=_snippet(line)) from exc
                if not isinstance(event, dict) or not isinstance(event.get("Event"), str):
                    what = "not a Spark event log" if n_events == 0 else \
                        "line is JSON but not a Spark listener event"
                    raise ParseError(what, path=part.path, line=lineno,
                                     expected=_EXPECTED_EVENT, snippet=_snippet(line))
                n_events += 1
                yield part.path, lineno, line, event
            if getattr(stream, "truncated", False):
                if index != last_part:
                    raise ParseError("compressed stream ends inside a block", path=part.path,
                                     expected="a complete part (only the last part of a "
                                              "rolling log may be cut short)")
                notes.append(f"{part.path}: compressed stream ends inside a block (log still "
                             "being written, or cut off)")
        finally:
            stream.close()


def read_eventlog(path, *, on_read=None) -> Profile:
    """Read a Spark event log (file, compressed file or log folder) into a Profile.

    ``on_read(n)`` is called with the number of file bytes read, for progress
    bars.  Raises :class:`ParseError` naming the file, the line and what was
    expected when the input is not a readable Spark event log.
    """
    layout = resolve_layout(path)
    aggregator = EventLogAggregator()
    notes = list(layout.notes)
    n_events = 0
    for part_path, lineno, line, event in _checked_events(layout, notes, on_read):
        try:
            aggregator.add(event)
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
            raise ParseError(f"malformed {event['Event']} event ({type(exc).__name__}: {exc})",
                             path=part_path, line=lineno,
                             expected="the fields Spark writes for it",
                             snippet=_snippet(line)) from exc
        n_events += 1
    if n_events == 0:
        raise ParseError("no Spark events in the log", path=layout.source,
                         expected=_EXPECTED_EVENT)
    try:
        return aggregator.profile(
            str(path), in_progress=layout.in_progress, version_hint=layout.version_hint,
            app_id_hint=layout.app_id_hint, notes=notes)
    except (TypeError, ValueError, ArithmeticError) as exc:   # values of the wrong kind
        raise ParseError(f"inconsistent events ({type(exc).__name__}: {exc})",
                         path=layout.source, expected=_EXPECTED_EVENT) from exc


def iter_events(path):
    """Yield every event of a Spark event log as a dict, in order (any layout, any codec).

    For readers that need events this module does not keep (plans, accumulators).
    Same errors as :func:`read_eventlog`, and the same tolerance for an
    incomplete last line.
    """
    layout = resolve_layout(path)
    for _path, _lineno, _line, event in _checked_events(layout, []):
        yield event


def looks_like_eventlog(path) -> bool:
    """Cheap sniff: is ``path`` a Spark event log file or folder?  Reads a few bytes."""
    path = Path(path)
    try:
        layout = resolve_layout(path)
    except ParseError:
        return False
    if layout.layout != "file" or layout.in_progress or layout.parts[0].codec:
        return True                      # a folder, *.inprogress or *.lz4/.snappy/.zstd name
    from jobgauge.profiler.readers._eventlog_io import sniff_codec

    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
    except OSError:
        return False
    if sniff_codec(head):
        return True
    head = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b'{"Event"') or bool(re.match(rb'^\{\s*"Event"\s*:', head))

