"""How a fresh application with a larger driver heap warms up, against Spark's defaults.

    nice -n 10 .venv/bin/python bench/heap_warmup.py [--query 5] [--scale 1] [--rounds 4]
        [--heap 4g] [--partitions 12]

Runs one TPC-H query on local[2] in two fresh warm applications (``WarmRunner``, 3
warm-up runs of the query in each), the defaults' (1 GiB driver) and one with a
``--heap`` driver, for ``--rounds`` rounds of five settings in alternating order: the
defaults, ``--partitions`` shuffle partitions, 8 partitions, the heap alone and the
heap with the partitions.  Prints each run (and the 1-minute load at its start) and a
Markdown table of the runs in order and their medians; writes nothing else.

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
    args = parser.parse_args(argv)
    workload, size = f"tpch-q{args.query}", f"sf{args.scale:g}"
    heap = {"spark.driver.memory": args.heap}
    partitions = {"spark.sql.shuffle.partitions": str(args.partitions)}
    variants = {"defaults": {}, f"{args.partitions} partitions": partitions,
                "8 partitions": {"spark.sql.shuffle.partitions": "8"},
                f"{args.heap} driver": heap,
                f"{args.heap} driver, {args.partitions} partitions": {**heap, **partitions}}
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


if __name__ == "__main__":
    sys.exit(main())
