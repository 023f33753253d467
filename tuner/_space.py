"""Search spaces as data: one table row per knob, and the constraints a
configuration must meet to run at all.

A :class:`Knob` says what a setting is (``name``, ``kind``, range or
``choices``, ``log``), what the engine does when it is not set (``default``,
the engine's documented default) and where it is set (``level``):

- ``"query"``: a SQL session setting (``SET key=value`` in a HiveServer2 or
  Spark SQL session, or ``--conf`` before the job starts),
- ``"job"``: fixed when the application starts (executors, memory,
  serializer, MapReduce job settings),
- ``"instance"``: the cluster it runs on (``instance_type``, ``instance_count``).

Kinds: ``int``, ``float``, ``bool``, ``choice``, ``memory`` (MiB, written
``4g``/``512m``), ``bytes`` (a byte count, chosen among ``choices``).

Example::

    >>> space = SearchSpace([knob("spark.sql.shuffle.partitions")])
    >>> space.suggest(optuna.trial.FixedTrial({"spark.sql.shuffle.partitions": 64}))
    {'spark.sql.shuffle.partitions': 64}
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping

from jobgauge.errors import UsageError
from jobgauge.tuner._errors import InvalidConfiguration

KINDS = ("int", "float", "bool", "choice", "memory", "bytes")
LEVELS = ("query", "job", "instance")
ENGINES = ("spark", "hive", "mapreduce", "cluster")
MiB = 1024 * 1024


@dataclass(frozen=True)
class Knob:
    """One tunable setting. ``default`` is the engine's own default (None: it
    depends on the cluster, e.g. ``spark.default.parallelism``)."""

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    choices: tuple = ()
    log: bool = False
    default: Any = None
    level: str = "query"
    engine: str = "spark"
    help: str = ""
    equivalent: str | None = None     # the same setting in the other SQL engine

    def __post_init__(self):
        def bad(parameter, must, got):
            raise UsageError(f"The {parameter!r} parameter of Knob {self.name!r} must be "
                             f"{must}. Got {got!r} instead.")

        if not self.name:
            bad("name", "a non-empty string", self.name)
        if self.kind not in KINDS:
            bad("kind", "one of " + ", ".join(KINDS), self.kind)
        if self.level not in LEVELS:
            bad("level", "one of " + ", ".join(LEVELS), self.level)
        if self.engine not in ENGINES:
            bad("engine", "one of " + ", ".join(ENGINES), self.engine)
        if self.kind in ("int", "float", "memory"):
            if self.low is None or self.high is None or not self.low < self.high:
                bad("low", f"below 'high' ({self.high!r})", self.low)
            if self.log and self.low <= 0:
                bad("low", "> 0 when log=True", self.low)
            if self.default is not None and not self.low <= self.default <= self.high:
                bad("default", f"within [{self.low}, {self.high}]", self.default)
        elif self.kind in ("choice", "bytes"):
            if len(self.choices) < 1:
                bad("choices", "a non-empty tuple", self.choices)
            if self.default is not None and self.default not in self.choices:
                bad("default", "one of its choices", self.default)

    def distribution(self):
        """The Optuna distribution of this knob."""
        from optuna.distributions import (CategoricalDistribution, FloatDistribution,
                                          IntDistribution)

        if self.kind in ("int", "memory"):
            return IntDistribution(int(self.low), int(self.high), log=self.log)
        if self.kind == "float":
            return FloatDistribution(float(self.low), float(self.high), log=self.log)
        if self.kind == "bool":
            return CategoricalDistribution((False, True))
        return CategoricalDistribution(tuple(self.choices))

    def suggest(self, trial):
        """Ask ``trial`` (a Trial or FixedTrial) for this knob's value."""
        if self.kind in ("int", "memory"):
            return trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log)
        if self.kind == "float":
            return trial.suggest_float(self.name, float(self.low), float(self.high), log=self.log)
        if self.kind == "bool":
            return trial.suggest_categorical(self.name, (False, True))
        return trial.suggest_categorical(self.name, tuple(self.choices))

    def parse(self, value):
        """A value as written in a configuration (``"4g"``, ``"true"``, ``"64"``)
        in this knob's type; values already typed pass through."""
        if not isinstance(value, str):
            return value
        text = value.strip()
        try:
            if self.kind == "bool":
                return {"true": True, "false": False}[text.lower()]
            if self.kind == "memory":
                units = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}
                suffix = text[-1].lower()
                if suffix == "b" and len(text) > 2:
                    text, suffix = text[:-1], text[-2].lower()
                if suffix in units:
                    return int(float(text.rstrip("bBkKmMgGtT")) * units[suffix])
                return int(text)
            if self.kind in ("int", "bytes"):
                return int(float(text))
            if self.kind == "float":
                return float(text)
        except (KeyError, ValueError):
            raise UsageError(f"{self.name}={value!r} is not a valid {self.kind}") from None
        return text

    def format(self, value) -> str:
        """The value as a configuration file or ``--conf`` wants it."""
        if isinstance(value, bool):
            return "true" if value else "false"
        if self.kind == "memory":
            value = int(value)
            return f"{value // 1024}g" if value % 1024 == 0 else f"{value}m"
        if self.kind == "float":
            return f"{float(value):.4g}"
        return str(value)


def _k(name, kind, **fields) -> Knob:
    return Knob(name=name, kind=kind, **fields)


_BROADCAST_CHOICES = (-1, 1 * MiB, 10 * MiB, 32 * MiB, 64 * MiB, 100 * MiB, 128 * MiB,
                      256 * MiB)
_SERIALIZERS = ("org.apache.spark.serializer.JavaSerializer",
                "org.apache.spark.serializer.KryoSerializer")

# The declarative table: every knob the tuner knows, with its engine default.
KNOBS: tuple[Knob, ...] = (
    # Spark, job level: fixed when the application starts.
    _k("spark.executor.instances", "int", low=1, high=64, log=True, default=2, level="job",
       help="executors of the application (default 2 on YARN and Kubernetes)"),
    _k("spark.executor.cores", "int", low=1, high=16, default=1, level="job",
       help="cores per executor (default 1 on YARN; all worker cores in standalone mode)"),
    _k("spark.executor.memory", "memory", low=512, high=65536, log=True, default=1024,
       level="job", help="heap per executor, MiB (default 1g)"),
    _k("spark.driver.memory", "memory", low=512, high=32768, log=True, default=1024,
       level="job", help="driver heap, MiB (default 1g)"),
    _k("spark.serializer", "choice", choices=_SERIALIZERS, default=_SERIALIZERS[0], level="job",
       help="serializer for shuffled and cached data (default JavaSerializer)"),
    _k("spark.io.compression.codec", "choice", choices=("lz4", "lzf", "snappy", "zstd"),
       default="lz4", level="job", help="codec of shuffle and broadcast blocks (default lz4)"),
    _k("spark.memory.fraction", "float", low=0.3, high=0.9, default=0.6, level="job",
       help="share of heap for execution and storage (default 0.6)"),
    _k("spark.default.parallelism", "int", low=2, high=2000, log=True, default=None,
       level="job", help="partitions of RDD shuffles (default: total executor cores)"),
    # Spark SQL, query level: settable per session.
    _k("spark.sql.shuffle.partitions", "int", low=1, high=2000, log=True, default=200,
       equivalent="mapreduce.job.reduces",
       help="partitions of SQL shuffles (default 200)"),
    _k("spark.sql.adaptive.enabled", "bool", default=True,
       help="adaptive query execution (default true since Spark 3.2)"),
    _k("spark.sql.adaptive.coalescePartitions.enabled", "bool", default=True,
       help="AQE merges small shuffle partitions (default true)"),
    _k("spark.sql.adaptive.skewJoin.enabled", "bool", default=True,
       equivalent="hive.optimize.skewjoin", help="AQE splits skewed join partitions (default true)"),
    _k("spark.sql.autoBroadcastJoinThreshold", "bytes", choices=_BROADCAST_CHOICES,
       default=10 * MiB, equivalent="hive.auto.convert.join",
       help="largest table broadcast to every executor, bytes; -1 disables (default 10 MiB)"),
    _k("spark.sql.files.maxPartitionBytes", "bytes",
       choices=(16 * MiB, 32 * MiB, 64 * MiB, 128 * MiB, 256 * MiB, 512 * MiB, 1024 * MiB),
       default=128 * MiB, help="largest input split of file scans, bytes (default 128 MiB)"),
    # Hive session knobs (HiveServer2): SET key=value.
    _k("hive.exec.parallel", "bool", default=False, engine="hive",
       help="run independent stages at once (default false; Spark always does)"),
    _k("hive.exec.parallel.thread.number", "int", low=1, high=32, default=8, engine="hive",
       help="stages run at once when hive.exec.parallel is on (default 8)"),
    _k("hive.auto.convert.join", "bool", default=True, engine="hive",
       equivalent="spark.sql.autoBroadcastJoinThreshold",
       help="map-side (broadcast) joins of small tables (default true)"),
    _k("hive.auto.convert.join.noconditionaltask.size", "bytes",
       choices=(1 * MiB, 10000000, 32 * MiB, 64 * MiB, 128 * MiB, 256 * MiB), default=10000000,
       engine="hive", equivalent="spark.sql.autoBroadcastJoinThreshold",
       help="largest small-table size for map joins, bytes (default 10 MB)"),
    _k("hive.exec.reducers.bytes.per.reducer", "int", low=16 * MiB, high=2048 * MiB, log=True,
       default=256000000, engine="hive",
       equivalent="spark.sql.adaptive.advisoryPartitionSizeInBytes",
       help="input bytes per reducer (default 256 MB)"),
    _k("hive.exec.reducers.max", "int", low=1, high=4096, log=True, default=1009, engine="hive",
       help="upper bound on reducers (default 1009)"),
    _k("hive.vectorized.execution.enabled", "bool", default=True, engine="hive",
       equivalent="spark.sql.parquet.enableVectorizedReader",
       help="vectorised operators (default true since Hive 2.3)"),
    _k("hive.optimize.skewjoin", "bool", default=False, engine="hive",
       equivalent="spark.sql.adaptive.skewJoin.enabled", help="skew-join rewrite (default false)"),
    _k("hive.exec.compress.intermediate", "bool", default=False, engine="hive",
       equivalent="spark.shuffle.compress", help="compress data between stages (default false)"),
    _k("hive.cbo.enable", "bool", default=True, engine="hive", equivalent="spark.sql.cbo.enabled",
       help="cost-based optimiser (default true)"),
    # Hadoop MapReduce job settings (-D key=value).
    _k("mapreduce.job.reduces", "int", low=1, high=512, log=True, default=1, level="job",
       engine="mapreduce", equivalent="spark.sql.shuffle.partitions",
       help="reduce tasks (default 1)"),
    _k("mapreduce.task.io.sort.mb", "int", low=16, high=2047, log=True, default=100,
       level="job", engine="mapreduce", help="map-side sort buffer, MiB (default 100)"),
    _k("mapreduce.task.io.sort.factor", "int", low=2, high=200, log=True, default=10,
       level="job", engine="mapreduce", help="streams merged at once when sorting (default 10)"),
    _k("mapreduce.map.output.compress", "bool", default=False, level="job", engine="mapreduce",
       help="compress map output before the shuffle (default false)"),
    _k("combiner", "bool", default=False, level="job", engine="mapreduce",
       help="run the job's reducer as combiner on map output "
            "(sets mapreduce.job.combine.class; default: no combiner)"),
    _k("mapreduce.local.map.tasks.maximum", "int", low=1, high=16, default=1, level="job",
       engine="mapreduce", help="map tasks run at once by the local job runner (default 1)"),
    _k("mapreduce.map.memory.mb", "memory", low=256, high=16384, log=True, default=1024,
       level="job", engine="mapreduce", help="container memory per map task, MiB (default 1024)"),
    _k("mapreduce.reduce.memory.mb", "memory", low=256, high=16384, log=True, default=1024,
       level="job", engine="mapreduce",
       help="container memory per reduce task, MiB (default 1024)"),
    # The cluster.
    _k("instance_count", "int", low=1, high=64, default=None, level="instance", engine="cluster",
       help="nodes of the cluster"),
)
_BY_NAME = {k.name: k for k in KNOBS}

# Spark in local mode (measured runs on this machine, as the shipped corpus was
# collected): the restart-level settings its grid varies.  ``spark.master``
# picks the worker threads (local[N]); the driver is the executor, so its heap
# is the memory; executor layout knobs do not apply.
LOCAL_SPARK_KNOBS: tuple[Knob, ...] = (
    _k("spark.master", "choice", choices=("local[1]", "local[2]"), default="local[2]",
       level="job", help="local mode with N worker threads (a new application)"),
    _k("spark.driver.memory", "memory", low=512, high=4096, log=True, default=1024,
       level="job", help="driver heap, MiB: all the memory of a local run (default 1g)"),
    _BY_NAME["spark.serializer"],
    _BY_NAME["spark.io.compression.codec"],
    _BY_NAME["spark.memory.fraction"],
    _k("spark.default.parallelism", "int", low=1, high=64, log=True, default=None,
       level="job", help="partitions of RDD shuffles (default: the local[N] threads)"),
)

SPARK_SQL_KNOBS = ("spark.sql.shuffle.partitions", "spark.sql.adaptive.enabled",
                   "spark.sql.adaptive.coalescePartitions.enabled",
                   "spark.sql.adaptive.skewJoin.enabled",
                   "spark.sql.autoBroadcastJoinThreshold", "spark.sql.files.maxPartitionBytes")


def knob(name: str) -> Knob:
    """The table's knob called ``name``."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UsageError(f"unknown knob {name!r}; known: {', '.join(sorted(_BY_NAME))}") from None


def instance_type_knob(names: Iterable[str]) -> Knob:
    """The ``instance_type`` dimension over the given catalog names."""
    names = tuple(names)
    return Knob("instance_type", "choice", choices=names, level="instance", engine="cluster",
                help="cloud instance type of every node")


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
        """Whether every value of ``config`` for a knob of this space is in its range."""
        for name, value in config.items():
            item = self._by_name.get(name)
            if item is None:
                continue
            if item.kind in ("int", "float", "memory"):
                if isinstance(value, bool) or not isinstance(value, (int, float)) \
                        or not item.low <= value <= item.high:
                    return False
                if item.kind != "float" and value != int(value):
                    return False
            elif item.kind == "bool":
                if not isinstance(value, bool):
                    return False
            elif value not in item.choices:
                return False
        return True

    def table(self) -> list[dict]:
        """The declarative table as plain rows (for ``--json`` and the docs)."""
        rows = []
        for item in self.knobs:
            row = asdict(item)
            row["choices"] = list(item.choices)
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
        chosen.append(Knob(count.name, "int", low=1, high=max(2, int(max_instances)),
                           level="instance", engine="cluster", help=count.help))
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
    from dataclasses import replace

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


def check_configuration(config: Mapping, *, instance=None, instance_count: int | None = None):
    """Raise :class:`InvalidConfiguration` if ``config`` cannot run on
    ``instance_count`` nodes of ``instance`` (an :class:`InstanceType`).

    Checked: executor cores fit a node's vCPUs; executor and driver heap plus
    overhead fit a node's memory less ``RESERVED_NODE_MB``; the executors asked
    for fit the cluster (executors per node times nodes); MapReduce's sort
    buffer fits its map container and containers fit a node.  Without an
    instance (local mode) only the engine-internal rules apply.
    """
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
        cores = int(_value(config, "spark.executor.cores"))
        if cores > instance.vcpus:
            raise InvalidConfiguration(
                f"spark.executor.cores={cores} does not fit a {name} node "
                f"({instance.vcpus:g} vCPUs)")
        memory_mb = _value(config, "spark.executor.memory")
        footprint = executor_footprint_mb(memory_mb)
        if footprint > node_mb:
            raise InvalidConfiguration(
                f"spark.executor.memory={knob('spark.executor.memory').format(memory_mb)} "
                f"(+ overhead: {footprint:.0f} MiB) does not fit a {name} node "
                f"({node_mb} MiB usable of {instance.memory_gib:g} GiB)")
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


# ------------------------------------------------------------ SQL equivalents

def hive_to_spark(settings: Mapping) -> dict:
    """Hive session settings as Spark SQL settings (for a Spark Thrift/HiveServer2
    session); settings Spark has no counterpart for are left out."""
    out = {}
    for name, value in settings.items():
        if name.startswith("spark."):
            out[name] = value
        elif name == "hive.auto.convert.join":
            if not value:
                out["spark.sql.autoBroadcastJoinThreshold"] = -1
            else:
                out.setdefault("spark.sql.autoBroadcastJoinThreshold", int(settings.get(
                    "hive.auto.convert.join.noconditionaltask.size", 10000000)))
        elif name == "hive.auto.convert.join.noconditionaltask.size":
            if settings.get("hive.auto.convert.join", True):
                out["spark.sql.autoBroadcastJoinThreshold"] = int(value)
        elif name == "hive.optimize.skewjoin":
            out["spark.sql.adaptive.skewJoin.enabled"] = bool(value)
        elif name == "hive.exec.reducers.bytes.per.reducer":
            out["spark.sql.adaptive.advisoryPartitionSizeInBytes"] = int(value)
        elif name == "mapreduce.job.reduces":
            out["spark.sql.shuffle.partitions"] = int(value)
        elif name == "hive.exec.compress.intermediate":
            out["spark.shuffle.compress"] = bool(value)
        elif name == "hive.vectorized.execution.enabled":
            out["spark.sql.parquet.enableVectorizedReader"] = bool(value)
            out["spark.sql.orc.enableVectorizedReader"] = bool(value)
        elif name == "hive.cbo.enable":
            out["spark.sql.cbo.enabled"] = bool(value)
    return out


def spark_to_hive(settings: Mapping) -> dict:
    """Spark SQL settings as the Hive session settings that do the same."""
    out = {}
    for name, value in settings.items():
        if name == "spark.sql.autoBroadcastJoinThreshold":
            out["hive.auto.convert.join"] = int(value) >= 0
            if int(value) >= 0:
                out["hive.auto.convert.join.noconditionaltask.size"] = int(value)
        elif name == "spark.sql.adaptive.skewJoin.enabled":
            out["hive.optimize.skewjoin"] = bool(value)
        elif name == "spark.sql.shuffle.partitions":
            out["mapreduce.job.reduces"] = int(value)
        elif name == "spark.sql.adaptive.advisoryPartitionSizeInBytes":
            out["hive.exec.reducers.bytes.per.reducer"] = int(value)
        elif name == "spark.shuffle.compress":
            out["hive.exec.compress.intermediate"] = bool(value)
        elif name == "spark.sql.parquet.enableVectorizedReader":
            out["hive.vectorized.execution.enabled"] = bool(value)
        elif name == "spark.sql.cbo.enabled":
            out["hive.cbo.enable"] = bool(value)
    return out


def format_setting(name: str, value) -> str:
    """``value`` as text for ``--conf``/``SET``; uses the knob's unit when it is known."""
    if name in _BY_NAME:
        return _BY_NAME[name].format(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


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
    """The level of a setting: from the table, ``instance`` for the cluster
    columns, ``job`` for anything else (a job parameter of a run table)."""
    if name in ("instance_type", "instance_count"):
        return "instance"
    item = _BY_NAME.get(name)
    return item.level if item is not None else "job"

