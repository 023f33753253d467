"""The knob table: every setting jobgauge reads, validates, tunes or translates, declared once.

One :class:`Knob` row per setting says

- what it is: ``name``, ``engine`` (``spark``, ``hive``, ``mapreduce`` or
  ``cluster``), ``kind`` (``int``, ``float``, ``bool``, ``choice``, ``size``,
  ``duration``, ``text``) and, for sizes and durations, the ``unit`` a plain
  number is in (``B``, ``KiB``, ``MiB``; ``s``, ``ms``), parsed and written
  by :mod:`jobgauge.units`;
- what the engine does when it is not set: ``default``, in the knob's type
  (sizes count ``unit``; durations are seconds);
- which values are valid: ``valid_low`` .. ``valid_high`` (what the engine
  accepts; a few are capped where larger values mean nothing more, e.g.
  Spark never broadcasts a table over 8 GiB) or ``choices``;
- which values the tuner searches: ``low`` .. ``high`` (``log`` scale) or
  ``choices``;
- when it takes effect (``restart``): ``session`` (settable per SQL session:
  ``SET key=value``), ``application`` (fixed when the application or job
  starts) or ``cluster`` (the instances themselves);
- whether the web form (``form``) and the tuner (``tuner``) expose it.

Equivalent settings across engines are one mapping, :data:`EQUIVALENTS`
(Hive or MapReduce setting -> the Spark SQL settings that do the same), read
by :func:`translate`, the tuner's ``hive_set_lines`` and the Hive Thrift
translation (``jobgauge.profiler.hive``).

>>> knob("spark.sql.shuffle.partitions").default
200
>>> parse_value("spark.executor.memory", "4g"), parse_value("spark.sql.adaptive.enabled", "false")
(4096, False)
>>> validate("spark.sql.shuffle.partitions", "-1")
Traceback (most recent call last):
...
jobgauge.errors.UsageError: spark.sql.shuffle.partitions must be 1 or more (valid: 1 to 100000); got -1
>>> default_config("mapreduce")["mapreduce.task.io.sort.mb"]
'100'
>>> restart_level("spark.sql.shuffle.partitions"), restart_level("spark.executor.cores")
('session', 'application')
>>> translate({"hive.auto.convert.join": "false"}, "spark")
{'spark.sql.autoBroadcastJoinThreshold': -1}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from jobgauge import units
from jobgauge.errors import GaugeError, UsageError

KINDS = ("int", "float", "bool", "choice", "size", "duration", "text")
RESTART_LEVELS = ("session", "application", "cluster")
ENGINES = ("spark", "hive", "mapreduce", "cluster")
# The tuner's words for the restart levels (its --level option and reports).
TUNER_LEVELS = {"session": "query", "application": "job", "cluster": "instance"}
MiB, GiB = units.MiB, units.GiB


@dataclass(frozen=True)
class Knob:
    """One setting: see the module docstring for the fields.

    ``low``/``high``/``choices``/``log`` are the tuner's search range; the
    valid range (``valid_low``/``valid_high``) is at least as wide.  A choice
    knob's ``choices`` are its valid values as well.
    """

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    choices: tuple = ()
    log: bool = False
    default: Any = None
    restart: str = "session"
    engine: str = "spark"
    help: str = ""
    unit: str | None = None
    valid_low: float | None = None
    valid_high: float | None = None
    form: bool = False
    tuner: bool = False

    def __post_init__(self):
        def bad(parameter, must, got):
            raise UsageError(f"The {parameter!r} parameter of Knob {self.name!r} must be "
                             f"{must}. Got {got!r} instead.")

        if not self.name:
            bad("name", "a non-empty string", self.name)
        if self.kind not in KINDS:
            bad("kind", "one of " + ", ".join(KINDS), self.kind)
        if self.restart not in RESTART_LEVELS:
            bad("restart", "one of " + ", ".join(RESTART_LEVELS), self.restart)
        if self.engine not in ENGINES:
            bad("engine", "one of " + ", ".join(ENGINES), self.engine)
        if self.kind == "size" and self.unit not in units.DEFAULT_SIZE_UNITS:
            bad("unit", "one of " + ", ".join(units.DEFAULT_SIZE_UNITS), self.unit)
        if self.kind == "duration" and self.unit not in units.DEFAULT_TIME_UNITS:
            bad("unit", "one of " + ", ".join(units.DEFAULT_TIME_UNITS), self.unit)
        if self.low is not None or self.high is not None:
            if self.low is None or self.high is None or not self.low < self.high:
                bad("low", f"below 'high' ({self.high!r})", self.low)
            if self.log and self.low <= 0:
                bad("low", "> 0 when log=True", self.low)
        if self.kind == "choice" and len(self.choices) < 1:
            bad("choices", "a non-empty tuple", self.choices)
        if self.tuner and self.kind in ("int", "float", "size") and not self.choices \
                and self.low is None:
            bad("low", "set: the tuner searches this knob", self.low)
        low, high = self.valid_range()
        if (low is not None and self.low is not None and self.low < low) \
                or (high is not None and self.high is not None and self.high > high):
            bad("low", f"a search range inside the valid range [{low}, {high}]",
                (self.low, self.high))
        if self.default is not None:
            if self.choices and self.default not in self.choices:
                bad("default", "one of its choices", self.default)
            if self.low is not None and not self.choices \
                    and not self.low <= self.default <= self.high:
                bad("default", f"within [{self.low}, {self.high}]", self.default)
            if (low is not None and self.default < low) or (high is not None
                                                            and self.default > high):
                bad("default", f"within the valid range [{low}, {high}]", self.default)

    # ------------------------------------------------------------ the table's words

    @property
    def level(self) -> str:
        """The tuner's word for ``restart``: ``query``, ``job`` or ``instance``."""
        return TUNER_LEVELS[self.restart]

    def valid_range(self) -> tuple:
        """(lowest, highest) valid value; a bound is None where the engine sets none."""
        if self.kind not in ("int", "float", "size", "duration"):
            return None, None
        low = self.valid_low if self.valid_low is not None else (
            None if self.low is None or self.choices else self.low)
        high = self.valid_high if self.valid_high is not None else (
            None if self.high is None or self.choices else self.high)
        return low, high

    def describe_range(self) -> str:
        """The valid values in words (``1 to 100000``, ``true or false``)."""
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            return "one of " + ", ".join(map(str, self.choices))
        low, high = self.valid_range()
        shown = [None if v is None else self.show(v) for v in (low, high)]
        if low is not None and high is not None:
            return f"{shown[0]} to {shown[1]}"
        if low is not None:
            return f"{shown[0]} or more"
        if high is not None:
            return f"at most {shown[1]}"
        return "any " + self.kind

    # ------------------------------------------------------------------ values

    def parse(self, value):
        """A value as written in a configuration (``"4g"``, ``"true"``, ``"64"``) in
        this knob's type; values already typed pass through.  Syntax only: see
        :meth:`validate` for the range."""
        if not isinstance(value, str):
            return value
        text = value.strip()
        if self.kind == "bool":
            lowered = text.lower()
            if lowered not in ("true", "false"):
                raise UsageError(f"{self.name}={value!r} is not a valid bool: "
                                 "must be true or false")
            return lowered == "true"
        if self.kind == "int":
            return units.parse_number(text, integer=True, name=self.name)
        if self.kind == "float":
            return units.parse_number(text, name=self.name)
        if self.kind == "size":
            return units.parse_size(text, default_unit=self.unit, name=self.name) \
                // units.DEFAULT_SIZE_UNITS[self.unit]
        if self.kind == "duration":
            return units.parse_duration(text, default_unit=self.unit, name=self.name)
        return text

    def validate(self, value):
        """``value`` (text or typed) in this knob's type, checked against the valid
        range; UsageError naming the knob, the valid values and what it got."""
        typed = self.parse(value)
        shown = value if isinstance(value, str) else repr(value)
        if self.kind == "bool":
            if not isinstance(typed, bool):
                raise UsageError(f"{self.name} must be true or false; got {shown}")
            return typed
        if self.kind == "choice":
            if typed not in self.choices:
                raise UsageError(f"{self.name} must be {self.describe_range()}; got {shown}")
            return typed
        if self.kind == "text":
            return str(typed)
        if isinstance(typed, bool) or not isinstance(typed, (int, float)):
            raise UsageError(f"{self.name} must be a number; got {shown}")
        if self.kind in ("int", "size") and typed != int(typed):
            raise UsageError(f"{self.name} must be a whole number; got {shown}")
        typed = int(typed) if self.kind in ("int", "size") else float(typed)
        low, high = self.valid_range()
        if low is not None and typed < low:
            raise UsageError(f"{self.name} must be {self.show(low)} or more "
                             f"(valid: {self.describe_range()}); got {shown}")
        if high is not None and typed > high:
            raise UsageError(f"{self.name} must be at most {self.show(high)} "
                             f"(valid: {self.describe_range()}); got {shown}")
        return typed

    def format(self, value) -> str:
        """The value (typed, or text as a configuration writes it) as a configuration
        file, ``--conf`` or ``SET`` wants it."""
        value = self.parse(value)
        if isinstance(value, bool):
            return "true" if value else "false"
        if self.kind == "size" and self.unit != "B" and int(value) > 0:
            return units.format_size(int(value), unit=self.unit)
        if self.kind == "duration":
            return units.format_duration(value)
        if self.kind == "float":
            return f"{float(value):.4g}"
        return str(value)

    def show(self, value) -> str:
        """The value for a person: sizes in binary units (``8g``), else as :meth:`format`."""
        if self.kind == "size" and int(value) > 0:
            return units.format_size(int(value), unit=self.unit)
        return self.format(value)

    # ------------------------------------------------------------------ the tuner

    def distribution(self):
        """The Optuna distribution of this knob's search range."""
        from optuna.distributions import (CategoricalDistribution, FloatDistribution,
                                          IntDistribution)

        if self.kind == "bool":
            return CategoricalDistribution((False, True))
        if self.choices:
            return CategoricalDistribution(tuple(self.choices))
        if self.kind == "float":
            return FloatDistribution(float(self.low), float(self.high), log=self.log)
        return IntDistribution(int(self.low), int(self.high), log=self.log)

    def suggest(self, trial):
        """Ask ``trial`` (a Trial or FixedTrial) for this knob's value."""
        if self.kind == "bool":
            return trial.suggest_categorical(self.name, (False, True))
        if self.choices:
            return trial.suggest_categorical(self.name, tuple(self.choices))
        if self.kind == "float":
            return trial.suggest_float(self.name, float(self.low), float(self.high), log=self.log)
        return trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log)

    def in_search_range(self, value) -> bool:
        """Whether ``value`` (typed) is a value the tuner could have suggested."""
        if self.kind == "bool":
            return isinstance(value, bool)
        if self.choices:
            return value in self.choices
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not self.low <= value <= self.high:
            return False
        return self.kind == "float" or value == int(value)


def _k(name, kind, **fields) -> Knob:
    return Knob(name=name, kind=kind, **fields)


def _spark(name, kind, default, help, **fields) -> Knob:
    return _k(name, kind, default=default, restart=fields.pop("restart", "application"),
              help=help, **fields)


def _sql(name, kind, default, help, **fields) -> Knob:
    return _k(name, kind, default=default, help=help, **fields)


_BROADCAST_CHOICES = (-1, 1 * MiB, 10 * MiB, 32 * MiB, 64 * MiB, 100 * MiB, 128 * MiB,
                      256 * MiB)
_SERIALIZERS = ("org.apache.spark.serializer.JavaSerializer",
                "org.apache.spark.serializer.KryoSerializer")
_NONNEG = {"valid_low": 0}
_POSITIVE = {"valid_low": 1}
_SHARE = {"valid_low": 0.0, "valid_high": 1.0}
_HEAP = {"valid_low": 450, "valid_high": 1024 * 1024}   # Spark refuses heaps under 450 MiB

# The table.  Defaults are the engines' documented defaults (Spark 3.5, Hive 3,
# Hadoop 3); every knob the feature builder fills in for runs that do not set
# it is here, with the ones the form and the tuner expose.
TABLE: tuple[Knob, ...] = (
    # Spark, fixed when the application starts.
    _spark("spark.master", "text", None,
           "where the application runs: local[N] or spark://HOST:PORT (no engine default; "
           "jobgauge runs on DEFAULT_MASTER unless told)"),
    _spark("spark.executor.instances", "int", 2, "executors of the application (default 2 on "
           "YARN and Kubernetes)", low=1, high=64, log=True, valid_low=1, valid_high=100_000,
           tuner=True),
    _spark("spark.executor.cores", "int", 1, "cores per executor (default 1 on YARN; all "
           "worker cores in standalone mode)", low=1, high=16, valid_low=1, valid_high=1024,
           tuner=True),
    _spark("spark.cores.max", "int", None, "cores the application takes from a standalone "
           "cluster in all (default: every core; with spark.executor.cores it sets the "
           "executor count)", valid_low=1, valid_high=100_000),
    _spark("spark.executor.memory", "size", 1024, "heap per executor, MiB (default 1g)",
           unit="MiB", low=512, high=65536, log=True, tuner=True, **_HEAP),
    _spark("spark.driver.memory", "size", 1024, "driver heap, MiB (default 1g)", unit="MiB",
           low=512, high=32768, log=True, tuner=True, **_HEAP),
    _spark("spark.driver.cores", "int", 1, "cores of the driver in cluster mode (default 1)",
           **_POSITIVE),
    _spark("spark.serializer", "choice", _SERIALIZERS[0], "serializer for shuffled and "
           "cached data (default JavaSerializer)", choices=_SERIALIZERS, tuner=True),
    _spark("spark.kryoserializer.buffer.max", "size", 64, "largest Kryo buffer, MiB "
           "(default 64m)", unit="MiB", valid_low=1, valid_high=2047),
    _spark("spark.io.compression.codec", "choice", "lz4", "codec of shuffle and broadcast "
           "blocks (default lz4)", choices=("lz4", "lzf", "snappy", "zstd"), tuner=True),
    _spark("spark.io.compression.lz4.blockSize", "size", 32, "LZ4 block size, KiB "
           "(default 32k)", unit="KiB", **_POSITIVE),
    _spark("spark.memory.fraction", "float", 0.6, "share of heap for execution and storage "
           "(default 0.6)", low=0.3, high=0.9, tuner=True, **_SHARE),
    _spark("spark.memory.storageFraction", "float", 0.5, "share of that memory immune to "
           "eviction (default 0.5)", **_SHARE),
    _spark("spark.default.parallelism", "int", None, "partitions of RDD shuffles (default: "
           "total executor cores)", low=2, high=2000, log=True, valid_low=1,
           valid_high=100_000, tuner=True),
    _spark("spark.task.cpus", "int", 1, "cores per task (default 1)", **_POSITIVE),
    _spark("spark.shuffle.compress", "bool", True, "compress shuffle output (default true)"),
    _spark("spark.shuffle.spill.compress", "bool", True, "compress spilled data "
           "(default true)"),
    _spark("spark.shuffle.file.buffer", "size", 32, "buffer per shuffle file, KiB "
           "(default 32k)", unit="KiB", **_POSITIVE),
    _spark("spark.shuffle.sort.bypassMergeThreshold", "int", 200, "reduce partitions below "
           "which sort shuffle skips merge-sorting (default 200)", **_NONNEG),
    _spark("spark.reducer.maxSizeInFlight", "size", 48, "map output fetched at once per "
           "reduce task, MiB (default 48m)", unit="MiB", **_POSITIVE),
    _spark("spark.rdd.compress", "bool", False, "compress serialized cached partitions "
           "(default false)"),
    _spark("spark.broadcast.blockSize", "size", 4, "broadcast block size, MiB (default 4m)",
           unit="MiB", **_POSITIVE),
    _spark("spark.broadcast.compress", "bool", True, "compress broadcast variables "
           "(default true)"),
    _spark("spark.speculation", "bool", False, "re-launch slow tasks (default false)"),
    _spark("spark.locality.wait", "duration", 3.0, "wait for a data-local slot "
           "(default 3s)", unit="ms", valid_low=0.0),
    # Spark SQL, settable per session.
    _sql("spark.sql.shuffle.partitions", "int", 200, "partitions of SQL shuffles (default "
         "200; jobgauge accepts up to 100000)", low=1, high=2000, log=True, valid_low=1,
         valid_high=100_000, form=True, tuner=True),
    _sql("spark.sql.adaptive.enabled", "bool", True, "adaptive query execution (default "
         "true since Spark 3.2)", form=True, tuner=True),
    _sql("spark.sql.adaptive.coalescePartitions.enabled", "bool", True, "AQE merges small "
         "shuffle partitions (default true)", tuner=True),
    _sql("spark.sql.adaptive.skewJoin.enabled", "bool", True, "AQE splits skewed join "
         "partitions (default true)", tuner=True),
    _sql("spark.sql.adaptive.advisoryPartitionSizeInBytes", "size", 64 * MiB, "target size "
         "of AQE shuffle partitions, bytes (default 64 MiB)", unit="B", valid_low=1,
         valid_high=64 * GiB),
    _sql("spark.sql.autoBroadcastJoinThreshold", "size", 10 * MiB, "largest table "
         "broadcast to every executor, bytes; -1 disables (default 10 MiB; Spark cannot "
         "broadcast more than 8 GiB)", unit="B", choices=_BROADCAST_CHOICES, valid_low=-1,
         valid_high=8 * GiB, form=True, tuner=True),
    _sql("spark.sql.files.maxPartitionBytes", "size", 128 * MiB, "largest input split of "
         "file scans, bytes (default 128 MiB)", unit="B",
         choices=(16 * MiB, 32 * MiB, 64 * MiB, 128 * MiB, 256 * MiB, 512 * MiB, 1024 * MiB),
         valid_low=1, valid_high=64 * GiB, tuner=True),
    _sql("spark.sql.codegen.wholeStage", "bool", True, "whole-stage code generation "
         "(default true)"),
    _sql("spark.sql.cbo.enabled", "bool", False, "cost-based optimizer (default false)"),
    _sql("spark.sql.join.preferSortMergeJoin", "bool", True, "sort-merge over shuffled "
         "hash joins (default true)"),
    _sql("spark.sql.parquet.enableVectorizedReader", "bool", True, "vectorized Parquet "
         "reader (default true)"),
    _sql("spark.sql.orc.enableVectorizedReader", "bool", True, "vectorized ORC reader "
         "(default true)"),
    _sql("spark.sql.inMemoryColumnarStorage.batchSize", "int", 10000, "rows per batch of "
         "cached tables (default 10000)", **_POSITIVE),
    _sql("spark.sql.inMemoryColumnarStorage.compressed", "bool", True, "compress cached "
         "tables (default true)"),
    # Hive session knobs (HiveServer2): SET key=value.
    _k("hive.exec.parallel", "bool", default=False, engine="hive", tuner=True,
       help="run independent stages at once (default false; Spark always does)"),
    _k("hive.exec.parallel.thread.number", "int", low=1, high=32, default=8, engine="hive",
       valid_low=1, valid_high=1024, tuner=True,
       help="stages run at once when hive.exec.parallel is on (default 8)"),
    _k("hive.auto.convert.join", "bool", default=True, engine="hive", tuner=True,
       help="map-side (broadcast) joins of small tables (default true)"),
    _k("hive.auto.convert.join.noconditionaltask.size", "size", unit="B",
       choices=(1 * MiB, 10000000, 32 * MiB, 64 * MiB, 128 * MiB, 256 * MiB),
       default=10000000, engine="hive", valid_low=-1, valid_high=8 * GiB, tuner=True,
       help="largest small-table size for map joins, bytes (default 10 MB)"),
    _k("hive.mapjoin.smalltable.filesize", "size", unit="B", default=25000000, engine="hive",
       valid_low=-1, valid_high=8 * GiB,
       help="small-table size for map joins without noconditionaltask, bytes "
            "(default 25 MB)"),
    _k("hive.exec.reducers.bytes.per.reducer", "int", low=16 * MiB, high=2048 * MiB,
       log=True, default=256000000, engine="hive", valid_low=1, tuner=True,
       help="input bytes per reducer (default 256 MB)"),
    _k("hive.exec.reducers.max", "int", low=1, high=4096, log=True, default=1009,
       engine="hive", valid_low=1, valid_high=100_000, tuner=True,
       help="upper bound on reducers (default 1009)"),
    _k("mapred.reduce.tasks", "int", default=-1, engine="hive", valid_low=-1,
       valid_high=100_000, help="reducers of a Hive query; -1: Hive picks (default -1)"),
    _k("hive.vectorized.execution.enabled", "bool", default=True, engine="hive", tuner=True,
       help="vectorised operators (default true since Hive 2.3)"),
    _k("hive.optimize.skewjoin", "bool", default=False, engine="hive", tuner=True,
       help="skew-join rewrite (default false)"),
    _k("hive.exec.compress.intermediate", "bool", default=False, engine="hive", tuner=True,
       help="compress data between stages (default false)"),
    _k("hive.cbo.enable", "bool", default=True, engine="hive", tuner=True,
       help="cost-based optimiser (default true)"),
    # Hadoop MapReduce job settings (-D key=value).
    _k("mapreduce.job.reduces", "int", low=1, high=512, log=True, default=1,
       restart="application", engine="mapreduce", valid_low=0, valid_high=100_000,
       tuner=True, help="reduce tasks; 0: a map-only job (default 1)"),
    _k("mapreduce.task.io.sort.mb", "int", low=16, high=2047, log=True, default=100,
       restart="application", engine="mapreduce", valid_low=1, valid_high=2047, tuner=True,
       help="map-side sort buffer, MiB (default 100)"),
    _k("mapreduce.task.io.sort.factor", "int", low=2, high=200, log=True, default=10,
       restart="application", engine="mapreduce", valid_low=2, valid_high=10_000,
       tuner=True, help="streams merged at once when sorting (default 10)"),
    _k("mapreduce.map.output.compress", "bool", default=False, restart="application",
       engine="mapreduce", tuner=True,
       help="compress map output before the shuffle (default false)"),
    _k("mapreduce.output.fileoutputformat.compress", "bool", default=False,
       restart="application", engine="mapreduce",
       help="compress the job's output files (default false)"),
    _k("mapreduce.reduce.shuffle.parallelcopies", "int", default=5, restart="application",
       engine="mapreduce", valid_low=1, help="parallel map output fetches per reduce "
                                             "(default 5)"),
    _k("mapreduce.job.reduce.slowstart.completedmaps", "float", default=0.05,
       restart="application", engine="mapreduce", help="share of maps done before reduces "
                                                      "start (default 0.05)", **_SHARE),
    _k("combiner", "bool", default=False, restart="application", engine="mapreduce",
       tuner=True, help="run the job's reducer as combiner on map output "
                        "(sets mapreduce.job.combine.class; default: no combiner)"),
    _k("mapreduce.local.map.tasks.maximum", "int", low=1, high=16, default=1,
       restart="application", engine="mapreduce", valid_low=1, valid_high=1024, tuner=True,
       help="map tasks run at once by the local job runner (default 1)"),
    _k("mapreduce.map.memory.mb", "int", low=256, high=16384, log=True, default=1024,
       restart="application", engine="mapreduce", valid_low=1, valid_high=1024 * 1024,
       tuner=True, help="container memory per map task, MiB (default 1024)"),
    _k("mapreduce.reduce.memory.mb", "int", low=256, high=16384, log=True, default=1024,
       restart="application", engine="mapreduce", valid_low=1, valid_high=1024 * 1024,
       tuner=True, help="container memory per reduce task, MiB (default 1024)"),
    # The cluster.
    _k("instance_count", "int", low=1, high=64, default=None, restart="cluster",
       engine="cluster", valid_low=1, valid_high=1000, tuner=True,
       help="nodes of the cluster"),
)
_BY_NAME = {k.name: k for k in TABLE}
if len(_BY_NAME) != len(TABLE):  # pragma: no cover - a typo in the table
    raise RuntimeError("the knob table names a knob twice")

# Equivalent settings, the one mapping: Hive or MapReduce setting -> the Spark
# SQL settings that do the same (relation "same": the value carries over;
# "switch": false is -1, i.e. off, true keeps or sets a size; "cap": an upper
# bound on the Spark value).
EQUIVALENTS: dict[str, tuple[tuple[str, ...], str]] = {
    "hive.auto.convert.join": (("spark.sql.autoBroadcastJoinThreshold",), "switch"),
    "hive.auto.convert.join.noconditionaltask.size":
        (("spark.sql.autoBroadcastJoinThreshold",), "same"),
    "hive.mapjoin.smalltable.filesize": (("spark.sql.autoBroadcastJoinThreshold",), "same"),
    "hive.exec.reducers.bytes.per.reducer":
        (("spark.sql.adaptive.advisoryPartitionSizeInBytes",), "same"),
    "hive.exec.reducers.max": (("spark.sql.shuffle.partitions",), "cap"),
    "mapreduce.job.reduces": (("spark.sql.shuffle.partitions",), "same"),
    "mapred.reduce.tasks": (("spark.sql.shuffle.partitions",), "same"),
    "hive.optimize.skewjoin": (("spark.sql.adaptive.skewJoin.enabled",), "same"),
    "hive.cbo.enable": (("spark.sql.cbo.enabled",), "same"),
    "hive.exec.compress.intermediate": (("spark.shuffle.compress",), "same"),
    "hive.vectorized.execution.enabled": (("spark.sql.parquet.enableVectorizedReader",
                                           "spark.sql.orc.enableVectorizedReader"), "same"),
}
# The other way: Spark setting -> the Hive/MapReduce setting it becomes (the
# first "same" row naming it); the broadcast threshold also sets the switch.
SPARK_TO_HIVE = {}
for _source, (_targets, _relation) in EQUIVALENTS.items():
    if _relation == "same":
        SPARK_TO_HIVE.setdefault(_targets[0], _source)

# Settings a run with nothing set records, per engine: "the default
# configuration" of the corpus and bench/ (values from the table).
DEFAULT_MASTER = "local[2]"      # the master the shipped corpus was measured on
RECORDED_DEFAULTS = {
    "spark": ("spark.master",),
    "mapreduce": ("mapreduce.job.reduces", "mapreduce.task.io.sort.mb",
                  "mapreduce.task.io.sort.factor", "mapreduce.map.output.compress"),
}

# Restart levels of settings the table does not list (the runner's rule):
# these prefixes and static SQL settings are fixed when the application starts;
# other spark.sql.* settings change per session; anything else needs a restart.
RESTART_PREFIXES = ("spark.executor.", "spark.driver.", "spark.cores.max", "spark.serializer",
                    "spark.io.compression.codec", "spark.memory.", "spark.default.parallelism",
                    "spark.master", "spark.eventLog.", "spark.local.dir", "spark.shuffle.")
STATIC_SQL = ("spark.sql.warehouse.dir", "spark.sql.extensions",
              "spark.sql.catalogImplementation")


def knob(name: str) -> Knob:
    """The table's knob called ``name``."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UsageError(f"unknown knob {name!r}; known: {', '.join(sorted(_BY_NAME))}") from None


def find(name: str) -> Knob | None:
    """The table's knob called ``name``, None for a setting it does not list."""
    return _BY_NAME.get(name)


def knobs(*, engine: str | None = None, form: bool | None = None,
          tuner: bool | None = None) -> tuple[Knob, ...]:
    """The table's knobs, filtered by engine and by what exposes them."""
    return tuple(k for k in TABLE if (engine is None or k.engine == engine)
                 and (form is None or k.form == form) and (tuner is None or k.tuner == tuner))


def parse_value(name: str, text):
    """``text`` as written in a configuration in the type of knob ``name``
    (syntax only; :func:`validate` also checks the range)."""
    return knob(name).parse(text)


def validate(name: str, value):
    """``value`` (text or typed) of knob ``name`` in its type, or UsageError naming
    the knob, its valid values and what it got."""
    return knob(name).validate(value)


def validate_known(config: Mapping) -> None:
    """Every setting of ``config`` that the table knows, in its valid range (UsageError
    naming the knob, its valid values and what it got); the others and None pass."""
    for name, value in config.items():
        item = _BY_NAME.get(name)
        if item is not None and value is not None:
            item.validate(value)


def format_value(name: str, value) -> str:
    """``value`` as text for ``--conf``/``SET``/``-D``, in the knob's unit when it is known."""
    item = _BY_NAME.get(name)
    if item is not None:
        return item.format(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def defaults_as_text(engine: str | None = None) -> dict[str, str]:
    """Every knob's engine default as a configuration writes it (knobs without a
    fixed default, such as ``spark.default.parallelism``, are left out)."""
    return {k.name: k.format(k.default) for k in TABLE
            if k.default is not None and (engine is None or k.engine == engine)
            and k.restart != "cluster"}


def default_config(engine: str) -> dict[str, str]:
    """The default configuration of ``engine`` as a run with nothing set records it:
    ``{"spark.master": "local[2]"}`` for Spark, Hadoop's effective defaults for
    MapReduce, ``{}`` for an engine that records none."""
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
    return {name: DEFAULT_MASTER if name == "spark.master"
            else _BY_NAME[name].format(_BY_NAME[name].default)
            for name in RECORDED_DEFAULTS.get(engine, ())}


def is_default_config(config: Mapping) -> bool:
    """Whether a run's recorded configuration is an engine's default configuration:
    nothing set, or exactly what :func:`default_config` records."""
    return dict(config) in ({}, default_config("spark"), default_config("mapreduce"))


def restart_level(name: str) -> str:
    """When setting ``name`` takes effect: the table's level, else the runner's
    rule (``spark.sql.*`` per session unless static, anything else at the start)."""
    item = _BY_NAME.get(name)
    if item is not None:
        return item.restart
    if name.startswith(RESTART_PREFIXES) or name in STATIC_SQL \
            or not name.startswith("spark.sql."):
        return "application"
    return "session"


def needs_restart(name: str) -> bool:
    """Whether a running Spark application must restart to change ``name``: true
    unless it is a Spark SQL session setting."""
    item = _BY_NAME.get(name)
    if item is not None and item.engine != "spark":
        return True
    return restart_level(name) != "session"


def translate(config: Mapping, to_engine: str) -> dict:
    """``config`` in the words of ``to_engine``, by :data:`EQUIVALENTS`.

    ``to_engine="spark"``: Hive/MapReduce settings as the Spark SQL settings that
    do the same (settings already in Spark's words are kept; those without a
    counterpart are left out).  ``to_engine="hive"``: Spark settings as the
    Hive session settings that do the same.  Values may be text or typed; the
    result is typed.
    """
    if to_engine == "spark":
        return _to_spark(config)
    if to_engine == "hive":
        return _to_hive(config)
    raise UsageError(f"translate to {to_engine!r}: expected spark or hive")


def _typed(name, value):
    return _BY_NAME[name].parse(value) if name in _BY_NAME else value


_AS_GIVEN = object()


def read_setting(name: str, value, unreadable=_AS_GIVEN):
    """A setting's value as the knob table reads it (``100m`` and ``104857600`` of
    a size knob are one value); for a setting the table does not list, or a value it
    cannot read, the value as given (or ``unreadable(value)`` where that is given)."""
    item = _BY_NAME.get(name)
    try:
        if item is not None:
            return item.parse(value)
    except (GaugeError, TypeError, ValueError):
        pass
    return value if unreadable is _AS_GIVEN else unreadable(value)


def changed_settings(config: Mapping, defaults: Mapping | None = None) -> tuple:
    """The settings of ``config`` that differ from ``defaults`` (default: each knob's
    engine default in the table), as a sorted tuple of (name, value as spark-submit
    writes it): one key per configuration, whatever the types its values came in
    (``100m`` and ``104857600`` are one; ``200`` shuffle partitions is no change).
    Only knobs of the table count, the master aside: what a wrapped run also carries
    (``spark.eventLog.dir``, ``spark.app.name``) is no change of how it runs."""
    defaults = defaults or {}

    def typed(name, value):
        return read_setting(name, value, unreadable=str)

    def same(name, value, default):
        return default is not None and format_value(name, value) == format_value(name, default)

    return tuple(sorted(
        (name, format_value(name, typed(name, value))) for name, value in config.items()
        if name != "spark.master" and value is not None
        and find(name) is not None       # a knob outside the space: its engine default
        and not same(name, typed(name, value), defaults.get(name, find(name).default))))


def _to_spark(config: Mapping) -> dict:
    out = {}
    switch = config.get("hive.auto.convert.join")
    enabled = True if switch is None else _typed("hive.auto.convert.join", switch)
    for name, value in config.items():
        if name.startswith("spark."):
            out[name] = _typed(name, value)
            continue
        if name not in EQUIVALENTS:
            continue
        targets, relation = EQUIVALENTS[name]
        value = _typed(name, value)
        if relation == "switch":
            if not value:
                out[targets[0]] = -1
            else:
                out.setdefault(targets[0], _typed(
                    "hive.auto.convert.join.noconditionaltask.size",
                    config.get("hive.auto.convert.join.noconditionaltask.size",
                               knob("hive.auto.convert.join.noconditionaltask.size").default)))
        elif relation == "cap":
            if targets[0] in out:
                out[targets[0]] = min(out[targets[0]], value)
        elif targets[0] == "spark.sql.autoBroadcastJoinThreshold":
            if enabled and name == "hive.auto.convert.join.noconditionaltask.size":
                out[targets[0]] = value
        else:
            for target in targets:
                out[target] = value
    return out


def _to_hive(config: Mapping) -> dict:
    out = {}
    for name, value in config.items():
        value = _typed(name, value)
        if name == "spark.sql.autoBroadcastJoinThreshold":
            out["hive.auto.convert.join"] = int(value) >= 0
            if int(value) >= 0:
                out["hive.auto.convert.join.noconditionaltask.size"] = int(value)
        elif name in SPARK_TO_HIVE:
            out[SPARK_TO_HIVE[name]] = value
    return out


__all__ = ["DEFAULT_MASTER", "ENGINES", "EQUIVALENTS", "KINDS", "Knob", "RESTART_LEVELS",
           "SPARK_TO_HIVE", "TABLE", "changed_settings", "default_config", "defaults_as_text",
           "find", "format_value", "is_default_config", "knob", "knobs", "needs_restart",
           "parse_value", "read_setting", "restart_level", "translate", "validate"]
