"""Search spaces: the knob table's tunable rows as Optuna dimensions, and the
constraints a configuration must meet to run at all.

The knobs themselves (type, engine default, valid and search range, restart
level, equivalents) live in the core table, :mod:`jobgauge.knobs`; ``KNOBS``
here is its rows marked ``tuner``.  A knob's tuner ``level`` is its restart
level in the tuner's words:

- ``"query"``: a SQL session setting (``SET key=value`` in a HiveServer2 or
  Spark SQL session, or ``--conf`` before the job starts),
- ``"job"``: fixed when the application starts (executors, memory,
  serializer, MapReduce job settings),
- ``"instance"``: the cluster it runs on (``instance_type``, ``instance_count``).

Example::

    >>> space = SearchSpace([knob("spark.sql.shuffle.partitions")])
    >>> space.suggest(optuna.trial.FixedTrial({"spark.sql.shuffle.partitions": 64}))
    {'spark.sql.shuffle.partitions': 64}
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import Iterable, Mapping

from jobgauge import knobs as _table
from jobgauge.errors import UsageError
from jobgauge.knobs import Knob, knob
from jobgauge.units import format_size
from jobgauge.tuner._errors import InvalidConfiguration

LEVELS = ("query", "job", "instance")
ENGINES = _table.ENGINES
MiB = 1024 * 1024

# Every knob the tuner knows: the table's rows marked ``tuner``.
KNOBS: tuple[Knob, ...] = _table.knobs(tuner=True)
_BY_NAME = {k.name: k for k in KNOBS}

# Spark in local mode (measured runs on this machine, as the shipped corpus was
# collected): the restart-level settings its grid varies.  ``spark.master``
# picks the worker threads (local[N]); the driver is the executor, so its heap
# is the memory; executor layout knobs do not apply.
LOCAL_SPARK_KNOBS: tuple[Knob, ...] = (
    replace(knob("spark.master"), kind="choice", choices=("local[1]", "local[2]"),
            default=_table.DEFAULT_MASTER, tuner=True,
            help="local mode with N worker threads (a new application)"),
    replace(_BY_NAME["spark.driver.memory"], high=4096,
            help="driver heap, MiB: all the memory of a local run (default 1g)"),
    _BY_NAME["spark.serializer"],
    _BY_NAME["spark.io.compression.codec"],
    _BY_NAME["spark.memory.fraction"],
    replace(_BY_NAME["spark.default.parallelism"], low=1, high=64,
            help="partitions of RDD shuffles (default: the local[N] threads)"),
)

SPARK_SQL_KNOBS = ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled",
                   "spark.sql.adaptive.coalescePartitions.enabled",
                   "spark.sql.adaptive.skewJoin.enabled",
                   "spark.sql.autoBroadcastJoinThreshold", "spark.sql.files.maxPartitionBytes")


def instance_type_knob(names: Iterable[str]) -> Knob:
    """The ``instance_type`` dimension over the given catalog names."""
    names = tuple(names)
    return Knob("instance_type", "choice", choices=names, restart="cluster", engine="cluster",
                tuner=True, help="cloud instance type of every node")


class SearchSpace:
    """An ordered set of knobs; the one place trials turn into configurations."""

    def __init__(self, knobs: Iterable[Knob]):
        self.knobs = tuple(knobs)
        names = [k.name for k in self.knobs]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise UsageError("search space names a knob twice: " + ", ".join(duplicates))
        self._by_name = dict(zip(names, self.knobs))

    def __iter__(self):
        return iter(self.knobs)

    def __len__(self) -> int:
        return len(self.knobs)

    def __contains__(self, name) -> bool:
        return name in self._by_name

    def __getitem__(self, name) -> Knob:
        return self._by_name[name]

    @property
    def names(self) -> list[str]:
        return [k.name for k in self.knobs]

    def levels(self) -> dict[str, str]:
        return {k.name: k.level for k in self.knobs}

    def distributions(self) -> dict:
        return {k.name: k.distribution() for k in self.knobs}

    def defaults(self) -> dict:
        """The engine defaults of the knobs that have one."""
        return {k.name: k.default for k in self.knobs if k.default is not None}

    def subset(self, levels=None, names=None) -> "SearchSpace":
        return SearchSpace(k for k in self.knobs
                           if (levels is None or k.level in levels)
                           and (names is None or k.name in names))

    def suggest(self, trial, fixed: Mapping | None = None) -> dict:
        """One configuration: ``fixed`` values as given, every other knob from ``trial``."""
        fixed = dict(fixed or {})
        config = {}
        for item in self.knobs:
            config[item.name] = fixed[item.name] if item.name in fixed else item.suggest(trial)
        for name, value in fixed.items():
            config.setdefault(name, value)
        return config

    def parse(self, config: Mapping) -> dict:
        """``config`` with the values of this space's knobs in their types."""
        return {name: self._by_name[name].parse(value) if name in self._by_name else value
                for name, value in config.items()}

    def contains(self, config: Mapping) -> bool:
        """Whether every value of ``config`` for a knob of this space is in its search range."""
        return all(self._by_name[name].in_search_range(value)
                   for name, value in config.items() if name in self._by_name)

    def table(self) -> list[dict]:
        """The declarative table as plain rows (for ``--json`` and the docs)."""
        rows = []
        for item in self.knobs:
            row = asdict(item)
            row["choices"] = list(item.choices)
            row["level"] = item.level
            rows.append(row)
        return rows


def build_space(engine: str = "spark", levels=("query",), *, names=None,
                instance_types=None, max_instances: int = 64) -> SearchSpace:
    """The table's knobs of one engine at the given levels.

    ``engine`` is ``spark`` (Spark and Spark SQL knobs), ``hive`` (Hive session
    knobs) or ``mapreduce``.  ``names`` picks knobs by name.  With
    ``instance_types`` (catalog names) the ``instance`` level adds
    ``instance_type`` and ``instance_count`` (1 .. ``max_instances``).
    """
    if engine not in ("spark", "hive", "mapreduce"):
        raise UsageError(f"unknown engine {engine!r}; expected spark, hive or mapreduce")
    unknown = [lvl for lvl in levels if lvl not in LEVELS]
    if unknown:
        raise UsageError(f"unknown level {unknown[0]!r}; expected one of {', '.join(LEVELS)}")
    if names is not None:
        for name in names:
            knob(name)
    chosen = [k for k in KNOBS if k.engine == engine and k.level in levels
              and (names is None or k.name in names)]
    if "instance" in levels:
        if not instance_types:
            raise UsageError("tuning the instance level needs instance types from the catalog")
        chosen.append(instance_type_knob(instance_types))
        count = _BY_NAME["instance_count"]
        high = max(2, int(max_instances))
        chosen.append(replace(count, high=high, valid_high=max(high, count.valid_high)))
    if not chosen:
        raise UsageError(f"no {engine} knobs at level(s) {', '.join(levels)}")
    return SearchSpace(chosen)


def local_spark_space(master: str = "local[2]", levels=("query", "job")) -> SearchSpace:
    """Spark in local mode: ``LOCAL_SPARK_KNOBS`` (job level, each a new
    application) and the Spark SQL session knobs (query level).  ``master``
    is the default of ``spark.master`` (and sets ``spark.default.parallelism``'s
    default to its threads, as Spark does), so the first trial is Spark's
    defaults on that master."""
    import re

    match = re.fullmatch(r"local\[(\d+)\]", str(master).strip())
    if not match or int(match.group(1)) < 1:
        raise UsageError(f"local tuning needs a local[N] master; got {master!r}")
    unknown = [lvl for lvl in levels if lvl not in ("query", "job")]
    if unknown or not levels:
        raise UsageError(f"local tuning has levels query and job; got {', '.join(levels)!r}")
    chosen = []
    if "job" in levels:
        for item in LOCAL_SPARK_KNOBS:
            if item.name == "spark.master":
                choices = item.choices if master in item.choices else (*item.choices, master)
                item = replace(item, choices=choices, default=master)
            elif item.name == "spark.default.parallelism":
                item = replace(item, default=min(int(match.group(1)), int(item.high)))
            chosen.append(item)
    if "query" in levels:
        chosen.extend(knob(name) for name in SPARK_SQL_KNOBS)
    return SearchSpace(chosen)


def spark_sql_space() -> SearchSpace:
    """The Spark SQL session knobs the foundation's ``tune`` command searches."""
    return SearchSpace(knob(name) for name in SPARK_SQL_KNOBS)


def job_space(cluster) -> SearchSpace:
    """The settings recommended for one job (``jobgauge-submit``, the web form's tune):
    the Spark SQL session knobs, and on a local master the driver heap too (all the
    memory of a local run; a setting of the application, given to spark-submit), up
    to half of this machine's memory.  ``cluster``: a :class:`jobgauge.job.Cluster`."""
    chosen = [knob(name) for name in SPARK_SQL_KNOBS]
    chosen = [replace(k, choices=tuple(c for c in k.choices if c >= k.default))
              if k.name == "spark.sql.files.maxPartitionBytes" else k for k in chosen]
    if getattr(cluster, "local", False):
        from jobgauge.job import Cluster

        memory = Cluster.this_machine().memory_gib
        sizes = tuple(1024 * g for g in LOCAL_DRIVER_GIB if not memory or g <= memory / 2)
        chosen.append(replace(_BY_NAME["spark.driver.memory"], kind="choice",
                              choices=sizes or (1024,), log=False,
                              help="driver heap: all the memory of a local run (default 1g)"))
    return SearchSpace(chosen)


#: :func:`job_space` offers input splits of the default (128 MiB) and larger only.  The
#: model credits smaller splits with a gain (less memory pressure per task) that no
#: measurement backs: TPC-H Q1 at SF 1 with 16 MiB splits measured 5.19 s against
#: 4.39 s with the defaults (tests/test_tuned_vs_defaults.py, median of 3), 17.1 and
#: 15.7 s against 16.4 and 14.4 s as whole applications, and the learning loop's
#: 16 MiB splits with a 4g driver ran Q1 +9 %, Q5 +25 %, Q6 +10 % (bench/reports/
#: learning_loop.md).

#: The driver heaps :func:`job_space` offers a local run, in GiB (those up to half of
#: the machine's memory): 1g and 4g, which the quiet corpus measured, and 2g between.
#: Not 8g: measured, it buys nothing over 4g and sometimes costs much (TPC-H, quiet
#: corpus, median 8g/4g per query: 0.96 at SF 1, 0.99 at SF 10 with up to 1.65x slower,
#: while 4g/1g is 0.81 at SF 10 and never slower; in applications of one query each,
#: tests/test_tuned_vs_defaults.py measured 8g against 1g at SF 1: Q5 4.76 s against
#: 3.95 s, Q1 3.88 s against 3.62 s, median of 3).  But 4g is not always safe: in a fresh
#: application, Q4 at SF 10 ran the JVM out of heap in 9 of 10 runs of tpch-sf10-v5 and 2
#: of 3 of bench/app_history.py, where 1g, 2g and 8g finished (data/README.md); the
#: shipped tables, one application for all 22 queries, saw it finish.  A failure in the
#: user's own store is counted (models._default.job_failures) and never recommended again.
LOCAL_DRIVER_GIB = (1, 2, 4)


# ---------------------------------------------------------------- constraints

RESERVED_NODE_MB = 1024          # left to the OS and the node manager on every node
MIN_OVERHEAD_MB = 384            # spark.executor.memoryOverhead floor (Spark default)
OVERHEAD_FRACTION = 0.10         # spark.executor.memoryOverheadFactor (Spark default)


def _value(config, name):
    value = config.get(name)
    return knob(name).default if value is None else value


def executor_footprint_mb(memory_mb: float) -> float:
    """Container memory of one executor: heap plus Spark's default overhead."""
    return memory_mb + max(MIN_OVERHEAD_MB, OVERHEAD_FRACTION * memory_mb)


# The largest broadcast table a driver heap holds, as a share of the heap: Spark compares
# the threshold with the table's size on disk (compressed Parquet), and the relation it
# builds in the driver is several times larger.  Measured here: TPC-H Q5 at SF 1 with a
# 1 GiB driver ran out of driver memory ("Not enough memory to build and broadcast the
# table") at thresholds of 128 MiB and 256 MiB (bench/reports/learning_loop.md); Spark's
# default, 10 MiB, is 1/100 of its default 1 GiB driver.
BROADCAST_HEAP_SHARE = 1 / 32


def check_configuration(config: Mapping, *, instance=None, instance_count: int | None = None,
                        driver_memory_mb: float | None = None):
    """Raise :class:`InvalidConfiguration` if ``config`` cannot run on
    ``instance_count`` nodes of ``instance`` (an :class:`InstanceType`).

    Checked: executor cores fit a node's vCPUs; executor and driver heap plus
    overhead fit a node's memory less ``RESERVED_NODE_MB``; the executors asked
    for fit the cluster (executors per node times nodes); MapReduce's sort
    buffer fits its map container and containers fit a node; a broadcast
    threshold is at most ``BROADCAST_HEAP_SHARE`` of the driver heap (the
    config's ``spark.driver.memory``, else ``driver_memory_mb``, the job's own,
    else Spark's default).  Without an instance (local mode) only the
    engine-internal rules apply.
    """
    threshold = config.get("spark.sql.autoBroadcastJoinThreshold")
    if threshold is not None and float(threshold) > 0:
        driver_mb = config.get("spark.driver.memory") or driver_memory_mb \
            or knob("spark.driver.memory").default
        if float(threshold) > float(driver_mb) * MiB * BROADCAST_HEAP_SHARE:
            raise InvalidConfiguration(
                f"spark.sql.autoBroadcastJoinThreshold={format_size(int(threshold))} is more "
                f"than 1/{round(1 / BROADCAST_HEAP_SHARE)} of the driver heap "
                f"({format_size(int(float(driver_mb) * MiB))}): the broadcast table would not fit "
                f"the driver")
    sort_mb = config.get("mapreduce.task.io.sort.mb")
    if sort_mb is not None:
        map_mb = _value(config, "mapreduce.map.memory.mb")
        if sort_mb > 0.7 * map_mb:
            raise InvalidConfiguration(
                f"mapreduce.task.io.sort.mb={sort_mb} does not fit the map task's "
                f"mapreduce.map.memory.mb={map_mb} (at most 70 % of it)")
    if instance is None:
        return
    node_mb = instance.memory_mb - RESERVED_NODE_MB
    name = instance.instance_type
    if any(key.startswith("spark.executor.") or key == "spark.driver.memory" for key in config):
        check_executor_fit(config, name=name, vcpus=instance.vcpus,
                           memory_gib=instance.memory_gib)
        cores = int(_value(config, "spark.executor.cores"))
        footprint = executor_footprint_mb(_value(config, "spark.executor.memory"))
        driver_mb = executor_footprint_mb(_value(config, "spark.driver.memory"))
        if driver_mb > node_mb:
            raise InvalidConfiguration(
                f"spark.driver.memory (+ overhead: {driver_mb:.0f} MiB) does not fit a {name} "
                f"node ({node_mb} MiB usable)")
        if instance_count is not None:
            per_node = int(min(instance.vcpus // cores, node_mb // footprint))
            room = per_node * int(instance_count)
            wanted = int(_value(config, "spark.executor.instances"))
            if wanted > room:
                raise InvalidConfiguration(
                    f"spark.executor.instances={wanted} exceeds the cluster's room for {room} "
                    f"executors ({instance_count} x {name}, {per_node} per node)")
    for key in ("mapreduce.map.memory.mb", "mapreduce.reduce.memory.mb"):
        if key in config and config[key] > node_mb:
            raise InvalidConfiguration(
                f"{key}={config[key]} does not fit a {name} node ({node_mb} MiB usable)")


def check_executor_fit(config: Mapping, *, name: str, vcpus: float, memory_gib: float) -> None:
    """Raise :class:`InvalidConfiguration` if one executor of ``config`` (its
    ``spark.executor.cores``, and its ``spark.executor.memory`` plus Spark's default
    overhead; Spark's defaults where unset) does not fit one node of ``name`` with
    ``vcpus`` and ``memory_gib`` (less ``RESERVED_NODE_MB``): such an executor never
    starts, and the application waits for it forever.  ``config``: knob values as the
    knob table reads them (MiB for memory)."""
    node_mb = memory_gib * 1024 - RESERVED_NODE_MB
    cores = int(_value(config, "spark.executor.cores"))
    if cores > vcpus:
        raise InvalidConfiguration(
            f"spark.executor.cores={cores} does not fit a {name} node ({vcpus:g} vCPUs)")
    memory_mb = _value(config, "spark.executor.memory")
    footprint = executor_footprint_mb(memory_mb)
    if footprint > node_mb:
        raise InvalidConfiguration(
            f"spark.executor.memory={knob('spark.executor.memory').format(memory_mb)} "
            f"(+ overhead: {footprint:.0f} MiB) does not fit a {name} node "
            f"({node_mb:.0f} MiB usable of {memory_gib:g} GiB)")


# ------------------------------------------------------------ SQL equivalents

def hive_to_spark(settings: Mapping) -> dict:
    """Hive session settings as Spark SQL settings (for a Spark Thrift/HiveServer2
    session); settings Spark has no counterpart for are left out
    (:data:`jobgauge.knobs.EQUIVALENTS`)."""
    return _table.translate(settings, "spark")


def spark_to_hive(settings: Mapping) -> dict:
    """Spark SQL settings as the Hive session settings that do the same."""
    return _table.translate(settings, "hive")


format_setting = _table.format_value


def spark_submit_lines(config: Mapping) -> list[str]:
    """``--conf key=value`` for every Spark setting of ``config``."""
    return [f"--conf {name}={format_setting(name, value)}"
            for name, value in config.items() if name.startswith("spark.")]


def hive_set_lines(config: Mapping) -> list[str]:
    """``SET key=value;`` for a HiveServer2 session: the Spark SQL session
    settings (a Spark Thrift server takes them as they are), then their Hive
    equivalents, then Hive knobs of ``config`` itself."""
    session = {name: value for name, value in config.items()
               if name.startswith("spark.sql.")}
    hive = {**spark_to_hive(session),
            **{n: v for n, v in config.items() if n.startswith("hive.")}}
    return [f"SET {name}={format_setting(name, value)};"
            for name, value in {**session, **hive}.items()]


def level_of(name: str) -> str:
    """The tuner level of a setting: from the table, ``instance`` for the cluster
    columns, ``job`` for anything else (a job parameter of a run table)."""
    if name in ("instance_type", "instance_count"):
        return "instance"
    item = _table.find(name)
    return item.level if item is not None else "job"
