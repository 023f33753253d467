"""The jobgauge web service: a Flask application factory with two blueprints.

``create_app(test_config=None)`` layers configuration as defaults, then the
instance folder's ``config.py``, then ``JOBGAUGE_*`` environment variables,
then ``test_config``.  The HTML pages (``form`` blueprint: the estimate form
and the running-jobs page) and the JSON API (``api`` blueprint, ``/api/v1``,
described by ``/api/v1/openapi.json``) share one :class:`Service` kept in
``app.extensions["jobgauge"]``.

Settings (environment variable ``JOBGAUGE_<NAME>``):

=================  ===========================================================
STORE_URL          run store (None: $JOBGAUGE_STORE or the default SQLite file)
RUNS_DIR           run tables to train the first model from (default data/runs)
PROFILES_DIR       profiles of those runs, for job classes (default data/profiles)
MODEL_NAME         name of the model in the store (default "default")
MODEL_KIND         registry name of a model trained at first start (default: models' default)
TUNE_TRIALS        model-guided trials per tuning (default 60)
MAX_TUNE_TRIALS    most trials an API call may ask for (default 500)
MAX_QUERY_CHARS    longest pasted query (default 100000)
MAX_CONTENT_LENGTH largest request body in bytes (default 1 MiB)
HIVE_HOST/PORT     a HiveServer2 to draw plans with (default: a local Spark session)
PLAN_DATA_ROOT     where the local plan session keeps TPC-H SF 0.01 data (default var/plan-data)
CATALOG_PATH       an instance catalog file added to the tuner's (CSV or JSON)
EVENTLOG_DIRS      folders whose event logs the running-jobs page may read
                   (os.pathsep-separated in the environment; default /tmp/spark-events)
WARM_UP            load the model and start the plan session in the background at start
=================  ===========================================================
"""

from __future__ import annotations

import os

__all__ = ["create_app"]

_INTEGER_SETTINGS = ("TUNE_TRIALS", "MAX_TUNE_TRIALS", "MAX_QUERY_CHARS", "MAX_CONTENT_LENGTH",
                     "HIVE_PORT")
_SETTINGS = ("STORE_URL", "RUNS_DIR", "PROFILES_DIR", "MODEL_NAME", "MODEL_KIND", "SECRET_KEY",
             "HIVE_HOST", "PLAN_DATA_ROOT", "CATALOG_PATH", "EVENTLOG_DIRS", "WARM_UP",
             *_INTEGER_SETTINGS)


def create_app(test_config=None):
    from flask import Flask
    from jobgauge.webapp.service import Service

    from jobgauge.errors import UsageError

    app = Flask(__name__, instance_relative_config=True)
    app.config.from_mapping(
        STORE_URL=None,
        RUNS_DIR=None,
        PROFILES_DIR=None,
        MODEL_NAME="default",
        MODEL_KIND=None,
        TUNE_TRIALS=60,
        MAX_TUNE_TRIALS=500,
        MAX_QUERY_CHARS=100_000,
        MAX_CONTENT_LENGTH=1024 * 1024,
        HIVE_HOST=None,
        HIVE_PORT=10000,
        PLAN_DATA_ROOT=None,
        CATALOG_PATH=None,
        EVENTLOG_DIRS=("/tmp/spark-events",),
        WARM_UP=False,
        SECRET_KEY="jobgauge-local",
    )
    app.config.from_pyfile("config.py", silent=True)
    for key in _SETTINGS:
        value = os.environ.get(f"JOBGAUGE_{key}")
        if value is None:
            continue
        if key in _INTEGER_SETTINGS:
            try:
                value = int(value)
            except ValueError:
                raise UsageError(f"JOBGAUGE_{key} must be a whole number; got {value!r}") from None
        elif key == "EVENTLOG_DIRS":
            value = tuple(p for p in value.split(os.pathsep) if p)
        elif key == "WARM_UP":
            value = value.strip().lower() in ("1", "true", "yes", "on")
        app.config[key] = value
    if test_config:
        app.config.from_mapping(test_config)

    service = Service(
        store_url=app.config["STORE_URL"], runs_dir=app.config["RUNS_DIR"],
        profiles_dir=app.config["PROFILES_DIR"], model_name=app.config["MODEL_NAME"],
        model_kind=app.config["MODEL_KIND"], tune_trials=int(app.config["TUNE_TRIALS"]),
        plan_data_root=app.config["PLAN_DATA_ROOT"], hive_host=app.config["HIVE_HOST"],
        hive_port=app.config["HIVE_PORT"], catalog_path=app.config["CATALOG_PATH"],
        eventlog_dirs=app.config["EVENTLOG_DIRS"])
    app.extensions["jobgauge"] = service
    if app.config["CATALOG_PATH"]:
        service.instance_options()   # a broken catalog file fails here, not on a request

    from jobgauge.webapp.api import api
    from jobgauge.webapp.form import form

    app.register_blueprint(form)
    app.register_blueprint(api, url_prefix="/api/v1")
    register_error_pages(app)
    if app.config["WARM_UP"]:
        app.extensions["jobgauge_warm_up"] = service.warm_up()
    return app


def register_error_pages(app) -> None:
    """HTTP errors (404, 405, 413, ...) as the API's JSON shape under ``/api/``,
    else as a page in the site's layout.  A 500 keeps its traceback in the log."""
    from flask import jsonify, render_template, request
    from werkzeug.exceptions import HTTPException, InternalServerError

    def wants_json() -> bool:
        return request.path.startswith("/api/")

    @app.errorhandler(HTTPException)
    def http_error(exc):
        description = exc.description or ""
        if wants_json():
            detail = {"description": description}
            if exc.code == 405 and getattr(exc, "valid_methods", None):
                detail["allowed"] = sorted(exc.valid_methods)
            response = jsonify({"error": exc.name, "detail": detail})
            response.status_code = exc.code or 500
            if exc.code == 405 and getattr(exc, "valid_methods", None):
                response.headers["Allow"] = ", ".join(sorted(exc.valid_methods))
            return response
        return render_template("error.html", code=exc.code, name=exc.name,
                               description=description), exc.code

    @app.errorhandler(InternalServerError)
    def server_error(exc):  # Flask has logged the original exception with its traceback
        if wants_json():
            return jsonify({"error": "Internal Server Error",
                            "detail": {"description": "the server failed; see its log"}}), 500
        return render_template("error.html", code=500, name="Internal Server Error",
                               description="jobgauge failed on this request; the server log "
                                           "has the details."), 500
