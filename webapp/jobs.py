"""The jobs pages: every job in the store, each job's runs over time, and one
application's report (the ``jobs`` blueprint), with their JSON twins under
``/api/v1`` (the ``jobs_api`` blueprint).

A *job* is the ``workload`` of its runs: for imported history that is the job
key :func:`jobgauge.history_import.job_key` gives (app name plus main class or
script), so reruns of one job group together; runs of every source count.

- ``/jobs``: each job with its number of runs, sources, last run and median runtime;
- ``/jobs/<job key>``: its runs over time (runtime and cost plotted), what changed
  in the settings from one run to the next, and the heuristics and recommended
  ``--conf`` values of the report of its latest run that has a Spark profile;
- ``/apps/<app id>``: the report of one application in the store
  (:func:`jobgauge.profiler.readers.app_report.application_report`): time split, critical
  path, wasted core-seconds, the what-if table and plot, heuristics, ``--conf``.

Unknown jobs and applications are a 404: a page in the site's layout, or the
API's one error shape under ``/api/``.
"""

from __future__ import annotations

import re
import statistics
import threading
from collections import OrderedDict
from datetime import datetime, timezone

from flask import Blueprint, abort, current_app, jsonify, render_template

from jobgauge.webapp.service import jsonable

jobs = Blueprint("jobs", __name__)
jobs_api = Blueprint("jobs_api", __name__)

# Profiles the application report reads (Spark; a MapReduce job has no executors to replay).
SPARK_PROFILE_FORMATS = ("spark-eventlog", "spark-history")
# Settings that name one launch rather than configure the job (ids, hosts, ports,
# temporary folders): they differ between any two runs, so the diff leaves them out.
LAUNCH_SETTINGS = re.compile(
    r"^(spark\.app\.(id|startTime|submitTime|attempt\.id)|spark\.driver\.(host|port|appUIAddress)"
    r"|spark\.fileserver\.(uri|port)|spark\.repl\.class\.(uri|outputDir)"
    r"|spark\.tachyonStore\.folderName|spark\.ui\.proxyBase|spark\.yarn\.app\.(id|container\..*)"
    r"|spark\.org\.apache\.hadoop\.yarn\.server\.webproxy\.amfilter\.AmIpFilter\.param\..*"
    r"|mapreduce\.job\.(dir|submithostname|submithostaddress)|mapreduce\.workflow\.id"
    r"|mapred\.job\.id|hadoop\.tmp\.dir|yarn\.app\.mapreduce\.am\.staging-dir)$")
DIFF_ROWS_SHOWN = 40     # changed settings listed per pair of runs on the page (all in JSON)


def _service():
    return current_app.extensions["jobgauge"]


# ---------------------------------------------------------------------------- the store

def _when(run: dict, first: str = "ended_at"):
    """When a run happened: its end (or ``first``), else its start, else when it was
    recorded; in UTC."""
    moment = run.get(first) or run.get("ended_at") or run.get("started_at") \
        or run.get("created_at")
    if isinstance(moment, datetime):   # SQLite keeps UTC without its zone
        moment = moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None \
            else moment.astimezone(timezone.utc)
    return moment


def _cost(run: dict) -> dict:
    """Dollars (where the run's node price is known) and core-hours of one run."""
    from jobgauge.job import cost_usd

    runtime, count = run.get("runtime_s"), run.get("instance_count") or 1
    if runtime is None:
        return {"cost_usd": None, "core_hours": None}
    price = run.get("hourly_price_usd")
    return {"cost_usd": None if price is None else round(cost_usd(runtime, count, price), 6),
            "core_hours": round(runtime * count * float(run.get("vcpus") or 1) / 3600.0, 6)}


def job_list(store) -> list[dict]:
    """One summary per job key in ``store``, most recently run first."""
    import sqlalchemy as sa

    runs = store.runs
    columns = [runs.c.workload, runs.c.source, runs.c.framework, runs.c.runtime_s,
               runs.c.status, runs.c.started_at, runs.c.ended_at, runs.c.created_at]
    grouped: dict[str, list[dict]] = {}
    with store.reading() as connection:
        for row in connection.execute(sa.select(*columns)):
            grouped.setdefault(row.workload, []).append(dict(row._mapping))
    summaries = []
    for key, rows in grouped.items():
        runtimes = [r["runtime_s"] for r in rows if r["runtime_s"] is not None]
        summaries.append({
            "job_key": key, "runs": len(rows),
            "sources": sorted({r["source"] for r in rows}),
            "frameworks": sorted({r["framework"] for r in rows}),
            "failed": sum(r["status"] != "succeeded" for r in rows),
            "last_run_at": max((_when(r) for r in rows if _when(r) is not None), default=None),
            "median_runtime_s": round(statistics.median(runtimes), 3) if runtimes else None,
        })
    oldest = datetime.min.replace(tzinfo=timezone.utc)
    summaries.sort(key=lambda s: (s["last_run_at"] or oldest, s["job_key"]), reverse=True)
    return summaries


def settings_changes(before: dict, after: dict) -> list[dict]:
    """What changed from one run's settings to the next's: ``{key, before, after}``
    (None: not set), launch-specific settings (:data:`LAUNCH_SETTINGS`) left out."""
    keys = sorted(k for k in set(before) | set(after) if not LAUNCH_SETTINGS.match(k))
    return [{"key": k, "before": before.get(k), "after": after.get(k)}
            for k in keys if before.get(k) != after.get(k)]


def _spark_profiles(store, job_key: str) -> dict[int, str | None]:
    """Run key -> application id of the runs of one job that have a Spark profile."""
    import sqlalchemy as sa

    profiles, runs = store.profiles, store.runs
    with store.reading() as connection:
        rows = connection.execute(
            sa.select(profiles.c.run, profiles.c.app_id)
            .join(runs, runs.c.id == profiles.c.run)
            .where(runs.c.workload == job_key,
                   profiles.c.format.in_(SPARK_PROFILE_FORMATS))).all()
    return {run: app_id for run, app_id in rows}


def _load_profile(store, run_key: int):
    """The Spark :class:`Profile` stored with one run (None when it has none)."""
    from jobgauge.profiler.readers.profile import Profile

    for stored in store.profiles_for(run_key):
        if isinstance(stored, dict) and stored.get("format") in SPARK_PROFILE_FORMATS:
            return Profile.from_dict(stored)
    return None


_reports: OrderedDict = OrderedDict()   # (store url, run key, job key) -> report
_reports_lock = threading.Lock()
REPORTS_KEPT = 64                       # a stored profile never changes: its report is kept


def _run_report(store, run_key: int, job_key: str) -> dict | None:
    """The application report of one stored run (None when it has no Spark profile)."""
    from jobgauge.profiler.readers.app_report import application_report

    key = (store.url, run_key, job_key)
    with _reports_lock:
        if key in _reports:
            _reports.move_to_end(key)
            return _reports[key]
    profile = _load_profile(store, run_key)
    report = None if profile is None else application_report(profile, job_key=job_key)
    with _reports_lock:
        _reports[key] = report
        while len(_reports) > REPORTS_KEPT:
            _reports.popitem(last=False)
    return report


def job_history(store, job_key: str) -> dict | None:
    """One job's runs, oldest first, with what changed between them and the advice of
    its latest profiled run; None when no run has this job key."""
    import sqlalchemy as sa

    runs_table, settings = store.runs, store.settings
    with store.reading() as connection:
        rows = [dict(r._mapping) for r in connection.execute(
            sa.select(runs_table).where(runs_table.c.workload == job_key))]
        if not rows:
            return None
        config: dict[int, dict] = {r["id"]: {} for r in rows}
        for run_key, key, value in connection.execute(
                sa.select(settings).join(runs_table, runs_table.c.id == settings.c.run)
                .where(runs_table.c.workload == job_key)):
            config[run_key][key] = value
    oldest = datetime.min.replace(tzinfo=timezone.utc)
    rows.sort(key=lambda r: (_when(r, "started_at") or oldest, r["id"]))
    profiled = _spark_profiles(store, job_key)
    out, changes, previous = [], [], None
    for index, row in enumerate(rows, start=1):
        record = {k: row.get(k) for k in (
            "id", "source", "run_id", "framework", "engine_version", "status", "runtime_s",
            "instance_type", "instance_count", "vcpus", "memory_gib", "hourly_price_usd",
            "input_bytes", "started_at", "ended_at", "load_at_start", "quiet_start")}
        record.update(index=index, at=_when(row), **_cost(row),
                      app_id=profiled.get(row["id"]), has_report=row["id"] in profiled)
        out.append(record)
        if previous is not None:
            changed = settings_changes(config[previous["id"]], config[row["id"]])
            if changed:
                changes.append({"from_run": previous["run_id"], "to_run": row["run_id"],
                                "from_index": index - 1, "to_index": index,
                                "changes": changed})
        previous = row
    latest = next((r for r in reversed(rows) if r["id"] in profiled), None)
    report = None if latest is None else _run_report(store, latest["id"], job_key)
    runtimes = [r["runtime_s"] for r in out if r["runtime_s"] is not None]
    return {
        "job_key": job_key, "runs": out, "settings_changes": changes,
        "median_runtime_s": round(statistics.median(runtimes), 3) if runtimes else None,
        "report_of": None if report is None else {"run_id": latest["run_id"],
                                                  "app_id": report["app_id"]},
        "heuristics": [] if report is None else report["heuristics"],
        "recommended_conf": {} if report is None else report["recommended_conf"],
    }


def stored_report(store, app_id: str) -> tuple[dict, dict] | None:
    """``(report, run)`` of the newest run in ``store`` whose Spark profile is
    application ``app_id``; None when there is none."""
    import sqlalchemy as sa

    profiles, runs = store.profiles, store.runs
    with store.reading() as connection:
        found = connection.execute(
            sa.select(runs).join(profiles, profiles.c.run == runs.c.id).where(
                profiles.c.app_id == app_id, profiles.c.format.in_(SPARK_PROFILE_FORMATS))
            .order_by(runs.c.id.desc()).limit(1)).first()
    if found is None:
        return None
    run = dict(found._mapping)
    report = _run_report(store, run["id"], run["workload"])
    return None if report is None else (report, run)


def _report_or_404(app_id: str) -> tuple[dict, dict]:
    found = stored_report(_service().store, app_id)
    if found is None:
        abort(404, description=f"no Spark application {app_id[:200]!r} with a profile in the "
                               "store; import its event log first: jobgauge import EVENTLOG")
    return found


def _job_or_404(job_key: str) -> dict:
    found = job_history(_service().store, job_key)
    if found is None:
        abort(404, description=f"no job {job_key[:200]!r} in the store")
    return found


# ---------------------------------------------------------------------------- pages

@jobs.get("/jobs")
def job_index():
    """Every job in the store."""
    return render_template("jobs.html", jobs=job_list(_service().store),
                           sync=current_app.extensions.get("jobgauge_sync"))


@jobs.get("/jobs/<path:job_key>")
def job_page(job_key):
    """One job's runs over time, settings changes and advice."""
    from jobgauge.webapp._plots import job_runs_png, png_data_uri

    job = _job_or_404(job_key)
    plot = png_data_uri(job_runs_png(job["runs"])) if job["runs"] else None
    shown = [{**pair, "shown": pair["changes"][:DIFF_ROWS_SHOWN],
              "more": max(0, len(pair["changes"]) - DIFF_ROWS_SHOWN)}
             for pair in job["settings_changes"]]
    return render_template("jobs_job.html", job=job, plot=plot, changes=shown)


@jobs.get("/apps/<app_id>")
def app_page(app_id):
    """The report of one application in the store."""
    from jobgauge.webapp._plots import png_data_uri, what_if_executors_png

    report, run = _report_or_404(app_id)
    points = [p for p in report["what_if"] if p["runtime_s"] is not None]
    plot = png_data_uri(what_if_executors_png(report["what_if"], report["executors"])) \
        if points else None
    return render_template("app_report.html", report=report, run=run, plot=plot)


# ---------------------------------------------------------------------------- JSON

@jobs_api.get("/jobs")
def job_index_json():
    return jsonify({"jobs": jsonable(job_list(_service().store))})


@jobs_api.get("/jobs/<path:job_key>")
def job_json(job_key):
    return jsonify(jsonable(_job_or_404(job_key)))


@jobs_api.get("/apps/<app_id>/report")
def app_report_json(app_id):
    report, run = _report_or_404(app_id)
    # "source" names the store's source of the run, not the log's path on this server.
    return jsonify(jsonable({**report, "source": run["source"], "run_id": run["run_id"]}))


def _register_store_errors() -> None:
    """Store failures on these routes answer as the API's do (503, the one error shape)."""
    from jobgauge.errors import StoreError
    from jobgauge.webapp import api as api_module

    jobs_api.register_error_handler(StoreError, api_module._store_down)


_register_store_errors()
