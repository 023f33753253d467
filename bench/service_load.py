"""Load benchmark of ``jobgauge serve``: the production server under concurrent estimates.

Starts ``jobgauge serve`` (waitress) on a loopback port with a fresh temporary
store, so the server trains its default model from the shipped runs first, as
a new installation does.  Query plans go to a HiveServer2 address where
nothing listens, so no planning JVM competes for the CPU: the estimates asked
here (TPC-H queries by name) need no plan.  Then, from this process:

1. one client, sequential requests, for ``--single-seconds``: p50/p99;
2. ``--clients`` concurrent clients (one keep-alive connection each) for
   ``--seconds``, over a mix of request shapes (every TPC-H query x three
   instance-type choices x two node ranges), as a form's users ask them:
   status counts, 5xx, p50/p95/p99 and throughput;
3. one client, then the same clients, for ``--cold-seconds`` (one client at most
   10 s) with every request different (a random deadline), so no answer comes from
   the server's answer cache: the cost of a model prediction alone and under load;
4. ``--half-open`` connections that start a request and never finish it; the
   latency of normal requests meanwhile, and how long until the server has
   closed them all (its header timeout, ``--header-timeout``);
5. SIGTERM: the server must drain and exit 0.

    nice -n 10 .venv/bin/python bench/service_load.py            # the full run (~3 min)
    .venv/bin/python bench/service_load.py --seconds 5 --clients 10 --single-seconds 3 \\
        --cold-seconds 3 --model-kind tree --report /tmp/service_load.md   # a smoke run

Writes ``bench/reports/service_load.md`` (or ``--report``).  Targets (issue 15):
0 x 5xx and p99 <= 300 ms at 50 clients on this 2-core machine; normal
requests within 50 ms while 300 connections are half-open, and those dropped
after the header timeout.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from jobgauge.profiler.runners.cluster import free_ports

REPO = Path(__file__).resolve().parent.parent
INSTANCE_CHOICES = (["local[2]"], ["m5.xlarge", "r5.xlarge"], ["local[2]", "m5.xlarge", "c5.large"])
NODE_RANGES = ((1, 4), (1, 16))


def request_shapes() -> list[dict]:
    """The mix of estimate questions: 22 TPC-H queries x 3 instance choices x 2 node ranges."""
    return [{"workload": f"tpch-q{q}", "scale": 1, "instance_types": types,
             "nodes_min": low, "nodes_max": high}
            for q in range(1, 23) for types in INSTANCE_CHOICES for low, high in NODE_RANGES]


class Client:
    """One keep-alive connection; reconnects after a failure."""

    def __init__(self, port: int, timeout: float = 30.0):
        self.port, self.timeout = port, timeout
        self.connection = None

    def post(self, path: str, body: dict) -> int:
        payload = json.dumps(body)
        for attempt in (1, 2):
            if self.connection is None:
                self.connection = http.client.HTTPConnection("127.0.0.1", self.port,
                                                             timeout=self.timeout)
            try:
                self.connection.request("POST", path, body=payload,
                                        headers={"Content-Type": "application/json"})
                response = self.connection.getresponse()
                response.read()
                if response.getheader("Connection", "").lower() == "close":
                    self.close()
                return response.status
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()   # a kept-alive connection the server closed: once more
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def get(self, path: str) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            return response.status
        finally:
            connection.close()

    def close(self):
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, int(round(p / 100 * (len(ordered) - 1)))))
    return ordered[index]


def run_clients(port: int, clients: int, seconds: float, bodies) -> dict:
    """``clients`` threads posting ``bodies()`` for ``seconds``; latencies and statuses."""
    stop_at = time.monotonic() + seconds
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    failures: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(clients + 1)

    def work(seed: int):
        rng = random.Random(seed)
        client = Client(port)
        start.wait()
        mine, codes = [], {}
        while time.monotonic() < stop_at:
            body = bodies(rng)
            began = time.perf_counter()
            try:
                status = client.post("/api/v1/estimate", body)
            except OSError as exc:
                with lock:
                    failures.append(f"{type(exc).__name__}: {exc}")
                client.close()
                continue
            mine.append(time.perf_counter() - began)
            codes[status] = codes.get(status, 0) + 1
        client.close()
        with lock:
            latencies.extend(mine)
            for code, count in codes.items():
                statuses[code] = statuses.get(code, 0) + count

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    began = time.monotonic()
    start.wait()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    return {"clients": clients, "seconds": round(elapsed, 1), "requests": len(latencies),
            "per_second": round(len(latencies) / elapsed, 1), "statuses": statuses,
            "server_errors": sum(n for code, n in statuses.items() if code >= 500),
            "failures": len(failures), "failure_examples": failures[:3],
            "p50_ms": round(percentile(latencies, 50) * 1000, 1),
            "p95_ms": round(percentile(latencies, 95) * 1000, 1),
            "p99_ms": round(percentile(latencies, 99) * 1000, 1),
            "max_ms": round(max(latencies, default=float("nan")) * 1000, 1)}


def half_open(port: int, count: int, header_timeout: float) -> dict:
    """``count`` connections that send part of a request head and stall; normal requests
    meanwhile; seconds until the server has closed every stalled one."""
    stalled = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.sendall(b"POST /api/v1/estimate HTTP/1.1\r\nHost: localhost\r\nContent-Le")
        stalled.append(sock)
    opened = time.monotonic()
    probe = Client(port)
    body = request_shapes()[0]
    probe.post("/api/v1/estimate", body)   # the answer is cached from here on
    latencies = []
    for _ in range(30):
        began = time.perf_counter()
        status = probe.post("/api/v1/estimate", body)
        latencies.append(time.perf_counter() - began)
        assert status == 200, status
    probe.close()
    open_now = list(stalled)
    for sock in open_now:
        sock.setblocking(False)
    deadline = opened + header_timeout + 30
    while open_now and time.monotonic() < deadline:
        still = []
        for sock in open_now:
            try:
                if sock.recv(1) == b"":
                    sock.close()
                    continue
            except BlockingIOError:
                still.append(sock)
                continue
            except OSError:
                sock.close()
                continue
            sock.close()   # the server answered something (an error page) and closed
        open_now = still
        if open_now:
            time.sleep(0.2)
    dropped_after = time.monotonic() - opened
    for sock in open_now:
        sock.close()
    return {"connections": count, "normal_p50_ms": round(percentile(latencies, 50) * 1000, 1),
            "normal_max_ms": round(max(latencies) * 1000, 1),
            "still_open": len(open_now), "all_dropped_after_s": round(dropped_after, 1),
            "header_timeout_s": header_timeout}


def start_server(args, store: Path, log_path: Path):
    port = free_ports(1)[0]
    env = dict(os.environ, JOBGAUGE_HIVE_HOST="127.0.0.1", JOBGAUGE_HIVE_PORT=str(free_ports(1)[0]),
               JOBGAUGE_HEADER_TIMEOUT_S=str(args.header_timeout))
    env.pop("JOBGAUGE_CONFIG", None)
    if args.model_kind:
        env["JOBGAUGE_MODEL_KIND"] = args.model_kind
    command = [sys.executable, "-m", "jobgauge.cli", "--store", str(store), "serve",
               "--port", str(port)]
    if args.threads:
        command += ["--threads", str(args.threads)]
    log = open(log_path, "w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    began = time.monotonic()
    while time.monotonic() - began < args.start_timeout:
        if process.poll() is not None:
            raise SystemExit(f"the server exited {process.returncode}; see {log_path}")
        try:
            if Client(port, timeout=2).get("/readyz") == 200:
                return process, port, round(time.monotonic() - began, 1)
        except OSError:
            pass
        time.sleep(0.5)
    process.kill()
    raise SystemExit(f"the server was not ready after {args.start_timeout} s; see {log_path}")


def write_report(path: Path, args, results: dict) -> None:
    single, load, cold, slow = (results["single"], results["load"], results.get("cold"),
                                results["half_open"])
    alone = results.get("cold_single")
    ok_load = load["server_errors"] == 0 and load["failures"] == 0 and load["p99_ms"] <= 300
    ok_slow = slow["normal_max_ms"] <= 50 and slow["still_open"] == 0
    lines = [
        "# Service load (`bench/service_load.py`)",
        "",
        f"Machine: {os.cpu_count()} cores, {platform.platform()}, Python "
        f"{platform.python_version()}. Server: `jobgauge serve` (waitress, "
        f"{args.threads or 8} threads), fresh SQLite store, model "
        f"`{results['model']}` trained at start in {results['start_s']} s; clients in "
        "the benchmark process (one keep-alive connection each), on the same machine.",
        "",
        f"Command: `{' '.join(results['command'])}`",
        "",
        "| phase | clients | s | requests | req/s | 5xx | failed | p50 ms | p95 ms | p99 ms "
        "| max ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in (("single client", single), ("mixed shapes (cached answers)", load),
                      ("every request new, one client", alone),
                      ("every request new (model predicts)", cold)):
        if row is None:
            continue
        lines.append(f"| {name} | {row['clients']} | {row['seconds']} | {row['requests']} | "
                     f"{row['per_second']} | {row['server_errors']} | {row['failures']} | "
                     f"{row['p50_ms']} | {row['p95_ms']} | {row['p99_ms']} | {row['max_ms']} |")
    lines += [
        "",
        f"Statuses under load: {load['statuses']}"
        + (f"; cold: {cold['statuses']}" if cold else ""),
        "",
        f"Half-open connections: {slow['connections']} connections sent part of a request "
        f"head and stalled; meanwhile normal estimates took p50 {slow['normal_p50_ms']} ms, "
        f"at most {slow['normal_max_ms']} ms. {slow['connections'] - slow['still_open']} "
        f"of them were closed by the server {slow['all_dropped_after_s']} s after they opened "
        f"(header timeout {slow['header_timeout_s']} s, checked every "
        f"{max(1, int(slow['header_timeout_s']) // 4)} s).",
        "",
        f"SIGTERM: exit code {results['exit_code']} after {results['stop_s']} s.",
        "",
        "Targets (issue 15): 0 x 5xx and p99 <= 300 ms at 50 clients, repeated questions "
        "(answered from the cache): "
        f"{'met' if ok_load and load['clients'] >= 50 and load['seconds'] >= 60 else 'not shown by this run' if load['clients'] < 50 or load['seconds'] < 60 else 'NOT met'}"
        + ("" if not cold else
           f"; every question new (the model predicts): p99 {cold['p99_ms']} ms, "
           + ("met" if cold["p99_ms"] <= 300 and cold["server_errors"] == 0 else
              f"NOT met ({cold['p99_ms'] / 300:.2f}x the target)"))
        + f"; half-open connections within 50 ms and dropped: {'met' if ok_slow else 'NOT met'}.",
        "",
        "What an estimate costs: a new question is one model pass for the runtime and its "
        "interval together over the what-if grid"
        + ("" if not alone else
           f" (one client asking new questions: p50 {alone['p50_ms']} ms a request, "
           f"{alone['per_second']} answers a second)")
        + ".  The server's threads share one Python interpreter, which holds the model's "
        "pass, and the 50 client threads of this benchmark run on the same 2 cores; 50 "
        "closed-loop clients wait 50 / throughput seconds on average (Little's law), so the "
        "new-question p99 is bounded by the answers a second one interpreter gives.  "
        "The API keeps each "
        "answer per (model id, validated request) in an LRU cache (`ANSWER_CACHE_SIZE`, "
        "512), so a question asked before costs a dictionary look-up.",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--single-seconds", type=float, default=15)
    parser.add_argument("--cold-seconds", type=float, default=15,
                        help="the every-request-new phase (0: skip)")
    parser.add_argument("--half-open", type=int, default=300)
    parser.add_argument("--header-timeout", type=int, default=10)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--model-kind", default=None,
                        help="model the server trains at start (default: the server's default)")
    parser.add_argument("--start-timeout", type=float, default=900)
    parser.add_argument("--report", type=Path, default=REPO / "bench" / "reports" / "service_load.md")
    args = parser.parse_args(argv)

    shapes = request_shapes()
    with tempfile.TemporaryDirectory(prefix="jobgauge-load-") as folder:
        log_path = Path(folder) / "server.log"
        process, port, start_s = start_server(args, Path(folder) / "store.db", log_path)
        try:
            warm = Client(port)
            for body in shapes:   # every shape answered once, as a form in use has
                warm.post("/api/v1/estimate", body)
            warm.close()
            print(f"server ready after {start_s} s on port {port}", flush=True)
            results = {"start_s": start_s, "model": args.model_kind or "default",
                       "command": ["bench/service_load.py", *(argv or sys.argv[1:])]}
            results["single"] = run_clients(port, 1, args.single_seconds,
                                            lambda rng: rng.choice(shapes))
            print("single", results["single"], flush=True)
            results["load"] = run_clients(port, args.clients, args.seconds,
                                          lambda rng: rng.choice(shapes))
            print("load", results["load"], flush=True)
            if args.cold_seconds > 0:
                def new_question(rng):      # a random deadline: never a cached answer
                    return {**rng.choice(shapes), "deadline_s": round(rng.uniform(1, 1e6), 3)}

                results["cold_single"] = run_clients(port, 1, min(10.0, args.cold_seconds),
                                                     new_question)
                print("cold, one client", results["cold_single"], flush=True)
                results["cold"] = run_clients(port, args.clients, args.cold_seconds,
                                              new_question)
                print("cold", results["cold"], flush=True)
            results["half_open"] = half_open(port, args.half_open, args.header_timeout)
            print("half-open", results["half_open"], flush=True)
            began = time.monotonic()
            process.send_signal(signal.SIGTERM)
            results["exit_code"] = process.wait(timeout=60)
            results["stop_s"] = round(time.monotonic() - began, 1)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        log_text = log_path.read_text()
        if "Traceback" in log_text:
            print(log_text[-3000:], file=sys.stderr)
    write_report(args.report, args, results)
    print(f"wrote {args.report}")
    failed = results["load"]["server_errors"] or results["exit_code"] != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
