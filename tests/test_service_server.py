"""``jobgauge serve`` as an operator runs it: a real process on a loopback port.

The server trains a small tree model from real measured runs at start, plans
on a HiveServer2 address where nothing listens (no JVM), and closes silent
connections after 2 s (``JOBGAUGE_HEADER_TIMEOUT_S``).
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from conftest import _free_port


def _get(port, path, *, method="GET", body=None, timeout=10.0):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        connection.request(method, path, body=None if body is None else json.dumps(body),
                           headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.fixture
def server(tmp_path, web_training_runs):
    port = _free_port()
    env = dict(os.environ, JOBGAUGE_RUNS_DIR=str(web_training_runs), JOBGAUGE_MODEL_KIND="tree",
               JOBGAUGE_HIVE_HOST="127.0.0.1", JOBGAUGE_HIVE_PORT=str(_free_port()),
               JOBGAUGE_HEADER_TIMEOUT_S="2", JOBGAUGE_SERVER_THREADS="4")
    env.pop("JOBGAUGE_API_TOKEN", None)
    env.pop("JOBGAUGE_CONFIG", None)
    log = open(tmp_path / "server.log", "w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "jobgauge.cli", "--store", str(tmp_path / "store.db"), "serve",
         "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            pytest.fail(f"serve exited {process.returncode}: {log.read()}")
        try:
            if _get(port, "/readyz", timeout=1)[0] == 200:
                break
        except OSError:
            pass
        time.sleep(0.3)
    else:
        process.kill()
        pytest.fail("serve did not become ready in 120 s")
    yield process, port, log
    if process.poll() is None:
        process.kill()
        process.wait()
    log.close()


def _log_text(log) -> str:
    log.flush()
    log.seek(0)
    return log.read()


def test_serve_answers_logs_counts_and_stops_on_sigterm(server):
    process, port, log = server
    status, body = _get(port, "/api/v1/estimate", method="POST",
                        body={"workload": "tpch-q3", "instance_types": ["m5.xlarge"]})
    assert status == 200 and json.loads(body)["recommended"]["instance_type"] == "m5.xlarge"
    assert _get(port, "/healthz")[0] == 200
    status, metrics = _get(port, "/metrics")
    assert status == 200 and b'route="/api/v1/estimate",status="200"} 1.0' in metrics, metrics
    assert _get(port, "/", method="GET")[0] == 200
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0
    text = _log_text(log)
    assert "waitress" in text and '"POST /api/v1/estimate" 200' in text, text
    assert "finishing the requests in flight" in text and text.rstrip().endswith("stopped"), text
    assert "Traceback" not in text and "development server" not in text, text


def test_half_open_connections_neither_delay_requests_nor_stay(server):
    _, port, _ = server
    stalled = []
    for _ in range(300):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"POST /api/v1/estimate HTTP/1.1\r\nHost: localhost\r\nContent-Le")
        stalled.append(sock)
    _get(port, "/healthz")   # the first request after the burst may queue behind accepts
    times = []
    for _ in range(10):
        started = time.perf_counter()
        assert _get(port, "/healthz")[0] == 200
        times.append(time.perf_counter() - started)
    assert sorted(times)[len(times) // 2] < 0.05, times
    time.sleep(2 + 1.5)   # the header timeout, and one clean-up round
    closed = 0
    for sock in stalled:
        sock.settimeout(0.5)
        try:
            closed += sock.recv(1) == b""
        except (TimeoutError, ConnectionResetError):
            closed += isinstance(sys.exc_info()[1], ConnectionResetError)
        sock.close()
    assert closed == 300


def test_serve_refuses_a_port_in_use(tmp_path, web_training_runs):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = dict(os.environ, JOBGAUGE_RUNS_DIR=str(web_training_runs),
                   JOBGAUGE_MODEL_KIND="tree", JOBGAUGE_HIVE_HOST="127.0.0.1",
                   JOBGAUGE_HIVE_PORT=str(_free_port()))
        result = subprocess.run(
            [sys.executable, "-m", "jobgauge.cli", "--store", str(tmp_path / "s.db"), "serve",
             "--port", str(port)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("jobgauge: error: cannot listen")
    assert "Traceback" not in result.stderr
