"""``jobgauge run`` and ``jobgauge collect``: real Spark runs, recorded in the store."""

from __future__ import annotations

import json
import sys

from jobgauge.cli_options import add_conf_option, add_datasize_option, parse_key_values


def register(subparsers) -> None:
    """Add ``run`` and ``collect``."""
    parser = subparsers.add_parser(
        "run", help="run a workload once on real Spark and record it",
        description="Run one workload as a real Spark application with event logging on, "
                    "profile its event log and record the run (failed and timed-out runs too).")
    kinds = parser.add_subparsers(dest="suite", metavar="SUITE", required=True)
    tpch = kinds.add_parser("tpch", help="one TPC-H query (data from tpchgen-cli, cached per scale)")
    tpch.add_argument("--query", type=int, required=True, metavar="N", help="1..22")
    add_datasize_option(tpch, default="0.1", tpch=True,
                        help="scale factor, 0.1 or sf0.1 (default 0.1)")
    _common(tpch)
    tpch.set_defaults(handler=run_tpch_command)
    hibench = kinds.add_parser("hibench", help="one HiBench workload")
    hibench.add_argument("--workload", required=True, metavar="NAME")
    add_datasize_option(hibench, default="tiny", old=("--size",),
                        help="HiBench size profile (default tiny)")
    _common(hibench)
    hibench.set_defaults(handler=run_hibench_command)

    hadoop = kinds.add_parser(
        "hadoop", help="one HiBench MapReduce job (wordcount, sort, terasort) in Hadoop's local mode")
    hadoop.add_argument("--workload", required=True, choices=("wordcount", "sort", "terasort"))
    add_datasize_option(hadoop, default="tiny", old=("--size",),
                        choices=("tiny", "medium-local", "small"),
                        help="HiBench size profile (default tiny)")
    add_conf_option(hadoop, old=("--knob",),
                    help="a MapReduce setting (mapreduce.job.reduces=2, combiner=false, ...); "
                         "repeatable")
    hadoop.add_argument("--timeout", type=float, default=600, metavar="SECONDS")
    hadoop.add_argument("--work-dir", metavar="DIR", help="inputs, outputs and the job build")
    hadoop.add_argument("--json", action="store_true")
    hadoop.set_defaults(handler=run_hadoop_command)

    parser = subparsers.add_parser(
        "collect", help="measure workloads x sizes x a configuration design from a plan file",
        description="Run every run a TOML plan asks for that is not measured yet (resumable), "
                    "with a progress bar, and write the plan's run table.")
    parser.add_argument("plan", metavar="PLAN.toml")
    parser.add_argument("--work-dir", metavar="DIR", help="journal and event logs (default var/collect/NAME)")
    parser.add_argument("--data-root", metavar="DIR", help="where generated inputs are cached")
    parser.add_argument("--limit", type=int, metavar="N", help="run at most N more runs")
    parser.add_argument("--dry-run", action="store_true", help="print the planned runs and exit")
    parser.add_argument("--load-threshold", type=float, metavar="LOAD",
                        help="start a run only when other processes' 1-minute load is below "
                             "LOAD (default: the plan's load_threshold, else 0.25 per core)")
    parser.add_argument("--max-load-wait", type=float, metavar="SECONDS",
                        help="wait at most this long for a quiet machine, then run anyway and "
                             "mark the run (default: the plan's load_wait_s, else 300)")
    parser.add_argument("--json", action="store_true")
    parser.set_defaults(handler=collect_command)


def _common(parser):
    add_conf_option(parser, help="a Spark setting; repeatable")
    parser.add_argument("--master", default="local[2]", help="local[N] (default local[2])")
    parser.add_argument("--timeout", type=float, default=600, metavar="SECONDS")
    parser.add_argument("--data-root", metavar="DIR", help="where generated inputs are cached")
    parser.add_argument("--json", action="store_true")


def _run(args, workload, size) -> int:
    from jobgauge.profiler.runner import run_workload
    from jobgauge.store import open_store

    config = parse_key_values(args.conf, settings=True)
    store = open_store(args.store)
    print(f"running {workload} at {size} on {args.master} ...", file=sys.stderr, flush=True)
    run = run_workload(workload, size, config, master=args.master, timeout_s=args.timeout,
                       data_root=args.data_root, store=store)
    profile = run.pop("profile")
    out = {k: run[k] for k in ("id", "workload", "datasize", "status", "runtime_s",
                               "input_bytes", "engine_version", "instance_type", "error")}
    out["config"] = config
    out["eventlog"] = run["eventlog"]
    out["result"] = run.get("result")
    out["profile"] = profile.summary() if profile is not None else None
    if args.json:
        print(json.dumps(out, default=str))
    else:
        print(f"run {out['id']}: {workload} {size} {run['status']}"
              + (f" in {run['runtime_s']:.2f} s" if run["runtime_s"] is not None else ""))
        if profile is not None:
            totals = profile.totals
            print(f"  jobs {profile.n_jobs}, stages {profile.n_stages}, tasks {profile.n_tasks}, "
                  f"input {totals.get('input_bytes')} B, shuffle read "
                  f"{totals.get('shuffle_read_bytes')} B, shuffle write "
                  f"{totals.get('shuffle_write_bytes')} B, executor run time "
                  f"{totals.get('executor_run_time_ms')} ms")
        if run.get("error"):
            print("  error: " + run["error"].splitlines()[0])
    return 0 if run["status"] == "succeeded" else 1


def run_tpch_command(args) -> int:
    from jobgauge.profiler.workloads.tpch import TpchQuery, scale_label

    workload = TpchQuery(args.query)
    return _run(args, workload.name, scale_label(args.datasize))


def run_hibench_command(args) -> int:
    return _run(args, args.workload, args.datasize)


def run_hadoop_command(args) -> int:
    from jobgauge.profiler.hadoop_runner import run_mapreduce_job, store_arguments
    from jobgauge.profiler.runner import DEFAULT_DATA_ROOT
    from jobgauge.store import open_store

    knobs = parse_key_values(args.conf, settings=True)
    store = open_store(args.store)
    print(f"running MapReduce {args.workload} at {args.datasize} in local mode ...",
          file=sys.stderr, flush=True)
    record = run_mapreduce_job(args.workload, args.datasize, knobs,
                               work_dir=args.work_dir or DEFAULT_DATA_ROOT / "hadoop",
                               timeout_s=args.timeout)
    run_key = store.add_run(*store_arguments(record))
    profile = record.get("profile")
    out = {"id": run_key, "workload": args.workload, "datasize": args.datasize,
           "framework": "hadoop", "status": record["status"], "runtime_s": record["runtime_s"],
           "input_bytes": record.get("input_bytes"), "settings": record.get("settings"),
           "error": record.get("error"), "profile": profile.summary() if profile else None}
    if args.json:
        print(json.dumps(out, default=str))
    else:
        print(f"run {run_key}: MapReduce {args.workload} {args.datasize} {record['status']}"
              + (f" in {record['runtime_s']:.2f} s" if record["runtime_s"] is not None else ""))
        if profile is not None:
            print(f"  map tasks {profile.totals.get('map_tasks')}, reduce tasks "
                  f"{profile.totals.get('reduce_tasks')}, input {profile.totals.get('input_bytes')} B,"
                  f" shuffle {profile.totals.get('shuffle_read_bytes')} B")
        if record.get("error"):
            print("  error: " + record["error"].splitlines()[0])
    return 0 if record["status"] == "succeeded" else 1


def collect_command(args) -> int:
    from jobgauge.profiler.collect import collect, load_plan, planned_runs
    from jobgauge.store import open_store

    if args.dry_run:
        runs = planned_runs(load_plan(args.plan))
        for run in runs:
            print(json.dumps(run))
        print(f"{len(runs)} planned runs", file=sys.stderr)
        return 0
    summary = collect(args.plan, work_dir=args.work_dir, data_root=args.data_root,
                      store=open_store(args.store), limit=args.limit,
                      load_threshold=args.load_threshold, load_wait_s=args.max_load_wait)
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"{summary['plan']}: {summary['done']}/{summary['planned']} runs measured "
              f"({summary['added']} now)")
        for workload, cov in summary["noise"].items():
            print(f"  noise (CoV of repeats) {workload}: {cov:.1%}")
        if summary["busy_starts"] or summary["remeasured"]:
            print(f"  {summary['busy_starts']} runs started on a busy machine (waited the "
                  f"longest allowed), {summary['remeasured']} measured again")
    return 0
