"""bench/app_history.py runs a TPC-H query in a fresh application and in one that ran
other queries first, each in a JVM of its own, and keeps a failed run as a result.

Real Spark applications on the shared SF 0.01 data (about 20 s each)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "bench" / "app_history.py"

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def _history(data_root, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "JOBGAUGE_DATA": str(data_root)}
    return subprocess.run([sys.executable, str(SCRIPT), "--query", "6", "--scale", "0.01",
                           "--heap", "1g", *args], capture_output=True, text=True, env=env,
                          timeout=600, check=False)


def test_the_query_runs_fresh_and_after_the_others(tpch_data_root):
    done = _history(tpch_data_root, "--runs", "2", "--before", "1", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    runs = json.loads(done.stdout)
    assert [(r["application"], r["query"]) for r in runs] == [
        ("fresh", 6), ("fresh", 6), ("used", 1), ("used", 6), ("used", 6)]
    for run in runs:
        assert run["status"] == "succeeded" and run["error"] is None, run
        assert 0 < run["wall_s"] < 120 and run["gc_s"] >= 0 and 0 < run["heap_gib"] <= 1.0
        assert run["heap_oom_lines_in_application"] == 0


def test_a_failed_run_is_a_result_with_its_error(tpch_data_root):
    """Spark refuses 0 shuffle partitions when the query runs: each run is kept as failed,
    with Spark's message, and the table counts none finished."""
    done = _history(tpch_data_root, "--runs", "1", "--before",
                    "--conf", "spark.sql.shuffle.partitions=0")
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    failed = [line for line in lines if line.strip().startswith(("fresh: q6", "used: q6"))]
    assert len(failed) == 2 and all(" failed " in line for line in failed), done.stdout
    assert all("spark.sql.shuffle.partitions" in line for line in failed)
    rows = [line for line in lines if line.startswith("| fresh")]   # and "fresh, a second"
    assert len(rows) == 2 and all("| 0 of 1 |" in row for row in rows), done.stdout
