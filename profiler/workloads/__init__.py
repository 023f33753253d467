"""Workloads the runner can run: TPC-H queries and HiBench jobs."""

from __future__ import annotations

from jobgauge.errors import UsageError
from jobgauge.profiler.workloads.base import Workload, directory_bytes
from jobgauge.profiler.workloads.tpch import TPCH_WORKLOADS, TpchOwnQuery, TpchQuery

__all__ = ["Workload", "TpchOwnQuery", "TpchQuery", "directory_bytes", "benchmark_of",
           "get_workload", "workload_names"]


def _all() -> dict:
    from jobgauge.profiler.workloads.hibench import HIBENCH_WORKLOADS

    return {**TPCH_WORKLOADS, **HIBENCH_WORKLOADS}


def workload_names() -> list[str]:
    return list(_all())


def get_workload(name: str, sql: str | None = None) -> Workload:
    """The workload ``name`` of the registry; a name it does not know, with ``sql``, is
    a user's own query over the TPC-H tables (:class:`TpchOwnQuery`) of that name."""
    workloads = _all()
    if name in workloads:
        return workloads[name]
    if sql is not None:
        return TpchOwnQuery(sql, name)
    raise UsageError(f"unknown workload {name!r}; known: " + ", ".join(workloads))


def benchmark_of(name: str) -> str | None:
    """The benchmark of a workload of this registry (``TPC-H``, ``HiBench``), or None for
    a job of the user's (a name the registry does not know)."""
    workload = _all().get(name)
    return None if workload is None else workload.benchmark
