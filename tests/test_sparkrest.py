"""The one Spark REST client, against a real local HTTP server.

The server (``http.server`` on 127.0.0.1, in a thread) answers with JSON
recorded from Spark 4.3's History Server over two corpus logs
(``tests/golden/sparkrest/``): ``/applications``, one application's
``/jobs``, ``/stages`` and ``/allexecutors``, and the 24 SQL executions of
``local-1596020211915``, served in ``offset``/``length`` pages as Spark
does.  A few extra paths misbehave on purpose: one answers too slowly, one
answers HTML, one answers HTTP 500.  The client against the real History
Server is in ``test_profiler_history.py``.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from datetime import date, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from jobgauge.profiler.readers.live import EventLogTail, LiveSourceError, read_rest_snapshot
from jobgauge.profiler.readers.sparkrest import (SparkRestClient, SparkRestError, SparkUrlError,
                                         parse_url)

from jobgauge.errors import GaugeError, ParseError, UsageError

from conftest import _free_port

RECORDED = Path(__file__).parent / "golden" / "sparkrest"
APP = "local-1642039451826"
SQL_APP = "local-1596020211915"


class _Recorded(BaseHTTPRequestHandler):
    """Serves the recorded answers; ``server.seen`` collects (path, query) asked."""

    def log_message(self, *args):
        pass

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 - the http.server name
        parts = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(parts.query))
        self.server.seen.append((parts.path, query))
        path = parts.path
        if path.startswith("/slow/"):
            time.sleep(3)
            path = path[len("/slow"):]
        if path.startswith("/html/"):
            return self._send(200, b"<html><body>Spark Jobs</body></html>", "text/html")
        if path.startswith("/broken/"):
            return self._send(500, b"<html><h2>HTTP ERROR 500</h2><p>Server Error</p></html>",
                              "text/html")
        if path == f"/api/v1/applications/{SQL_APP}/sql":
            executions = json.loads((RECORDED / f"{SQL_APP}-sql.json").read_text())
            offset, length = int(query.get("offset", 0)), int(query.get("length", 20))
            return self._send(200, json.dumps(executions[offset:offset + length]).encode())
        name = {"/api/v1/applications": "applications.json",
                f"/api/v1/applications/{APP}": f"{APP}.json"}.get(path)
        prefix = f"/api/v1/applications/{APP}/"
        if name is None and path.startswith(prefix):
            name = f"{APP}-{path[len(prefix):]}.json"
        if name is None or not (RECORDED / name).exists():
            return self._send(404, f"unknown app: {path.rsplit('/', 1)[-1]}".encode(),
                              "text/plain")
        return self._send(200, (RECORDED / name).read_bytes())


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recorded)
    httpd.seen = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _recorded(name: str):
    return json.loads((RECORDED / name).read_text())


# ------------------------------------------------------------------ addresses

@pytest.mark.parametrize("url, expected", [
    ("http://[::1]:18080", ("http://[::1]:18080/api/v1", None, None)),
    ("http://[::1]:18080/api/v1/applications/app-1/2/jobs",
     ("http://[::1]:18080/api/v1", "app-1", "2")),
    ("driver:4040", ("http://driver:4040/api/v1", None, None)),
    ("HTTPS://gw/proxy/spark/history/application_1_2/1/jobs/",
     ("https://gw/proxy/spark/api/v1", "application_1_2", "1")),
    ("http://h:18080/api/v1/applications/app%201/sql", ("http://h:18080/api/v1", "app 1", None)),
])
def test_urls_name_the_api_root_and_the_application(url, expected):
    assert parse_url(url) == expected


@pytest.mark.parametrize("url, reason", [
    ("http://%5B::1", "bad host or port"),
    ("http://[::1", r"bad host \(Invalid IPv6 URL\)"),
    ("http://[not:an:ip]:4040", "bad (host|IPv6 address)"),
    ("http://h:abc", "bad host or port"),
    ("http://:4040", "no host name"),
    ("http://bad host:4040", "bad host name"),
    ("ftp://host/api/v1/applications/x", "the scheme must be http or https"),
])
def test_bad_urls_are_clear_usage_errors(url, reason):
    with pytest.raises(SparkUrlError, match=r"not an http\(s\) URL of a Spark UI or History "
                                            rf"Server: {reason}") as caught:
        parse_url(url)
    assert isinstance(caught.value, UsageError) and isinstance(caught.value, ParseError)
    with pytest.raises(SparkUrlError, match="URL names application 'a' but 'b' was asked for"):
        parse_url("http://h:18080/api/v1/applications/a", "b")


# ------------------------------------------------------------------ endpoints

def test_endpoints_answer_the_recorded_json(server):
    _, base = server
    client = SparkRestClient.from_url(f"{base}/history/{APP}/jobs/", timeout_s=5)
    assert client.applications() == _recorded("applications.json")
    assert client.application(APP)["attempts"][0]["appSparkVersion"] == "3.3.0-SNAPSHOT"
    assert client.jobs(APP) == _recorded(f"{APP}-jobs.json")
    assert [j["jobId"] for j in client.jobs(APP)] == [5, 4, 3, 2, 1, 0]
    assert client.stages(APP) == _recorded(f"{APP}-stages.json")
    assert client.executors(APP)[0]["id"] == "driver"
    assert client.environment(APP) == {}          # not recorded: the server answers 404
    assert client.task_summary(APP, None, 0, 0, quantiles="0.5") is None


def test_application_filters_are_the_documented_query_parameters(server):
    httpd, base = server
    client = SparkRestClient(f"{base}/api/v1", timeout_s=5)
    del httpd.seen[:]
    client.applications(status="completed", min_end_date=date(2021, 1, 1), limit=5)
    client.applications(min_date="2020-07-29", max_end_date=datetime(2022, 1, 13, 2, 5, 36, 564000))
    assert [query for _, query in httpd.seen] == [
        {"status": "completed", "limit": "5", "minEndDate": "2021-01-01"},
        {"minDate": "2020-07-29", "maxEndDate": "2022-01-13T02:05:36.564GMT"}]
    for bad, message in [({"status": "done"}, "status must be 'completed' or 'running'"),
                         ({"limit": 0}, "limit must be an int >= 1"),
                         ({"min_end_date": "yesterday"}, "a History Server date is YYYY-MM-DD")]:
        with pytest.raises(UsageError, match=message):
            client.applications(**bad)
    with pytest.raises(UsageError, match="timeout_s must be > 0"):
        SparkRestClient(f"{base}/api/v1", timeout_s=0)


@pytest.mark.parametrize("page_size, requests", [(5, 5), (8, 4), (500, 1)])
def test_sql_executions_are_read_page_by_page(server, page_size, requests):
    httpd, base = server
    client = SparkRestClient(f"{base}/api/v1", timeout_s=5)
    del httpd.seen[:]
    executions = client.sql_executions(SQL_APP, page_size=page_size, plan_description=False)
    assert executions == _recorded(f"{SQL_APP}-sql.json")
    assert [e["id"] for e in executions] == list(range(24))
    assert [int(q["offset"]) for _, q in httpd.seen] == [page_size * i for i in range(requests)]
    assert {q["length"] for _, q in httpd.seen} == {str(page_size)}
    assert client.sql_executions(APP) is None                 # no /sql endpoint there


# ------------------------------------------------------------------ errors

def test_refused_connection_is_a_short_clear_error():
    port = _free_port()                                        # nothing listens there
    client = SparkRestClient.from_url(f"http://127.0.0.1:{port}", timeout_s=2, server="Spark UI",
                                      hint="a running application's UI")
    with pytest.raises(SparkRestError, match=rf"^http://127\.0\.0\.1:{port}/api/v1/applications: "
                                             rf"cannot reach the Spark UI at http://127\.0\.0\.1:"
                                             rf"{port}/api/v1: connection refused \(expected a "
                                             r"running application's UI\)$") as caught:
        client.applications()
    assert isinstance(caught.value, ConnectionError) and isinstance(caught.value, GaugeError)
    assert caught.value.status is None and "Errno" not in str(caught.value)
    assert LiveSourceError is SparkRestError


def test_a_server_that_does_not_answer_in_time_is_a_timeout(server):
    _, base = server
    client = SparkRestClient(f"{base}/slow/api/v1", timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(SparkRestError, match=r"/slow/api/v1/applications: cannot reach the Spark "
                                             r"UI or History Server at .*: no answer within 0\.5 s"):
        client.applications()
    assert time.monotonic() - started < 2.5


def test_answers_that_are_not_the_api_are_clear_errors(server):
    _, base = server
    with pytest.raises(SparkRestError, match=r"/html/api/v1/applications: the Spark UI or History "
                                             r"Server did not answer JSON .*'<html><body>Spark"):
        SparkRestClient(f"{base}/html/api/v1").applications()
    with pytest.raises(SparkRestError, match=r"HTTP 500 from the Spark UI or History Server: "
                                             r"HTTP ERROR 500 Server Error$") as caught:
        SparkRestClient(f"{base}/broken/api/v1").applications()
    assert caught.value.status == 500
    client = SparkRestClient(f"{base}/api/v1", server="Spark History Server")
    with pytest.raises(SparkRestError, match=r"applications/nope: HTTP 404 from the Spark History "
                                             r"Server: unknown app: nope") as caught:
        client.application("nope")
    assert caught.value.status == 404
    with pytest.raises(SparkRestError, match=r"unexpected answer .*expected a JSON list"):
        client._list(f"/applications/{APP}")


# ------------------------------------------------------------------ through the live reader

def test_rest_snapshot_of_the_recorded_app_agrees_with_its_event_log(server, corpus_dir):
    _, base = server
    rest = read_rest_snapshot(f"{base}/api/v1/applications/{APP}", timeout_s=5)
    tail = EventLogTail(corpus_dir / "spark-eventlogs" / "apache-spark" / APP)
    tail.finish()
    log = tail.snapshot()
    assert rest.source == "rest" and rest.status == log.status == "succeeded"
    assert (rest.app_id, rest.app_name, rest.spark_version) == \
        (log.app_id, log.app_name, log.spark_version)
    assert rest.counts() == log.counts()
    assert rest.started_s == log.started_s and rest.ended_s == log.ended_s
    with pytest.raises(UsageError, match=r"lists 2 applications \(0 running\); name one"):
        read_rest_snapshot(base, timeout_s=5)
