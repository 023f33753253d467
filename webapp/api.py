"""The JSON API (``/api/v1``).

Every 4xx answer has one shape, ``{"error": ..., "detail": {...}}``, produced
by the handlers registered here (jobgauge's own errors) and in
:func:`jobgauge.webapp.register_error_pages` (HTTP errors such as 404, 405 and
413, for routes under ``/api/`` too).  There is no catch-all handler: a bug
is a 500 that Flask logs with its traceback.
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request
from werkzeug.exceptions import UnsupportedMediaType

from jobgauge.errors import ModelError, ParseError, TuneError, UsageError
from jobgauge.webapp.requests import (
    InvalidField, parse_estimate, parse_run, parse_run_query, parse_tune,
)
from jobgauge.webapp.service import DuplicateRun, UnknownApplication, jsonable

api = Blueprint("api", __name__)


def _service():
    return current_app.extensions["jobgauge"]


def error_body(error: str, detail: dict | None = None, status: int = 400):
    return jsonify({"error": error, "detail": detail or {}}), status


def _json_body() -> dict:
    if not request.is_json:
        raise UnsupportedMediaType("send the body as JSON with Content-Type: application/json")
    body = request.get_json(silent=True)
    if body is None:
        raise InvalidField("body", "is not valid JSON")
    if not isinstance(body, dict):
        raise InvalidField("body", "must be a JSON object")
    return body


def _parse_kwargs() -> dict:
    service = _service()
    return {"known_workloads": service.known_workloads(),
            "catalog_names": service.instance_options(),
            "max_query_chars": int(current_app.config["MAX_QUERY_CHARS"]), "strict": True}


@api.errorhandler(InvalidField)
def _invalid_field(exc):
    return error_body(f"{exc.field}: {exc.message}", {"field": exc.field})


@api.errorhandler(ParseError)
def _parse_error(exc):
    detail = {k: getattr(exc, k) for k in ("line", "column", "expected", "snippet")
              if getattr(exc, k) is not None}
    return error_body(str(exc), detail)


@api.errorhandler(DuplicateRun)
def _duplicate(exc):
    return error_body(str(exc), {}, 409)


@api.errorhandler(UnknownApplication)
def _unknown_app(exc):
    return error_body(str(exc), {}, 404)


@api.errorhandler(UsageError)
def _usage(exc):
    return error_body(str(exc))


@api.errorhandler(ModelError)
@api.errorhandler(TuneError)
def _no_answer(exc):
    return error_body(str(exc), {}, 422)


def _estimate_body(result: dict) -> dict:
    body = {k: v for k, v in result.items() if k != "dag"}
    if result.get("dag") is not None:
        body["dag"] = result["dag"].to_dict()
    return jsonable(body)


@api.post("/estimate")
def estimate():
    """Predicted runtime and cost per option, the recommended option, the job class."""
    parsed = parse_estimate(_json_body(), **_parse_kwargs())
    return jsonify(_estimate_body(_service().estimate(parsed)))


@api.post("/tune")
def tune():
    """The recommended option with model-tuned Spark SQL settings."""
    kwargs = _parse_kwargs()
    parsed, trials, seed = parse_tune(_json_body(), **kwargs)
    limit = int(current_app.config["MAX_TUNE_TRIALS"])
    if trials is not None and trials > limit:
        raise InvalidField("trials", f"must be at most {limit} on this server; got {trials}")
    service = _service()
    estimate = service.estimate(parsed)
    body = service.tune(parsed, trials=trials, seed=seed, estimate=estimate)
    body["estimate"] = _estimate_body(estimate)
    return jsonify(jsonable(body))


@api.get("/runs")
def runs():
    query = parse_run_query(request.args.to_dict())
    rows, total = _service().runs(limit=query["limit"], offset=query["offset"],
                                  filters=query["filters"])
    return jsonify({"runs": rows, "total": total, "limit": query["limit"],
                    "offset": query["offset"]})


@api.post("/runs")
def add_run():
    row = parse_run(_json_body())
    return jsonify(_service().add_run(row)), 201


@api.get("/models")
def models():
    return jsonify({"models": _service().models()})


@api.get("/instance-types")
def instance_types():
    return jsonify({"instance_types": [
        {"instance_type": o.instance_type, "vcpus": o.vcpus, "memory_gib": o.memory_gib,
         "hourly_price_usd": o.hourly_price_usd, "local": o.local, "source": o.source}
        for o in _service().instance_options().values()]})


@api.get("/apps")
def apps():
    return jsonify({"applications": _service().applications(request.args.get("url", ""))})


@api.get("/apps/<app_id>/remaining")
def remaining(app_id):
    """Progress and seconds left of a running Spark application (REST API or event log)."""
    return jsonify(jsonable(_service().remaining(app_id, request.args.get("url", ""))))


@api.get("/openapi.json")
def openapi():
    from jobgauge.webapp._openapi import openapi_document

    service = _service()
    return jsonify(openapi_document(
        workloads=service.known_workloads(), instance_types=list(service.instance_options()),
        max_query_chars=int(current_app.config["MAX_QUERY_CHARS"]),
        max_trials=int(current_app.config["MAX_TUNE_TRIALS"])))
