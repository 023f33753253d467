"""The jobs pages, the application page, their JSON twins, and History Server sync
inside the web service, on real event logs of the shared corpus.

Each test gets a fresh app on a temporary SQLite store into which
``jobgauge.history_import`` has imported four corpus logs: three runs of one
job (``Spark shell (org.apache.spark.repl.Main)``, Spark 1.2 to 1.4, whose
settings differ in ``spark.eventLog.dir``) and one YARN application of
another job (a Spark 2.x shell whose key is the fingerprint of its SQL plans).
"""

from __future__ import annotations

import http.server
import io
import json
import logging
import socket
import threading
import time
import urllib.parse
import zipfile
from datetime import UTC, datetime

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markupsafe import escape
from schemathesis.checks import (
    not_a_server_error, response_schema_conformance, status_code_conformance,
)

from jobgauge.cli import main
from jobgauge.errors import UsageError
from jobgauge.history_import import import_history
from jobgauge.profiler.readers.sparkrest import SparkRestClient
from jobgauge.store import open_store
from jobgauge.webapp import create_app
from jobgauge.webapp._sync import start_sync, stop_sync
from jobgauge.webapp.jobs import settings_changes

SHELL_JOB = "Spark shell (org.apache.spark.repl.Main)"
SHELL_LOGS = ("local-1422981780767", "local-1426533911241", "local-1430917381534")
YARN_APP = "application_1506645932520_24630151"
YARN_JOB = "Spark shell (sql b0d97d883a)"
EVIL_KEY = "<script>alert('key')</script> nightly"


def _quoted(key: str) -> str:
    return urllib.parse.quote(key, safe="")


def _job_href(client, key: str) -> str:
    """The link the pages draw to a job's page."""
    from flask import url_for

    with client.application.test_request_context():
        return f'href="{url_for("jobs.job_page", job_key=key)}"'


@pytest.fixture
def store_url(tmp_path, corpus_dir):
    url = f"sqlite:///{tmp_path / 'store.db'}"
    logs = corpus_dir / "spark-eventlogs" / "apache-spark"
    report = import_history(open_store(url), [logs / name for name in (*SHELL_LOGS, YARN_APP)],
                            progress=False)
    assert (report.added, report.skipped) == (4, [])
    return url


@pytest.fixture
def client(store_url):
    return create_app({"TESTING": True, "STORE_URL": store_url}).test_client()


# ---------------------------------------------------------------------------- /jobs

def test_jobs_page_lists_every_job_key_with_its_runs(client):
    page = client.get("/jobs")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    for key in (SHELL_JOB, YARN_JOB):
        assert _job_href(client, key) in text
        assert escape(key) in text
    body = client.get("/api/v1/jobs").get_json()
    jobs = {j["job_key"]: j for j in body["jobs"]}
    assert set(jobs) == {SHELL_JOB, YARN_JOB}
    assert jobs[SHELL_JOB]["runs"] == 3 and jobs[YARN_JOB]["runs"] == 1
    assert jobs[SHELL_JOB]["sources"] == ["history"]
    # the median of the three measured runtimes (9.0 s, 34.9 s, 10.5 s)
    assert jobs[SHELL_JOB]["median_runtime_s"] == pytest.approx(10.505, abs=1e-3)
    # most recently run first: the YARN application ran in 2018, the shells in 2015
    assert [j["job_key"] for j in body["jobs"]] == [YARN_JOB, SHELL_JOB]
    assert jobs[YARN_JOB]["last_run_at"].startswith("2018-04-19T23:56")


def test_job_page_shows_runs_settings_changes_and_advice(client):
    body = client.get(f"/api/v1/jobs/{_quoted(SHELL_JOB)}").get_json()
    assert [r["run_id"] for r in body["runs"]] == [
        "local-1422981780767", "local-1426533911241/1", "local-1430917381534"]  # oldest first
    assert [r["index"] for r in body["runs"]] == [1, 2, 3]
    assert all(r["has_report"] and r["runtime_s"] > 0 for r in body["runs"])
    # no node price in an event log: cost in core-hours (local[*] on this machine's cores)
    assert all(r["cost_usd"] is None and r["core_hours"] > 0 for r in body["runs"])
    # run 1 -> 2: only launch settings (ids, ports, hosts) differ; 2 -> 3: the event log dir
    assert len(body["settings_changes"]) == 1
    pair = body["settings_changes"][0]
    assert (pair["from_index"], pair["to_index"]) == (2, 3)
    assert pair["changes"] == [{"key": "spark.eventLog.dir", "before": None, "after":
                                "/Users/irashid/github/kraps/core/src/test/resources/spark-events"}]
    # the advice is the report of the latest run
    assert body["report_of"] == {"run_id": "local-1430917381534", "app_id": "local-1430917381534"}
    severities = {h["name"]: h["severity"] for h in body["heuristics"]}
    assert set(severities) >= {"task_skew", "spill", "gc_share", "idle_executors",
                               "executor_memory", "partitions", "driver_bound"}
    assert severities["task_skew"] == "severe"
    assert body["recommended_conf"]["spark.sql.adaptive.skewJoin.enabled"] == "true"

    page = client.get(f"/jobs/{_quoted(SHELL_JOB)}")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert "spark.eventLog.dir" in text and "not set" in text
    assert "spark.driver.port" not in text           # a launch setting, not a change
    assert 'class="sev sev-severe">severe<' in text and "task_skew" in text
    assert "--conf spark.sql.adaptive.skewJoin.enabled=true" in text
    assert text.count('href="/apps/local-14') == 3 + 1   # each run, and the advice's source
    assert "data:image/png;base64," in text              # the runtime and cost plot


def test_settings_changes_leave_out_launch_settings():
    before = {"spark.app.id": "local-1", "spark.driver.port": "4001",
              "spark.executor.memory": "2g", "spark.sql.shuffle.partitions": "200"}
    after = {"spark.app.id": "local-2", "spark.driver.port": "4002",
             "spark.executor.memory": "4g", "spark.serializer": "kryo"}
    assert settings_changes(before, after) == [
        {"key": "spark.executor.memory", "before": "2g", "after": "4g"},
        {"key": "spark.serializer", "before": None, "after": "kryo"},
        {"key": "spark.sql.shuffle.partitions", "before": "200", "after": None}]


# ---------------------------------------------------------------------------- /apps

def test_application_page_shows_the_report(client):
    report = client.get(f"/api/v1/apps/{YARN_APP}/report").get_json()
    assert report["app_id"] == YARN_APP and report["job_key"] == YARN_JOB
    assert report["run_id"] == YARN_APP and report["source"] == "history"
    assert report["runtime_s"] == pytest.approx(106.4)
    assert report["driver_s"] + report["executor_s"] == pytest.approx(106.4, abs=0.01)
    assert 0 < report["critical_path_s"] <= report["runtime_s"]
    assert report["wasted_core_s"] > 0
    rows = {p["executors"]: p for p in report["what_if"]}
    own = rows[report["executors"]]
    assert own["share"] == 1.0 and own["runtime_s"] == pytest.approx(106.4)  # the run itself
    assert rows[1]["runtime_s"] > rows[2]["runtime_s"] > own["runtime_s"]     # fewer: slower
    severities = {h["name"]: h["severity"] for h in report["heuristics"]}
    assert severities["driver_bound"] == "critical" and severities["idle_executors"] == "severe"

    page = client.get(f"/apps/{YARN_APP}")
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert escape(YARN_JOB) in text and "106.4 s" in text
    assert "3.1 min" in text                     # the what-if row at one executor (188.1 s)
    assert 'class="this-run"' in text and "data:image/png;base64," in text
    assert 'class="sev sev-critical">critical<' in text and "driver_bound" in text
    for key, value in report["recommended_conf"].items():
        assert f"--conf {key}={value}" in text
    assert _job_href(client, YARN_JOB) in text


@pytest.mark.parametrize("path", ["/apps/application_0_0", "/jobs/no%20such%20job",
                                  "/api/v1/apps/application_0_0/report",
                                  "/api/v1/jobs/no%20such%20job"])
def test_unknown_jobs_and_applications_are_404(client, path):
    answer = client.get(path)
    assert answer.status_code == 404
    if path.startswith("/api/"):
        body = answer.get_json()
        assert body["error"] == "Not Found" and "no " in body["detail"]["description"]
    else:
        assert answer.mimetype == "text/html" and "404 Not Found" in answer.get_data(as_text=True)


def test_a_mapreduce_job_has_a_job_page_but_no_application_report(store_url, corpus_dir, client):
    jhist = corpus_dir / "hadoop-jhist" / "apache-hadoop"
    report = import_history(open_store(store_url), [jhist], progress=False)
    assert report.added >= 1
    run = report.runs[0]
    job = client.get(f"/api/v1/jobs/{_quoted(run['job_key'])}").get_json()
    assert job["runs"][0]["has_report"] is False and job["heuristics"] == []
    assert client.get(f"/api/v1/apps/{run['run_id']}/report").status_code == 404


def test_a_job_page_shows_each_runs_load_at_its_start_and_says_busy(store_url, client):
    """Runs measured here by ``jobgauge run`` carry their guard's reading; the page lists
    it and marks a busy start, the run its answers are not calibrated to."""
    store = open_store(store_url)
    for n, (load, quiet) in enumerate(((0.12, True), (1.73, False), (None, None)), start=1):
        store.add_run({
            "source": "local", "run_id": f"own-{n}", "workload": "own query", "framework":
            "spark", "datasize": "sf1", "instance_type": "local[2]", "instance_count": 1,
            "vcpus": 2, "memory_gib": 1.0, "runtime_s": 2.0 * n, "completed": True,
            "status": "succeeded", "started_at": datetime(2026, 11, 28, 6, n, tzinfo=UTC),
            "load_at_start": load, "quiet_start": quiet}, {})
    body = client.get(f"/api/v1/jobs/{_quoted('own query')}").get_json()
    assert [(r["load_at_start"], r["quiet_start"]) for r in body["runs"]] == \
        [(0.12, True), (1.73, False), (None, None)]
    text = client.get(f"/jobs/{_quoted('own query')}").get_data(as_text=True)
    assert "Load at start" in text
    assert ">0.12</td>" in text and '>1.73 <span class="busy">busy</span></td>' in text
    assert "its answers are calibrated to those" in text
    # a job without a busy run says nothing of it
    text = client.get(f"/jobs/{_quoted(SHELL_JOB)}").get_data(as_text=True)
    assert "Load at start" in text and "busy" not in text


def test_job_keys_are_escaped(store_url, client):
    open_store(store_url).add_run({
        "source": "api", "run_id": "evil-1", "workload": EVIL_KEY, "framework": "spark",
        "datasize": "", "instance_type": "m5.xlarge", "instance_count": 2, "vcpus": 4,
        "memory_gib": 16, "hourly_price_usd": 0.192, "runtime_s": 900.0, "completed": True,
        "status": "succeeded", "started_at": datetime(2024, 5, 1, tzinfo=UTC)},
        {"spark.executor.memory": "<b>4g</b>"})
    for path in ("/jobs", f"/jobs/{_quoted(EVIL_KEY)}"):
        text = client.get(path).get_data(as_text=True)
        assert "<script>alert" not in text and "<b>4g" not in text
        assert escape(EVIL_KEY) in text
    body = client.get(f"/api/v1/jobs/{_quoted(EVIL_KEY)}").get_json()
    assert body["runs"][0]["cost_usd"] == pytest.approx(900 * 2 * 0.192 / 3600)


@pytest.mark.parametrize("path", ["/jobs", "/jobs/{job_key}", "/apps/{app_id}/report"])
@settings(max_examples=10, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_jobs_api_conforms_to_its_openapi_document(store_url, path, data):
    app = create_app({"TESTING": True, "STORE_URL": store_url})
    schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app)
    case = data.draw(schema[path]["GET"].as_strategy())
    case.call_and_validate(checks=[not_a_server_error, status_code_conformance,
                                   response_schema_conformance])


# ---------------------------------------------------------------------------- sync

class _HistoryServer(http.server.ThreadingHTTPServer):
    """A History Server's REST answers for the logs in ``apps`` (id -> log path):
    ``/applications`` lists them finished, ``/logs`` hands out each one zipped,
    and ``forbidden`` ids answer 403 there, as a server with ACLs does."""

    def __init__(self, apps: dict, forbidden=()):
        self.apps, self.forbidden, self.asked = apps, set(forbidden), []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(handler):  # noqa: N805 - the server is ``self`` here
                path = urllib.parse.urlsplit(handler.path).path
                self.asked.append(path)
                if path == "/api/v1/applications":
                    body = json.dumps([{"id": app_id, "name": app_id, "attempts": [{
                        "completed": True, "endTimeEpoch": 1_500_000_000_000 + n}]}
                        for n, app_id in enumerate(self.apps)]).encode()
                    return handler._answer(200, body, "application/json")
                parts = path.split("/")
                if len(parts) == 6 and parts[-1] == "logs" and parts[4] in self.apps:
                    if parts[4] in self.forbidden:
                        return handler._answer(403, b"forbidden", "text/plain")
                    buffer = io.BytesIO()
                    with zipfile.ZipFile(buffer, "w") as archive:
                        archive.write(self.apps[parts[4]], parts[4])
                    return handler._answer(200, buffer.getvalue(), "application/zip")
                return handler._answer(404, b"no such page", "text/plain")

            def _answer(handler, status, body, kind):
                handler.send_response(status)
                handler.send_header("Content-Type", kind)
                handler.send_header("Content-Length", str(len(body)))
                handler.end_headers()
                handler.wfile.write(body)

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()


def test_event_logs_behind_acls_read_as_not_served(corpus_dir):
    log = corpus_dir / "spark-eventlogs" / "apache-spark" / "local-1430917381534"
    server = _HistoryServer({"local-1430917381534": log, "app-locked": log},
                            forbidden={"app-locked"})
    try:
        client = SparkRestClient(server.url + "/api/v1")
        assert client.event_logs("app-locked") is None
        with zipfile.ZipFile(io.BytesIO(client.event_logs("local-1430917381534"))) as archive:
            assert archive.namelist() == ["local-1430917381534"]
    finally:
        server.shutdown()


def test_serve_syncs_in_a_background_thread_and_stops(tmp_path, corpus_dir, caplog):
    log = corpus_dir / "spark-eventlogs" / "apache-spark" / "local-1430917381534"
    server = _HistoryServer({"local-1430917381534": log})
    url = f"sqlite:///{tmp_path / 'store.db'}"
    app = create_app({"TESTING": True, "STORE_URL": url, "SYNC": (server.url,),
                      "SYNC_EVERY": "1h"})
    client = app.test_client()
    caplog.set_level(logging.INFO, logger="jobgauge.sync")
    try:
        worker = start_sync(app)
        assert start_sync(app) is worker                  # one per process
        deadline = time.monotonic() + 60
        while worker.rounds == 0 and time.monotonic() < deadline:
            assert client.get("/jobs").status_code == 200  # requests answer meanwhile
            time.sleep(0.1)
        jobs = client.get("/api/v1/jobs").get_json()["jobs"]
        assert [(j["job_key"], j["runs"]) for j in jobs] == [(SHELL_JOB, 1)]
        assert "syncs from" in client.get("/jobs").get_data(as_text=True)
        assert worker.problem is None
        started = time.monotonic()
        stop_sync(app)                                    # wakes it from its 1 h wait
        assert not worker.is_alive() and time.monotonic() - started < 5
    finally:
        stop_sync(app)
        server.shutdown()
    assert "/api/v1/applications/local-1430917381534/logs" in server.asked
    assert any("imported 1 run(s)" in r.getMessage() for r in caplog.records)


def test_sync_of_a_server_that_is_down_retries_without_blocking(tmp_path, caplog):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    app = create_app({"TESTING": True, "STORE_URL": f"sqlite:///{tmp_path / 's.db'}",
                      "SYNC": (f"http://127.0.0.1:{port}",), "SYNC_EVERY": "10m"})
    caplog.set_level(logging.INFO, logger="jobgauge.sync")
    worker = start_sync(app)
    try:
        deadline = time.monotonic() + 30
        while worker.rounds == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert worker.is_alive()
        assert any("retrying in 5 s" in r.getMessage() for r in caplog.records)
        assert "cannot reach the Spark History Server" in worker.problem
        text = app.test_client().get("/jobs").get_data(as_text=True)
        assert "cannot reach the Spark History Server" in text   # the jobs page says why
    finally:
        stop_sync(app)
    assert not worker.is_alive()


@pytest.mark.parametrize("options, message", [
    (["--sync", "ftp://history:18080"], "sync must name History Server URLs"),
    (["--sync", "http://history:18080", "--sync-every", "0s"], "sync_every must be a positive"),
    (["--sync", "http://history:18080", "--sync-every", "soon"], "sync_every"),
])
def test_serve_refuses_bad_sync_options(tmp_path, capsys, options, message):
    code = main(["--store", f"sqlite:///{tmp_path / 's.db'}", "serve", *options])
    assert code == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_sync_settings_come_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("JOBGAUGE_SYNC", "http://a:18080,http://b:18080")
    monkeypatch.setenv("JOBGAUGE_SYNC_EVERY", "30s")
    app = create_app({"TESTING": True, "STORE_URL": f"sqlite:///{tmp_path / 's.db'}"})
    assert app.config["SYNC"] == ("http://a:18080", "http://b:18080")
    assert app.config["SYNC_EVERY"] == "30s"
    with pytest.raises(UsageError, match="sync_every"):
        create_app({"TESTING": True, "STORE_URL": f"sqlite:///{tmp_path / 's.db'}",
                    "SYNC_EVERY": "-1m"})
