"""Evaluate every runtime model under the project's protocols and write the report.

    nice -n 10 .venv/bin/python bench/evaluate.py                 # everything
    nice -n 10 .venv/bin/python bench/evaluate.py --quick         # smoke run
    nice -n 10 .venv/bin/python bench/evaluate.py --runs ../shared/datasets/scout_multinode.csv \
        --protocol cluster --models svm fc
    nice -n 10 .venv/bin/python bench/evaluate.py --quiet-corpus  # the issue-13 protocols

Writes bench/reports/evaluation.md and bench/reports/evaluation_cdf_<source>.png (the
report names the command that made it and its wall time);
per-cell predictions are cached under bench/reports/cache/ (keyed by data, model
parameters and protocol), so an interrupted run resumes where it stopped.
The same is ``jobgauge evaluate``.

``--quiet-corpus`` (implied by asking only for its protocols: scaleup, slots, families,
configs-sf1, workloads-sf1) scores the stage predictor, Ernest, the current default
model, the FC network and the DAG network (RNN) on the quiet corpus (the tables of data/runs measured under the
collector's load guard; each query's reference profile is its smallest quiet profiled
run) and the shared Scout and C3O tables, times one what-if estimate of the
web service, and writes bench/reports/evaluation_quiet.md with
evaluation_quiet_cdf_<dataset>.png.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

#: The what-if question timed: TPC-H Q3 at SF 3 on 3 instance types x 8 node counts.
WHAT_IF_QUESTION = {"workload": "tpch-q3", "scale": 3, "nodes_min": 1, "nodes_max": 8,
                    "instance_types": ["m5.xlarge", "c5.xlarge", "r5.xlarge"]}
WHAT_IF_REPEATS = 20


def time_asks(asks: dict, repeats: int, *, warm: bool = True) -> dict:
    """{name: [wall milliseconds]} of each zero-argument ``asks[name]()`` over
    ``repeats`` rounds, each round asking every one in turn; ``warm``: one untimed call
    of each first (it fits the job classifier and reads the catalog once)."""
    if warm:
        for ask in asks.values():
            ask()
    times = {name: [] for name in asks}
    for _ in range(repeats):
        for name, ask in asks.items():
            started = time.perf_counter()
            ask()
            times[name].append(1000 * (time.perf_counter() - started))
    return times


def time_what_if(model, training_frame, *, kind, repeats=WHAT_IF_REPEATS,
                 question=None) -> dict:
    """Median wall milliseconds of ``Service.estimate`` (the web form's and the API's
    what-if path: one prediction per instance type and node count) for a fitted ``model``,
    served from a temporary store as the web service serves its model; one untimed call
    first (it fits the job classifier and reads the catalog once)."""
    from jobgauge.models import dumps_model
    from jobgauge.store import open_store
    from jobgauge.webapp.requests import parse_estimate
    from jobgauge.webapp.service import Service

    question = dict(question or WHAT_IF_QUESTION)
    with tempfile.TemporaryDirectory(prefix="jobgauge-what-if-") as folder:
        url = str(Path(folder) / "store.db")
        metrics = {"training_rows": len(training_frame),
                   "instance_types": sorted(set(training_frame["instance_type"].astype(str))),
                   "workloads": sorted(set(training_frame["workload"].astype(str))),
                   "datasizes": sorted(set(training_frame["datasize"].astype(str)))}
        store = open_store(url)
        store.save_model("default", kind, dumps_model(model), metrics)
        service = Service(store_url=url)
        request = parse_estimate(question, known_workloads=service.known_workloads(),
                                 catalog_names=list(service.instance_options()))
        answer = service.estimate(request, plan=False)
        times = time_asks({"what-if": lambda: service.estimate(request, plan=False)},
                          repeats, warm=False)["what-if"]
    types = len(request.instance_types)
    counts = len(request.node_counts())
    return {"median_ms": statistics.median(times), "repeats": repeats,
            "grid": f"{types} instance types x {counts} node counts",
            "predictions": len(answer["options"]),
            "function": "jobgauge.webapp.service.Service.estimate"}


def quiet_main(args, command) -> int:
    """The quiet-corpus evaluation, the what-if timing and evaluation_quiet.md."""
    from jobgauge.models import DEFAULT_MODEL
    from jobgauge.models._report import quiet_results_table, write_quiet_report
    from jobgauge.models.evaluation import model_from_spec, run_quiet_evaluation

    started = time.perf_counter()
    result = run_quiet_evaluation(quiet_dir=args.quiet_dir, protocols=args.protocol,
                                  models=args.models, out_dir=args.out, quick=args.quick,
                                  progress=sys.stderr, use_cache=not args.no_cache,
                                  reference_runs=args.reference_runs)
    what_if = []
    frame = result["frames"]["quiet"]
    for name in args.timing_models or [DEFAULT_MODEL]:
        print(f"timing the what-if estimate with {name} ...", file=sys.stderr)
        model = model_from_spec(name, random_state=0).fit(frame)
        what_if.append({"model": name, **time_what_if(model, frame, kind=name)})
    result["timing"]["wall_s"] = time.perf_counter() - started  # the whole command's
    out = Path(args.out) if args.out else Path("bench") / "reports"
    report = write_quiet_report(result, out, quick=args.quick, command=command, what_if=what_if)
    print("\n".join(quiet_results_table(result["rows"], result["models"])))
    print(f"report: {report}", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    from jobgauge.errors import GaugeError
    from jobgauge.models.evaluation import (
        DEFAULT_MODELS,
        PROTOCOLS,
        QUIET_PROTOCOLS,
        default_run_tables,
        run_evaluation,
    )

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", nargs="+", help="run tables (default: Scout, C3O, data/runs)")
    parser.add_argument("--profiles", nargs="*", default=None,
                        help="profile JSON-lines files (default: data/profiles/*.jsonl*)")
    parser.add_argument("--protocol", action="append", choices=list(PROTOCOLS))
    parser.add_argument("--models", nargs="+", default=None,
                        help="models to score (default: all; with --quiet-corpus: stage, "
                             "ernest, the default model, fc and rnn)")
    parser.add_argument("--out", help="report folder (default bench/reports)")
    parser.add_argument("--quick", action="store_true", help="smoke run: fewer folds/epochs")
    parser.add_argument("--no-cache", action="store_true", help="recompute every cell")
    parser.add_argument("--quiet-corpus", action="store_true",
                        help="the issue-13 protocols on the quiet corpus (the tables of "
                             "data/runs measured under the load guard) and the shared tables "
                             "(report evaluation_quiet.md)")
    parser.add_argument("--quiet-dir", default=None,
                        help="folder with runs/ and profiles/ of the quiet corpus "
                             "(default: the shipped data folder)")
    parser.add_argument("--reference-runs", nargs="*", default=None,
                        help="with --quiet-corpus: more run tables whose profiled runs may "
                             "be a workload's reference (default: none, the quiet runs' own "
                             "profiles; their profiles come from profiles/ beside them)")
    parser.add_argument("--timing-models", nargs="+", default=None,
                        help="models whose what-if estimate is timed (default: the default "
                             "model); each is fitted on the whole quiet corpus")
    args = parser.parse_args(argv)
    given = sys.argv[1:] if argv is None else list(argv)
    command = " ".join(["nice -n 10 .venv/bin/python bench/evaluate.py", *given])
    quiet_names = {p for names in QUIET_PROTOCOLS.values() for p in names}
    quiet = args.quiet_corpus or bool(args.protocol and set(args.protocol) <= quiet_names)
    try:
        if quiet:
            return quiet_main(args, command)
        result = run_evaluation(args.runs or default_run_tables(), protocols=args.protocol,
                                models=args.models or list(DEFAULT_MODELS), out_dir=args.out,
                                quick=args.quick, progress=sys.stderr,
                                profile_paths=args.profiles, use_cache=not args.no_cache,
                                command=command)
    except GaugeError as exc:
        print(f"evaluate: error: {exc}", file=sys.stderr)
        return 1
    print(result["markdown_table"])
    print(f"report: {result['report']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
