"""Progress of a *running* Spark application, read while it runs.

Two sources give the same :class:`ProgressSnapshot`:

* the driver's REST API (``http://driver:4040/api/v1/applications/<id>/jobs``
  and ``.../stages``, or a History Server at port 18080):
  :func:`read_rest_snapshot`, through the one REST client
  (:mod:`jobgauge.profiler.readers.sparkrest`);
* an event log that Spark is still writing: :class:`EventLogTail` reads only
  the bytes appended since its last :meth:`~EventLogTail.poll` and folds the
  listener events into a :class:`ProgressTracker`.  Files, layouts and codecs
  are the batch reader's (:mod:`jobgauge.profiler.readers._eventlog_io`): plain logs,
  ``.inprogress`` logs, the rolling ``eventlog_v2_<app id>/`` folders Spark
  3+ writes, the old folder-per-application layout, and the ``zstd``
  (Spark 4's default), ``lz4`` and ``snappy`` codecs, appended to or not.

Either source failing to answer raises :data:`LiveSourceError` (the REST
client's :class:`~jobgauge.profiler.readers.sparkrest.SparkRestError`).

A snapshot only holds what has happened up to the moment it was taken
(here a finished log from the corpus; on a running one, call ``poll`` again
later to read what was appended)::

    >>> tail = EventLogTail("spark-eventlogs/apache-spark/application_1538416563558_0014")
    >>> tail.poll()                 # events read
    190
    >>> snap = tail.snapshot()
    >>> snap.status, snap.jobs_completed, snap.jobs_total, snap.tasks_completed
    ('succeeded', 8, 8, 27)

Times are seconds since the epoch (floats).  ``ProgressTracker`` is also what
:meth:`jobgauge.models.remaining.RemainingTimeEstimator.update` feeds events
into, so an estimator can be driven event by event.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

from jobgauge.errors import GaugeError, ParseError, UsageError
from jobgauge.profiler.readers._eventlog_io import GrowingPart, LogLayout, resolve_layout
from jobgauge.profiler.readers.sparkrest import SparkRestClient, SparkRestError, parse_url, rest_time_ms

__all__ = [
    "JobProgress",
    "LiveSourceError",
    "ProgressSnapshot",
    "ProgressTracker",
    "StageProgress",
    "EventLogTail",
    "read_rest_snapshot",
    "read_snapshot",
]


# A running application's UI or event log could not be reached or read: the one error
# of Spark's REST API (see sparkrest), under the name this module always exported.
LiveSourceError = SparkRestError


# ---------------------------------------------------------------- snapshots

@dataclass(frozen=True)
class StageProgress:
    """One stage (its latest attempt) as far as it has got.

    ``status`` is ``pending`` (known from its job's start, not submitted yet),
    ``active``, ``complete``, ``skipped`` (its output already existed) or
    ``failed``.
    """

    stage_id: int
    attempt_id: int = 0
    status: str = "pending"
    n_tasks: int = 0
    n_completed_tasks: int = 0
    n_active_tasks: int = 0
    submitted_s: float | None = None
    completed_s: float | None = None
    name: str = ""


@dataclass(frozen=True)
class JobProgress:
    """One Spark job: ``status`` is ``running``, ``succeeded`` or ``failed``."""

    job_id: int
    status: str = "running"
    submitted_s: float | None = None
    completed_s: float | None = None
    stage_ids: tuple[int, ...] = ()
    n_tasks: int | None = None
    n_completed_tasks: int = 0
    name: str = ""

    @property
    def finished(self) -> bool:
        return self.status in ("succeeded", "failed")


@dataclass(frozen=True)
class ProgressSnapshot:
    """What a running (or finished) application has done up to ``taken_s``.

    ``status`` is ``running``, ``succeeded`` or ``failed``.  ``jobs`` are in
    submission order; ``stages`` hold the pending stages its jobs announced
    (the DAG not yet submitted) as well as the ones that ran.
    """

    app_id: str | None
    app_name: str | None
    source: str                       # "rest", "eventlog" or "history"
    location: str | None
    started_s: float | None
    taken_s: float
    ended_s: float | None = None
    status: str = "running"
    jobs: tuple[JobProgress, ...] = ()
    stages: tuple[StageProgress, ...] = ()
    spark_version: str | None = None

    @property
    def elapsed_s(self) -> float:
        if self.started_s is None:
            return 0.0
        end = self.ended_s if self.ended_s is not None else self.taken_s
        return max(0.0, end - self.started_s)

    @property
    def finished(self) -> bool:
        return self.status in ("succeeded", "failed")

    @property
    def jobs_completed(self) -> int:
        return sum(1 for job in self.jobs if job.finished)

    @property
    def jobs_total(self) -> int:
        """Jobs known so far: later jobs are unknown until the driver submits them."""
        return len(self.jobs)

    @property
    def stages_completed(self) -> int:
        return sum(1 for stage in self.stages if stage.status == "complete")

    @property
    def stages_skipped(self) -> int:
        return sum(1 for stage in self.stages if stage.status == "skipped")

    @property
    def stages_total(self) -> int:
        """Known stages that run or will run (skipped ones excluded)."""
        return sum(1 for stage in self.stages if stage.status != "skipped")

    @property
    def tasks_completed(self) -> int:
        return sum(min(stage.n_completed_tasks, stage.n_tasks) if stage.status != "complete"
                   else stage.n_tasks for stage in self.stages if stage.status != "skipped")

    @property
    def tasks_total(self) -> int:
        return sum(stage.n_tasks for stage in self.stages if stage.status != "skipped")

    def counts(self) -> dict[str, int]:
        return {
            "jobs_completed": self.jobs_completed, "jobs_total": self.jobs_total,
            "stages_completed": self.stages_completed, "stages_total": self.stages_total,
            "stages_skipped": self.stages_skipped,
            "tasks_completed": self.tasks_completed, "tasks_total": self.tasks_total,
        }

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["elapsed_s"] = self.elapsed_s
        out.update(self.counts())
        return out


# ---------------------------------------------------------------- listener events

_JOB_RESULT = {"JobSucceeded": "succeeded"}


def _ms(value) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value / 1000.0 if value > 0 else None


@dataclass
class _Stage:
    stage_id: int
    attempt_id: int = 0
    status: str = "pending"
    n_tasks: int = 0
    completed_tasks: set = field(default_factory=set)   # indices that succeeded
    active_tasks: int = 0
    submitted_s: float | None = None
    completed_s: float | None = None
    name: str = ""


@dataclass
class _Job:
    job_id: int
    status: str = "running"
    submitted_s: float | None = None
    completed_s: float | None = None
    stage_ids: tuple[int, ...] = ()
    name: str = ""


class ProgressTracker:
    """Folds Spark listener events (the event log's JSON objects) into progress.

    Feed events in log order with :meth:`feed`; ask :meth:`snapshot` at any
    time.  Only what the events say is known: jobs the driver has not
    submitted yet do not exist here.
    """

    def __init__(self, *, source: str = "eventlog", location: str | None = None):
        self.source = source
        self.location = location
        self.app_id: str | None = None
        self.app_name: str | None = None
        self.spark_version: str | None = None
        self.started_s: float | None = None
        self.ended_s: float | None = None
        self.last_event_s: float | None = None
        self.n_events = 0
        self._jobs: dict[int, _Job] = {}
        self._stages: dict[int, _Stage] = {}
        self._failed_jobs = False

    # -- events
    def feed(self, event: dict) -> None:
        """Apply one listener event (a dict with an ``Event`` field)."""
        if not isinstance(event, dict) or not isinstance(event.get("Event"), str):
            raise ParseError("not a Spark listener event", path=self.location,
                             expected="a JSON object with an 'Event' field",
                             snippet=json.dumps(event)[:80] if _jsonable(event) else repr(event)[:80])
        self.n_events += 1
        kind = event["Event"]
        handler = self._HANDLERS.get(kind)
        if handler is not None:
            handler(self, event)

    def feed_all(self, events: Iterable[dict]) -> "ProgressTracker":
        for event in events:
            self.feed(event)
        return self

    def _seen(self, seconds: float | None) -> None:
        if seconds is not None and (self.last_event_s is None or seconds > self.last_event_s):
            self.last_event_s = seconds

    def _on_log_start(self, event):
        self.spark_version = event.get("Spark Version")

    def _on_app_start(self, event):
        self.app_name = event.get("App Name")
        self.app_id = event.get("App ID") or self.app_id
        self.started_s = _ms(event.get("Timestamp"))
        self._seen(self.started_s)

    def _on_app_end(self, event):
        self.ended_s = _ms(event.get("Timestamp"))
        self._seen(self.ended_s)

    def _stage(self, stage_id: int) -> _Stage:
        stage = self._stages.get(stage_id)
        if stage is None:
            stage = self._stages[stage_id] = _Stage(stage_id)
        return stage

    def _on_job_start(self, event):
        job_id = int(event["Job ID"])
        infos = event.get("Stage Infos") or []
        stage_ids = tuple(int(s) for s in event.get("Stage IDs") or [i["Stage ID"] for i in infos])
        submitted = _ms(event.get("Submission Time"))
        props = event.get("Properties") or {}
        self._jobs[job_id] = _Job(job_id, "running", submitted, None, stage_ids,
                                  props.get("spark.job.description") or "")
        for info in infos:
            stage = self._stage(int(info["Stage ID"]))
            if stage.status == "pending":
                stage.n_tasks = int(info.get("Number of Tasks") or 0)
                stage.name = info.get("Stage Name") or stage.name
        for stage_id in stage_ids:
            self._stage(stage_id)
        self._seen(submitted)

    def _on_job_end(self, event):
        job_id = int(event["Job ID"])
        job = self._jobs.get(job_id)
        if job is None:  # a log that starts mid-way: keep what we can
            job = self._jobs[job_id] = _Job(job_id)
        result = (event.get("Job Result") or {}).get("Result", "JobSucceeded")
        job.status = _JOB_RESULT.get(result, "failed")
        job.completed_s = _ms(event.get("Completion Time"))
        for stage_id in job.stage_ids:
            stage = self._stages.get(stage_id)
            if stage is not None and stage.status == "pending":
                stage.status = "skipped"
        self._seen(job.completed_s)

    def _on_stage_submitted(self, event):
        info = event.get("Stage Info") or {}
        stage = self._stage(int(info["Stage ID"]))
        attempt = int(info.get("Stage Attempt ID", info.get("Attempt ID", 0)) or 0)
        if attempt != stage.attempt_id or stage.status in ("failed", "complete"):
            stage.completed_tasks = set()
            stage.active_tasks = 0
        stage.attempt_id = attempt
        stage.status = "active"
        stage.n_tasks = int(info.get("Number of Tasks") or stage.n_tasks or 0)
        stage.name = info.get("Stage Name") or stage.name
        stage.submitted_s = _ms(info.get("Submission Time")) or stage.submitted_s or self.last_event_s
        stage.completed_s = None
        self._seen(stage.submitted_s)

    def _on_stage_completed(self, event):
        info = event.get("Stage Info") or {}
        stage = self._stage(int(info["Stage ID"]))
        stage.attempt_id = int(info.get("Stage Attempt ID", info.get("Attempt ID", 0)) or 0)
        stage.n_tasks = int(info.get("Number of Tasks") or stage.n_tasks or 0)
        stage.status = "failed" if info.get("Failure Reason") else "complete"
        stage.submitted_s = _ms(info.get("Submission Time")) or stage.submitted_s
        stage.completed_s = _ms(info.get("Completion Time")) or self.last_event_s
        stage.active_tasks = 0
        self._seen(stage.completed_s)

    def _on_task_start(self, event):
        stage = self._stage(int(event["Stage ID"]))
        if stage.status == "pending":
            stage.status = "active"
        stage.active_tasks += 1
        self._seen(_ms((event.get("Task Info") or {}).get("Launch Time")))

    def _on_task_end(self, event):
        stage = self._stage(int(event["Stage ID"]))
        info = event.get("Task Info") or {}
        stage.active_tasks = max(0, stage.active_tasks - 1)
        reason = (event.get("Task End Reason") or {}).get("Reason", "Success")
        if reason == "Success" and not info.get("Failed") and not info.get("Killed"):
            attempt = int(event.get("Stage Attempt ID", stage.attempt_id) or 0)
            if attempt == stage.attempt_id:
                stage.completed_tasks.add(info.get("Index", info.get("Task ID")))
        self._seen(_ms(info.get("Finish Time")))

    _HANDLERS = {
        "SparkListenerLogStart": _on_log_start,
        "SparkListenerApplicationStart": _on_app_start,
        "SparkListenerApplicationEnd": _on_app_end,
        "SparkListenerJobStart": _on_job_start,
        "SparkListenerJobEnd": _on_job_end,
        "SparkListenerStageSubmitted": _on_stage_submitted,
        "SparkListenerStageCompleted": _on_stage_completed,
        "SparkListenerTaskStart": _on_task_start,
        "SparkListenerTaskEnd": _on_task_end,
    }

    # -- snapshot
    def snapshot(self, *, now: float | None = None, running: bool | None = None) -> ProgressSnapshot:
        """Progress as of ``now`` (default: the clock while running, the
        application's end or last event once it has ended).

        ``running`` overrides what the log says (a rolling log's
        ``appstatus`` file knows better than a missing ApplicationEnd event).
        """
        ended = self.ended_s is not None if running is None else not running
        if ended:
            taken = self.ended_s or self.last_event_s or now or time.time()
            # no ApplicationEnd in a finished log: the driver died before stopping cleanly
            died = self.ended_s is None
            status = "failed" if died or (self._jobs and self._last_job_failed()) else "succeeded"
        else:
            taken = now if now is not None else time.time()
            status = "running"
        jobs = tuple(
            JobProgress(j.job_id, j.status, j.submitted_s, j.completed_s, j.stage_ids,
                        self._job_tasks(j), self._job_completed_tasks(j), j.name)
            for j in sorted(self._jobs.values(), key=lambda j: (j.submitted_s or 0.0, j.job_id)))
        stages = tuple(
            StageProgress(s.stage_id, s.attempt_id, s.status, s.n_tasks,
                          s.n_tasks if s.status == "complete" else min(len(s.completed_tasks), s.n_tasks),
                          s.active_tasks, s.submitted_s, s.completed_s, s.name)
            for s in sorted(self._stages.values(), key=lambda s: s.stage_id))
        return ProgressSnapshot(
            app_id=self.app_id, app_name=self.app_name, source=self.source,
            location=self.location, started_s=self.started_s, taken_s=taken,
            ended_s=(self.ended_s or taken) if ended else None, status=status,
            jobs=jobs, stages=stages, spark_version=self.spark_version)

    def _last_job_failed(self) -> bool:
        last = max(self._jobs.values(), key=lambda j: (j.submitted_s or 0.0, j.job_id))
        return last.status == "failed"

    def _job_tasks(self, job: _Job) -> int | None:
        stages = [self._stages[s] for s in job.stage_ids if s in self._stages]
        if not stages:
            return None
        return sum(s.n_tasks for s in stages if s.status != "skipped")

    def _job_completed_tasks(self, job: _Job) -> int:
        total = 0
        for stage_id in job.stage_ids:
            s = self._stages.get(stage_id)
            if s is None or s.status == "skipped":
                continue
            total += s.n_tasks if s.status == "complete" else min(len(s.completed_tasks), s.n_tasks)
        return total


def _jsonable(value) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


# ---------------------------------------------------------------- tail reader

class EventLogTail:
    """Reads a Spark event log as it grows, one :meth:`poll` at a time.

    ``path`` is an event log file (plain, ``.inprogress`` or compressed), a
    rolling log folder (``eventlog_v2_<app id>``) or an old-style
    application folder (``EVENT_LOG_1`` inside).  Files, codecs and layouts
    are the batch reader's (:mod:`jobgauge.profiler.readers._eventlog_io`): every
    :meth:`poll` finds the log's parts again and reads, through a
    :class:`~jobgauge.profiler.readers._eventlog_io.GrowingPart` each, the bytes
    appended since the previous poll; an unfinished last line waits for the
    next poll.  A line that is not a listener event raises
    :class:`~jobgauge.errors.ParseError` with its file and line number.
    """

    def __init__(self, path, *, tracker: ProgressTracker | None = None):
        self.path = Path(path)
        if not self.path.exists():
            raise LiveSourceError(f"no Spark event log at {self.path}")
        self.tracker = tracker or ProgressTracker(source="eventlog", location=str(self.path))
        self._parts: dict[str, GrowingPart] = {}     # by file name without .inprogress

    def _layout(self) -> LogLayout:
        """Where the log's parts are now (Spark renames ``<log>.inprogress`` at the end)."""
        if not self.path.exists() and self.path.name.endswith(".inprogress"):
            final = self.path.with_name(self.path.name[: -len(".inprogress")])
            if final.exists():
                self.path = final
        if not self.path.exists():
            raise LiveSourceError(f"the Spark event log {self.path} has disappeared")
        return resolve_layout(self.path)

    def running(self) -> bool | None:
        """What the log's own markers say: True while the app runs, False once
        it has ended (a finished log without ApplicationEnd is a driver that
        died), None when the layout has no marker (then the events decide)."""
        layout = self._layout()
        return layout.in_progress if layout.marked else None

    # -- reading
    def poll(self, *, final: bool = False) -> int:
        """Read what was appended since the last poll; returns events applied."""
        before = self.tracker.n_events
        for part in self._layout().parts:
            key = part.path.name.removesuffix(".inprogress")
            growing = self._parts.get(key)
            if growing is None:
                growing = self._parts[key] = GrowingPart(part)
            elif growing.path != part.path:          # renamed when the application ended
                growing.part = part
            try:
                lines = growing.read_lines(final=final)
            except FileNotFoundError as exc:
                raise LiveSourceError(f"event log file vanished while reading: "
                                      f"{growing.path}") from exc
            except OSError as exc:
                raise LiveSourceError(f"cannot read event log {growing.path}: "
                                      f"{exc.strerror or type(exc).__name__}") from exc
            for line_no, raw in lines:
                self._apply(raw, growing.path, line_no)
        return self.tracker.n_events - before

    def _apply(self, raw: bytes, path: Path, line_no: int) -> None:
        line = raw.strip()
        if not line:
            return
        try:
            event = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise ParseError("not a JSON line", path=path, line=line_no,
                             expected="one JSON listener event per line",
                             snippet=line[:80].decode("utf-8", "replace")) from None
        if not isinstance(event, dict) or not isinstance(event.get("Event"), str):
            raise ParseError("not a Spark listener event", path=path, line=line_no,
                             expected="a JSON object with an 'Event' field",
                             snippet=line[:80].decode("utf-8", "replace"))
        try:
            self.tracker.feed(event)
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, GaugeError):
                raise
            raise ParseError(f"malformed {event['Event']} event ({exc!r})", path=path,
                             line=line_no, snippet=line[:80].decode("utf-8", "replace")) from None

    def finish(self) -> None:
        """Read to the end and apply a last line that lacks its newline.

        Call this once the application has ended: a log that was cut off in
        the middle of a line then raises :class:`ParseError`."""
        self.poll(final=True)
        for growing in self._parts.values():
            rest = growing.rest()
            if rest is not None:
                self._apply(rest[1], growing.path, rest[0])

    def snapshot(self, *, now: float | None = None) -> ProgressSnapshot:
        """Progress as of ``now`` (see :meth:`ProgressTracker.snapshot`)."""
        return self.tracker.snapshot(now=now, running=self.running())


# ---------------------------------------------------------------- REST API

_UI_HINT = ("the UI of a still running application, which listens on spark.ui.port, 4040 "
            "by default, or a History Server")


def _rest_time(value) -> float | None:
    try:
        millis = rest_time_ms(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return millis / 1000.0 if millis and millis > 0 else None


def _pick_app(apps: list, url: str, app_id: str | None) -> dict:
    apps = [app for app in apps if isinstance(app, dict) and app.get("id")]
    if app_id is not None:
        for app in apps:
            if app.get("id") == app_id:
                return app
        raise LiveSourceError(f"no application {app_id!r} at {url}")
    if len(apps) == 1:
        return apps[0]
    running = [a for a in apps if not ((a.get("attempts") or [{}])[-1].get("completed", True))]
    if len(running) == 1:
        return running[0]
    raise UsageError(f"{url} lists {len(apps)} applications ({len(running)} running); "
                     "name one: .../api/v1/applications/<id>")


_STAGE_STATUS = {"ACTIVE": "active", "COMPLETE": "complete", "PENDING": "pending",
                 "SKIPPED": "skipped", "FAILED": "failed"}
_JOB_STATUS = {"RUNNING": "running", "SUCCEEDED": "succeeded", "FAILED": "failed", "UNKNOWN": "running"}


def read_rest_snapshot(url: str, *, app_id: str | None = None, timeout_s: float = 5.0,
                       now: float | None = None) -> ProgressSnapshot:
    """Progress of an application from the Spark REST API.

    ``url`` is the driver UI (``http://driver:4040``), a History Server, or
    any ``.../api/v1/applications/<id>`` address.  Raises
    :class:`LiveSourceError` when nothing answers there.
    """
    address = parse_url(url)
    client = SparkRestClient(address.root, timeout_s=timeout_s, server="Spark UI", hint=_UI_HINT)
    app = _pick_app(client.applications(), url, app_id or address.app_id)
    jobs_raw = client.jobs(app["id"])
    stages_raw = client.stages(app["id"])
    taken = now if now is not None else time.time()
    attempt = (app.get("attempts") or [{}])[-1]
    started = _ms(attempt.get("startTimeEpoch")) or _rest_time(attempt.get("startTime"))
    completed = bool(attempt.get("completed", False))
    ended = (_ms(attempt.get("endTimeEpoch")) or _rest_time(attempt.get("endTime"))) if completed else None

    stages: dict[int, StageProgress] = {}
    for raw in stages_raw:
        try:
            stage = StageProgress(
                stage_id=int(raw["stageId"]), attempt_id=int(raw.get("attemptId", 0)),
                status=_STAGE_STATUS.get(str(raw.get("status")), "pending"),
                n_tasks=int(raw.get("numTasks", 0)),
                n_completed_tasks=int(raw.get("numCompleteTasks", 0)),
                n_active_tasks=int(raw.get("numActiveTasks", 0)),
                submitted_s=_rest_time(raw.get("submissionTime")),
                completed_s=_rest_time(raw.get("completionTime")),
                name=str(raw.get("name", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise ParseError(f"unexpected stage entry ({exc!r})", path=url,
                             snippet=json.dumps(raw)[:80]) from None
        previous = stages.get(stage.stage_id)
        if previous is None or stage.attempt_id >= previous.attempt_id:
            stages[stage.stage_id] = stage
    jobs = []
    for raw in jobs_raw:
        try:
            jobs.append(JobProgress(
                job_id=int(raw["jobId"]), status=_JOB_STATUS.get(str(raw.get("status")), "running"),
                submitted_s=_rest_time(raw.get("submissionTime")),
                completed_s=_rest_time(raw.get("completionTime")),
                stage_ids=tuple(int(s) for s in raw.get("stageIds", ())),
                n_tasks=int(raw["numTasks"]) if "numTasks" in raw else None,
                n_completed_tasks=int(raw.get("numCompletedTasks", 0)),
                name=str(raw.get("name", ""))))
        except (KeyError, TypeError, ValueError) as exc:
            raise ParseError(f"unexpected job entry ({exc!r})", path=url,
                             snippet=json.dumps(raw)[:80]) from None
    jobs.sort(key=lambda j: (j.submitted_s or 0.0, j.job_id))
    status = "running"
    if completed:
        status = "failed" if jobs and jobs[-1].status == "failed" else "succeeded"
    return ProgressSnapshot(
        app_id=app.get("id"), app_name=app.get("name"), source="rest", location=url,
        started_s=started, taken_s=ended if completed and ended else taken,
        ended_s=ended if completed else None, status=status, jobs=tuple(jobs),
        stages=tuple(sorted(stages.values(), key=lambda s: s.stage_id)),
        spark_version=attempt.get("appSparkVersion"))


def read_snapshot(url_or_path, *, app_id: str | None = None, timeout_s: float = 5.0,
                  now: float | None = None) -> ProgressSnapshot:
    """A snapshot from a Spark UI URL or an event log path (file or folder)."""
    text = str(url_or_path)
    if re.match(r"^https?://", text) or (not os.path.exists(text) and re.match(r"^[\w.-]+:\d+(/|$)", text)):
        return read_rest_snapshot(text, app_id=app_id, timeout_s=timeout_s, now=now)
    path = Path(text)
    if not path.exists():
        raise LiveSourceError(f"no Spark event log at {path} (and not an http:// URL of a Spark UI)")
    tail = EventLogTail(path)
    tail.poll()
    if tail.running() is False or (tail.running() is None and tail.tracker.ended_s is not None):
        tail.finish()
    if tail.tracker.n_events == 0:
        raise ParseError("no Spark listener events in the log", path=path,
                         expected="one JSON listener event per line")
    return tail.snapshot(now=now)

