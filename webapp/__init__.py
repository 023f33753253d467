"""The jobgauge web service: a Flask application factory with two blueprints.

``create_app(test_config=None)`` layers configuration as defaults, then the
instance folder's ``config.py``, then ``JOBGAUGE_*`` environment variables,
then ``test_config``.  The HTML form (``form`` blueprint) and the JSON API
(``api`` blueprint, ``/api/v1``) share one :class:`Service` kept in
``app.extensions["jobgauge"]``.
"""

from __future__ import annotations

import os

__all__ = ["create_app"]


def create_app(test_config=None):
    from flask import Flask

    from jobgauge.webapp.service import Service

    app = Flask(__name__, instance_relative_config=True)
    app.config.from_mapping(
        STORE_URL=None,              # None: $JOBGAUGE_STORE or the default SQLite file
        RUNS_DIR=None,               # shipped run tables to train from (default: data/runs)
        MODEL_NAME="default",
        TUNE_TRIALS=60,
        MAX_QUERY_CHARS=100_000,
        SECRET_KEY="jobgauge-local",
    )
    app.config.from_pyfile("config.py", silent=True)
    for key in ("STORE_URL", "RUNS_DIR", "MODEL_NAME", "TUNE_TRIALS", "SECRET_KEY"):
        value = os.environ.get(f"JOBGAUGE_{key}")
        if value is not None:
            app.config[key] = int(value) if key == "TUNE_TRIALS" else value
    if test_config:
        app.config.from_mapping(test_config)

    app.extensions["jobgauge"] = Service(
        store_url=app.config["STORE_URL"], runs_dir=app.config["RUNS_DIR"],
        model_name=app.config["MODEL_NAME"], tune_trials=int(app.config["TUNE_TRIALS"]))

    from jobgauge.webapp.api import api
    from jobgauge.webapp.form import form

    app.register_blueprint(form)
    app.register_blueprint(api, url_prefix="/api/v1")
    return app
