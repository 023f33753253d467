"""``jobgauge profile``: what a finished (or running) job did, from its records.

Inputs are told apart by content, not by name:

* ``http://`` / ``https://`` URLs: a Spark History Server (``read_history``);
* Spark event logs: plain, ``.lz4``, ``.snappy``, ``.zstd`` files, rolling
  ``eventlog_v2_*`` folders and Spark 1.x ``<app>/EVENT_LOG_1`` folders
  (``read_eventlog``); a folder of event logs (a ``spark.eventLog.dir``) is
  profiled log by log;
* MapReduce ``.jhist``, job conf XML, counter dumps and MR1 history
  (``jobgauge.profiler.readers.mapreduce.read_mapreduce``).

``--json`` prints one JSON object per input, one per line (``Profile.summary()``,
or the whole profile with ``--full``; a failed input prints
``{"source": ..., "error": ...}``).  Without it, a short table.  A bad input
prints its error line on stderr; the others are still profiled and the exit
code is 1.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from jobgauge.cli_options import add_command
from jobgauge.errors import GaugeError, ParseError

_SUMMARY_KEYS = ("format", "engine_version", "app_id", "n_jobs", "n_stages", "n_tasks",
                 "runtime_s")
_PROGRESS_MIN_BYTES = 32 << 20


def register(subparsers) -> None:
    """Add ``profile`` to the jobgauge parser."""
    parser = add_command(subparsers, "profile", run_profile,
                         help="profile Spark event logs, History Server apps and MapReduce jobs",
                         json="one object per input, one per line")
    parser.add_argument("inputs", nargs="+", metavar="FILE_OR_URL",
                        help="event log file or folder, folder of event logs, "
                             "http://host:18080/api/v1/applications/<id>, or MapReduce file")
    parser.add_argument("--full", action="store_true",
                        help="with --json: the whole profile (stages, jobs, SQL, executors)")


def is_url(text: str) -> bool:
    return text.startswith(("http://", "https://"))


def expand_folders(inputs) -> list[tuple[str, str | None]]:
    """``(input, None)`` for each input to profile, each folder of event logs replaced by
    its entries; ``(entry, reason)`` for an entry of such a folder that cannot be one
    (not a regular file or folder).  Other entries of the folder are inputs too: whatever
    reads is profiled, the rest is reported with its reason."""
    from jobgauge.profiler.readers._eventlog_io import is_legacy_dir, is_rolling_dir
    from jobgauge.profiler.readers.eventlog import looks_like_eventlog

    out = []
    for item in inputs:
        path = Path(item)
        if not is_url(item) and path.is_dir() and not (is_rolling_dir(path) or
                                                       is_legacy_dir(path)):
            entries = [entry for entry in sorted(path.iterdir()) if not entry.name.startswith(".")]
            regular = [entry for entry in entries if entry.is_file() or entry.is_dir()]
            if any(looks_like_eventlog(entry) for entry in regular):   # never opens a FIFO
                out.extend((str(entry), None if entry in regular else _not_regular(entry))
                           for entry in entries)
                continue
        out.append((item, None))
    return out


def _not_regular(path: Path) -> str:
    return "not a regular file or folder (a FIFO, socket or device); not read"


def read_profile(item: str, *, progress: bool = False):
    """Read one input of any kind into a Profile (ParseError when it is none of them)."""
    if is_url(item):
        from jobgauge.profiler.readers.history import read_history

        return read_history(item)
    from jobgauge.profiler.readers.eventlog import looks_like_eventlog, read_eventlog

    path = Path(item)
    if not path.exists():
        raise ParseError("no such file or directory", path=item)
    if not (path.is_file() or path.is_dir()):   # reading a FIFO would wait for a writer
        raise ParseError(_not_regular(path), path=item,
                         expected="an event log file or folder, or a MapReduce job file")
    if looks_like_eventlog(path):
        return _read_eventlog_with_progress(path) if progress else read_eventlog(path)
    if path.is_dir():
        raise ParseError("folder holds no Spark event log", path=item,
                         expected="an event log folder (eventlog_v2_<app>, <app>/EVENT_LOG_1) "
                                  "or a folder of event logs")
    return _read_mapreduce(path)


def _read_mapreduce(path: Path):
    from jobgauge.profiler.readers import mapreduce

    try:
        mapreduce.sniff_mapreduce(path)
    except ParseError as exc:
        if exc.reason.startswith("not a MapReduce job file"):
            raise ParseError(
                "not a Spark event log, History Server URL or MapReduce job file",
                path=path, line=exc.line,
                expected="Spark JSON events, a .jhist (Avro-Json), a job conf XML, "
                         "a counter dump or an MR1 history log",
                snippet=exc.snippet) from None
        raise
    return mapreduce.read_mapreduce(path)


def _read_eventlog_with_progress(path: Path):
    from jobgauge.profiler.readers.eventlog import read_eventlog

    total = sum(p.stat().st_size for p in ([path] if path.is_file() else path.rglob("*"))
                if p.is_file())
    if total < _PROGRESS_MIN_BYTES:
        return read_eventlog(path)
    from tqdm import tqdm

    with tqdm(total=total, unit="B", unit_scale=True, desc=path.name, file=sys.stderr,
              disable=None, leave=False) as bar:
        return read_eventlog(path, on_read=bar.update)


def _fmt(value, digits=1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _table(rows) -> str:
    header = ("source", "format", "version", "app_id", "jobs", "stages", "tasks",
              "runtime_s", "critical_s", "idle_core_s")
    lines = [header]
    for source, p in rows:
        shown = source if is_url(source) else Path(source).name   # full path in --json
        lines.append((shown, p.format, _fmt(p.engine_version), _fmt(p.app_id),
                      _fmt(p.n_jobs), _fmt(p.n_stages), _fmt(p.n_tasks), _fmt(p.runtime_s),
                      _fmt(p.critical_path_s), _fmt(p.idle_core_seconds)))
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
    right = {4, 5, 6, 7, 8, 9}
    return "\n".join(
        "  ".join(str(cell).rjust(w) if i in right else str(cell).ljust(w)
                  for i, (cell, w) in enumerate(zip(line, widths))).rstrip()
        for line in lines)


def _summary(profile) -> dict:
    out = profile.summary()
    for key in _SUMMARY_KEYS:
        out.setdefault(key, getattr(profile, key, None))
    return out


def run_profile(args) -> int:
    """Read Spark event logs (plain, lz4, snappy, zstd, rolling folders), Spark History Server
    URLs and MapReduce job files, and print what each job did: jobs, stages, tasks, runtime,
    critical path, idle cores.

    Every input is profiled; the exit code is 1 when a named input could not be read, or
    when none could. A file in a folder of event logs that is no job record is reported
    with its reason (skipped) and the folder's other logs are still profiled."""
    failures = skipped = profiled = 0
    rows = []
    named = {str(item) for item in args.inputs}
    for item, reason in expand_folders(args.inputs):
        try:
            if reason is not None:
                raise ParseError(reason, path=item)
            profile = read_profile(item, progress=True)
        except GaugeError as exc:
            if getattr(args, "debug", False):
                raise
            if item in named:
                failures += 1
                print(f"jobgauge: error: {exc}", file=sys.stderr)
            else:
                skipped += 1
                print(f"jobgauge: skipped: {exc}", file=sys.stderr)
            if args.json:
                print(json.dumps({"source": item, "error": str(exc)}), flush=True)
            continue
        profiled += 1
        if args.json:
            data = profile.to_dict() if args.full else _summary(profile)
            print(json.dumps(data, default=str), flush=True)
        else:
            rows.append((item, profile))
    if rows:
        print(_table(rows))
        for source, profile in rows:
            for note in profile.notes:
                print(f"note: {source}: {note}", file=sys.stderr)
    if skipped:
        print(f"jobgauge: profiled {profiled} input(s); skipped {skipped} file(s) that are "
              f"no job record", file=sys.stderr)
    return 1 if failures or not profiled else 0
