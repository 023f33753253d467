"""Spark History Server REST API -> :class:`~jobgauge.profiler.readers.profile.Profile`.

``read_history(url)`` reads one application from a running History Server
(or a live driver's UI, which serves the same ``/api/v1``) through the one
REST client, :class:`~jobgauge.profiler.readers.sparkrest.SparkRestClient`:
``/applications/<id>``, then ``/jobs``, ``/stages``
(with task quantiles), ``/allexecutors``, ``/environment`` and ``/sql`` of its
latest attempt.  ``url`` is any of::

    http://host:18080/api/v1/applications/<app id>[/<attempt id>]
    http://host:18080/history/<app id>/...          (a UI page of the app)
    http://host:18080   with  app_id="<app id>"

Fields follow :func:`jobgauge.profiler.readers.eventlog.read_eventlog`, with the same
counting rules: ``n_stages`` counts stage ids that ran (status not SKIPPED or
PENDING), ``n_tasks`` the task attempts that ended (complete + failed +
killed over stage attempts).  What the API does not provide stays ``None``:
stage ``parent_ids`` (hence ``critical_path_s``), the sum of task wall times
(hence ``task_seconds`` and ``idle_core_seconds``; the executors' cores over
time still give ``available_core_seconds``), and per-task details.  Task
duration quantiles come from the server's own ``taskMetricsDistributions``
(Spark >= 3.4: one request) or ``taskSummary`` per stage on older servers (at
most ``max_stage_requests`` requests).  On stages whose tasks all succeeded
they equal ``read_eventlog``'s; where tasks failed or were killed the server
also scans those attempts (a killed speculative copy can be its "max"), while
``read_eventlog`` uses successful tasks only.  Metrics an old log did not
record are ``None`` in ``read_eventlog`` and ``0`` here.  The bytes of the files the
scans read (``files_read_bytes``, a run's input size) come from ``/sql?details=true``,
the UI's text of each scan's "size of files read" (to a tenth of its unit); each
stage's ``file_bytes`` (the files its scans listed, what the stage model splits into
tasks and grows with the data) from the stage its scan's metrics name, or by rank
(:func:`_scanned_files`).  The files' locations are not in the API: ``scan_files`` stays
out.

Every failure - server unreachable, unknown application, a reply that is not
the JSON the API documents - raises a :class:`ParseError` naming the URL
(:class:`~jobgauge.profiler.readers.sparkrest.SparkRestError`, a ParseError, when the
server could not be read).
"""

from __future__ import annotations

import re

from jobgauge.errors import ParseError
from jobgauge.profiler.readers._eventlog import SPARK_TASK_METRICS
from jobgauge.profiler.readers.profile import Profile
from jobgauge.profiler.readers.sparkrest import SparkRestClient, SparkRestError, parse_url
from jobgauge.profiler.readers.sparkrest import rest_time_ms as _ms
from jobgauge.units import parse_size

__all__ = ["read_history"]

_QUANTILES = "0.5,0.9,0.99,1.0"
_HINT = "a running History Server (start-history-server.sh) at this address"

# StageData field -> TOTAL_METRICS name
_STAGE_METRICS = {
    "inputBytes": "input_bytes", "inputRecords": "input_records",
    "outputBytes": "output_bytes", "outputRecords": "output_records",
    "shuffleReadBytes": "shuffle_read_bytes", "shuffleReadRecords": "shuffle_read_records",
    "shuffleWriteBytes": "shuffle_write_bytes", "shuffleWriteRecords": "shuffle_write_records",
    "memoryBytesSpilled": "memory_spill_bytes", "diskBytesSpilled": "disk_spill_bytes",
    "executorRunTime": "executor_run_time_ms", "executorCpuTime": "executor_cpu_time_ms",
    "jvmGcTime": "jvm_gc_time_ms",
}


def _seconds(start, end):
    return None if start is None or end is None else (end - start) / 1000.0


def read_history(url: str, app_id: str | None = None, *, timeout: float = 30.0,
                 max_stage_requests: int = 200) -> Profile:
    """Read one application from a Spark History Server into a Profile."""
    root, app_id, attempt_id = parse_url(url, app_id)
    client = SparkRestClient(root, timeout_s=timeout, server="Spark History Server", hint=_HINT)
    if not app_id:
        raise ParseError("URL names no application", path=url,
                         expected=f"/api/v1/applications/<app id> (this server has: "
                                  f"{_known(client)})")
    try:
        app = client.application(app_id)
    except SparkRestError as exc:
        if exc.status != 404:
            raise
        raise ParseError(f"no application {app_id!r} on the History Server", path=url,
                         expected=f"one of its application ids ({_known(client)})") from None
    try:
        return _build(client, app, app_id, attempt_id, url, max_stage_requests)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, ParseError):
            raise
        raise ParseError(f"unexpected reply from the History Server ({type(exc).__name__}: "
                         f"{exc})", path=url,
                         expected="the JSON of the Spark REST API /api/v1") from exc


def _known(client) -> str:
    apps = client.applications(limit=10)[:10]
    return ", ".join(str(a.get("id", "?")) if isinstance(a, dict) else "?" for a in apps) or "none"


def _build(client, app, app_id, attempt_id, url, max_stage_requests) -> Profile:
    attempts = app.get("attempts") or [{}]
    attempt = attempts[0]
    if attempt_id is not None:
        chosen = [a for a in attempts if str(a.get("attemptId")) == str(attempt_id)]
        if not chosen:
            raise ParseError(f"application {app_id!r} has no attempt {attempt_id!r}", path=url)
        attempt = chosen[0]
    base = (app_id, attempt.get("attemptId"))     # what the per-attempt endpoints take
    notes = []

    jobs_raw = client.jobs(*base)
    stages_raw = client.stages(*base, quantiles=_QUANTILES)
    executors_raw = client.executors(*base)
    environment = client.environment(*base)
    sql_raw = client.sql_executions(*base, details=True)
    if sql_raw is None:
        notes.append("the server has no /sql endpoint (Spark < 3.0): no SQL executions")
        sql_raw = []

    start_ms = attempt.get("startTimeEpoch") or _ms(attempt.get("startTime"))
    completed = bool(attempt.get("completed"))
    end_ms = (attempt.get("endTimeEpoch") or _ms(attempt.get("endTime"))) if completed else None
    if end_ms is not None and end_ms <= 0:
        end_ms = None
    exit_code = attempt.get("exitCode")
    status = ("succeeded" if exit_code in (None, 0) else "failed") if completed else "running"

    config = {}
    for pair in environment.get("sparkProperties") or []:
        if isinstance(pair, (list, tuple)) and len(pair) == 2:
            config[str(pair[0])] = str(pair[1])
    version = attempt.get("appSparkVersion") or None   # "" when the log has no version

    jobs = []
    for job in sorted(jobs_raw, key=lambda j: j["jobId"]):
        submitted, completed_ms = _ms(job.get("submissionTime")), _ms(job.get("completionTime"))
        job_status = str(job.get("status", "")).lower()
        jobs.append({
            "job_id": job["jobId"], "stage_ids": sorted(job.get("stageIds") or []),
            "submission_ms": submitted, "completion_ms": completed_ms,
            "duration_s": _seconds(submitted, completed_ms),
            "result": job_status if job_status in ("succeeded", "failed", "running")
            else job_status or None,
            "failure": None, "sql_execution_id": None,
            "description": job.get("description"), "job_group": job.get("jobGroup"),
            "critical_path_s": None, "skipped_stage_ids": None,
        })

    stages, totals, ran, task_attempts, failed_tasks = _stages(
        client, base, stages_raw, max_stage_requests, notes)
    skipped = {s["stageId"] for s in stages_raw if s.get("status") == "SKIPPED"}
    job_of_stage: dict[int, list[int]] = {}
    for job in jobs:
        job["skipped_stage_ids"] = [s for s in job["stage_ids"] if s in skipped]
        for sid in job["stage_ids"]:
            job_of_stage.setdefault(sid, []).append(job["job_id"])
    for stage in stages:
        stage["job_ids"] = job_of_stage.get(stage["stage_id"], [])
    scanned = _scanned_files(sql_raw, jobs, stages)
    for stage in stages:
        if stage["stage_id"] in scanned:
            stage["file_bytes"] = scanned[stage["stage_id"]]

    sql = []
    for entry in sorted(sql_raw, key=lambda e: e["id"]):
        started = _ms(entry.get("submissionTime"))
        duration = entry.get("duration")
        job_ids = sorted((entry.get("successJobIds") or []) + (entry.get("failedJobIds") or [])
                         + (entry.get("runningJobIds") or []))
        for job in jobs:
            if job["job_id"] in job_ids:
                job["sql_execution_id"] = entry["id"]
        sql.append({
            "execution_id": entry["id"], "description": entry.get("description"),
            "physical_plan_description": entry.get("planDescription"),
            "start_ms": started,
            "end_ms": None if started is None or duration is None or
            entry.get("status") == "RUNNING" else started + duration,
            "duration_s": None if duration is None else duration / 1000.0,
            "job_ids": job_ids, "adaptive_updates": None,
            "error": entry.get("errorMessage") or None,
        })

    horizon = end_ms if end_ms is not None else attempt.get("lastUpdatedEpoch")
    executors, timeline, available = _executors(executors_raw, start_ms, horizon)
    return Profile(
        format="spark-history", engine="spark", engine_version=version,
        app_id=app.get("id", app_id), app_name=app.get("name"),
        user=attempt.get("sparkUser"), status=status,
        start_ms=start_ms, end_ms=end_ms,
        runtime_s=(attempt.get("duration") / 1000.0
                   if completed and attempt.get("duration") is not None else None),
        n_jobs=len(jobs), n_stages=len(ran), n_tasks=task_attempts,
        totals=totals, jobs=jobs, stages=stages, sql=sql, executors=executors,
        critical_path_s=None, idle_core_seconds=None,
        config=dict(sorted(config.items())), source=url,
        n_stage_attempts=len(stages), n_failed_tasks=failed_tasks,
        available_core_seconds=available, task_seconds=None,
        cores_timeline=timeline, event_counts={}, notes=notes,
        files_read_bytes=_files_read_bytes(sql_raw),
    )


#: A size as the UI shows it (Spark's ``Utils.bytesToString``): ``312.0 B``, ``789.1 KiB``.
_UI_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB|TiB|PiB|EiB)\b")


def _files_read_bytes(sql_raw) -> float | None:
    """The bytes of the files the application's scans selected, as ``read_eventlog``
    reads them from the driver's accumulator updates: the scans' "size of files read"
    (:func:`_scan_size`, to a tenth of its unit) summed over the SQL executions.  None
    where no scan reports one (no SQL, no file scans, a server before Spark 3.0)."""
    sizes = [_scan_size(node) for execution in sql_raw or () if isinstance(execution, dict)
             and isinstance(execution.get("nodes"), list)
             for node in execution["nodes"] if isinstance(node, dict)]
    sizes = [size for size in sizes if size is not None]
    return sum(sizes) if sizes else None


#: The task a SQL metric's largest value came from, as the UI prints it: ``(stage 9.0: task
#: 9)`` (Spark >= 3.1), ``(stage 9 (attempt 0): task 9)`` (Spark 3.0).
_STAGE_TAG = re.compile(r"\(stage (\d+)(?:\.\d+| \(attempt \d+\))?: task \d+\)")


def _scan_size(node) -> float | None:
    """The "size of files read" of a plan node (a file scan), None for any other node:
    the UI's text, one size (``789.1 KiB``) or a ``total (min, med, max)`` line over a
    line of sizes, the total first."""
    metrics = node.get("metrics")
    for metric in metrics if isinstance(metrics, list) else ():
        if isinstance(metric, dict) and metric.get("name") == "size of files read":
            lines = str(metric.get("value") or "").strip().splitlines()
            match = _UI_SIZE.search(lines[-1]) if lines else None
            return parse_size(match.group(1) + match.group(2)) if match else None
    return None


def _tagged_stage(nodes) -> int | None:
    """The stage that the first stage tag among ``nodes``' metrics names."""
    for node in nodes:
        for metric in node.get("metrics") or ():
            match = _STAGE_TAG.search(str(metric.get("value") or "")) \
                if isinstance(metric, dict) else None
            if match:
                return int(match.group(1))
    return None


def _scanned_files(sql_raw, jobs, stages) -> dict:
    """{stage id: bytes of the files its scans listed}, as ``read_eventlog`` reads them
    from the tasks' accumulator updates.  The REST API names a stage only in a metric's
    text, and only where more than one task updated it: a scan is its stage's when its
    own metrics or its whole-stage-codegen cluster's name one (``(stage 9.0: task 9)``).
    The scans of an SQL execution left without a tag (one-task stages) are paired with
    its stages that read input and have no tagged scan, the largest files with the most
    bytes read, one scan per stage."""
    by_id = {stage["stage_id"]: stage for stage in stages}
    stages_of_job = {job["job_id"]: job["stage_ids"] for job in jobs}
    found: dict[int, float] = {}
    for execution in sql_raw or ():
        nodes = execution.get("nodes") if isinstance(execution, dict) else None
        if not isinstance(nodes, list):
            continue
        nodes = [n for n in nodes if isinstance(n, dict)]
        job_ids = [j for key in ("successJobIds", "failedJobIds", "runningJobIds")
                   for j in execution.get(key) or ()]
        ran = {sid for j in job_ids for sid in stages_of_job.get(j, ())
               if sid in by_id and by_id[sid]["status"] == "complete"}
        consumers: dict = {}
        for edge in execution.get("edges") or ():
            if isinstance(edge, dict):
                consumers.setdefault(edge.get("fromId"), []).append(edge.get("toId"))
        by_node = {n.get("nodeId"): n for n in nodes}
        cluster = {n.get("wholeStageCodegenId"): n for n in nodes
                   if str(n.get("nodeName", "")).startswith("WholeStageCodegen")}
        untagged, mine = [], {}
        for node in nodes:
            size = _scan_size(node)
            if size is None:
                continue
            near = [node] + [by_node[c] for c in consumers.get(node.get("nodeId"), ())
                             if c in by_node]
            near += [cluster[n.get("wholeStageCodegenId")] for n in near[1:]
                     if n.get("wholeStageCodegenId") in cluster]
            stage_id = _tagged_stage(near)
            if stage_id in ran:
                mine[stage_id] = mine.get(stage_id, 0.0) + size
            else:
                untagged.append(size)
        reading = sorted((sid for sid in ran if sid not in mine and sid not in found
                          and (by_id[sid].get("input_bytes") or 0) > 0),
                         key=lambda sid: -(by_id[sid].get("input_bytes") or 0))
        for stage_id, size in zip(reading, sorted(untagged, reverse=True)):
            mine[stage_id] = size
        for stage_id, size in mine.items():
            found[stage_id] = found.get(stage_id, 0.0) + size
    return found


def _quantiles(dist) -> tuple:
    if not dist or not dist.get("duration"):
        return None, None, None, None
    values = list(dist["duration"]) + [None] * 4
    return tuple(values[:4])


def _stages(client, base, stages_raw, max_stage_requests, notes):
    stages, totals, ran = [], {}, set()
    task_attempts = failed_tasks = 0
    requests = 0
    for raw in sorted(stages_raw, key=lambda s: (s["stageId"], s["attemptId"])):
        state = raw.get("status")
        if state in ("SKIPPED", "PENDING"):
            continue
        ran.add(raw["stageId"])
        complete = raw.get("numCompleteTasks") or 0
        failed = raw.get("numFailedTasks") or 0
        killed = raw.get("numKilledTasks") or 0
        task_attempts += complete + failed + killed
        failed_tasks += failed + killed
        dist = raw.get("taskMetricsDistributions")
        if dist is None and complete:
            if requests < max_stage_requests:
                requests += 1
                dist = client.task_summary(*base, raw["stageId"], raw["attemptId"],
                                           quantiles=_QUANTILES)
            elif requests == max_stage_requests:
                requests += 1
                notes.append(f"task duration quantiles fetched for the first "
                             f"{max_stage_requests} stages only")
        p50, p90, p99, maximum = _quantiles(dist)
        submitted, completed_ms = _ms(raw.get("submissionTime")), _ms(raw.get("completionTime"))
        stage = {
            "stage_id": raw["stageId"], "attempt": raw["attemptId"], "name": raw.get("name"),
            "status": {"COMPLETE": "complete", "FAILED": "failed",
                       "ACTIVE": "running"}.get(state, str(state).lower()),
            "parent_ids": None, "job_ids": [],
            "n_tasks": raw.get("numTasks"), "n_task_attempts": complete + failed + killed,
            "n_succeeded_tasks": complete, "n_failed_tasks": failed, "n_killed_tasks": killed,
            "submission_ms": submitted, "completion_ms": completed_ms,
            "duration_s": _seconds(submitted, completed_ms),
            "task_duration_p50_ms": p50, "task_duration_p90_ms": p90,
            "task_duration_p99_ms": p99, "task_duration_max_ms": maximum,
            "task_skew": (maximum / p50) if p50 and maximum is not None else None,
            "task_time_ms": None,
            "peak_execution_memory_bytes": raw.get("peakExecutionMemory"),
            "failure_reason": (str(raw["failureReason"]).splitlines()[0][:500]
                               if raw.get("failureReason") else None),
        }
        for field_name, metric in _STAGE_METRICS.items():
            value = raw.get(field_name)
            if value is not None:            # CPU time stays in ns until the end: exact sums
                totals[metric] = totals.get(metric, 0) + value
            stage[metric] = value / 1e6 if value is not None and \
                metric == "executor_cpu_time_ms" else value
        stages.append(stage)
    totals = {name: totals.get(name) for name in SPARK_TASK_METRICS}
    if totals["executor_cpu_time_ms"] is not None:
        totals["executor_cpu_time_ms"] = totals["executor_cpu_time_ms"] / 1e6
    return stages, totals, ran, task_attempts, failed_tasks


def _executors(executors_raw, start_ms, horizon):
    executors, changes, available_ms = [], {}, 0.0
    known = True
    for raw in executors_raw:
        added, removed = _ms(raw.get("addTime")), _ms(raw.get("removeTime"))
        cores = raw.get("totalCores")
        executors.append({
            "executor_id": raw.get("id"), "host": (raw.get("hostPort") or "").rsplit(":", 1)[0]
            or None, "cores": cores, "added_ms": added, "removed_ms": removed,
            "removed_reason": raw.get("removeReason"),
        })
        if cores is None or added is None:
            known = False
            continue
        if not cores:
            continue                     # the driver of a cluster-mode app runs no tasks
        start = max(added, start_ms) if start_ms is not None else added
        end = removed if removed is not None else horizon
        if end is None:
            known = False
            continue
        if horizon is not None:
            end = min(end, horizon)
        if end > start:
            available_ms += cores * (end - start)
        changes[start] = changes.get(start, 0) + cores
        if removed is not None:
            changes[end] = changes.get(end, 0) - cores
    if not known or not changes:
        return executors, [], None
    timeline, total = [], 0
    for time_ms in sorted(changes):
        total += changes[time_ms]
        timeline.append({"time_ms": time_ms, "cores": total})
    return executors, timeline, available_ms / 1000.0
