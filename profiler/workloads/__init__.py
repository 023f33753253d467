"""Workloads the runner can run: TPC-H queries and HiBench jobs."""

from __future__ import annotations

from jobgauge.errors import UsageError
from jobgauge.profiler.workloads.base import Workload, directory_bytes
from jobgauge.profiler.workloads.tpch import TPCH_WORKLOADS, TpchQuery

__all__ = ["Workload", "TpchQuery", "directory_bytes", "benchmark_of", "get_workload", "workload_names"]


def _all() -> dict:
    from jobgauge.profiler.workloads.hibench import HIBENCH_WORKLOADS

    return {**TPCH_WORKLOADS, **HIBENCH_WORKLOADS}


def workload_names() -> list[str]:
    return list(_all())


def get_workload(name: str) -> Workload:
    workloads = _all()
    if name not in workloads:
        raise UsageError(f"unknown workload {name!r}; known: " + ", ".join(workloads))
    return workloads[name]


def benchmark_of(name: str) -> str | None:
    """The benchmark of a workload of this registry (``TPC-H``, ``HiBench``), or None for
    a job of the user's (a name the registry does not know)."""
    workload = _all().get(name)
    return None if workload is None else workload.benchmark
