"""The one profile structure every reader fills: Spark event logs, the History
Server, MapReduce job history, counters and live runs.

Metric names are shared where they mean the same thing (``TOTAL_METRICS``), so
a Spark stage and a MapReduce job compare directly: ``input_bytes``,
``shuffle_write_bytes``, ``executor_run_time_ms`` and so on.  A value the input
does not say is ``None``, never a made-up zero.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any

# Totals over the whole application or job. Readers fill what their input has.
TOTAL_METRICS = (
    "input_bytes", "input_records",
    "output_bytes", "output_records",
    "shuffle_read_bytes", "shuffle_read_records",
    "shuffle_write_bytes", "shuffle_write_records",
    "memory_spill_bytes", "disk_spill_bytes", "spilled_records",
    "executor_run_time_ms", "executor_cpu_time_ms", "jvm_gc_time_ms",
    "map_tasks", "reduce_tasks", "map_time_ms", "reduce_time_ms",
)


_ATOMS = frozenset((str, int, float, bool, type(None)))


def _plain_copy(value):
    """A deep copy of profile data as ``dataclasses.asdict`` makes it: dicts, lists and
    tuples rebuilt, strings and numbers shared, anything else through ``asdict`` (a
    dataclass) or ``copy.deepcopy``."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {key if type(key) in _ATOMS else _plain_copy(key): _plain_copy(item)
                for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _ATOMS else _plain_copy(item) for item in value]
    if kind is tuple:
        return tuple(_plain_copy(item) for item in value)
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return copy.deepcopy(value)


@dataclass
class Profile:
    """What a job read, shuffled and computed, and how its time was spent.

    ``format`` names the input kind (``spark-eventlog``, ``spark-history``,
    ``mapreduce-jhist``, ``mapreduce-conf``, ``mapreduce-counters``,
    ``mapreduce-mr1``, ``spark-live``).  ``stages`` holds one dict per stage
    (ids, ``parent_ids``, task aggregates); ``jobs``, ``sql`` and
    ``executors`` likewise.  ``totals`` uses the names in TOTAL_METRICS.
    """

    format: str
    engine: str                      # "spark" or "hadoop"
    engine_version: str | None = None
    app_id: str | None = None
    app_name: str | None = None
    user: str | None = None
    status: str | None = None        # succeeded / failed / killed / running / None
    start_ms: int | None = None
    end_ms: int | None = None
    runtime_s: float | None = None
    n_jobs: int | None = None
    n_stages: int | None = None
    n_tasks: int | None = None
    totals: dict[str, float | None] = field(default_factory=dict)
    jobs: list[dict[str, Any]] = field(default_factory=list)
    stages: list[dict[str, Any]] = field(default_factory=list)
    sql: list[dict[str, Any]] = field(default_factory=list)
    executors: list[dict[str, Any]] = field(default_factory=list)
    critical_path_s: float | None = None
    idle_core_seconds: float | None = None
    config: dict[str, str] = field(default_factory=dict)
    source: str | None = None        # the file or URL read
    # Added by the Spark event log / History Server readers (optional everywhere):
    n_stage_attempts: int | None = None      # stage attempts (a retried stage counts twice)
    n_failed_tasks: int | None = None        # task attempts that did not succeed
    available_core_seconds: float | None = None  # executor cores x time alive, in the app
    task_seconds: float | None = None        # sum of task attempt wall times
    cores_timeline: list[dict[str, Any]] = field(default_factory=list)  # {time_ms, cores}
    event_counts: dict[str, int] = field(default_factory=dict)  # events per type in the input
    notes: list[str] = field(default_factory=list)  # what the reader tolerated or assumed
    # Bytes of the files the SQL scans selected, whole files on disk (Spark's "size of
    # files read" scan metric; None where the log has no SQL scan of files)
    files_read_bytes: float | None = None

    def input_size(self) -> float | None:
        """The bytes of the job's input in the user's sense, the size of the data it
        reads on disk: the files its SQL scans selected where the log says
        (``files_read_bytes``), else the bytes its tasks read (``input_bytes``).  The
        tasks' count misses bytes: a column store reads only the columns asked, and
        Spark 4.3's parquet scans count a few of the bytes they read (a job over TPC-H
        parquet counted 0.39 MB at SF 0.3 and 7.4 MB at SF 1, where its files were
        about 95 and 310 MB)."""
        if self.files_read_bytes is not None:
            return self.files_read_bytes
        return self.totals.get("input_bytes")

    def to_dict(self) -> dict[str, Any]:
        """Every field as plain data: what ``dataclasses.asdict`` gives, several times faster.

        Its lists and dicts are copies (changing them leaves the profile as it
        was), copied by :func:`_plain_copy` instead of ``asdict``'s generic walk.
        """
        return {name: _plain_copy(getattr(self, name)) for name in self.__dataclass_fields__}

    def summary(self) -> dict[str, Any]:
        """The flat, one-line view the CLI prints and the store indexes."""
        out = {
            "format": self.format, "engine": self.engine,
            "engine_version": self.engine_version, "app_id": self.app_id,
            "app_name": self.app_name, "status": self.status,
            "n_jobs": self.n_jobs, "n_stages": self.n_stages, "n_tasks": self.n_tasks,
            "runtime_s": self.runtime_s, "critical_path_s": self.critical_path_s,
            "idle_core_seconds": self.idle_core_seconds, "source": self.source,
        }
        for name in TOTAL_METRICS:
            if self.totals.get(name) is not None:
                out[name] = self.totals[name]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Profile":
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})
