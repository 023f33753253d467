"""Run workloads as real Spark applications and record what happened.

``run_batch`` starts one Spark application (a child process running
``jobgauge.profiler.runners.driver``) for a list of items that share the settings
needing a restart (master, executor layout, serializer, codec, memory
fraction, parallelism: the knob table's restart levels, ``jobgauge.knobs``);
SQL settings change between items inside the same application.  Every item
gets its own timeout; the whole application gets a hard limit after which the
child's process group is killed, and the item that was running is recorded as
timed out.  Results stream back line by line, so a crash loses nothing
already measured.

``run_workload`` is the one-run convenience used by ``jobgauge run``: it runs,
profiles the event log, and records the run in the store.  It starts a cold
application per run; :class:`WarmRunner` (``_warm``, imported as
``jobgauge.profiler.WarmRunner``) runs one item at a time in a long-lived warm
application, as the corpus was measured.  ``_warm`` builds on this module,
never the other way round.
"""

from __future__ import annotations

import json
import os
import re
import signal
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path

from jobgauge.cli_options import SETTING_NAME
from jobgauge.errors import UsageError
from jobgauge.job import local_cores, memory_gib, resources  # noqa: F401 - re-exported
from jobgauge.knobs import needs_restart
from jobgauge.runtable import GUARD_COLUMNS

DEFAULT_DATA_ROOT = Path(os.environ.get("JOBGAUGE_DATA", Path.home() / ".cache" / "jobgauge" / "data"))
DEFAULT_EVENTLOG_DIR = Path.home() / ".local" / "share" / "jobgauge" / "eventlogs"
#: The run-table ``source`` of the runs jobgauge's runners measure (``jobgauge run``,
#: ``jobgauge collect``): its TPC-H queries and HiBench jobs as jobgauge runs them.
RUNNER_SOURCE = "local"


def split_config(config: dict) -> tuple[dict, dict]:
    """(application settings, SQL session settings) of a run's configuration, by the
    restart levels of the knob table (``jobgauge.knobs.needs_restart``)."""
    static, session = {}, {}
    for key, value in config.items():
        if not SETTING_NAME.match(str(key)):
            raise UsageError(f"invalid configuration key {key!r}")
        (static if needs_restart(key) else session)[key] = str(value)
    return static, session


def _read_new_lines(path: Path, offset: int) -> tuple[list[dict], int]:
    if not path.exists():
        return [], offset
    with open(path, encoding="utf-8") as handle:
        handle.seek(offset)
        chunk = handle.read()
    complete, _, _rest = chunk.rpartition("\n")
    if not complete:
        return [], offset
    records = [json.loads(line) for line in complete.split("\n") if line.strip()]
    return records, offset + len(complete.encode("utf-8")) + 1


def run_batch(items: list[dict], *, master: str = "local[2]", spark_conf: dict | None = None,
              eventlog_dir=None, work_dir=None, app_name: str = "jobgauge",
              startup_timeout_s: float = 120.0, on_start=None, on_record=None,
              load_guard: dict | None = None, gc_before_run: bool = False) -> dict:
    """Run ``items`` in one Spark application; return {"app": ..., "records": [...]}.

    Each item: {"key", "workload", "data_path", "sql_conf", "timeout_s", "warmup"}.
    ``on_start(app)`` is called once the application is up (app id, Spark version);
    ``on_record(record)`` as each item ends (warm-ups included).
    ``load_guard``: the keyword arguments of :class:`~jobgauge.profiler.runners.driver.LoadGuard`
    (``threshold``, ``max_wait_s``, ``remeasure_ratio``, ``slots``): each measured item
    waits for a quiet machine and records its load and CPU time.  ``gc_before_run``: the
    driver's JVM (in local mode the executors' too) collects its garbage in full before
    each measured item, so that no run starts on the heap an earlier one left (on TPC-H
    SF 1 the runs came out slower and no steadier: ``tpch-sf1-v6``, data/README.md).
    """
    work_dir = Path(work_dir or tempfile.mkdtemp(prefix="jobgauge-run-"))
    work_dir.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex[:8]
    results_path = work_dir / f"results-{token}.jsonl"
    spec = {"master": master, "spark_conf": dict(spark_conf or {}), "app_name": app_name,
            "eventlog_dir": str(eventlog_dir) if eventlog_dir else None,
            "results_path": str(results_path), "output_root": str(work_dir / "output"),
            "items": items, "load_guard": load_guard, "gc_before_run": gc_before_run}
    spec_path = work_dir / f"spec-{token}.json"
    spec_path.write_text(json.dumps(spec))
    stderr_path = work_dir / f"driver-{token}.log"
    per_item = 30.0
    if load_guard:   # a wait for quiet, and maybe a second measurement with its own wait
        per_item += 2 * float(load_guard.get("max_wait_s", 300))
    repeats = 2 if load_guard and load_guard.get("remeasure_ratio") else 1
    limit = startup_timeout_s + sum(float(i.get("timeout_s", 600)) * repeats + per_item
                                    for i in items)
    from jobgauge.profiler.runners.driver import start_driver

    with open(stderr_path, "wb") as stderr:
        child = start_driver(spec_path, log=stderr)  # dies with this process, JVM included
        app, records, offset, killed, begun = {}, [], 0, False, {}
        deadline = time.monotonic() + limit
        try:
            while True:
                done = child.poll() is not None
                new, offset = _read_new_lines(results_path, offset)
                for record in new:
                    if record.get("event") == "started":
                        app = record
                        if on_start:
                            on_start(app)
                    elif record.get("event") == "begin":
                        begun[record["key"]] = float(record["at"])
                    elif record.get("event") == "item":
                        records.append(record)
                        if on_record:
                            on_record(record)
                if done:
                    break
                if time.monotonic() > deadline:
                    killed = True
                    os.killpg(child.pid, signal.SIGKILL)
                    child.wait()
                    break
                time.sleep(0.2)
        except BaseException:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
            raise
    # The item that was running when the application died or was killed.
    finished = {r["key"] for r in records}
    pending = [i for i in items if i["key"] not in finished]
    if pending and (killed or child.returncode != 0):
        tail = stderr_path.read_text(errors="replace")[-3000:].strip()
        reason = ("application killed after its time limit" if killed
                  else f"application exited with code {child.returncode}")
        # how long it ran before the application died: a failed run's time, a lower
        # bound as for any failure (None when it had not begun: not a measurement)
        began = begun.get(pending[0]["key"])
        record = {"event": "item", "key": pending[0]["key"], "workload": pending[0]["workload"],
                  "warmup": bool(pending[0].get("warmup")),
                  "status": "timed_out" if killed else "failed",
                  "error": f"{reason}\n{_last_error_lines(tail)}".strip(),
                  "runtime_s": None if began is None else round(time.time() - began, 4),
                  "job_ids": [], "started_at": None, "ended_at": None}
        records.append(record)
        if on_record:
            on_record(record)
    return {"app": app, "records": records, "returncode": child.returncode, "killed": killed,
            "log": str(stderr_path),
            "eventlog": find_eventlog(eventlog_dir, app.get("app_id")) if eventlog_dir else None}


def _last_error_lines(text: str) -> str:
    lines = [l for l in text.splitlines() if l.strip()]
    interesting = [l for l in lines if re.search(r"(Error|Exception|error:)", l)]
    return "\n".join((interesting or lines)[-5:])[:2000]


def find_eventlog(eventlog_dir, app_id: str | None):
    """The event log (file, or rolling ``eventlog_v2_*`` folder) Spark wrote for ``app_id``."""
    if not app_id or not eventlog_dir:
        return None
    base = Path(eventlog_dir)
    candidates = sorted(base.glob(f"eventlog_v2_{app_id}*")) + sorted(base.glob(f"{app_id}*"))
    candidates = [c for c in candidates if not c.name.endswith(".inprogress")] or candidates
    return str(candidates[0]) if candidates else None


def application_profile(eventlog_path):
    """Profile of a whole application from its event log (None if no log was written).

    :func:`query_profile` cuts one query's part out of it."""
    if not eventlog_path:
        return None
    from jobgauge.profiler.readers.eventlog import read_eventlog

    return read_eventlog(eventlog_path)


def _parse_time(text):
    return datetime.fromisoformat(text) if text else None


def run_record(record: dict, *, item: dict, resources_: dict, engine_version: str | None,
               size: str, input_bytes: int | None, config: dict, source: str = RUNNER_SOURCE,
               run_id: str | None = None) -> dict:
    """A store/run-table run from one driver result line."""
    return {
        "source": source, "run_id": run_id or item["key"], "workload": item["workload"],
        "framework": "spark", "engine_version": engine_version, "datasize": size,
        "input_bytes": input_bytes, "hourly_price_usd": None,
        "query_text": item.get("query_text"),
        "time_kind": "query", "started_at": _parse_time(record.get("started_at")),
        "ended_at": _parse_time(record.get("ended_at")), "runtime_s": record.get("runtime_s"),
        "status": record["status"], "completed": record["status"] == "succeeded",
        "error": record.get("error"), "config": dict(config), **resources_,
        # the load guard's record of the run, where it had one
        **{key: record[key] for key in GUARD_COLUMNS if key in record},
    }


def run_workload(workload_name: str, size: str, config: dict | None = None, *,
                 master: str = "local[2]", timeout_s: float = 600, data_root=None,
                 eventlog_dir=None, store=None, source: str = RUNNER_SOURCE, cluster=None,
                 sql: str | None = None, warmups: int = 0, guard: dict | None = None) -> dict:
    """Run one workload once as a real Spark application, profile it, record it.

    Returns the run (a dict in the store's shape, plus ``profile`` and
    ``eventlog``).  A failed or timed-out run is recorded too, never lost.
    ``cluster`` is a started :class:`~jobgauge.profiler.runners.cluster.StandaloneCluster`
    to run on instead of ``master``.  ``sql``: a user's own query over the TPC-H tables,
    recorded as ``workload_name`` (``get_workload``).  ``warmups``: runs of it before
    the measured one in the same application, not recorded: the time and the profile
    are then the query's inside a warm application, as the corpus was measured.
    ``guard``: the measurement guard's settings, as a collection plan has them
    (``load_threshold``, ``load_wait_s``, ``remeasure_ratio``: ``collect.load_guard_for``):
    the measured run waits for a quiet machine, and its load at the start
    (``load_at_start``, ``quiet_start``) and CPU time (``cpu_time_s``) are recorded.
    """
    from jobgauge.profiler.runners.collect import load_guard_for
    from jobgauge.profiler.workloads import get_workload

    workload = get_workload(workload_name, sql=sql)
    if size not in workload.sizes:
        raise UsageError(f"{workload_name} has sizes {', '.join(workload.sizes)}; got {size!r}")
    config = dict(config or {})
    static, session = split_config(config)
    if cluster is not None:
        cluster.check_fits(static)
        master = cluster.master_url
    resources_ = resources(master, static, cluster)
    data_root = Path(data_root or DEFAULT_DATA_ROOT)
    data_path = workload.prepare(data_root, size)
    eventlog_dir = Path(eventlog_dir or DEFAULT_EVENTLOG_DIR)
    eventlog_dir.mkdir(parents=True, exist_ok=True)
    key = f"{workload_name}-{size}-{datetime.now():%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
    item = {"key": key, "workload": workload_name, "data_path": str(data_path),
            "sql_conf": session, "timeout_s": timeout_s,
            "query_text": getattr(workload, "sql", None)}
    warm = [{**item, "key": f"{key}-warmup{n + 1}", "warmup": True} for n in range(warmups)]
    load_guard = None if guard is None else load_guard_for(
        guard, int(resources_["executor_instances"] * resources_["executor_cores"]), master,
        cluster)
    outcome = run_batch([*warm, item], master=master, spark_conf=static,
                        eventlog_dir=eventlog_dir, app_name=f"jobgauge {workload_name} {size}",
                        load_guard=load_guard)
    record = _measured_record(outcome["records"], key)
    run = run_record(record, item=item, resources_=resources_,
                     engine_version=outcome["app"].get("spark_version"), size=size,
                     input_bytes=workload.input_bytes(data_path), config=config, source=source)
    profile = None
    try:
        profile = application_profile(outcome["eventlog"])
        if warm and profile is not None:     # the measured run's jobs, not the warm-ups'
            profile = query_profile(profile, record.get("job_ids") or [],
                                    runtime_s=record.get("runtime_s"))
    except Exception as exc:  # noqa: BLE001 - a broken log must not lose the measured run
        run["error"] = ((run.get("error") or "") + f"\nprofile not read: {exc}").strip()
    if store is not None:
        run["id"] = store.add_run(run, config, profile=profile)
    run["profile"] = profile
    run["eventlog"] = outcome["eventlog"]
    run["result"] = record.get("result")
    return run


def _measured_record(records: list, key: str) -> dict:
    """The result of the measured item ``key`` of a batch; when the application ended
    before it ran, the failure that ended it (in a warm-up run, said), never nothing."""
    for record in records:
        if record["key"] == key:
            return record
    if records and records[-1]["status"] != "succeeded":
        last = records[-1]
        return {**last, "key": key, "warmup": False, "runtime_s": None,
                "error": f"a warm-up run {last['status'].replace('_', ' ')}: "
                         f"{last.get('error') or ''}".strip()}
    return {"status": "failed", "error": "the application produced no result",
            "runtime_s": None}


_SUMMED = ("input_bytes", "input_records", "output_bytes", "output_records", "shuffle_read_bytes",
           "shuffle_read_records", "shuffle_write_bytes", "shuffle_write_records",
           "memory_spill_bytes", "disk_spill_bytes", "executor_run_time_ms",
           "executor_cpu_time_ms", "jvm_gc_time_ms")


def query_profile(app_profile, job_ids, *, runtime_s=None):
    """The part of an application's profile made by the jobs ``job_ids`` (one query's run).

    Stages shared by several queries are attributed to the first job that ran them;
    totals are sums over the selected stages' attempts.
    """
    from jobgauge.profiler.readers.profile import Profile

    wanted = set(job_ids)
    jobs = [j for j in app_profile.jobs if j.get("job_id") in wanted]
    stage_ids = {s for j in jobs for s in j.get("stage_ids", ())
                 if s not in set(j.get("skipped_stage_ids") or ())}
    stages = [s for s in app_profile.stages if s.get("stage_id") in stage_ids]
    totals = {name: sum((s.get(name) or 0) for s in stages) for name in _SUMMED}
    sql_ids = {j.get("sql_execution_id") for j in jobs} - {None}
    starts = [j["submission_ms"] for j in jobs if j.get("submission_ms") is not None]
    ends = [j["completion_ms"] for j in jobs if j.get("completion_ms") is not None]
    return Profile(
        format=app_profile.format, engine=app_profile.engine,
        engine_version=app_profile.engine_version, app_id=app_profile.app_id,
        app_name=app_profile.app_name, user=app_profile.user,
        status="succeeded" if jobs and all(j.get("result") == "succeeded" for j in jobs)
        else ("failed" if jobs else None),
        start_ms=min(starts) if starts else None, end_ms=max(ends) if ends else None,
        runtime_s=runtime_s, n_jobs=len(jobs), n_stages=len(stages),
        n_tasks=sum(s.get("n_tasks") or 0 for s in stages), totals=totals, jobs=jobs,
        stages=stages, sql=[q for q in app_profile.sql if q.get("execution_id") in sql_ids],
        executors=app_profile.executors,
        critical_path_s=round(sum(j.get("critical_path_s") or 0 for j in jobs), 3),
        idle_core_seconds=None, config=app_profile.config, source=app_profile.source)


__all__ = ["application_profile", "find_eventlog", "local_cores", "memory_gib", "needs_restart",
           "query_profile", "resources", "run_batch",
           "run_record", "run_workload", "split_config"]
