"""Run tables: the CSV schema of ``../shared/datasets/README.md``.

One row per real execution of one job::

    source,workload,framework,datasize,input_bytes,instance_type,instance_count,
    vcpus,memory_gib,hourly_price_usd,config_json,runtime_s,completed,run_id

``read_run_table`` validates every cell and raises one :class:`ParseError`
naming the file, the line and the column of the first bad value, so a
malformed file is rejected whole.  Files ending in ``.gz`` are decompressed.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import re
from pathlib import Path
from typing import Iterable

from jobgauge.errors import ParseError, UsageError

COLUMNS = (
    "source", "workload", "framework", "datasize", "input_bytes",
    "instance_type", "instance_count", "vcpus", "memory_gib",
    "hourly_price_usd", "config_json", "runtime_s", "completed", "run_id",
)
# Optional columns: how quiet the machine was when a run was measured (``jobgauge collect``'s
# load guard), how many cores it had, and the CPU seconds its JVM's task, JIT compiler and
# GC threads took during it (``profiler.runners.driver.jvm_thread_cpu_s``), and the machine's
# speed as its application started (``machine_probe_s``: ``profiler.speed.machine_speed``).
# Read when a file has them; written only when some row has a value.
GUARD_COLUMNS = ("load_at_start", "cpu_time_s", "quiet_start", "first_runtime_s", "host_cores",
                 "cpu_tasks_s", "cpu_compiler_s", "cpu_gc_s", "machine_probe_s")
#: The public run tables (``../shared/datasets``: Scout's multi-node runs and C3O's EMR
#: runs): the source their rows carry -> their file.  Their jobs are other builds of
#: same-named benchmarks (HiBench and spark-perf on EC2, C3O's own Spark jobs on EMR),
#: run on HDFS at 10^4-10^6 times the input jobgauge profiled its own under those
#: names: a profile jobgauge took stands for its own program, never for theirs
#: (``models.evaluation.attach_reference_profiles``).
PUBLIC_TABLES = {"scout-multinode": "scout_multinode.csv", "c3o-emr": "c3o_emr.csv"}
#: Their sources.
PUBLIC_SOURCES = tuple(PUBLIC_TABLES)
#: The folder of the public run tables: ``$JOBGAUGE_SHARED_DATASETS`` (the evaluation
#: looks in ``../shared/datasets`` from the current folder without it, as in the README's
#: examples; a store learns from them only where it is set).
SHARED_DATASETS_ENV = "JOBGAUGE_SHARED_DATASETS"


def public_run_tables(folder) -> list[Path]:
    """The public run tables (:data:`PUBLIC_TABLES`) that ``folder`` holds, in that
    order."""
    return [path for path in (Path(folder) / name for name in PUBLIC_TABLES.values())
            if path.is_file()]


def public_origins(frame):
    """Per row of a run frame, the source of the public table it comes from
    (:data:`PUBLIC_SOURCES`), ``""`` for every other run (jobgauge's, the user's): the
    runs a model may compare one with another as runs of one program."""
    import numpy as np

    if "source" not in frame.columns:
        return np.full(len(frame), "", dtype=object)
    sources = frame["source"].astype(str)
    return np.where(sources.isin(PUBLIC_SOURCES), sources, "").astype(object)


def nearest_origin(found, size: float, mode: str = "", modes=None) -> str:
    """Of a job measured in several origins (``found``: origin, as
    :func:`public_origins` names them, -> the log input sizes its runs finished at, or
    their smallest and largest), the one whose runs ran where the question runs and are
    nearest its log input ``size``.  Where: ``mode``, the question's run mode
    (``models.features.run_modes``: ``"local"`` on this machine, ``"remote"`` on a
    cluster), against ``modes`` (origin -> the run modes of its runs); an origin whose
    runs never ran in that mode is taken only where none did.  Nearest: an origin whose
    span holds the size (0), else one whose runs are all larger, the nearest first
    (its smallest size), else the one whose runs are all smaller nearest it (its
    largest): a size between two origins' spans is answered from the runs above it,
    shrunk to it, never from the runs below it grown into the next one's sizes (the
    stage model's answer then never falls where it moves from one to the next,
    ``StagePredictor._measured_log``).  A tie, or a size not known (NaN), goes
    to ``""`` (jobgauge's and the user's runs) where it is among them, else to the first
    origin by name.  The stage model answers a question from that origin's runs
    (``StagePredictor._with_origin``) and the coverage notes compare it with them
    (``models._coverage.MeasuredRange``): Scout's pagerank at bigdata is Scout's; at
    HiBench tiny on local[2], jobgauge's.  By size alone, sort on 4 m4.2xlarge was
    jobgauge's local[2] runs' at 1 GB (1.19 s) and C3O's EMR runs' at 2 GB (104 s).
    By the nearer end, pagerank on 4 m5.2xlarge was C3O's (0.13-0.43 GB) grown to
    0.9 GB, 635 s, and Scout's (2.8-5.7 GB) shrunk to 1.2 GB, 199 s."""
    spans = {origin: (min(values), max(values)) for origin, values in found.items()
             if len(values)}
    if not spans:
        return ""

    def elsewhere(origin) -> bool:
        return bool(mode) and modes is not None and mode not in modes.get(origin, ())

    if not math.isfinite(size):
        return min(spans, key=lambda origin: (elsewhere(origin), origin != "", origin))
    return min(spans, key=lambda origin: (elsewhere(origin), size > spans[origin][1],
                                          max(spans[origin][0] - size,
                                              size - spans[origin][1], 0.0),
                                          origin != "", origin))



def smaller_origins(found, size: float, mode: str = "", modes=None) -> list[str]:
    """Of a job measured in several origins (``found``, ``mode`` and ``modes`` as
    :func:`nearest_origin` takes them), the origins whose runs all lie below the log
    input ``size`` where it lies between two origins' spans (below the runs of the
    origin :func:`nearest_origin` answers it from): among the origins that ran where it
    runs, else among all.  The stage model's answer there is never below each one's
    answer at its largest size (``StagePredictor._measured_log``), and the coverage note
    names them (``models._coverage.MeasuredRange``): pagerank at 1 GB on 4 m5.2xlarge,
    between C3O's runs (0.13-0.43 GB) and Scout's (from 2.8 GB), is C3O's at 0.43 GB.
    Inside the nearest origin's span, none: its runs answer it."""
    spans = {origin: (min(values), max(values)) for origin, values in found.items()
             if len(values)}
    if len(spans) < 2 or not math.isfinite(size):
        return []
    chosen = nearest_origin(found, size, mode, modes)
    if chosen in spans and size >= spans[chosen][0]:
        return []
    ran = [origin for origin in spans if mode in (modes or {}).get(origin, ())]
    return sorted(origin for origin in (ran or spans) if spans[origin][1] < size)

REQUIRED_TEXT = ("source", "workload", "framework", "instance_type", "run_id")
_TRUE = {"true", "1", "yes", "t"}
_FALSE = {"false", "0", "no", "f"}


def busy_starts(frame):
    """Per row of a run frame, True where the run started on a busy machine (its
    ``quiet_start`` is false: the load guard's column reads as True, False or None);
    False where it did not, or where the frame does not say."""
    import numpy as np

    if "quiet_start" not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    return frame["quiet_start"].map(lambda value: value is False or value is np.False_) \
        .to_numpy(dtype=bool)


def _open_text(path: Path):
    """The file as text; a UTF-8 byte-order mark at the start is skipped."""
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


# Whole-number cells are stored as 64-bit integers; a cluster is far smaller than this.
MAX_INSTANCE_COUNT = 100_000


def _number(text, *, path, line, column, integer=False, optional=False, minimum=0.0,
            maximum=None):
    text = text.strip()
    if text == "":
        if optional:
            return math.nan if not integer else None
        raise ParseError("missing value", path=path, line=line, column=column,
                         expected="a number")
    try:
        value = float(text)
    except ValueError:
        raise ParseError("not a number", path=path, line=line, column=column,
                         expected="a number", snippet=text) from None
    if not math.isfinite(value) or value < minimum or (maximum is not None and value > maximum):
        bounds = f">= {minimum:g}" if maximum is None else f"from {minimum:g} to {maximum:g}"
        raise ParseError("out of range", path=path, line=line, column=column,
                         expected=f"a finite number {bounds}", snippet=text)
    if integer:
        if value != int(value):
            raise ParseError("not a whole number", path=path, line=line,
                             column=column, expected="an integer", snippet=text)
        return int(value)
    return value


def parse_row(raw: dict, *, path=None, line=None, runtime_optional=False) -> dict:
    """Validate one CSV row (a dict of strings) into typed values."""
    row = {}
    for column in REQUIRED_TEXT:
        value = (raw.get(column) or "").strip()
        if not value:
            raise ParseError("missing value", path=path, line=line, column=column,
                             expected="a non-empty string")
        row[column] = value
    row["datasize"] = (raw.get("datasize") or "").strip()
    row["input_bytes"] = _number(raw.get("input_bytes") or "", path=path, line=line,
                                 column="input_bytes", optional=True)
    row["instance_count"] = _number(raw.get("instance_count") or "", path=path, line=line,
                                    column="instance_count", integer=True, minimum=1,
                                    maximum=MAX_INSTANCE_COUNT)
    row["vcpus"] = _number(raw.get("vcpus") or "", path=path, line=line, column="vcpus",
                           minimum=1e-9)
    row["memory_gib"] = _number(raw.get("memory_gib") or "", path=path, line=line,
                                column="memory_gib", minimum=1e-9)
    row["hourly_price_usd"] = _number(raw.get("hourly_price_usd") or "", path=path,
                                      line=line, column="hourly_price_usd", optional=True)
    config_text = (raw.get("config_json") or "").strip() or "{}"
    try:
        config = json.loads(config_text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"invalid JSON ({exc.msg})", path=path, line=line,
                         column="config_json", expected="a JSON object",
                         snippet=config_text) from None
    if not isinstance(config, dict):
        raise ParseError("not a JSON object", path=path, line=line, column="config_json",
                         expected="a JSON object", snippet=config_text)
    row["config"] = {str(k): v for k, v in config.items()}
    row["runtime_s"] = _number(raw.get("runtime_s") or "", path=path, line=line,
                               column="runtime_s", optional=runtime_optional)
    for column in GUARD_COLUMNS:
        if column in raw:
            row[column] = _guard_value(raw[column] or "", path=path, line=line, column=column)
    completed = (raw.get("completed") or "").strip().lower()
    if completed in _TRUE:
        row["completed"] = True
    elif completed in _FALSE:
        row["completed"] = False
    elif completed == "" and runtime_optional:
        row["completed"] = True
    else:
        raise ParseError("not a boolean", path=path, line=line, column="completed",
                         expected="true or false", snippet=completed)
    return row


def _guard_value(text, *, path, line, column):
    """One optional guard cell: None when empty, a bool for quiet_start, else a number."""
    if not text.strip():
        return None
    if column != "quiet_start":
        return _number(text, path=path, line=line, column=column)
    value = text.strip().lower()
    if value in _TRUE or value in _FALSE:
        return value in _TRUE
    raise ParseError("not a boolean", path=path, line=line, column=column,
                     expected="true or false", snippet=value)


def repeat_noise(groups: Iterable) -> dict | None:
    """The repeat noise of measured runs, the one definition every report uses: for each
    group of repeats of exactly the same configuration (finished runtimes), each run's
    deviation from the median of the group's other runs, relative to the run; their median
    (``mdape``) and 90th percentile (``p90``) over all groups.  None without repeats."""
    import numpy as np

    errors = []
    for values in groups:
        values = np.asarray(values, dtype=float)
        for i in range(len(values) if len(values) >= 2 else 0):
            if values[i] > 0:
                errors.append(abs(np.median(np.delete(values, i)) - values[i]) / values[i])
    if not errors:
        return None
    return {"runs": len(errors), "mdape": float(np.median(errors)),
            "p90": float(np.quantile(errors, 0.9))}


def table_columns(path) -> list[str]:
    """The column names in a run table's header (an empty list for an empty file)."""
    with _open_text(Path(path)) as handle:
        first = handle.readline().strip()
    return next(csv.reader([first]), []) if first else []


def is_quiet_table(path) -> bool:
    """Whether a run table was measured under ``jobgauge collect``'s load guard (its
    header has ``quiet_start``)."""
    return "quiet_start" in table_columns(path)


def iter_run_table(path, *, runtime_optional=False):
    """Yield validated rows of one run table; raise ParseError on the first bad cell.

    ``runtime_optional`` accepts an empty ``runtime_s`` (tables to predict for).
    """
    path = Path(path)
    if path.is_dir():
        raise ParseError("is a directory, not a run table", path=path,
                         expected="a CSV file (optionally .gz)")
    if not path.exists():
        raise ParseError("no such file", path=path)
    if not path.is_file():
        raise ParseError("not a regular file", path=path, expected="a CSV file (optionally .gz)")
    line = 1
    try:
        handle = _open_text(path)
        with handle:
            reader = csv.DictReader(handle, strict=True)
            header = reader.fieldnames or []
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise ParseError("header lacks columns " + ", ".join(missing), path=path,
                                 line=1, expected="the run-table header " + ",".join(COLUMNS))
            for raw in reader:
                line = reader.line_num
                if None in raw:
                    raise ParseError("more cells than header columns", path=path, line=line,
                                     expected=f"{len(header)} cells")
                if any(raw.get(c) is None for c in header):
                    raise ParseError("fewer cells than header columns", path=path, line=line,
                                     expected=f"{len(header)} cells")
                yield parse_row(raw, path=path, line=line, runtime_optional=runtime_optional)
    except csv.Error as exc:
        # ``line`` is the last row read whole: the bad one starts on the next line.
        if "unexpected end of data" in str(exc):
            reason = "unterminated quote: a quoted cell is never closed"
        elif "'\"'" in str(exc):
            reason = f"unterminated or misplaced quote ({exc})"
        else:
            reason = f"malformed CSV ({exc})"
        raise ParseError(reason, path=path, line=line + 1) from None
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
        raise ParseError(f"unreadable as CSV text ({exc.__class__.__name__}: {exc})",
                         path=path) from None
    except OSError as exc:
        raise ParseError(f"cannot read: {exc.strerror or exc}", path=path) from None


def read_run_table(path, *, runtime_optional=False) -> list[dict]:
    """Read and validate one whole run table; nothing is returned unless all of it is valid."""
    rows = list(iter_run_table(path, runtime_optional=runtime_optional))
    seen = {}
    for index, row in enumerate(rows):
        key = (row["source"], row["run_id"])
        if key in seen:
            raise ParseError(f"duplicate run_id {row['run_id']!r} of source {row['source']!r}"
                             f" (first at row {seen[key] + 1})", path=path,
                             line=index + 2, column="run_id")
        seen[key] = index
    return rows


def read_run_tables(paths: Iterable, *, runtime_optional=False):
    """Read several run tables into one pandas DataFrame: the columns of COLUMNS plus
    ``config``, and the load guard's columns (GUARD_COLUMNS) that some table has."""
    import pandas as pd

    rows = []
    for path in paths:
        rows.extend(read_run_table(path, runtime_optional=runtime_optional))
    guard = [c for c in GUARD_COLUMNS if any(c in row for row in rows)]
    frame = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "config_json"] + ["config"]
                         + guard)
    frame["config_json"] = [config_json(c) for c in frame["config"]]
    return frame


def config_json(config: dict) -> str:
    """A run's settings as the frames' ``config_json`` column, which names its
    configuration (calibration splits, held-out configurations and repeat noise group
    runs by it): sorted JSON, a ``spark://`` master without its port.  The standalone
    cluster jobgauge starts takes a new port at every start, so without this a run
    measured again in an application of its own (``jobgauge collect --busy-only``) was
    a configuration of its own: 5 such runs on the cluster redrew the stage model's
    calibration split and widened the web form's interval for TPC-H Q3 at SF 1 from
    x1.8 to x3.3 high/low.  The run tables keep the whole URL (``config``)."""
    def same(key, value):
        if key == "spark.master" and isinstance(value, str) and value.startswith("spark://"):
            return _SPARK_PORT.sub("", value)
        return value

    return json.dumps({k: same(k, v) for k, v in config.items()}, sort_keys=True, default=str)


_SPARK_PORT = re.compile(r":\d+(?=/?$|,)")


def format_row(row: dict) -> dict:
    """Turn a typed row back into CSV strings in schema order."""
    out = {}
    for column in COLUMNS:
        if column == "config_json":
            value = row.get("config")
            if value is None:
                value = row.get("config_json", "{}")
            out[column] = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            continue
        value = row.get(column)
        if value is None or (isinstance(value, float) and math.isnan(value)):
            out[column] = ""
        elif isinstance(value, bool):
            out[column] = "true" if value else "false"
        elif isinstance(value, float):
            integral = column in ("input_bytes", "instance_count") and value.is_integer()
            out[column] = str(int(value)) if integral else repr(round(value, 6))
        else:
            out[column] = str(value)
    return out


def write_run_table(rows: Iterable[dict], path, *, extra_columns=()) -> int:
    """Write rows in the schema (gzip when the name ends in .gz); return the row count."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"cannot write the run table to {path}: it is a directory; "
                         f"give a file name")
    rows = list(rows)
    extra_columns = [c for c in GUARD_COLUMNS if any(row.get(c) is not None for row in rows)] \
        + [c for c in extra_columns if c not in GUARD_COLUMNS]
    fields = list(COLUMNS) + [c for c in extra_columns if c not in COLUMNS]
    opener = (lambda: io.TextIOWrapper(gzip.open(path, "wb"), encoding="utf-8", newline="")) \
        if path.suffix == ".gz" else (lambda: open(path, "w", encoding="utf-8", newline=""))
    count = 0
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = opener()
    except OSError as exc:
        raise UsageError(f"cannot write the run table to {path}: {exc.strerror or exc}") from None
    with handle:
        writer = csv.DictWriter(handle, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            out = format_row(row)
            for column in extra_columns:
                value = row.get(column)
                if isinstance(value, bool):
                    value = "true" if value else "false"
                out[column] = "" if value is None else value
            writer.writerow(out)
            count += 1
    return count


def profiles_path_for(runs_path) -> Path:
    """Where the profiles of a run table live: data/runs/NAME.csv.gz (or .csv) ->
    data/profiles/NAME.jsonl.gz.  ``jobgauge collect`` writes them there, and every reader
    of a table's profiles looks there."""
    runs_path = Path(runs_path)
    name = runs_path.name.removesuffix(".gz").removesuffix(".csv")
    return runs_path.parent.parent / "profiles" / f"{name}.jsonl.gz"


def profiles_beside(runs_path) -> list[Path]:
    """[:func:`profiles_path_for` of the table] when that file exists, else []."""
    candidate = profiles_path_for(runs_path)
    return [candidate] if candidate.is_file() else []


def read_profile_records(paths) -> dict:
    """Profile records of JSON-lines files (gzip or plain), keyed by (source, run_id).

    Each line, as ``jobgauge collect`` writes data/profiles: ``{"source", "run_id",
    "summary": Profile.summary(), "stages": [...], "physical_plan": text}``.
    """
    records = {}
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise UsageError(f"cannot read profiles file {path}: it does not exist")
        opener = gzip.open if path.suffix == ".gz" else open
        try:
            with opener(path, "rt", encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                    except json.JSONDecodeError as exc:
                        raise ParseError(f"not JSON: {exc.msg}", path=path, line=number,
                                         column=exc.colno, snippet=line[:60]) from None
                    if not isinstance(record, dict) or "run_id" not in record:
                        raise ParseError("a profile record needs a run_id", path=path,
                                         line=number, expected='{"run_id": ..., "summary": {...}}',
                                         snippet=line[:60])
                    records[(str(record.get("source", "local")), str(record["run_id"]))] = record
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read profiles file {path}: {exc}") from None
    return records
