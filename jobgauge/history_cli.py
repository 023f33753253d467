"""``jobgauge sync`` (pull finished applications from History Servers) and
``jobgauge report`` (one application's report: time split, what-if, heuristics).

``sync URL... --every 10m`` imports every application that finished since
the last one it read from each server (the mark the store keeps), then
waits and does it again, as Dr. Elephant's fetcher does.  A server that does
not answer is retried with doubling waits (up to ``--every``); nothing is
lost, because the mark only moves past applications that were read.
``--once`` does one round and exits (1 when a server could not be read).

``report APP_ID|EVENTLOG|URL``: an application already in the store (by its
application id, as ``jobgauge import`` stored it), an event log, or a
History Server URL naming one application.  ``--json`` prints the dict of
:func:`jobgauge.profiler.readers.app_report.application_report`.
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

from jobgauge.cli_options import add_command, add_timeout_option, print_result
from jobgauge.errors import ParseError, UsageError

FIRST_RETRY_S = 5.0


def register(subparsers) -> None:
    """Add ``sync`` and ``report`` to the jobgauge parser."""
    parser = add_command(subparsers, "sync", sync_command,
                         help="keep importing finished applications from Spark History Servers",
                         json="one line per round")
    parser.add_argument("urls", nargs="+", metavar="URL", help="http://host:18080")
    parser.add_argument("--every", default="10m", metavar="DURATION",
                        help="time between rounds: 30s, 10m, 1h (default 10m)")
    parser.add_argument("--once", action="store_true", help="one round, then exit")
    parser.add_argument("--since", metavar="DATE",
                        help="on the first sync of a server, skip applications that ended "
                             "before DATE (2024-05-01, UTC)")
    add_timeout_option(parser, default=30.0, what="give up a request")

    parser = add_command(subparsers, "report", report_command,
                         help="report on one application: time split, what-if, heuristics",
                         json="the report as one object")
    parser.add_argument("target", metavar="APP_ID|EVENTLOG|URL",
                        help="an application id in the store, an event log, or "
                             "http://host:18080/api/v1/applications/<app id>")


# ---------------------------------------------------------------------------- sync

def interval_seconds(text: str) -> float:
    """``--every`` as seconds (``10m`` is ten minutes here, as in Spark's time settings)."""
    from jobgauge.units import parse_duration

    seconds = parse_duration(text, name="--every")
    if seconds <= 0:
        raise UsageError(f"--every must be a positive duration; got {text!r}")
    return seconds


def sync(store, urls, *, every_s: float, once: bool = False, since_ms: int | None = None,
         timeout: float = 30.0, rounds: int | None = None, sleep=time.sleep,
         out=None, err=None, as_json: bool = False) -> int:
    """Run sync rounds until interrupted (or ``once``, or after ``rounds``); return the exit code.

    ``sleep`` is injectable so tests can run rounds without waiting.
    """
    from jobgauge.errors import GaugeError
    from jobgauge.history_import import ImportReport, import_server, print_report
    from jobgauge.profiler.readers.sparkrest import SparkRestError

    out = out or sys.stdout
    err = err or sys.stderr
    retry_s = min(FIRST_RETRY_S, every_s)
    done = 0
    while True:
        report = ImportReport()
        down = []
        existing = set(store.run_ids("history"))
        for url in urls:
            try:
                import_server(store, url, report, since_ms=since_ms, timeout=timeout,
                              existing=existing)
            except SparkRestError as exc:
                down.append(url)
                report.servers[url] = {"error": str(exc)}
                print(f"jobgauge sync: {exc}", file=err)
            except GaugeError as exc:
                report.skipped.append({"input": url, "reason": str(exc)})
        if as_json or len(down) < len(urls):
            print_report(report, as_json=as_json, out=out, err=err)
            out.flush()
        done += 1
        if once or (rounds is not None and done >= rounds):
            return 1 if down else 0
        if down:
            wait = retry_s
            retry_s = min(retry_s * 2, every_s)
            print(f"jobgauge sync: retrying in {wait:g} s", file=err)
        else:
            wait, retry_s = every_s, min(FIRST_RETRY_S, every_s)
        sleep(wait)


def sync_command(args) -> int:
    """Import every application that finished since the last sync from each History Server,
    then repeat every --every. A server that is down is retried with growing waits; nothing
    is lost, the store remembers the newest application read per server."""

    from jobgauge.history_import import parse_since
    from jobgauge.store import open_store

    every = interval_seconds(args.every)
    store = open_store(args.store)
    return sync(store, args.urls, every_s=every, once=args.once,
                since_ms=parse_since(args.since), timeout=args.timeout, as_json=args.json)


# ---------------------------------------------------------------------------- report

def _stored_profile(store, app_id: str):
    from jobgauge.profiler.readers.profile import Profile

    runs = store.find_runs(app_id)
    if not runs:
        raise UsageError(f"{app_id!r} is no event log, URL or application in the store "
                         f"({store.display_url}); import it first: jobgauge import EVENTLOG")
    run = runs[0]
    for stored in store.profiles_for(run["id"]):
        if isinstance(stored, dict) and "stages" in stored and "format" in stored:
            return Profile.from_dict(stored), run
    raise UsageError(f"run {run['run_id']!r} in the store has no application profile to "
                     f"report on")


def build_report(target: str, store_target=None) -> dict:
    """The report of an event log, a History Server URL or an application in the store."""
    from jobgauge.history_import import job_key, read_server_application
    from jobgauge.profiler.readers.app_report import application_report, report_eventlog

    if target.startswith(("http://", "https://")):
        from jobgauge.profiler.readers.sparkrest import parse_url

        address = parse_url(target)
        if not address.app_id:
            raise UsageError("the URL names no application: give "
                             "http://host:18080/api/v1/applications/<app id>")
        profile, main = read_server_application(
            address.root, {"app_id": address.app_id, "attempt_id": address.attempt_id})
        return application_report(profile, job_key=job_key(profile, main))
    if Path(target).exists():
        try:
            return report_eventlog(target)
        except ParseError:
            from jobgauge.profiler.readers.mapreduce import mapreduce_kind

            if Path(target).is_file() and mapreduce_kind(target):
                raise UsageError(f"{target} is a MapReduce job file: 'jobgauge report' reads "
                                 f"Spark applications; 'jobgauge profile "
                                 f"{shlex.quote(target)}' profiles a MapReduce job") from None
            raise
    from jobgauge.store import open_store

    profile, run = _stored_profile(open_store(store_target), target)
    return application_report(profile, job_key=run["workload"])


def report_command(args) -> int:
    """Where one Spark application's time went (driver, jobs, critical path, wasted cores), its
    runtime on 10 % to 500 % of its executors, and heuristics (skew, spill, GC, idle
    executors, memory, partitions, driver time) with the --conf values that would fix them."""

    from jobgauge.profiler.readers.app_report import format_report

    report = build_report(args.target, args.store)
    print_result(args.json, report, format_report(report))
    return 0
