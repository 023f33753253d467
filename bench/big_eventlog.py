"""Make a real Spark event log of at least ``--mb`` megabytes, for the report-time target
of issue 14 ("the report runs in under 2 s on a 100 MB log").

A PySpark application on local[2] (a 2g driver, Spark's defaults otherwise, the event log
uncompressed and in one file) runs one query again and again until its log passes
the size: an aggregation over ``spark.range`` with 2,000 input and 2,000 shuffle
partitions and AQE off, so each round logs about 4,000 tasks.  Every byte is Spark's
own output for the tasks it ran; nothing is copied or repeated by this script.

    nice -n 10 .venv/bin/python bench/big_eventlog.py --mb 100     # 3.3 min here: 116 MB, 5 rounds

Prints the log's path and size (JSON with ``--json``); the log stays in
``var/bench/big-eventlog/`` (not committed: 100 MB).  Then
``bench/history.py --only report --log PATH`` times ``jobgauge report`` on it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "var" / "bench" / "big-eventlog"
PARTITIONS = 2000


def make_log(target_mb: float, out: Path = OUT, max_rounds: int = 200) -> dict:
    from pyspark.sql import SparkSession

    out.mkdir(parents=True, exist_ok=True)
    before = set(out.iterdir())
    spark = (SparkSession.builder.master("local[2]").appName("jobgauge big event log")
             .config("spark.driver.memory", "2g")     # the driver keeps every task's status
             .config("spark.eventLog.enabled", "true")
             .config("spark.eventLog.dir", str(out))
             .config("spark.eventLog.compress", "false")
             .config("spark.eventLog.rolling.enabled", "false")
             .config("spark.sql.adaptive.enabled", "false")
             .config("spark.sql.shuffle.partitions", str(PARTITIONS))
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    started = time.perf_counter()
    rounds, path = 0, None
    try:
        app_id = spark.sparkContext.applicationId
        path = out / app_id
        while rounds < max_rounds:
            (spark.range(0, 4_000_000, numPartitions=PARTITIONS)
             .selectExpr(f"id % {rounds + 997} AS k", "id").groupBy("k").count().collect())
            rounds += 1
            written = path.with_name(path.name + ".inprogress")
            size = (written if written.is_file() else path).stat().st_size
            print(f"round {rounds}: {size / 1e6:.1f} MB", file=sys.stderr, flush=True)
            if size >= target_mb * 1e6:
                break
    finally:
        spark.stop()
    made = [p for p in out.iterdir() if p not in before and p.is_file()]
    path = max(made, key=lambda p: p.stat().st_mtime) if made else path
    return {"log": str(path), "bytes": path.stat().st_size, "rounds": rounds,
            "tasks": rounds * 2 * PARTITIONS, "wall_s": time.perf_counter() - started}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100.0, help="size to reach, MB")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    made = make_log(args.mb)
    if args.json:
        print(json.dumps(made))
    else:
        print(f"{made['log']}: {made['bytes'] / 1e6:.1f} MB, {made['rounds']} rounds "
              f"(~{made['tasks']} tasks), {made['wall_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
