"""Dr. Elephant-style heuristics over one Spark application's profile.

Each heuristic measures one thing, grades it against its row of
``THRESHOLDS`` (data, not code: change a number there, not a rule) and says
which ``--conf`` values would fix it.  :func:`evaluate` runs them all and
returns one dict per heuristic::

    {"name": "task_skew", "severity": "severe", "value": 9.8,
     "evidence": "stage 3: longest task 12.3 s is 9.8x the median 1.25 s (8 tasks)",
     "conf": {"spark.sql.adaptive.enabled": "true", ...}}

Severities, in order: ``none``, ``low``, ``moderate``, ``severe``, ``critical``.
A heuristic that cannot be measured on this input (no tasks, no memory
figures) is ``none`` with the evidence saying why.  ``facts`` are the
application-level numbers :mod:`jobgauge.profiler.readers.app_report` derives
(runtime, driver time, slots, asked executor memory, the what-if curve).
"""

from __future__ import annotations

import math

SEVERITIES = ("none", "low", "moderate", "severe", "critical")
GiB = 1024 ** 3
MiB = 1024 ** 2

# name -> (what is measured, direction, low, moderate, severe, critical).
# "above": the value is bad when >= a threshold; "below": bad when <= it.
THRESHOLDS = {
    "task_skew": ("longest task / median task of the worst significant stage", "above",
                  2.0, 4.0, 8.0, 16.0),
    "spill": ("bytes spilled from memory / bytes read (input + shuffle read)", "above",
              0.01, 0.1, 0.5, 1.0),
    "gc_share": ("JVM GC time / executor run time", "above", 0.08, 0.10, 0.12, 0.15),
    "idle_executors": ("idle executor core-seconds / available core-seconds", "above",
                       0.30, 0.50, 0.70, 0.85),
    "executor_memory": ("share of the asked executor memory that is never used "
                        "(1 - needed / asked)", "above", 0.25, 0.50, 0.75, 0.90),
    "partitions": ("too many: 0.2 s / median task time of a stage with >= 4 tasks per slot; "
                   "too few: slots / tasks of a long stage", "above", 2.0, 4.0, 8.0, 16.0),
    "driver_bound": ("time no job ran (driver only) / application runtime", "above",
                     0.20, 0.35, 0.50, 0.70),
}

# Conditions for a measurement to count at all (so tiny stages and short runs stay quiet).
SIGNIFICANT_STAGE_SHARE = 0.05     # a stage must take >= 5 % of the runtime ...
SIGNIFICANT_STAGE_S = 0.5          # ... and at least this many seconds
MIN_RUN_TIME_FOR_GC_S = 10.0       # executor run time below this says nothing about GC
# Idle executors and driver time of a shorter application are mostly JVM and
# session start-up, which no setting removes (Dr. Elephant skips short jobs too).
MIN_RUNTIME_FOR_TIME_SHARES_S = 60.0
MIN_TASKS_FOR_SKEW = 3
MEMORY_HEADROOM = 1.5              # recommended memory = peak x this, rounded up ...
MEMORY_STEP = 512 * MiB            # ... to this step, and never below ...
MEMORY_FLOOR = 1 * GiB             # ... this
TASK_OVERHEAD_S = 0.1              # a task shorter than this is mostly scheduling overhead
TARGET_PARTITION_BYTES = 128 * MiB
IDLE_RUNTIME_TOLERANCE = 0.10      # fewer executors are fine while the runtime grows < 10 %


def grade(name: str, value) -> str:
    """The severity of ``value`` on the row ``name`` of THRESHOLDS."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "none"
    _what, direction, *limits = THRESHOLDS[name]
    severity = "none"
    for level, limit in zip(SEVERITIES[1:], limits):
        if (value >= limit) if direction == "above" else (value <= limit):
            severity = level
    return severity


def _result(name, value, evidence, conf=None, severity=None) -> dict:
    severity = grade(name, value) if severity is None else severity
    return {"name": name, "severity": severity,
            "value": None if value is None else round(float(value), 4),
            "measures": THRESHOLDS[name][0], "evidence": evidence,
            "conf": dict(conf or {}) if severity != "none" else {}}


def format_memory(size_bytes: float) -> str:
    """Bytes as a Spark memory setting: ``1536m``, ``4g``."""
    mib = int(math.ceil(size_bytes / MiB))
    return f"{mib // 1024}g" if mib % 1024 == 0 else f"{mib}m"


def _memory_key(facts) -> str:
    return "spark.driver.memory" if facts.get("local") else "spark.executor.memory"


def _more_memory(facts, factor: float) -> dict:
    asked = facts.get("executor_memory_bytes") or GiB
    step = MEMORY_STEP
    return {_memory_key(facts): format_memory(math.ceil(asked * factor / step) * step)}


def _significant(stage, facts) -> bool:
    wall = stage.get("duration_s") or 0.0
    runtime = facts.get("runtime_s") or 0.0
    return wall >= SIGNIFICANT_STAGE_S and wall >= SIGNIFICANT_STAGE_SHARE * runtime


def _s(ms) -> str:
    return f"{(ms or 0) / 1000.0:.2f} s"


# ---------------------------------------------------------------------------- the rules

def task_skew(profile, facts) -> dict:
    worst = None
    for stage in profile.stages:
        if (stage.get("n_succeeded_tasks") or 0) < MIN_TASKS_FOR_SKEW or not _significant(
                stage, facts) or not stage.get("task_skew"):
            continue
        if worst is None or stage["task_skew"] > worst["task_skew"]:
            worst = stage
    if worst is None:
        return _result("task_skew", None, "no stage with enough tasks and time to judge skew")
    evidence = (f"stage {worst['stage_id']}: longest task {_s(worst['task_duration_max_ms'])} is "
                f"{worst['task_skew']:.1f}x the median {_s(worst['task_duration_p50_ms'])} "
                f"({worst['n_succeeded_tasks']} tasks)")
    conf = {"spark.sql.adaptive.enabled": "true",
            "spark.sql.adaptive.skewJoin.enabled": "true",
            "spark.sql.adaptive.skewJoin.skewedPartitionFactor": "3",
            "spark.sql.adaptive.advisoryPartitionSizeInBytes": "64m"}
    return _result("task_skew", worst["task_skew"], evidence, conf)


def spill(profile, facts) -> dict:
    totals = profile.totals
    spilled = totals.get("memory_spill_bytes")
    disk = totals.get("disk_spill_bytes") or 0
    if spilled is None:
        return _result("spill", None, "the log has no spill metrics")
    read = (totals.get("input_bytes") or 0) + (totals.get("shuffle_read_bytes") or 0)
    value = spilled / read if read else (1.0 if spilled else 0.0)
    worst = max(profile.stages, key=lambda s: s.get("memory_spill_bytes") or 0, default=None)
    where = f"; most in stage {worst['stage_id']}" if worst and (
        worst.get("memory_spill_bytes") or 0) > 0 else ""
    evidence = (f"{spilled / MiB:.1f} MiB spilled from memory ({disk / MiB:.1f} MiB written to "
                f"disk) against {read / MiB:.1f} MiB read{where}")
    severity = grade("spill", value)
    if severity == "none" and disk > 0:
        severity = "low"                        # any disk spill is worth a look
    factor = {"low": 1.25, "moderate": 1.5, "severe": 2.0, "critical": 2.0}.get(severity, 1.0)
    partitions = int(facts.get("shuffle_partitions") or 200)
    conf = {**_more_memory(facts, factor),
            "spark.sql.shuffle.partitions": str(partitions * 2)}
    return _result("spill", value, evidence, conf, severity)


def gc_share(profile, facts) -> dict:
    gc = profile.totals.get("jvm_gc_time_ms")
    run = profile.totals.get("executor_run_time_ms")
    if gc is None or not run or run / 1000.0 < MIN_RUN_TIME_FOR_GC_S:
        return _result("gc_share", None, f"too little executor run time ({_s(run)}) to judge GC")
    value = gc / run
    evidence = f"GC took {_s(gc)} of {_s(run)} executor run time ({value:.1%})"
    conf = {**_more_memory(facts, 1.5), "spark.memory.fraction": "0.6"}
    return _result("gc_share", value, evidence, conf)


def idle_executors(profile, facts) -> dict:
    available, idle = profile.available_core_seconds, profile.idle_core_seconds
    if not available or idle is None:
        return _result("idle_executors", None, "the log does not say how long executors lived")
    value = idle / available
    evidence = (f"{idle:.1f} of {available:.1f} executor core-seconds were idle ({value:.0%}); "
                f"tasks used {profile.task_seconds or 0:.1f}")
    runtime = facts.get("runtime_s") or 0.0
    fewer = [p for p in facts.get("what_if") or []
             if p["runtime_s"] is not None and p["runtime_s"] <= runtime * (
                 1 + IDLE_RUNTIME_TOLERANCE)]
    best = min((p["executors"] for p in fewer), default=facts.get("executors"))
    fewer_executors = best is not None and best != facts.get("executors")
    if facts.get("local"):
        conf = {"spark.master": f"local[{max(1, int(best or 1))}]"} if fewer_executors else {}
    else:
        conf = {"spark.dynamicAllocation.enabled": "true",
                "spark.dynamicAllocation.executorIdleTimeout": "60s"}
        if fewer_executors:
            conf["spark.executor.instances"] = str(max(1, int(best)))
    if fewer_executors:
        evidence += (f"; {best} {'cores' if facts.get('local') else 'executors'} would finish "
                     f"within {IDLE_RUNTIME_TOLERANCE:.0%} of this runtime")
    return _result("idle_executors", value, evidence, conf)


def executor_memory(profile, facts) -> dict:
    asked = facts.get("executor_memory_bytes")
    peak, kind = facts.get("memory_peak_bytes"), facts.get("memory_peak_kind")
    if not asked or not peak:
        return _result("executor_memory", None, "the log has no memory peak to compare with")
    needed = max(MEMORY_FLOOR, math.ceil(peak * MEMORY_HEADROOM / MEMORY_STEP) * MEMORY_STEP)
    value = max(0.0, 1.0 - needed / asked)
    evidence = (f"peak {kind} {peak / MiB:.0f} MiB of {asked / MiB:.0f} MiB asked; "
                f"{format_memory(needed)} would leave {MEMORY_HEADROOM:.1f}x headroom")
    return _result("executor_memory", value, evidence, {_memory_key(facts): format_memory(needed)})


def partitions(profile, facts) -> dict:
    slots = facts.get("slots") or 1
    widest = max((s for s in profile.stages if (s.get("n_succeeded_tasks") or 0) >= 4 * slots
                  and s.get("task_duration_p50_ms") is not None),
                 key=lambda s: s["n_succeeded_tasks"], default=None)
    too_many = too_few = None
    if widest is not None:
        median_s = max(widest["task_duration_p50_ms"] / 1000.0, 1e-3)
        ratio = 2 * TASK_OVERHEAD_S / median_s      # > 1: tasks shorter than twice the overhead
        too_many = ratio if ratio > 1 else None
    narrow = [s for s in profile.stages if _significant(s, facts)
              and 0 < (s.get("n_tasks") or s.get("n_succeeded_tasks") or 0) < slots]
    if narrow:
        worst = min(narrow, key=lambda s: s.get("n_tasks") or s.get("n_succeeded_tasks"))
        too_few = slots / (worst.get("n_tasks") or worst.get("n_succeeded_tasks"))
    shuffle = profile.totals.get("shuffle_write_bytes") or 0
    by_size = math.ceil(shuffle / TARGET_PARTITION_BYTES) if shuffle else 0
    if too_many is not None and (too_few is None or too_many >= too_few):
        target = max(2 * slots, by_size)
        evidence = (f"shortest tasks: stage {widest['stage_id']} ran "
                    f"{widest['n_succeeded_tasks']} tasks of median "
                    f"{_s(widest['task_duration_p50_ms'])} on {slots} slots")
        conf = {"spark.sql.shuffle.partitions": str(target),
                "spark.sql.adaptive.coalescePartitions.enabled": "true"}
        return _result("partitions", too_many, evidence, conf)
    if too_few is not None:
        count = worst.get("n_tasks") or worst.get("n_succeeded_tasks")
        evidence = (f"fewest tasks: stage {worst['stage_id']} ran {count} task(s) on {slots} "
                    f"slots for {worst['duration_s']:.1f} s")
        target = max(3 * slots, by_size)
        conf = {"spark.sql.shuffle.partitions": str(target),
                "spark.default.parallelism": str(target)}
        return _result("partitions", too_few, evidence, conf)
    return _result("partitions", None, "task counts fit the slots")


def driver_bound(profile, facts) -> dict:
    runtime, driver = facts.get("runtime_s"), facts.get("driver_s")
    if not runtime or driver is None:
        return _result("driver_bound", None, "no runtime or job times in the log")
    value = driver / runtime
    evidence = (f"{driver:.1f} s of {runtime:.1f} s ran no job (driver-side work: planning, "
                f"collect, Python, waiting)")
    conf = {"spark.dynamicAllocation.enabled": "true",
            "spark.dynamicAllocation.executorIdleTimeout": "30s",
            "spark.driver.cores": "2"}
    return _result("driver_bound", value, evidence, conf)


RULES = (task_skew, spill, gc_share, idle_executors, executor_memory, partitions, driver_bound)


# Rules whose measure is a share of the runtime: start-up dominates short applications.
START_UP_BOUND = ("idle_executors", "driver_bound")


def evaluate(profile, facts: dict) -> list[dict]:
    """Every heuristic on one profile, in RULES order."""
    results = [rule(profile, facts) for rule in RULES]
    runtime = facts.get("runtime_s")
    if runtime is not None and runtime < MIN_RUNTIME_FOR_TIME_SHARES_S:
        for index, result in enumerate(results):
            if result["name"] in START_UP_BOUND and result["value"] is not None:
                results[index] = _result(
                    result["name"], None, f"the application ran {runtime:.1f} s, too short to "
                    f"judge: under {MIN_RUNTIME_FOR_TIME_SHARES_S:.0f} s start-up dominates")
    return results


def recommended_conf(results) -> dict:
    """The ``--conf`` values of every firing heuristic merged; on a clash the more severe wins."""
    ranked = sorted((r for r in results if r["severity"] != "none"),
                    key=lambda r: SEVERITIES.index(r["severity"]))
    merged: dict[str, str] = {}
    for result in ranked:              # least severe first, so the most severe writes last
        merged.update(result["conf"])
    return dict(sorted(merged.items()))
