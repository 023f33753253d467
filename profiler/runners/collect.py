"""``jobgauge collect PLAN``: measure workloads × sizes × a configuration design.

A plan is a TOML file::

    name = "tpch-sf0.1"
    workloads = ["tpch-q*"]          # names or shell patterns
    sizes = ["sf0.1"]
    timeout_s = 300                  # per run
    seed = 7
    out = "data/runs/tpch-sf0.1.csv.gz"
    warmup_runs = 3                  # unrecorded runs of one workload as an app starts
    warmup_each = 1                  # ... and of each other one before its first run
    warmup_per = "workload"          # "configuration": of each workload's each SQL setting
    application_per_workload = false # true: each workload in applications of its own
    gc_before_run = false            # true: a full garbage collection before each run
                                     # (slower and no steadier: tpch-sf1-v6)
    load_threshold = 0.5             # cores other processes may keep busy at a start
    load_wait_s = 300                # longest wait for that; then run, marked not quiet
    remeasure_ratio = 3.0            # measure again (once) when wall > 3 x CPU-time share
                                     # (or when others kept load_threshold cores busy)

    [design]
    kind = "lhs"                     # "grid" (every combination), "lhs" or "sobol"
    configs_per_group = 4            # session settings sampled per application group
    include_defaults = true          # the first group also runs Spark's defaults

    [repeats]
    fraction = 0.1                   # share of (workload, size, config) measured
    times = 3                        # this many times in all, for the noise report

    [[groups]]                       # settings that need a new application
    master = "local[2]"
    conf = {}

    [space]                          # SQL settings changed between runs in one app
    "spark.sql.shuffle.partitions" = {low = 2, high = 400, log = true, type = "int"}
    "spark.sql.adaptive.enabled" = {choices = ["true", "false"]}

A group may list its SQL-session configurations itself instead of sampling
them from ``[space]`` (``{}`` is Spark's defaults)::

    [[groups]]
    master = "local[2]"
    conf = {"spark.driver.memory" = "4g"}
    sessions = [{}, {"spark.sql.autoBroadcastJoinThreshold" = "-1"}]

A plan with ``cluster = {workers = 2, cores_per_worker = 1, worker_memory = "4g"}``
runs on a Spark standalone cluster on 127.0.0.1 (``jobgauge.profiler.runners.cluster``)
that the collector starts for each application and stops after it, on errors,
Ctrl-C and SIGTERM too; its groups name no master.  Every setting a plan names
is checked against the knob table (``jobgauge.knobs``) when the plan is read.
An application that dies (a JVM out of memory) loses only the run it was
running, recorded as failed; the group's other runs go on in a new application.

Every planned run has a stable id derived from the plan, so a collection that
is stopped or killed continues where it stopped: finished runs are read back
from the journal (``<work>/journal.jsonl``) and never repeated.  A run past
its timeout is recorded as timed out.  Runs inside one application are
shuffled (seeded) so no configuration always runs first; every application
first runs unrecorded warm-up queries (``warmup_runs`` of one workload), and each
other workload runs ``warmup_each`` times unrecorded just before its first measured
run in the application (:func:`warmed_workloads`).  With ``application_per_workload =
true`` each workload's runs of a group (all its sessions) go to applications of their
own, warmed up on that workload: on a mix of TPC-H queries in one application the JIT
compiler keeps working, and a run's time varies with it (a run against its
configuration's others on eight TPC-H queries at SF 1: 4.9-8.8 % with one query per
application, 10.8-15.0 % with the eight in one; ``bench/noise_sources.py``; not on the
whole SF 1 design, ``bench/plans/tpch-sf1-v3.toml``: data/README.md).  There each
configuration's first run compiled its code; ``warmup_per = "configuration"`` warms each
up with its own settings first (:func:`warmed_workloads`): on the SF 1 design's first
group, with 8 warm-ups as each application starts, 9.1 % against 12.6 % without and
11.2 % with all queries in one application (``tpch-sf1-v5``, ``-v3``, ``-v2``).
``gc_before_run = true`` has the JVM collect its garbage in full before each measured
run; on the same group that made the runs slower (a median 3.00 s against 2.63 s, their
GC CPU doubled) and no steadier (11.0 %), so only that experiment's plan sets it
(``tpch-sf1-v6``).

The collector guards its measurements (:class:`~jobgauge.profiler.runners.driver.LoadGuard`):
each run waits for a quiet machine (other processes keeping fewer than
``load_threshold`` cores busy, measured over the second before it starts), and its
load at start (``load_at_start``),
the CPU time of the driver and its JVM (``cpu_time_s``) and the share of it the JVM's
task, JIT compiler and GC threads took (``cpu_tasks_s``, ``cpu_compiler_s``,
``cpu_gc_s``), whether it started quiet (``quiet_start``), a first measurement that was redone
(``first_runtime_s``) and the machine's cores (``host_cores``: the stage model reads a
local run's CPU accounting against them) go to the journal and the run table.  A run that started on a
busy machine (the guard waited its longest and ran anyway) is measured again by the
next ``collect`` of the plan, unless the plan turns the wait off (``load_wait_s = 0``);
the newer measurement replaces it (still marked if it, too, started busy).  The driver child
and its JVM die with the collector, even on ``kill -9``.

A run table holds one machine's speed: the collector times a fixed piece of CPU work
(:mod:`jobgauge.profiler.speed`) before it measures and as each application starts, and
each run keeps its application's (``machine_probe_s``; a MapReduce collection, whose runs
are each a JVM of their own, times it as it starts).  A resume on a machine more than
``speed_tolerance`` (10 %) faster or slower than the table's runs measures nothing, and a
collection whose machine changes that much on the way stops before its next application
(session 48's resume of ``tpch-sf1-v5`` ran on a machine 43 % slower, unnoticed until its
runs were compared with another table).  ``--any-speed`` measures anyway.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import itertools
import json
import math
import os
import random
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

from jobgauge.errors import ParseError, UsageError
from jobgauge.profiler.speed import SPEED_TOLERANCE, describe_change, speed_change
from jobgauge.runtable import profiles_path_for

SPARK_DEFAULTS_LABEL = "defaults"


def load_plan(path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"plan file not found: {path}")
    try:
        plan = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ParseError(f"invalid TOML: {exc}", path=path) from None
    for key in ("name", "workloads", "sizes", "groups"):
        if key not in plan:
            raise ParseError(f"plan lacks '{key}'", path=path, expected=f"a '{key}' entry")
    plan.setdefault("timeout_s", 300)
    plan.setdefault("seed", 0)
    plan.setdefault("design", {})
    plan.setdefault("space", {})
    plan.setdefault("repeats", {"fraction": 0.0, "times": 1})
    for key in ("application_per_workload", "gc_before_run"):
        if not isinstance(plan.setdefault(key, False), bool):
            raise ParseError(f"{key} must be true or false, got {plan[key]!r}", path=path,
                             expected=f"{key} = true")
    if plan.setdefault("warmup_per", "workload") not in WARMUP_PER:
        raise ParseError(f"warmup_per must be one of {', '.join(WARMUP_PER)}, got "
                         f"{plan['warmup_per']!r}", path=path,
                         expected='warmup_per = "configuration"')
    for key, default, example in (("warmup_runs", 1, "warmup_runs = 3"),
                                  ("warmup_each", 1, "warmup_each = 1")):
        warmup = plan.setdefault(key, default)
        if isinstance(warmup, bool) or not isinstance(warmup, int) or not 0 <= warmup <= 10:
            raise ParseError(f"{key} must be a whole number from 0 to 10, got {warmup!r}",
                             path=path, expected=example)
    _guard_settings(plan, path)
    _check_settings(plan, path)
    plan["_path"] = str(path)
    return plan


def default_load_threshold() -> float:
    """The cores other processes may keep busy as a run starts: 0.5 on 2 cores."""
    return 0.25 * (os.cpu_count() or 2)


GUARD_SETTINGS = {   # plan key: (default, lowest allowed, example)
    "load_threshold": (None, 0.0, "load_threshold = 0.5"),
    "load_wait_s": (300.0, 0.0, "load_wait_s = 300"),
    "remeasure_ratio": (3.0, 1.0, "remeasure_ratio = 3.0"),
    # The machine's speed (``jobgauge.profiler.speed``): the probe's seconds on the
    # machine the plan's runs so far were measured on, for a table measured before the
    # collector timed the probe (none: the runs' own ``machine_probe_s``), and how far
    # (relative) a collection's probe may be from it.
    "machine_probe_s": (None, 0.0, "machine_probe_s = 0.38"),
    "speed_tolerance": (SPEED_TOLERANCE, 0.0, "speed_tolerance = 0.1"),
}
_ABOVE_LOWEST = {"machine_probe_s", "speed_tolerance"}    # must be above, not at, the lowest


def run_guard(load_threshold=None, load_wait_s=None) -> dict:
    """The guard settings, in a plan's terms (:data:`GUARD_SETTINGS`), of one run that
    ``jobgauge run`` makes (``run_workload(guard=...)``): by default it starts at once
    and its load is recorded, where a collection waits up to 300 s for a quiet machine."""
    return {"load_threshold": default_load_threshold() if load_threshold is None
            else float(load_threshold),
            "load_wait_s": 0.0 if load_wait_s is None else float(load_wait_s),
            "remeasure_ratio": GUARD_SETTINGS["remeasure_ratio"][0]}


def _guard_settings(plan: dict, path) -> None:
    """Check the plan's measurement-guard settings and fill in their defaults."""
    for key, (default, lowest, example) in GUARD_SETTINGS.items():
        value = plan.get(key)
        if value is None:
            plan[key] = default_load_threshold() if key == "load_threshold" else default
            continue
        above = key in _ABOVE_LOWEST
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not math.isfinite(value) or value < lowest or (above and value == lowest):
            raise ParseError(f"{key} must be a number {'>' if above else '>='} {lowest:g}, "
                             f"got {value!r}", path=path, expected=example)
        plan[key] = float(value)


def load_guard_for(plan: dict, slots: int, master: str = "local", cluster=None) -> dict:
    """A plan's ``run_batch(load_guard=...)`` settings, for an application of ``slots`` cores.

    On a cluster the executors run outside the driver's process group: the CPU time of
    the cluster's daemons and of the executors they start counts as the application's own
    (``cluster_pids``), for the load and the CPU-time rule.  A cluster the collector did
    not start (no ``cluster``) is not measured again by the CPU-time rule: its
    executors' CPU time is not seen.
    """
    local = master.startswith("local")
    seen = local or cluster is not None
    guard = {"threshold": plan["load_threshold"], "max_wait_s": plan["load_wait_s"],
             "remeasure_ratio": plan["remeasure_ratio"] if seen else None, "slots": slots}
    if cluster is not None:
        guard["cluster_pids"] = cluster.daemon_pids()
    return guard


# What the load guard adds to a run (see driver.LoadGuard), kept in the journal and run table.
GUARD_FIELDS = ("load_1min", "load_at_start", "load_waited_s", "quiet_start", "cpu_time_s",
                "first_runtime_s", "first_cpu_time_s", "remeasured", "host_cores",
                "cpu_tasks_s", "cpu_compiler_s", "cpu_gc_s")


def _resolve_workloads(patterns, framework="spark") -> list[str]:
    if framework == "hadoop":
        from jobgauge.profiler.runners.hadoop_runner import WORKLOADS as names
    else:
        from jobgauge.profiler.workloads import workload_names

        names = workload_names()
    chosen = []
    for pattern in patterns:
        matched = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
        if not matched:
            raise UsageError(f"plan workload {pattern!r} matches nothing; known: {', '.join(names)}")
        chosen.extend(m for m in matched if m not in chosen)
    return chosen


def _unit_samples(kind: str, n: int, dims: int, seed: int):
    if n <= 0:
        return []
    from scipy.stats import qmc

    if kind == "sobol":
        sampler = qmc.Sobol(d=dims, scramble=True, seed=seed)
        points = sampler.random(n)
    elif kind == "lhs":
        points = qmc.LatinHypercube(d=dims, seed=seed).random(n)
    else:
        raise UsageError(f"design kind must be grid, lhs or sobol; got {kind!r}")
    return points.tolist()


def _value(spec: dict, u: float):
    if "choices" in spec:
        choices = spec["choices"]
        return str(choices[min(int(u * len(choices)), len(choices) - 1)])
    low, high = float(spec["low"]), float(spec["high"])
    if spec.get("log"):
        value = math.exp(math.log(low) + u * (math.log(high) - math.log(low)))
    else:
        value = low + u * (high - low)
    if spec.get("type", "int") == "int":
        return str(int(round(value)))
    return f"{value:.3g}"


STANDALONE = "standalone"   # the master label of a run on the plan's own standalone cluster


def _check_settings(plan: dict, path) -> None:
    """Check a plan's groups, listed sessions, space and cluster against the knob table.

    A group may list its SQL-session configurations itself (``sessions``: a list of
    tables, ``{}`` being Spark's defaults) instead of sampling them from ``space``;
    a plan with a ``cluster`` table runs on a Spark standalone cluster on 127.0.0.1
    that the collector starts for each application and stops after it.
    """
    from jobgauge import knobs
    from jobgauge.errors import GaugeError

    def check(name, value, where, level=None):
        knob = knobs.find(str(name))
        if knob is None:
            raise ParseError(f"{where}: unknown setting {name!r} (not in the knob table, "
                             f"jobgauge.knobs)", path=path, expected="a knob name")
        if level == "session" and knob.restart != "session":
            raise ParseError(f"{where}: {name} takes effect only when the application "
                             f"starts; put it in the group's conf", path=path,
                             expected="SQL-session settings in sessions")
        if value is not None:
            try:
                knobs.validate(str(name), str(value).lower() if isinstance(value, bool)
                               else str(value))
            except GaugeError as exc:
                raise ParseError(f"{where}: {exc}", path=path) from None

    groups = plan["groups"]
    if not isinstance(groups, list) or not groups or \
            not all(isinstance(g, dict) for g in groups):
        raise ParseError("groups must be a list of tables ([[groups]])", path=path,
                         expected="[[groups]]")
    for name in plan["space"]:
        check(name, None, "space")
    cluster = plan.get("cluster")
    if cluster is not None:
        if not isinstance(cluster, dict) or set(cluster) - {"workers", "cores_per_worker",
                                                            "worker_memory"}:
            raise ParseError("cluster must be a table of workers, cores_per_worker and "
                             "worker_memory", path=path, expected='cluster = {workers = 2, '
                             'cores_per_worker = 1, worker_memory = "4g"}')
        try:
            standalone = cluster_of(plan)
        except GaugeError as exc:
            raise ParseError(f"cluster: {exc}", path=path) from None
    for number, group in enumerate(groups):
        where = f"group {number + 1}"
        for name, value in (group.get("conf") or {}).items():
            check(name, value, where)
        if cluster is not None:
            if group.get("master", STANDALONE) != STANDALONE:
                raise ParseError(f"{where}: a plan with a cluster runs on it; leave out master "
                                 f"(got {group['master']!r})", path=path)
            try:
                standalone.check_fits({k: str(v) for k, v in (group.get("conf") or {}).items()})
            except GaugeError as exc:
                raise ParseError(f"{where}: {exc}", path=path) from None
        if "sessions" not in group:
            continue
        sessions = group["sessions"]
        if not isinstance(sessions, list) or not sessions or \
                not all(isinstance(one, dict) for one in sessions):
            raise ParseError(f"{where}: sessions must be a list of tables", path=path,
                             expected='sessions = [{}, {"spark.sql.adaptive.enabled" = "false"}]')
        seen = set()
        for one in sessions:
            for name, value in one.items():
                check(name, value, f"{where} sessions", level="session")
            key = json.dumps({k: str(v) for k, v in one.items()}, sort_keys=True)
            if key in seen:
                raise ParseError(f"{where}: session {key} is listed twice", path=path)
            seen.add(key)


def cluster_of(plan: dict):
    """The (not yet started) StandaloneCluster a plan's ``cluster`` table describes, or None."""
    spec = plan.get("cluster")
    if not spec:
        return None
    from jobgauge.profiler.runners.cluster import StandaloneCluster

    return StandaloneCluster(workers=int(spec.get("workers", 2)),
                             cores_per_worker=int(spec.get("cores_per_worker", 1)),
                             memory_per_worker=str(spec.get("worker_memory", "2g")))


def _text(value) -> str:
    """A setting's value as a configuration writes it (TOML ``true`` → ``"true"``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def session_configs(plan: dict, group_index: int) -> list[dict]:
    """The SQL-setting configurations one application group runs: the group's own
    ``sessions`` list when it has one, else a design over ``space``."""
    listed = plan["groups"][group_index].get("sessions")
    if listed is not None:
        return [{k: _text(v) for k, v in one.items()} for one in listed]
    space = plan["space"]
    design = plan["design"]
    kind = design.get("kind", "lhs")
    names = sorted(space)
    if kind == "grid":
        axes = []
        for name in names:
            spec = space[name]
            axes.append([str(c) for c in spec["choices"]] if "choices" in spec
                        else [_value(spec, u) for u in (0.0, 0.5, 1.0)])
        configs = [dict(zip(names, combo)) for combo in itertools.product(*axes)]
    else:
        count = int(design.get("configs_per_group", 4))
        include = design.get("include_defaults", True) and group_index == 0
        samples = _unit_samples(kind, count - (1 if include else 0), len(names),
                                seed=int(plan["seed"]) * 1000 + group_index)
        configs = [{n: _value(space[n], u) for n, u in zip(names, point)} for point in samples]
        if include:
            configs.insert(0, {})
    return configs


def _run_id(plan_name, workload, size, master, static, session, repetition) -> str:
    blob = json.dumps([plan_name, workload, size, master, static, session], sort_keys=True)
    digest = hashlib.sha1(blob.encode()).hexdigest()[:12]
    return f"{plan_name}:{workload}:{size}:{digest}:r{repetition}"


def planned_runs(plan: dict) -> list[dict]:
    """Every run the plan asks for, in a stable order."""
    workloads = _resolve_workloads(plan["workloads"], plan.get("framework", "spark"))
    rng = random.Random(int(plan["seed"]))
    repeats = plan["repeats"]
    runs = []
    for group_index, group in enumerate(plan["groups"]):
        master = STANDALONE if plan.get("cluster") else group.get("master", "local[2]")
        static = {k: _text(v) for k, v in (group.get("conf") or {}).items()}
        for session in session_configs(plan, group_index):
            for size in plan["sizes"]:
                for workload in workloads:
                    times = int(repeats.get("times", 1)) if rng.random() < float(
                        repeats.get("fraction", 0.0)) else 1
                    for repetition in range(times):
                        runs.append({
                            "run_id": _run_id(plan["name"], workload, size, master, static,
                                              session, repetition),
                            "workload": workload, "size": size, "group": group_index,
                            "master": master, "static": static, "session": session,
                            "repetition": repetition})
    return runs


class Journal:
    """Append-only record of finished runs: one JSON line each, validated when read.

    A line that is not a journal entry (a JSON object whose ``run`` has a
    ``run_id``) is left out with a note in ``notes``.  A last line without its
    newline was cut by a kill: it is dropped from the file on opening (its run
    is simply redone), so the next entry starts a line of its own and is never
    glued to a torn one.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.entries: dict[str, dict] = {}
        self.notes: list[str] = []
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        complete, newline, tail = data.rpartition(b"\n")
        if not newline:
            complete, tail = b"", data
        if tail.strip():
            entry = _journal_entry(tail)
            if entry is None:
                number = complete.count(b"\n") + 2 if newline else 1
                self.notes.append(f"{self.path}: line {number} was cut by a kill "
                                  f"({len(tail)} bytes, no newline); "
                                  f"dropped, its run is measured again")
                with open(self.path, "r+b") as handle:   # drop the torn bytes, keep the rest
                    handle.truncate(len(complete) + len(newline))
            else:                        # whole but unterminated: end its line
                with open(self.path, "ab") as handle:
                    handle.write(b"\n")
                complete += newline + tail
        for number, line in enumerate(complete.split(b"\n"), 1):
            if not line.strip():
                continue
            entry = _journal_entry(line)
            if entry is None:
                self.notes.append(f"{self.path}: line {number} is not a journal entry; "
                                  f"left out, its run is measured again")
                continue
            self.entries[entry["run"]["run_id"]] = entry

    def add(self, entry: dict) -> None:
        """Append one entry as one whole line (a single write, flushed at once)."""
        line = json.dumps(entry, default=str) + "\n"
        if _journal_entry(line.encode("utf-8")) is None:
            raise ValueError("a journal entry needs run.run_id")
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line)
        self.entries[entry["run"]["run_id"]] = entry


def _journal_entry(line: bytes) -> dict | None:
    """The journal entry one line holds, or None when it holds none."""
    try:
        entry = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None
    run = entry.get("run") if isinstance(entry, dict) else None
    if not isinstance(run, dict) or not isinstance(run.get("run_id"), str) or not run["run_id"]:
        return None
    return entry


def collect(plan_path, *, work_dir=None, data_root=None, store=None, limit=None,
            progress=True, load_threshold=None, load_wait_s=None, busy_only=False,
            any_speed=False) -> dict:
    """Run what the plan still lacks; return a summary.

    ``load_threshold`` and ``load_wait_s`` override the plan's measurement guard:
    each run waits (at most ``load_wait_s``) until other processes keep fewer than
    ``load_threshold`` cores busy.  ``busy_only``: measure again only the runs that started
    on a busy machine, none of the runs the plan still lacks (a plan collected in part,
    such as the quiet SF 0.1 and 0.3 ones, keeps its part).

    The machine's speed (:mod:`jobgauge.profiler.speed`) is timed before anything is
    measured and as each application starts; each run keeps its application's
    (``machine_probe_s``).  A collection whose probe is more than the plan's
    ``speed_tolerance`` off its table's (:func:`table_speed`) measures nothing
    (UsageError); one whose probe drifts that far from where it started stops before the
    next application, with the runs measured so far kept (the summary's ``stopped``).
    ``any_speed`` measures anyway.
    """
    from tqdm import tqdm

    from jobgauge.profiler import speed
    from jobgauge.profiler.runners.runner import DEFAULT_DATA_ROOT, resources, run_batch, run_record
    from jobgauge.profiler.workloads import get_workload

    plan = load_plan(plan_path)
    for key, value in (("load_threshold", load_threshold), ("load_wait_s", load_wait_s)):
        if value is not None:
            plan[key] = value
    _guard_settings(plan, plan["_path"])
    work_dir = Path(work_dir or Path("var") / "collect" / plan["name"])
    journal = Journal(work_dir / "journal.jsonl")
    for note in journal.notes:
        print(f"note: {note}", file=sys.stderr)
    if not journal.entries and plan.get("out"):
        seeded = seed_journal(journal, work_dir, plan["out"], plan["name"])
        if seeded:
            print(f"note: resuming from the {seeded} run(s) already in {plan['out']}",
                  file=sys.stderr)
    data_root = Path(data_root or DEFAULT_DATA_ROOT)
    runs = planned_runs(plan)
    again = float(plan.get("load_wait_s", 300)) > 0    # a plan that never waits marks only
    todo = [r for r in runs if (r["run_id"] not in journal.entries and not busy_only)
            or (again and r["run_id"] in journal.entries
                and journal.entries[r["run_id"]]["run"].get("quiet_start") is False)]
    if limit is not None:
        todo = todo[:limit]
    reference_s, reference = table_speed(journal, plan), "the probe of the plan's runs so far"
    probe_s = speed.machine_speed() if todo else None
    if probe_s is not None and not any_speed:
        _check_speed(plan, probe_s, reference_s, reference)
    if reference_s is None:         # a new table: this machine as the collection starts
        reference_s, reference = probe_s, "the probe as this collection started"
    stopped = None
    bar = tqdm(total=len(runs), initial=len(runs) - len([r for r in runs if r["run_id"] not in journal.entries]),
               desc=plan["name"], unit="run", disable=not progress, file=sys.stderr,
               dynamic_ncols=True)
    if plan.get("framework", "spark") == "hadoop":
        added = _collect_hadoop(plan, todo, journal, work_dir, data_root, bar, probe_s)
        todo = []
    else:
        added = 0
    by_app = defaultdict(list)
    apart = plan["application_per_workload"]
    for run in todo:
        by_app[(run["group"], run["size"], run["workload"] if apart else "")].append(run)
    rng = random.Random(int(plan["seed"]) + 1)
    timeout_s = float(plan["timeout_s"])
    for (group_index, size, alone), group_runs in sorted(by_app.items()):
        rng.shuffle(group_runs)
        first = group_runs[0]
        data_paths = {}
        for run in group_runs:
            if run["workload"] not in data_paths:
                data_paths[run["workload"]] = get_workload(run["workload"]).prepare(data_root, size)
        warm_workload = first["workload"]
        # Unrecorded warm-up queries first: the JVM keeps getting faster over the first runs.
        items = [{"key": f"warmup-{group_index}-{size}-{number}", "workload": warm_workload,
                  "data_path": str(data_paths[warm_workload]), "sql_conf": {},
                  "timeout_s": timeout_s, "warmup": True}
                 for number in range(int(plan["warmup_runs"]))]
        by_key = {}
        for run in group_runs:
            key = hashlib.sha1(run["run_id"].encode()).hexdigest()[:16]
            by_key[key] = run
            workload = get_workload(run["workload"])
            items.append({"key": key, "workload": run["workload"],
                          "data_path": str(data_paths[run["workload"]]),
                          "sql_conf": run["session"], "timeout_s": timeout_s,
                          "query_text": getattr(workload, "sql", None)})
        per = plan["warmup_per"]
        items = warmed_workloads(items, int(plan["warmup_each"]),
                                 {warmup_key({"workload": warm_workload}, per)}, per)
        eventlog_dir = work_dir / "eventlogs"
        app_info = {}

        def on_record(record, items_by_key={i["key"]: i for i in items}):
            nonlocal added
            if record.get("warmup") or record["key"] not in by_key:
                return
            run = by_key[record["key"]]
            if record.get("runtime_s") is None:   # the application died before it began
                bar.write(f"{run['workload']} {size}: {record['status']} before it began "
                          f"(not recorded; the next collect runs it): "
                          f"{(record.get('error') or '').splitlines()[0][:160]}")
                return
            item = items_by_key[record["key"]]
            config = {"spark.master": master, **run["static"], **run["session"]}
            workload = get_workload(run["workload"])
            row = run_record(record, item=item, resources_=resources_,
                             engine_version=app_info.get("spark_version"), size=size,
                             input_bytes=workload.input_bytes(Path(item["data_path"])),
                             config=config, run_id=run["run_id"])
            row["query_text"] = None  # kept once per workload, not per run
            row.update({key: record[key] for key in GUARD_FIELDS if key in record})
            row["machine_probe_s"] = probe_s
            journal.add({"run": row, "job_ids": record.get("job_ids", []),
                         "app_id": app_info.get("app_id"), "plan": plan["name"],
                         "repetition": run["repetition"], "result": record.get("result")})
            added += 1
            bar.update(1)
            if record["status"] != "succeeded":
                bar.write(f"{run['workload']} {size}: {record['status']}: "
                          f"{(record.get('error') or '').splitlines()[0][:160] if record.get('error') else ''}")

        # An application that dies (a JVM out of memory) loses only the run it was running,
        # recorded as failed; the group's other runs go on in a new, warmed-up application.
        left, warm, died_warming, unwarmed = items, warm_workload, set(), set()
        while left:
            probe_s = speed.machine_speed()
            if not any_speed:
                try:
                    _check_speed(plan, probe_s, reference_s, reference)
                except UsageError as exc:
                    stopped = f"stopped before the next application: {exc}"
                    break
            with cluster_of(plan) or contextlib.nullcontext() as cluster:
                master = cluster.master_url if cluster else first["master"]
                resources_ = resources(master, first["static"], cluster)
                outcome = run_batch(
                    left, master=master, spark_conf=first["static"],
                    eventlog_dir=eventlog_dir, work_dir=work_dir / "apps",
                    app_name=f"jobgauge collect {plan['name']} g{group_index} {size}"
                             + (f" {alone}" if alone else ""),
                    on_start=app_info.update, on_record=on_record,
                    gc_before_run=plan["gc_before_run"],
                    load_guard=load_guard_for(plan, int(resources_["executor_instances"]
                                                        * resources_["executor_cores"]),
                                              master, cluster))
            if outcome["returncode"] == 0 and not outcome["killed"]:
                break
            ended = {r["key"] for r in outcome["records"]}
            measured = [i for i in left if not i.get("warmup")]
            dying = outcome["records"][-1] if outcome["records"] else None
            if dying is not None and dying.get("warmup") and dying["workload"] != warm:
                # its own warm-up: measure it (that configuration of it) unwarmed
                unwarmed.add(warmup_key(next((i for i in left if i["key"] == dying["key"]),
                                             dying), per))
            elif not any(i["key"] in ended for i in measured):   # it died warming up
                died_warming.add(warm)
            left = [i for i in measured if i["key"] not in ended]
            others = [i["workload"] for i in left if i["workload"] not in died_warming]
            if not left or not others:
                if left:
                    bar.write(f"group {group_index + 1} {size}: the application died warming "
                              f"up on {', '.join(sorted(died_warming))}; {len(left)} runs "
                              f"left for the next collect")
                break
            warm = warm if warm not in died_warming else others[0]
            left = [{"key": f"warmup-{group_index}-{size}-{number}-again", "workload": warm,
                     "data_path": str(data_paths[warm]), "sql_conf": {},
                     "timeout_s": timeout_s, "warmup": True}
                    for number in range(int(plan["warmup_runs"]))] + \
                warmed_workloads(left, int(plan["warmup_each"]),
                                 {warmup_key({"workload": warm}, per)} | died_warming
                                 | unwarmed, per)
            app_info.clear()
        attach_profiles(work_dir, journal)
        if plan.get("out"):        # after each application: a kill loses no exported run
            export(journal, plan["out"])
            export_profiles(work_dir, profiles_path_for(plan["out"]))
        if stopped:
            break
    bar.close()
    attach_profiles(work_dir, journal)
    rows = [e["run"] for e in journal.entries.values()]
    if plan.get("out"):
        export(journal, plan["out"])
        export_profiles(work_dir, profiles_path_for(plan["out"]))
    if store is not None:
        store.add_runs([_store_row(r) for r in rows], skip_existing=True)
    return {"plan": plan["name"], "planned": len(runs), "done": len(journal.entries),
            "added": added, "noise": noise_report(journal),
            "busy_starts": sum(1 for row in rows if row.get("quiet_start") is False),
            "remeasured": sum(1 for row in rows if row.get("remeasured")),
            "machine_probe_s": probe_s, "table_probe_s": table_speed(journal, plan),
            "stopped": stopped}


def table_speed(journal: Journal, plan: dict) -> float | None:
    """The machine speed (:func:`jobgauge.profiler.speed.machine_speed`) of the plan's runs
    so far: the median ``machine_probe_s`` of the journal's runs that have one, else the
    plan's ``machine_probe_s`` (a table measured before the collector timed the probe);
    None where neither says (a new table)."""
    import statistics

    probes = [entry["run"].get("machine_probe_s") for entry in journal.entries.values()]
    probes = [p for p in probes if isinstance(p, (int, float)) and not isinstance(p, bool)
              and math.isfinite(p) and p > 0]
    return round(statistics.median(probes), 3) if probes else plan.get("machine_probe_s")


def _check_speed(plan: dict, probe_s: float, reference_s, what: str) -> None:
    """UsageError where ``probe_s`` is more than the plan's ``speed_tolerance`` off
    ``reference_s`` (``what`` names it); nothing where there is no reference."""
    tolerance = plan["speed_tolerance"]
    if reference_s is None or abs(speed_change(probe_s, reference_s)) <= tolerance:
        return
    raise UsageError(
        f"{plan['name']}: this machine's CPU probe takes {describe_change(probe_s, reference_s)}, "
        f"{what} (more than the plan's speed_tolerance, {tolerance:.0%}): runs measured "
        f"now would not be comparable with them.  Collect on a machine of their speed, or "
        f"start a table of its own (a plan with another name and out), or pass --any-speed "
        f"to measure anyway (each run keeps its probe, machine_probe_s)")


WARMUP_PER = ("workload", "configuration")


def warmup_key(item: dict, per: str = "workload"):
    """What one warm-up warms (:func:`warmed_workloads`): the item's workload, or with
    ``per = "configuration"`` the workload with the item's SQL settings."""
    from jobgauge.runtable import config_json

    if per == "workload":
        return item["workload"]
    return item["workload"], config_json(item.get("sql_conf") or {})


def warmed_workloads(items: list[dict], runs: int, warm=(), per: str = "workload") -> list[dict]:
    """``items`` with ``runs`` unrecorded warm-up runs (``"warmup": true``) of each workload
    (Spark's defaults), or with ``per = "configuration"`` of each workload with each of
    its SQL settings (those settings), just before its first measured run, except what
    ``warm`` holds: workloads (none of their runs is warmed up) and :func:`warmup_key`
    keys (the application's own warm-up workload with the defaults).

    The application's warm-up runs one workload only; each other query's first run in the
    application still compiled its code and came out slower than its repeat: in the TPC-H
    tables collected so, by a median 0.141 in log at SF 1 (slower in 86 % of the pairs),
    0.079 at SF 3 and 0.041 at SF 10, and a pair with such a run differs by 0.149 in log at
    SF 1 against 0.104 without one (``bench/reports/guard_noise.md``).  The same holds for
    each setting that takes other code (AQE off, shuffle joins for broadcasts): with one
    query per application warmed up on its defaults, the earlier run of a configuration's
    pair was the slower in 84 % of 104 SF 1 pairs, by a median 0.094 in log (0.119 with
    the defaults, 0.151 with AQE or broadcasts off; ``tpch-sf1-v3``'s first 214 runs,
    ``bench/recollect_noise.py``); ``per = "configuration"`` warms each up: 63 % and 0.041
    (``tpch-sf1-v4``'s first group)."""
    if per not in WARMUP_PER:
        raise UsageError(f"warm-ups are per workload or per configuration, got {per!r}")
    out, seen = [], set(warm)
    for item in items:
        key = warmup_key(item, per)
        if not item.get("warmup") and item["workload"] not in seen and key not in seen \
                and runs > 0:
            seen.add(key)
            out += [{"key": f"warmup-{item['key']}-{number}", "workload": item["workload"],
                     "data_path": item["data_path"],
                     "sql_conf": {} if per == "workload" else dict(item["sql_conf"]),
                     "timeout_s": item["timeout_s"], "warmup": True,
                     "query_text": item.get("query_text")} for number in range(runs)]
        out.append(item)
    return out


def hadoop_load_guard(plan):
    """The measurement guard of a MapReduce plan (:class:`LoadGuard`): its own load is
    the CPU time of the jobs' JVMs (children it waited for), its slots this machine's
    cores (Hadoop's local runner uses up to ``mapreduce.local.map.tasks.maximum``)."""
    from jobgauge.profiler.runners.driver import LoadGuard, own_and_children_cpu_s

    return LoadGuard(**load_guard_for(plan, os.cpu_count() or 1),
                     read_own_cpu=own_and_children_cpu_s)


def measure_mapreduce(workload, size, knobs, *, work_dir, timeout_s,
                      keep_output=True) -> dict:
    """One MapReduce job's record (``hadoop_runner.run_mapreduce_job``), with the CPU time
    of its JVM (``cpu_time_s``): the collector's runs and ``jobgauge run hadoop``."""
    from jobgauge.profiler.runners.driver import own_and_children_cpu_s
    from jobgauge.profiler.runners.hadoop_runner import run_mapreduce_job

    before = own_and_children_cpu_s()
    record = run_mapreduce_job(workload, size, knobs, work_dir=work_dir,
                               timeout_s=float(timeout_s), keep_output=keep_output)
    record["cpu_time_s"] = round(own_and_children_cpu_s() - before, 3)
    return record


def _measure_hadoop(run, plan, data_root) -> dict:
    """One planned MapReduce run's record (:func:`measure_mapreduce`)."""
    return measure_mapreduce(run["workload"], run["size"], run["session"],
                             work_dir=Path(data_root) / "hadoop", timeout_s=plan["timeout_s"],
                             keep_output=False)


def _collect_hadoop(plan, todo, journal, work_dir, data_root, bar, probe_s=None) -> int:
    """MapReduce runs: one JVM per run in Hadoop's local mode, each under the load guard
    (:func:`hadoop_load_guard`) as a Spark run is: it waits for a quiet machine, records
    the load at its start and its JVM's CPU time, and a run whose wall time is far above
    its CPU-time share is measured once more (the first wall time kept; the JVM's start
    and JIT count in its CPU time, about 6.8 s for a 1 s job, so only a long stall
    trips this rule: the wait for a quiet machine is the guard that matters here)."""
    from jobgauge.profiler.runners.hadoop_runner import store_arguments

    guard = hadoop_load_guard(plan)
    added = 0
    with open(Path(work_dir) / "profiles.jsonl", "a", encoding="utf-8") as profiles:
        for run in todo:
            measured = dict(guard.wait_quiet())
            record = _measure_hadoop(run, plan, data_root)
            record.update(measured)
            if record["status"] == "succeeded" and guard.needs_remeasure(
                    record.get("runtime_s"), record["cpu_time_s"]):
                again = dict(guard.wait_quiet())
                second = _measure_hadoop(run, plan, data_root)
                second.update(again, first_runtime_s=record.get("runtime_s"),
                              first_cpu_time_s=record["cpu_time_s"], remeasured=True)
                record = second
            row, settings, profile = store_arguments(record)
            row.update(run_id=run["run_id"], config=settings, source="local",
                       machine_probe_s=probe_s)
            row.update({key: record[key] for key in GUARD_FIELDS if key in record})
            journal.add({"run": row, "job_ids": [], "app_id": None, "plan": plan["name"],
                         "repetition": run["repetition"], "result": None})
            if profile is not None:
                profiles.write(json.dumps({"run_id": run["run_id"], "source": "local",
                                           **compact_profile(profile)}, default=str) + "\n")
                profiles.flush()
            added += 1
            bar.update(1)
            if record["status"] != "succeeded":
                bar.write(f"{run['workload']} {run['size']}: {record['status']}: "
                          f"{(record.get('error') or '').splitlines()[0][:160] if record.get('error') else ''}")
    return added


PROFILE_STAGE_KEYS = ("stage_id", "parent_ids", "name", "n_tasks", "duration_s",
                      "task_duration_p50_ms", "task_duration_max_ms", "task_skew",
                      "input_bytes", "shuffle_read_bytes", "shuffle_write_bytes",
                      "executor_run_time_ms", "executor_cpu_time_ms", "jvm_gc_time_ms",
                      "memory_spill_bytes", "disk_spill_bytes", "file_bytes",
                      "scan_files")


def compact_profile(profile) -> dict:
    """What the shipped corpus keeps of one run's profile: the summary, the stage DAG
    with per-stage aggregates (``file_bytes`` and ``scan_files`` where the event log
    names the files each stage scanned), the physical plan Spark executed, and
    ``scan_files`` ({location: bytes}): as the event log's scans listed them, else as
    this machine holds them."""
    plans = [q.get("physical_plan_description") for q in profile.sql
             if q.get("physical_plan_description")]
    record = {"summary": profile.summary(),
              "stages": [{k: s.get(k) for k in PROFILE_STAGE_KEYS} for s in profile.stages],
              "physical_plan": plans[0] if plans else None}
    files = {location: size for stage in profile.stages
             for location, size in (stage.get("scan_files") or {}).items()}
    locations = scan_locations(record["physical_plan"])
    files = {**scan_files(locations=locations), **files}
    if files:
        record["scan_files"] = files
    rows = scan_row_bytes(locations=locations)
    if rows:
        record["scan_row_bytes"] = rows
    return record


def scan_locations(plan) -> list[str]:
    """The location of each scan of ``plan`` (EXPLAIN FORMATTED text) that names one,
    in plan order (a location scanned twice is listed twice); none for a plan that
    does not parse."""
    from jobgauge.dag import QueryDag
    from jobgauge.errors import GaugeError

    if not plan:
        return []
    try:
        dag = QueryDag.from_spark_plan(plan)
    except GaugeError:
        return []
    return [attrs["location"] for _, attrs in dag.nodes(data=True) if attrs.get("location")]


def scan_files(plan=None, *, locations=None) -> dict:
    """{location: bytes} of the files each scan of ``plan`` (EXPLAIN FORMATTED text)
    reads, for the locations this machine holds: Spark splits a scan into tasks by its
    files' bytes, whatever columns the query reads (``models._stage`` replays it so).
    Taken when the run is collected, beside its data.  ``locations``: the plan's
    :func:`scan_locations`, where the caller has them already."""
    from jobgauge.profiler.workloads.base import directory_bytes

    return _held(plan, locations, directory_bytes)


def scan_row_bytes(plan=None, *, locations=None) -> dict:
    """{location: bytes} of a row of each Parquet table ``plan`` (EXPLAIN FORMATTED text)
    scans, as Spark sizes one without column statistics (``jobgauge.dag.spark_row_bytes``
    of all its columns, from the files' schema), for the locations this machine holds:
    with the columns a broadcast keeps, it gives Spark's estimate of the broadcast
    (``jobgauge.dag.broadcast_shares``).  ``locations`` as for :func:`scan_files`."""
    from jobgauge.dag import spark_row_bytes

    def row_bytes(path):
        types = _parquet_spark_types(path)
        return spark_row_bytes(types) if types else None

    return _held(plan, locations, row_bytes)


def _held(plan, locations, measure) -> dict:
    """{location: measure(its path)} for each scan location of ``plan`` (or each of
    ``locations``) this machine holds, where ``measure`` gives a value."""
    found = {}
    for location in scan_locations(plan) if locations is None else locations:
        path = Path(location.removeprefix("file:"))
        if location in found or not path.exists():
            continue
        value = measure(path)
        if value is not None:
            found[location] = value
    return found


def _parquet_spark_types(path: Path) -> list[str] | None:
    """The Spark type name of each column of a Parquet file or folder of them; None where
    it is no Parquet or holds a type Spark's default sizes do not name here."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.ParquetDataset(str(path)).schema if path.is_dir() \
            else pq.read_schema(str(path))
    except (OSError, ValueError, pa.ArrowException):
        return None
    names = []
    for field in schema:
        kind = field.type
        if pa.types.is_decimal(kind):
            names.append(f"decimal({kind.precision},{kind.scale})")
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind) \
                or getattr(pa.types, "is_string_view", lambda _: False)(kind):  # pyarrow 16+
            names.append("string")
        elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            names.append("binary")
        elif pa.types.is_timestamp(kind):
            names.append("timestamp")
        else:
            name = {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int",
                    pa.int64(): "bigint", pa.float32(): "float", pa.float64(): "double",
                    pa.bool_(): "boolean", pa.date32(): "date"}.get(kind)
            if name is None:
                return None
            names.append(name)
    return names


def attach_profiles(work_dir, journal: Journal) -> int:
    """Profile every journaled run that has none yet, reading each event log once.

    A run's profile is its measurement's: a run measured again (it started on a busy
    machine) is profiled again from its new application's event log (a profile names
    its application, ``summary.app_id``), and the newer profile wins
    (:func:`export_profiles`)."""
    from jobgauge.errors import GaugeError
    from jobgauge.profiler.readers.eventlog import read_eventlog
    from jobgauge.profiler.runners.runner import find_eventlog, query_profile

    work_dir = Path(work_dir)
    path = work_dir / "profiles.jsonl"
    done = defaultdict(set)     # run_id -> the applications its profiles were read from
    if path.exists():
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                try:
                    record = json.loads(line)
                    # a profile that names no application stands for its run's
                    done[record["run_id"]].add((record.get("summary") or {}).get("app_id"))
                except (json.JSONDecodeError, KeyError, TypeError, AttributeError):
                    continue
    by_app = defaultdict(list)
    for run_id, entry in journal.entries.items():
        app = entry.get("app_id")
        if app and entry.get("job_ids") and not done[run_id] & {app, None}:
            by_app[app].append(entry)
    added = 0
    with open(path, "a", encoding="utf-8") as out:
        for app_id, entries in sorted(by_app.items()):
            log = find_eventlog(work_dir / "eventlogs", app_id)
            if log is None or log.endswith(".inprogress"):
                continue
            try:
                app_profile = read_eventlog(log)
            except GaugeError as exc:
                print(f"event log of {app_id} not read: {exc}", file=sys.stderr)
                continue
            for entry in entries:
                profile = query_profile(app_profile, entry["job_ids"],
                                        runtime_s=entry["run"].get("runtime_s"))
                out.write(json.dumps({"run_id": entry["run"]["run_id"],
                                      "source": entry["run"]["source"],
                                      **compact_profile(profile)}, default=str) + "\n")
                added += 1
    return added


def seed_journal(journal: Journal, work_dir, runs_out, plan_name: str) -> int:
    """Start an empty journal from the plan's committed run table and profiles.

    The run table a plan writes (``data/runs/NAME.csv.gz``, with
    ``data/profiles/NAME.jsonl.gz``) is the record of what was measured, so a
    collection committed in parts resumes on a fresh checkout, where the
    journal (under ``var/``) is not.  Returns the runs taken over.
    """
    import gzip

    from jobgauge.runtable import read_run_table

    runs_out = Path(runs_out)
    if not runs_out.exists():
        return 0
    rows = read_run_table(runs_out, runtime_optional=True)
    for row in rows:   # the table keeps ``completed``; the journal's status follows from it
        # (a run that did not complete failed or timed out: the table does not say which,
        # and the store takes a failure, as it does for any row with completed false)
        row.setdefault("status", "succeeded" if row.get("completed") else "failed")
        journal.add({"run": row, "job_ids": [], "app_id": None, "plan": plan_name,
                     "seeded_from": str(runs_out)})
    profiles = profiles_path_for(runs_out)
    if profiles.exists():
        with gzip.open(profiles, "rt", encoding="utf-8") as source, \
                open(Path(work_dir) / "profiles.jsonl", "a", encoding="utf-8") as out:
            for line in source:
                out.write(line if line.endswith("\n") else line + "\n")
    return len(rows)


def export_profiles(work_dir, out_path) -> int:
    """Write the collected profiles, sorted by run id, as gzip JSON lines."""
    import gzip

    source = Path(work_dir) / "profiles.jsonl"
    if not source.exists():
        return 0
    records = {}
    with open(source, encoding="utf-8") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            records[record["run_id"]] = record
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out_path, "wt", encoding="utf-8") as out:
        for run_id in sorted(records):
            out.write(json.dumps(records[run_id], sort_keys=True) + "\n")
    return len(records)


def _store_row(row: dict) -> dict:
    """A journal row as the store takes it.  A journal seeded from a run table before
    session 22 marked its runs that did not complete "not completed", a status the
    store refuses: they are failures, as :func:`seed_journal` now seeds them."""
    from datetime import datetime

    out = dict(row)
    if out.get("status") == "not completed":
        out["status"] = "failed"
    for key in ("started_at", "ended_at"):
        if isinstance(out.get(key), str):
            out[key] = datetime.fromisoformat(out[key])
    return out


def export(journal: Journal, out_path) -> int:
    """Write the journal's runs as a gzip run table (sorted by run id)."""
    from jobgauge.runtable import write_run_table

    rows = sorted((e["run"] for e in journal.entries.values()), key=lambda r: r["run_id"])
    return write_run_table(rows, out_path)


def noise_report(journal: Journal) -> dict:
    """The repeat noise (``jobgauge.runtable.repeat_noise``, its MdAPE) of the repeated
    configurations, per workload."""
    from jobgauge.runtable import repeat_noise

    groups = defaultdict(list)
    for entry in journal.entries.values():
        run = entry["run"]
        if run["status"] != "succeeded":
            continue
        groups[run["run_id"].rsplit(":r", 1)[0]].append(run["runtime_s"])
    per_workload = defaultdict(list)
    for base, values in groups.items():
        per_workload[base.split(":")[1]].append(values)
    out = {w: repeat_noise(g) for w, g in sorted(per_workload.items())}
    return {w: round(n["mdape"], 4) for w, n in out.items() if n}
