"""``jobgauge run`` and ``jobgauge collect``: real Spark runs, recorded in the store."""

from __future__ import annotations

import json
import sys

from jobgauge.cli_options import (add_command, add_command_group, add_conf_option,
                                  add_data_root_option, add_datasize_option, add_json_option,
                                  add_load_guard_options, add_master_option,
                                  add_query_key_option, add_query_source_options,
                                  add_timeout_option, finish_run, number, parse_key_values,
                                  print_result)


def register(subparsers) -> None:
    """Add ``run`` and ``collect``."""
    kinds = add_command_group(
        subparsers, "run", help="run a workload once on real Spark and record it",
        description="Run one workload as a real Spark application with event logging on, "
                    "profile its event log and record the run (failed and timed-out runs too).",
        metavar="SUITE")
    tpch = add_command(kinds, "tpch", run_tpch_command,
                       help="one TPC-H query, or your own query over TPC-H's tables (data "
                            "from tpchgen-cli, cached per scale)")
    add_query_source_options(tpch)
    add_query_key_option(tpch)
    add_datasize_option(tpch, default="0.1", tpch=True,
                        help="scale factor, 0.1 or sf0.1 (default 0.1)")
    # a TPC-H query as the corpus measured it, and as the answers its runs calibrate mean
    # it: inside a warm application (a first run in a new one carries the application's
    # warm-up: TPC-H Q3 at SF 0.01 7.8 s, and the form's Q3 at SF 3, calibrated to that
    # one run, went from 5.95 s to 85.3 s)
    _common(tpch, warmups=3)
    hibench = add_command(kinds, "hibench", run_hibench_command, help="one HiBench workload")
    hibench.add_argument("--workload", required=True, metavar="NAME")
    add_datasize_option(hibench, default="tiny", old=("--size",),
                        help="HiBench size profile (default tiny)")
    _common(hibench)

    hadoop = add_command(kinds, "hadoop", run_hadoop_command,
                         help="one HiBench MapReduce job (wordcount, sort, terasort) in Hadoop's "
                              "local mode",
                         json="the run")
    hadoop.add_argument("--workload", required=True, choices=("wordcount", "sort", "terasort"))
    add_datasize_option(hadoop, default="tiny", old=("--size",),
                        choices=("tiny", "medium-local", "small"),
                        help="HiBench size profile (default tiny)")
    add_conf_option(hadoop, old=("--knob",),
                    help="a MapReduce setting (mapreduce.job.reduces=2, combiner=false, ...); "
                         "repeatable")
    add_timeout_option(hadoop, default=600)
    add_load_guard_options(hadoop, default_threshold="0.25 per core",
                           default_wait="0: the run starts at once, its load recorded")
    hadoop.add_argument("--work-dir", metavar="DIR", help="inputs, outputs and the job build")

    parser = add_command(subparsers, "collect", collect_command,
                         help="measure workloads x sizes x a configuration design from a plan file",
                         json="the summary")
    parser.add_argument("plan", metavar="PLAN.toml")
    parser.add_argument("--work-dir", metavar="DIR", help="journal and event logs (default var/collect/NAME)")
    add_data_root_option(parser)
    parser.add_argument("--limit", type=number(1, whole=True), metavar="N",
                        help="run at most N more runs")
    parser.add_argument("--dry-run", action="store_true", help="print the planned runs and exit")
    add_load_guard_options(parser, default_threshold="the plan's load_threshold, else 0.25 "
                                                     "per core",
                           default_wait="the plan's load_wait_s, else 300")
    parser.add_argument("--busy-only", action="store_true",
                        help="measure again only the runs that started on a busy machine, "
                             "none of the runs the plan still lacks")
    parser.add_argument("--any-speed", action="store_true",
                        help="measure even where the machine's CPU probe is more than the "
                             "plan's speed_tolerance (10 %%) off its runs' so far; each run "
                             "keeps its probe (machine_probe_s)")


def _common(parser, warmups: int = 0):
    add_conf_option(parser, help="a Spark setting; repeatable")
    add_master_option(parser)
    add_timeout_option(parser, default=600)
    add_data_root_option(parser)
    add_load_guard_options(parser, default_threshold="0.25 per core",
                           default_wait="0: the run starts at once, its load recorded")
    parser.add_argument(
        "--warmups", type=number(0, whole=True, highest=20), default=warmups, metavar="N",
        help="runs before the measured one, in the same application and not recorded: the "
             "time and profile are then the query's inside a warm application, as "
             "jobgauge's corpus was measured and its answers mean it "
             f"(0 to 20; default {warmups})")
    add_json_option(parser, "the run")


def _run(args, workload, size, *, sql=None) -> int:
    from jobgauge.models._default import retrain_after_runs, retrain_every
    from jobgauge.profiler.runners.runner import run_workload
    from jobgauge.store import open_store

    config = parse_key_values(args.conf, settings=True)
    warmups = args.warmups
    guard = _guard(args)
    store = open_store(args.store)
    print(f"running {workload} at {size} on {args.master}"
          f"{f' after {warmups} warm-up runs' if warmups else ''} ...", file=sys.stderr,
          flush=True)
    run = run_workload(workload, size, config, master=args.master, timeout_s=args.timeout,
                       data_root=args.data_root, store=store, sql=sql, warmups=warmups,
                       guard=guard)
    if sql and run["status"] == "succeeded":   # one run of a query of one's own teaches
        retrain_after_runs(store, every=min(retrain_every(), 1))    # its profile: retrain
    profile = run.pop("profile")
    out = {k: run[k] for k in ("id", "workload", "datasize", "status", "runtime_s",
                               "input_bytes", "engine_version", "instance_type", "error")}
    out.update({k: run.get(k) for k in ("load_at_start", "quiet_start", "cpu_time_s")})
    out["config"] = config
    out["eventlog"] = run["eventlog"]
    out["result"] = run.get("result")
    out["profile"] = profile.summary() if profile is not None else None
    lines = [f"run {out['id']}: {workload} {size} {run['status']}{_took(run['runtime_s'])}"]
    if profile is not None:
        lines.append(_profile_line(profile))
    if run.get("load_at_start") is not None:
        lines.append(_load_line(run, guard["load_threshold"]))
    if sql and run["status"] == "succeeded":
        lines.append(f"  your query is the job {workload}: the web form and API answer the "
                     f"same text from this run once the model has retrained on it")
    return finish_run(args.json, out, lines, status=run["status"], error=run.get("error"))


def _profile_line(profile) -> str:
    """The run's profile in one line: its jobs, stages and tasks, and the totals its event
    log holds (a run cut short may hold none of some)."""
    from jobgauge.units import human_size

    totals = profile.totals
    parts = [f"jobs {profile.n_jobs}, stages {profile.n_stages}, tasks {profile.n_tasks}"]
    for key, name in (("input_bytes", "input"), ("shuffle_read_bytes", "shuffle read"),
                      ("shuffle_write_bytes", "shuffle write")):
        if totals.get(key) is not None:
            parts.append(f"{name} {human_size(totals[key])}")
    if totals.get("executor_run_time_ms") is not None:
        parts.append(f"executor run time {totals['executor_run_time_ms'] / 1000:.2f} s")
    return "  " + ", ".join(parts)


def _guard(args) -> dict:
    """The measurement guard of one run (``--load-threshold``, ``--max-load-wait``, checked
    as the command line is read): ``collect.run_guard``."""
    from jobgauge.profiler.runners.collect import run_guard

    return run_guard(args.load_threshold, args.max_load_wait)


def _load_line(run: dict, threshold: float) -> str:
    """What the load guard saw at the measured run's start: the load of other processes,
    and, where the machine was busy, that the time may be theirs as much as the job's."""
    load = run["load_at_start"]
    line = f"  load {load:.2f} from other processes at its start (1-minute average)"
    if run.get("quiet_start") is False:
        line += (f": a busy machine (quiet below {threshold:g}), so the time may be slower "
                 f"than the job is; --max-load-wait SECONDS waits for a quiet one first")
    return line


def _took(runtime_s) -> str:
    """`` in 12.34 s`` of a measured runtime, nothing for a run without one."""
    return "" if runtime_s is None else f" in {runtime_s:.2f} s"


def run_tpch_command(args) -> int:
    """Run one TPC-H query (--query N), or your own query over TPC-H's tables (--sql TEXT
    or --file PATH), on Spark (input generated by tpchgen-cli, cached per scale), and
    record it.

    Your own query is recorded as a job of yours, under the key the web form gives the
    same text pasted (sql-<hash of the text>, or --workload NAME), and the store's model
    retrains on it in the background (a fresh store's model is trained on first need):
    questions about that query then replay its own profile, not those of the measured
    queries whose plans read most alike."""
    from jobgauge.profiler.runners._hive_record import asked_query
    from jobgauge.units import scale_label

    from jobgauge.profiler.readers._hive_session import check_statement

    workload, sql, tpch = asked_query(args)
    if not tpch:    # one query, as the form takes it: no DDL run over the TPC-H views
        check_statement(sql)
    return _run(args, workload, scale_label(args.datasize), sql=None if tpch else sql)


def run_hibench_command(args) -> int:
    """Run one HiBench workload on Spark at a size profile and record it."""
    return _run(args, args.workload, args.datasize)


def run_hadoop_command(args) -> int:
    """Run one HiBench MapReduce job (wordcount, sort or terasort) in Hadoop's local mode,
    profile its job history and record it, with the load of other processes at its start
    and its JVM's CPU time (the collector's guard, ``collect.hadoop_load_guard``)."""
    from jobgauge.profiler.runners.collect import (GUARD_FIELDS, hadoop_load_guard,
                                                   measure_mapreduce)
    from jobgauge.profiler.runners.hadoop_runner import store_arguments
    from jobgauge.profiler.runners.runner import DEFAULT_DATA_ROOT
    from jobgauge.store import open_store

    knobs = parse_key_values(args.conf, settings=True)
    guard_settings = _guard(args)
    store = open_store(args.store)
    print(f"running MapReduce {args.workload} at {args.datasize} in local mode ...",
          file=sys.stderr, flush=True)
    measured = hadoop_load_guard(guard_settings).wait_quiet()
    record = measure_mapreduce(args.workload, args.datasize, knobs,
                               work_dir=args.work_dir or DEFAULT_DATA_ROOT / "hadoop",
                               timeout_s=args.timeout)
    record.update(measured)
    row, settings, profile = store_arguments(record)
    row.update({key: record[key] for key in GUARD_FIELDS if key in record})
    run_key = store.add_run(row, settings, profile)
    out = {"id": run_key, "workload": args.workload, "datasize": args.datasize,
           "framework": "hadoop", "status": record["status"], "runtime_s": record["runtime_s"],
           "input_bytes": record.get("input_bytes"), "settings": record.get("settings"),
           "error": record.get("error"), "profile": profile.summary() if profile else None,
           **{key: record.get(key) for key in ("load_at_start", "quiet_start", "cpu_time_s")}}
    lines = [f"run {run_key}: MapReduce {args.workload} {args.datasize} {record['status']}"
             f"{_took(record['runtime_s'])}"]
    if profile is not None:
        totals = profile.totals
        lines.append(f"  map tasks {totals.get('map_tasks')}, reduce tasks "
                     f"{totals.get('reduce_tasks')}, input {totals.get('input_bytes')} B, "
                     f"shuffle {totals.get('shuffle_read_bytes')} B")
    lines.append(_load_line(record, guard_settings["load_threshold"]))
    return finish_run(args.json, out, lines, status=record["status"], error=record.get("error"))


def collect_command(args) -> int:
    """Run every run a TOML plan asks for that is not measured yet (resumable), with a progress
    bar, and write the plan's run table."""

    from jobgauge.profiler.runners.collect import collect, load_plan, planned_runs
    from jobgauge.store import open_store

    if args.dry_run:
        runs = planned_runs(load_plan(args.plan))
        for run in runs:
            print(json.dumps(run))
        print(f"{len(runs)} planned runs", file=sys.stderr)
        return 0
    summary = collect(args.plan, work_dir=args.work_dir, data_root=args.data_root,
                      store=open_store(args.store), limit=args.limit,
                      load_threshold=args.load_threshold, load_wait_s=args.max_load_wait,
                      busy_only=args.busy_only, any_speed=args.any_speed)
    lines = [f"{summary['plan']}: {summary['done']}/{summary['planned']} runs measured "
             f"({summary['added']} now)"]
    if summary["machine_probe_s"] is not None:
        table = summary["table_probe_s"]
        lines.append(f"  machine speed: the CPU probe took {summary['machine_probe_s']:.3f} s"
                     + (f" (the plan's runs: {table:.3f} s)" if table is not None else ""))
    lines += [f"  repeat noise {workload}: {noise:.1%}"
              for workload, noise in summary["noise"].items()]
    if summary["busy_starts"] or summary["remeasured"]:
        lines.append(f"  {summary['busy_starts']} runs started on a busy machine (waited the "
                     f"longest allowed), {summary['remeasured']} measured again")
    if summary["stopped"]:
        lines.append(f"  {summary['stopped']}")
    print_result(args.json, summary, lines)
    return 1 if summary["stopped"] else 0
