"""The JSON API (``/api/v1``): one error shape, ``{"error": ..., "detail": ...}``."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request
from werkzeug.exceptions import HTTPException

from jobgauge.errors import GaugeError
from jobgauge.webapp.requests import InvalidField, parse_estimate

api = Blueprint("api", __name__)


def _service():
    return current_app.extensions["jobgauge"]


def _json_body() -> dict:
    body = request.get_json(silent=True)
    if body is None:
        raise InvalidField("body", "must be a JSON object sent with Content-Type: application/json")
    return body


@api.errorhandler(GaugeError)
def _gauge_error(exc):
    status = 400
    detail = {"field": exc.field} if isinstance(exc, InvalidField) else {}
    return jsonify({"error": str(exc), "detail": detail}), status


@api.errorhandler(HTTPException)
def _http_error(exc):
    return jsonify({"error": exc.name, "detail": {"description": exc.description}}), exc.code


@api.post("/estimate")
def estimate():
    """Predicted runtime (with its interval) and the tuned configuration."""
    parsed = parse_estimate(_json_body())
    service = _service()
    result = service.estimate(**parsed)
    body = {"workload": parsed["workload"], "datasize": parsed["datasize"],
            "master": parsed["master"], "config": parsed["config"],
            "predicted_runtime_s": result["runtime_s"], "predicted_low_s": result["low_s"],
            "predicted_high_s": result["high_s"], "model": result["model"]}
    if request.args.get("tune", "1") != "0":
        body["tuned"] = service.tune(workload=parsed["workload"], datasize=parsed["datasize"])
    return jsonify(body)
