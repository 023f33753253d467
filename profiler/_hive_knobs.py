"""Hive session knobs on a Spark Thrift server: which ones Spark SQL honours, and how.

A Spark Thrift server accepts ``SET hive.x=y`` but Spark SQL's planner never
reads most Hive knobs, so a tuner that sets ``hive.auto.convert.join=false``
there would measure nothing.  :func:`translate_knobs` turns the requested
knobs into the settings that really change the plan:

- ``HIVE_TO_SPARK``: Hive knobs with a Spark SQL equivalent a session can
  set (translated), read from the knob table's one mapping of equivalents,
  ``jobgauge.knobs.EQUIVALENTS``;
- ``IGNORED_KNOBS``: Hive knobs with none, or whose equivalent is fixed when
  the server starts (not sent; the reason is kept);
- every other key (``spark.sql.*`` and unknown ``hive.*``) is sent as given.

Order: translations first, then knobs given in Spark's own words override
them (they are more specific), then ``hive.exec.reducers.max`` caps the
shuffle partition count that results.  On a real HiveServer2 every knob is
sent as given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from jobgauge import knobs as knob_table
from jobgauge.errors import UsageError

BROADCAST = "spark.sql.autoBroadcastJoinThreshold"
ADVISORY = "spark.sql.adaptive.advisoryPartitionSizeInBytes"
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
# Hive's own default for hive.auto.convert.join.noconditionaltask.size, used when
# hive.auto.convert.join=true is asked for without a size.
HIVE_DEFAULT_JOIN_SIZE = knob_table.knob("hive.auto.convert.join.noconditionaltask.size").default
_KINDS = {"bool": "bool", "size": "bytes", "int": "int"}


def _session_equivalents() -> dict:
    """Hive knob -> (Spark SQL setting, kind of value) for the table's equivalents
    (``jobgauge.knobs.EQUIVALENTS``) that a running Spark session can apply."""
    out = {}
    for name, (targets, _relation) in knob_table.EQUIVALENTS.items():
        if all(knob_table.restart_level(t) == "session" for t in targets):
            out[name] = (targets[0], _KINDS[knob_table.knob(name).kind])
    return out


# Hive knob -> (Spark SQL setting, kind of value); kind "bytes" and "int" are whole numbers.
HIVE_TO_SPARK = _session_equivalents()

_FIXED_AT_START = ("resources are fixed when the Thrift server starts "
                   "(jobgauge hive start --conf spark.driver.memory=...)")
IGNORED_KNOBS = {
    "hive.exec.parallel": "Spark SQL has no switch for running independent stages in parallel",
    "hive.exec.parallel.thread.number": "Spark SQL has no switch for running independent "
                                        "stages in parallel",
    "hive.execution.engine": "the engine of a Spark Thrift server is always Spark SQL",
    "hive.vectorized.execution.reduce.enabled": "Spark SQL always uses whole-stage code "
                                                "generation",
    "hive.map.aggr": "Spark SQL always aggregates partially before a shuffle",
    "hive.groupby.skewindata": "no Spark SQL equivalent",
    "hive.optimize.reducededuplication": "Spark's optimizer removes redundant shuffles itself",
    "hive.fetch.task.conversion": "Spark SQL has no fetch tasks",
    "hive.compute.query.using.stats": "no Spark SQL equivalent",
    "hive.stats.fetch.column.stats": "Spark SQL reads column statistics after ANALYZE TABLE",
    "hive.exec.compress.output": "a query that returns rows writes no output files",
    "hive.merge.mapfiles": "a query that returns rows writes no output files",
    "hive.merge.mapredfiles": "a query that returns rows writes no output files",
    "hive.tez.container.size": _FIXED_AT_START,
    "hive.tez.java.opts": _FIXED_AT_START,
    "mapreduce.map.memory.mb": _FIXED_AT_START,
    "mapreduce.reduce.memory.mb": _FIXED_AT_START,
    "mapreduce.map.java.opts": _FIXED_AT_START,
    "mapreduce.reduce.java.opts": _FIXED_AT_START,
    # Equivalents whose Spark setting is fixed when the application starts.
    **{name: f"{targets[0]} is fixed when the server starts"
       for name, (targets, _relation) in knob_table.EQUIVALENTS.items()
       if name.startswith("hive.") and name not in HIVE_TO_SPARK},
}

# In order of precedence: the first one given sets the broadcast threshold.
_JOIN_SIZE_KNOBS = ("hive.auto.convert.join.noconditionaltask.size",
                    "hive.mapjoin.smalltable.filesize")
_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]*$")
_TRUE, _FALSE = {"true", "1", "yes", "on"}, {"false", "0", "no", "off"}


@dataclass
class KnobPlan:
    """What was asked for and what was set on the server.

    ``requested``: the knobs as given; ``applied``: the ``SET`` statements
    sent, in order; ``translated``: Hive knob -> the Spark setting it became;
    ``ignored``: Hive knob -> why it was not sent.
    """

    requested: dict = field(default_factory=dict)
    applied: dict = field(default_factory=dict)
    translated: dict = field(default_factory=dict)
    ignored: dict = field(default_factory=dict)

    def settings(self) -> dict:
        """The run's settings for the store: requested knobs plus the Spark settings
        they became (a value that was really applied wins over a requested one)."""
        return {**self.requested, **self.applied}

    def to_dict(self) -> dict:
        return {"requested": dict(self.requested), "applied": dict(self.applied),
                "translated": dict(self.translated), "ignored": dict(self.ignored)}


def check_knobs(knobs) -> dict:
    """Knobs as ``{str: str}``, with clear errors for keys or values SET cannot carry."""
    if knobs is None:
        return {}
    if not isinstance(knobs, dict):
        raise UsageError(f"knobs must be a dict of setting -> value; got {type(knobs).__name__}")
    checked = {}
    for key, value in knobs.items():
        key = str(key).strip()
        if not _KEY.match(key):
            raise UsageError(f"knob name {key!r} is not a setting name (letters, digits, '.', "
                             "'_' and '-')")
        text = str(value).lower() if isinstance(value, bool) else str(value).strip()
        if not text or any(c in text for c in ";\n\r"):
            raise UsageError(f"knob {key} needs a one-line value without ';'; got {value!r}")
        checked[key] = text
    return checked


def _bool(key, text) -> bool:
    lowered = text.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise UsageError(f"{key} must be true or false; got {text!r}")


def _whole(key, text, *, minimum) -> int:
    try:
        number = int(text)
    except ValueError:
        raise UsageError(f"{key} must be a whole number; got {text!r}") from None
    if number < minimum:
        raise UsageError(f"{key} must be >= {minimum}; got {number}")
    return number


def translate_knobs(knobs, *, engine: str = "spark-thrift",
                    shuffle_partitions: int | None = None) -> KnobPlan:
    """The settings to ``SET`` for ``knobs`` on ``engine`` (``spark-thrift`` or ``hive``).

    ``shuffle_partitions`` is the server's current ``spark.sql.shuffle.partitions``,
    needed only to cap it for ``hive.exec.reducers.max``.

    >>> translate_knobs({"hive.auto.convert.join": "false", "hive.exec.parallel": "true"}).applied
    {'spark.sql.autoBroadcastJoinThreshold': '-1'}
    """
    requested = check_knobs(knobs)
    plan = KnobPlan(requested=dict(requested))
    if engine != "spark-thrift":
        plan.applied = dict(requested)
        return plan
    derived, passed = {}, {}
    join_size = None
    for key in _JOIN_SIZE_KNOBS:
        if key in requested:
            join_size = _whole(key, requested[key], minimum=-1)
            derived[BROADCAST] = str(join_size)
            plan.translated[key] = BROADCAST
            break
    for key, text in requested.items():
        if key in IGNORED_KNOBS:
            plan.ignored[key] = IGNORED_KNOBS[key]
        elif key == "hive.auto.convert.join":
            enabled = _bool(key, text)
            derived[BROADCAST] = str(join_size if join_size is not None and enabled
                                     else HIVE_DEFAULT_JOIN_SIZE if enabled else -1)
            plan.translated[key] = BROADCAST
            if not enabled:
                for size_key in [k for k, v in plan.translated.items()
                                 if v == BROADCAST and k != key]:
                    del plan.translated[size_key]
                    plan.ignored[size_key] = ("hive.auto.convert.join=false turns broadcast "
                                              "joins off")
        elif key in _JOIN_SIZE_KNOBS:
            _whole(key, text, minimum=-1)
            if key not in plan.translated and key not in plan.ignored:
                plan.ignored[key] = ("hive.auto.convert.join.noconditionaltask.size "
                                     "decides the broadcast threshold")
        elif key == "hive.exec.reducers.bytes.per.reducer":
            derived[ADVISORY] = str(_whole(key, text, minimum=1))
            plan.translated[key] = ADVISORY
        elif key in ("mapred.reduce.tasks", "mapreduce.job.reduces"):
            count = _whole(key, text, minimum=-1)
            if count <= 0:
                plan.ignored[key] = ("Hive's automatic reducer count: Spark's adaptive execution "
                                     "already sizes partitions")
            else:
                derived[SHUFFLE_PARTITIONS] = str(count)
                plan.translated[key] = SHUFFLE_PARTITIONS
        elif key == "hive.exec.reducers.max":
            _whole(key, text, minimum=1)
        elif key in HIVE_TO_SPARK:  # the remaining boolean switches
            for target in knob_table.EQUIVALENTS[key][0]:
                derived[target] = str(_bool(key, text)).lower()
            plan.translated[key] = HIVE_TO_SPARK[key][0]
        else:
            passed[key] = text
    applied = {**derived, **passed}
    if "hive.exec.reducers.max" in requested:
        cap = int(requested["hive.exec.reducers.max"])
        current = applied.get(SHUFFLE_PARTITIONS, shuffle_partitions)
        if current is None:
            raise UsageError("hive.exec.reducers.max needs the server's current "
                             "spark.sql.shuffle.partitions")
        applied[SHUFFLE_PARTITIONS] = str(min(int(current), cap))
        plan.translated["hive.exec.reducers.max"] = SHUFFLE_PARTITIONS
    plan.applied = applied
    return plan
