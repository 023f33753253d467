"""Fuzzing the web service: Hypothesis over every request validator, and
Schemathesis over the whole OpenAPI document (every operation, positive and
negative, with the API token, plus a stateful run of linked operations).

Validators may raise only jobgauge's own errors (GaugeError); the API may
answer only documented statuses, never a 5xx.  ``?url=`` can only name a
closed loopback port (the allow-list), so no generated request reaches a
real service.  Budgets (``max_examples``) keep the file under a minute of CPU.
"""

from __future__ import annotations

import re

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import (
    not_a_server_error, response_schema_conformance, status_code_conformance,
)

from jobgauge.errors import GaugeError
from jobgauge.webapp import create_app
from jobgauge.webapp.requests import (
    ESTIMATE_FIELDS, RUN_FIELDS, RUN_FILTERS, TUNE_FIELDS, load_json, parse_estimate,
    parse_run, parse_run_query, parse_tune,
)
from jobgauge.webapp.settings import is_loopback, parse_bind

from conftest import _free_port, draw_request, over_api_operations

TOKEN = "fuzz-token-0123456789abcdef"
WORKLOADS = [f"tpch-q{n}" for n in range(1, 23)] + ["wordcount", "terasort", "join"]
CATALOG = {"local[1]": 1, "local[2]": 1, "m5.xlarge": 1}
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]
FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


# ------------------------------------------------------------------ Hypothesis: validators

# Any text, lone surrogates and other scripts' digits included.
TEXT = st.text(st.characters(exclude_categories=()), max_size=30)
DIGITS = st.text(st.characters(categories=["Nd", "No"]), min_size=1, max_size=4)
NUMBER_TEXT = st.one_of(DIGITS, st.from_regex(r"-?[0-9]{1,30}(\.[0-9]*)?([eE][+-]?[0-9]{1,4})?",
                                              fullmatch=True),
                        st.sampled_from(["nan", "inf", "-inf", "1e400", "99999999999999999999g",
                                         "10m", "-1", "0x10", "1_000"]))
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=2 ** 63),
                   st.floats(allow_nan=True, allow_infinity=True), TEXT, NUMBER_TEXT)
JSON = st.recursive(SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)), max_leaves=8)


def _fields(names) -> st.SearchStrategy:
    """Objects whose keys are mostly the validator's own fields."""
    return st.dictionaries(st.one_of(st.sampled_from(names), TEXT), JSON, max_size=8)


def _only_our_errors(call, *args, **kwargs):
    try:
        call(*args, **kwargs)
    except GaugeError:
        pass


@FUZZ
@given(data=st.one_of(_fields(ESTIMATE_FIELDS), JSON), strict=st.booleans())
def test_parse_estimate_raises_only_our_errors(data, strict):
    _only_our_errors(parse_estimate, data, known_workloads=WORKLOADS, catalog_names=CATALOG,
                     max_query_chars=500, strict=strict)


@FUZZ
@given(data=_fields(TUNE_FIELDS))
def test_parse_tune_raises_only_our_errors(data):
    _only_our_errors(parse_tune, data, known_workloads=WORKLOADS, catalog_names=CATALOG,
                     strict=True)


@FUZZ
@given(data=st.one_of(_fields(RUN_FIELDS + ("config",)), JSON))
def test_parse_run_raises_only_our_errors(data):
    _only_our_errors(parse_run, data)


@FUZZ
@given(data=st.dictionaries(st.sampled_from(("limit", "offset") + RUN_FILTERS),
                            st.one_of(TEXT, NUMBER_TEXT), max_size=4))
def test_parse_run_query_raises_only_our_errors(data):
    _only_our_errors(parse_run_query, data)


@FUZZ
@given(text=st.one_of(st.binary(max_size=200), TEXT,
                      st.integers(0, 5000).map(lambda n: "[" * n + "]" * n)))
def test_load_json_raises_only_our_errors(text):
    _only_our_errors(load_json, text)


@FUZZ
@given(text=st.one_of(TEXT, st.from_regex(r"\[?[0-9a-z:.]{0,20}\]?(:[0-9]{0,6})?",
                                          fullmatch=True)))
def test_bind_and_loopback_raise_only_our_errors(text):
    _only_our_errors(parse_bind, text)
    assert is_loopback(text) in (True, False)


# ------------------------------------------------------------------ Schemathesis: the API

@pytest.fixture(scope="module")
def fuzz_app(tmp_path_factory, web_training_runs):
    store = tmp_path_factory.mktemp("fuzz") / "store.db"
    port = _free_port()
    return create_app({
        "TESTING": True, "STORE_URL": str(store), "MODEL_KIND": "tree",
        "RUNS_DIR": str(web_training_runs), "TUNE_TRIALS": 2, "OPEN_TUNE_TRIALS": 2,
        "MAX_TUNE_TRIALS": 3, "MAX_QUERY_CHARS": 2000, "HIVE_HOST": "127.0.0.1",
        "HIVE_PORT": _free_port(), "EVENTLOG_DIRS": (), "API_TOKEN": TOKEN,
        "SPARK_UI_ALLOWLIST": (f"127.0.0.1:{port}",)})


@pytest.fixture(scope="module")
def fuzz_schema(fuzz_app):
    return schemathesis.openapi.from_wsgi("/api/v1/openapi.json", fuzz_app)


def _document_operations() -> tuple[list, set]:
    """Every (method, path) of the document, and those without any input that could be
    invalid (no negative cases exist for them)."""
    from jobgauge.webapp._openapi import openapi_document

    document = openapi_document(workloads=WORKLOADS, instance_types=list(CATALOG),
                                max_query_chars=2000, max_trials=3)
    operations, without_input = [], set()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            operations.append((method.upper(), path))
            # an input that can be invalid: a body or a query parameter (a path segment
            # cannot be left empty, so a path parameter alone has no invalid form)
            if "requestBody" not in operation and not any(
                    parameter["in"] != "path" for parameter in operation.get("parameters", [])):
                without_input.add((method.upper(), path))
    return operations, without_input


OPERATIONS, WITHOUT_INPUT = _document_operations()
CASES = [(m, p, GenerationMode.POSITIVE) for m, p in OPERATIONS] + \
    [(m, p, GenerationMode.NEGATIVE) for m, p in OPERATIONS if (m, p) not in WITHOUT_INPUT]
SERVER_ERRORS = []


@over_api_operations(CASES, max_examples=40)
def test_every_operation_of_the_document(fuzz_schema, method, path, mode, data):
    case = draw_request(fuzz_schema, method, path, mode, data)
    response = case.call_and_validate(checks=CHECKS,
                                      headers={"Authorization": f"Bearer {TOKEN}"})
    if response.status_code >= 500:
        SERVER_ERRORS.append((method, path, response.status_code))
    assert response.status_code < 500


def test_the_document_covers_every_api_route(fuzz_app, fuzz_schema):
    documented = {(op.ok().method.upper(), op.ok().path)
                  for op in fuzz_schema.get_all_operations()}
    routes = {(method, re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule.removeprefix("/api/v1")))
              for rule in fuzz_app.url_map.iter_rules() if rule.rule.startswith("/api/v1")
              for method in rule.methods - {"HEAD", "OPTIONS"}}
    documented.add(("GET", "/openapi.json"))   # schemathesis leaves the document itself out
    assert routes == documented == set(OPERATIONS)
    assert {("POST", "/runs"), ("GET", "/apps/{app_id}/remaining")} <= routes


def test_linked_run_operations_statefully(fuzz_app, fuzz_schema):
    """Add runs, then list them by what the answer said (the document's links)."""
    base = fuzz_schema.as_state_machine()
    store = fuzz_app.extensions["jobgauge"].store

    class RunWorkflow(base):
        def setup(self):   # each sequence starts from a store without runs (the model stays)
            with store.transaction() as connection:
                for table in (store.settings, store.profiles, store.dags, store.runs):
                    connection.execute(table.delete())

        def get_call_kwargs(self, case):
            return {"headers": {"Authorization": f"Bearer {TOKEN}"}}

        def validate_response(self, response, case, **kwargs):
            case.validate_response(response, checks=CHECKS)

    RunWorkflow.run(settings=settings(max_examples=20, stateful_step_count=5, deadline=None,
                                      derandomize=True, database=None,
                                      suppress_health_check=list(HealthCheck)))
