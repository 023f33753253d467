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
    from jobgauge.units import scale_label
    workload, size = f"tpch-q{args.query}", scale_label(args.scale)
    heap = {"spark.driver.memory": args.heap}
    partitions = {"spark.sql.shuffle.partitions": str(args.partitions)}
    variants = {"defaults": {}, f"{args.partitions} partitions": partitions,
                "8 partitions": {"spark.sql.shuffle.partitions": "8"},
                f"{args.heap} driver": heap,
                f"{args.heap} driver, {args.partitions} partitions": {**heap, **partitions}}
    with tempfile.TemporaryDirectory(prefix="jobgauge-heap-") as tmp:
        if args.fresh:
            times = _measure(variants, args.rounds,
                             lambda settings: _fresh_run(workload, size, settings, Path(tmp)))
            title = f"{workload} at SF {args.scale:g} on local[2], fresh applications"
        else:
            with WarmRunner(master="local[2]", eventlog_dir=Path(tmp) / "eventlogs",
                            work_dir=Path(tmp) / "work", warmup="workload", warmup_runs=3,
                            profiles=False, max_applications=2) as runner:
                times = _measure(variants, args.rounds, lambda settings: _checked(
                    runner.run(workload, size, settings, timeout_s=900)))
            title = f"{workload} at SF {args.scale:g} on local[2]"
    print("\n" + _table(title, times))
    return 0


def _measure(variants, rounds, run) -> dict:
    """{variant: {measure: [seconds in order]}}: ``run(settings)`` (a dict of measures in
    seconds) of every variant in each of ``rounds`` rounds, in alternating order, each
    printed with the 1-minute load at its start."""
    from jobgauge.profiler.runners.driver import read_load_1min

    times = {name: {} for name in variants}
    for number in range(rounds):
        for name in list(variants) if number % 2 == 0 else list(reversed(variants)):
            load = read_load_1min()
            measured = run(dict(variants[name]))
            for measure, seconds in measured.items():
                times[name].setdefault(measure, []).append(seconds)
            print(f"  round {number + 1}: {name}: " + ", ".join(
                f"{measure} {seconds:.2f} s" for measure, seconds in measured.items())
                + f" (load {load:.2f} at start)", flush=True)
    return times


def _checked(run) -> dict:
    """The query's time of a run that succeeded; else the run stops the script."""
    if run["status"] != "succeeded":
        raise SystemExit(f"{run['workload']} {run['datasize']}: {run['status']}: "
                         f"{run.get('error')}")
    return {"query": run["runtime_s"]}


def _fresh_run(workload, size, settings, folder) -> dict:
    """``--fresh``: one fresh application that runs the query once: the query's time in
    it (cold), the application's (its event log, start to end) and the wall time with
    the JVM's start."""
    import time

    from jobgauge.profiler.runners.runner import run_workload

    started = time.perf_counter()
    run = run_workload(workload, size, settings, timeout_s=900,
                       eventlog_dir=folder / "eventlogs")
    wall = time.perf_counter() - started
    if run["profile"] is None:
        run["status"] = f"{run['status']} without an event log"
    return {**_checked(run), "application": run["profile"].summary()["runtime_s"],
            "wall": wall}


def _table(title, times) -> str:
    """A Markdown table: per variant, each measure's runs in order and their median."""
    measures = list(next(iter(times.values())))
    lines = [f"| {title} | " + " | ".join(f"{m}, in order | median" for m in measures) + " |",
             "|---|" + "---|---|" * len(measures)]
    for name, entry in times.items():
        lines.append(f"| {name} | " + " | ".join(
            f"{', '.join(f'{v:.2f}' for v in entry[m])} s | {statistics.median(entry[m]):.2f} s"
            for m in measures) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
