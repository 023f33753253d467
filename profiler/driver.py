"""The Spark application side of the runner: ``python -m jobgauge.profiler.driver SPEC``.

The runner writes a JSON spec (master, Spark configuration, event-log folder,
items to run) and starts this module in a child process, so a run that hangs
or crashes the JVM can be killed without taking the caller down.  Each item
is one workload with its SQL-level settings; the child times each item's own
wall time (``time_kind="query"``), cancels an item past its timeout through
its Spark job group, and appends one JSON line per item to the results file
as soon as the item ends, so nothing measured is lost if the application dies
later.

With ``"stream": true`` in the spec the child runs no fixed list: it keeps
the application up and takes items one JSON line at a time from stdin (the
warm runner, :mod:`jobgauge.profiler._warm`), stopping at ``{"stop": true}``
or when stdin closes.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


def _emit(results, record: dict) -> None:
    results.write(json.dumps(record, default=str) + "\n")
    results.flush()


def _error_text(exc: BaseException) -> str:
    text = str(exc).strip() or exc.__class__.__name__
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[:12])[:4000]


class _Application:
    """One Spark application of a spec: starts it, runs items, stops it."""

    def __init__(self, spec: dict):
        from pyspark.sql import SparkSession

        self.spec = spec
        self.results = open(spec["results_path"], "a", encoding="utf-8")
        builder = (SparkSession.builder.master(spec["master"])
                   .appName(spec.get("app_name", "jobgauge")))
        for key, value in spec.get("spark_conf", {}).items():
            builder = builder.config(key, str(value))
        eventlog_dir = spec.get("eventlog_dir")
        if eventlog_dir:
            Path(eventlog_dir).mkdir(parents=True, exist_ok=True)
            builder = (builder.config("spark.eventLog.enabled", "true")
                       .config("spark.eventLog.dir", str(eventlog_dir)))
        started = time.perf_counter()
        try:
            self.spark = builder.getOrCreate()
        except BaseException:
            self.results.close()
            raise
        self.spark.sparkContext.setLogLevel("ERROR")
        self.context = self.spark.sparkContext
        self.set_keys: set[str] = set()
        _emit(self.results, {"event": "started", "app_id": self.context.applicationId,
                             "spark_version": self.spark.version,
                             "session_start_s": round(time.perf_counter() - started, 3),
                             "at": _now_iso()})

    def run_item(self, item: dict) -> dict:
        """Run one item, append its result line, return it."""
        from jobgauge.profiler.workloads import get_workload

        spark, context = self.spark, self.context
        group = f"jobgauge-{item['key']}"[:200]
        timed_out, finished = threading.Event(), threading.Event()
        limit = float(item.get("timeout_s", 600))

        def _watch():
            # Past the limit, keep cancelling: a job submitted after the first
            # cancel (planning can outlast a short limit) must stop too.
            if finished.wait(limit):
                return
            timed_out.set()
            while not finished.is_set():
                context.cancelJobGroup(group)
                finished.wait(0.2)

        timer = threading.Thread(target=_watch, daemon=True)
        record = {"event": "item", "key": item["key"], "workload": item["workload"],
                  "warmup": bool(item.get("warmup")), "started_at": _now_iso()}
        output_dir = Path(self.spec.get("output_root", "/tmp")) / group
        begin = time.perf_counter()
        try:
            for key in self.set_keys - set(item.get("sql_conf", {})):
                spark.conf.unset(key)
            self.set_keys = set()
            for key, value in item.get("sql_conf", {}).items():
                spark.conf.set(key, str(value))
                self.set_keys.add(key)
            workload = get_workload(item["workload"])
            context.setJobGroup(group, item["workload"], interruptOnCancel=True)
            begin = time.perf_counter()
            timer.start()
            summary = workload.run(spark, Path(item["data_path"]), output_dir=output_dir)
            if timed_out.is_set():  # it ended past its limit, before a cancel could stop it
                record.update(status="timed_out", result=summary,
                              error=f"ran past its time limit of {limit:g} s: its job group "
                                    f"was cancelled at the limit, but the run ended first")
            else:
                record.update(status="succeeded", result=summary)
        except Exception as exc:  # noqa: BLE001 - every failure is recorded, not raised
            record.update(status="timed_out" if timed_out.is_set() else "failed",
                          error=_error_text(exc))
        finally:
            finished.set()
            record["runtime_s"] = round(time.perf_counter() - begin, 4)
            record["ended_at"] = _now_iso()
            shutil.rmtree(output_dir, ignore_errors=True)  # outputs are checked, not kept
        record["job_ids"] = sorted(context.statusTracker().getJobIdsForGroup(group))
        context.setLocalProperty("spark.jobGroup.id", None)
        _emit(self.results, record)
        return record

    def stop(self) -> None:
        try:
            self.spark.stop()
        finally:
            _emit(self.results, {"event": "stopped", "at": _now_iso()})
            self.results.close()


def run_spec(spec: dict) -> int:
    """Batch mode: run the spec's ``items`` in one application, then stop."""
    app = _Application(spec)
    try:
        for item in spec["items"]:
            app.run_item(item)
    finally:
        app.stop()
    return 0


def run_stream(spec: dict, lines=None) -> int:
    """Streaming mode (``"stream": true`` in the spec): keep the application up and
    run one item per JSON line read from ``lines`` (stdin), in order, until a
    ``{"stop": true}`` line or the end of input (the parent went away)."""
    lines = sys.stdin if lines is None else lines
    app = _Application(spec)
    try:
        for line in lines:
            if not line.strip():
                continue
            item = json.loads(line)
            if item.get("stop"):
                break
            app.run_item(item)
    finally:
        app.stop()
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m jobgauge.profiler.driver SPEC.json", file=sys.stderr)
        return 2
    spec = json.loads(Path(argv[0]).read_text())
    try:
        return run_stream(spec) if spec.get("stream") else run_spec(spec)
    except Exception:  # noqa: BLE001 - the parent reads stderr and records the failure
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
