"""Hadoop MapReduce job records → :class:`~jobgauge.profiler.readers.profile.Profile`.

Four inputs, told apart by their content (not their file name):

========================  ===================  ==========================================
input                     ``Profile.format``   what it gives
========================  ===================  ==========================================
``.jhist`` (Avro-Json)    ``mapreduce-jhist``  job, task and attempt events with counters
job conf XML              ``mapreduce-conf``   the job's configuration, name, id and user
counter dump              ``mapreduce-counters``  counter groups of a job or one task
MR1 (pre-YARN) history    ``mapreduce-mr1``    job/task/attempt records, then the conf
========================  ===================  ==========================================

``read_mapreduce(path)`` sniffs the file and calls the matching reader
(``read_jhist``, ``read_job_conf``, ``read_counters``, ``read_mr1_history``).
A file that is none of these, is binary, or breaks the format raises one
:class:`~jobgauge.errors.ParseError` naming the file, the line and what was
expected.  A profile is never returned empty: a file without any job event,
property or counter is an error too.

Counters map to the shared names of ``TOTAL_METRICS``::

    input_bytes           FileInputFormat BYTES_READ, else the maps' HDFS_BYTES_READ
    input_records         MAP_INPUT_RECORDS
    output_bytes          FileOutputFormat BYTES_WRITTEN, else HDFS_BYTES_WRITTEN
    output_records        REDUCE_OUTPUT_RECORDS (MAP_OUTPUT_RECORDS for map-only jobs)
    shuffle_write_bytes   MAP_OUTPUT_MATERIALIZED_BYTES
    shuffle_read_bytes    REDUCE_SHUFFLE_BYTES
    shuffle_read_records  REDUCE_INPUT_RECORDS
    spilled_records       SPILLED_RECORDS
    executor_cpu_time_ms  CPU_MILLISECONDS
    jvm_gc_time_ms        GC_TIME_MILLIS
    map_time_ms           MILLIS_MAPS, else the sum of map attempt durations
    reduce_time_ms        MILLIS_REDUCES, else the sum of reduce attempt durations
    executor_run_time_ms  map_time_ms + reduce_time_ms
    map_tasks             map tasks started (TaskStarted / Task records), else TOTAL_LAUNCHED_MAPS
    reduce_tasks          reduce tasks started, else TOTAL_LAUNCHED_REDUCES

A MapReduce job is one job with up to two stages, ``map`` (id 0) and
``reduce`` (id 1, parent 0); setup and cleanup tasks are not counted.  The
raw counters stay in ``jobs[0]["counters"]`` (group → name → value), and
anything a reader had to skip (records cut off in a truncated MR1 log) is
listed in ``jobs[0]["warnings"]``.

Example::

    >>> p = read_mapreduce("job_1416424547277_0002-...-TeraGen-...-2-0-SUCCEEDED-....jhist")
    >>> p.status, p.n_tasks, p.totals["map_tasks"], p.totals["output_bytes"]
    ('succeeded', 2, 2, 10000)
"""

from __future__ import annotations

import html
import json
import re
import xml.parsers.expat
from pathlib import Path
from typing import Any

from jobgauge.profiler.readers.profile import TOTAL_METRICS, Profile

from jobgauge.errors import ParseError

__all__ = [
    "FORMATS",
    "mapreduce_kind",
    "parse_counter_dump",
    "profile_from_counters",
    "read_counters",
    "read_jhist",
    "read_job_conf",
    "read_mapreduce",
    "read_mr1_history",
    "sniff_mapreduce",
]

FORMATS = ("mapreduce-jhist", "mapreduce-conf", "mapreduce-counters", "mapreduce-mr1")

_EXPECTED_ANY = ("a MapReduce job history (.jhist, first line 'Avro-Json'), a job conf XML "
                 "(<configuration>), a counter dump (GROUP={NAME=value, ...}) or an MR1 "
                 "job history ('Meta VERSION=' / 'Job JOBID=' / '!!FILE=')")

# Counter groups under every name Hadoop has used for them, by what they count.
_GROUP_KINDS = {
    "org.apache.hadoop.mapreduce.FileSystemCounter": "fs",
    "FileSystemCounters": "fs",
    "org.apache.hadoop.mapreduce.TaskCounter": "task",
    "org.apache.hadoop.mapred.Task$Counter": "task",
    "org.apache.hadoop.mapreduce.JobCounter": "job",
    "org.apache.hadoop.mapred.JobInProgress$Counter": "job",
    "org.apache.hadoop.mapreduce.lib.input.FileInputFormatCounter": "input",
    "org.apache.hadoop.mapreduce.lib.input.FileInputFormat$Counter": "input",
    "org.apache.hadoop.mapred.FileInputFormat$Counter": "input",
    "org.apache.hadoop.mapreduce.lib.output.FileOutputFormatCounter": "output",
    "org.apache.hadoop.mapreduce.lib.output.FileOutputFormat$Counter": "output",
    "org.apache.hadoop.mapred.FileOutputFormat$Counter": "output",
}

Counters = dict[str, dict[str, int]]          # group name → counter name → value


# ---------------------------------------------------------------- file access


def _read_text(path: Path) -> str:
    """The file as text, or a ParseError saying why it is not a text file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ParseError("no such file", path=path) from None
    except IsADirectoryError:
        raise ParseError("is a directory, not a file", path=path) from None
    except OSError as exc:
        raise ParseError(f"cannot read the file: {exc.strerror or exc}", path=path) from None
    if not data.strip():
        raise ParseError("the file is empty", path=path, line=1, expected=_EXPECTED_ANY)
    if data.startswith(b"Obj\x01"):
        raise ParseError("binary Avro job history is not supported", path=path, line=1,
                         expected="the Avro-Json text form (mapreduce.jobhistory.jhist.format=json)")
    if data.startswith(b"\x1f\x8b"):
        raise ParseError("gzip-compressed file; decompress it first", path=path, line=1,
                         expected=_EXPECTED_ANY)
    nul = data.find(b"\x00")
    if nul >= 0:
        raise ParseError("binary data (NUL byte)", path=path, line=data.count(b"\n", 0, nul) + 1,
                         expected=_EXPECTED_ANY)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ParseError("not UTF-8 text (binary or corrupt)", path=path, line=line,
                         expected=_EXPECTED_ANY,
                         snippet=data[max(0, exc.start - 20):exc.start + 20].decode("utf-8", "replace")) from None


def _lines(text: str) -> list[str]:
    return [line.removesuffix("\r") for line in text.split("\n")]


def sniff_mapreduce(path) -> str:
    """Which of ``FORMATS`` the file holds, judged by its content."""
    path = Path(path)
    return _sniff_text(_read_text(path), path)


def mapreduce_kind(path) -> str | None:
    """:func:`sniff_mapreduce` of ``path``, or None where it is not a MapReduce job file
    (or cannot be read as text)."""
    try:
        return sniff_mapreduce(path)
    except (ParseError, OSError, UnicodeError):
        return None


def _sniff_text(text: str, path: Path) -> str:
    first_index, first = next(((i, line.strip()) for i, line in enumerate(_lines(text)) if line.strip()),
                              (0, ""))
    first = first.lstrip("\ufeff")
    if first == "Avro-Json":
        return "mapreduce-jhist"
    if first.startswith(("<?xml", "<configuration")):
        return "mapreduce-conf"
    if first.startswith(("!!FILE=", "Meta VERSION=", "Job JOBID=")):
        return "mapreduce-mr1"
    if _COUNTER_LINE.match(first) or first.startswith("#"):
        return "mapreduce-counters"
    raise ParseError("not a MapReduce job file", path=path, line=first_index + 1,
                     expected=_EXPECTED_ANY, snippet=first)


def read_mapreduce(path, *, conf_path=None) -> Profile:
    """Read any MapReduce job file into a Profile (see the module docstring).

    ``conf_path`` (only for a ``.jhist``) adds that job conf XML's settings to
    ``Profile.config``.
    """
    path = Path(path)
    text = _read_text(path)
    kind = _sniff_text(text, path)
    if conf_path is not None and kind != "mapreduce-jhist":
        raise ParseError("conf_path only goes with a .jhist job history", path=path)
    if kind == "mapreduce-jhist":
        return _jhist_from_text(text, path, conf_path)
    if kind == "mapreduce-conf":
        return _conf_from_text(text, path)
    if kind == "mapreduce-mr1":
        return _mr1_from_text(text, path)
    return _counters_from_text(text, path)


def read_jhist(path, *, conf_path=None) -> Profile:
    """A YARN-era ``.jhist`` (Avro-Json) job history → Profile(format="mapreduce-jhist")."""
    path = Path(path)
    return _jhist_from_text(_read_text(path), path, conf_path)


def read_job_conf(path) -> Profile:
    """A job configuration XML (``job_..._conf.xml``) → Profile(format="mapreduce-conf")."""
    path = Path(path)
    return _conf_from_text(_read_text(path), path)


def read_counters(path) -> Profile:
    """A counter dump (``GROUP={NAME=value, ...}`` per line) → Profile(format="mapreduce-counters")."""
    path = Path(path)
    return _counters_from_text(_read_text(path), path)


def read_mr1_history(path) -> Profile:
    """A pre-YARN (MR1, Hadoop 0.20/1.x) job history → Profile(format="mapreduce-mr1")."""
    path = Path(path)
    return _mr1_from_text(_read_text(path), path)


# ---------------------------------------------------------------- counters → totals


def _flat_counters(groups: Counters) -> dict[tuple[str, str], int]:
    """(kind, counter name) → value, where kind is the group's meaning or its name."""
    flat: dict[tuple[str, str], int] = {}
    for group, counts in groups.items():
        kind = _GROUP_KINDS.get(group, group)
        for name, value in counts.items():
            flat[(kind, name)] = flat.get((kind, name), 0) + value
    return flat


def _add_counters(into: Counters, more: Counters) -> None:
    for group, counts in more.items():
        target = into.setdefault(group, {})
        for name, value in counts.items():
            target[name] = target.get(name, 0) + value


def _metrics(groups: Counters, *, map_side: Counters | None = None,
             reduce_tasks: int | None = None) -> dict[str, int | None]:
    """The shared metrics one set of counters says (None where it does not)."""
    flat = _flat_counters(groups)
    map_flat = _flat_counters(map_side) if map_side else None

    def get(kind, name):
        return flat.get((kind, name))

    out: dict[str, int | None] = {}
    input_bytes = get("input", "BYTES_READ")
    if input_bytes is None:
        source = map_flat if map_flat is not None else flat
        input_bytes = source.get(("fs", "HDFS_BYTES_READ"))
    out["input_bytes"] = input_bytes
    out["input_records"] = get("task", "MAP_INPUT_RECORDS")
    output_bytes = get("output", "BYTES_WRITTEN")
    out["output_bytes"] = output_bytes if output_bytes is not None else get("fs", "HDFS_BYTES_WRITTEN")
    if reduce_tasks == 0:
        out["output_records"] = get("task", "MAP_OUTPUT_RECORDS")
    else:
        out["output_records"] = get("task", "REDUCE_OUTPUT_RECORDS")
    out["shuffle_write_bytes"] = get("task", "MAP_OUTPUT_MATERIALIZED_BYTES")
    out["shuffle_read_bytes"] = get("task", "REDUCE_SHUFFLE_BYTES")
    out["shuffle_read_records"] = get("task", "REDUCE_INPUT_RECORDS")
    out["spilled_records"] = get("task", "SPILLED_RECORDS")
    out["executor_cpu_time_ms"] = get("task", "CPU_MILLISECONDS")
    out["jvm_gc_time_ms"] = get("task", "GC_TIME_MILLIS")
    out["map_time_ms"] = get("job", "MILLIS_MAPS")
    out["reduce_time_ms"] = get("job", "MILLIS_REDUCES")
    out["map_tasks"] = get("job", "TOTAL_LAUNCHED_MAPS")
    out["reduce_tasks"] = get("job", "TOTAL_LAUNCHED_REDUCES")
    return out


def _finish_totals(metrics: dict[str, int | None]) -> dict[str, float | None]:
    totals: dict[str, float | None] = {name: None for name in TOTAL_METRICS}
    totals.update({k: v for k, v in metrics.items() if k in totals})
    if totals["reduce_tasks"] == 0 and totals["reduce_time_ms"] is None:
        totals["reduce_time_ms"] = 0
    if totals["map_time_ms"] is not None and totals["reduce_time_ms"] is not None:
        totals["executor_run_time_ms"] = totals["map_time_ms"] + totals["reduce_time_ms"]
    return totals


def _stages(task_counts: dict[str, dict[str, Any]], stage_metrics: dict[str, dict]) -> list[dict]:
    """``map`` (0) and ``reduce`` (1, parent 0) for the task types present."""
    stages = []
    for stage_id, name in enumerate(("map", "reduce")):
        info = task_counts.get(name)
        if not info or not info.get("n_tasks"):
            continue
        parents = [0] if name == "reduce" and task_counts.get("map", {}).get("n_tasks") else []
        stage = {"stage_id": stage_id, "name": name, "parent_ids": parents}
        stage.update(info)
        if stage.get("start_ms") is not None and stage.get("end_ms") is not None:
            stage["duration_s"] = (stage["end_ms"] - stage["start_ms"]) / 1000.0
        else:
            stage["duration_s"] = None
        stage.update(stage_metrics.get(name, {}))
        stages.append(stage)
    return stages


_STAGE_METRICS = {
    "map": ("input_bytes", "input_records", "shuffle_write_bytes", "spilled_records",
            "executor_cpu_time_ms", "jvm_gc_time_ms"),
    "reduce": ("shuffle_read_bytes", "shuffle_read_records", "output_bytes", "output_records",
               "spilled_records", "executor_cpu_time_ms", "jvm_gc_time_ms"),
}


def _stage_metrics(name: str, groups: Counters | None, *, map_only: bool = False) -> dict:
    """The metrics of one stage's counters that belong to that stage."""
    if not groups:
        return {}
    metrics = _metrics(groups, reduce_tasks=0 if map_only else None)
    keys = _STAGE_METRICS[name] + (("output_bytes", "output_records") if map_only else ())
    return {key: metrics[key] for key in keys}


def profile_from_counters(groups: Counters, *, format: str = "mapreduce-counters",
                          source: str | None = None, map_tasks: int | None = None,
                          reduce_tasks: int | None = None, **fields) -> Profile:
    """A Profile from one job's counters plus what else is known of the job.

    ``map_tasks``/``reduce_tasks`` fill the task counts when the counters have
    no JobCounter group (Hadoop's local job runner writes none); other keyword
    arguments (``app_id``, ``status``, ``start_ms``, ...) go to the Profile.
    """
    if not groups:
        raise ParseError("no counters", path=source)
    flat = _flat_counters(groups)
    if any(kind == "job" for kind, _ in flat):
        # A JobCounter group lists only counters that moved: no TOTAL_LAUNCHED_REDUCES
        # means no reduce task was launched.
        if map_tasks is None:
            map_tasks = flat.get(("job", "TOTAL_LAUNCHED_MAPS"), 0)
        if reduce_tasks is None:
            reduce_tasks = flat.get(("job", "TOTAL_LAUNCHED_REDUCES"), 0)
    metrics = _metrics(groups, reduce_tasks=reduce_tasks)
    metrics["map_tasks"] = map_tasks
    metrics["reduce_tasks"] = reduce_tasks
    totals = _finish_totals(metrics)
    counts = {"map": {"n_tasks": totals["map_tasks"]}, "reduce": {"n_tasks": totals["reduce_tasks"]}}
    stages = _stages(counts, {})
    known = totals["map_tasks"] is not None or totals["reduce_tasks"] is not None
    n_tasks = ((totals["map_tasks"] or 0) + (totals["reduce_tasks"] or 0)) if known else None
    job = {"job_id": fields.get("app_id"), "name": fields.get("app_name"),
           "status": fields.get("status"), "counters": groups, "warnings": []}
    return Profile(format=format, engine="hadoop", n_jobs=1 if known else None,
                   n_stages=len(stages) if known else None, n_tasks=n_tasks, totals=totals,
                   jobs=[job], stages=stages, source=source, **fields)


# ---------------------------------------------------------------- counter dumps

_COUNTER_LINE = re.compile(r"^([^={}\s][^={}]*)=\{(.*)\}\s*$")
_COUNTER_ITEM = re.compile(r"^\s*([^=,\s][^=,]*?)\s*=\s*(-?\d+)\s*$")


def _group_name(raw: str) -> str:
    return html.unescape(raw).replace("\xa0", " ").strip()


def parse_counter_dump(text: str, *, path=None) -> Counters:
    """``GROUP={NAME=value, ...}`` lines → {group: {name: value}}.

    Group names may be HTML-escaped (``Shuffle&nbsp;Errors``); lines starting
    with ``#`` or ``!`` are comments, as in Java properties files.
    """
    groups: Counters = {}
    for number, raw in enumerate(_lines(text), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        match = _COUNTER_LINE.match(line)
        if not match:
            raise ParseError("not a counter group line", path=path, line=number,
                             expected="GROUP={NAME=value, ...}", snippet=line)
        group = _group_name(match.group(1))
        counts = groups.setdefault(group, {})
        body = match.group(2).strip()
        if not body:
            continue
        column = match.start(2) + 1
        for item in body.split(","):
            item_match = _COUNTER_ITEM.match(item)
            if not item_match:
                raise ParseError(f"bad counter in group {group!r}", path=path, line=number,
                                 column=column, expected="NAME=integer", snippet=item.strip())
            counts[_group_name(item_match.group(1))] = int(item_match.group(2))
            column += len(item) + 1
    if not groups:
        raise ParseError("no counter groups in the file", path=path, line=1,
                         expected="GROUP={NAME=value, ...}")
    return groups


def _counters_from_text(text: str, path: Path) -> Profile:
    groups = parse_counter_dump(text, path=path)
    if not any(groups.values()):
        raise ParseError("every counter group is empty", path=path, line=1,
                         expected="GROUP={NAME=value, ...} with at least one counter")
    return profile_from_counters(groups, format="mapreduce-counters", source=str(path))


# ---------------------------------------------------------------- job conf XML


def _parse_conf_xml(text: str, path: Path, first_line: int = 1) -> dict[str, str]:
    """name → value of every <property>; both the comment and <source> styles."""
    config: dict[str, str] = {}
    state: dict[str, Any] = {"stack": [], "prop": None, "text": []}
    parser = xml.parsers.expat.ParserCreate()

    def where() -> int:
        return parser.CurrentLineNumber + first_line - 1

    def fail(message, expected, snippet=None):
        raise ParseError(message, path=path, line=where(), column=parser.CurrentColumnNumber + 1,
                         expected=expected, snippet=snippet)

    def start(name, attrs):
        stack = state["stack"]
        if not stack and name != "configuration":
            fail(f"root element is <{name}>", "<configuration>")
        if name == "property":
            if state["prop"] is not None:
                fail("<property> inside <property>", "</property>")
            state["prop"] = {"line": where()}
        elif name in ("name", "value", "final", "source", "description"):
            state["text"] = []
        stack.append(name)

    def end(name):
        stack = state["stack"]
        stack.pop()
        prop = state["prop"]
        if prop is not None and name in ("name", "value") and stack and stack[-1] == "property":
            prop[name] = "".join(state["text"])
        if name == "property" and prop is not None:
            if not prop.get("name", "").strip():
                raise ParseError("<property> without a <name>", path=path, line=prop["line"],
                                 expected="<name>...</name>")
            config[prop["name"].strip()] = prop.get("value", "")
            state["prop"] = None

    def chars(data):
        state["text"].append(data)

    def doctype(*_args):
        fail("DOCTYPE declarations are not allowed in a job conf", "<configuration>")

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    parser.StartDoctypeDeclHandler = doctype
    try:
        parser.Parse(text, True)
    except xml.parsers.expat.ExpatError as exc:
        line_text = _lines(text)[exc.lineno - 1] if 0 < exc.lineno <= len(_lines(text)) else ""
        raise ParseError(f"XML error: {xml.parsers.expat.ErrorString(exc.code)}", path=path,
                         line=exc.lineno + first_line - 1, column=exc.offset + 1,
                         expected="well-formed <configuration> XML",
                         snippet=line_text[max(0, exc.offset - 30):exc.offset + 30]) from None
    if not config:
        raise ParseError("no <property> elements", path=path, line=first_line,
                         expected="<configuration><property><name>..</name><value>..</value></property>")
    return config


_JOB_ID = re.compile(r"job_\d+_\d+")


def _job_identity(config: dict[str, str], path: Path | None) -> dict[str, str | None]:
    name = config.get("mapreduce.job.name") or config.get("mapred.job.name")
    user = config.get("mapreduce.job.user.name") or config.get("user.name")
    job_id = config.get("mapreduce.job.id") or config.get("mapred.job.id")
    if not job_id:
        for key in ("mapreduce.job.dir", "mapreduce.job.submithostname.jobdir"):
            found = _JOB_ID.search(config.get(key, ""))
            if found:
                job_id = found.group(0)
                break
    if not job_id and path is not None:
        found = re.match(r"(job_\d+_\d+)_conf\.xml$", path.name)
        job_id = found.group(1) if found else None
    return {"app_id": job_id, "app_name": name, "user": user}


def _conf_from_text(text: str, path: Path) -> Profile:
    config = _parse_conf_xml(text, path)
    return Profile(format="mapreduce-conf", engine="hadoop", config=config, source=str(path),
                   **_job_identity(config, path))


# ---------------------------------------------------------------- .jhist (Avro-Json)

_TERMINAL_JOB = {"SUCCEEDED": "succeeded", "FAILED": "failed", "KILLED": "killed", "ERROR": "failed"}


class _Event:
    """One jhist event with typed field access that fails as a ParseError."""

    __slots__ = ("body", "kind", "line", "path", "text")

    def __init__(self, kind, body, path, line, text):
        self.kind, self.body, self.path, self.line, self.text = kind, body, path, line, text

    def _fail(self, key, expected):
        raise ParseError(f"field {key!r} of {self.kind} is {self.body.get(key)!r}", path=self.path,
                         line=self.line, expected=expected, snippet=self.text)

    def value(self, key):
        value = self.body.get(key)
        if isinstance(value, dict) and len(value) == 1:       # Avro union: {"string": ...}
            (union_type, inner), = value.items()
            if union_type in ("string", "long", "int", "boolean") or union_type.endswith("JhCounters"):
                return inner
        return value

    def int(self, key, required=False):
        value = self.value(key)
        if value is None and not required:
            return None
        if not isinstance(value, int) or isinstance(value, bool):
            self._fail(key, "an integer")
        return value

    def str(self, key, required=False):
        value = self.value(key)
        if value is None and not required:
            return None
        if not isinstance(value, str):
            self._fail(key, "a string")
        return value

    def counters(self, key) -> Counters | None:
        value = self.value(key)
        if value is None:
            return None
        if not isinstance(value, dict) or not isinstance(value.get("groups"), list):
            self._fail(key, "JhCounters {name, groups: [...]}")
        groups: Counters = {}
        for group in value["groups"]:
            if not isinstance(group, dict) or not isinstance(group.get("name"), str) \
                    or not isinstance(group.get("counts"), list):
                self._fail(key, "counter groups {name, counts: [...]}")
            counts = groups.setdefault(_group_name(group["name"]), {})
            for count in group["counts"]:
                if not isinstance(count, dict) or not isinstance(count.get("name"), str) \
                        or not isinstance(count.get("value"), int) or isinstance(count.get("value"), bool):
                    self._fail(key, "counters {name, value: integer}")
                counts[count["name"]] = counts.get(count["name"], 0) + count["value"]
        return groups


def _jhist_events(text: str, path: Path):
    lines = _lines(text)
    if lines[0].strip().lstrip("\ufeff") != "Avro-Json":
        raise ParseError("not an Avro-Json job history", path=path, line=1,
                         expected="'Avro-Json'", snippet=lines[0])
    if len(lines) < 2 or not lines[1].strip():
        raise ParseError("the Avro schema is missing", path=path, line=2,
                         expected="the Avro schema as one JSON line")
    try:
        schema = json.loads(lines[1])
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ParseError("the Avro schema is not JSON", path=path, line=2, column=getattr(exc, "colno", None),
                         expected="the Avro schema as one JSON line", snippet=lines[1][:80]) from None
    if not isinstance(schema, dict) or schema.get("name") != "Event":
        raise ParseError("the schema is not the job history Event record", path=path, line=2,
                         expected='{"type":"record","name":"Event",...}', snippet=lines[1][:80])
    for number, raw in enumerate(lines[2:], start=3):
        line = raw.strip()
        if not line:
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            cut = number == len(lines) or (number == len(lines) - 1 and not lines[-1].strip())
            reason = "event cut off (truncated file?)" if cut else "event is not valid JSON"
            raise ParseError(reason, path=path, line=number, column=getattr(exc, "colno", None),
                             expected="one JSON event per line", snippet=line[-60:]) from None
        if not isinstance(record, dict) or not isinstance(record.get("type"), str) \
                or not isinstance(record.get("event"), dict) or len(record["event"]) != 1:
            raise ParseError("event has the wrong shape", path=path, line=number,
                             expected='{"type": ..., "event": {"org.apache.hadoop.mapreduce.jobhistory.X": {...}}}',
                             snippet=line[:80])
        (class_name, body), = record["event"].items()
        if not isinstance(body, dict):
            raise ParseError("event body is not an object", path=path, line=number,
                             expected="a JSON object", snippet=line[:80])
        yield _Event(class_name.rsplit(".", 1)[-1], body, path, number, line[:80])


def _task_type(value: str | None) -> str | None:
    return {"MAP": "map", "REDUCE": "reduce"}.get((value or "").upper())


def _jhist_from_text(text: str, path: Path, conf_path=None) -> Profile:
    job: dict[str, Any] = {"job_id": None, "name": None, "user": None, "queue": None, "status": None,
                           "submit_ms": None, "launch_ms": None, "finish_ms": None,
                           "total_maps": None, "total_reduces": None, "finished_maps": None,
                           "finished_reduces": None, "failed_maps": None, "failed_reduces": None,
                           "uberized": None, "diagnostics": None, "counters": {}, "warnings": []}
    tasks: dict[str, dict[str, Any]] = {}       # task id → type, start, finish, status, counters
    attempts: dict[str, dict[str, Any]] = {}    # attempt id → type, start, finish, status
    job_counters = map_counters = reduce_counters = None
    n_events = 0
    last_line = 2

    def task(event, key="taskid"):
        task_id = event.str(key, required=True)
        kind = _task_type(event.str("taskType"))
        entry = tasks.setdefault(task_id, {"type": kind, "start_ms": None, "finish_ms": None,
                                           "status": None, "counters": None})
        if entry["type"] is None:
            entry["type"] = kind
        return entry

    def attempt(event):
        attempt_id = event.str("attemptId", required=True)
        return attempts.setdefault(attempt_id, {"type": _task_type(event.str("taskType")),
                                                "start_ms": None, "finish_ms": None, "status": None})

    for event in _jhist_events(text, path):
        n_events += 1
        last_line = event.line
        kind = event.kind
        if kind in ("JobSubmitted", "JobInited", "JobInfoChange", "JobFinished",
                    "JobUnsuccessfulCompletion", "JobStatusChanged", "JobPriorityChange",
                    "JobQueueChange"):
            job["job_id"] = event.str("jobid", required=True)
        if kind == "JobSubmitted":
            job["name"] = event.str("jobName")
            job["user"] = event.str("userName")
            job["queue"] = event.str("jobQueueName")
            job["submit_ms"] = event.int("submitTime")
        elif kind == "JobInited":
            job["launch_ms"] = event.int("launchTime")
            job["total_maps"] = event.int("totalMaps")
            job["total_reduces"] = event.int("totalReduces")
            uber = event.value("uberized")
            job["uberized"] = uber if isinstance(uber, bool) else None
        elif kind == "JobInfoChange":
            job["submit_ms"] = event.int("submitTime") or job["submit_ms"]
            job["launch_ms"] = event.int("launchTime") or job["launch_ms"]
        elif kind == "JobFinished":
            job["status"] = "succeeded"
            job["finish_ms"] = event.int("finishTime")
            for key, field in (("finished_maps", "finishedMaps"), ("finished_reduces", "finishedReduces"),
                               ("failed_maps", "failedMaps"), ("failed_reduces", "failedReduces")):
                job[key] = event.int(field)
            job_counters = event.counters("totalCounters")
            map_counters = event.counters("mapCounters")
            reduce_counters = event.counters("reduceCounters")
        elif kind == "JobUnsuccessfulCompletion":
            state = (event.str("jobStatus") or "FAILED").upper()
            job["status"] = _TERMINAL_JOB.get(state, "failed")
            job["finish_ms"] = event.int("finishTime")
            job["finished_maps"] = event.int("finishedMaps")
            job["finished_reduces"] = event.int("finishedReduces")
            job["diagnostics"] = event.str("diagnostics")
        elif kind == "TaskStarted":
            task(event)["start_ms"] = event.int("startTime")
        elif kind == "TaskFinished":
            entry = task(event)
            entry["finish_ms"] = event.int("finishTime")
            entry["status"] = "succeeded"
            entry["counters"] = event.counters("counters")
        elif kind == "TaskFailed":
            entry = task(event)
            entry["finish_ms"] = event.int("finishTime")
            entry["status"] = "killed" if (event.str("status") or "").upper() == "KILLED" else "failed"
        elif kind == "TaskAttemptStarted":
            attempt(event)["start_ms"] = event.int("startTime")
        elif kind in ("MapAttemptFinished", "ReduceAttemptFinished", "TaskAttemptFinished"):
            entry = attempt(event)
            entry["finish_ms"] = event.int("finishTime")
            entry["status"] = "succeeded"
        elif kind == "TaskAttemptUnsuccessfulCompletion":
            entry = attempt(event)
            entry["finish_ms"] = event.int("finishTime")
            entry["status"] = "killed" if (event.str("status") or "").upper() == "KILLED" else "failed"

    if n_events == 0:
        raise ParseError("no events after the schema", path=path, line=2,
                         expected="one JSON event per line")
    if job["job_id"] is None:
        raise ParseError("no job event (JobSubmitted, JobInited, ...) in the history", path=path,
                         line=last_line, expected="an event with a 'jobid'")
    if job["status"] is None:
        job["status"] = "running"
        job["warnings"].append("no JobFinished/JobFailed/JobKilled event: job still running or file cut short")

    config: dict[str, str] = {}
    if conf_path is not None:
        config = read_job_conf(conf_path).config

    # Task-level sums stand in for job totals when the job did not finish.
    by_type: dict[str, Counters] = {"map": {}, "reduce": {}}
    for entry in tasks.values():
        if entry["type"] in by_type and entry["counters"]:
            _add_counters(by_type[entry["type"]], entry["counters"])
    if job_counters is None:
        job_counters = {}
        _add_counters(job_counters, by_type["map"])
        _add_counters(job_counters, by_type["reduce"])
        map_counters = by_type["map"] or None
        reduce_counters = by_type["reduce"] or None
    job["counters"] = job_counters

    return _assemble(format="mapreduce-jhist", job=job, tasks=tasks, attempts=attempts,
                     job_counters=job_counters, map_counters=map_counters,
                     reduce_counters=reduce_counters, config=config, source=str(path),
                     engine_version=None)


def _assemble(*, format, job, tasks, attempts, job_counters, map_counters, reduce_counters,
              config, source, engine_version, map_side=None, map_side_given=False) -> Profile:
    """Profile of one MapReduce job from its task and attempt tables.

    ``map_counters``/``reduce_counters`` give the stages' metrics; ``map_side``
    (default: ``map_counters``) is the maps' share of ``job_counters``.
    """
    if not map_side_given:
        map_side = map_counters
    task_counts: dict[str, dict[str, Any]] = {}
    for name in ("map", "reduce"):
        typed = [t for t in tasks.values() if t["type"] == name]
        typed_attempts = [a for a in attempts.values() if a["type"] == name]
        if not typed:
            continue
        starts = [t["start_ms"] for t in typed if t["start_ms"] is not None]
        ends = [t["finish_ms"] for t in typed if t["finish_ms"] is not None]
        timed = [a["finish_ms"] - a["start_ms"] for a in typed_attempts
                 if a["start_ms"] is not None and a["finish_ms"] is not None]
        task_counts[name] = {
            "n_tasks": len(typed),
            "succeeded_tasks": sum(t["status"] == "succeeded" for t in typed),
            "failed_tasks": sum(t["status"] == "failed" for t in typed),
            "killed_tasks": sum(t["status"] == "killed" for t in typed),
            "attempts": len(typed_attempts),
            "failed_attempts": sum(a["status"] == "failed" for a in typed_attempts),
            "killed_attempts": sum(a["status"] == "killed" for a in typed_attempts),
            "start_ms": min(starts) if starts else None,
            "end_ms": max(ends) if ends else None,
            # no attempt at all took no time; attempts without both times say nothing
            "task_time_ms": sum(timed) if timed or not typed_attempts else None,
        }
    map_tasks = task_counts.get("map", {}).get("n_tasks", 0)
    reduce_tasks = task_counts.get("reduce", {}).get("n_tasks", 0)
    metrics = _metrics(job_counters, map_side=map_side, reduce_tasks=reduce_tasks) if job_counters \
        else {name: None for name in TOTAL_METRICS}
    metrics["map_tasks"] = map_tasks
    metrics["reduce_tasks"] = reduce_tasks
    for name in ("map", "reduce"):
        if metrics.get(f"{name}_time_ms") is None and name in task_counts:
            metrics[f"{name}_time_ms"] = task_counts[name]["task_time_ms"]
    totals = _finish_totals(metrics)
    stages = _stages(task_counts, {
        "map": _stage_metrics("map", map_counters, map_only=reduce_tasks == 0),
        "reduce": _stage_metrics("reduce", reduce_counters)})
    start_ms = job["submit_ms"] if job["submit_ms"] is not None else job["launch_ms"]
    end_ms = job["finish_ms"]
    runtime_s = (end_ms - start_ms) / 1000.0 if start_ms is not None and end_ms is not None else None
    return Profile(format=format, engine="hadoop", engine_version=engine_version,
                   app_id=job["job_id"], app_name=job["name"], user=job["user"],
                   status=job["status"], start_ms=start_ms, end_ms=end_ms, runtime_s=runtime_s,
                   n_jobs=1, n_stages=len(stages), n_tasks=map_tasks + reduce_tasks, totals=totals,
                   jobs=[job], stages=stages, config=config, source=source)


# ---------------------------------------------------------------- MR1 history

_MR1_PAIR = re.compile(r'([A-Z_]+)="((?:[^"\\]|\\.)*)"', re.DOTALL)
_MR1_TYPE = re.compile(r"^([A-Za-z]+)\s")
_MR1_QUOTE = re.compile(r'(?<!\\)(?:\\\\)*"')       # a quote not escaped by a backslash
_MR1_STATUS = {"SUCCESS": "succeeded", "FAILED": "failed", "KILLED": "killed"}


def _mr1_unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value, flags=re.DOTALL)


class _Malformed(Exception):
    pass


def _parse_mr1_counters(raw: str) -> Counters:
    """``{(group)(display)[(name)(display)(value)]...}...`` (escaped) → counters."""
    pos = 0
    groups: Counters = {}

    def expect(char):
        nonlocal pos
        if pos >= len(raw) or raw[pos] != char:
            raise _Malformed(f"expected {char!r} at {pos}")
        pos += 1

    def field() -> str:
        nonlocal pos
        expect("(")
        out = []
        while pos < len(raw) and raw[pos] != ")":
            if raw[pos] == "\\" and pos + 1 < len(raw):
                pos += 1
            out.append(raw[pos])
            pos += 1
        expect(")")
        return "".join(out)

    while pos < len(raw):
        expect("{")
        group = _group_name(field())
        field()                                     # display name
        counts = groups.setdefault(group, {})
        while pos < len(raw) and raw[pos] == "[":
            pos += 1
            name = field()
            field()
            value = field()
            expect("]")
            try:
                counts[name] = counts.get(name, 0) + int(value)
            except ValueError:
                raise _Malformed(f"counter {name} is {value!r}") from None
        expect("}")
    return groups


def _mr1_records(section: list[tuple[int, str]], warnings: list[str]):
    """(line, type, {key: raw value}) for each complete record of a job log."""
    buffer: list[str] = []
    start_line = 0
    quotes = 0
    for number, line in section:
        if not buffer:
            if not line.strip():
                continue
            start_line = number
            quotes = 0
        buffer.append(line)
        quotes += len(_MR1_QUOTE.findall(line))
        if quotes % 2 == 0 and line.rstrip().endswith("."):
            yield from _mr1_record(start_line, "\n".join(buffer), warnings)
            buffer = []
    if buffer:
        warnings.append(f"line {start_line}: record cut off at the end of the log")


def _mr1_record(line: int, text: str, warnings: list[str]):
    type_match = _MR1_TYPE.match(text)
    body = text.rstrip()[:-1]
    if not type_match:
        warnings.append(f"line {line}: unreadable record {text[:40]!r}")
        return
    pairs = {key: value for key, value in _MR1_PAIR.findall(body)}
    leftover = _MR1_PAIR.sub("", body[type_match.end():]).strip()
    if leftover:
        warnings.append(f"line {line}: record cut short ({leftover[:30]!r} has no value); skipped")
        return
    yield line, type_match.group(1), pairs


def _mr1_int(pairs, key, line, path):
    value = pairs.get(key)
    if value is None:
        return None
    try:
        return int(_mr1_unescape(value))
    except ValueError:
        raise ParseError(f"{key} is not a number", path=path, line=line, expected="an integer",
                         snippet=value[:40]) from None


def _mr1_from_text(text: str, path: Path) -> Profile:
    lines = list(enumerate(_lines(text), start=1))
    sections: list[tuple[str | None, list[tuple[int, str]]]] = []
    current: list[tuple[int, str]] = []
    name = None
    for number, line in lines:
        marker = line.strip()               # rumen puts a form feed before each marker
        if marker.startswith("!!FILE=") and marker.endswith("!!") and len(marker) > 9:
            if current or name is not None:
                sections.append((name, current))
            name, current = marker[7:-2], []
        else:
            current.append((number, line))
    sections.append((name, current))

    warnings: list[str] = []
    logs, confs = [], []
    for name, section in sections:
        first = next((line.strip() for _, line in section if line.strip()), "")
        if not first:
            continue
        (confs if first.startswith("<") else logs).append((name, section))
    if not logs:
        raise ParseError("no job log in the MR1 history", path=path, line=1,
                         expected="'Meta VERSION=' or 'Job JOBID=' records")
    if len(logs) > 1:
        warnings.append(f"{len(logs) - 1} more job log(s) in the file were not read")

    job: dict[str, Any] = {"job_id": None, "name": None, "user": None, "queue": None, "status": None,
                           "submit_ms": None, "launch_ms": None, "finish_ms": None,
                           "total_maps": None, "total_reduces": None, "finished_maps": None,
                           "finished_reduces": None, "failed_maps": None, "failed_reduces": None,
                           "history_version": None, "records_read": 0, "log_file": logs[0][0],
                           "counters": {}, "warnings": warnings}
    tasks: dict[str, dict[str, Any]] = {}
    attempts: dict[str, dict[str, Any]] = {}
    job_counters: Counters | None = None

    for line, kind, pairs in _mr1_records(logs[0][1], warnings):
        job["records_read"] += 1
        value = {k: _mr1_unescape(v) for k, v in pairs.items()}
        counters = None
        if "COUNTERS" in pairs:
            try:
                counters = _parse_mr1_counters(pairs["COUNTERS"])
            except _Malformed as exc:
                warnings.append(f"line {line}: unreadable COUNTERS ({exc}); ignored")
        if kind == "Meta":
            job["history_version"] = value.get("VERSION")
        elif kind == "Job":
            job["job_id"] = value.get("JOBID") or job["job_id"]
            job["name"] = value.get("JOBNAME", job["name"])
            job["user"] = value.get("USER", job["user"])
            job["queue"] = value.get("JOB_QUEUE", job["queue"])
            for key, field in (("submit_ms", "SUBMIT_TIME"), ("launch_ms", "LAUNCH_TIME"),
                               ("finish_ms", "FINISH_TIME"), ("total_maps", "TOTAL_MAPS"),
                               ("total_reduces", "TOTAL_REDUCES"), ("finished_maps", "FINISHED_MAPS"),
                               ("finished_reduces", "FINISHED_REDUCES"), ("failed_maps", "FAILED_MAPS"),
                               ("failed_reduces", "FAILED_REDUCES")):
                number = _mr1_int(pairs, field, line, path)
                if number is not None:
                    job[key] = number
            state = value.get("JOB_STATUS")
            if state in _MR1_STATUS:
                job["status"] = _MR1_STATUS[state]
            if counters is not None and "FINISH_TIME" in pairs:
                job_counters = counters
        elif kind == "Task":
            task_id = value.get("TASKID")
            if not task_id:
                warnings.append(f"line {line}: Task record without TASKID; skipped")
                continue
            entry = tasks.setdefault(task_id, {"type": None, "start_ms": None, "finish_ms": None,
                                               "status": None, "counters": None})
            entry["type"] = _task_type(value.get("TASK_TYPE")) or entry["type"]
            if value.get("TASK_TYPE") in ("SETUP", "CLEANUP"):
                entry["type"] = "other"
            if "START_TIME" in pairs:
                entry["start_ms"] = _mr1_int(pairs, "START_TIME", line, path)
            if "FINISH_TIME" in pairs:
                entry["finish_ms"] = _mr1_int(pairs, "FINISH_TIME", line, path)
                entry["status"] = _MR1_STATUS.get(value.get("TASK_STATUS", ""), "failed")
                entry["counters"] = counters
        elif kind in ("MapAttempt", "ReduceAttempt"):
            attempt_id = value.get("TASK_ATTEMPT_ID")
            if not attempt_id:
                warnings.append(f"line {line}: {kind} record without TASK_ATTEMPT_ID; skipped")
                continue
            entry = attempts.setdefault(attempt_id, {"type": None, "start_ms": None,
                                                     "finish_ms": None, "status": None})
            entry["type"] = _task_type(value.get("TASK_TYPE")) or entry["type"]
            if "START_TIME" in pairs:
                entry["start_ms"] = _mr1_int(pairs, "START_TIME", line, path)
            if "FINISH_TIME" in pairs:
                entry["finish_ms"] = _mr1_int(pairs, "FINISH_TIME", line, path)
                entry["status"] = _MR1_STATUS.get(value.get("TASK_STATUS", ""), "failed")

    if job["records_read"] == 0 or job["job_id"] is None:
        raise ParseError("no Job record in the MR1 history", path=path, line=logs[0][1][0][0] if logs[0][1] else 1,
                         expected='Job JOBID="job_..." records')
    if job["status"] is None or job["finish_ms"] is None:
        if job["status"] in (None, "succeeded"):
            job["status"] = None
        warnings.append("no final Job record with FINISH_TIME: the log is cut short")

    by_type: dict[str, Counters] = {"map": {}, "reduce": {}}
    for entry in tasks.values():
        if entry["type"] in by_type and entry["counters"] and entry["status"] == "succeeded":
            _add_counters(by_type[entry["type"]], entry["counters"])
    from_job_record = job_counters is not None
    if job_counters is None:
        job_counters = {}
        _add_counters(job_counters, by_type["map"])
        _add_counters(job_counters, by_type["reduce"])
    job["counters"] = job_counters

    config: dict[str, str] = {}
    if confs:
        name, section = confs[0]
        try:
            config = _parse_conf_xml("\n".join(line for _, line in section), path,
                                     first_line=section[0][0])
        except ParseError as exc:
            warnings.append(f"job conf {name or ''} not read: {exc.reason} (line {exc.line})")
        if config:
            identity = _job_identity(config, None)
            job["name"] = job["name"] or identity["app_name"]
            job["user"] = job["user"] or identity["user"]

    # With the job's own totals, the maps' share of them comes from the final Job
    # record, not from task records that a truncated log may lack.
    return _assemble(format="mapreduce-mr1", job=job, tasks=tasks, attempts=attempts,
                     job_counters=job_counters, map_counters=by_type["map"] or None,
                     map_side=None if from_job_record else by_type["map"] or None, map_side_given=True,
                     reduce_counters=by_type["reduce"] or None, config=config, source=str(path),
                     engine_version=None)
