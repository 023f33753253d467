"""Subcommands of the models area (registered by jobgauge.cli): train, predict, evaluate.

::

    jobgauge train --runs data/runs/*.csv.gz --model fc --out model.jgm
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

from jobgauge.errors import UsageError


def register(subparsers) -> None:
    """Add this area's subcommands to the jobgauge parser."""
    parser = subparsers.add_parser(
        "train", help="train a runtime model on measured runs",
        description="Train a runtime model on run tables (any mix of sources in the shared "
                    "schema) or, without --runs, on every run in the store. The model is "
                    "written to --out, or saved in the store when --out is not given.")
    parser.add_argument("--runs", nargs="+", metavar="FILE.csv",
                        help="run tables (CSV, optionally .gz); default: the store's runs")
    parser.add_argument("--model", default=None, metavar="NAME",
                        help="model name (default: the best one of the evaluation); one of "
                             "tree, svm, forest, gbm, ernest, fc, rnn, optionally with +classes")
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="a hyperparameter (value as JSON, else text); repeatable")
    parser.add_argument("--profiles", nargs="+", metavar="FILE.jsonl.gz",
                        help="profile records (JSON lines keyed by source and run_id): each "
                             "workload gets the profile and plan DAG of one reference run")
    parser.add_argument("--out", metavar="PATH", help="write the model file here")
    parser.add_argument("--name", help="name of the model in the store (default: the model name)")
    parser.add_argument("--seed", type=int, default=0, help="random_state (default 0)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(handler=train_command)

    parser = subparsers.add_parser(
        "predict", help="predict runtimes with a trained model",
        description="Predict the runtime of every row of a run table (--runs; runtime_s may "
                    "be empty), or of one configuration (--workload and --datasize). The "
                    "model comes from --model, else the store's newest model.")
    parser.add_argument("--model", metavar="PATH", help="model file (default: the store's newest)")
    parser.add_argument("--model-name", metavar="NAME", help="model name in the store")
    parser.add_argument("--runs", nargs="+", metavar="FILE.csv", help="rows to predict")
    parser.add_argument("--out", metavar="PRED.csv",
                        help="where to write the rows with predictions (default: stdout)")
    parser.add_argument("--workload", help="the job, e.g. terasort or tpch-q3")
    parser.add_argument("--datasize", help="size label, e.g. sf1 or huge")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a configuration knob; repeatable")
    parser.add_argument("--framework", default="spark")
    parser.add_argument("--instance-type", default="local")
    parser.add_argument("--instance-count", type=int, default=1)
    parser.add_argument("--vcpus", type=float, default=2.0, help="vCPUs per node (default 2)")
    parser.add_argument("--memory-gib", type=float, default=None, help="memory per node")
    parser.add_argument("--input-bytes", type=float, default=None)
    parser.add_argument("--coverage", type=float, default=0.8,
                        help="coverage of the interval (default 0.8)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=predict_command)

    parser = subparsers.add_parser(
        "evaluate", help="score runtime models on held-out configurations and workloads",
        description="Cross-validate models under the evaluation protocols and write a Markdown "
                    "report with a CDF plot of the relative error (see bench/evaluate.py).")
    parser.add_argument("--runs", nargs="+", metavar="FILE.csv",
                        help="run tables (default: the shared Scout and C3O tables and "
                             "data/runs/*.csv.gz)")
    parser.add_argument("--protocol", action="append", default=None, metavar="NAME",
                        help="protocol(s) to run (default: all that apply); repeatable")
    parser.add_argument("--models", nargs="+", metavar="NAME", help="models to score")
    parser.add_argument("--out", metavar="DIR", help="report folder (default bench/reports)")
    parser.add_argument("--quick", action="store_true",
                        help="fewer folds and epochs (a smoke run, not a result)")
    parser.add_argument("--json", action="store_true", help="print the result rows as JSON")
    parser.set_defaults(handler=evaluate_command)


# ------------------------------------------------------------------- helpers
def _parse_assignments(items, what) -> dict:
    result = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{what} {item!r} must look like KEY=VALUE")
        result[key.strip()] = value
    return result


def _parse_params(items) -> dict:
    params = {}
    for key, text in _parse_assignments(items, "--param").items():
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        if isinstance(value, list):
            value = tuple(value)
        params[key] = value
    return params


def _training_frame(args):
    """(frame, where it came from, notes) for train: run tables, else the store."""
    if args.runs:
        from jobgauge.runtable import read_run_tables

        return read_run_tables(args.runs), ", ".join(map(str, args.runs)), []
    from jobgauge.store import open_store

    store = open_store(args.store)
    frame = store.run_frame()
    notes = []
    if len(frame) and "status" in frame.columns:
        failed = frame["status"].astype(str) == "failed"
        if failed.any():
            notes.append(f"left out {int(failed.sum())} failed runs (an error, not a time limit)")
            frame = frame[~failed]
    if len(frame):
        missing = ~(frame["runtime_s"].astype(float) > 0)
        if missing.any():
            notes.append(f"left out {int(missing.sum())} runs without a runtime")
            frame = frame[~missing]
    if len(frame) == 0:
        raise UsageError("the store has no runs with a runtime to train on; import run tables "
                         "with 'jobgauge import' or pass --runs")
    return frame.reset_index(drop=True), store.display_url if hasattr(store, "display_url") \
        else "the store", notes


def _fraction(value) -> str:
    return f"{100 * value:.1f} %"


def training_summary(model, frame) -> dict:
    """Counts and held-out error figures of a freshly trained model (for train's output)."""
    import numpy as np

    from jobgauge.models import model_name
    from jobgauge.models._base import conformal_offsets

    residuals = model.calibration_residuals_
    relative = np.abs(np.expm1(residuals))
    low, high = conformal_offsets(residuals, 0.8)
    return {
        "model": model_name(model),
        "training_rows": len(frame),
        "censored_rows": int(model.n_censored_),
        "sources": {str(k): int(v) for k, v in frame["source"].value_counts().sort_index().items()},
        "workloads": int(frame["workload"].nunique()),
        "error_estimate_from": model.interval_source_,
        "calibration_rows": len(residuals),
        "calibration_mdape": float(np.median(relative)),
        "calibration_p90_ape": float(np.quantile(relative, 0.9)),
        "interval_80_factors": [float(math.exp(low)), float(math.exp(high))],
    }


# ------------------------------------------------------------------ commands
def train_command(args) -> int:
    from jobgauge.models import DEFAULT_MODEL, dumps_model, make_model, save_model
    from jobgauge.models._params import validate_params

    frame, origin, notes = _training_frame(args)
    if args.profiles:
        from jobgauge.models.evaluation import attach_reference_profiles
        from jobgauge.runtable import read_profile_records

        frame = attach_reference_profiles(frame, read_profile_records(args.profiles))
        profiled = frame.loc[frame["profile"].notna(), "workload"].nunique()
        notes.append(f"reference profiles for {profiled} of {frame['workload'].nunique()} "
                     f"workloads")
    params = _parse_params(args.param)
    params.setdefault("random_state", args.seed)
    model = make_model(args.model or DEFAULT_MODEL, **params)
    validate_params(model)  # a bad --param fails before any work
    print(f"training {args.model or DEFAULT_MODEL} on {len(frame)} runs from {origin} ...",
          file=sys.stderr, flush=True)
    model.fit(frame)
    summary = training_summary(model, frame)
    summary["notes"] = notes
    if args.out:
        save_model(model, args.out)
        summary["saved_to"] = str(args.out)
    else:
        from jobgauge.store import open_store

        store = open_store(args.store)
        name = args.name or summary["model"]
        summary["store_model_id"] = int(store.save_model(name, summary["model"],
                                                         dumps_model(model), summary))
        summary["saved_to"] = f"store model {name!r}"
    if args.json:
        print(json.dumps(summary))
        return 0
    sources = ", ".join(f"{k}: {v}" for k, v in summary["sources"].items())
    print(f"trained {summary['model']} on {summary['training_rows']} runs "
          f"({summary['censored_rows']} censored at a time limit) of {summary['workloads']} "
          f"workloads [{sources}]")
    for note in notes:
        print(f"note: {note}")
    low, high = summary["interval_80_factors"]
    print(f"error on {summary['error_estimate_from']} ({summary['calibration_rows']} runs): "
          f"MdAPE {_fraction(summary['calibration_mdape'])}, "
          f"P90 {_fraction(summary['calibration_p90_ape'])}; "
          f"80 % interval = prediction x{low:.2f} .. x{high:.2f}")
    print(f"saved to {summary['saved_to']}")
    return 0


def _load(args):
    from jobgauge.models import load_model, loads_model

    if args.model:
        return load_model(args.model)
    from jobgauge.store import open_store

    _, payload = open_store(args.store).load_model(args.model_name)
    return loads_model(payload)


def predict_command(args) -> int:
    if args.runs and args.workload:
        raise UsageError("give either --runs or --workload/--datasize, not both")
    if not args.runs and not args.workload:
        raise UsageError("nothing to predict: give --runs FILE.csv or --workload W --datasize D")
    if not 0 < args.coverage < 1:
        raise UsageError(f"--coverage must be between 0 and 1, got {args.coverage}")
    if args.workload and args.datasize is None:
        raise UsageError("--workload needs --datasize (a size label such as sf1 or huge)")
    config = _parse_assignments(args.conf, "--conf")
    model = _load(args)
    if args.runs:
        return _predict_table(model, args)
    from jobgauge.models import predict_one

    result = predict_one(model, workload=args.workload, datasize=args.datasize,
                         config=config,
                         framework=args.framework, instance_type=args.instance_type,
                         instance_count=args.instance_count, vcpus=args.vcpus,
                         memory_gib=args.memory_gib, input_bytes=args.input_bytes,
                         coverage=args.coverage)
    if args.json:
        print(json.dumps({**result, "coverage": args.coverage}))
        return 0
    print(f"{args.workload} ({args.datasize}) on {args.instance_count} x {args.instance_type}: "
          f"{result['runtime_s']:.1f} s ({int(args.coverage * 100)} % interval "
          f"{result['low_s']:.1f} .. {result['high_s']:.1f} s)")
    return 0


def _predict_table(model, args) -> int:
    from jobgauge.models import predict_frame
    from jobgauge.runtable import read_run_tables, write_run_table

    frame = read_run_tables(args.runs, runtime_optional=True)
    if len(frame) == 0:
        raise UsageError("the run tables have no rows to predict")
    predicted = predict_frame(model, frame, coverage=args.coverage)
    extra = list(predicted.columns)
    rows = []
    for record, (_, values) in zip(frame.to_dict("records"), predicted.iterrows()):
        record.update({k: f"{v:.3f}" for k, v in values.items()})
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
        out.update({k: row[k] for k in extra})
        writer.writerow(out)
    return 0


def evaluate_command(args) -> int:
    from jobgauge.models.evaluation import default_run_tables, run_evaluation

    paths = args.runs or default_run_tables()
    result = run_evaluation(paths, protocols=args.protocol, models=args.models,
                            out_dir=args.out, quick=args.quick, progress=sys.stderr)
    if args.json:
        print(json.dumps(result["rows"], default=str))
    else:
        print(result["markdown_table"])
        if result.get("report"):
            print(f"report written to {result['report']}", file=sys.stderr)
    return 0
