"""Warm measured runs: one long-lived Spark application per set of restart-level settings.

``run_workload`` starts a fresh application for every run, so every run pays
the JVM start-up and is timed cold (a cold first query is 1.5-3x slower than
its warm repeats).  The shipped corpus was collected warm: one application per
group of settings that need a restart, a warm-up item first, then each query
timed on its own (``time_kind="query"``).  :class:`WarmRunner` measures the
same way, one run at a time, so a tuner can ask for the next configuration
after seeing the last result::

    with WarmRunner(store=store) as runner:
        run = runner.run("tpch-q6", "sf0.1", {"spark.sql.shuffle.partitions": 8})
        run["runtime_s"], run["status"]

The application is a child process (``python -m jobgauge.profiler.runners.driver``
in streaming mode) that reads one JSON item per line from its stdin and
appends one result line per item to a results file.  The runner keeps it up
while the restart-level settings (master and the static configuration, see
``runner.split_config``) stay the same, and starts a new one, with a warm-up
item, when they change.  It never hangs: the child cancels an item past its
timeout through its Spark job group; if the item still has not ended
``grace_s`` later the child's process group is killed, the run is recorded
as timed out and the next run starts a new application.  An application
that dies is recorded as a failed run.  Every run goes to the store as soon
as it ends; per-run profiles are cut from the application's event log when
the application stops (a log that cannot be read loses no run).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path

from jobgauge.errors import UsageError
from jobgauge.profiler.runners.driver import start_driver
from jobgauge.profiler.runners.runner import (DEFAULT_DATA_ROOT, DEFAULT_EVENTLOG_DIR, _last_error_lines,
                                      _read_new_lines, application_profile, find_eventlog,
                                      local_cores, query_profile, resources, run_record,
                                      split_config)

WARMUP_MODES = ("application", "workload", "none")


def _check_local(master: str) -> str:
    if not str(master).strip().startswith("local"):
        raise UsageError(f"the warm runner runs local masters (local[N]); got {master!r}")
    local_cores(master)                   # local, local[N] or local[*], or UsageError
    return master


class _Application:
    """One running driver child and what ran in it."""

    def __init__(self, key, master: str, static: dict, process, results_path: Path,
                 log_path: Path):
        self.key = key
        self.master = master
        self.static = static
        self.process = process
        self.results_path = results_path
        self.log_path = log_path
        self.offset = 0
        self.info: dict = {}
        self.warmed: set = set()
        self.runs: list[dict] = []       # the measured runs (with job ids) for profiles
        self.dead = False
        self.entry: dict = {}            # this application's row in WarmRunner.applications

    @property
    def alive(self) -> bool:
        return not self.dead and self.process.poll() is None

    def log_tail(self) -> str:
        try:
            text = self.log_path.read_text(errors="replace")[-3000:].strip()
        except OSError:
            return ""
        return _last_error_lines(text)


class WarmRunner:
    """Run workloads one at a time in warm Spark applications (a context manager).

    ``master``: the master when a configuration names none (``spark.master``
    in a configuration chooses it per run; it is a restart-level setting).
    ``warmup``: ``"application"`` runs one unrecorded warm-up item (the first
    run's workload, Spark's SQL defaults) whenever an application starts, as
    the corpus collector does; ``"workload"`` also warms up each new
    (workload, size) in a running application; ``"none"`` never; a warm-up is
    ``warmup_runs`` runs (default 1, as the corpus).
    ``work_dir``: driver specs, results and logs (default: a temporary
    folder removed on close).  ``store``: every run is recorded there
    (``store.add_run``) as it ends.
    ``profiles``: cut each run's profile from the event log when its
    application stops and add it to the store.  ``max_applications``: how
    many applications (of different restart-level settings) may stay up,
    idle, at once; with more than 1, going back to settings seen before
    reuses their application (the least recently used one is stopped
    first).  ``applications`` lists every application started.
    """

    def __init__(self, *, master: str = "local[2]", data_root=None, eventlog_dir=None,
                 work_dir=None, store=None, source: str = "local", warmup: str = "application",
                 profiles: bool = True, startup_timeout_s: float = 180.0, grace_s: float = 30.0,
                 max_applications: int = 1, warmup_runs: int = 1,
                 app_name: str = "jobgauge warm"):
        if warmup not in WARMUP_MODES:
            raise UsageError(f"warmup must be one of {', '.join(WARMUP_MODES)}; got {warmup!r}")
        if not isinstance(warmup_runs, int) or warmup_runs < 1:
            raise UsageError(f"warmup_runs must be an int >= 1, got {warmup_runs!r}")
        if not isinstance(max_applications, int) or max_applications < 1:
            raise UsageError(f"max_applications must be an int >= 1, got {max_applications!r}")
        _check_local(master)
        self.master = master
        self.data_root = Path(data_root or DEFAULT_DATA_ROOT)
        self.eventlog_dir = Path(eventlog_dir or DEFAULT_EVENTLOG_DIR)
        self.work_dir = Path(work_dir) if work_dir else None
        self.store = store
        self.source = source
        self.warmup = warmup
        self.profiles = profiles
        self.startup_timeout_s = float(startup_timeout_s)
        self.grace_s = float(grace_s)
        self.app_name = app_name
        self.max_applications = max_applications
        self.warmup_runs = warmup_runs
        self.applications: list[dict] = []    # one entry per application started
        self.profile_errors: list[str] = []   # event logs that could not be read
        self._app: _Application | None = None     # the one used last
        self._pool: dict = {}                     # restart-level key -> _Application, LRU first
        self._data_paths: dict = {}
        self._tmp = None

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> "WarmRunner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop every running application and attach the profiles of their runs."""
        for key in list(self._pool):
            self._stop_application(key)
        self._app = None
        if self._tmp is not None:            # a work folder we made: results and logs go too
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp, self.work_dir = None, None

    @property
    def app_id(self) -> str | None:
        """The id of the application now running (None when none is)."""
        app = self._app
        return app.info.get("app_id") if app is not None and app.alive else None

    def _work_dir(self) -> Path:
        if self.work_dir is None:
            self._tmp = tempfile.mkdtemp(prefix="jobgauge-warm-")
            self.work_dir = Path(self._tmp)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        return self.work_dir

    # ------------------------------------------------------------------ runs

    def run(self, workload: str, size: str, config: dict | None = None,
            timeout_s: float = 600.0) -> dict:
        """Run ``workload`` at ``size`` with ``config`` once, warm; return the run.

        The run is a dict in the store's shape (``runtime_s``, ``status``
        succeeded/failed/timed_out, ``time_kind="query"``, resources, ``config``
        with ``spark.master``) plus ``app_id``, ``job_ids``, ``result``,
        ``profile`` (filled when the application stops) and ``id`` (its store
        key, with a store).  Failures and timeouts are returned, not raised;
        a bad workload, size or configuration raises UsageError.
        """
        from jobgauge.profiler.workloads import get_workload

        spec = get_workload(workload)
        if not size or size not in spec.sizes:
            raise UsageError(f"{workload} has sizes {', '.join(spec.sizes)}; got {size!r}")
        if not (isinstance(timeout_s, (int, float)) and timeout_s > 0):
            raise UsageError(f"timeout_s must be a number > 0, got {timeout_s!r}")
        static, session = split_config(dict(config or {}))
        master = _check_local(static.pop("spark.master", self.master))
        resources_ = resources(master, static)
        recorded = {"spark.master": master, **static, **session}
        data_path = self._data_path(spec, size)
        key = f"{workload}-{size}-{datetime.now():%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
        item = {"key": key, "workload": workload, "data_path": str(data_path),
                "sql_conf": session, "timeout_s": float(timeout_s),
                "query_text": getattr(spec, "sql", None)}
        app_key = (master, tuple(sorted(static.items())))
        record = None
        app = self._pool.pop(app_key, None)
        if app is not None and app.alive:
            self._pool[app_key] = app                 # most recently used last
            self._app = app
        else:
            if app is not None:
                self._pool[app_key] = app
                self._stop_application(app_key)
            while len(self._pool) >= self.max_applications:
                self._stop_application(next(iter(self._pool)))
            record = self._start_application(app_key, master, static)
        app = self._app
        if record is None and self.warmup != "none" and (workload, size) not in app.warmed \
                and (self.warmup == "workload" or not app.warmed):
            for number in range(self.warmup_runs):
                warm = self._execute(app, {**item, "key": f"warmup{number}-{key}",
                                           "sql_conf": {}, "warmup": True})
                if not app.alive:
                    break
            app.warmed.add((workload, size))
            if not app.alive:
                record = {"status": "failed", "runtime_s": None, "job_ids": [],
                          "error": f"the warm-up run ended the application: "
                                   f"{warm.get('error') or ''}".strip()}
        if record is None:
            record = self._execute(app, item)
        run = run_record(record, item=item, resources_=resources_,
                         engine_version=app.info.get("spark_version") if app else None,
                         size=size, input_bytes=spec.input_bytes(data_path), config=recorded,
                         source=self.source, run_id=key)
        if run["status"] == "timed_out" and run["runtime_s"] is None:
            run["runtime_s"] = float(timeout_s)       # censored at the limit
        if self.store is not None:
            run["id"] = self.store.add_run(run, {k: str(v) for k, v in recorded.items()})
        run.update(app_id=app.info.get("app_id") if app else None,
                   job_ids=record.get("job_ids") or [], result=record.get("result"),
                   profile=None, eventlog=None)
        if app is not None and run["job_ids"]:
            app.runs.append(run)
        return run

    def _data_path(self, spec, size) -> Path:
        cache_key = (spec.name, size)
        if cache_key not in self._data_paths:
            self._data_paths[cache_key] = Path(spec.prepare(self.data_root, size))
        return self._data_paths[cache_key]

    # ------------------------------------------------------- the application

    def _start_application(self, app_key, master: str, static: dict) -> dict | None:
        """Start a driver child; None when it is up, else a failed item record."""
        work_dir = self._work_dir()
        token = uuid.uuid4().hex[:8]
        results_path = work_dir / f"results-{token}.jsonl"
        log_path = work_dir / f"driver-{token}.log"
        self.eventlog_dir.mkdir(parents=True, exist_ok=True)
        spec = {"stream": True, "master": master, "spark_conf": dict(static),
                "app_name": self.app_name, "eventlog_dir": str(self.eventlog_dir),
                "results_path": str(results_path), "output_root": str(work_dir / "output")}
        spec_path = work_dir / f"spec-{token}.json"
        spec_path.write_text(json.dumps(spec))
        with open(log_path, "wb") as log:   # the child dies with this process, JVM included
            process = start_driver(spec_path, log=log, stdin=subprocess.PIPE, text=True)
        app = _Application(app_key, master, static, process, results_path, log_path)
        self._app = app
        self._pool[app_key] = app
        app.entry = {"master": master, "static": dict(static), "app_id": None,
                     "log": str(log_path), "runs": 0}
        self.applications.append(app.entry)
        line, failure = self._await(
            app, lambda line: line.get("event") == "started", self.startup_timeout_s,
            exited="the application did not start (exit code {code})",
            late=("failed", f"the application did not start within "
                            f"{self.startup_timeout_s:g} s"), poll_s=0.1)
        if failure is not None:
            return failure
        app.info = line
        app.entry["app_id"] = line.get("app_id")
        return None

    def _await(self, app: _Application, wanted, limit_s: float, *, exited: str, late,
               poll_s: float):
        """Wait for the first result line ``wanted(line)`` accepts: ``(line, None)``, or
        ``(None, failure record)`` when the application exits (``exited`` names its exit
        code as ``{code}``; its ``runtime_s`` the time from the run's ``begin`` line to
        the death, None before it) or ``limit_s`` passes (the application is killed;
        ``late`` is the record's (status, error))."""
        deadline, began = time.monotonic() + limit_s, None
        while True:
            for line in self._new_lines(app):
                if wanted(line):
                    return line, None
                if line.get("event") == "begin":     # the run's timed part started
                    began = float(line["at"])
            if app.process.poll() is not None:
                app.dead = True
                error = exited.format(code=app.process.returncode)
                # how long the run ran before the application died (None: not begun)
                return None, {"status": "failed", "job_ids": [],
                              "runtime_s": None if began is None
                              else round(time.time() - began, 4),
                              "error": f"{error}\n{app.log_tail()}".strip()}
            if time.monotonic() > deadline:
                self._kill(app)
                return None, {"status": late[0], "runtime_s": None, "job_ids": [],
                              "error": late[1]}
            time.sleep(poll_s)

    def _new_lines(self, app: _Application) -> list[dict]:
        lines, app.offset = _read_new_lines(app.results_path, app.offset)
        return lines

    def _execute(self, app: _Application, item: dict) -> dict:
        """Send one item to the application and wait for its result line."""
        try:
            app.process.stdin.write(json.dumps(item) + "\n")
            app.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            app.dead = True
            return {"status": "failed", "runtime_s": None, "job_ids": [],
                    "error": f"the application had ended\n{app.log_tail()}".strip()}
        line, failure = self._await(
            app, lambda line: line.get("event") == "item" and line.get("key") == item["key"],
            float(item["timeout_s"]) + self.grace_s,
            exited="application exited with code {code}",
            late=("timed_out", f"application killed: the run did not end within "
                               f"{item['timeout_s']:g} s + {self.grace_s:g} s"), poll_s=0.05)
        if failure is not None:
            return failure
        if not line.get("warmup"):
            app.entry["runs"] += 1
        return line

    def _kill(self, app: _Application) -> None:
        app.dead = True
        if app.process.poll() is None:
            try:
                os.killpg(app.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            app.process.wait()
        self._close_pipe(app)

    @staticmethod
    def _close_pipe(app: _Application) -> None:
        try:
            app.process.stdin.close()
        except (BrokenPipeError, OSError):
            pass

    def _stop_application(self, key) -> None:
        app = self._pool.pop(key, None)
        if app is None:
            return
        if app is self._app:
            self._app = None
        if app.process.poll() is None:
            try:
                app.process.stdin.write(json.dumps({"stop": True}) + "\n")
                app.process.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass
            self._close_pipe(app)
            try:
                app.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self._kill(app)
        else:
            self._close_pipe(app)
        app.dead = True
        if self.profiles:
            self._attach_profiles(app)

    def _attach_profiles(self, app: _Application) -> None:
        if not app.runs or not app.info.get("app_id"):
            return
        try:
            log = find_eventlog(self.eventlog_dir, app.info["app_id"])
            app_profile = application_profile(log)
            if app_profile is None:
                return
            for run in app.runs:
                profile = query_profile(app_profile, run["job_ids"], runtime_s=run["runtime_s"])
                run["profile"] = profile
                run["eventlog"] = log
                if self.store is not None and run.get("id") is not None:
                    self.store.add_profile(profile, run["id"])
        except Exception as exc:  # noqa: BLE001 - a broken log must not lose the measured runs
            self.profile_errors.append(f"{app.info.get('app_id')}: {exc}")
