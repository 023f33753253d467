"""The application report: where one Spark application's time went, what more or
fewer executors would do, and which settings would help (Sparklens plus Dr. Elephant).

:func:`application_report` takes a :class:`Profile` (from an event log, the
History Server or the store) and returns a plain dict, the ``--json`` of
``jobgauge report``:

* ``runtime_s``: application start to end; ``executor_s``: wall time in which
  at least one job ran; ``driver_s``: the rest (driver-only work);
* ``critical_path_s``: Sparklens' bound, the runtime with unlimited executors:
  driver time plus, per job, the longest chain of stages each taking its
  longest task;
* ``wasted_core_s``: executor core-seconds no task used;
* ``what_if``: the replay below at 10 % to 500 % of the run's executors;
* ``heuristics`` and ``recommended_conf``: :mod:`jobgauge.profiler.readers.heuristics`.

The replay (the forerunner of a stage-level predictor) re-runs the
application's own stages on ``n`` executors: a stage takes
``max(longest task, task time / slots)``, a job the longer of its stage
chain and its total task time over the slots; each job is scaled by its
measured / replayed time at the real executor count (so 100 % gives back
the measured runtime) and driver time stays as measured.  In local mode each
core counts as one executor, and the cores share one machine: tasks running
side by side on ``n`` cores take ``(n / n_run) ** LOCAL_CORE_CONTENTION`` times
their measured time (the run's own ``n_run`` cores: 1; a stage's longest task
as measured).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from jobgauge.profiler.readers import heuristics as _heuristics

WHAT_IF_SHARES = (0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0)
#: How much slower each task runs when more cores of one machine run tasks beside it:
#: ``(cores / measured cores) ** LOCAL_CORE_CONTENTION``.  Measured on this project's
#: machine (2 cores): with Spark's defaults the quiet TPC-H queries take 1.25x (SF 1)
#: and 1.44x (SF 3) as long on local[1] as on local[2] in the median, not 2x.  0.55 was
#: chosen on those runs, both scales together (bench/history.py, section c: MdAPE
#: 14.7 % at SF 1 and 14.2 % at SF 3; fitted on one scale and scored on the other,
#: 17.8 % and 21.1 %).  Below 1, more cores are never slower.
LOCAL_CORE_CONTENTION = 0.55
_PEAK_METRIC = "JVMHeapMemory"
_PEAK_VALUE = re.compile(rb'"JVMHeapMemory":\s*(\d+)')
_EXECUTOR_ID = re.compile(rb'"Executor ID":\s*"([^"]*)"')


# ---------------------------------------------------------------------------- facts

def _union_seconds(intervals) -> float:
    total, end = 0.0, None
    for start, stop in sorted(intervals):
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total / 1000.0


def _layout(profile) -> dict:
    """Executors, cores per executor and whether the run was local mode."""
    master = profile.config.get("spark.master") or ""
    executors = [e for e in profile.executors if e.get("executor_id") != "driver"]
    local = master.startswith("local") and not master.startswith("local-cluster")
    if local or not executors:
        cores = sum(int(e.get("cores") or 0) for e in profile.executors) or _local_cores(master)
        return {"local": True, "executors": cores, "executor_cores": 1, "one_host": True}
    cores = [int(e.get("cores") or 1) for e in executors]
    hosts = {e.get("host") for e in executors}
    return {"local": False, "executors": len(executors),
            "executor_cores": max(set(cores), key=cores.count),
            # executors that all run on one machine share its cores as local mode's do
            "one_host": len(executors) > 1 and len(hosts) == 1 and None not in hosts}


def _local_cores(master: str) -> int:
    from jobgauge.errors import UsageError
    from jobgauge.job import local_cores

    try:
        return local_cores(master or "local[*]")
    except UsageError:
        return local_cores("local[*]")


def _asked_memory_bytes(profile, local: bool) -> float:
    from jobgauge.units import parse_size

    key = "spark.driver.memory" if local else "spark.executor.memory"
    text = profile.config.get(key) or "1g"
    try:
        return float(parse_size(text, default_unit="MiB", name=key))
    except ValueError:
        return float(1 << 30)


def memory_peaks(path) -> dict[str, float]:
    """Peak JVM heap per executor id, from the executor metrics Spark >= 3.0 logs.

    ``SparkListenerStageExecutorMetrics`` events and the ``Task Executor
    Metrics`` of task ends both count; {} when the log has neither.  The two
    fields are picked out of the lines that hold the metric name without
    parsing the whole event, so this pass costs a fraction of reading the log.
    """
    from jobgauge.profiler.readers._eventlog_io import iter_lines, open_part, resolve_layout

    peaks: dict[str, float] = {}
    needle = _PEAK_METRIC.encode()
    for part in resolve_layout(path).parts:
        stream, _codec = open_part(part)
        try:
            for _lineno, line, _ended in iter_lines(stream, part.path):
                if needle not in line:
                    continue
                value, executor = _PEAK_VALUE.search(line), _EXECUTOR_ID.search(line)
                if value and executor and int(value.group(1)):  # 0: the metric was not polled
                    name = executor.group(1).decode()
                    peaks[name] = max(peaks.get(name, 0.0), float(value.group(1)))
        finally:
            stream.close()
    return peaks


def with_memory_peaks(profile, peaks: dict[str, float]):
    """``profile`` with ``peak_jvm_heap_bytes`` on each executor that has a peak in ``peaks``."""
    for executor in profile.executors:
        peak = peaks.get(str(executor.get("executor_id")))
        if peak:
            executor["peak_jvm_heap_bytes"] = peak
    return profile


# ---------------------------------------------------------------------------- replay

class _Replay:
    """The application's stages grouped by job, ready to replay on any slot count."""

    def __init__(self, profile):
        self.jobs = []
        by_stage: dict[int, dict] = {}
        for stage in profile.stages:
            merged = by_stage.setdefault(stage["stage_id"], {
                "task_ms": 0.0, "max_ms": 0.0, "parents": stage.get("parent_ids") or [],
                "job": min(stage.get("job_ids") or [-1])})
            merged["task_ms"] += stage.get("task_time_ms") or 0.0
            merged["max_ms"] = max(merged["max_ms"], stage.get("task_duration_max_ms") or 0.0)
        for job in profile.jobs:
            stages = {sid: s for sid, s in by_stage.items() if s["job"] == job["job_id"]}
            if job.get("duration_s") is None or not stages:
                continue
            self.jobs.append({"actual_s": job["duration_s"], "stages": stages})

    @staticmethod
    def _job_s(stages: dict, slots: float, shared: float = 1.0) -> float:
        """A job's seconds on ``slots``; ``shared``: the factor on task time when tasks
        run side by side (a single task runs as measured)."""
        finish: dict[int, float] = {}
        for sid in sorted(stages):                   # parents have smaller ids
            stage = stages[sid]
            own = max(stage["max_ms"], stage["task_ms"] * shared / slots) \
                if math.isfinite(slots) else stage["max_ms"]
            finish[sid] = own + max((finish.get(p, 0.0) for p in stage["parents"]), default=0.0)
        chain = max(finish.values(), default=0.0)
        work = sum(s["task_ms"] for s in stages.values()) * shared / slots
        return max(chain, work) / 1000.0

    def executor_seconds(self, slots: float, real_slots: float,
                         contention: float = 0.0) -> float:
        """Job time at ``slots``, each job scaled by its measured / replayed time at
        ``real_slots``, and by ``(slots / real_slots) ** contention`` (cores sharing one
        machine; unlimited slots: no contention, the critical path)."""
        total = 0.0
        shared = (slots / real_slots) ** contention \
            if contention and math.isfinite(slots) and real_slots > 0 else 1.0
        for job in self.jobs:
            modelled = self._job_s(job["stages"], real_slots)
            scale = job["actual_s"] / modelled if modelled > 0 else 1.0
            total += self._job_s(job["stages"], slots, shared) * scale
        return total

    def measured_seconds(self) -> float:
        return sum(job["actual_s"] for job in self.jobs)


# ---------------------------------------------------------------------------- report

def application_report(profile, *, job_key: str | None = None,
                       memory_peak_bytes: dict | None = None,
                       core_contention: float | None = None) -> dict:
    """The report dict of one application (see the module docstring);
    ``core_contention``: the exponent of cores sharing one machine, in local mode or
    where every executor runs on one host (None: :data:`LOCAL_CORE_CONTENTION`)."""
    if core_contention is None:
        core_contention = LOCAL_CORE_CONTENTION
    layout = _layout(profile)
    runtime = profile.runtime_s
    intervals = [(j["submission_ms"], j["completion_ms"]) for j in profile.jobs
                 if j.get("submission_ms") is not None and j.get("completion_ms") is not None]
    if profile.jobs and not intervals:      # Spark < 1.4 logs have no job times
        executor_s = driver_s = None
    else:
        executor_s = _union_seconds(intervals)
        driver_s = max(0.0, runtime - executor_s) if runtime is not None else None
    real_slots = layout["executors"] * layout["executor_cores"]
    replay = _Replay(profile)
    measured = replay.measured_seconds()
    overlap = executor_s / measured if measured else 1.0   # concurrent jobs overlap

    def runtime_at(slots: float) -> float | None:
        if runtime is None or executor_s is None:
            return None
        contention = core_contention if layout["one_host"] else 0.0
        return (driver_s or 0.0) + replay.executor_seconds(slots, real_slots,
                                                           contention) * overlap \
            + (executor_s - measured * overlap)

    what_if = []
    task_s = profile.task_seconds
    shares: dict[int, float] = {}          # executors -> share; the run's own count is 100 %
    for share in sorted(WHAT_IF_SHARES, key=lambda value: (value != 1.0, value)):
        shares.setdefault(max(1, int(round(layout["executors"] * share))), share)
    for executors, share in sorted(shares.items()):
        slots = executors * layout["executor_cores"]
        estimate = runtime_at(slots)
        utilisation = (task_s / (slots * estimate)) if (task_s and estimate) else None
        what_if.append({"executors": executors, "share": share,
                        "runtime_s": None if estimate is None else round(estimate, 3),
                        "utilisation": None if utilisation is None else round(
                            min(1.0, utilisation), 4)})
    critical = runtime_at(math.inf)
    if critical is None or not replay.jobs:
        critical = profile.critical_path_s

    asked = _asked_memory_bytes(profile, layout["local"])
    peak, kind = None, None
    if not memory_peak_bytes:            # peaks kept in the profile by jobgauge import
        memory_peak_bytes = {str(e["executor_id"]): e["peak_jvm_heap_bytes"]
                             for e in profile.executors if e.get("peak_jvm_heap_bytes")}
    if memory_peak_bytes:
        peak, kind = max(memory_peak_bytes.values()), "JVM heap"
    else:
        task_peak = max((s.get("peak_execution_memory_bytes") or 0 for s in profile.stages),
                        default=0)
        per_executor = layout["executor_cores"] if not layout["local"] else layout["executors"]
        if task_peak:
            peak, kind = task_peak * per_executor, "execution memory (task peak x cores)"
    facts = {
        "runtime_s": runtime, "driver_s": driver_s, "executor_s": executor_s,
        "local": layout["local"], "executors": layout["executors"], "slots": real_slots,
        "executor_memory_bytes": asked, "memory_peak_bytes": peak, "memory_peak_kind": kind,
        "shuffle_partitions": profile.config.get("spark.sql.shuffle.partitions"),
        "what_if": what_if,
    }
    results = _heuristics.evaluate(profile, facts)
    return {
        "app_id": profile.app_id, "app_name": profile.app_name, "job_key": job_key,
        "engine_version": profile.engine_version, "status": profile.status,
        "source": profile.source,
        "runtime_s": runtime, "driver_s": None if driver_s is None else round(driver_s, 3),
        "executor_s": None if executor_s is None else round(executor_s, 3),
        "critical_path_s": None if critical is None else round(critical, 3),
        "wasted_core_s": None if profile.idle_core_seconds is None
        else round(profile.idle_core_seconds, 3),
        "executors": layout["executors"], "executor_cores": layout["executor_cores"],
        "local_mode": layout["local"],
        "what_if": what_if,
        "heuristics": results,
        "recommended_conf": _heuristics.recommended_conf(results),
    }


def report_eventlog(path) -> dict:
    """The report of one event log (its job key as ``jobgauge import`` would store it)."""
    from jobgauge.history_import import job_key, read_spark_eventlog

    profile, main, _attempt = read_spark_eventlog(Path(path))
    return application_report(profile, job_key=job_key(profile, main))


def format_report(report: dict) -> str:
    """The report as text a person reads."""
    def seconds(value):
        return "-" if value is None else f"{value:.1f} s"

    lines = [f"application {report['app_id']}  ({report.get('app_name') or '?'}, "
             f"Spark {report.get('engine_version') or '?'}, {report.get('status')})",
             f"job key        {report.get('job_key') or '-'}",
             f"runtime        {seconds(report['runtime_s'])}  = driver "
             f"{seconds(report['driver_s'])} + jobs {seconds(report['executor_s'])}",
             f"critical path  {seconds(report['critical_path_s'])}  (runtime with unlimited "
             f"executors)",
             f"wasted cores   {seconds(report['wasted_core_s'])} of executor core time no "
             f"task used",
             "",
             f"what if ({report['executors']} executor(s) x {report['executor_cores']} core(s)"
             + (", local mode: one executor per core" if report.get("local_mode") else "") + "):",
             f"  {'executors':>9}  {'runtime':>10}  {'utilisation':>11}"]
    for point in report["what_if"]:
        util = "-" if point["utilisation"] is None else f"{point['utilisation']:.0%}"
        mark = "  <- this run" if point["share"] == 1.0 else ""
        lines.append(f"  {point['executors']:>9}  {seconds(point['runtime_s']):>10}  "
                     f"{util:>11}{mark}")
    lines += ["", "heuristics:"]
    for result in report["heuristics"]:
        lines.append(f"  {result['severity']:<9} {result['name']:<16} {result['evidence']}")
        for key, value in result["conf"].items():
            lines.append(f"  {'':<9} {'':<16}   --conf {key}={value}")
    conf = report["recommended_conf"]
    lines += ["", "recommended settings:" if conf else "recommended settings: none, the run "
              "looks healthy"]
    lines += [f"  --conf {key}={value}" for key, value in conf.items()]
    return "\n".join(lines)
