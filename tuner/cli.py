"""Subcommands of the tuner area (registered by jobgauge.cli): ``tune``.

This module stays light to import: Optuna, pandas and the models are loaded
inside the handler.
"""

from __future__ import annotations

import json
import sys
import time

from jobgauge.cli_options import (add_command, add_data_root_option, add_datasize_option,
                                  add_master_option, add_model_options, add_timeout_option,
                                  number, parse_key_values)
from jobgauge.errors import UsageError


def register(subparsers) -> None:
    """Add this area's subcommands to the jobgauge parser."""
    parser = add_command(subparsers, "tune", _tune,
                         help="find the fastest or cheapest settings and cluster for a job",
                         json="one object")
    parser.add_argument("--workload", required=True, help="the job to tune, e.g. tpch-q1")
    add_datasize_option(parser, help="size label, e.g. sf0.1 or huge", scale=True)
    parser.add_argument("--framework", default=None, help="engine as in run tables (spark, hadoop)")
    mode = parser.add_argument_group("mode")
    mode.add_argument("--replay", metavar="FILE.csv", default=None,
                      help="replay: trials look up measured runs of this run table")
    mode.add_argument("--history", metavar="FILE.csv", nargs="+", default=[],
                      help="run tables of other workloads to learn from (rows of the tuned "
                           "workload in them are ignored)")
    mode.add_argument("--where", metavar="KEY=VALUE", action="append", default=[],
                      help="replay only runs whose job parameters (config_json) have this value")
    mode.add_argument("--measure", action="store_true",
                      help="measured: every trial is a real run through the runner")
    add_master_option(mode, help="Spark master of the runs (--measure) or of the job "
                                 "(local[N]: the runs' instance for the model); default local[2]")
    add_data_root_option(mode, what="inputs (--measure)")
    add_timeout_option(mode, default=600.0, what="--measure: a run counts as censored")
    add_model_options(mode, file_help="model-guided: model file (default: the store's newest "
                                      "model)", name_help="model-guided: a model in the store")
    goal = parser.add_argument_group("goal")
    goal.add_argument("--objective", choices=("time", "cost", "both"), default=None,
                      help="minimise runtime, cost (runtime x nodes x hourly price) or both "
                           "(Pareto front); default time, cost for --replay")
    goal.add_argument("--deadline", type=number(above=True), default=None, metavar="SECONDS",
                      help="runs slower than this are infeasible")
    goal.add_argument("--budget", type=number(above=True), default=None, metavar="USD",
                      help="runs dearer than this are infeasible")
    search = parser.add_argument_group("search")
    search.add_argument("--trials", type=number(1, whole=True), default=None, metavar="N",
                        help="trials (default 50 model-guided, 10 replay, 5 measured)")
    search.add_argument("--seed", type=int, default=0, help="seed of the sampler (default 0)")
    search.add_argument("--sampler", default="auto",
                        choices=("auto", "transfer", "tpe", "gp", "random", "nsga2"),
                        help="auto: transfer for replay, TPE (NSGA-II for both) otherwise")
    search.add_argument("--engine", choices=("spark", "hive", "mapreduce"), default="spark",
                        help="which engine's knobs to search (default spark)")
    search.add_argument("--level", choices=("query", "job", "all"), default="query",
                        help="query: SQL session knobs; job: executors and job settings; "
                             "all: both (default query)")
    search.add_argument("--strategy", choices=("joint", "hierarchical"), default="joint",
                        help="two levels at once, or job level first then query level")
    search.add_argument("--confirm", type=number(0, whole=True), default=0, metavar="N",
                        help="--measure: N more runs after the trials re-measure the leading "
                             "configurations (Spark's defaults among them) and the lowest "
                             "median wins (default 0)")
    search.add_argument("--tune-instances", action="store_true",
                        help="also search instance type and count over the catalog")
    search.add_argument("--instance-type", action="append", default=[], metavar="TYPE",
                        help="node type (repeat to give the choices with --tune-instances)")
    search.add_argument("--instance-count", type=number(1, whole=True), default=None,
                        metavar="N",
                        help="nodes (the most nodes with --tune-instances)")
    search.add_argument("--catalog", metavar="FILE", default=None,
                        help="extra instance types (CSV/JSON: instance_type, vcpus, memory_gib, "
                             "hourly_price_usd)")
    search.add_argument("--study-name", default=None, help="Optuna study name")
    search.add_argument("--study-storage", default=None, metavar="project|memory|URL",
                        help="where the study is kept: the project database (default, "
                             "not for --replay), memory, or a database URL")


# ------------------------------------------------------------------- helpers

def _project_url(args) -> str:
    from jobgauge.store import default_url
    from jobgauge.tuner._storage import storage_url

    return storage_url(args.store or default_url())


def _storage(args, default: str):
    choice = args.study_storage or default
    if choice == "memory":
        return None
    if choice == "project":
        return _project_url(args)
    return choice


def _study_name(args, mode: str) -> str:
    parts = ["tune", mode, args.workload, args.datasize or "", time.strftime("%Y%m%d-%H%M%S")]
    return args.study_name or "-".join(p for p in parts if p)


def _read_tables(paths, *, label):
    from jobgauge.runtable import read_run_tables
    from jobgauge.tuner._errors import EmptyRunTable

    frame = read_run_tables(paths)
    if frame.empty:
        raise EmptyRunTable(f"the {label} {', '.join(str(p) for p in paths)} has no rows")
    return frame


def _fmt(value, unit):
    if value is None:
        return "-"
    if isinstance(value, list):
        return " / ".join(_fmt(v, u) for v, u in zip(value, ("s", "$")))
    return f"${value:.4f}" if unit == "$" else f"{value:.1f} s"


def _print_json(payload) -> None:
    json.dump(payload, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


# -------------------------------------------------------------------- handler

def _tune(args) -> int:
    """Search execution settings (Spark, Spark SQL/Hive session, MapReduce knobs) and cluster
    configurations with Optuna.  Three modes share one search: model-guided (default: a
    runtime model predicts every trial), --measure (every trial is a real run) and --replay
    FILE (every trial looks up a measured run in a run table)."""
    if args.replay and args.measure:
        raise UsageError("--replay and --measure are different modes; give one")
    if args.confirm and not args.measure:
        raise UsageError("--confirm re-runs configurations for real; it needs --measure")
    if args.replay:
        return _tune_replay(args)
    if args.measure:
        return _tune_measured(args)
    return _tune_model(args)


def _tune_replay(args) -> int:
    from jobgauge.tuner._modes import tune_replay

    frame = _read_tables([args.replay], label="run table")
    history = _read_tables(args.history, label="history") if args.history else None
    objective = args.objective or "cost"
    result = tune_replay(
        frame, args.workload, framework=args.framework, datasize=args.datasize,
        where=parse_key_values(args.where, "--where"), objective=objective,
        n_trials=args.trials or 10,
        seed=args.seed, history=history, sampler=args.sampler,
        deadline_s=args.deadline, budget_usd=args.budget,
        storage=_storage(args, "memory"), study_name=args.study_name,
        progress=not args.json)
    payload = result.to_dict()
    if args.json:
        _print_json(payload)
        return 0
    unit = "s" if objective == "time" else "$"
    print(f"# replay of {args.workload} from {args.replay}: {len(result.trials)} trials, "
          f"objective {objective}")
    for trial in result.trials:
        flag = " (censored)" if trial.censored else ("" if trial.feasible else " (infeasible)")
        print(f"{trial.number + 1:3d}  {_fmt(trial.value, unit):>12}{flag}  "
              + json.dumps(trial.config, sort_keys=True))
    print(f"best: {_fmt(result.best.value, unit)}  "
          + json.dumps(result.best.config, sort_keys=True))
    return 0


def _catalog(args):
    from jobgauge.tuner._catalog import load_catalog

    return load_catalog(args.catalog)


def _space(args, catalog):
    from jobgauge.tuner._space import build_space, spark_sql_space

    levels = {"query": ("query",), "job": ("job",), "all": ("query", "job")}[args.level]
    if args.measure and args.engine == "spark" and _is_local(args) and not args.tune_instances \
            and not args.instance_type:
        from jobgauge.tuner._space import local_spark_space

        return local_spark_space(args.master, levels)   # what local runs (and the corpus) vary
    if args.engine == "spark" and args.level == "query":
        space = spark_sql_space()
        extra = None
        if args.tune_instances:
            extra = build_space("spark", ("instance",), names=[],
                                instance_types=_instance_choices(args, catalog),
                                max_instances=args.instance_count or 16)
        return space if extra is None else type(space)([*space, *extra])
    if args.engine == "mapreduce" and args.level == "query":
        levels = ("job",)    # MapReduce has no session level: its knobs are job settings
    if args.tune_instances:
        levels = (*levels, "instance")
    return build_space(args.engine, levels,
                       instance_types=_instance_choices(args, catalog)
                       if args.tune_instances else None,
                       max_instances=args.instance_count or 16)


def _instance_choices(args, catalog):
    names = args.instance_type or catalog.names()
    for name in names:
        catalog.get(name)
    return names


def _is_local(args) -> bool:
    return str(args.master).strip().startswith("local")


def _job(args, catalog):
    """The job being tuned (a :class:`jobgauge.job.Job`), besides the knobs searched.

    Its cluster: ``--instance-type`` (one type of the catalog, ``--instance-count``
    nodes); else, for Spark on a local master (``--master local[N]``, the default,
    and every ``--measure`` run), this machine as local runs record it
    (``Cluster.local_mode``: N vCPUs, the driver heap as memory); else the whole
    machine (``Cluster.this_machine``)."""
    from jobgauge.job import Cluster, Job

    if args.instance_type and not args.tune_instances:
        if len(args.instance_type) > 1:
            raise UsageError("give one --instance-type, or add --tune-instances to search several")
        cluster = Cluster.from_catalog(args.instance_type[0], args.instance_count or 1,
                                       catalog=catalog)
    elif args.engine == "spark" and _is_local(args):
        cluster = Cluster.local_mode(args.master)
    else:
        cluster = Cluster.this_machine(args.instance_count or 1)
    return Job(args.workload, args.datasize or "", cluster,
               framework=args.framework or ("hadoop" if args.engine == "mapreduce" else "spark"),
               source="jobgauge-tune", run_id="tune")


def _with_history(args, job):
    """(job, history): a job key with runs in the store takes the size label (unless
    --datasize gives one), input bytes and profile of its newest run
    (``models._default.job_history``), so the model tunes this job, not an average one."""
    from dataclasses import replace

    from jobgauge.models._default import job_history
    from jobgauge.store import open_store

    history = job_history(open_store(args.store), job.workload, job.framework)
    if history["runs"]:
        job = replace(job, datasize=job.datasize or history["datasize"],
                      input_bytes=history["input_bytes"], profile=history["profile"])
    return job, history


def _goal(args, default="time"):
    from jobgauge.tuner._objective import Goal

    return Goal(args.objective or default, deadline_s=args.deadline, budget_usd=args.budget)


def _tune_model(args) -> int:
    from jobgauge.tuner._modes import tune_with_model

    catalog = _catalog(args)
    space = _space(args, catalog)
    job = _job(args, catalog)
    goal = _goal(args)
    from jobgauge.models.cli import chosen_model

    model, meta = chosen_model(args, progress=sys.stderr)
    job, history = _with_history(args, job)
    from jobgauge.models._default import job_run_frames
    from jobgauge.store import open_store

    store = open_store(args.store)
    own, failed = job_run_frames(store, job)   # failed settings: never the best (tuner._modes)
    result = tune_with_model(model, space, job, goal=goal, n_trials=args.trials or 50,
                             seed=args.seed, sampler=args.sampler, catalog=catalog,
                             storage=_storage(args, "project"),
                             study_name=_study_name(args, "model"),
                             strategy=args.strategy, progress=not args.json,
                             own_failures=failed)
    answer = None
    if goal.objective != "both" and result.best is not None:
        from jobgauge.models._default import calibration_line, history_calibration
        from jobgauge.tuner._modes import model_evaluator
        from jobgauge.tuner._recommend import recommend, store_trust_region

        calibration = history_calibration(store, model, job, runs=own)
        factor, calibrated = calibration["factor"], calibration["runs"]
        answer = recommend(result, space,
                           model_evaluator(model, job, catalog=catalog, factor=factor,
                                           own_failures=failed),
            metrics=meta.get("metrics"), region=store_trust_region(store, job, space))
        answer.history_runs = history["runs"]
        answer.reason += (f"; learned from {history['runs']} runs of {job.workload} in the "
                          f"store" if history["runs"] else "")
        if calibrated:
            answer.reason += f" (predictions x{factor:.2f} to match {calibrated} of them)"
        elif calibration["cluster_runs"]:
            answer.reason += "; " + calibration_line(
                0, job.workload, factor, cluster_runs=calibration["cluster_runs"],
                cluster_jobs=calibration["cluster_jobs"],
                instance_type=job.cluster.instance_type)
    return _report_open(args, result, "model-guided", space, recommendation=answer)


def _tune_measured(args) -> int:
    from jobgauge.tuner._modes import tune_measured

    from jobgauge.profiler import WarmRunner
    if args.engine != "spark":
        raise UsageError(f"--measure runs Spark workloads; --engine {args.engine} is "
                         "measured by its own runner")
    if not _is_local(args):
        raise UsageError(f"--measure runs on a local[N] master; got {args.master!r}")
    if not args.datasize:
        raise UsageError("--measure needs --datasize (the size label of the runs)")
    catalog = _catalog(args)
    space = _space(args, catalog)
    job = _job(args, catalog)
    history = _read_tables(args.history, label="history") if args.history else None
    from jobgauge.store import open_store
    from jobgauge.tuner._space import format_setting

    store = open_store(args.store)
    with WarmRunner(master=args.master, data_root=args.data_root, store=store) as runner:
        def run_trial(config):
            # one warm application per set of restart-level settings; each run is
            # timed on its own and recorded in the store by the runner
            settings = {name: format_setting(name, value) for name, value in config.items()}
            run = runner.run(args.workload, args.datasize, settings, timeout_s=args.timeout)
            runtime = run["runtime_s"] if run["runtime_s"] is not None else args.timeout
            record = {k: v for k, v in run.items() if k not in ("profile", "result")}
            return float(runtime), record

        result = tune_measured(run_trial, space, goal=_goal(args), n_trials=args.trials or 5,
                               seed=args.seed, sampler=args.sampler, history=history,
                               workload=args.workload,
                               storage=_storage(args, "project"),
                               study_name=_study_name(args, "measured"), base_row=job.row(),
                               catalog=catalog, strategy=args.strategy,
                               confirm=args.confirm, progress=not args.json)
        result.applications = list(runner.applications)
    return _report_open(args, result, "measured", space)


def _report_open(args, result, mode: str, space, recommendation=None) -> int:
    """Print the result; a ``recommendation`` (``tuner._recommend``) names the settings
    worth changing and why (none: Spark's defaults are kept)."""
    from jobgauge.tuner._space import format_setting, hive_set_lines, hive_to_spark, \
        spark_submit_lines

    best = result.best
    knobs = {k: v for k, v in best.config.items() if k not in ("instance_type", "instance_count")}
    heading = "# spark-submit options:"
    if recommendation is not None:   # the changes with evidence; the other knobs at their defaults
        defaults = space.defaults()
        knobs = {k: v if k in recommendation.settings else defaults.get(k, v)
                 for k, v in knobs.items()}
        if not recommendation.tuned:
            heading = "# spark-submit options (Spark's defaults: nothing to change):"
    conf_lines = spark_submit_lines(knobs)
    set_lines = hive_set_lines(knobs)
    hive_knobs = {k: v for k, v in knobs.items() if k.startswith("hive.")}
    if hive_knobs:   # the same session on Spark (Spark Thrift server): Spark SQL equivalents
        set_lines += [f"SET {k}={format_setting(k, v)};"
                      for k, v in hive_to_spark(hive_knobs).items()]
    mapreduce = [f"-D {k}={v}" for k, v in knobs.items() if k.startswith("mapreduce.")]
    if args.json:
        payload = result.to_dict()
        payload["spark_submit"] = conf_lines
        payload["hive_set"] = set_lines
        if mapreduce:
            payload["hadoop_options"] = mapreduce
        payload["importance"] = result.importance
        payload["study"] = {"name": result.study.study_name, "mode": mode}
        if recommendation is not None:
            payload["recommendation"] = recommendation.to_dict()
        if result.applications is not None:
            payload["applications"] = result.applications
        _print_json(payload)
        return 0
    where = f" {args.datasize}" if args.datasize else ""
    confirmed = len(result.confirmation or [])
    tried = f"{len(result.trials) - confirmed} trials" + (
        f" and {confirmed} confirm runs" if confirmed else "")
    print(f"# {args.workload}{where}: best of {tried} ({mode}, "
          f"objective {result.goal.objective})")
    line = f"# predicted runtime {best.runtime_s:.2f} s" if mode == "model-guided" \
        else f"# measured runtime {best.runtime_s:.2f} s"
    if result.confirmation:
        line += f" ({best.note})"
    if best.runtime_interval_s:
        low, high = best.runtime_interval_s
        line += f" (80 % interval {low:.2f} .. {high:.2f} s)"
    if best.cost_usd is not None:
        line += f", cost ${best.cost_usd:.4f}"
        if best.cost_interval_usd:
            line += f" (${best.cost_interval_usd[0]:.4f} .. ${best.cost_interval_usd[1]:.4f})"
    print(line)
    if best.measured_note:
        print(f"# {best.measured_note}")
    if "instance_type" in best.config or "instance_count" in best.config:
        print(f"# cluster: {best.config.get('instance_count', '')} x "
              f"{best.config.get('instance_type', '')}")
    if result.importance:
        shares = ", ".join(f"{k} {v:.2f}" for k, v in result.importance["by_level"].items())
        print(f"# which level mattered: {shares} ({result.importance['method']})")
    if recommendation is not None:
        print(f"# {recommendation.reason}")
    if conf_lines:
        print(heading)
        for text in conf_lines:
            print(text)
    if set_lines:
        print("# HiveServer2 / Spark Thrift session:")
        for text in set_lines:
            print(text)
    if mapreduce:
        print("# hadoop jar options:")
        for text in mapreduce:
            print(text)
    print(f"# study {result.study.study_name!r} kept in "
          f"{_storage(args, 'project') or 'memory'}")
    return 0
