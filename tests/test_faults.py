"""Faults of the collector: a killed collection leaves no orphan and no glued journal line."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jobgauge.cli import main
from jobgauge.profiler.runners.collect import Journal, load_plan, planned_runs
from jobgauge.store import open_store

PLAN = """
name = "faults"
workloads = ["tpch-q1", "tpch-q6", "tpch-q14"]
sizes = ["sf0.01"]
timeout_s = 120
seed = 5
warmup_runs = 10
out = "{out}"
load_threshold = 1000.0
speed_tolerance = 1.0    # the suite loads the machine: its probe moves (0.55 then 0.48 s)

[design]
kind = "lhs"
configs_per_group = 40
include_defaults = true

[[groups]]
master = "local[2]"
conf = {{}}

[space]
"spark.sql.shuffle.partitions" = {{low = 2, high = 64, log = true, type = "int"}}
"""


def _plan(tmp_path, **replace) -> Path:
    text = PLAN.format(out=tmp_path / "runs" / "faults.csv.gz")
    for old, new in replace.items():
        text = text.replace(old, new)
    path = tmp_path / "faults.toml"
    path.write_text(text)
    return path


def _processes() -> dict:
    """pid -> (process group, command line) of every process now alive."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        if fields[0] == "Z":
            continue
        out[int(entry.name)] = (int(fields[2]), cmdline)
    return out


@pytest.mark.spark
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_collect_leaves_no_driver_or_jvm(tmp_path, tpch_data_root):
    plan = _plan(tmp_path)
    work = tmp_path / "work"
    collector = subprocess.Popen(
        [sys.executable, "-m", "jobgauge.cli", "--store", str(tmp_path / "s.db"), "collect",
         str(plan), "--work-dir", str(work), "--data-root", str(tpch_data_root)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Wait until the driver child runs and its JVM (same process group) is up.
        deadline = time.monotonic() + 180
        group = None
        while time.monotonic() < deadline and collector.poll() is None:
            procs = _processes()
            drivers = [pid for pid, (_, cmd) in procs.items()
                       if "jobgauge.profiler.runners.driver" in cmd and str(work) in cmd]
            if drivers:
                group = procs[drivers[0]][0]
                members = [cmd for g, cmd in procs.values() if g == group]
                if any("java" in cmd.split(" ")[0] for cmd in members):
                    break
            time.sleep(0.2)
        else:
            pytest.fail("the collector's driver and JVM did not start")
        assert group is not None
        time.sleep(2.0)   # the application is now measuring
        os.kill(collector.pid, signal.SIGKILL)
        collector.wait()
        # An orphan would go on through all 120 runs (a minute or more); the children of
        # a killed collector are gone within a second.
        deadline = time.monotonic() + 10
        left = None
        while time.monotonic() < deadline:
            left = [cmd for g, cmd in _processes().values() if g == group]
            if not left:
                break
            time.sleep(0.2)
        assert not left, f"orphans left after kill -9 of collect: {left}"
    finally:
        if collector.poll() is None:
            collector.kill()
            collector.wait()


def _entry(run_id: str, runtime_s: float) -> dict:
    return {"run": {"run_id": run_id, "source": "local", "workload": "tpch-q6",
                    "framework": "spark", "datasize": "sf0.01", "instance_type": "local[2]",
                    "instance_count": 1, "vcpus": 2, "memory_gib": 1.0, "runtime_s": runtime_s,
                    "status": "succeeded", "completed": True, "config": {}},
            "job_ids": [], "app_id": None, "plan": "faults", "repetition": 0, "result": None}


def test_torn_journal_line_is_dropped_with_a_note_not_glued(tmp_path, capsys):
    path = tmp_path / "journal.jsonl"
    whole = [json.dumps(_entry(f"faults:q:{n}", 1.0 + n)) for n in range(3)]
    torn = json.dumps(_entry("faults:q:torn", 9.0))[:57]       # cut by a kill mid-write
    path.write_text("\n".join(whole) + "\n" + torn)
    journal = Journal(path)
    assert sorted(journal.entries) == [f"faults:q:{n}" for n in range(3)]
    assert any("torn" in note or "cut" in note for note in journal.notes)
    assert "line 4" in " ".join(journal.notes)
    journal.add(_entry("faults:q:next", 2.5))
    # The next entry starts on a line of its own: every line now reads back.
    again = Journal(path)
    assert sorted(again.entries) == sorted([f"faults:q:{n}" for n in range(3)] + ["faults:q:next"])
    assert again.notes == []
    lines = path.read_text().splitlines()
    assert all(json.loads(line)["run"]["run_id"] for line in lines)
    # A line that is JSON but not a journal entry is refused as well, not half-read.
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"run": {"no_id": 1}}\n')
    assert len(Journal(path).entries) == 4 and Journal(path).notes


def test_a_bench_scripts_journal_skips_a_torn_line_and_appends_on_a_line_of_its_own(tmp_path):
    """bench/_journal.py, the journal of the bench scripts' measurements: a line cut by a
    kill is left out (its measurement is made again), never glued to the next entry."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_journal", Path(__file__).resolve().parent.parent / "bench" / "_journal.py")
    bench_journal = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_journal)
    path = tmp_path / "reports" / "journal.jsonl"
    assert bench_journal.read(path) == []
    bench_journal.append(path, {"query": "a", "seconds": 1.5})
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"query": "b", "sec')                    # cut by a kill mid-write
    assert bench_journal.read(path) == [{"query": "a", "seconds": 1.5}]
    bench_journal.append(path, {"query": "c", "seconds": 2.0})
    assert bench_journal.read(path) == [{"query": "a", "seconds": 1.5},
                                        {"query": "c", "seconds": 2.0}]
    assert path.read_text(encoding="utf-8").splitlines()[-1] == '{"query": "c", "seconds": 2.0}'


def test_resume_after_torn_line_store_matches_journal(tmp_path, capsys):
    """Counts in the store equal the journal's after resuming over a torn line."""
    from jobgauge.profiler.runners.collect import _store_row

    path = tmp_path / "work" / "journal.jsonl"
    path.parent.mkdir()
    whole = [json.dumps(_entry(f"faults:q:{n}", 1.0 + n)) for n in range(16)]
    path.write_text("\n".join(whole) + "\n" + json.dumps(_entry("faults:q:16", 3.0))[:40])
    journal = Journal(path)
    journal.add(_entry("faults:q:16", 3.0))     # redone on resume
    store = open_store(str(tmp_path / "s.db"))
    store.add_runs([_store_row(e["run"]) for e in Journal(path).entries.values()],
                   skip_existing=True)
    assert store.count_runs() == len(Journal(path).entries) == 17
    assert len([line for line in path.read_text().splitlines() if line.strip()]) == 17


def test_plan_load_threshold_settings(tmp_path):
    plan = load_plan(_plan(tmp_path))
    assert plan["load_threshold"] == 1000.0
    assert plan["load_wait_s"] >= 0 and plan["remeasure_ratio"] > 1
    broken = _plan(tmp_path, **{"load_threshold = 1000.0": "load_threshold = -1"})
    with pytest.raises(Exception, match="load_threshold"):
        load_plan(broken)
    assert len(planned_runs(plan)) == 120


class _FakeMachine:
    """A clock, a sleep and CPU and load readers for LoadGuard, without real load.

    ``others``: the cores other processes keep busy in each slept interval in turn (the
    last one on and on); ``own_rate``: the cores the application itself keeps busy."""

    def __init__(self, others, own_rate=0.0, loads=(0.0,), proc_stat=True):
        self.now, self.others, self.own_rate = 0.0, list(others), own_rate
        self.busy = self.own = 0.0
        self.loads, self.proc_stat = list(loads), proc_stat
        self.slept = []

    def clock(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        rate = self.others.pop(0) if len(self.others) > 1 else self.others[0]
        self.now += seconds
        self.busy += (rate + self.own_rate) * seconds
        self.own += self.own_rate * seconds

    def load(self):
        return self.loads.pop(0) if len(self.loads) > 1 else self.loads[0]

    def own_cpu(self):
        return self.own

    def busy_cpu(self):
        if not self.proc_stat:
            raise OSError("no /proc/stat here")
        return self.busy


def _guard(machine, **settings):
    from jobgauge.profiler.runners.driver import LoadGuard

    return LoadGuard(read_load=machine.load, read_own_cpu=machine.own_cpu,
                     read_busy_cpu=machine.busy_cpu, clock=machine.clock, sleep=machine.sleep,
                     **{"threshold": 0.5, "max_wait_s": 60, "poll_s": 1, **settings})


def test_guard_waits_for_other_processes_cpu_to_drop():
    machine = _FakeMachine([1.5, 0.9, 0.2], loads=[2.4])
    start = _guard(machine).wait_quiet()
    assert machine.slept == [1, 1, 1]          # three one-second windows measured
    assert start == {"load_1min": 2.4, "load_at_start": 0.2, "load_waited_s": 3.0,
                     "quiet_start": True, "host_cores": os.cpu_count()}


def test_guard_runs_anyway_after_the_maximum_wait_and_marks_the_run():
    machine = _FakeMachine([1.8])
    start = _guard(machine, max_wait_s=12).wait_quiet()
    assert sum(machine.slept) == 12 and start["load_waited_s"] == 12
    assert start["quiet_start"] is False and start["load_at_start"] == 1.8


def test_guard_subtracts_what_its_own_application_adds():
    # The application itself keeps 1.5 cores busy (its JVM still collecting garbage), and
    # the load average reads 2.6 from its runnable threads: other processes use 0.1 core,
    # so the run starts after one window, where the load average would have held it.
    machine = _FakeMachine([0.1], own_rate=1.5, loads=[2.6])
    start = _guard(machine).wait_quiet()
    assert machine.slept == [1] and start["quiet_start"] is True
    assert start["load_at_start"] == 0.1 and start["load_1min"] == 2.6


def test_guard_estimates_from_the_load_average_without_proc_stat():
    machine = _FakeMachine([0.0], loads=[3.0, 2.0, 0.4], proc_stat=False)
    guard = _guard(machine, poll_s=5)
    start = guard.wait_quiet()
    assert machine.slept == [5, 5]
    assert start["load_at_start"] == 0.4 and start["quiet_start"] is True
    assert guard.others_during() is None       # nothing to measure a run's share with


def test_guard_remeasures_a_run_that_other_processes_shared():
    machine = _FakeMachine([0.1, 0.9], own_rate=1.0)
    guard = _guard(machine, remeasure_ratio=3.0, slots=2)
    guard.wait_quiet()
    machine.sleep(10)                          # the run: another process took 0.9 core
    assert guard.others_during() == 0.9
    assert guard.needs_remeasure(runtime_s=10.0, cpu_time_s=10.0)   # its CPU share is fine
    quiet = _FakeMachine([0.1], own_rate=1.0)
    guard = _guard(quiet, remeasure_ratio=3.0, slots=2)
    guard.wait_quiet()
    quiet.sleep(10)
    assert not guard.needs_remeasure(runtime_s=10.0, cpu_time_s=10.0)


def test_guard_remeasures_runs_far_above_their_cpu_share():
    guard = _guard(_FakeMachine([0.0]), remeasure_ratio=3.0, slots=2)
    assert guard.needs_remeasure(runtime_s=12.0, cpu_time_s=4.0)       # share 2 s, 6x
    assert not guard.needs_remeasure(runtime_s=3.0, cpu_time_s=4.0)    # 1.5x
    assert not guard.needs_remeasure(runtime_s=0.9, cpu_time_s=0.1)    # under a second: noise
    assert not guard.needs_remeasure(runtime_s=None, cpu_time_s=1.0)
    assert not _guard(_FakeMachine([0.0]), remeasure_ratio=None).needs_remeasure(50.0, 1.0)


def test_machine_busy_cpu_counts_this_process():
    from jobgauge.profiler.runners.driver import machine_busy_cpu_s

    before = machine_busy_cpu_s()
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    assert machine_busy_cpu_s() - before >= 0.25


def test_process_group_cpu_counts_this_process():
    from jobgauge.profiler.runners.driver import process_group_cpu_s

    before = process_group_cpu_s(os.getpgrp())
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    assert process_group_cpu_s(os.getpgrp()) - before >= 0.25


def test_jvm_thread_cpu_tells_the_compiler_from_the_rest(tmp_path):
    """A real JVM compiling and running a busy loop in a thread of its own: its JIT
    compiler threads' CPU is told apart, all its threads together are the process's CPU,
    and after the busy thread ended a reading since an earlier one is never negative
    (the difference of the two sums is: the ended thread took its CPU time with it).
    The loop runs until its thread has used 2 CPU seconds, not 2 s of the clock, and the
    readings wait for 1 of them: on a shared machine a clock-timed loop once had 0.86 s
    of "other" CPU when the process had 1.6 s (the compiler had the rest)."""
    from jobgauge.profiler.runners.driver import (jvm_thread_cpu_s, jvm_threads,
                                                  process_group_cpu_s)

    source = tmp_path / "Busy.java"
    source.write_text("public class Busy { public static void main(String[] a) throws "
                      "Exception { Thread busy = new Thread(() -> { var mx = java.lang."
                      "management.ManagementFactory.getThreadMXBean(); long x = 0; while "
                      "(mx.getCurrentThreadCpuTime() < 2_000_000_000L) { for (int i = 0; "
                      "i < 100000; i++) { x += x * 31 + 7; } } System.out.println(x); }, "
                      "\"busy\"); busy.start(); busy.join(); Thread.sleep(60000); } }")

    def busy_cpu_s():
        """The CPU seconds of the thread named busy, None once it has ended."""
        for (pid, thread), (_, seconds) in jvm_threads(jvm.pid).items():
            try:
                name = Path(f"/proc/{pid}/task/{thread}/comm").read_text().strip()
            except OSError:
                continue
            if name == "busy":
                return seconds
        return None

    # the source launcher compiles Busy.java in the JVM itself: javac's code is compiled hot
    jvm = subprocess.Popen(["java", str(source)], start_new_session=True,
                           stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while (busy_cpu_s() or 0.0) < 1.0 and time.monotonic() < deadline:
            time.sleep(0.1)
        earlier = jvm_threads(jvm.pid)
        total_before = process_group_cpu_s(jvm.pid)
        threads = jvm_thread_cpu_s(jvm.pid)
        total_after = process_group_cpu_s(jvm.pid)
        assert threads["compiler"] > 0.05 and threads["other"] >= 1.0   # the busy thread
        assert threads["tasks"] == 0.0                                    # no Spark here
        # the live threads are the process's CPU, less what threads that ended took
        # (HotSpot starts and stops compiler threads as it needs them)
        assert 0.9 * total_before <= sum(threads.values()) <= total_after + 1e-9
        while busy_cpu_s() is not None and time.monotonic() < deadline:
            time.sleep(0.2)                                               # it ended
        assert busy_cpu_s() is None
        since, now = jvm_thread_cpu_s(jvm.pid, since=earlier), jvm_thread_cpu_s(jvm.pid)
        assert now["other"] - threads["other"] < -0.3
        assert all(0.0 <= seconds < 1.0 for seconds in since.values()), since
    finally:
        os.killpg(jvm.pid, signal.SIGKILL)
        jvm.wait()


def test_process_cpu_counts_a_cluster_daemon_and_its_children_outside_the_group(tmp_path):
    """A standalone cluster's executors run under its worker daemons, in another process
    group: their CPU is the application's own load when the daemons are named as roots."""
    from jobgauge.profiler.runners.driver import process_group_cpu_s

    executor = tmp_path / "executor.py"
    executor.write_text("import time\nend = time.process_time() + 0.4\n"
                        "while time.process_time() < end:\n    pass\ntime.sleep(30)\n")
    worker = tmp_path / "worker.py"
    worker.write_text(f"import subprocess, sys, time\n"
                      f"subprocess.Popen([sys.executable, {str(executor)!r}])\ntime.sleep(30)\n")
    daemon = subprocess.Popen([sys.executable, str(worker)], start_new_session=True)
    try:
        time.sleep(2.0)                      # the executor has burnt its 0.4 s by now
        alone = process_group_cpu_s(os.getpgrp())
        with_daemon = process_group_cpu_s(os.getpgrp(), roots=[daemon.pid])
        assert with_daemon - alone >= 0.35
    finally:
        os.killpg(daemon.pid, signal.SIGKILL)
        daemon.wait()


def test_cluster_guard_names_the_cluster_daemons(tmp_path):
    from jobgauge.profiler.runners.collect import load_guard_for

    class _Cluster:
        def daemon_pids(self):
            return [101, 102]

    plan = load_plan(_plan(tmp_path))
    guard = load_guard_for(plan, 2, "spark://127.0.0.1:7077", _Cluster())
    assert guard["cluster_pids"] == [101, 102]
    assert guard["remeasure_ratio"] == 3.0     # the executors' CPU time is seen
    assert "cluster_pids" not in load_guard_for(plan, 2, "local[2]")


@pytest.mark.spark
def test_guarded_runs_record_load_and_cpu_time_and_remeasure_once(tmp_path, tpch_data_root):
    from jobgauge.profiler.runners.runner import run_batch
    from jobgauge.profiler.workloads import get_workload

    data = get_workload("tpch-q6").prepare(tpch_data_root, "sf0.01")
    items = [{"key": "warm", "workload": "tpch-q6", "data_path": str(data), "sql_conf": {},
              "timeout_s": 120, "warmup": True},
             {"key": "measured", "workload": "tpch-q6", "data_path": str(data), "sql_conf": {},
              "timeout_s": 120}]
    # A ratio so small that every run looks suspicious: it is measured again, once.
    outcome = run_batch(items, master="local[2]", work_dir=tmp_path,
                        load_guard={"threshold": 1000.0, "max_wait_s": 0,
                                    "remeasure_ratio": 1e-6, "min_excess_s": 0.0, "slots": 2})
    warm, measured = outcome["records"]
    assert "load_1min" not in warm and "remeasured" not in warm     # warm-ups wait for nothing
    assert measured["status"] == "succeeded" and measured["quiet_start"] is True
    assert measured["remeasured"] is True and measured["first_runtime_s"] > 0
    assert measured["cpu_time_s"] > 0 and measured["load_1min"] >= 0
    assert measured["job_ids"]


@pytest.mark.spark
def test_collect_keeps_load_and_cpu_time_in_the_run_table(tmp_path, tpch_data_root, capsys):
    """And where the JVM's CPU went during the run: its task threads ran the query, and
    the threads it names are part of the run's process CPU (to the tick, 0.01 s)."""
    from jobgauge.runtable import read_run_table

    plan = _plan(tmp_path, **{"configs_per_group = 40": "configs_per_group = 1",
                              "warmup_runs = 10": "warmup_runs = 1",
                              "load_threshold = 1000.0": "load_threshold = 0.0001"})
    code = main(["--store", str(tmp_path / "s.db"), "collect", str(plan), "--work-dir",
                 str(tmp_path / "work"), "--data-root", str(tpch_data_root), "--limit", "1",
                 "--load-threshold", "1000", "--max-load-wait", "5"])
    assert code == 0
    rows = read_run_table(tmp_path / "runs" / "faults.csv.gz")
    assert len(rows) == 1
    assert rows[0]["cpu_time_s"] > 0 and rows[0]["quiet_start"] is True
    assert rows[0]["load_at_start"] is not None
    row = rows[0]
    assert row["cpu_tasks_s"] > 0 and row["cpu_compiler_s"] >= 0 and row["cpu_gc_s"] >= 0
    assert row["cpu_tasks_s"] + row["cpu_compiler_s"] + row["cpu_gc_s"] <= \
        row["cpu_time_s"] + 0.05


def test_cluster_runs_are_not_remeasured_by_the_driver_cpu_rule(tmp_path):
    from jobgauge.profiler.runners.collect import load_guard_for

    plan = load_plan(_plan(tmp_path))
    assert load_guard_for(plan, 2, "local[2]")["remeasure_ratio"] == 3.0
    assert load_guard_for(plan, 2, "spark://127.0.0.1:7077")["remeasure_ratio"] is None
    assert load_guard_for(plan, 2)["threshold"] == 1000.0


_TERMINATED_SUITE = '''
import os, time
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def server():
    """Stands for the suite's SparkSession and Thrift server: torn down or left behind."""
    marker = Path(os.environ["MARKER"])
    marker.write_text("started")
    yield
    marker.write_text("torn down")


def test_running_when_terminated(server):
    time.sleep(5)


def test_never_started(server):
    Path(os.environ["MARKER"]).write_text("a test after the signal ran")
'''


def test_a_terminated_test_run_tears_its_servers_down(tmp_path):
    """The suite's own SIGTERM handler (tests/conftest.py ``pytest_sessionstart``): a
    pytest run killed with SIGTERM while a test runs lets that test end, runs no other,
    and tears the session fixtures down (the JVMs they started stop).  Without it the run
    died at once with 143 and the fixture's teardown never ran."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_terminated.py").write_text(_TERMINATED_SUITE)
    (suite / "conftest.py").write_text(
        "import importlib.util\n"
        f"_spec = importlib.util.spec_from_file_location('project_conftest', "
        f"{str(Path(__file__).with_name('conftest.py'))!r})\n"
        "_module = importlib.util.module_from_spec(_spec)\n"
        "_spec.loader.exec_module(_module)\n"
        "pytest_sessionstart = _module.pytest_sessionstart\n")
    marker = tmp_path / "marker"
    run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            str(suite)], cwd=tmp_path, env={**os.environ, "MARKER": str(marker)},
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (marker.is_file() and marker.read_text() == "started"):
            assert run.poll() is None and time.monotonic() < deadline, "the run never started"
            time.sleep(0.1)
        run.send_signal(signal.SIGTERM)
        output, _ = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert marker.read_text() == "torn down", output
    assert run.returncode == 2, output              # pytest's "interrupted"
    assert "terminated by signal 15" in output
    assert "1 passed" in output                     # the second test never started
