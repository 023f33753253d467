"""Subcommands of the models area (registered by jobgauge.cli): train, predict, evaluate.

::

    jobgauge train --runs data/runs/*.csv.gz --kind fc --out model.jgm
    jobgauge train                                  # from the store, into the store
    jobgauge predict --model model.jgm --runs todo.csv --out predicted.csv
    jobgauge predict --workload tpch-q3 --datasize sf1 --conf spark.executor.cores=2 --json
    jobgauge evaluate --runs ../shared/datasets/scout_multinode.csv --protocol configs

This module stays light to import: scikit-learn and torch load inside the handlers.
"""

from __future__ import annotations

import json
import math
import sys

from jobgauge.cli_options import (add_cluster_options, add_command, add_conf_option,
                                  add_datasize_option, add_deprecated_alias, add_model_options,
                                  number, parse_key_values, print_result)
from jobgauge.errors import UsageError
from jobgauge.units import human_size


def register(subparsers) -> None:
    """Add this area's subcommands to the jobgauge parser."""
    parser = add_command(subparsers, "train", train_command,
                         help="train a runtime model on measured runs", json="the summary")
    parser.add_argument("--runs", nargs="+", metavar="FILE.csv",
                        help="run tables (CSV, optionally .gz); default: the store's runs")
    parser.add_argument("--kind", default=None, metavar="NAME",
                        help="which model (default: the best one of the evaluation); one of "
                             "tree, svm, forest, gbm, ernest, fc, rnn, stage, optionally with "
                             "+classes")
    add_deprecated_alias(parser, "--model", "--kind", dest="kind", metavar="NAME")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="a hyperparameter (value as JSON, else text); repeatable")
    parser.add_argument("--profiles", nargs="+", metavar="FILE.jsonl.gz",
                        help="profile records (JSON lines keyed by source and run_id): each "
                             "workload gets the profile and plan DAG of one reference run "
                             "(default for the stage model: the records beside the run tables)")
    parser.add_argument("--out", metavar="PATH", help="write the model file here")
    parser.add_argument("--model-name", metavar="NAME",
                        help="name of the model in the store (default: its kind)")
    add_deprecated_alias(parser, "--name", "--model-name", dest="model_name", metavar="NAME")
    parser.add_argument("--seed", type=int, default=0, help="random_state (default 0)")
    parser.add_argument("--with-prior", action="store_true",
                        help="without --runs: learn from the prior (the shipped runs, or the "
                             "runs folder the store's model was first trained from) as well "
                             "as the store's own, as the automatic retraining does")
    parser.add_argument("--lock", metavar="FILE",
                        help="hold this lock file while training; when another training "
                             "holds it, skip (exit 0)")

    parser = add_command(subparsers, "predict", predict_command,
                         help="predict runtimes with a trained model", json="the prediction")
    add_model_options(parser)
    parser.add_argument("--runs", nargs="+", metavar="FILE.csv", help="rows to predict")
    parser.add_argument("--out", metavar="PRED.csv",
                        help="where to write the rows with predictions (default: stdout)")
    parser.add_argument("--workload", help="the job, e.g. terasort or tpch-q3")
    add_datasize_option(parser, help="size label, e.g. sf1 or huge", scale=True)
    add_conf_option(parser, help="a configuration setting; repeatable")
    parser.add_argument("--framework", default="spark")
    add_cluster_options(
        parser, count_default=1,
        type_help="local[N] (Spark local mode on this machine), local (the whole machine), a "
                  "type of the instance catalog, or any type with --vcpus (default: local[2] "
                  "for Spark, as the web form and the shipped runs; local for Hadoop, as its "
                  "local runs record)")
    parser.add_argument("--input-bytes", type=number(0), default=None)
    parser.add_argument("--coverage", type=number(0, above=True, highest=1, below=True),
                        default=0.8, help="coverage of the interval (default 0.8)")
    parser.add_argument("--explain", action="store_true",
                        help="with --workload: where the time goes, stage by stage (the stage "
                             "model's replay of the job's profile; JSON: explanation)")

    parser = add_command(subparsers, "evaluate", evaluate_command,
                         help="score runtime models on held-out configurations and workloads",
                         json="the result rows")
    parser.add_argument("--runs", nargs="+", metavar="FILE.csv",
                        help="run tables (default: the shared Scout and C3O tables and "
                             "data/runs/*.csv.gz)")
    parser.add_argument("--protocol", action="append", default=None, metavar="NAME",
                        help="protocol(s) to run (default: all that apply); repeatable")
    parser.add_argument("--models", nargs="+", metavar="NAME", help="models to score")
    parser.add_argument("--out", metavar="DIR", help="report folder (default bench/reports)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer folds and epochs (a smoke run, not a result)")


# ------------------------------------------------------------------- helpers
def _parse_params(items) -> dict:
    params = {}
    for key, text in parse_key_values(items, "--param").items():
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        if isinstance(value, list):
            value = tuple(value)
        params[key] = value
    return params


def _training_frame(args, prior_dir=None):
    """(frame, where it came from, notes) for train: run tables, else the store (with
    the prior of ``prior_dir``'s run tables, default the shipped ones, for --with-prior)."""
    if args.runs:
        from jobgauge.runtable import read_run_tables

        return read_run_tables(args.runs), ", ".join(map(str, args.runs)), []
    from jobgauge.models._default import learning_frame, store_run_frame
    from jobgauge.store import open_store

    store = open_store(args.store)
    if args.with_prior:
        return learning_frame(store, runs_dir=prior_dir)
    frame, notes = store_run_frame(store)
    if len(frame) == 0:
        raise UsageError("the store has no runs with a runtime to train on; import run tables "
                         "with 'jobgauge import' or pass --runs")
    return frame, store.display_url if hasattr(store, "display_url") else "the store", notes


def _fraction(value) -> str:
    return f"{100 * value:.1f} %"


# ------------------------------------------------------------------ commands
def train_command(args) -> int:
    """Train a runtime model on run tables (any mix of sources in the shared schema) or,
    without --runs, on every run in the store. The model is written to --out, or saved in
    the store when --out is not given."""
    if args.with_prior and args.runs:
        raise UsageError("--with-prior adds the shipped runs to the store's; with --runs "
                         "name every table to learn from instead")
    if args.kind is not None:       # a name that cannot train is refused before any data
        from jobgauge.models._registry import model_class

        model_class(args.kind)
    if args.lock:
        from jobgauge.models._default import training_lock

        with training_lock(args.lock) as free:
            if not free:
                print(f"another training holds {args.lock}; skipped", file=sys.stderr)
                return 0
            return _train(args)
    return _train(args)


def _train(args) -> int:
    from jobgauge.models import dumps_model, save_model
    from jobgauge.models._training import train_model

    from jobgauge.models._default import with_store_profiles

    store_runs = prior_dir = prior_profiles = None
    if not args.runs and not args.out:
        from jobgauge.store import open_store

        store_runs = int(open_store(args.store).count_runs())
    if args.with_prior:    # the prior the store's model learned from, kept on retraining
        from jobgauge.models._default import recorded_prior
        from jobgauge.store import open_store

        prior_dir, prior_profiles = recorded_prior(open_store(args.store), args.model_name)
    frame, origin, notes = _training_frame(args, prior_dir)
    profiles = None
    if args.profiles:
        from jobgauge.runtable import read_profile_records

        profiles = read_profile_records(args.profiles)
    else:   # a model that keeps reference profiles gets those of its run tables
        from jobgauge.models._default import (prior_profile_files, prior_run_tables,
                                              reference_profile_records)

        tables = args.runs or prior_run_tables(prior_dir)   # the store's: the prior's ids
        profiles = reference_profile_records(
            args.kind, prior_profile_files(tables) if prior_profiles is None else prior_profiles)
    if not args.runs:        # trained on the store's runs: its own jobs' profiles too
        from jobgauge.store import open_store

        profiles = with_store_profiles(profiles, args.kind, open_store(args.store), frame)
    failures = None
    if args.with_prior:      # the shipped re-measurements' failures, as the first model's
        from jobgauge.models._default import prior_failures

        failures = prior_failures(prior_dir)
    model, summary = train_model(frame, kind=args.kind, params=_parse_params(args.param),
                                 profiles=profiles, seed=args.seed, origin=origin, notes=notes,
                                 progress=sys.stderr, failures_from=failures)
    if args.out:
        save_model(model, args.out)
        summary["saved_to"] = str(args.out)
    else:
        from jobgauge.store import open_store

        store = open_store(args.store)
        if store_runs is not None:   # the retraining counts the store's runs added after these
            summary["store_runs"] = store_runs
        if prior_dir is not None:    # and learns from this prior again
            summary.update(prior_runs_dir=str(prior_dir),
                           prior_profile_files=[str(p) for p in prior_profiles])
        name = args.model_name or summary["model"]
        summary["store_model_id"] = int(store.save_model(name, summary["model"],
                                                         dumps_model(model), summary))
        summary["saved_to"] = f"store model {name!r}"
    sources = ", ".join(f"{k}: {v}" for k, v in summary["sources"].items())
    low, high = summary["interval_80_factors"]
    print_result(args.json, summary, [
        f"trained {summary['model']} on {summary['training_rows']} runs "
        f"({summary['censored_rows']} censored at a time limit) of "
        f"{len(summary['workloads'])} workloads [{sources}]",
        *(f"note: {note}" for note in summary["notes"]),
        f"error on {summary['error_estimate_from']} ({summary['calibration_rows']} runs): "
        f"MdAPE {_fraction(summary['calibration_mdape'])}, "
        f"P90 {_fraction(summary['calibration_p90_ape'])}; "
        f"80 % interval = prediction x{low:.2f} .. x{high:.2f}",
        f"saved to {summary['saved_to']}"])
    return 0


def chosen_model(args, progress=None):
    """(model, meta) of the model the command line names: ``--model PATH`` (a file; meta
    without metrics), else the store's model ``--model-name NAME``, else the store's
    newest model, trained on first need on a store without one
    (``models._default.store_model``)."""
    from jobgauge.models import load_model

    if args.model and args.model_name:
        raise UsageError("give --model PATH (a file) or --model-name NAME (in the store), not both")
    if args.model:
        return load_model(args.model), {"name": str(args.model), "metrics": None}
    from jobgauge.store import open_store

    store = open_store(args.store)
    if args.model_name:
        from jobgauge.models import loads_model

        meta, payload = store.load_model(args.model_name)
        return loads_model(payload), meta
    from jobgauge.models._default import store_model

    return store_model(store, progress=progress)


def load_chosen_model(args):
    """The model of :func:`chosen_model`, without its metadata."""
    return chosen_model(args, progress=sys.stderr)[0]


def predict_command(args) -> int:
    """Predict the runtime of every row of a run table (--runs; runtime_s may be empty), or of
    one configuration (--workload and --datasize). The model comes from --model, else the
    store's newest model."""
    if args.runs and args.workload:
        raise UsageError("give either --runs or --workload/--datasize, not both")
    if not args.runs and not args.workload:
        raise UsageError("nothing to predict: give --runs FILE.csv or --workload W --datasize D")
    if args.runs and args.explain:
        raise UsageError("--explain tells one question's stages: give --workload, not --runs")
    config = parse_key_values(args.conf, "--conf", settings=True)
    if args.runs:
        return _predict_table(load_chosen_model(args), args)
    from jobgauge.job import Cluster, Job
    from jobgauge.knobs import DEFAULT_MASTER
    from jobgauge.models._default import (calibration_line, explain_answer, explanation_lines,
                                          predict_with_history)
    from jobgauge.store import open_store

    store = open_store(args.store)
    datasize, input_bytes, profile, history = _job_size(args, store)
    instance_type = args.instance_type or (
        "local" if args.framework == "hadoop" else DEFAULT_MASTER)
    if instance_type.startswith("local[") and args.framework != "hadoop":
        config.setdefault("spark.master", instance_type)   # as the web form asks
    cluster = Cluster.named(instance_type, args.instance_count, settings=config,
                            vcpus=args.vcpus, memory_gib=args.memory_gib)
    job = Job(args.workload, datasize, cluster, config, framework=args.framework,
              input_bytes=input_bytes, profile=profile)   # a bad question fails before training
    model = load_chosen_model(args)
    result = predict_with_history(store, model, job, coverage=args.coverage)
    calibrated, factor = result.pop("calibrated_runs"), result["history_factor"]
    size = datasize if datasize or input_bytes is None else f"{human_size(input_bytes)} of input"
    lines = [f"{args.workload} ({size}) on {args.instance_count} x {instance_type}: "
             f"{result['runtime_s']:.1f} s ({int(args.coverage * 100)} % interval "
             f"{result['low_s']:.1f} .. {result['high_s']:.1f} s)"]
    if result["answered_from_table"]:
        lines.append(f"answered from the runs of {args.workload} in the public "
                     f"{result['answered_from_table']} table: its own program of that name, "
                     f"measured on its clusters")
    if result["note"]:
        lines.append(result["note"])
    if result["failures"]:
        lines.append(f"measured: {result['failures']}")
    if result["read_floor_s"] and result["low_s"] <= result["read_floor_s"] * (1 + 1e-9):
        lines.append(f"never below {result['read_floor_s']:.1f} s: the time its nodes take "
                     f"to read the input that does not fit in their memory at their "
                     f"network's top speed")
    said = calibration_line(calibrated, args.workload, factor, result["busy_runs_left_out"],
                            result["far_runs_left_out"], result["history_held"],
                            result["cluster_runs"], result["cluster_jobs"], instance_type)
    if said:
        lines.append(said)
    if args.explain:
        explanation = explain_answer(model, job, factor)
        result["explanation"] = explanation
        lines += explanation_lines(explanation) if explanation else [
            f"no stages to show: the {type(model).__name__} model does not replay "
            f"{args.workload}'s stages (jobgauge train --kind stage does)"]
    print_result(args.json, {**result, "coverage": args.coverage, "datasize": datasize,
                             "input_bytes": input_bytes, "history_runs": history}, lines)
    return 0


def _job_size(args, store) -> tuple:
    """(size label, input bytes, profile summary, runs of the job in the store) of
    ``predict --workload``: ``--datasize`` and ``--input-bytes`` as given; a job
    without a size label (a user's own job) is sized by its input bytes, and takes
    the profile of its newest run in the store when it has runs, and that run's input
    bytes when it has the asked size label."""
    history = {"runs": 0, "datasize": "", "input_bytes": None, "profile": None}
    if args.datasize is None or args.input_bytes is None:
        from jobgauge.models._default import job_history

        history = job_history(store, args.workload, args.framework)
    datasize = args.datasize if args.datasize is not None else history["datasize"]
    input_bytes = args.input_bytes
    if input_bytes is None and datasize == history["datasize"]:
        input_bytes = history["input_bytes"]   # the newest run's size, when it is the one asked
    if args.datasize is None and not datasize and input_bytes is None:
        raise UsageError(f"--workload needs --datasize (a size label such as sf1 or huge) "
                         f"or --input-bytes: the store has no runs of {args.workload!r} to "
                         f"take its input size from")
    return datasize or "", input_bytes, history["profile"], history["runs"]


def _predict_table(model, args) -> int:
    from jobgauge.models import predict_frame
    from jobgauge.runtable import read_run_tables, write_run_table

    frame = read_run_tables(args.runs, runtime_optional=True)
    if len(frame) == 0:
        raise UsageError("the run tables have no rows to predict")
    predicted = predict_frame(model, frame, coverage=args.coverage)
    extra = list(predicted.columns)
    rows = []
    for record, values in zip(frame.to_dict("records"), predicted.to_dict("records")):
        record.update({k: f"{v:.3f}" for k, v in values.items() if k.startswith("predicted_")})
        floor = values["read_floor_s"]
        record.update(outside_measured=bool(values["outside_measured"]),
                      measured_note=values["measured_note"],
                      failure_note=values["failure_note"],
                      read_floor_s=f"{floor:.3f}" if math.isfinite(floor) else None,
                      # a query never measured: the measured queries it is answered from
                      answered_from=" ".join(values["answered_from"] or ()) or None,
                      # a public table's job of its name: the table whose runs answer it
                      answered_from_table=values["answered_from_table"])
        rows.append(record)
    if args.out:
        count = write_run_table(rows, args.out, extra_columns=extra)
        print(f"wrote {count} rows with predictions to {args.out}", file=sys.stderr)
        return 0
    import csv

    from jobgauge.runtable import COLUMNS, format_row

    writer = csv.DictWriter(sys.stdout, fieldnames=list(COLUMNS) + extra, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        out = format_row(row)
        out.update({k: _cell(row[k]) for k in extra})
        writer.writerow(out)
    return 0


def _cell(value) -> str:
    """A prediction column's value as write_run_table writes it: booleans as
    true/false, None as empty."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else value


def evaluate_command(args) -> int:
    """Cross-validate models under the evaluation protocols and write a Markdown report with a
    CDF plot of the relative error (see bench/evaluate.py)."""

    from jobgauge.models.evaluation import default_run_tables, run_evaluation

    paths = args.runs or default_run_tables()
    result = run_evaluation(paths, protocols=args.protocol, models=args.models,
                            out_dir=args.out, quick=args.quick, progress=sys.stderr)
    print_result(args.json, result["rows"], result["markdown_table"])
    if result.get("report") and not args.json:
        print(f"report written to {result['report']}", file=sys.stderr)
    return 0
