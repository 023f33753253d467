"""Spark event logs -> :class:`~jobgauge.profiler.readers.profile.Profile` (public names).

``read_eventlog(path)`` reads a plain, lz4, snappy or zstd event log file, a
rolling ``eventlog_v2_<app>/`` folder or a Spark 1.x ``<app>/EVENT_LOG_1``
folder in one streaming pass; ``iter_events(path)`` yields the raw events;
``looks_like_eventlog(path)`` sniffs a path cheaply; ``find_eventlogs(folder)``
lists the event logs in a ``spark.eventLog.dir``.  See ``_eventlog`` for what
the profile holds and how things are counted.
"""

from __future__ import annotations

from pathlib import Path

from jobgauge.profiler.readers._eventlog import (
    EXACT_TASK_VALUES,
    HISTOGRAM_RELATIVE_ERROR,
    DurationSummary,
    EventLogAggregator,
    iter_events,
    looks_like_eventlog,
    read_eventlog,
)

__all__ = [
    "EXACT_TASK_VALUES", "HISTOGRAM_RELATIVE_ERROR", "DurationSummary",
    "EventLogAggregator", "find_eventlogs", "iter_events", "looks_like_eventlog",
    "read_eventlog",
]


def find_eventlogs(folder) -> list[Path]:
    """The Spark event logs directly inside ``folder`` (files and log folders), sorted."""
    folder = Path(folder)
    return [entry for entry in sorted(folder.iterdir())
            if not entry.name.startswith(".") and looks_like_eventlog(entry)]
