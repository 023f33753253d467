"""What a workload is: data it prepares once, and a job it runs in a SparkSession.

The runner (``jobgauge.profiler.runners.runner``) owns the Spark application: it starts
the session with the run's configuration, calls ``prepare`` (cached, outside
the timed part), times ``run``, and records the run.  A workload never starts
or stops Spark itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Workload(Protocol):
    """One benchmark job.

    ``name`` is the user's name for it (HiBench's own names such as
    ``wordcount`` or ``terasort``; ``tpch-q1`` ... ``tpch-q22``), ``benchmark`` the
    benchmark it comes from (``TPC-H`` or ``HiBench``), ``category`` its HiBench
    category (micro, sql, ml, graph, websearch) or ``tpch``, and
    ``sizes`` the size labels it supports, smallest first.
    """

    name: str
    benchmark: str
    category: str
    sizes: tuple[str, ...]

    def prepare(self, data_root: Path, size: str, *, seed: int = 0) -> Path:
        """Create the input under ``data_root`` if it is not there yet (deterministic
        by seed) and return its path. Must be idempotent and safe to call again."""

    def input_bytes(self, data_path: Path) -> int:
        """Bytes of input on disk for this prepared data."""

    def run(self, spark: Any, data_path: Path, *, output_dir: Path) -> dict:
        """Run the job in ``spark`` (an active SparkSession) and return a small
        JSON-able summary of its result, enough to check correctness."""


def directory_bytes(path: Path) -> int:
    """Total size of the regular files under ``path`` (or of the file itself)."""
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
