"""How a fresh application with a larger driver heap warms up, against Spark's defaults.

    nice -n 10 .venv/bin/python bench/heap_warmup.py [--query 5] [--scale 1] [--rounds 4]
        [--heap 4g] [--partitions 12] [--fresh]

Runs one TPC-H query on local[2] in two fresh warm applications (``WarmRunner``, 3
warm-up runs of the query in each), the defaults' (1 GiB driver) and one with a
``--heap`` driver, for ``--rounds`` rounds of five settings in alternating order: the
defaults, ``--partitions`` shuffle partitions, 8 partitions, the heap alone and the
heap with the partitions.  Prints each run (and the 1-minute load at its start) and a
Markdown table of the runs in order and their medians; writes nothing else.

With ``--fresh`` every run is a fresh application of its own that runs the query once
(``run_workload``, what ``jobgauge run tpch`` and a one-shot ``spark-submit`` do), in the
same alternating rounds; it prints the query's time in that cold application, the
application's (its event log, start to end) and the wall time with the JVM's start.

Why: the real check of the tuner (``tests/test_tuned_vs_defaults.py``) measured a
recommended 4g driver slower than the defaults when the 4g application started late,
behind a defaults application warm from the queries before.  The runs in order say
whether a larger heap is slower or only slower to warm up.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path


def main(argv=None) -> int:
    from jobgauge.profiler import WarmRunner
    from jobgauge.profiler.runners.driver import read_load_1min

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query", type=int, default=5)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--heap", default="4g", help="the larger driver heap (default 4g)")
    parser.add_argument("--partitions", type=int, default=12,
                        help="the shuffle partitions tried beside the heap (default 12)")
    parser.add_argument("--fresh", action="store_true",
                        help="every run a fresh application of its own (one-shot submissions)")
    args = parser.parse_args(argv)
    workload, size = f"tpch-q{args.query}", f"sf{args.scale:g}"
    heap = {"spark.driver.memory": args.heap}
    partitions = {"spark.sql.shuffle.partitions": str(args.partitions)}
    variants = {"defaults": {}, f"{args.partitions} partitions": partitions,
                "8 partitions": {"spark.sql.shuffle.partitions": "8"},
                f"{args.heap} driver": heap,
                f"{args.heap} driver, {args.partitions} partitions": {**heap, **partitions}}
    if args.fresh:
        return _fresh(workload, size, variants, args)
    runs = {name: [] for name in variants}
    with tempfile.TemporaryDirectory(prefix="jobgauge-heap-") as tmp:
        with WarmRunner(master="local[2]", eventlog_dir=Path(tmp) / "eventlogs",
                        work_dir=Path(tmp) / "work", warmup="workload", warmup_runs=3,
                        profiles=False, max_applications=2) as runner:
            for number in range(args.rounds):
                order = list(variants) if number % 2 == 0 else list(reversed(variants))
                for name in order:
                    load = read_load_1min()
                    run = runner.run(workload, size, dict(variants[name]), timeout_s=900)
                    if run["status"] != "succeeded":
                        raise SystemExit(f"{workload} {size} with {name}: {run['status']}: "
                                         f"{run.get('error')}")
                    runs[name].append(run["runtime_s"])
                    print(f"  round {number + 1}: {name}: {run['runtime_s']:.2f} s "
                          f"(load {load:.2f} at start)", flush=True)
    print(f"\n| {workload} at SF {args.scale:g} on local[2] | runs in order | median |\n"
          "|---|---|---|")
    for name, values in runs.items():
        print(f"| {name} | {', '.join(f'{v:.2f}' for v in values)} s | "
              f"{statistics.median(values):.2f} s |")
    return 0


def _fresh(workload, size, variants, args) -> int:
    """``--fresh``: each run a fresh application; the query's, the application's and the
    wall time per run, in order, and their medians."""
    import time

    from jobgauge.profiler.runners.driver import read_load_1min
    from jobgauge.profiler.runners.runner import run_workload

    times = {name: {"query": [], "application": [], "wall": []} for name in variants}
    with tempfile.TemporaryDirectory(prefix="jobgauge-heap-") as tmp:
        for number in range(args.rounds):
            order = list(variants) if number % 2 == 0 else list(reversed(variants))
            for name in order:
                load = read_load_1min()
                started = time.perf_counter()
                run = run_workload(workload, size, dict(variants[name]), timeout_s=900,
                                   eventlog_dir=Path(tmp) / "eventlogs")
                wall = time.perf_counter() - started
                if run["status"] != "succeeded" or run["profile"] is None:
                    raise SystemExit(f"{workload} {size} with {name}: {run['status']}: "
                                     f"{run.get('error')}")
                entry = times[name]
                entry["query"].append(run["runtime_s"])
                entry["application"].append(run["profile"].summary()["runtime_s"])
                entry["wall"].append(wall)
                print(f"  round {number + 1}: {name}: query {run['runtime_s']:.2f} s, "
                      f"application {entry['application'][-1]:.2f} s, wall {wall:.2f} s "
                      f"(load {load:.2f} at start)", flush=True)
    print(f"\n| {workload} at SF {args.scale:g} on local[2], fresh applications | "
          "query (cold), in order | median | application, in order | median | wall median |\n"
          "|---|---|---|---|---|---|")
    for name, entry in times.items():
        print(f"| {name} | {', '.join(f'{v:.2f}' for v in entry['query'])} s | "
              f"{statistics.median(entry['query']):.2f} s | "
              f"{', '.join(f'{v:.2f}' for v in entry['application'])} s | "
              f"{statistics.median(entry['application']):.2f} s | "
              f"{statistics.median(entry['wall']):.2f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
