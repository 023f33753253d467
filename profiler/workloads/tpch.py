"""TPC-H on Spark: data from the ``tpchgen-cli`` package, the standard 22 queries.

Data for scale factor SF lives under ``<data_root>/tpch/sf<SF>/<table>.parquet``
and is generated once (written to a temporary folder, then renamed, so a
killed generation never leaves a half-written scale behind).

Each query is one workload named ``tpch-q1`` ... ``tpch-q22``; sizes are the
scale labels ``sf0.01`` (the tests' size), ``sf0.1``, ``sf0.3``, ``sf1``, ``sf3`` and
``sf10``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from jobgauge.errors import RunError, UsageError
from jobgauge.units import scale_label
from jobgauge.profiler.workloads._tpch_queries import QUERIES, TABLES
from jobgauge.profiler.workloads.base import directory_bytes


class ScaleFactors(tuple):
    """The scale factors the corpus was measured at, listed (sf0.01 is the tests' size),
    holding every scale factor :func:`scale_label` accepts: tpchgen-cli makes any, so a
    user can run and measure TPC-H at a size the corpus lacks (``sf5``)."""

    def __contains__(self, size) -> bool:
        try:
            return isinstance(size, str) and scale_label(size) == size
        except UsageError:
            return False


SIZES = ScaleFactors(("sf0.01", "sf0.1", "sf0.3", "sf1", "sf3", "sf10"))


def scale_factor(label: str) -> float:
    return float(scale_label(label)[2:])


def _tpchgen() -> str:
    local = Path(sys.executable).with_name("tpchgen-cli")
    if local.exists():
        return str(local)
    found = shutil.which("tpchgen-cli")
    if not found:
        raise RunError("tpchgen-cli not found; install the 'tpchgen-cli' package")
    return found


def ensure_data(data_root, scale) -> Path:
    """Generate the TPC-H tables for ``scale`` as parquet if missing; return their folder."""
    label = scale_label(scale)
    target = Path(data_root) / "tpch" / label
    if all((target / f"{t}.parquet").is_file() for t in TABLES):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{label}-", dir=target.parent))
    try:
        result = subprocess.run(
            [_tpchgen(), "parquet", "-s", label[2:], "--output-dir", str(staging)],
            capture_output=True, text=True, timeout=3600, check=False)
        if result.returncode != 0:
            raise RunError(f"tpchgen-cli failed for {label}: "
                           f"{(result.stderr or result.stdout).strip()[-500:]}")
        if target.exists():
            shutil.rmtree(target)
        os.replace(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def register_tables(spark, data_path: Path) -> None:
    """Make the eight tables queryable by name in ``spark`` (temporary views)."""
    marker = "jobgauge.tpch.path"
    if spark.conf.get(marker, None) == str(data_path):
        return
    for table in TABLES:
        spark.read.parquet(str(Path(data_path) / f"{table}.parquet")).createOrReplaceTempView(table)
    spark.conf.set(marker, str(data_path))


class TpchQuery:
    """TPC-H query ``number`` as a workload."""

    category = "tpch"
    benchmark = "TPC-H"
    sizes = SIZES

    def __init__(self, number: int):
        if number not in QUERIES:
            raise UsageError(f"TPC-H query must be 1..22; got {number!r}")
        self.number = number
        self.name = f"tpch-q{number}"
        self.sql = QUERIES[number].strip()

    def __repr__(self):
        return f"TpchQuery({self.number})"

    def prepare(self, data_root: Path, size: str, *, seed: int = 0) -> Path:
        return ensure_data(data_root, size)

    def input_bytes(self, data_path: Path) -> int:
        return directory_bytes(data_path)

    def run(self, spark, data_path: Path, *, output_dir: Path | None = None) -> dict:
        register_tables(spark, data_path)
        rows = spark.sql(self.sql).collect()
        return {"rows": len(rows), "first": [str(v) for v in rows[0]] if rows else None}


class TpchOwnQuery(TpchQuery):
    """A user's own query over the TPC-H tables (``jobgauge run tpch --sql/--file``): the
    data and sizes of the 22 queries, named by its job key (``name``, by default
    ``sql-<hash of its text>``, as the web form names the same text pasted), so its runs
    answer later questions about that text."""

    benchmark = None     # a job of the user's, as an imported one is

    def __init__(self, sql: str, name: str):   # noqa: D107 - no query number of TPC-H's
        self.number = None
        self.name = name
        self.sql = sql.strip().rstrip(";").strip()

    def __repr__(self):
        return f"TpchOwnQuery({self.name!r})"

    def run(self, spark, data_path: Path, *, output_dir: Path | None = None) -> dict:
        """Run the query to its end without bringing its rows to the driver (Spark's
        ``noop`` sink): a query of one's own may return millions of rows, which a
        ``collect`` would time too (Python makes every row an object) and which can
        exhaust a 1 GiB driver.  It counts them as they pass (an observed metric).  The
        22 queries return at most a few thousand rows, so they collect them, as before."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        register_tables(spark, data_path)
        counted = Observation("rows")
        spark.sql(self.sql).observe(counted, F.count(F.lit(1)).alias("rows")) \
            .write.format("noop").mode("overwrite").save()
        return {"rows": int(counted.get["rows"]), "sink": "noop"}


TPCH_WORKLOADS = {f"tpch-q{n}": TpchQuery(n) for n in QUERIES}
