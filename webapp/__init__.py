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
RUNS_DIR           run tables to train the first model from (default: jobgauge.data's runs),
                   with Scout's and C3O's where $JOBGAUGE_SHARED_DATASETS names their
                   folder; its background retraining learns from the same tables
PROFILES_DIR       profiles of those runs, for job classes and the first model (default:
                   jobgauge.data's); kept on retraining as RUNS_DIR is
MODEL_NAME         name of the model in the store (default "default")
MODEL_KIND         registry name of a model trained at first start (default: models' default)
TUNE_TRIALS        model-guided trials per tuning (default 60)
MAX_TUNE_TRIALS    most trials an API call may ask for (default 500)
MAX_QUERY_CHARS    longest pasted query (default 100000)
MAX_CONTENT_LENGTH largest request body in bytes (default 1 MiB)
HIVE_HOST/PORT     a HiveServer2 to draw plans with (default: a local Spark session)
PLAN_DATA_ROOT     where the local plan session keeps TPC-H SF 0.01 data (default ~/.local/share/jobgauge/plan-data)
CATALOG_PATH       an instance catalog file added to the tuner's (CSV or JSON)
EVENTLOG_DIRS      folders whose event logs the running-jobs page may read
                   (os.pathsep-separated in the environment; default /tmp/spark-events)
WARM_UP            load the model and start the plan session in the background at start
API_TOKEN          bearer token of write endpoints (and API_TOKEN_SOURCE, API_TOKENS)
ALLOWED_HOSTS      Host header names answered (comma-separated; default loopback names)
SPARK_UI_ALLOWLIST hosts, host:port or networks ?url= may read (default loopback)
HISTORY_SERVER     a History Server URL (allowed, and the default ?url=)
BIND               host:port of ``jobgauge serve`` (default 127.0.0.1:5000)
SYNC / SYNC_EVERY  History Servers ``jobgauge serve`` keeps importing from, and how often
                   (default none, 10m; a background thread: :mod:`jobgauge.webapp._sync`)
=================  ===========================================================

More settings (server threads, timeouts, trial caps) and the settings file:
:mod:`jobgauge.webapp.settings`.
"""

from __future__ import annotations

import os

__all__ = ["create_app"]


def create_app(test_config=None, *, settings_file=None):
    """A new app: settings are :data:`jobgauge.webapp.settings.DEFAULTS`, then the instance
    folder's ``config.py``, then the TOML ``settings_file`` (default ``$JOBGAUGE_CONFIG``),
    then ``JOBGAUGE_*`` environment variables, then ``test_config``."""
    from flask import Flask
    from jobgauge.webapp.service import Service
    from jobgauge.webapp.settings import (
        DEFAULTS, check_settings, settings_from_environment, settings_from_file,
    )

    app = Flask(__name__, instance_relative_config=True)
    app.config.from_mapping(DEFAULTS)
    app.config.from_pyfile("config.py", silent=True)
    settings_file = settings_file or os.environ.get("JOBGAUGE_CONFIG")
    if settings_file:
        app.config.from_mapping(settings_from_file(settings_file))
    app.config.from_mapping(settings_from_environment())
    if test_config:
        app.config.from_mapping(test_config)
    check_settings(app.config)

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

    from jobgauge.webapp import _ops

    from jobgauge.webapp.jobs import jobs, jobs_api

    app.register_blueprint(form)
    app.register_blueprint(api, url_prefix="/api/v1")
    app.register_blueprint(jobs)                            # /jobs, /apps/<app id>
    app.register_blueprint(jobs_api, url_prefix="/api/v1")  # their JSON twins
    _ops.install(app)
    from jobgauge.webapp._access import check_host

    app.before_request(check_host)   # a Host header not in ALLOWED_HOSTS is a 400
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
            for name, value in exc.get_headers():   # WWW-Authenticate of a 401, ...
                if name.lower() != "content-type":
                    response.headers.setdefault(name, value)
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
