"""What an operator's tools ask the service: liveness, readiness, Prometheus metrics,
and one access-log line per request.

- ``GET /healthz``: the process answers (liveness; no store or model access);
- ``GET /readyz``: the model is loaded and the store answers (readiness; 503 until then);
- ``GET /metrics``: Prometheus text exposition format (``prometheus_client``), one
  registry per app: ``jobgauge_http_requests_total{method,route,status}``,
  ``jobgauge_http_request_duration_seconds{method,route}`` (histogram),
  ``jobgauge_http_errors_total{route,status}`` (4xx and 5xx),
  ``jobgauge_model_info{name,kind,id}``, ``jobgauge_model_age_seconds``,
  ``jobgauge_store_runs`` and ``jobgauge_store_bytes`` (SQLite file size).

Routes are labelled by their URL rule (``/api/v1/apps/<app_id>/remaining``), never
by the path a caller typed, so the number of series stays bounded.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timezone
from pathlib import Path

from flask import Blueprint, Response, current_app, g, jsonify, request

from jobgauge.errors import GaugeError

ops = Blueprint("ops", __name__)
access_log = logging.getLogger("jobgauge.access")
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class ServiceCollector:
    """Model and store gauges, read when Prometheus scrapes (not on every request)."""

    def __init__(self, service):
        self.service = service

    def describe(self):  # registering must not open the store: names are known at scrape
        return []

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        meta = self.service.loaded_model_meta
        info = GaugeMetricFamily("jobgauge_model_info", "The model answering estimates",
                                 labels=["name", "kind", "id"])
        age = GaugeMetricFamily("jobgauge_model_age_seconds",
                                "Seconds since the answering model was trained")
        if meta is not None:
            info.add_metric([str(meta["name"]), str(meta["kind"]), str(meta["id"])], 1)
            created = meta.get("created_at")
            if isinstance(created, datetime):
                if created.tzinfo is None:
                    created = created.replace(tzinfo=timezone.utc)
                age.add_metric([], (datetime.now(timezone.utc) - created).total_seconds())
        yield info
        yield age
        runs = GaugeMetricFamily("jobgauge_store_runs", "Runs in the store")
        size = GaugeMetricFamily("jobgauge_store_bytes", "Size of the SQLite store file")
        try:
            store = self.service.store
            runs.add_metric([], store.count_runs())
            if store.url.startswith("sqlite:///"):
                path = Path(store.url[len("sqlite:///"):])
                if path.is_file():
                    size.add_metric([], path.stat().st_size)
        except GaugeError:
            pass  # an unreadable store shows as missing samples (and /readyz says why)
        yield runs
        yield size


def install(app) -> None:
    """Metrics and access log around every request of ``app``, and the ops routes."""
    from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics

    disable_created_metrics()   # no *_created series: they double the output, tell little
    registry = CollectorRegistry(auto_describe=True)
    requests_total = Counter("jobgauge_http_requests", "HTTP requests answered",
                             ["method", "route", "status"], registry=registry)
    errors_total = Counter("jobgauge_http_errors", "HTTP requests answered with 4xx or 5xx",
                           ["route", "status"], registry=registry)
    latency = Histogram("jobgauge_http_request_duration_seconds",
                        "Time from the request reaching Flask to its answer",
                        ["method", "route"], buckets=LATENCY_BUCKETS, registry=registry)
    registry.register(ServiceCollector(app.extensions["jobgauge"]))
    app.extensions["jobgauge_metrics"] = registry

    @app.before_request
    def _start_clock():
        g.jobgauge_started = time.perf_counter()

    @app.after_request
    def _count(response):
        started = g.get("jobgauge_started")
        elapsed = time.perf_counter() - started if started is not None else 0.0
        route = request.url_rule.rule if request.url_rule is not None else "<unmatched>"
        status = str(response.status_code)
        requests_total.labels(request.method, route, status).inc()
        latency.labels(request.method, route).observe(elapsed)
        if response.status_code >= 400:
            errors_total.labels(route, status).inc()
        access_log.info('%s "%s %s" %s %s %.1fms', request.remote_addr or "-", request.method,
                        request.full_path.rstrip("?")[:300].encode("unicode_escape").decode(),
                        status, response.calculate_content_length() or "-", elapsed * 1000)
        return response

    app.register_blueprint(ops)


@ops.get("/healthz")
def healthz():
    """Liveness: the process answers requests."""
    return jsonify({"status": "ok"})


@ops.get("/readyz")
def readyz():
    """Readiness: the model is loaded and the store answers (503 with the reasons if not)."""
    service = current_app.extensions["jobgauge"]
    problems = []
    meta = service.loaded_model_meta
    if meta is None:
        problems.append("the model is not loaded yet")
    try:
        runs = service.store.count_runs()
    except GaugeError as exc:
        runs = None
        problems.append(f"the store cannot be read: {exc}")
    body = {"ready": not problems, "problems": problems, "store_runs": runs,
            "model": None if meta is None else {"name": meta["name"], "kind": meta["kind"],
                                                "id": meta["id"]}}
    return jsonify(body), 200 if not problems else 503


@ops.get("/metrics")
def metrics():
    """Prometheus text exposition format."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return Response(generate_latest(current_app.extensions["jobgauge_metrics"]),
                    mimetype=CONTENT_TYPE_LATEST.split(";")[0],
                    headers={"Content-Type": CONTENT_TYPE_LATEST})
