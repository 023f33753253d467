"""Measure HiBench workloads once per size in one local Spark application.

``python -m jobgauge.profiler.workloads._hibench_measure --data-root DIR``
prepares each (workload, size) (untimed, cached), then times ``run`` the way
the runner's driver does (wall time around ``workload.run``) and prints one
JSON line per run, with the CPU seconds the Spark JVM used during the run
and the machine's 1-minute load average before and after.  One unreported
run of sort at tiny comes first.  The application uses HiBench's own Spark
settings (``HIBENCH_SPARK_CONF``).  Used to fill the runtime columns of
docs/workloads.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path


def _jvm_cpu_seconds(spark) -> float:
    """CPU seconds (user + system) the Spark JVM has used so far (Linux /proc)."""
    pid = spark.sparkContext._gateway.proc.pid  # the JVM that spark-submit exec'd
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def main(argv=None) -> int:
    from jobgauge.profiler.workloads.hibench import HIBENCH_SPARK_CONF, HIBENCH_WORKLOADS

    parser = argparse.ArgumentParser(prog="python -m jobgauge.profiler.workloads._hibench_measure")
    parser.add_argument("--data-root", required=True, type=Path)
    parser.add_argument("--workloads", nargs="*", default=list(HIBENCH_WORKLOADS))
    parser.add_argument("--sizes", nargs="*", default=["tiny", "medium", "small"])
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default=HIBENCH_SPARK_CONF["spark.driver.memory"])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(args.master).appName("jobgauge-hibench-measure")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false"))
    for key, value in {**HIBENCH_SPARK_CONF, "spark.driver.memory": args.driver_memory}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    output_root = Path(tempfile.mkdtemp(prefix="hibench-out-"))
    try:
        # One unreported run first, so the first measured job does not pay the
        # JVM's start-up (class loading, JIT) alone.
        warmup = HIBENCH_WORKLOADS["sort"]
        warmup.run(spark, warmup.prepare(args.data_root, "tiny", seed=args.seed),
                   output_dir=output_root / "warmup")
        for name in args.workloads:
            workload = HIBENCH_WORKLOADS[name]
            for size in args.sizes:
                if size not in workload.sizes:
                    continue
                begin = time.perf_counter()
                data_path = workload.prepare(args.data_root, size, seed=args.seed)
                prepare_s = time.perf_counter() - begin
                load_before = os.getloadavg()[0]
                cpu_before = _jvm_cpu_seconds(spark)
                begin = time.perf_counter()
                summary = workload.run(spark, data_path, output_dir=output_root / f"{name}-{size}")
                runtime_s = time.perf_counter() - begin
                load_after = os.getloadavg()[0]
                cpu_s = _jvm_cpu_seconds(spark) - cpu_before
                summary.pop("centers", None)
                summary.pop("output", None)
                print(json.dumps({"workload": name, "size": size, "runtime_s": round(runtime_s, 2),
                                  "prepare_s": round(prepare_s, 2),
                                  "jvm_cpu_s": round(cpu_s, 1),
                                  "load_1min": [round(load_before, 1), round(load_after, 1)],
                                  "input_bytes": workload.input_bytes(data_path),
                                  "records": json.loads((data_path / "_hibench.json").read_text())
                                  ["records"], "result": summary}), flush=True)
                shutil.rmtree(output_root / f"{name}-{size}", ignore_errors=True)
    finally:
        spark.stop()
        shutil.rmtree(output_root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
