"""The JSON API (``/api/v1``).

Every 4xx answer has one shape, ``{"error": ..., "detail": {...}}``, produced
by the handlers registered here (jobgauge's own errors) and in
:func:`jobgauge.webapp.register_error_pages` (HTTP errors such as 404, 405 and
413, for routes under ``/api/`` too).  There is no catch-all handler: a bug
is a 500 that Flask logs with its traceback.

Access (:mod:`jobgauge.webapp._access`): reads are open; adding runs and tuning
beyond ``OPEN_TUNE_TRIALS`` trials need ``Authorization: Bearer <token>``
(401 without it, 403 on a server with no token configured); ``?url=`` may only
name an allowed Spark UI or History Server (403 otherwise).  Bodies are capped
in size (``MAX_CONTENT_LENGTH``, 413) and JSON nesting depth (400).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections import OrderedDict

from flask import Blueprint, Response, current_app, jsonify, request
from werkzeug.exceptions import UnsupportedMediaType

from jobgauge.errors import ModelError, ParseError, StoreError, TuneError, UsageError
from jobgauge.webapp._access import check_spark_url, require_token
from jobgauge.webapp.requests import (
    InvalidField, load_json, parse_estimate, parse_run, parse_run_query, parse_tune,
)
from jobgauge.webapp.service import DuplicateRun, UnknownApplication, jsonable

log = logging.getLogger(__name__)

api = Blueprint("api", __name__)


def _service():
    return current_app.extensions["jobgauge"]


def error_body(error: str, detail: dict | None = None, status: int = 400):
    return jsonify({"error": error, "detail": detail or {}}), status


def _json_body() -> dict:
    if not request.is_json:
        raise UnsupportedMediaType("send the body as JSON with Content-Type: application/json")
    # Parsed here, not by request.get_json: its depth is capped before anything walks it
    # (MAX_CONTENT_LENGTH has already capped its size: a longer body is a 413).
    body = load_json(request.get_data(cache=True))
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


@api.errorhandler(StoreError)
def _store_down(exc):  # the store's own words stay in the log
    log.error("run store error: %s", exc)
    return error_body("the run store cannot be read or written now; try again later",
                      {}, 503)


@api.errorhandler(ModelError)
@api.errorhandler(TuneError)
def _no_answer(exc):
    return error_body(str(exc), {}, 422)


def _estimate_body(result: dict) -> dict:
    body = {k: v for k, v in result.items() if k != "dag"}
    if result.get("dag") is not None:
        body["dag"] = result["dag"].to_dict()
    return jsonable(body)


class AnswerCache:
    """Estimate answers (their JSON bytes) per model, validated request and the store's
    runs (``Store.runs_mark``: their count and newest id), least recently used first
    out.  An answer depends only on the three: the job's own runs calibrate it, and
    without them the other jobs' runs on each asked instance type do
    (``models._default.option_calibrations``), so any run added or deleted asks again.
    A repeated question costs a dictionary look-up and one query instead of a model
    prediction.  (Until session 50 the key held the count of the job's own runs only,
    and an answer calibrated by other jobs' runs stayed as it was when more came in.)"""

    def __init__(self, size: int):
        self.size = size
        self._answers: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(model_id, parsed, store_runs=(0, None)) -> str:
        return json.dumps([model_id, dataclasses.asdict(parsed), list(store_runs)],
                          sort_keys=True, default=str)

    def get(self, key):
        with self._lock:
            answer = self._answers.get(key)
            if answer is not None:
                self._answers.move_to_end(key)
            return answer

    def put(self, key, answer: bytes) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._answers[key] = answer
            self._answers.move_to_end(key)
            while len(self._answers) > self.size:
                self._answers.popitem(last=False)


def _answer_cache() -> AnswerCache:
    extensions = current_app.extensions
    if "jobgauge_answers" not in extensions:
        extensions["jobgauge_answers"] = AnswerCache(int(current_app.config["ANSWER_CACHE_SIZE"]))
    return extensions["jobgauge_answers"]


@api.post("/estimate")
def estimate():
    """Predicted runtime and cost per option, the recommended option, the job class."""
    parsed = parse_estimate(_json_body(), **_parse_kwargs())
    service = _service()
    _, meta = service.ensure_model()
    cache = _answer_cache()
    key = cache.key(meta["id"], parsed, service.store.runs_mark())
    answer = cache.get(key)
    if answer is None:
        result = service.estimate(parsed)
        answer = json.dumps(_estimate_body(result), separators=(",", ":")).encode()
        if result.get("plan_error") is None:  # a plan source that is down may come back
            cache.put(key, answer)
    return Response(answer, mimetype="application/json")


@api.post("/tune")
def tune():
    """The recommended option with model-tuned Spark SQL settings."""
    kwargs = _parse_kwargs()
    parsed, trials, seed = parse_tune(_json_body(), **kwargs)
    limit = int(current_app.config["MAX_TUNE_TRIALS"])
    if trials is not None and trials > limit:
        raise InvalidField("trials", f"must be at most {limit} on this server; got {trials}")
    open_trials = int(current_app.config["OPEN_TUNE_TRIALS"])
    if trials is not None and trials > open_trials:
        require_token(f"tuning with more than {open_trials} trials")
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
    """Record a measured run under the source the caller's token maps to."""
    source = require_token("adding runs")
    body = _json_body()
    given = body.get("source")
    if given not in (None, "", source):
        raise InvalidField("source", f"is set by your API token: runs you post are recorded "
                                     f"as source {source!r}; leave source out")
    row = parse_run({**body, "source": source})
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


def _read_application(url: str, app_id: str | None, read):
    """``read(url)`` for an allowed ``url``.  For a network address every failure reads
    the same, without the network's own words ("Connection refused", a timeout, an
    HTTP status): they would map the operator's network for the caller."""
    url = check_spark_url(url)
    try:
        return read(url)
    except UnknownApplication as exc:
        if "://" not in url:
            raise
        log.info("reading %s failed: %s", url, exc)
        held = "" if app_id is None else f", or it does not hold application {app_id[:100]!r}"
        raise UnknownApplication(f"cannot reach the Spark UI or History Server at "
                                 f"{url[:200]}{held}") from None


@api.get("/apps")
def apps():
    return jsonify({"applications": _read_application(
        request.args.get("url", ""), None, _service().applications)})


@api.get("/apps/<app_id>/remaining")
def remaining(app_id):
    """Progress and seconds left of a running Spark application (REST API or event log)."""
    return jsonify(jsonable(_read_application(
        request.args.get("url", ""), app_id, lambda url: _service().remaining(app_id, url))))


@api.get("/openapi.json")
def openapi():
    from jobgauge.webapp._openapi import openapi_document

    service = _service()
    return jsonify(openapi_document(
        workloads=service.known_workloads(), instance_types=list(service.instance_options()),
        max_query_chars=int(current_app.config["MAX_QUERY_CHARS"]),
        max_trials=int(current_app.config["MAX_TUNE_TRIALS"])))
