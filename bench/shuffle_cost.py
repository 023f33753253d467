"""What more map tasks cost a SQL shuffle, by its partition count, measured.

TPC-H queries at one scale, split at two ``spark.sql.files.maxPartitionBytes`` and
shuffled into two ``spark.sql.shuffle.partitions``, in one warm application.

    nice -n 10 .venv/bin/python bench/shuffle_cost.py [--queries 3 6] [--scale 3]
        [--repeats 4] [--split-mib 128 32] [--partitions 200 20] [--driver-memory 4g]
        [--master local[2]] [--report PATH] [--json]

Why: the quiet corpus's TPC-H runs at SF 3 with 32 MiB splits (4g driver) took 1.30x the
time of the same runs with Spark's 128 MiB (median over the 22 queries), and the stage
model, which charges a small overhead per task, predicted them 31 % short (protocol (e)
of ``bench/evaluate.py --quiet-corpus``).  This script measures where the time goes.

Each configuration runs each query ``--repeats`` times, interleaved, after 3 warm-up
runs of each query (``WarmRunner``; the query's own time inside the application, as the
corpus means it), each run after at most 20 s of waiting for fewer than 0.7 cores busy.
From each run's profile (cut from the application's event log by ``WarmRunner`` when
the application stops): the stages that write a shuffle (the map side), their tasks,
their task CPU seconds, and the map segments (map tasks x shuffle partitions: every map
task writes one segment per partition; an exchange to a single partition, TPC-H Q6's
global sum, writes one, so its count is an upper bound there).  Prints a Markdown table
(medians over the repeats) and writes it to ``--report`` (default
``bench/reports/shuffle_cost.md``); ``--json`` prints the rows as JSON instead.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REPORT = REPO / "bench" / "reports" / "shuffle_cost.md"
MIB = 2 ** 20


def main(argv=None) -> int:
    from _warm import warm_runs

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", nargs="+", type=int, default=[3, 6])
    parser.add_argument("--scale", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--split-mib", nargs="+", type=int, default=[128, 32],
                        help="spark.sql.files.maxPartitionBytes values, MiB (default 128 32)")
    parser.add_argument("--partitions", nargs="+", type=int, default=[200, 20],
                        help="spark.sql.shuffle.partitions values (default 200 20)")
    parser.add_argument("--driver-memory", default="4g",
                        help="spark.driver.memory of the application (default 4g: the "
                             "corpus's 32 MiB runs had it)")
    parser.add_argument("--master", default="local[2]", choices=["local[1]", "local[2]"])
    parser.add_argument("--report", type=Path, default=REPORT,
                        help="where the Markdown report goes (default %(default)s)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be 1 or more")
    if any(not 1 <= q <= 22 for q in args.queries):
        parser.error("--queries are TPC-H query numbers, 1 to 22")
    if args.scale <= 0 or min(args.split_mib) < 1 or min(args.partitions) < 1:
        parser.error("--scale, --split-mib and --partitions must be positive")
    from jobgauge.units import scale_label
    size = scale_label(args.scale)
    base = {"spark.master": args.master, "spark.driver.memory": args.driver_memory}
    settings = [(split, parts) for split in args.split_mib for parts in args.partitions]
    runs = []
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="jobgauge-shuffle-cost-") as tmp:
        with warm_runs(args.master, Path(tmp), profiles=True) as measure:
            for repeat in range(args.repeats):
                for query in args.queries:
                    for split, parts in settings:
                        config = {**base,
                                  "spark.sql.files.maxPartitionBytes": str(split * MIB),
                                  "spark.sql.shuffle.partitions": str(parts)}
                        run, load = measure(f"tpch-q{query}", size, config,
                                            f"tpch-q{query} {size} {split} MiB / {parts}")
                        # ``run`` gets its profile when the application stops
                        runs.append({"query": query, "split_mib": split, "partitions": parts,
                                     "runtime_s": run["runtime_s"], "load": load,
                                     "run": run})
                        print(f"  Q{query} {split} MiB / {parts}: {run['runtime_s']:.2f} s "
                              f"(load {load:.2f} at start)", file=sys.stderr, flush=True)
    for run in runs:
        run.update(_map_side(run.pop("run").get("profile"), run["partitions"]))
    rows = _medians(runs)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    table = _table(rows, size, args)
    print(table)
    args.report.write_text(
        f"# What more map tasks cost a SQL shuffle\n\nGenerated {time.strftime('%Y-%m-%d')} by "
        f"`bench/shuffle_cost.py` in {(time.time() - started) / 60:.1f} min. Reproduce with "
        f"`nice -n 10 .venv/bin/python bench/shuffle_cost.py "
        f"{_arguments(args)}`.\n\n{_doc()}\n\n{table}\n")
    print(f"\nreport: {args.report}")
    return 0


def _arguments(args) -> str:
    """The command-line arguments that reproduce this run."""
    words = [f"--queries {' '.join(map(str, args.queries))}", f"--scale {args.scale:g}",
             f"--repeats {args.repeats}",
             f"--split-mib {' '.join(map(str, args.split_mib))}",
             f"--partitions {' '.join(map(str, args.partitions))}",
             f"--driver-memory {args.driver_memory}", f"--master '{args.master}'"]
    if args.report != REPORT:
        report = args.report.resolve()
        shown = report.relative_to(REPO) if report.is_relative_to(REPO) else report
        words.append(f"--report {shown}")
    return " ".join(words)


def _map_side(profile, partitions: int) -> dict:
    """A run's map side from its profile (None where its event log could not be read):
    the tasks, task CPU seconds and segments of the stages that write a shuffle."""
    if profile is None:
        return {"map_tasks": None, "map_cpu_s": None, "segments": None}
    stages = [s for s in profile.stages if (s.get("shuffle_write_bytes") or 0) > 0]
    tasks = sum(int(s.get("n_tasks") or 0) for s in stages)
    return {"map_tasks": tasks,
            "map_cpu_s": sum((s.get("executor_cpu_time_ms") or 0) for s in stages) / 1e3,
            "segments": tasks * partitions}


def _medians(runs) -> list[dict]:
    """One row per (query, split, partitions): medians over its repeats."""
    groups = {}
    for run in runs:
        groups.setdefault((run["query"], run["split_mib"], run["partitions"]), []).append(run)
    rows = []
    for (query, split, parts), mine in groups.items():
        def median(key):
            values = [r[key] for r in mine if r[key] is not None]
            return statistics.median(values) if values else None
        rows.append({"query": query, "split_mib": split, "partitions": parts,
                     "runs": len(mine), "runtime_s": median("runtime_s"),
                     "runtimes_s": [round(r["runtime_s"], 2) for r in mine],
                     "map_tasks": median("map_tasks"), "map_cpu_s": median("map_cpu_s"),
                     "segments": median("segments"), "load": median("load")})
    return rows


def _table(rows, size, args) -> str:
    lines = [f"TPC-H at {size.upper()} on {args.master}, {args.driver_memory} driver "
             f"(medians of {args.repeats} runs; map side: the stages that write a shuffle):",
             "", "| query | split MiB | shuffle partitions | runtime s (runs) | map tasks | "
             "map segments | map task CPU s | load at start |", "|---|---|---|---|---|---|---|---|"]
    def fmt(value, spec):
        return "" if value is None else format(value, spec)

    for row in rows:
        lines.append(
            f"| Q{row['query']} | {row['split_mib']} | {row['partitions']} | "
            f"{row['runtime_s']:.2f} ({', '.join(f'{v:.2f}' for v in row['runtimes_s'])}) | "
            f"{fmt(row['map_tasks'], '.0f')} | {fmt(row['segments'], '.0f')} | "
            f"{fmt(row['map_cpu_s'], '.2f')} | {fmt(row['load'], '.2f')} |")
    by_query = {}
    for row in rows:
        by_query.setdefault(row["query"], []).append(row)
    lines += ["", "Per query, what the extra map tasks of the smaller split added at each "
              "partition count (medians, smaller split less larger), and what the extra "
              "partitions added to that, per extra segment (extra map tasks x extra "
              "partitions) of map task CPU:", ""]
    for query, mine in by_query.items():
        extras = {}
        for parts in args.partitions:
            pair = sorted((r for r in mine if r["partitions"] == parts),
                          key=lambda r: -r["split_mib"])
            if len(pair) < 2 or None in (pair[0]["map_cpu_s"], pair[-1]["map_cpu_s"]):
                continue
            big, small = pair[0], pair[-1]
            extras[parts] = (small["map_tasks"] - big["map_tasks"],
                             small["map_cpu_s"] - big["map_cpu_s"])
            lines.append(f"- Q{query}, {parts} partitions: {big['split_mib']} -> "
                         f"{small['split_mib']} MiB splits, {big['map_tasks']:.0f} -> "
                         f"{small['map_tasks']:.0f} map tasks: runtime "
                         f"{small['runtime_s'] - big['runtime_s']:+.2f} s, map task CPU "
                         f"{small['map_cpu_s'] - big['map_cpu_s']:+.2f} s")
        if len(extras) >= 2:
            (many, (tasks, cpu_many)), (few, (_, cpu_few)) = sorted(
                extras.items(), reverse=True)[:2]
            if tasks > 0 and many > few:
                lines.append(f"  - {many} against {few} partitions: "
                             f"{(cpu_many - cpu_few) / (tasks * (many - few)) * 1e3:.2f} ms "
                             f"of map task CPU per extra segment")
    return "\n".join(lines)


def _doc() -> str:
    text = __doc__.split("\n\n", 3)[3]
    return text.replace("``", "`")


if __name__ == "__main__":
    sys.exit(main())
