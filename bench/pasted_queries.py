"""How well a query jobgauge never measured is answered from its plan alone.

    nice -n 10 .venv/bin/python bench/pasted_queries.py [--folds 5] [--report-dir DIR]
    nice -n 10 .venv/bin/python bench/pasted_queries.py --measure --scale 10 [--repeats 3]
    nice -n 10 .venv/bin/python bench/pasted_queries.py --check [--profile-scale 0.1 ...]
        [--keep-profiles DIR]
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

**Measured** (``--measure``): queries that are not TPC-H's (``QUERIES``: over one
table, joins of every size, a window, an anti join), run for real at SF ``--scale``: one
warm local[2] application with Spark's defaults, 3 warm-up runs of each query, then
``--repeats`` interleaved runs each, every run started once fewer than 0.7 cores are busy
(or after 20 s) and cancelled past 600 s.  The time is the query's own, inside the
warm application, as the corpus and the form mean it.  Every run goes to the journal
``bench/reports/pasted_measured.jsonl`` as it ends (a failed or timed-out run too); a
second ``--measure`` resumes from it.  Then, as ``--check`` does alone: each query at
each measured scale is asked through the web service's code (the shipped model, trained
on first need in a temporary store; the query planned as the form plans it; asked after
the runs, so that its planner's Spark application does not run beside them), and the
answers are set beside the measured medians in ``bench/reports/pasted_measured.md``.
With ``--profile-scale S`` (repeatable), each query also runs once at SF S as a user
runs it (``jobgauge run tpch --sql TEXT --scale S``: 3 warm-ups, then the measured and
profiled run) into a service's store, and that service answers the same questions: a
query of a user's own, run once.  With ``--keep-profiles DIR`` those runs are kept in
DIR, and a later check with the same DIR answers from them without running anything: a
change of the model scored on the same runs, not on new runs of sub-second queries that
differ by up to 2x from one application to the next.

**Timed** (``--time``): the web service's what-if (3 instance types x 8 node counts)
for the first of those queries pasted at SF ``--scale`` and for TPC-H Q3 at SF 3,
asked in turn on one warm service; prints each median in milliseconds.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))     # the bench's own modules, once
import _journal  # noqa: E402  (bench/_journal.py)

#: The queries ``--measure`` asks and runs, none of them TPC-H's: over one table, joins
#: of every size, a window, an anti join, a table of a fixed size.
QUERIES = {
    "lineitem by return flag":
        "SELECT l_returnflag, count(*) AS n FROM lineitem GROUP BY l_returnflag",
    "orders by status":
        "SELECT o_orderstatus, count(*) AS n FROM orders GROUP BY o_orderstatus",
    "revenue by order priority": (
        "SELECT o_orderpriority, sum(l_extendedprice) AS revenue FROM lineitem "
        "JOIN orders ON l_orderkey = o_orderkey GROUP BY o_orderpriority"),
    "regions": "SELECT count(*) AS n FROM region",
    "top customers by spend": (
        "SELECT c_name, sum(o_totalprice) AS spend FROM customer JOIN orders "
        "ON c_custkey = o_custkey GROUP BY c_name ORDER BY spend DESC LIMIT 10"),
    "parts by brand": (
        "SELECT p_brand, count(*) AS n, avg(p_retailprice) AS price FROM part "
        "GROUP BY p_brand"),
    "suppliers by nation": (
        "SELECT n_name, count(*) AS n FROM supplier JOIN nation ON s_nationkey = n_nationkey "
        "GROUP BY n_name"),
    "late lines by ship mode": (
        "SELECT l_shipmode, count(*) AS n FROM lineitem WHERE l_receiptdate > l_commitdate "
        "GROUP BY l_shipmode"),
    "customers per order year": (
        "SELECT year(o_orderdate) AS y, count(DISTINCT o_custkey) AS customers FROM orders "
        "GROUP BY year(o_orderdate)"),
    "orders over 300 items": (
        "SELECT count(*) AS n FROM (SELECT l_orderkey FROM lineitem GROUP BY l_orderkey "
        "HAVING sum(l_quantity) > 300) AS big"),
    "stock value by part type": (
        "SELECT p_type, sum(ps_supplycost * ps_availqty) AS value FROM partsupp JOIN part "
        "ON ps_partkey = p_partkey GROUP BY p_type"),
    "revenue by supplier nation": (
        "SELECT n_name, sum(l_extendedprice * (1 - l_discount)) AS revenue FROM lineitem "
        "JOIN supplier ON l_suppkey = s_suppkey JOIN nation ON s_nationkey = n_nationkey "
        "GROUP BY n_name"),
    "each customer's largest order": (
        "SELECT count(*) AS n FROM (SELECT o_custkey, row_number() OVER (PARTITION BY "
        "o_custkey ORDER BY o_totalprice DESC) AS r FROM orders) AS ranked WHERE r = 1"),
    "customers without orders": (
        "SELECT count(*) AS n FROM customer WHERE NOT EXISTS (SELECT 1 FROM orders "
        "WHERE o_custkey = c_custkey)"),
    "1995 lines by discount": (
        "SELECT l_discount, count(*) AS n, sum(l_extendedprice) AS value FROM lineitem "
        "WHERE l_shipdate >= date '1995-01-01' GROUP BY l_discount"),
    "1996 revenue by ship mode": (
        "SELECT l_shipmode, sum(l_extendedprice) AS revenue FROM lineitem JOIN orders "
        "ON l_orderkey = o_orderkey WHERE o_orderdate BETWEEN date '1996-01-01' AND "
        "date '1996-12-31' GROUP BY l_shipmode"),
}

#: The journal of ``--measure``: every run, as it ends (``--check`` answers against it).
MEASURED = Path("bench") / "reports" / "pasted_measured.jsonl"
#: A run past this many seconds is cancelled and recorded as timed out.
RUN_TIMEOUT_S = 600.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--report-dir", type=Path, default=Path("bench") / "reports")
    parser.add_argument("--measure", action="store_true",
                        help="ask and run the queries of QUERIES for real at --scale")
    parser.add_argument("--scale", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--check", action="store_true",
                        help="answer the measured runs of the journal (no run)")
    parser.add_argument("--profile-scale", type=float, action="append", default=[],
                        help="with --check: also answer after one profiling run of each "
                             "query at this scale factor (repeatable)")
    parser.add_argument("--keep-profiles", type=Path, metavar="DIR",
                        help="with --profile-scale: keep each scale's profiling runs in "
                             "DIR (a store per scale) and, where DIR has them, answer from "
                             "those instead of running the queries again")
    parser.add_argument("--time", action="store_true",
                        help="time the what-if of a pasted query and of a measured one")
    args = parser.parse_args(argv)
    if args.measure:
        return measure(args.scale, args.repeats)
    if args.check:
        return check(report_dir=args.report_dir, profile_scales=args.profile_scale,
                     keep_profiles=args.keep_profiles)
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
def measure(scale: float, repeats: int, journal: Path = MEASURED) -> int:
    """Run each of QUERIES at SF ``scale`` until the journal holds ``repeats`` finished
    runs of it there (a run that fails or times out is journaled too, never dropped),
    then answer them all (:func:`check`)."""
    from _warm import MAX_WAIT_S, QUIET_LOAD

    from jobgauge.profiler.runners.driver import LoadGuard
    from jobgauge.profiler.runners.runner import DEFAULT_DATA_ROOT
    from jobgauge.profiler.workloads.tpch import TABLES, ensure_data
    from jobgauge.units import scale_label

    runs = _journal.read(journal)

    def finished(name):
        return sum(r["query"] == name and r["scale"] == scale and r["status"] == "succeeded"
                   for r in runs)

    todo = [name for name in QUERIES if finished(name) < repeats]
    if not todo:
        print(f"the journal {journal} holds {repeats} runs of each query at SF {scale:g}")
        return check(journal)
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

    def record(name, load, warmup=False):
        status, seconds, error = _timed(spark, QUERIES[name], RUN_TIMEOUT_S)
        if not warmup or status != "succeeded":
            entry = {"query": name, "sql": QUERIES[name], "scale": scale,
                     "master": "local[2]", "settings": "Spark's defaults",
                     "status": status, "seconds": round(seconds, 3),
                     "load_at_start": None if load is None else round(load, 2),
                     "warmup": warmup, "error": error,
                     "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            runs.append(entry)
            _journal.append(journal, entry)
        print(f"  {'warm-up ' if warmup else ''}{name} {size}: {status} {seconds:.2f} s"
              + ("" if load is None else f" (load {load:.2f} at start)"), flush=True)
        return status

    try:
        for name in list(todo):                  # warm-up: 3 runs of each query
            for _ in range(3):
                if record(name, None, warmup=True) != "succeeded":
                    todo.remove(name)
                    break
        for _ in range(repeats):
            for name in todo:
                if finished(name) < repeats:
                    record(name, guard.wait_quiet()["load_at_start"])
    finally:
        spark.stop()      # the web service's planner starts its own (local[1]) after it
    return check(journal)


def profiling_runs(scale: float, store_url: str) -> None:
    """A user's one run of each of QUERIES at SF ``scale``, as the user makes it:
    ``jobgauge run tpch --sql TEXT --scale S`` (``run_workload`` with the query's text:
    one local[2] application per query with Spark's defaults and an event log, 3
    warm-ups, then the measured and profiled run), recorded in the store
    ``store_url`` under the key the web form gives the text pasted; each measured run
    starts once the load is below the bench's quiet load (or after its wait), and the
    load is recorded with it."""
    from _warm import MAX_WAIT_S, QUIET_LOAD

    from jobgauge.profiler.runners._hive_record import query_workload
    from jobgauge.profiler.runners.collect import run_guard
    from jobgauge.profiler.runners.runner import run_workload
    from jobgauge.units import scale_label
    from jobgauge.store import open_store

    store, size = open_store(store_url), scale_label(scale)
    for name, sql in QUERIES.items():
        run = run_workload(query_workload(sql), size, {}, sql=sql, warmups=3, store=store,
                           timeout_s=RUN_TIMEOUT_S, guard=run_guard(QUIET_LOAD, MAX_WAIT_S))
        print(f"  profiled {name} {size}: {run['status']} {run['runtime_s'] or 0:.2f} s "
              f"(load {run.get('load_at_start', float('nan')):.2f} at start)",
              file=sys.stderr, flush=True)


def merged_store(stores, target: Path) -> None:
    """One store at ``target`` holding the runs (and their profiles) of every store of
    ``stores`` (paths of SQLite stores holding no model yet)."""
    from jobgauge.models._default import store_profile_records
    from jobgauge.store import open_store

    shutil.copy(stores[0], target)
    merged = open_store(str(target))
    for path in stores[1:]:
        store = open_store(str(path))
        runs = store.run_frame()
        records = store_profile_records(store, sorted(set(runs["workload"].astype(str))))
        merged.add_runs(runs.drop(columns=["id"]).to_dict("records"), profiles=records)
        store.close()
    merged.close()


def _timed(spark, sql: str, timeout_s: float) -> tuple[str, float, str | None]:
    """(status, seconds, error) of one run of ``sql``: its Spark job group cancelled past
    ``timeout_s`` (``JobGroupLimit``; then ``timed_out`` at the limit)."""
    import uuid

    from jobgauge.profiler.runners.driver import JobGroupLimit

    context = spark.sparkContext
    group = f"jobgauge-pasted-{uuid.uuid4().hex[:8]}"
    watch = JobGroupLimit(context, group, timeout_s)
    context.setJobGroup(group, "jobgauge pasted query", interruptOnCancel=True)
    watch.start()
    began = time.perf_counter()
    try:
        spark.sql(sql).collect()
        return "succeeded", time.perf_counter() - began, None
    except Exception as exc:         # a failed run is journaled with its first line
        if watch.timed_out.is_set():
            return "timed_out", timeout_s, None
        lines = str(exc).strip().splitlines() or [type(exc).__name__]
        return "failed", time.perf_counter() - began, lines[0][:300]
    finally:
        watch.stop()


def check(journal: Path = MEASURED, report_dir: Path | None = None,
          profile_scales=(), keep_profiles: Path | None = None) -> int:
    """The web service's answer to every query of the journal at every scale it was
    run at, beside its measured runs; writes ``pasted_measured.md`` beside the journal.
    For each of ``profile_scales``, also the answer of a service whose store holds one
    run of each query at that scale (:func:`profiling_runs`), as a user's own query run
    once would have it.  ``keep_profiles``: a folder that keeps each scale's store of
    those runs (``profiled-sf<S>.db``, its runs only) and gives it to a later check,
    which then runs nothing: two versions of the model answer from the same runs."""
    import numpy as np

    from form_answers import service_for

    from jobgauge.data import run_tables

    runs = [r for r in _journal.read(journal) if not r.get("warmup") or r["status"] != "succeeded"]
    if not runs:
        print(f"no runs in {journal}; measure some with --measure", file=sys.stderr)
        return 1
    report_dir = Path(report_dir) if report_dir else journal.parent
    scales = sorted({r["scale"] for r in runs})
    asked = {scale: sorted({r["query"] for r in runs if r["scale"] == scale})
             for scale in scales}
    answers = {}
    with tempfile.TemporaryDirectory(prefix="jobgauge-pasted-") as tmp:
        services = {"pasted: its plan alone": Path(tmp) / "service-0"}
        for number, scale in enumerate(profile_scales, 1):  # runs first, then the planner
            folder = Path(tmp) / f"service-{number}"
            folder.mkdir()
            kept = keep_profiles / f"profiled-sf{scale:g}.db" if keep_profiles else None
            if kept is not None and kept.is_file():
                print(f"  the runs at SF {scale:g} of {kept}", flush=True)
                shutil.copy(kept, folder / "store.db")
            else:
                profiling_runs(scale, str(folder / "store.db"))
                if kept is not None:          # before its service trains a model into it
                    kept.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy(folder / "store.db", kept)
            services[f"after one run at SF {scale:g}"] = folder
        if len(profile_scales) > 1:       # a user who ran each query at every such scale
            folder = Path(tmp) / "service-all"
            folder.mkdir()
            merged_store([services[f"after one run at SF {scale:g}"] / "store.db"
                          for scale in profile_scales], folder / "store.db")
            services["after one run at each of SF " + ", ".join(
                f"{scale:g}" for scale in profile_scales)] = folder
        for method, folder in services.items():
            service = service_for(run_tables(), folder)
            answers[method] = {scale: _answers(service, scale, asked[scale])
                               for scale in scales}
    pasted = next(iter(answers))
    lines = ["# Queries never measured, run for real (bench/pasted_queries.py --measure)", "",
             "Each query pasted into the web service at its scale factor on local[2] with "
             "Spark's defaults (the shipped model), and run for real in one warm local[2] "
             "application with Spark's defaults (3 warm-up runs, then interleaved repeats, "
             "each started once fewer than 0.7 cores were busy or after 20 s). The time is "
             "the query's own inside the warm application. Journal: "
             f"`{journal}`. Reproduce: `nice -n 10 .venv/bin/python bench/pasted_queries.py "
             "--measure --scale S` (it resumes from the journal), then `--check"
             + "".join(f" --profile-scale {scale:g}" for scale in profile_scales)
             + (f" --keep-profiles {keep_profiles}" if keep_profiles else "") + "`.", ""]
    if profile_scales:
        lines += ["After one run at SF s: the same question to a service whose store holds "
                  "one run of each query at SF s, made as a user makes it (`jobgauge run "
                  "tpch --sql TEXT --scale S`: one local[2] application per query with an "
                  "event log, 3 warm-ups, then the measured and profiled run); its model "
                  "trained on first need on the shipped runs and the store's, and the "
                  "answers are calibrated to the query's own run."
                  + (f" Those runs are the ones kept in `{keep_profiles}` (a store per "
                     "scale): the check runs nothing where they are." if keep_profiles
                     else ""), ""]
    lines += ["| answer | scale | queries | MdAPE | median inside the 80 % interval | "
              "within 2x | answer / measured (median) |", "|---|---|---|---|---|---|---|"]
    table = ["", "| scale | query | measured (median; runs) | "
             + " | ".join(f"{m} [80 %]" for m in answers) + " | pasted: answered from |",
             "|---|---|---|" + "---|" * len(answers) + "---|"]
    summary = {m: {} for m in answers}
    for scale in scales:
        for name in asked[scale]:
            mine = [r for r in runs if r["query"] == name and r["scale"] == scale]
            done = [r["seconds"] for r in mine if r["status"] == "succeeded"]
            others = ", ".join(f"{r['status']}" for r in mine if r["status"] != "succeeded")
            median = float(np.median(done)) if done else None
            cells = []
            for method in answers:
                answer = answers[method][scale][name]
                cell = f"{answer['runtime_s']:.2f} s [{answer['low_s']:.2f}, " \
                       f"{answer['high_s']:.2f}]"
                if median is not None:
                    ratio = answer["runtime_s"] / median
                    summary[method].setdefault(scale, []).append(
                        (ratio, answer["low_s"] <= median <= answer["high_s"]))
                    cell += f" {100 * (ratio - 1):+.0f} %"
                cells.append(cell)
            measured = "—" if median is None else f"{median:.2f} s"
            table.append(f"| SF {scale:g} | {name} | {measured} "
                         f"({', '.join(f'{t:.2f}' for t in done)}"
                         f"{'; ' + others if others else ''}) | {' | '.join(cells)} | "
                         f"{answers[pasted][scale][name]['from'] or '-'} |")
    for method, per_scale in summary.items():
        for scale, pairs in per_scale.items():
            ratio = np.array([r for r, _ in pairs])
            lines.append(f"| {method} | SF {scale:g} | {len(ratio)} | "
                         f"{100 * np.median(np.abs(ratio - 1)):.1f} % | "
                         f"{sum(i for _, i in pairs)} of {len(pairs)} | "
                         f"{int(((ratio >= 0.5) & (ratio <= 2)).sum())} of {len(ratio)} | "
                         f"x{np.median(ratio):.2f} |")
    text = "\n".join(lines + table) + "\n"
    print(text)
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "pasted_measured.md").write_text(text, encoding="utf-8")
    print(f"wrote {report_dir / 'pasted_measured.md'}", file=sys.stderr)
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


def _answers(service, scale: float, names) -> dict:
    """The web service's answer to each of QUERIES in ``names`` pasted at SF ``scale`` on
    local[2]."""
    from jobgauge.webapp.requests import parse_estimate

    out = {}
    for name in names:
        request = parse_estimate({"sql": QUERIES[name], "scale": scale,
                                  "instance_types": ["local[2]"]},
                                 known_workloads=service.known_workloads(),
                                 catalog_names=list(service.instance_options()), strict=True)
        estimate = service.estimate(request)
        out[name] = {**estimate["recommended"],
                     "from": " ".join(estimate["answered_from"] or ())}
        runs = estimate["history"]["runs"]
        print(f"  asked {name} at SF {scale:g}: {out[name]['runtime_s']:.2f} s (" +
              (f"from {out[name]['from']}" if out[name]["from"] else
               f"its own profile, calibrated to its {runs} runs") + ")",
              file=sys.stderr, flush=True)
    return out


if __name__ == "__main__":
    raise SystemExit(main())
