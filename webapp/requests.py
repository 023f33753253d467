"""Validation of what a person or a script asks, shared by the form and the API.

Every check raises :class:`InvalidField` naming the field, so the form can
show the message next to it and the API can return it in ``detail.field``.
Knob fields (``shuffle_partitions``, ``adaptive``, ``broadcast_threshold``,
and the table's knobs inside ``config``) are parsed and range-checked by the
knob table, :mod:`jobgauge.knobs`, so a value outside a knob's valid range is
refused, never predicted.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from jobgauge import knobs
from jobgauge.errors import UsageError
from jobgauge.units import HIBENCH_SIZES, MAX_SCALE, scale_label


class InvalidField(UsageError):
    """A form or JSON field holds a value jobgauge cannot use."""

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")


# Form fields that set a knob of the table (jobgauge.knobs), which holds their
# type, unit and valid range; "adaptive" adds the choice "default" (not set).
KNOB_FIELDS = {"shuffle_partitions": "spark.sql.shuffle.partitions",
               "adaptive": "spark.sql.adaptive.enabled",
               "broadcast_threshold": "spark.sql.autoBroadcastJoinThreshold"}
AQE_CHOICES = ("default", "true", "false")
LOCAL_TYPES = ("local[1]", "local[2]")
SQL_WORKLOAD = "sql"           # the workload choice "the query I pasted"
MAX_NODES = 1000
MAX_INSTANCE_TYPES = 20
#: The HiBench size asked when none is given: measured for every shipped HiBench
#: workload (HiBench's own default, large, is not; a size the model has not measured is
#: refused, models.predict_frame).
DEFAULT_SIZE = "medium"
MAX_NODE_POINTS = 12           # node counts evaluated per instance type (the what-if grid)
ESTIMATE_FIELDS = ("workload", "query", "sql", "scale", "size", "input_gb", "instance_types",
                   "nodes_min", "nodes_max", "deadline_s", "budget_usd", "shuffle_partitions",
                   "adaptive", "broadcast_threshold", "config", "include_dag", "explain")
TUNE_FIELDS = ESTIMATE_FIELDS + ("trials", "seed")


@dataclass
class EstimateRequest:
    """One validated question: which job, how much data, on which clusters, under which limits."""

    workload: str                      # tpch-q3, wordcount, or sql-<hash> for a pasted query
    label: str                         # what the page calls it
    datasize: str                      # sf0.1, large, ...
    scale: float | None                # TPC-H scale factor (TPC-H and pasted queries)
    input_bytes: float | None
    instance_types: list[str]
    nodes_min: int
    nodes_max: int
    deadline_s: float | None = None
    budget_usd: float | None = None
    config: dict = field(default_factory=dict)
    sql: str | None = None             # the query text (pasted, or the workload's own SQL)
    pasted: bool = False
    include_dag: bool = False
    explain: bool = False              # where the recommended answer's time goes, by stage

    def node_counts(self) -> list[int]:
        """Node counts of the what-if grid: all of them, or MAX_NODE_POINTS spread
        geometrically from nodes_min to nodes_max."""
        low, high = self.nodes_min, self.nodes_max
        if high - low + 1 <= MAX_NODE_POINTS:
            return list(range(low, high + 1))
        ratio = (high / low) ** (1 / (MAX_NODE_POINTS - 1))
        counts = {low, high}
        counts.update(round(low * ratio ** i) for i in range(MAX_NODE_POINTS))
        return sorted(counts)


def _unicode(name, value: str) -> str:
    """``value`` when it is real Unicode text (a lone surrogate, which JSON escapes
    allow, cannot be stored, hashed or shown)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidField(name, "must be valid Unicode text; it holds a lone surrogate "
                                 "(an unpaired \\ud800-\\udfff escape)") from None
    return value


def _whole_number(text: str) -> bool:
    """Whether ``text`` is a plain decimal whole number (ASCII digits only: '³' and
    '٣' pass str.isdigit but are not numbers a person types here)."""
    return text.isascii() and text.isdigit()


def _text(data, name) -> str:
    value = data.get(name)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise InvalidField(name, f"must be a string or number; got {type(value).__name__}")
    if isinstance(value, str):
        _unicode(name, value)
    return str(value).strip()


def _knob_text(data, name) -> str:
    """A form field that sets a knob, as text: a JSON boolean is that knob value
    ("true"/"false"), as in ``config`` and in a run record; anything else as ``_text``."""
    value = data.get(name)
    if isinstance(value, bool):
        return "true" if value else "false"
    return _text(data, name)


def _number(data, name, *, minimum=None, strictly=False, maximum=None, integer=False,
            unit="", default=None):
    text = _text(data, name)
    if not text:
        return default
    try:
        if not text.isascii():  # float() reads other scripts' digits; a person means ASCII
            raise ValueError(text)
        value = float(text)
    except (ValueError, OverflowError):
        raise InvalidField(name, f"must be a number{unit and ' of ' + unit}; "
                                 f"got {text[:40]!r}") from None
    if not math.isfinite(value):
        raise InvalidField(name, f"must be a finite number; got {text[:40]!r}")
    if integer and value != math.floor(value):
        raise InvalidField(name, f"must be a whole number; got {text[:40]}")
    if minimum is not None and (value <= minimum if strictly else value < minimum):
        relation = "greater than" if strictly else "at least"
        raise InvalidField(name, f"must be {relation} {minimum:g}; got {text[:40]}")
    if maximum is not None and value > maximum:
        raise InvalidField(name, f"must be at most {maximum:g}; got {text[:40]}")
    return int(value) if integer else value


def _bool(data, name) -> bool:
    value = data.get(name)
    if value is None or value == "":
        return False
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise InvalidField(name, f"must be true or false; got {text[:40]!r}")


def _unknown_fields(data: dict, allowed) -> None:
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        raise InvalidField(unknown[0].encode("utf-8", "backslashreplace").decode()[:80],
                           "is not a field of this request; fields are "
                                       + ", ".join(allowed))


def _workload(data: dict, known_workloads, max_query_chars: int, sql_wins: bool):
    """(workload, label, sql text or None, pasted?)"""
    from jobgauge.webapp._plans import workload_sql

    raw_sql = data.get("sql")
    if raw_sql is not None and not isinstance(raw_sql, str):
        raise InvalidField("sql", f"must be text; got {type(raw_sql).__name__}")
    sql = _unicode("sql", raw_sql or "").strip()
    workload = _text(data, "workload")
    query = _text(data, "query")
    if len(sql) > max_query_chars:
        raise InvalidField("sql", f"is too long: {len(sql)} characters, at most "
                                  f"{max_query_chars} are accepted")
    if sql and (query or workload not in ("", SQL_WORKLOAD)):
        if not sql_wins or query:
            raise InvalidField("sql", "give either a query text (sql) or a workload, not both")
        workload = SQL_WORKLOAD  # the form keeps its picked workload while a query is pasted
    if workload == SQL_WORKLOAD or (sql and not workload and not query):
        if not sql:
            raise InvalidField("sql", "is empty: paste a HiveQL or Spark SQL query, "
                                      "or pick a TPC-H query or HiBench workload")
        from jobgauge.profiler.runners._hive_record import query_workload

        return query_workload(sql), "your query", sql, True
    if workload and query:
        raise InvalidField("query", "give either query (a TPC-H number) or workload, not both")
    if query:
        if not _whole_number(query) or not 1 <= int(query) <= 22:
            raise InvalidField("query", f"must be a TPC-H query number from 1 to 22; got {query[:40]!r}")
        workload = f"tpch-q{int(query)}"
    if not workload:
        raise InvalidField("workload", "choose a TPC-H query, a HiBench workload, or paste a query")
    if workload not in known_workloads:
        raise InvalidField("workload", f"is not a known workload; got {workload[:60]!r} "
                                       "(TPC-H tpch-q1..tpch-q22, a HiBench name, or a job "
                                       "in the store: 'jobgauge import' adds yours)")
    if _own_job(workload):
        return workload, f"your job {workload}", None, False
    label = f"TPC-H Q{workload[6:]}" if workload.startswith("tpch-q") else f"HiBench {workload}"
    return workload, label, workload_sql(workload), False


def _own_job(workload: str) -> bool:
    """A job of the user's (from the store), not a workload jobgauge runs itself (one of
    no benchmark, :func:`jobgauge.profiler.workloads.benchmark_of`)."""
    from jobgauge.profiler.workloads import benchmark_of

    return workload != SQL_WORKLOAD and benchmark_of(workload) is None


def _config(data: dict) -> dict:
    config = {}
    extra = data.get("config")
    if extra is not None:
        if not isinstance(extra, dict):
            raise InvalidField("config", "must be an object of spark.* settings")
        for key, value in extra.items():
            if not re.fullmatch(r"spark\.[A-Za-z0-9_.\-]+", str(key)):
                raise InvalidField("config", f"{str(key)[:80]!r} is not a spark.* setting")
            if isinstance(value, (dict, list)) or value is None:
                raise InvalidField("config", f"{key} needs a plain value")
            if isinstance(value, str):
                _unicode("config", value)
            text = str(value).lower() if isinstance(value, bool) else str(value)
            if knobs.find(str(key)) is not None:   # a knob of the table: in its valid range
                try:
                    knobs.validate(str(key), text)
                except UsageError as exc:
                    raise InvalidField("config", str(exc)) from None
            config[str(key)] = text
    partitions = _knob_text(data, "shuffle_partitions")
    if partitions:
        config[KNOB_FIELDS["shuffle_partitions"]] = str(_knob_field("shuffle_partitions",
                                                                    partitions))
    adaptive = (_knob_text(data, "adaptive") or "default").lower()
    if adaptive not in AQE_CHOICES:
        raise InvalidField("adaptive", f"must be one of {', '.join(AQE_CHOICES)}; "
                                       f"got {adaptive[:40]!r}")
    if adaptive != "default":
        config[KNOB_FIELDS["adaptive"]] = knobs.format_value(
            KNOB_FIELDS["adaptive"], _knob_field("adaptive", adaptive))
    threshold = _knob_text(data, "broadcast_threshold")
    if threshold:
        config[KNOB_FIELDS["broadcast_threshold"]] = str(_knob_field("broadcast_threshold",
                                                                     threshold))
    return config


def _knob_field(field_name: str, text: str):
    """The typed value of a form field that sets a knob, validated by the knob table."""
    try:
        return knobs.validate(KNOB_FIELDS[field_name], text)
    except UsageError as exc:
        raise InvalidField(field_name, str(exc)) from None


def _instance_types(data: dict, catalog_names, strict: bool) -> list[str]:
    value = data.get("instance_types")
    if value is None or value == "" or value == []:
        return ["local[2]"]
    if isinstance(value, str) and not strict:
        names = [n.strip() for n in value.split(",") if n.strip()]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        names = [_unicode("instance_types", v).strip() for v in value if v.strip()]
    else:
        raise InvalidField("instance_types", "must be a list of instance type names")
    if not names:
        return ["local[2]"]
    if len(names) > MAX_INSTANCE_TYPES:
        raise InvalidField("instance_types", f"at most {MAX_INSTANCE_TYPES} at once; "
                                             f"got {len(names)}")
    for name in names:
        if name not in catalog_names:
            raise InvalidField("instance_types", f"include an unknown type {name[:60]!r}; "
                                                 "choose from the list (local[1], local[2] "
                                                 "or a catalog type such as m5.xlarge)")
    return list(dict.fromkeys(names))


def _refuse_sizes(data: dict, fields: set, workload: str, takes: str) -> None:
    """The JSON API refuses a size field its workload is not sized by (a TPC-H query's
    ``size`` was ignored and the question answered at SF 1; a HiBench job's ``scale`` at
    ``large``); the web form sends both of its fields and takes the one that applies."""
    wrong = {name for name in fields if data.get(name) not in (None, "")}
    if wrong:
        raise InvalidField(min(wrong), f"does not size {workload[:60]!r}; it takes {takes}")


def parse_estimate(data, *, known_workloads, catalog_names, max_query_chars=100_000,
                   strict=False, allowed=ESTIMATE_FIELDS) -> EstimateRequest:
    """Turn form fields or a JSON object into an :class:`EstimateRequest`.

    Fields: ``workload`` (``tpch-q3``, a HiBench name, a job key of the store, or
    ``sql``), ``query``
    (TPC-H query number 1..22), ``sql`` (a pasted query; it wins over a picked
    workload), ``scale`` (TPC-H scale factor, default 1), ``size`` (HiBench
    size label, default ``large``), ``input_gb`` (input data in GB; optional, but
    needed for a job of the store, which has no size label),
    ``instance_types`` (list, default ``local[2]``), ``nodes_min``/``nodes_max``
    (node counts of cloud types, default 1..8), ``deadline_s``,
    ``budget_usd``, the knobs ``shuffle_partitions``, ``adaptive``
    (default/true/false, or a JSON boolean), ``broadcast_threshold`` (bytes,
    ``10m``, or -1), and ``config`` (an object of any other ``spark.*`` settings).
    ``strict`` (the JSON API) rejects fields it does not know.
    """
    if not isinstance(data, dict):
        raise InvalidField("body", "must be a JSON object")
    if strict:
        _unknown_fields(data, allowed)
    workload, label, sql, pasted = _workload(data, known_workloads, max_query_chars,
                                             sql_wins=not strict)
    scale = size = None
    input_gb = _number(data, "input_gb", minimum=0, strictly=True, maximum=1e7, unit="GB")
    if not pasted and _own_job(workload):
        # the user's own job has no size label: it is asked by the bytes it reads
        if strict:
            _refuse_sizes(data, {"scale", "size"}, workload, "input_gb (the input it reads, in GB)")
        if input_gb is None:
            raise InvalidField("input_gb", f"is needed for your own job {workload[:60]!r}: "
                                           "give the input size it reads, in GB")
        datasize = ""
    elif workload.startswith("tpch-") or pasted:
        if strict:
            _refuse_sizes(data, {"size"}, workload, "scale (the TPC-H scale factor)")
        scale = _number(data, "scale", minimum=0, strictly=True, maximum=MAX_SCALE,
                        unit="the TPC-H scale factor", default=1.0)
        datasize = scale_label(scale, most=None)
    else:
        if strict:
            _refuse_sizes(data, {"scale"}, workload, f"size ({', '.join(HIBENCH_SIZES)})")
        size = (_text(data, "size") or ("" if input_gb is not None else DEFAULT_SIZE)).lower()
        if size and size not in HIBENCH_SIZES:
            raise InvalidField("size", f"must be one of {', '.join(HIBENCH_SIZES)}; "
                                       f"got {size[:40]!r}")
        datasize = size   # none with input_gb alone: the question is its input size
    nodes_min = _number(data, "nodes_min", minimum=1, maximum=MAX_NODES, integer=True, default=1)
    nodes_max = _number(data, "nodes_max", minimum=1, maximum=MAX_NODES, integer=True, default=8)
    if nodes_min > nodes_max:
        raise InvalidField("nodes_max", f"must be at least the smallest node count "
                                        f"({nodes_min}); got {nodes_max}")
    return EstimateRequest(
        workload=workload, label=label, datasize=datasize, scale=scale,
        input_bytes=None if input_gb is None else input_gb * 1e9,
        instance_types=_instance_types(data, catalog_names, strict),
        nodes_min=nodes_min, nodes_max=nodes_max,
        deadline_s=_number(data, "deadline_s", minimum=0, strictly=True, unit="seconds"),
        budget_usd=_number(data, "budget_usd", minimum=0, strictly=True, unit="US dollars"),
        config=_config(data), sql=sql, pasted=pasted, include_dag=_bool(data, "include_dag"),
        explain=_bool(data, "explain"))


def parse_tune(data, **kwargs) -> tuple[EstimateRequest, int | None, int]:
    """An estimate request plus ``trials`` (1..500) and ``seed``."""
    request = parse_estimate(data, allowed=TUNE_FIELDS, **kwargs)
    trials = _number(data, "trials", minimum=1, maximum=500, integer=True)
    seed = _number(data, "seed", minimum=0, maximum=2 ** 31 - 1, integer=True, default=0)
    return request, trials, seed


# ---------------------------------------------------------------- runs
RUN_FIELDS = ("source", "workload", "framework", "datasize", "input_bytes", "instance_type",
              "instance_count", "vcpus", "memory_gib", "hourly_price_usd", "config_json",
              "runtime_s", "completed", "run_id")
RUN_FILTERS = ("source", "workload", "framework", "datasize", "instance_type", "status")
# What a measured run can physically be: (smallest, largest) per column; a value outside
# is a typo or an attack on the training data (runtime_s 1e308), never a measurement.
RUN_LIMITS = {"runtime_s": (0.0, 30 * 24 * 3600.0), "instance_count": (1, 10_000),
              "vcpus": (1e-9, 1024.0), "memory_gib": (1e-9, 65_536.0),
              "input_bytes": (0.0, 1e17), "hourly_price_usd": (0.0, 1000.0)}
MAX_JSON_DEPTH = 32


def json_depth(value) -> int:
    """How deeply a parsed JSON value nests objects and arrays (iterative: no recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def load_json(text, name: str = "body", limit: int = MAX_JSON_DEPTH):
    """JSON text (str or bytes) parsed, refused as InvalidField when it is not JSON or
    nests deeper than ``limit`` (Python's parser raises RecursionError at ~1,000 levels)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise InvalidField(name, f"is nested more than {limit} levels deep") from None
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        raise InvalidField(name, "is not valid JSON") from None
    if json_depth(value) > limit:
        raise InvalidField(name, f"is nested more than {limit} levels deep")
    return value


def parse_run(data) -> dict:
    """One run in the run-table schema (JSON values or strings), validated by
    :func:`jobgauge.runtable.parse_row`; ``config`` may stand for ``config_json``."""
    from jobgauge.errors import ParseError
    from jobgauge.runtable import parse_row

    if not isinstance(data, dict):
        raise InvalidField("body", "must be a JSON object with the run-table fields")
    data = dict(data)
    if "config" in data:
        if "config_json" in data:
            raise InvalidField("config", "give config or config_json, not both")
        data["config_json"] = data.pop("config")
    _unknown_fields(data, RUN_FIELDS)
    raw = {}
    for name, value in data.items():
        if value is None:
            raw[name] = ""
        elif name == "config_json":
            if isinstance(value, dict):
                raw[name] = json.dumps(value)
            elif isinstance(value, str):
                _unicode(name, value)
                try:  # refuse deep nesting here; other faults are parse_row's to name
                    load_json(value.strip() or "{}", name)
                except InvalidField as exc:
                    if "nested" in exc.message:
                        raise
                raw[name] = value
            else:
                raise InvalidField(name, "must be an object of settings (or its JSON text)")
        elif isinstance(value, bool):
            raw[name] = "true" if value else "false"
        elif isinstance(value, (int, float, str)):
            if isinstance(value, float) and not math.isfinite(value):
                raise InvalidField(name, "must be a finite number")
            if isinstance(value, int) and abs(value) >= 10 ** 30:  # str() of a huge int is slow
                raise InvalidField(name, "is out of range")
            raw[name] = _unicode(name, value) if isinstance(value, str) else str(value)
        else:
            raise InvalidField(name, f"must be a string or number; got {type(value).__name__}")
    try:
        row = parse_row(raw)
    except ParseError as exc:
        raise InvalidField(str(exc.column or "body"), exc.reason + (
            f" (expected {exc.expected})" if exc.expected else "")) from None
    for name in ("source", "workload", "framework", "instance_type", "run_id", "datasize"):
        if len(row[name]) > 200:
            raise InvalidField(name, "is longer than 200 characters")
    # JSON escapes can spell a lone surrogate ("\\ud800") that no store can hold
    _unicode("config_json", json.dumps(row["config"], ensure_ascii=False))
    for name, (low, high) in RUN_LIMITS.items():
        value = row.get(name)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        if not low <= value <= high:
            raise InvalidField(name, f"must be from {low:g} to {high:g}; got {value:g}")
    return row


def parse_run_query(args) -> dict:
    """Paging (``limit`` 1..500, default 50; ``offset``) and equality filters of GET /runs."""
    _unknown_fields(args, ("limit", "offset") + RUN_FILTERS)
    out = {"limit": _number(args, "limit", minimum=1, maximum=500, integer=True, default=50),
           "offset": _number(args, "offset", minimum=0, maximum=10 ** 9, integer=True, default=0)}
    filters = {}
    for name in RUN_FILTERS:
        value = _text(args, name)
        if value:
            filters[name] = value[:200]
    out["filters"] = filters
    return out
