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
``--jobgauge-dry-run``              print the final command and exit
``--jobgauge-off``                  run the command unchanged, record nothing

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

# spark-submit options that take no value; every other option takes one.
FLAGS = {"--verbose", "-v", "--version", "--help", "-h", "--supervise"}
# Dedicated spark-submit flags and the setting each one sets.
FLAG_SETTINGS = {
    "--executor-memory": "spark.executor.memory", "--executor-cores": "spark.executor.cores",
    "--num-executors": "spark.executor.instances", "--driver-memory": "spark.driver.memory",
    "--driver-cores": "spark.driver.cores", "--total-executor-cores": "spark.cores.max",
    "--master": "spark.master", "--deploy-mode": "spark.submit.deployMode",
    "--name": "spark.app.name",
}
OWN_VALUE_OPTIONS = ("--jobgauge-objective", "--jobgauge-workload", "--jobgauge-datasize")
OWN_FLAGS = ("--jobgauge-dry-run", "--jobgauge-off")


def split_own_options(argv: list[str]) -> tuple[dict, list[str]]:
    """Separate jobgauge's options from the spark-submit arguments (kept in order)."""
    own = {"objective": "time", "workload": None, "datasize": None, "dry_run": False,
           "off": False}
    rest, index = [], 0
    while index < len(argv):
        arg = argv[index]
        name, eq, value = arg.partition("=")
        if name in OWN_VALUE_OPTIONS:
            if not eq:
                if index + 1 >= len(argv):
                    raise ValueError(f"{name} needs a value")
                value = argv[index + 1]
                index += 1
            own[name.removeprefix("--jobgauge-")] = value
        elif arg in OWN_FLAGS:
            own[arg.removeprefix("--jobgauge-").replace("-", "_")] = True
        else:
            rest.append(arg)
        index += 1
    if own["objective"] not in ("time", "cost"):
        raise ValueError(f"--jobgauge-objective must be time or cost; got {own['objective']!r}")
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


def tuned_settings(own: dict, args: list[str], store, *, trials: int = 40) -> dict:
    """Tuned settings for the knobs the user did not set (model-guided, instant)."""
    import math

    from jobgauge.models import loads_model
    from jobgauge.profiler.runner import local_cores, memory_gib
    from jobgauge.tuner import Goal, format_setting, spark_sql_space, tune_with_model

    _meta, payload = store.load_model()
    model = loads_model(payload)
    mine = user_settings(args)
    master = mine.get("spark.master", "local[*]")
    cores = local_cores(master) if master.startswith("local") else int(
        mine.get("spark.executor.cores", 1))
    base_row = {"source": "jobgauge-submit", "workload": own["workload"] or workload_name(args),
                "framework": "spark", "datasize": own["datasize"] or "",
                "input_bytes": math.nan,
                "instance_type": f"local[{cores}]" if master.startswith("local") else "cluster",
                "instance_count": 1, "vcpus": float(cores),
                "memory_gib": memory_gib(mine.get("spark.driver.memory", "1g")),
                "hourly_price_usd": math.nan, "runtime_s": math.nan, "completed": True,
                "run_id": "submit", "config": {}}
    space = spark_sql_space()
    result = tune_with_model(model, space, base_row, goal=Goal(own["objective"]),
                             n_trials=trials, seed=0)
    if result.best is None:
        return {}
    return {name: format_setting(name, value) for name, value in result.best.config.items()
            if name not in mine and name.startswith("spark.")}


def _warn(message: str) -> None:
    print(f"jobgauge-submit: warning: {message}", file=sys.stderr, flush=True)


def _record(own, args, settings, started, ended, returncode, eventlog_dir, store) -> None:
    from jobgauge.profiler.eventlog import find_eventlogs, read_eventlog
    from jobgauge.profiler.runner import local_cores, memory_gib

    logs = [p for p in find_eventlogs(eventlog_dir)
            if p.stat().st_mtime >= started.timestamp() - 1] if eventlog_dir.is_dir() else []
    profile = read_eventlog(logs[-1]) if logs else None
    master = settings.get("spark.master", "local[*]")
    cores = local_cores(master) if master.startswith("local") else int(
        settings.get("spark.executor.cores", 1))
    run = {
        "source": "submit", "run_id": f"submit-{started:%Y%m%dT%H%M%S%f}",
        "workload": own["workload"] or workload_name(args), "framework": "spark",
        "engine_version": profile.engine_version if profile else None,
        "datasize": own["datasize"] or "", "instance_type": master if master.startswith(
            "local") else "cluster", "instance_count": 1, "vcpus": cores,
        "memory_gib": memory_gib(settings.get("spark.driver.memory", "1g")),
        "master": master, "time_kind": "application", "started_at": started,
        "ended_at": ended, "runtime_s": (ended - started).total_seconds(),
        "status": "succeeded" if returncode == 0 else "failed",
        "error": None if returncode == 0 else f"spark-submit exited with code {returncode}",
    }
    store.add_run(run, settings, profile=profile)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        own, args = split_own_options(argv)
    except ValueError as exc:
        print(f"jobgauge-submit: error: {exc}", file=sys.stderr)
        return 1
    spark_submit = spark_submit_path()
    if own["off"]:
        return subprocess.call([spark_submit, *args])
    added, store, eventlog_dir = {}, None, None
    mine = user_settings(args)
    if mine.get("spark.eventLog.enabled", "false").lower() == "true":
        eventlog_dir = Path(mine.get("spark.eventLog.dir", "/tmp/spark-events").removeprefix("file:"))
    try:
        from jobgauge.store import open_store

        store = open_store(os.environ.get("JOBGAUGE_STORE"))
        added = tuned_settings(own, args, store)
        if "spark.eventLog.enabled" not in mine and "spark.eventLog.dir" not in mine:
            eventlog_dir = Path.home() / ".local" / "share" / "jobgauge" / "eventlogs"
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
    started = datetime.now(timezone.utc)
    returncode = subprocess.call(command)
    ended = datetime.now(timezone.utc)
    if store is not None:
        try:
            settings = {**mine, **added}
            _record(own, args, settings, started, ended, returncode,
                    eventlog_dir or Path("/nonexistent"), store)
        except Exception as exc:  # noqa: BLE001 - recording must never change the outcome
            _warn(f"run not recorded ({exc.__class__.__name__}: {exc})")
    return returncode


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
