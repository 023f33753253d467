"""The Spark application side of the runner: ``python -m jobgauge.profiler.runners.driver SPEC``.

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
warm runner, :mod:`jobgauge.profiler.runners._warm`), stopping at ``{"stop": true}``
or when stdin closes.

The child never outlives the process that started it (:func:`start_driver`):
it runs in its own process group (with the JVM pyspark starts from it), the
kernel sends it SIGTERM when its parent dies (``PR_SET_PDEATHSIG``, Linux),
and a watch thread notices a new parent pid; either way the child kills its
whole process group, JVM included, so a ``kill -9`` of ``jobgauge collect``
leaves no orphan computing on.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path


_PR_SET_PDEATHSIG = 1
_PARENT_PID_ENV = "JOBGAUGE_DRIVER_PARENT"


def _parent_death_preexec():
    """A ``preexec_fn`` asking the kernel for SIGTERM when the parent dies (Linux), or None.

    The death signal fires when the *thread* that forked the child ends, so it is only
    asked for from the main thread; children of other threads rely on the driver's
    watch of its parent pid (:func:`_watch_parent`).
    """
    if not sys.platform.startswith("linux") or threading.current_thread() is not \
            threading.main_thread():
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)   # loaded before the fork, not in the child
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec():
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent:   # the parent died before the signal was asked for
            os._exit(1)

    return preexec


def start_driver(spec_path, *, log, stdin=None, text=False) -> subprocess.Popen:
    """Start ``python -m jobgauge.profiler.runners.driver SPEC`` as a child that dies with its parent.

    The child leads a new process group (``os.killpg(child.pid, ...)`` stops it and its
    JVM), gets SIGTERM from the kernel when the calling process dies, and watches its
    parent pid; output goes to ``log`` (an open binary file).
    """
    env = dict(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    env[_PARENT_PID_ENV] = str(os.getpid())
    return subprocess.Popen([sys.executable, "-m", "jobgauge.profiler.runners.driver", str(spec_path)],
                            stdin=stdin, stdout=log, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True, preexec_fn=_parent_death_preexec(),
                            text=text)


def _kill_own_group(*_signal_args) -> None:
    """Kill this process group: the driver and the JVM it started."""
    try:
        os.killpg(os.getpgrp(), signal.SIGKILL)
    finally:
        os._exit(1)


def _watch_parent(parent: int, every_s: float = 0.5) -> None:
    """Die with the parent: SIGTERM (the kernel's parent-death signal) or a new parent pid
    kills this process group.  Only when this process leads its own group (started by
    :func:`start_driver`), so a driver run by hand never kills its caller's group."""
    if os.getpgrp() != os.getpid():
        return
    signal.signal(signal.SIGTERM, _kill_own_group)

    def watch():
        while True:
            if os.getppid() != parent:
                _kill_own_group()
            time.sleep(every_s)

    threading.Thread(target=watch, name="jobgauge-parent-watch", daemon=True).start()
    if os.getppid() != parent:
        _kill_own_group()


def read_load_1min() -> float:
    """The machine's 1-minute load average."""
    return os.getloadavg()[0]


def machine_busy_cpu_s() -> float:
    """CPU seconds the whole machine has been busy so far, all cores and processes
    together (/proc/stat: user, nice, system, irq, softirq and steal time; steal is CPU
    time the hypervisor gave to another machine)."""
    with open("/proc/stat", encoding="ascii") as handle:
        fields = handle.readline().split()
    if not fields or fields[0] != "cpu":
        raise ValueError("/proc/stat does not start with the machine's cpu line")
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _read_stat(path: str) -> tuple[str, list[bytes]] | None:
    """(name, the fields after it) of a /proc ``stat`` file (a process's or a thread's),
    None where it ended while we looked; fields 11 and 12 are its user and system ticks."""
    try:
        with open(path, "rb") as handle:
            head, _, rest = handle.read().rpartition(b")")
    except OSError:
        return None
    return head.partition(b"(")[2].decode("ascii", "replace"), rest.split()


def _group_processes(group: int | None = None, roots=()) -> dict:
    """{pid: (CPU ticks so far, the name its /proc stat gives)} of the live processes of a
    process group (default: this one, i.e. the driver and the JVM it started), and of the
    processes ``roots`` and their descendants, read from /proc."""
    group = os.getpgrp() if group is None else group
    cpu, parent, name, own = {}, {}, {}, set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        stat = _read_stat(f"/proc/{entry.name}/stat")
        if stat is None:
            continue                         # ended while we looked
        pid, fields = int(entry.name), stat[1]   # after the name: state, ppid, pgrp, ...
        cpu[pid], parent[pid] = int(fields[11]) + int(fields[12]), int(fields[1])
        name[pid] = stat[0]
        if int(fields[2]) == group:
            own.add(pid)
    roots = {int(r) for r in roots}
    for pid in cpu:
        ancestor, seen = pid, 0
        while ancestor in cpu and ancestor not in roots and seen < 64:
            ancestor, seen = parent[ancestor], seen + 1
        if ancestor in roots:
            own.add(pid)
    return {pid: (cpu[pid], name[pid]) for pid in own}


def process_group_cpu_s(group: int | None = None, roots=()) -> float:
    """CPU seconds (user + system) used so far by the live processes of a process group
    (default: this one, i.e. the driver and the JVM it started), and by the processes
    ``roots`` and their descendants (a standalone cluster's daemons and the executors
    they start), read from /proc."""
    return sum(ticks for ticks, _ in _group_processes(group, roots).values()) / \
        os.sysconf("SC_CLK_TCK")


#: What a JVM thread does, by the start of its name (/proc truncates names to 15
#: characters): Spark's task threads, HotSpot's JIT compilers and its garbage collector.
JVM_THREAD_KINDS = (("Executor task", "tasks"), ("C1 CompilerThre", "compiler"),
                    ("C2 CompilerThre", "compiler"), ("GC Thread", "gc"), ("G1 ", "gc"))


def jvm_threads(group: int | None = None, roots=()) -> dict:
    """The live JVMs' threads among a process group's processes (:func:`_group_processes`):
    ``{(pid, thread id): (kind, CPU seconds so far)}``, the kind what the thread does:
    ``tasks``, ``compiler`` and ``gc`` (:data:`JVM_THREAD_KINDS`), the rest ``other``."""
    ticks = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid, (_, name) in _group_processes(group, roots).items():
        if name != "java":
            continue
        try:
            threads = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for thread in threads:
            stat = _read_stat(f"/proc/{pid}/task/{thread}/stat")
            if stat is None:
                continue
            label, fields = stat
            kind = next((k for start, k in JVM_THREAD_KINDS if label.startswith(start)),
                        "other")
            out[(pid, thread)] = (kind, (int(fields[11]) + int(fields[12])) / ticks)
    return out


def jvm_thread_cpu_s(group: int | None = None, roots=(), since: dict | None = None) -> dict:
    """CPU seconds (user + system) of the live JVMs' threads (:func:`jvm_threads`) by kind:
    ``tasks``, ``compiler``, ``gc`` and ``other``; so far, or with ``since`` (an earlier
    :func:`jvm_threads` reading) since then, thread by thread.  A thread that ended
    between the two readings takes its CPU time with it, so the difference can
    undercount, never go below 0: Spark's idle task threads end after a minute, and a
    difference of the sums once came out at -13.8 s (``tpch-sf1-v5``, session 43).  In
    local mode the process CPU time (:func:`process_group_cpu_s` of this group) is their
    total; with ``roots`` (a standalone cluster) these also count the executors' and
    daemons' JVMs, which that process CPU time leaves out."""
    out = {"tasks": 0.0, "compiler": 0.0, "gc": 0.0, "other": 0.0}
    before = since or {}
    for key, (kind, seconds) in jvm_threads(group, roots).items():
        out[kind] += max(seconds - before.get(key, (kind, 0.0))[1], 0.0)
    return out


def children_cpu_s() -> float:
    """CPU seconds (user + system) of the children this process has waited for
    (spark-submit and its JVM, for the wrapper), to the microsecond."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return children.ru_utime + children.ru_stime


def own_and_children_cpu_s() -> float:
    """CPU seconds (user + system) of this process and of the children it has waited
    for (a MapReduce job's JVM, which runs in a session of its own and is waited for when
    it ends)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


class LoadGuard:
    """Keeps measurements away from other processes' load.

    Before a run, :meth:`wait_quiet` measures how many cores *other* processes keep busy
    (``load_at_start``): the machine's busy CPU time (``read_busy_cpu``, /proc/stat)
    less this application's own (``read_own_cpu``: CPU seconds of the driver and its
    JVM) over a window of ``poll_s`` seconds (0.2 s at most for a guard that never
    waits), and starts the run once that is below ``threshold``; after ``max_wait_s``
    it gives up and the run goes ahead marked ``quiet_start: false``.  After a run,
    :meth:`needs_remeasure` says whether it should be measured again: other processes
    kept ``threshold`` cores or more busy while it ran (``others_during``; for a guard
    that waits for quiet), or its wall time is far (``remeasure_ratio`` times, and
    ``min_excess_s`` seconds) above its CPU-time share of ``slots`` cores, a sign that it
    waited for the CPU.

    Measured, not inferred from the load average: the guard used to wait until the
    1-minute load average, less this application's CPU use smoothed the same way, fell
    below the threshold.  The load average counts the JVM's runnable threads, more than
    the cores it gets, so after a run the guard often waited for the application's own
    load to decay (up to 48 s before a run of TPC-H at SF 1,
    ``bench/reports/guard_noise.md``), and other processes that ran during a run went
    unseen.  ``load_1min`` still records the load average; where /proc/stat cannot
    be read the guard falls back to that estimate.

    The readers, the clock and the sleep are injected so the guard is testable without
    real load.
    """

    TIME_CONSTANT_S = 60.0

    def __init__(self, *, threshold: float, max_wait_s: float = 300.0,
                 remeasure_ratio: float | None = 3.0, slots: int = 1, poll_s: float = 1.0,
                 min_excess_s: float = 1.0, read_load=read_load_1min,
                 read_own_cpu=process_group_cpu_s, read_busy_cpu=machine_busy_cpu_s,
                 clock=time.monotonic, sleep=time.sleep):
        self.threshold = float(threshold)
        self.max_wait_s = float(max_wait_s)
        self.remeasure_ratio = None if remeasure_ratio is None else float(remeasure_ratio)
        self.slots = max(1, int(slots))
        # a guard that never waits (one ``jobgauge run``, the wrapper) holds the run for
        # a fifth of a second at most while it measures
        self.poll_s = float(poll_s) if self.max_wait_s > 0 else min(float(poll_s), 0.2)
        self.min_excess_s = float(min_excess_s)   # smaller gaps of wall over CPU share: noise
        self.read_load, self.read_own_cpu = read_load, read_own_cpu
        self.read_busy_cpu = read_busy_cpu
        self.clock, self.sleep = clock, sleep
        self.own_load = 0.0
        self._last = (self.clock(), self.read_own_cpu())
        self._started = None        # (clock, busy CPU, own CPU) when the last run started

    def own_share(self) -> float:
        """This application's share of the load average now (its smoothed CPU use): the
        fallback where the machine's CPU time cannot be read."""
        now, cpu = self.clock(), self.read_own_cpu()
        then, cpu_then = self._last
        elapsed = now - then
        if elapsed > 0:
            rate = max(0.0, cpu - cpu_then) / elapsed
            decay = math.exp(-elapsed / self.TIME_CONSTANT_S)
            self.own_load = self.own_load * decay + rate * (1 - decay)
            self._last = (now, cpu)
        return self.own_load

    def _sample(self):
        """(clock, the machine's busy CPU seconds, this application's CPU seconds), or None
        where the machine's CPU time cannot be read."""
        try:
            busy = float(self.read_busy_cpu())
        except (OSError, ValueError, IndexError):
            return None
        return self.clock(), busy, float(self.read_own_cpu())

    @staticmethod
    def _others(first, last) -> float:
        """Cores other processes kept busy between two samples, on average."""
        elapsed = last[0] - first[0]
        if elapsed <= 0:
            return 0.0
        return max(0.0, (last[1] - first[1]) - (last[2] - first[2])) / elapsed

    def other_load(self) -> tuple[float, float, tuple | None]:
        """(1-minute load average, the cores other processes keep busy, the window's last
        sample): measured over the next ``poll_s`` seconds, or estimated at once from the
        load average (sample None) where the machine's CPU time cannot be read."""
        first = self._sample()
        if first is not None:
            self.sleep(self.poll_s)
            last = self._sample()
            if last is not None:
                return float(self.read_load()), self._others(first, last), last
        load = float(self.read_load())
        return load, max(0.0, load - self.own_share()), None

    def wait_quiet(self) -> dict:
        """Wait for a quiet machine (at most ``max_wait_s``); the fields a run records."""
        start = self.clock()
        while True:
            load, others, last = self.other_load()
            waited = self.clock() - start
            if others < self.threshold or waited >= self.max_wait_s:
                self._started = last        # the run starts where the window ended
                return {"load_1min": round(load, 3), "load_at_start": round(others, 3),
                        "load_waited_s": round(waited, 1),
                        "quiet_start": others < self.threshold,
                        "host_cores": os.cpu_count() or 1}
            if last is None:        # the estimate comes at once: wait before the next
                self.sleep(min(self.poll_s, self.max_wait_s - waited))

    def others_during(self) -> float | None:
        """Cores other processes kept busy since the last :meth:`wait_quiet` returned (the
        run's own time), or None where that cannot be measured."""
        last = self._sample() if self._started is not None else None
        return None if last is None else round(self._others(self._started, last), 3)

    def needs_remeasure(self, runtime_s, cpu_time_s) -> bool:
        """Whether a run should be measured again: other processes kept ``threshold`` cores
        busy while it ran (a guard that waits for quiet: a collection's), or its wall time
        is far above its CPU-time share of the slots."""
        others = self.others_during() if self.max_wait_s > 0 else None
        if others is not None and others >= self.threshold and runtime_s is not None:
            return True
        if self.remeasure_ratio is None or runtime_s is None or cpu_time_s is None:
            return False
        share = cpu_time_s / self.slots
        return runtime_s > self.remeasure_ratio * share and runtime_s - share > self.min_excess_s


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


def _emit(results, record: dict) -> None:
    results.write(json.dumps(record, default=str) + "\n")
    results.flush()


def _error_text(exc: BaseException) -> str:
    text = str(exc).strip() or exc.__class__.__name__
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[:12])[:4000]


class JobGroupLimit:
    """Cancels the Spark job group ``group`` of ``context`` once ``limit_s`` seconds
    have passed since :meth:`start`, until :meth:`stop`: past the limit it keeps
    cancelling, since a job submitted after the first cancel (planning can outlast a
    short limit) must stop too.  ``timed_out`` is set at the limit."""

    def __init__(self, context, group: str, limit_s: float):
        self.context, self.group, self.limit_s = context, group, float(limit_s)
        self.timed_out, self._finished = threading.Event(), threading.Event()

    def _watch(self) -> None:
        if self._finished.wait(self.limit_s):
            return
        self.timed_out.set()
        while not self._finished.is_set():
            self.context.cancelJobGroup(self.group)
            self._finished.wait(0.2)

    def start(self) -> None:
        threading.Thread(target=self._watch, daemon=True).start()

    def stop(self) -> None:
        self._finished.set()


class _Application:
    """One Spark application of a spec: starts it, runs items, stops it."""

    def __init__(self, spec: dict):
        from pyspark.sql import SparkSession

        self.spec = spec
        # Made before the JVM starts, so its start-up CPU counts as this application's load.
        settings = dict(spec.get("load_guard") or {})
        roots = settings.pop("cluster_pids", ())   # a standalone cluster's own daemons
        self.roots = tuple(roots)
        if roots:
            settings["read_own_cpu"] = lambda: process_group_cpu_s(roots=roots)
        self.guard = LoadGuard(**settings) if settings else None
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
        """Run one item, append its result line, return it.

        With a ``load_guard`` in the spec, a measured item first waits for a quiet
        machine and records the load at its start, the CPU time of the driver and its
        JVM, and how much of it the JVMs' task, JIT compiler and GC threads took
        (``cpu_tasks_s``, ``cpu_compiler_s``, ``cpu_gc_s``, :func:`jvm_thread_cpu_s`); a
        run whose wall time is far above its CPU-time share is measured
        once more and the second measurement kept (``first_runtime_s`` keeps the first).
        """
        guard = self.guard if not item.get("warmup") else None
        collected = self._collect_garbage() \
            if self.spec.get("gc_before_run") and not item.get("warmup") else {}
        measured = dict(guard.wait_quiet()) if guard else {}
        record = self._measure(item, f"jobgauge-{item['key']}"[:200])
        if guard:
            record.update(measured)
            if record["status"] == "succeeded" and guard.needs_remeasure(
                    record["runtime_s"], record["cpu_time_s"]):
                again = dict(guard.wait_quiet())
                second = self._measure(item, f"jobgauge-{item['key']}-again"[:200])
                second.update(again, first_runtime_s=record["runtime_s"],
                              first_cpu_time_s=record["cpu_time_s"], remeasured=True)
                record = second
        record.update(collected)
        _emit(self.results, record)
        return record

    def _collect_garbage(self) -> dict:
        """A full garbage collection of this process and the driver's JVM (in local mode
        the executors' heap too), before a run and its wait for a quiet machine; its
        seconds and the JVM's collections it took (``gc_before_s``,
        ``gc_before_collections``)."""
        import gc

        beans = self.spark._jvm.java.lang.management.ManagementFactory \
            .getGarbageCollectorMXBeans()

        def collections() -> int:
            return sum(max(int(bean.getCollectionCount()), 0) for bean in beans)

        before, started = collections(), time.perf_counter()
        gc.collect()
        self.spark._jvm.java.lang.System.gc()
        return {"gc_before_s": round(time.perf_counter() - started, 3),
                "gc_before_collections": collections() - before}

    def _measure(self, item: dict, group: str) -> dict:
        """Run one item once in Spark job group ``group``; its record (not yet written)."""
        from jobgauge.profiler.workloads import get_workload

        spark, context = self.spark, self.context
        limit = float(item.get("timeout_s", 600))
        watch = JobGroupLimit(context, group, limit)
        record = {"event": "item", "key": item["key"], "workload": item["workload"],
                  "warmup": bool(item.get("warmup")), "started_at": _now_iso()}
        output_dir = Path(self.spec.get("output_root", "/tmp")) / group
        begin, cpu_before, threads_before = time.perf_counter(), None, None
        try:
            for key in self.set_keys - set(item.get("sql_conf", {})):
                spark.conf.unset(key)
            self.set_keys = set()
            for key, value in item.get("sql_conf", {}).items():
                spark.conf.set(key, str(value))
                self.set_keys.add(key)
            workload = get_workload(item["workload"], sql=item.get("query_text"))
            context.setJobGroup(group, item["workload"], interruptOnCancel=True)
            # the runner times a run the JVM's death cuts short from here
            _emit(self.results, {"event": "begin", "key": item["key"], "at": time.time()})
            threads_before = jvm_threads(roots=self.roots) if self.guard else None
            begin = time.perf_counter()
            cpu_before = process_group_cpu_s() if self.guard else None
            watch.start()
            summary = workload.run(spark, Path(item["data_path"]), output_dir=output_dir)
            if watch.timed_out.is_set():  # it ended past its limit, before a cancel could stop it
                record.update(status="timed_out", result=summary,
                              error=f"ran past its time limit of {limit:g} s: its job group "
                                    f"was cancelled at the limit, but the run ended first")
            else:
                record.update(status="succeeded", result=summary)
        except Exception as exc:  # noqa: BLE001 - every failure is recorded, not raised
            if watch.timed_out.is_set():    # the cancel's own error says only "cancelled"
                record.update(status="timed_out",
                              error=f"ran past its time limit of {limit:g} s: its jobs were "
                                    f"cancelled at the limit")
            else:
                record.update(status="failed", error=_error_text(exc))
        finally:
            watch.stop()
            record["runtime_s"] = round(time.perf_counter() - begin, 4)
            record["ended_at"] = _now_iso()
            if cpu_before is not None:
                record["cpu_time_s"] = round(process_group_cpu_s() - cpu_before, 3)
            if threads_before is not None:     # where the JVMs' CPU went during the run
                spent = jvm_thread_cpu_s(roots=self.roots, since=threads_before)
                record.update({f"cpu_{kind}_s": round(spent[kind], 3)
                               for kind in ("tasks", "compiler", "gc")})
            shutil.rmtree(output_dir, ignore_errors=True)  # outputs are checked, not kept
        record["job_ids"] = sorted(context.statusTracker().getJobIdsForGroup(group))
        context.setLocalProperty("spark.jobGroup.id", None)
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
        print("usage: python -m jobgauge.profiler.runners.driver SPEC.json", file=sys.stderr)
        return 2
    parent = os.environ.pop(_PARENT_PID_ENV, None)
    if parent and parent.isascii() and parent.isdigit():
        _watch_parent(int(parent))
    spec = json.loads(Path(argv[0]).read_text())
    try:
        return run_stream(spec) if spec.get("stream") else run_spec(spec)
    except Exception:  # noqa: BLE001 - the parent reads stderr and records the failure
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    sys.exit(main())
