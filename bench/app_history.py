"""Does what ran before in an application change a query's time, or whether it finishes?

    nice -n 10 .venv/bin/python bench/app_history.py [--query 7] [--scale 10] [--heap 4g]
        [--before 1 3 18] [--runs 4] [--json]

Runs TPC-H ``--query`` on local[2] with a ``--heap`` driver in two applications, one
after the other, each in a Python process (and so a JVM) of its own: a fresh one that
runs only the query, ``--runs`` times, and a used one that runs the ``--before`` queries
first and then the query as often.  ``tpch-sf10`` ran its 22 queries in one application
per configuration; the v5 tables and every ``spark-submit`` run one query in a fresh
application.  Prints each run (its wall time inside the application, the JVM's GC
seconds over it, the heap it had committed after it, the 1-minute load at its start,
and ``failed`` with Spark's first line of error where it failed), then a Markdown table;
with ``--json`` the runs as JSON.  Spark logs at INFO in these applications, so a
failure's cause in the JVM shows: the script counts the ``java.lang.OutOfMemoryError:
Java heap space`` lines each application logged (Spark reports such a failure of a
task as ``UNABLE_TO_ACQUIRE_MEMORY``).  Writes nothing else.

Measured in session 58 (quiet machine, SF 10; data/README.md): Q4 with a 4g driver
(``--query 4 --runs 3``) finished 1 of 3 runs in a fresh application, the others with
the JVM's heap exhausted, and all 3 after Q1, Q3 and Q18; Q7 with a 4g driver (the
defaults) took 27.3, 26.1 and 27.9 s warm in a fresh application and 28.0, 29.2 and
25.9 s after the other queries.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HEAP_OOM = "java.lang.OutOfMemoryError: Java heap space"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query", type=int, default=7)
    parser.add_argument("--scale", type=float, default=10.0)
    parser.add_argument("--heap", default="4g", help="the driver heap (default 4g)")
    parser.add_argument("--before", nargs="*", type=int, default=[1, 3, 18],
                        help="the queries the used application runs first (default 1 3 18)")
    parser.add_argument("--runs", type=int, default=4,
                        help="runs of the query in each application (default 4; the first "
                             "is the application's cold one)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting of both applications (repeatable), e.g. "
                             "spark.driver.extraJavaOptions=-Xms4g")
    parser.add_argument("--json", action="store_true", help="print the runs as JSON")
    parser.add_argument("--application", nargs="+", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    settings = dict(item.split("=", 1) for item in args.conf if "=" in item)
    if len(settings) != len(args.conf):
        parser.error("--conf takes KEY=VALUE")
    if args.application:      # one application: this process's JVM
        return _application(args.application, args.scale, args.heap, settings)
    from jobgauge.profiler.runners.runner import DEFAULT_DATA_ROOT
    from jobgauge.profiler.workloads.tpch import ensure_data

    ensure_data(DEFAULT_DATA_ROOT, args.scale)     # made once, outside the timed runs
    plans = {"fresh": [args.query] * args.runs,
             "used": list(args.before) + [args.query] * args.runs}
    runs = []
    for name, order in plans.items():
        for run in _spawn(order, args.scale, args.heap, args.conf):
            runs.append({"application": name, **run})
            if not args.json:
                print(f"  {name}: q{run['query']} {run['status']} {run['wall_s']:.2f} s "
                      f"(GC {run['gc_s']:.2f} s, heap {run['heap_gib']:.2f} GiB, load "
                      f"{run['load_at_start']:.2f} at start)"
                      + (f": {run['error']}" if run["error"] else ""), flush=True)
    if args.json:
        print(json.dumps(runs, indent=2))
        return 0
    print("\n" + _table(runs, args))
    return 0


def _spawn(order, scale, heap, conf) -> list[dict]:
    """The runs of one application in a process of its own, with its heap OOM count."""
    command = [sys.executable, __file__, "--application", *map(str, order),
               "--scale", str(scale), "--heap", heap,
               *(part for item in conf for part in ("--conf", item))]
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600,
                          check=False)
    runs = [json.loads(line[len("RUN "):]) for line in done.stdout.splitlines()
            if line.startswith("RUN ")]
    if not runs:
        raise SystemExit(f"the application failed: {done.stderr.strip()[-2000:]}")
    ooms = done.stderr.count(HEAP_OOM)
    return [{**run, "heap_oom_lines_in_application": ooms} for run in runs]


def _application(order, scale, heap, settings) -> int:
    """Run ``order`` in one Spark application; one ``RUN {json}`` line per query."""
    from pyspark.sql import SparkSession

    from jobgauge.profiler.runners.runner import DEFAULT_DATA_ROOT
    from jobgauge.profiler.workloads.tpch import TpchQuery, ensure_data

    data = ensure_data(DEFAULT_DATA_ROOT, scale)
    builder = (SparkSession.builder.master("local[2]").config("spark.driver.memory", heap)
               .config("spark.ui.enabled", "false"))
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("INFO")
    jvm = spark._jvm

    def gc_s():
        return sum(bean.getCollectionTime() for bean in
                   jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()) / 1e3

    try:
        for number in order:
            load, gc_before, started = os.getloadavg()[0], gc_s(), time.perf_counter()
            status, error = "succeeded", None
            try:
                TpchQuery(number).run(spark, data)
            except Exception as exc:  # noqa: BLE001 - a failed run is a result here
                status = "failed"
                error = next((line.strip(" :") for line in str(exc).splitlines()
                              if "Exception" in line or "Error" in line), str(exc))[:240]
            wall = time.perf_counter() - started
            print("RUN " + json.dumps({
                "query": number, "status": status, "wall_s": round(wall, 3),
                "gc_s": round(gc_s() - gc_before, 3),
                "heap_gib": round(jvm.java.lang.Runtime.getRuntime().totalMemory() / 2**30, 2),
                "load_at_start": round(load, 2), "error": error}), flush=True)
    finally:
        spark.stop()
    return 0


def _table(runs, args) -> str:
    """A Markdown table: the query's runs in each application, in order."""
    lines = [f"| TPC-H Q{args.query} at SF {args.scale:g}, local[2], {args.heap} driver | "
             "runs of the query, in order | finished | median of the warm ones | "
             "heap OOM lines logged |", "|---|---|---|---|---|"]
    used = (f"after Q{', Q'.join(map(str, args.before))}" if args.before
            else "fresh, a second application")
    for name, where in (("fresh", "fresh"), ("used", used)):
        mine = [r for r in runs if r["application"] == name
                and r["query"] == args.query][-args.runs:]
        finished = [r for r in mine if r["status"] == "succeeded"]
        warm = [r["wall_s"] for r in finished if r is not mine[0]]
        shown = ", ".join(f"{r['wall_s']:.1f}" + ("" if r in finished else " failed")
                          for r in mine)
        median = f"{statistics.median(warm):.2f} s" if warm else "—"
        ooms = mine[0]["heap_oom_lines_in_application"] if mine else 0
        lines.append(f"| {where} | {shown} s | {len(finished)} of {len(mine)} | {median} | "
                     f"{ooms} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
