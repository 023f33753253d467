"""Job features from every real artifact, and real runs that produce them.

Two subpackages, split by concern: ``readers/`` reads artifacts (event logs,
the Spark REST API, MapReduce history, plans over HiveServer2, application
reports) and never starts a workload; ``runners/`` runs workloads for real
(runner, warm runner, collector, driver process, Hadoop local jobs, standalone
cluster, Hive Thrift server) and profiles them with the readers.
``workloads/`` holds the workloads themselves; ``hive`` is the facade of live
Hive, used by both sides.  The names below load on first use.

Readers (each returns a :class:`Profile`):

- ``read_eventlog(path)``: Spark event logs of every version, plain, lz4,
  snappy or zstd, single files, rolling ``eventlog_v2_*`` folders and the
  Spark 1.x folder layout, in one streaming pass;
- ``read_history(url)``: the Spark History Server REST API, read through
  ``SparkRestClient`` (``sparkrest``: the one client of Spark's REST API, for a
  History Server, a driver UI and the running-jobs page alike);
- ``read_mapreduce(path)``: MapReduce ``.jhist``, job conf XML, counter dumps,
  MR1 history;
- ``read_profile(path_or_url)``: any of the above, sniffed from the content.

Runs: ``run_workload`` (one real Spark run, profiled and recorded), ``WarmRunner``
(runs one at a time in warm applications, restarted only when a restart-level setting changes),
``run_batch`` (many runs in one application), ``collect`` (a resumable
design from a plan file), ``run_mapreduce_job`` (Hadoop's local mode),
``StandaloneCluster`` (a Spark standalone cluster on 127.0.0.1).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "Profile": "jobgauge.profiler.readers.profile", "TOTAL_METRICS": "jobgauge.profiler.readers.profile",
    "read_eventlog": "jobgauge.profiler.readers.eventlog", "iter_events": "jobgauge.profiler.readers.eventlog",
    "find_eventlogs": "jobgauge.profiler.readers.eventlog",
    "read_history": "jobgauge.profiler.readers.history",
    "read_mapreduce": "jobgauge.profiler.readers.mapreduce",
    "read_profile": "jobgauge.profiler.readers.profile_cli",
    "run_workload": "jobgauge.profiler.runners.runner", "run_batch": "jobgauge.profiler.runners.runner",
    "WarmRunner": "jobgauge.profiler.runners._warm",
    "query_profile": "jobgauge.profiler.runners.runner",
    "collect": "jobgauge.profiler.runners.collect",
    "run_mapreduce_job": "jobgauge.profiler.runners.hadoop_runner",
    "StandaloneCluster": "jobgauge.profiler.runners.cluster",
    "EventLogTail": "jobgauge.profiler.readers.live", "ProgressTracker": "jobgauge.profiler.readers.live",
    "ProgressSnapshot": "jobgauge.profiler.readers.live", "read_snapshot": "jobgauge.profiler.readers.live",
    "read_rest_snapshot": "jobgauge.profiler.readers.live", "LiveSourceError": "jobgauge.profiler.readers.live",
    "SparkRestClient": "jobgauge.profiler.readers.sparkrest",
    "SparkRestError": "jobgauge.profiler.readers.sparkrest",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):  # PEP 562: load on first use, so the CLI starts fast
    if name not in _EXPORTS:
        raise AttributeError(f"module 'jobgauge.profiler' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
