"""The JSON API against its own OpenAPI document, with schemathesis.

Schemathesis reads ``/api/v1/openapi.json`` from a fresh Flask app (WSGI, no
network) and sends generated requests to each operation: valid ones
(positive mode) and invalid ones (negative mode).  Every answer must not be a
server error, must use a documented status code and must match the
documented schema (errors included: ``{"error", "detail"}``).

(Schemathesis' own ``from_fixture`` integration reads a pytest attribute that
pytest 9 removed, so the cases are drawn with Hypothesis' ``data()`` inside an
ordinary parametrized test; it runs the same checks.)

The two operations that reach out to a Spark UI (``/apps``,
``/apps/{app_id}/remaining``) are left out: generated URLs would make the
test depend on what answers on the network; test_webapp.py and
test_browser.py test them against real event logs and a real Spark driver.
Query plans come from a HiveServer2 address where nothing listens, so a
generated query never starts a JVM; the API must then still answer, with
``plan_error`` saying why there is no DAG.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import schemathesis
from schemathesis import GenerationMode
from schemathesis.checks import (
    not_a_server_error, response_schema_conformance, status_code_conformance,
)

from jobgauge.webapp import create_app

from conftest import _free_port, draw_request, over_api_operations

REPO = Path(__file__).resolve().parent.parent
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]
OPERATIONS = [("POST", "/estimate"), ("POST", "/tune"), ("GET", "/runs"), ("POST", "/runs"),
              ("GET", "/models"), ("GET", "/instance-types"), ("GET", "/openapi.json")]




@pytest.fixture(scope="module")
def training_runs(web_training_runs):
    return web_training_runs


@pytest.fixture
def api_app(tmp_path, training_runs):
    return create_app({"TESTING": True, "STORE_URL": str(tmp_path / "store.db"),
                       "MODEL_KIND": "tree", "RUNS_DIR": str(training_runs), "TUNE_TRIALS": 3, "MAX_TUNE_TRIALS": 4,
                       "MAX_QUERY_CHARS": 2000, "HIVE_HOST": "127.0.0.1",
                       "HIVE_PORT": _free_port(), "EVENTLOG_DIRS": ()})


@pytest.fixture
def api_schema(api_app):
    return schemathesis.openapi.from_wsgi("/api/v1/openapi.json", api_app)


WITH_INPUT = {("POST", "/estimate"), ("POST", "/tune"), ("GET", "/runs"), ("POST", "/runs")}
CASES = [(m, p, GenerationMode.POSITIVE) for m, p in OPERATIONS] + \
    [(m, p, GenerationMode.NEGATIVE) for m, p in OPERATIONS if (m, p) in WITH_INPUT]


@over_api_operations(CASES, max_examples=15)
def test_api_conforms_to_its_openapi_document(api_schema, method, path, mode, data):
    case = draw_request(api_schema, method, path, mode, data)
    case.call_and_validate(checks=CHECKS)


def test_the_document_covers_every_operation(api_schema):
    operations = {(op.ok().method.upper(), op.ok().path) for op in api_schema.get_all_operations()}
    assert set(OPERATIONS) - {("GET", "/openapi.json")} | {
        ("GET", "/apps"), ("GET", "/apps/{app_id}/remaining")} <= operations
    assert api_schema["/openapi.json"]["GET"] is not None
