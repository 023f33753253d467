"""Job features from every real artifact, and real runs that produce them.

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
    "Profile": "jobgauge.profiler.profile", "TOTAL_METRICS": "jobgauge.profiler.profile",
    "read_eventlog": "jobgauge.profiler.eventlog", "iter_events": "jobgauge.profiler.eventlog",
    "find_eventlogs": "jobgauge.profiler.eventlog",
    "read_history": "jobgauge.profiler.history",
    "read_mapreduce": "jobgauge.profiler.mapreduce",
    "read_profile": "jobgauge.profiler.profile_cli",
    "run_workload": "jobgauge.profiler.runner", "run_batch": "jobgauge.profiler.runner",
    "WarmRunner": "jobgauge.profiler._warm",
    "query_profile": "jobgauge.profiler.runner",
    "collect": "jobgauge.profiler.collect",
    "run_mapreduce_job": "jobgauge.profiler.hadoop_runner",
    "StandaloneCluster": "jobgauge.profiler.cluster",
    "EventLogTail": "jobgauge.profiler.live", "ProgressTracker": "jobgauge.profiler.live",
    "ProgressSnapshot": "jobgauge.profiler.live", "read_snapshot": "jobgauge.profiler.live",
    "read_rest_snapshot": "jobgauge.profiler.live", "LiveSourceError": "jobgauge.profiler.live",
    "SparkRestClient": "jobgauge.profiler.sparkrest",
    "SparkRestError": "jobgauge.profiler.sparkrest",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name):  # PEP 562: load on first use, so the CLI starts fast
    if name not in _EXPORTS:
        raise AttributeError(f"module 'jobgauge.profiler' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
