"""How well a query jobgauge never measured is answered from its plan alone.

    nice -n 10 .venv/bin/python bench/pasted_queries.py [--folds 5] [--report-dir DIR]
    nice -n 10 .venv/bin/python bench/pasted_queries.py --measure --scale 10 [--repeats 3]
    .venv/bin/python bench/pasted_queries.py --time [--scale 10]

**As if pasted** (default): the quiet corpus's TPC-H queries in ``--folds`` groups; each
group's queries leave training entirely (no run and no profile of theirs), and each of
their finished runs at SF >= 1 is asked as the web form asks a pasted query: a workload
the model never saw, with the plan DAG of the query (its reference run's plan, its
scans sized by their files) and no profile.  The stage model replays the reference
profiles of the trained queries that read most alike (``StagePredictor._alike``); the
answer it gave before (the same question without the plan's sizes: scaled from all
measured runs by the data set's size alone) is set beside it, with the 80 % intervals'
coverage and width.  Prints a Markdown table and writes ``pasted_queries.md`` in
``--report-dir`` (default ``bench/reports``).

**Measured** (``--measure``): a few queries that are not TPC-H's, asked at SF
``--scale`` on local[2] with Spark's defaults through the web service's code (the
shipped model, trained on first need in a temporary store; the query planned as the
form plans it; asked after the runs, so that its planner's Spark application does not
run beside them) and run for real: one warm local[2] application with Spark's
defaults, 3 warm-up runs of each query, then ``--repeats`` interleaved runs each, every
run started once the 1-minute load is below 0.7 (or after 20 s; each run prints its
load).  The time is the query's own, inside the warm application, as the corpus and
the form mean it.  Prints the answers beside the measured medians.

**Timed** (``--time``): the web service's what-if (3 instance types x 8 node counts)
for the first of those queries pasted at SF ``--scale`` and for TPC-H Q3 at SF 3,
asked in turn on one warm service; prints each median in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

#: The queries ``--measure`` asks and runs: over one table, a join, one of a fixed size.
QUERIES = {
    "lineitem by return flag":
        "SELECT l_returnflag, count(*) AS n FROM lineitem GROUP BY l_returnflag",
    "orders by status":
        "SELECT o_orderstatus, count(*) AS n FROM orders GROUP BY o_orderstatus",
    "revenue by order priority": (
        "SELECT o_orderpriority, sum(l_extendedprice) AS revenue FROM lineitem "
        "JOIN orders ON l_orderkey = o_orderkey GROUP BY o_orderpriority"),
    "regions": "SELECT count(*) AS n FROM region",
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--report-dir", type=Path, default=Path("bench") / "reports")
    parser.add_argument("--measure", action="store_true",
                        help="ask and run the queries of QUERIES for real at --scale")
    parser.add_argument("--scale", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--time", action="store_true",
                        help="time the what-if of a pasted query and of a measured one")
    args = parser.parse_args(argv)
    if args.measure:
        return measure(args.scale, args.repeats)
    if args.time:
        return time_what_if_answers(args.scale)
    return as_if_pasted(args.folds, args.report_dir)


# ------------------------------------------------------------ as if pasted
def plan_only(dag: dict, dataset_bytes: float) -> dict:
    """The plan part of a profile's DAG (its event-log stages dropped), knowing the bytes
    of the data set its scans' files are of: what a pasted query's plan gives."""
    nodes = [dict(node) for node in dag["nodes"] if node.get("stage_id") is None]
    ids = {node["id"] for node in nodes}
    edges = [dict(edge) for edge in dag["edges"]
             if edge["source"] in ids and edge["target"] in ids]
    return {"directed": True, "multigraph": False,
            "graph": {**dag.get("graph", {}), "dataset_bytes": float(dataset_bytes)},
            "nodes": nodes, "edges": edges}


def as_if_pasted(n_folds: int, report_dir: Path) -> int:
    import numpy as np

    from jobgauge.models import predict_frame
    from jobgauge.models.evaluation import (
        EVAL_PARAMS, LARGE_SCALE_FACTOR, _group_folds, load_quiet_frames, metrics,
        model_from_spec, scale_factors,
    )

    frame = load_quiet_frames()[0]["quiet"].reset_index(drop=True)
    tpch = frame["workload"].astype(str).str.startswith("tpch-").to_numpy()
    references = frame.index[frame["profile_reference"].astype(bool) & tpch]
    plans = {}
    for i in references:
        dag = frame.at[i, "dag"]
        if isinstance(dag, dict):
            plans[frame.at[i, "workload"]] = plan_only(dag, frame.at[i, "input_bytes"])
    large = scale_factors(frame) >= LARGE_SCALE_FACTOR
    scored = tpch & large & frame["completed"].astype(bool).to_numpy() & \
        frame["workload"].isin(list(plans)).to_numpy()
    folds = _group_folds(frame["workload"].astype(str).to_numpy(), n_folds)
    rows = {"y": [], "workload": [], "datasize": [], "borrowed": [], "low": [], "high": [],
            "before": [], "before_low": [], "before_high": [], "from": []}
    started = time.perf_counter()
    for number, (_, held) in enumerate(folds, 1):
        out = set(frame["workload"].iloc[held])
        train = frame[~frame["workload"].isin(out)]
        test = frame[frame["workload"].isin(out) & scored].copy()
        if test.empty:
            continue
        model = model_from_spec("stage", random_state=0, **EVAL_PARAMS.get("stage", {}))
        model.fit(train)
        asked = test.assign(workload="sql-" + test["workload"].astype(str), profile=None)
        asked["dag"] = [plans[w] for w in test["workload"]]
        answer = predict_frame(model, asked)
        before = predict_frame(model, asked.assign(dag=None))
        rows["y"] += test["runtime_s"].astype(float).tolist()
        rows["workload"] += test["workload"].astype(str).tolist()
        rows["datasize"] += test["datasize"].astype(str).tolist()
        rows["borrowed"] += answer["predicted_runtime_s"].tolist()
        rows["low"] += answer["predicted_low_s"].tolist()
        rows["high"] += answer["predicted_high_s"].tolist()
        rows["before"] += before["predicted_runtime_s"].tolist()
        rows["before_low"] += before["predicted_low_s"].tolist()
        rows["before_high"] += before["predicted_high_s"].tolist()
        rows["from"] += [" ".join(jobs or ()) for jobs in answer["answered_from"]]
        print(f"fold {number}/{len(folds)}: {len(test)} runs of {', '.join(sorted(out))} "
              f"({time.perf_counter() - started:.0f} s)", flush=True)
    y = np.array(rows["y"])
    sizes = np.array(rows["datasize"])
    lines = ["# Queries never measured, answered from their plan (bench/pasted_queries.py)",
             "",
             f"The quiet corpus's TPC-H queries in {len(folds)} groups; each group left "
             "out of training entirely and its finished runs at SF >= 1 asked as a pasted "
             "query is asked (its plan, no profile, a workload never seen).", "",
             "| answer | scale | runs | MdAPE | 80 % coverage | width high/low |",
             "|---|---|---|---|---|---|"]
    for name, key in (("from the plan (now)", ""), ("from the data set's size (before)",
                                                    "before")):
        center = np.array(rows[key or "borrowed"])
        low = np.array(rows[f"{key}_low" if key else "low"])
        high = np.array(rows[f"{key}_high" if key else "high"])
        for label in ["all"] + sorted(set(sizes), key=lambda s: float(s[2:])):
            keep = np.ones(len(y), bool) if label == "all" else sizes == label
            row = metrics(y[keep], center[keep], low[keep], high[keep])
            lines.append(f"| {name} | {label} | {row['n']} | {100 * row['mdape']:.1f} % | "
                         f"{100 * row['coverage80']:.1f} % | x{row['width80']:.2f} |")
    lines += ["", "Per query (median over its runs at SF >= 1; the queries whose profiles it "
              "borrowed, most alike first):", "",
              "| query | borrowed from | runs | median error now | median error before |",
              "|---|---|---|---|---|"]
    workloads = np.array(rows["workload"])
    for workload in sorted(set(workloads), key=lambda w: int(w.split("q")[1])):
        keep = workloads == workload
        now = np.median(np.array(rows["borrowed"])[keep] / y[keep] - 1)
        then = np.median(np.array(rows["before"])[keep] / y[keep] - 1)
        source = sorted(set(np.array(rows["from"], dtype=object)[keep]))
        lines.append(f"| {workload} | {'; '.join(source)} | {int(keep.sum())} | "
                     f"{100 * now:+.0f} % | {100 * then:+.0f} % |")
    text = "\n".join(lines) + "\n"
    print(text)
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "pasted_queries.md").write_text(text, encoding="utf-8")
    print(f"wrote {report_dir / 'pasted_queries.md'}")
    return 0


# ------------------------------------------------------------ measured
def measure(scale: float, repeats: int) -> int:
    sys.path.insert(0, str(Path(__file__).parent))
    from _warm import MAX_WAIT_S, QUIET_LOAD

    from jobgauge.profiler.runners.driver import LoadGuard
    from jobgauge.profiler.runners.runner import DEFAULT_DATA_ROOT
    from jobgauge.profiler.workloads.tpch import TABLES, ensure_data, scale_label

    size = scale_label(scale)
    folder = ensure_data(DEFAULT_DATA_ROOT, size)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("jobgauge pasted queries")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    for table in TABLES:
        spark.read.parquet(str(folder / f"{table}.parquet")).createOrReplaceTempView(table)
    guard = LoadGuard(threshold=QUIET_LOAD, max_wait_s=MAX_WAIT_S, read_own_cpu=lambda: 0.0)
    times = {name: [] for name in QUERIES}
    try:
        for name, sql in QUERIES.items():        # warm-up: 3 runs of each query
            for _ in range(3):
                spark.sql(sql).collect()
        for _ in range(repeats):
            for name, sql in QUERIES.items():
                load = guard.wait_quiet()["load_at_start"]
                began = time.perf_counter()
                spark.sql(sql).collect()
                times[name].append(time.perf_counter() - began)
                print(f"  {name} {size}: {times[name][-1]:.2f} s (load {load:.2f} at start)",
                      flush=True)
    finally:
        spark.stop()      # the web service's planner starts its own (local[1]) after it
    with tempfile.TemporaryDirectory(prefix="jobgauge-pasted-") as tmp:
        answers = _answers(scale, Path(tmp))
    print(f"\n| query at SF {scale:g} on local[2], Spark's defaults | the form's answer [80 %] "
          f"| borrowed from | measured now (median of {repeats}) | error |\n|---|---|---|---|---|")
    for name in QUERIES:
        answer = answers[name]
        median = statistics.median(times[name])
        print(f"| {name} | {answer['runtime_s']:.2f} s [{answer['low_s']:.2f}, "
              f"{answer['high_s']:.2f}] | {answer['from'] or '-'} | {median:.2f} s "
              f"({', '.join(f'{t:.2f}' for t in times[name])}) | "
              f"{100 * (answer['runtime_s'] / median - 1):+.0f} % |")
    return 0


# ------------------------------------------------------------ timed
#: How many times ``--time`` asks each what-if (after one untimed answer).
TIME_REPEATS = 60


def time_what_if_answers(scale: float) -> int:
    """Median wall milliseconds of the web service's what-if (``Service.estimate``, 3
    instance types x 8 node counts) for the first of QUERIES pasted at SF ``scale``
    (its plan drawn once, as the form draws it) and for TPC-H Q3 at SF 3, alternating
    on one warm service (the shipped model, trained on first need in a temporary
    store)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from evaluate import WHAT_IF_QUESTION, time_asks
    from form_answers import service_for

    from jobgauge.data import run_tables
    from jobgauge.webapp.requests import parse_estimate

    with tempfile.TemporaryDirectory(prefix="jobgauge-pasted-") as tmp:
        service = service_for(run_tables(), Path(tmp))
        names = list(service.instance_options())
        sql = next(iter(QUERIES.values()))
        pasted = parse_estimate({**{k: v for k, v in WHAT_IF_QUESTION.items() if k != "workload"},
                                 "sql": sql, "scale": scale},
                                known_workloads=service.known_workloads(),
                                catalog_names=names, strict=True)
        measured = parse_estimate(WHAT_IF_QUESTION, known_workloads=service.known_workloads(),
                                  catalog_names=names, strict=True)
        dag = service.dag(pasted)
        times = time_asks({
            f"pasted at SF {scale:g}: {sql}": lambda: service.estimate(pasted, dag=dag),
            "TPC-H Q3 at SF 3": lambda: service.estimate(measured, plan=False)}, TIME_REPEATS)
    for name, values in times.items():
        print(f"{name}: median {statistics.median(values):.1f} ms over {TIME_REPEATS} "
              f"(quartiles {statistics.quantiles(values, n=4)[0]:.1f}-"
              f"{statistics.quantiles(values, n=4)[2]:.1f} ms)")
    return 0


def _answers(scale: float, folder: Path) -> dict:
    """The web service's answer to each of QUERIES pasted at SF ``scale`` on local[2]."""
    from form_answers import service_for

    from jobgauge.data import run_tables
    from jobgauge.job import jobs_frame
    from jobgauge.webapp.requests import parse_estimate

    service = service_for(run_tables(), folder)
    model, _ = service.ensure_model()
    options = service.instance_options()
    out = {}
    for name, sql in QUERIES.items():
        request = parse_estimate({"sql": sql, "scale": scale, "instance_types": ["local[2]"]},
                                 known_workloads=service.known_workloads(),
                                 catalog_names=list(options), strict=True)
        dag = service.dag(request)
        estimate = service.estimate(request, dag=dag)
        job = service.job(request, options["local[2]"], dag=dag)
        method = model.prediction_method(jobs_frame([job]))[0]
        out[name] = {**estimate["recommended"],
                     "from": " ".join(estimate["answered_from"] or ())}
        print(f"  asked {name}: {out[name]['runtime_s']:.2f} s ({method})", flush=True)
    return out


if __name__ == "__main__":
    raise SystemExit(main())
