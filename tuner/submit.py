"""``jobgauge-submit``: a drop-in ``spark-submit`` that adds tuned settings.

Every argument passes through unchanged.  For each tuned knob the user did not
set (by ``--conf``, ``-c``, the dedicated flags such as ``--executor-memory``,
or a ``--properties-file``), a ``--conf key=value`` is added before the
application.  Event logging is switched on (unless the user configured it) so
the run can be profiled and recorded in the store.

Options of its own, removed before spark-submit sees the command:

``--jobgauge-objective time|cost``  what to tune for (default time)
``--jobgauge-workload NAME``        the workload name to record and predict for
                                    (default: the application file's name)
``--jobgauge-datasize LABEL``       its data size label (e.g. sf1, small)
``--jobgauge-retrain-every N``      retrain the store's model in the background after
                                    every N new runs (default ``$JOBGAUGE_RETRAIN_EVERY``,
                                    else 5; 0: never)
``--jobgauge-dry-run``              print the final command and exit
``--jobgauge-no-tune``              add no tuned settings (Spark's defaults for every
                                    setting the user did not set), but switch event
                                    logging on and record the run as usual: the
                                    defaults' baseline of a tuned job
``--jobgauge-off``                  run the command unchanged, record nothing
``--store URL``                     the run store, as for ``jobgauge --store`` (default
                                    ``$JOBGAUGE_STORE``, else the user's store); only
                                    before the application, so its own arguments pass

If jobgauge fails in any way, the user's command runs unchanged after one
warning line on stderr.  No shell is involved: the command is a list.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

# spark-submit options that take no value (the switches of Spark 4.3's
# SparkSubmitOptionParser); every other option takes one.
FLAGS = {"--verbose", "-v", "--version", "--help", "-h", "--supervise", "--usage-error",
         "--load-spark-defaults"}
# Options that make spark-submit answer a question (print help or its version, kill or ask
# about a submission) instead of running an application: nothing to tune or record.
QUESTION_OPTIONS = {"--help", "-h", "--version", "--usage-error", "--kill", "--status"}
# Dedicated spark-submit flags and the setting each one sets.
FLAG_SETTINGS = {
    "--executor-memory": "spark.executor.memory", "--executor-cores": "spark.executor.cores",
    "--num-executors": "spark.executor.instances", "--driver-memory": "spark.driver.memory",
    "--driver-cores": "spark.driver.cores", "--total-executor-cores": "spark.cores.max",
    "--master": "spark.master", "--deploy-mode": "spark.submit.deployMode",
    "--name": "spark.app.name",
}
OWN_VALUE_OPTIONS = ("--jobgauge-objective", "--jobgauge-workload", "--jobgauge-datasize",
                     "--jobgauge-retrain-every")
OWN_FLAGS = ("--jobgauge-dry-run", "--jobgauge-no-tune", "--jobgauge-off")


def split_own_options(argv: list[str]) -> tuple[dict, list[str]]:
    """Separate jobgauge's options from the spark-submit arguments (kept in order)."""
    own = {"objective": "time", "workload": None, "datasize": None, "dry_run": False,
           "no_tune": False, "off": False, "store": None, "retrain_every": None}
    rest, index = [], 0
    in_application = value_next = False   # past the application / next item is an option's value
    while index < len(argv):
        arg = argv[index]
        name, eq, value = arg.partition("=")
        if name in OWN_VALUE_OPTIONS or (name == "--store" and not in_application
                                         and not value_next):
            if not eq:
                if index + 1 >= len(argv):
                    raise ValueError(f"{name} needs a value")
                value = argv[index + 1]
                index += 1
            own[name.removeprefix("--jobgauge-").removeprefix("--").replace("-", "_")] = value
        elif arg in OWN_FLAGS:
            own[arg.removeprefix("--jobgauge-").replace("-", "_")] = True
        else:
            rest.append(arg)
            if value_next:
                value_next = False
            elif not arg.startswith("-"):
                in_application = True
            elif not in_application:
                value_next = arg not in FLAGS and not eq
        index += 1
    if own["objective"] not in ("time", "cost"):
        raise ValueError(f"--jobgauge-objective must be time or cost; got {own['objective']!r}")
    if own["retrain_every"] is not None and not own["retrain_every"].isdigit():
        raise ValueError(f"--jobgauge-retrain-every must be a whole number >= 0; "
                         f"got {own['retrain_every']!r}")
    return own, rest


def primary_resource_index(args: list[str]) -> int | None:
    """Index of the application (jar or .py) in spark-submit arguments, or None."""
    index = 0
    while index < len(args):
        arg = args[index]
        if not arg.startswith("-"):
            return index
        if arg in FLAGS or "=" in arg:
            index += 1
        else:
            index += 2
    return None


def runs_an_application(args: list[str]) -> bool:
    """Whether spark-submit ``args`` run an application (not ``--help``, ``--version``,
    ``--kill``, ``--status``, and not a command line without an application)."""
    end = primary_resource_index(args)
    if end is None:
        return False
    return not any(arg.partition("=")[0] in QUESTION_OPTIONS for arg in args[:end])


def user_settings(args: list[str]) -> dict:
    """Every setting the user's spark-submit arguments set, by Spark name."""
    settings = {}
    end = primary_resource_index(args)
    options = args if end is None else args[:end]
    index = 0
    while index < len(options):
        arg = options[index]
        name, eq, inline = arg.partition("=")
        if arg in FLAGS:
            index += 1
            continue
        value = inline if eq else (options[index + 1] if index + 1 < len(options) else "")
        if name in ("--conf", "-c"):
            key, _, setting = value.partition("=")
            settings[key.strip()] = setting
        elif name in FLAG_SETTINGS:
            settings[FLAG_SETTINGS[name]] = value
        elif name == "--properties-file" and value:
            settings.update(_read_properties(Path(value)))
        index += 1 if eq else 2
    return settings


def _read_properties(path: Path) -> dict:
    settings = {}
    if not path.is_file():
        return settings
    for line in path.read_text(errors="replace").splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        parts = line.replace("=", " ", 1).split(None, 1)
        settings[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return settings


def build_command(spark_submit: str, args: list[str], added: dict) -> list[str]:
    """The final command: ``added`` settings as --conf before the application."""
    insert_at = primary_resource_index(args)
    if insert_at is None:
        insert_at = len(args)
    extra = []
    for key, value in added.items():
        extra += ["--conf", f"{key}={value}"]
    return [spark_submit, *args[:insert_at], *extra, *args[insert_at:]]


def spark_submit_path() -> str:
    home = os.environ.get("SPARK_HOME")
    if not home:
        import pyspark

        home = str(Path(pyspark.__file__).resolve().parent)
    return str(Path(home) / "bin" / "spark-submit")


def workload_name(args: list[str]) -> str:
    index = primary_resource_index(args)
    if index is None:
        return "spark-submit"
    return Path(args[index]).name.rsplit(".", 1)[0] or "spark-submit"


def submit_job(own: dict, args: list[str], store):
    """The job a spark-submit command runs (a :class:`jobgauge.job.Job`): its job key
    (``--jobgauge-workload``, else the application file's name) on the cluster its
    master and settings describe, with the user's settings.  A job key with runs in
    the store takes the size label (unless ``--jobgauge-datasize`` gives one), input
    bytes and profile of its newest run, so the model predicts this job, not an
    average one.  Returns (job, history) with history as ``job_history`` gives it."""
    from jobgauge.job import Cluster, Job
    from jobgauge.models._default import job_history

    mine = user_settings(args)
    cluster = Cluster.for_master(mine.get("spark.master", "local[*]"), mine)
    workload = own["workload"] or workload_name(args)
    history = job_history(store, workload, "spark")
    job = Job(workload, own["datasize"] or history["datasize"], cluster, mine,
              input_bytes=history["input_bytes"], profile=history["profile"],
              source="jobgauge-submit", run_id="submit")
    return job, history


def recommendation(own: dict, args: list[str], store, *, trials: int = 40, progress=None):
    """The recommendation (``tuner._recommend.Recommendation``) for the knobs the user
    did not set: model-guided, with the store's model (on a fresh store, one trained
    on first need from the shipped runs plus the store's own, ``store_model``).  Its
    ``history_runs`` says how many runs of the job key the store holds."""
    from jobgauge.models._default import (calibration_line, history_calibration,
                                          job_run_frames, store_model)
    from jobgauge.tuner import Goal, job_space, tune_with_model
    from jobgauge.tuner._modes import model_evaluator
    from jobgauge.tuner._recommend import Recommendation, recommend, store_trust_region

    model, meta = store_model(store, progress=progress)
    job, history = submit_job(own, args, store)
    space = job_space(job.cluster)
    space = type(space)(k for k in space if k.name not in job.settings)
    if not len(space):
        return Recommendation(reason="you set every setting the tuner searches",
                              history_runs=history["runs"])
    # settings that failed for this job in the store are never the best (a wrapper run
    # that ran out of memory is not recommended again)
    own_runs, failed = job_run_frames(store, job)
    result = tune_with_model(model, space, job, goal=Goal(own["objective"]),
                             n_trials=trials, seed=0, importance=False, own_failures=failed)
    calibration = history_calibration(store, model, job, runs=own_runs)
    factor = calibration["factor"]
    answer = recommend(result, space,
                       model_evaluator(model, job, factor=factor, own_failures=failed),
                       metrics=meta.get("metrics"), region=store_trust_region(store, job, space))
    answer.settings = {k: v for k, v in answer.settings.items() if k.startswith("spark.")}
    answer.history_runs = history["runs"]
    where = (f"{history['runs']} runs of {job.workload} in the store" if history["runs"]
             else f"no runs of {job.workload} yet: the shipped runs as the prior")
    said = calibration_line(calibration["runs"], job.workload, factor,
                            calibration["busy"], calibration["far"], calibration["held"],
                            calibration["cluster_runs"], calibration["cluster_jobs"],
                            job.cluster.instance_type)
    if said:
        where += f"; {said}"
    answer.reason = f"{answer.reason}; learned from {where}"
    return answer


def tuned_settings(own: dict, args: list[str], store, *, trials: int = 40) -> dict:
    """Tuned settings for the knobs the user did not set (model-guided, instant); empty
    when the model has no evidence that a change helps (see :func:`recommendation`)."""
    return recommendation(own, args, store, trials=trials).settings


def _note(message: str) -> None:
    print(f"jobgauge-submit: {message}", file=sys.stderr, flush=True)


def _warn(message: str) -> None:
    print(f"jobgauge-submit: warning: {message}", file=sys.stderr, flush=True)


def _on_this_machine(mine: dict) -> bool:
    """Whether the job runs on this machine: a local master (Spark's default, where the
    user's settings name none)."""
    return str(mine.get("spark.master", "local[*]")).startswith("local")


def _load_before(mine: dict) -> dict | None:
    """For a job on this machine (a local master), the load of other processes as it
    starts, as ``jobgauge run`` and ``jobgauge collect`` record it (``LoadGuard``, no
    wait: the user's command is never held), and the CPU time of this process's
    children so far; None for a job on a cluster, whose executors run elsewhere."""
    from jobgauge.profiler.runners.collect import default_load_threshold
    from jobgauge.profiler.runners.driver import LoadGuard, children_cpu_s

    if not _on_this_machine(mine):
        return None
    try:
        guard = LoadGuard(threshold=default_load_threshold(), max_wait_s=0.0,
                          read_own_cpu=lambda: 0.0)
        return {**guard.wait_quiet(), "cpu_before_s": children_cpu_s()}
    except (OSError, ValueError):       # no load average here: the run goes unguarded
        return None


def _load_after(load: dict | None) -> dict:
    """The run's guard columns (``runtable.GUARD_COLUMNS``) from :func:`_load_before`:
    its load at the start, and the CPU time spark-submit and its JVM (in local mode,
    the executors too) took since."""
    from jobgauge.profiler.runners.driver import children_cpu_s

    if load is None:
        return {}
    return {"load_at_start": load["load_at_start"], "quiet_start": load["quiet_start"],
            "host_cores": load["host_cores"],
            "cpu_time_s": round(children_cpu_s() - load["cpu_before_s"], 3)}


def _record(own, args, settings, started, ended, returncode, eventlog_dir, store,
            guard=None) -> None:
    """Store the run: its ``runtime_s`` is the application's runtime from the event log it
    wrote (SparkContext start to stop, ``time_kind="application"``), the meaning the
    shipped and imported runs have and the models predict; ``wall_s`` is spark-submit's
    wall time (JVM start and end included; ``started_at`` to ``ended_at``).  Only when the
    run left no readable event log is ``runtime_s`` that wall time, marked
    ``time_kind="wall"``.  ``guard``: the load guard's columns of the run
    (:func:`_load_after`)."""
    from jobgauge.errors import GaugeError
    from jobgauge.job import Cluster

    wall_s = (ended - started).total_seconds()
    profile = None
    try:
        profile = run_eventlog_profile(eventlog_dir, started)
    except GaugeError as exc:
        _note(f"the run's event log could not be read ({exc})")
    app_s = profile.runtime_s if profile is not None and (profile.runtime_s or 0) > 0 else None
    if app_s is None:
        _note("no event log with the application's end: recording spark-submit's wall time "
              "(JVM start included) as the runtime (time_kind=wall)")
    master = settings.get("spark.master", "local[*]")
    cluster = Cluster.for_master(master, settings)
    run = {
        "source": "submit", "run_id": f"submit-{started:%Y%m%dT%H%M%S%f}",
        "workload": own["workload"] or workload_name(args), "framework": "spark",
        "engine_version": profile.engine_version if profile else None,
        "datasize": own["datasize"] or "",
        "input_bytes": profile.input_size() if profile is not None else None,
        "instance_type": cluster.instance_type,
        "instance_count": 1, "vcpus": int(cluster.vcpus),
        "memory_gib": cluster.memory_gib, "master": master,
        "time_kind": "wall" if app_s is None else "application",
        "started_at": started, "ended_at": ended,
        "runtime_s": wall_s if app_s is None else app_s, "wall_s": wall_s,
        "status": "succeeded" if returncode == 0 else "failed",
        "error": None if returncode == 0 else f"spark-submit exited with code {returncode}",
        **(guard or {}),
    }
    store.add_run(run, settings, profile=profile)


def run_eventlog_profile(eventlog_dir: Path, started: datetime):
    """The Profile of the event log a run started at ``started`` wrote in ``eventlog_dir``
    (the newest log there written since), None when there is none."""
    from jobgauge.profiler.readers.eventlog import find_eventlogs, read_eventlog

    if not eventlog_dir.is_dir():
        return None
    logs = [p for p in find_eventlogs(eventlog_dir)
            if p.stat().st_mtime >= started.timestamp() - 1]
    if not logs:
        return None
    return read_eventlog(max(logs, key=lambda p: p.stat().st_mtime))


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        own, args = split_own_options(argv)
    except ValueError as exc:
        print(f"jobgauge-submit: error: {exc}", file=sys.stderr)
        return 1
    spark_submit = spark_submit_path()
    if own["off"] or not runs_an_application(args):   # help, version...: not a run to record
        if own["dry_run"]:
            print(shlex.join([spark_submit, *args]))
            return 0
        return subprocess.call([spark_submit, *args])
    added, store, eventlog_dir = {}, None, None
    mine = user_settings(args)
    if mine.get("spark.eventLog.enabled", "false").lower() == "true":
        eventlog_dir = Path(mine.get("spark.eventLog.dir", "/tmp/spark-events").removeprefix("file:"))
    try:
        from jobgauge.store import open_store

        store = open_store(own["store"])   # None: $JOBGAUGE_STORE, else the user's store
        if not own["no_tune"]:
            answer = recommendation(own, args, store, progress=sys.stderr)
            added = dict(answer.settings)
            if not answer.tuned:
                _note(answer.reason)
        if "spark.eventLog.enabled" not in mine and "spark.eventLog.dir" not in mine:
            from jobgauge.profiler.runners.runner import DEFAULT_EVENTLOG_DIR

            eventlog_dir = DEFAULT_EVENTLOG_DIR
            eventlog_dir.mkdir(parents=True, exist_ok=True)
            added["spark.eventLog.enabled"] = "true"
            added["spark.eventLog.dir"] = str(eventlog_dir)
    except Exception as exc:  # noqa: BLE001 - any jobgauge failure: run the user's command unchanged
        reason = str(exc).splitlines()[0] if str(exc) else ""
        _warn(f"tuning skipped ({exc.__class__.__name__}: {reason}); running your command unchanged")
        added = {}
    command = build_command(spark_submit, args, added)
    if own["dry_run"]:
        print(shlex.join(command))
        return 0
    load = _load_before(mine)
    started = datetime.now(timezone.utc)
    with _cores_to_the_job(mine, store):
        returncode = subprocess.call(command)
    ended = datetime.now(timezone.utc)
    if store is not None:
        try:
            settings = {**mine, **added}
            _record(own, args, settings, started, ended, returncode,
                    eventlog_dir or Path("/nonexistent"), store, _load_after(load))
        except Exception as exc:  # noqa: BLE001 - recording must never change the outcome
            _warn(f"run not recorded ({exc.__class__.__name__}: {exc})")
        else:
            _retrain(own, store)
    return returncode


def _cores_to_the_job(mine: dict, store):
    """A job on this machine (a local master, Spark's default) runs with the store's
    background retraining paused (``models._default.retraining_paused``); any other
    job lets a paused one go on."""
    import contextlib

    if store is None:
        return contextlib.nullcontext()
    try:
        from jobgauge.models._default import resume_retraining, retraining_paused

        if _on_this_machine(mine):
            return retraining_paused(store)
        resume_retraining(store)
    except Exception as exc:  # noqa: BLE001 - the job runs whatever happens here
        _warn(f"background retraining not paused ({exc.__class__.__name__}: {exc})")
    return contextlib.nullcontext()


def _retrain(own: dict, store) -> None:
    """Start the background retraining when enough new runs are in (never waits)."""
    from jobgauge.models._default import retrain_after_runs

    retrain_after_runs(store, every=own["retrain_every"], note=_note, warn=_warn)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
