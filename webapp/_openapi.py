"""The OpenAPI 3 document of the JSON API (served at ``/api/v1/openapi.json``).

Built per application, so enumerations (workloads, instance types) and limits
(query length, tuning trials) are the ones that server really accepts.
"""

from __future__ import annotations

from jobgauge.knobs import knob
from jobgauge.models._default import HISTORY_REACH
from jobgauge.runtable import PUBLIC_SOURCES
from jobgauge.units import MAX_SCALE
from jobgauge.webapp.requests import (
    AQE_CHOICES, DEFAULT_SIZE, HIBENCH_SIZES, MAX_INSTANCE_TYPES, MAX_NODES, RUN_FILTERS,
    RUN_LIMITS, SQL_WORKLOAD,
)


def _nullable(schema: dict) -> dict:
    return {**schema, "nullable": True}


NUMBER = {"type": "number"}
#: What ``answered_from_table`` means, for an option and for the recommended one.
TABLE_NOTE = (f"the public run table ({', '.join(PUBLIC_SOURCES)}) whose runs of a job of "
              "this name answer it: its own program of that name on its clusters, not the one "
              "jobgauge runs; null where jobgauge's runs and yours answer it")
_PARTITIONS = knob("spark.sql.shuffle.partitions").valid_range()   # from the knob table
# What a pasted query must start with (ECMA regex, so no inline flags).
QUERY_PATTERN = (r"^\s*\(*\s*([Ss][Ee][Ll][Ee][Cc][Tt]|[Ww][Ii][Tt][Hh]|[Ff][Rr][Oo][Mm]|"
                 r"[Ii][Nn][Ss][Ee][Rr][Tt]|[Vv][Aa][Ll][Uu][Ee][Ss]|[Tt][Aa][Bb][Ll][Ee])\s")
ERROR = {
    "type": "object", "required": ["error", "detail"],
    "properties": {
        "error": {"type": "string", "description": "what went wrong, in one line"},
        "detail": {"type": "object", "additionalProperties": True,
                   "description": "``field`` names the request field at fault, when there is one"},
    },
}


def _error_responses(*codes) -> dict:
    words = {400: "The request is malformed or a field holds a value that cannot be used.",
             401: "The operation needs 'Authorization: Bearer <API token>'.",
             403: "Not allowed here: the server has no API token configured, or the "
                  "address is not on its allow-list.",
             503: "The run store cannot be read or written now.",
             404: "No such resource (route, application).",
             405: "The method is not allowed on this route.",
             409: "The resource already exists.",
             413: "The request body is too large.",
             415: "The body is not JSON.",
             422: "The request is valid but no answer can be given (for example no model "
                  "can predict it)."}
    return {str(code): {"description": words[code],
                        "content": {"application/json": {"schema": {
                            "$ref": "#/components/schemas/Error"}}}} for code in codes}


def _ref(name: str) -> dict:
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}


def json_body(name: str) -> dict:
    return {"required": True, "content": _ref(name)}


def ok(name: str, words: str = "OK", code: str = "200") -> dict:
    return {code: {"description": words, "content": _ref(name)}}


def openapi_document(*, workloads, instance_types, max_query_chars: int, max_trials: int,
                     server_url: str = "/api/v1") -> dict:
    estimate_properties = {
        "workload": {"type": "string", "enum": [*workloads, SQL_WORKLOAD],
                     "description": "a TPC-H query (tpch-q1..tpch-q22), a HiBench workload, or "
                                    "'sql' for the query in the sql field"},
        "query": {"type": "integer", "minimum": 1, "maximum": 22,
                  "description": "TPC-H query number (instead of workload)"},
        "sql": {"type": "string", "maxLength": max_query_chars, "pattern": QUERY_PATTERN,
                "description": "one HiveQL or Spark SQL query (SELECT, WITH, FROM, INSERT, "
                               "VALUES or TABLE; no ';' between statements) over the TPC-H or "
                               "HiBench tables"},
        "scale": {"type": "number", "exclusiveMinimum": True, "minimum": 0,
                  "maximum": MAX_SCALE,
                  "default": 1, "description": "TPC-H scale factor (about GB of raw data); "
                                             "TPC-H queries and pasted SQL only (400 for "
                                             "another workload)"},
        "size": {"type": "string", "enum": list(HIBENCH_SIZES), "default": DEFAULT_SIZE,
                 "description": "HiBench data size; HiBench workloads only (400 for a "
                                "TPC-H query, pasted SQL or a job of the store; 400 for "
                                "a size the model has not measured for the workload: ask "
                                "by input_gb instead). With input_gb and no size, the "
                                "question is its input size"},
        "input_gb": {"type": "number", "exclusiveMinimum": True, "minimum": 0,
                     "maximum": 1e7, "description": "input data size in GB (optional)"},
        "instance_types": {"type": "array", "minItems": 1, "maxItems": MAX_INSTANCE_TYPES,
                           "items": {"type": "string", "enum": list(instance_types)},
                           "default": ["local[2]"]},
        "nodes_min": {"type": "integer", "minimum": 1, "maximum": MAX_NODES, "default": 1},
        "nodes_max": {"type": "integer", "minimum": 1, "maximum": MAX_NODES, "default": 8,
                      "description": "at least nodes_min"},
        "deadline_s": {"type": "number", "exclusiveMinimum": True, "minimum": 0,
                       "description": "the job must finish within this many seconds"},
        "budget_usd": {"type": "number", "exclusiveMinimum": True, "minimum": 0,
                       "description": "a run may cost at most this many US dollars"},
        "shuffle_partitions": {"type": "integer", "minimum": _PARTITIONS[0],
                               "maximum": _PARTITIONS[1]},
        "adaptive": {"type": "string", "enum": list(AQE_CHOICES)},
        "broadcast_threshold": {"type": "string", "pattern": r"^(-1|\d{1,12}[kmgKMG]?)$",
                                "description": "bytes, a size such as 10m, or -1 (off)"},
        "config": {"type": "object",
                   "description": "other settings; every name starts with 'spark.'",
                   "additionalProperties": {"type": "string"}},
        "include_dag": {"type": "boolean", "default": False,
                        "description": "also return the query DAG (a pasted query always has one)"},
        "explain": {"type": "boolean", "default": False,
                    "description": "also return where the recommended answer's time goes, "
                                   "stage by stage (explanation)"},
    }
    # Exactly one way to name the job: a workload, a TPC-H query number, or a query text.
    job_choice = {"oneOf": [
        {"required": ["workload"], "properties": {"workload": {"not": {"enum": [SQL_WORKLOAD]}}},
         "not": {"anyOf": [{"required": ["query"]}, {"required": ["sql"]}]}},
        {"required": ["query"], "not": {"anyOf": [{"required": ["workload"]},
                                                  {"required": ["sql"]}]}},
        {"required": ["sql"], "properties": {"workload": {"enum": [SQL_WORKLOAD]}},
         "not": {"required": ["query"]}},
    ]}
    tune_properties = {**estimate_properties,
                       "trials": {"type": "integer", "minimum": 1, "maximum": max_trials},
                       "seed": {"type": "integer", "minimum": 0, "maximum": 2 ** 31 - 1}}
    option = {
        "type": "object",
        "required": ["instance_type", "instance_count", "runtime_s", "low_s", "high_s"],
        "properties": {
            "instance_type": {"type": "string"}, "instance_count": {"type": "integer"},
            "vcpus": NUMBER, "memory_gib": NUMBER,
            "hourly_price_usd": _nullable(NUMBER), "runtime_s": NUMBER, "low_s": NUMBER,
            "high_s": NUMBER, "cost_usd": _nullable(NUMBER), "cost_low_usd": _nullable(NUMBER),
            "cost_high_usd": _nullable(NUMBER), "meets_deadline": _nullable({"type": "boolean"}),
            "within_budget": _nullable({"type": "boolean"}),
            "seen_in_training": _nullable({"type": "boolean"}),
            "outside_measured": {"type": "boolean", "description":
                                 "far outside the sizes, cores and instance types the model "
                                 "was trained on"},
            "measured_note": _nullable({"type": "string", "description":
                                        "why it is far outside, naming the nearest measured "
                                        "size"}),
            "measured_failures": _nullable({"type": "string", "description":
                                            "this configuration failed in measured runs: how "
                                            "often (the runtime is how long it would take if "
                                            "it finished); or, never measured, that it is "
                                            "at risk of failing and why (a broadcast join side "
                                            "too large for the driver's memory)"}),
            "answered_from_table": _nullable({"type": "string", "description": TABLE_NOTE}),
            "read_floor_s": _nullable({**NUMBER, "description":
                                       "the least time its nodes take to read the input "
                                       "that does not fit in their memory at their "
                                       "catalog network_gbps; no answer is below it"}),
        },
    }
    dag = {"type": "object", "description": "node-link JSON of the query DAG (QueryDag.to_dict)",
           "required": ["nodes", "edges"],
           "properties": {"nodes": {"type": "array", "items": {"type": "object"}},
                          "edges": {"type": "array", "items": {"type": "object"}}}}
    estimate = {
        "type": "object",
        "required": ["workload", "datasize", "job_class", "model", "options", "recommended",
                     "recommendation"],
        "properties": {
            "workload": {"type": "string"}, "label": {"type": "string"},
            "datasize": {"type": "string"}, "input_bytes": _nullable(NUMBER),
            "config": {"type": "object", "additionalProperties": {"type": "string"}},
            "job_class": {"type": "string"},
            "workload_seen": _nullable({"type": "boolean",
                                        "description": "the model was trained on runs of it"}),
            "datasize_seen": _nullable({"type": "boolean",
                                        "description": "the model was trained on this size"}),
            "training_datasizes": _nullable({"type": "array", "items": {"type": "string"}}),
            "model": {"type": "object", "required": ["kind", "id"],
                      "properties": {"name": {"type": "string"}, "kind": {"type": "string"},
                                     "id": {"type": "integer"},
                                     "trained_on_runs": _nullable({"type": "integer"})}},
            "options": {"type": "array", "items": {"$ref": "#/components/schemas/Option"}},
            "best_per_type": {"type": "array", "items": {"$ref": "#/components/schemas/Option"}},
            "recommended": {"$ref": "#/components/schemas/Option"},
            "recommendation": {"type": "string"},
            "outside_measured": {"type": "boolean",
                                 "description": "the recommended option is far outside what "
                                                "the model was trained on"},
            "measured_note": _nullable({"type": "string",
                                        "description": "why, naming the nearest measured size"}),
            "measured_failures": _nullable({"type": "string",
                                            "description": "the recommended option's "
                                                           "configuration failed in measured "
                                                           "runs: how often; or is at risk of "
                                                           "failing, and why"}),
            "answered_from_table": _nullable({"type": "string", "description":
                                              "the recommended option's: " + TABLE_NOTE}),
            "answered_from": _nullable({
                "type": "array", "items": {"type": "string"},
                "description": "a query never measured: the measured queries whose plans "
                               "read most alike; the answer is the median of the replays "
                               "of their profiles, each scaled to what this plan reads; "
                               "after one run of the query ('jobgauge run tpch --file "
                               "query.sql'), it is answered from its own profile"}),
            "dag": dag,
            "plan_error": _nullable({"type": "string",
                                     "description": "why no DAG could be drawn, when asked for"}),
            "explanation": _nullable({
                "type": "object", "description":
                    "with explain: where the recommended answer's time goes, the stage "
                    "model's replay of the job's profile times the calibration factor "
                    "(null without explain, or for a model without stages)",
                "required": ["method", "stages", "driver_s", "runtime_s"],
                "properties": {
                    "method": {"type": "string"}, "replayed_from": _nullable({"type": "string"}),
                    "factor": NUMBER, "runtime_s": NUMBER, "driver_s": NUMBER,
                    "critical_path": {"type": "array", "items": NUMBER},
                    "critical_path_s": NUMBER, "dominating_stage": NUMBER,
                    "stages": {"type": "array", "items": {
                        "type": "object",
                        "required": ["stage_id", "kind", "tasks", "waves", "seconds",
                                     "shuffle_join"],
                        "properties": {
                            "stage_id": NUMBER, "kind": {"type": "string"},
                            "tasks": {"type": "integer"}, "waves": {"type": "integer"},
                            "seconds": NUMBER,
                            "shuffle_join": {"type": "boolean", "description":
                                             "the shuffle join that replaces a broadcast "
                                             "at this size or these settings"}}}}}}),
            "history": {"type": "object", "required": ["runs", "factor"],
                        "description": "the job's own measured runs in the store: every "
                                       "answer is the model's times factor (1 without runs); "
                                       "without runs of its own that calibrate it, each "
                                       "instance type's answers take the factor of other "
                                       "jobs' runs on that type, factor the recommended "
                                       "option's",
                        "properties": {"runs": {"type": "integer", "minimum": 0},
                                       "factor": {"type": "number", "exclusiveMinimum": 0},
                                       "busy_left_out": {
                                           "type": "integer", "minimum": 0,
                                           "description": "runs of the job that started on "
                                                          "a busy machine, left out because "
                                                          "it has quiet ones"},
                                       "far_left_out": {
                                           "type": "integer", "minimum": 0,
                                           "description": f"runs of the job more than "
                                                          f"{HISTORY_REACH:g}x "
                                                          "smaller or larger than the "
                                                          "question's input, which calibrate "
                                                          "nothing"},
                                       "held": {
                                           "type": "boolean",
                                           "description": "factor holds the answer at "
                                                          "its (calibrated) answer at a "
                                                          "smaller size, so that more data "
                                                          "is never faster"},
                                       "cluster_runs": {
                                           "type": "integer", "minimum": 0,
                                           "description": "runs of other jobs on the "
                                                          "recommended instance type that "
                                                          "calibrate it (0 where the job's "
                                                          "own runs do)"},
                                       "cluster_jobs": {
                                           "type": "integer", "minimum": 0,
                                           "description": "how many jobs those runs are"}}},
        },
    }
    tuned = {
        "type": "object",
        "required": ["instance_type", "instance_count", "config", "predicted_runtime_s",
                     "spark_submit", "hive_set"],
        "properties": {
            "instance_type": {"type": "string"}, "instance_count": {"type": "integer"},
            "config": {"type": "object", "additionalProperties": {"type": "string"}},
            "cluster_config": {"type": "object", "additionalProperties": {"type": "string"}},
            "predicted_runtime_s": NUMBER, "predicted_low_s": NUMBER,
            "predicted_high_s": NUMBER, "cost_usd": _nullable(NUMBER),
            "baseline_runtime_s": _nullable(NUMBER), "trials": {"type": "integer"},
            "tuned": {"type": "boolean"}, "reason": _nullable({"type": "string"}),
            "spark_submit": {"type": "array", "items": {"type": "string"}},
            "hive_set": {"type": "array", "items": {"type": "string"}},
            "estimate": {"$ref": "#/components/schemas/Estimate"},
        },
    }
    run_input = {
        "type": "object", "additionalProperties": False,
        "required": ["workload", "framework", "instance_type", "instance_count",
                     "vcpus", "memory_gib", "runtime_s", "completed", "run_id"],
        "description": "one run in the run-table schema (see the shared datasets' README)",
        "properties": {
            "source": {"type": "string", "maxLength": 200,
                       "description": "set by the API token (leave it out, or give the "
                                      "token's source name)"},
            "workload": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"\S"},
            "framework": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"\S"},
            "datasize": {"type": "string", "maxLength": 200},
            "input_bytes": _nullable({"type": "number", "minimum": 0,
                                      "maximum": RUN_LIMITS["input_bytes"][1]}),
            "instance_type": {"type": "string", "minLength": 1, "maxLength": 200,
                              "pattern": r"\S"},
            "instance_count": {"type": "integer", "minimum": 1,
                               "maximum": RUN_LIMITS["instance_count"][1]},
            "vcpus": {"type": "number", "minimum": 1e-9, "maximum": RUN_LIMITS["vcpus"][1]},
            "memory_gib": {"type": "number", "minimum": 1e-9,
                           "maximum": RUN_LIMITS["memory_gib"][1]},
            "hourly_price_usd": _nullable({"type": "number", "minimum": 0,
                                           "maximum": RUN_LIMITS["hourly_price_usd"][1]}),
            "config": {"type": "object", "additionalProperties": {"type": "string"},
                       "description": "the job's settings (or config_json: its JSON text)"},
            "runtime_s": {"type": "number", "minimum": 0, "maximum": RUN_LIMITS["runtime_s"][1]},
            "completed": {"type": "boolean",
                          "description": "false: the run hit a time limit (runtime_s is a "
                                         "lower bound)"},
            "run_id": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": r"\S"},
        },
    }
    run_record = {
        "type": "object", "required": ["id", "source", "run_id", "workload", "status"],
        "additionalProperties": True,
        "properties": {
            "id": {"type": "integer"}, "source": {"type": "string"},
            "run_id": {"type": "string"}, "workload": {"type": "string"},
            "framework": {"type": "string"}, "datasize": {"type": "string"},
            "instance_type": {"type": "string"}, "instance_count": {"type": "integer"},
            "vcpus": NUMBER, "memory_gib": NUMBER, "runtime_s": _nullable(NUMBER),
            "input_bytes": _nullable(NUMBER), "hourly_price_usd": _nullable(NUMBER),
            "completed": {"type": "boolean"}, "status": {"type": "string"},
            "config": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    remaining = {
        "type": "object", "required": ["app_id", "status", "elapsed_s", "remaining_seconds"],
        "additionalProperties": True,
        "properties": {
            "app_id": _nullable({"type": "string"}), "app_name": _nullable({"type": "string"}),
            "status": {"type": "string"}, "elapsed_s": NUMBER,
            "progress": _nullable(NUMBER), "remaining_seconds": _nullable(NUMBER),
            "low_seconds": _nullable(NUMBER), "high_seconds": _nullable(NUMBER),
            "total_seconds": _nullable(NUMBER), "basis": {"type": "string"},
            "unit": {"type": "string"},
            "jobs_completed": {"type": "integer"}, "jobs_total": {"type": "integer"},
            "stages_completed": {"type": "integer"}, "stages_total": {"type": "integer"},
            "tasks_completed": {"type": "integer"}, "tasks_total": {"type": "integer"},
            "taken_at": {"type": "string"},
        },
    }
    url_parameter = {"name": "url", "in": "query", "required": True,
                     "description": "the Spark driver UI (http://host:4040), a History Server "
                                    "address on the server's allow-list, or an event log path under "
                                    "a configured folder",
                     "schema": {"type": "string", "minLength": 1}}
    paths = {
        "/estimate": {"post": {
            "operationId": "estimate",
            "summary": "Predicted runtime (with its interval) and cost per instance type and "
                       "node count, the recommended option and the job class",
            "requestBody": json_body("EstimateRequest"),
            "responses": {**ok("Estimate"), **_error_responses(400, 413, 415, 422, 503)},
        }},
        "/tune": {"post": {
            "operationId": "tune",
            "summary": "The recommended option with Spark SQL settings tuned by the model, as "
                       "spark-submit --conf and Hive SET lines",
            "description": "More than the server's open trial cap needs the API token.",
            "security": [{}, {"bearer": []}],
            "requestBody": json_body("TuneRequest"),
            "responses": {**ok("Tuned"), **_error_responses(400, 401, 403, 413, 415, 422, 503)},
        }},
        "/runs": {
            "get": {
                "operationId": "listRuns", "summary": "Runs in the store, newest first",
                "parameters": [
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1,
                                                                 "maximum": 500, "default": 50}},
                    {"name": "offset", "in": "query", "schema": {"type": "integer",
                                                                  "minimum": 0,
                                                                  "maximum": 10 ** 9,
                                                                  "default": 0}},
                    *[{"name": name, "in": "query", "schema": {"type": "string"}}
                      for name in RUN_FILTERS]],
                "responses": {**ok("RunsPage"), **_error_responses(400, 503)},
            },
            "post": {
                "operationId": "addRun", "summary": "Add one measured run (run-table schema)",
                "description": "Needs the API token; the run is recorded under the source "
                               "name the token maps to.",
                "security": [{"bearer": []}],
                "requestBody": json_body("RunInput"),
                "responses": {**ok("RunRecord", "Created", "201"),
                              **_error_responses(400, 401, 403, 409, 413, 415, 503)},
            },
        },
        "/models": {"get": {
            "operationId": "listModels", "summary": "Trained models in the store, newest first",
            "responses": {**ok("ModelsList"), **_error_responses(503)},
        }},
        "/instance-types": {"get": {
            "operationId": "listInstanceTypes",
            "summary": "Instance types the estimate and tune requests accept",
            "responses": {**ok("InstanceTypes")},
        }},
        "/apps": {"get": {
            "operationId": "listApps",
            "summary": "Applications a Spark UI or History Server lists",
            "parameters": [url_parameter],
            "responses": {**ok("AppsList"), **_error_responses(400, 403, 404)},
        }},
        "/apps/{app_id}/remaining": {"get": {
            "operationId": "remaining",
            "summary": "Progress and time left of a running Spark application",
            "parameters": [{"name": "app_id", "in": "path", "required": True,
                            "schema": {"type": "string", "minLength": 1}}, url_parameter],
            "responses": {**ok("Remaining"), **_error_responses(400, 403, 404)},
        }},
        **_jobs_paths(),
        "/openapi.json": {"get": {
            "operationId": "openapi", "summary": "This document",
            "responses": {"200": {"description": "OpenAPI 3 document",
                                  "content": {"application/json": {"schema": {
                                      "type": "object"}}}}},
        }},
    }
    # A run just added can be found again by what the answer says (stateful testing).
    paths["/runs"]["post"]["responses"]["201"]["links"] = {
        "ListRunsOfItsSource": {"operationId": "listRuns", "parameters": {
            "source": "$response.body#/source", "workload": "$response.body#/workload"}},
        "ListRunsOfItsStatus": {"operationId": "listRuns", "parameters": {
            "status": "$response.body#/status", "limit": 1}},
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "jobgauge", "version": "1",
                 "description": "Predict how long Spark jobs and Hive queries take and what "
                                "they cost, tune their settings, and follow running "
                                "applications.  Every 4xx answer is an Error object."},
        "servers": [{"url": server_url}],
        "paths": paths,
        "components": {"securitySchemes": {"bearer": {
            "type": "http", "scheme": "bearer",
            "description": "the server's API token (JOBGAUGE_API_TOKEN)"}}, "schemas": {
            "Error": ERROR, "Option": option, "Estimate": estimate, "Tuned": tuned,
            "EstimateRequest": {"type": "object", "additionalProperties": False,
                                "properties": estimate_properties, **job_choice},
            "TuneRequest": {"type": "object", "additionalProperties": False,
                            "properties": tune_properties, **job_choice},
            "RunInput": run_input, "RunRecord": run_record,
            "RunsPage": {"type": "object", "required": ["runs", "total", "limit", "offset"],
                         "properties": {"runs": {"type": "array", "items": {
                             "$ref": "#/components/schemas/RunRecord"}},
                             "total": {"type": "integer"}, "limit": {"type": "integer"},
                             "offset": {"type": "integer"}}},
            "ModelsList": {"type": "object", "required": ["models"], "properties": {
                "models": {"type": "array", "items": {"type": "object", "required": [
                    "id", "name", "kind"], "properties": {
                    "id": {"type": "integer"}, "name": {"type": "string"},
                    "kind": {"type": "string"}, "metrics": {"type": "object"},
                    "created_at": {"type": "string"}}}}}},
            "InstanceTypes": {"type": "object", "required": ["instance_types"], "properties": {
                "instance_types": {"type": "array", "items": {"type": "object", "required": [
                    "instance_type", "vcpus", "memory_gib"], "properties": {
                    "instance_type": {"type": "string"}, "vcpus": NUMBER,
                    "memory_gib": NUMBER, "hourly_price_usd": _nullable(NUMBER),
                    "local": {"type": "boolean"}, "source": {"type": "string"}}}}}},
            "AppsList": {"type": "object", "required": ["applications"], "properties": {
                "applications": {"type": "array", "items": {"type": "object", "properties": {
                    "id": {"type": "string"}, "name": _nullable({"type": "string"}),
                    "completed": {"type": "boolean"}}}}}},
            "Remaining": remaining, **_jobs_schemas(),
        }},
    }


def _jobs_paths() -> dict:
    """The jobs and application report operations (:mod:`jobgauge.webapp.jobs`)."""
    key = {"name": "job_key", "in": "path", "required": True,
           "description": "a job key as /jobs lists it (URL-encoded)",
           "schema": {"type": "string", "minLength": 1}}
    app_id = {"name": "app_id", "in": "path", "required": True,
              "schema": {"type": "string", "minLength": 1}}
    return {
        "/jobs": {"get": {
            "operationId": "listJobs",
            "summary": "Every job key in the store (runs grouped by workload, all sources), "
                       "most recently run first",
            "responses": {**ok("JobsList"), **_error_responses(503)},
        }},
        "/jobs/{job_key}": {"get": {
            "operationId": "job",
            "summary": "One job's runs oldest first, what changed in the settings between "
                       "consecutive runs, and the heuristics and recommended settings of its "
                       "latest run with a Spark profile",
            "parameters": [key],
            "responses": {**ok("Job"), **_error_responses(404, 503)},
        }},
        "/apps/{app_id}/report": {"get": {
            "operationId": "applicationReport",
            "summary": "The report of a Spark application in the store: time split, "
                       "critical path, wasted core-seconds, what-if, heuristics, --conf",
            "parameters": [app_id],
            "responses": {**ok("ApplicationReport"), **_error_responses(404, 503)},
        }},
    }


def _jobs_schemas() -> dict:
    text, seconds = {"type": "string"}, _nullable(NUMBER)
    heuristic = {
        "type": "object", "required": ["name", "severity", "evidence", "conf"],
        "additionalProperties": True,
        "properties": {"name": text, "evidence": text,
                       "severity": {"type": "string", "enum": [
                           "none", "low", "moderate", "severe", "critical"]},
                       "conf": {"type": "object", "additionalProperties": text}}}
    conf = {"type": "object", "additionalProperties": text,
            "description": "spark-submit --conf key=value pairs"}
    job_run = {
        "type": "object", "required": ["index", "source", "run_id", "status", "runtime_s"],
        "additionalProperties": True,
        "properties": {"index": {"type": "integer"}, "source": text, "run_id": text,
                       "status": text, "runtime_s": seconds, "at": _nullable(text),
                       "cost_usd": _nullable(NUMBER), "core_hours": _nullable(NUMBER),
                       "app_id": _nullable(text), "has_report": {"type": "boolean"},
                       "load_at_start": {**_nullable(NUMBER), "description":
                                         "the load of other processes at the run's start, "
                                         "where its guard read it (jobgauge run, collect, "
                                         "jobgauge-submit): the cores they kept busy in the "
                                         "moment before it (their 1-minute load average, "
                                         "for runs measured before session 41)"},
                       "quiet_start": {**_nullable({"type": "boolean"}), "description":
                                       "false: the run started on a busy machine, and its "
                                       "job's answers are calibrated to its quiet runs"}}}
    change = {"type": "object", "required": ["key", "before", "after"], "properties": {
        "key": text, "before": _nullable(text), "after": _nullable(text)}}
    return {
        "JobsList": {"type": "object", "required": ["jobs"], "properties": {"jobs": {
            "type": "array", "items": {
                "type": "object", "additionalProperties": True,
                "required": ["job_key", "runs", "sources", "last_run_at", "median_runtime_s"],
                "properties": {"job_key": text, "runs": {"type": "integer"},
                               "failed": {"type": "integer"},
                               "sources": {"type": "array", "items": text},
                               "frameworks": {"type": "array", "items": text},
                               "last_run_at": _nullable(text),
                               "median_runtime_s": seconds}}}}},
        "Job": {"type": "object", "additionalProperties": True,
                "required": ["job_key", "runs", "settings_changes", "heuristics",
                             "recommended_conf"],
                "properties": {
                    "job_key": text, "runs": {"type": "array", "items": job_run},
                    "median_runtime_s": seconds,
                    "settings_changes": {"type": "array", "items": {
                        "type": "object", "required": ["from_run", "to_run", "changes"],
                        "additionalProperties": True,
                        "properties": {"from_run": text, "to_run": text,
                                       "changes": {"type": "array", "items": change}}}},
                    "report_of": _nullable({"type": "object", "properties": {
                        "run_id": text, "app_id": _nullable(text)}}),
                    "heuristics": {"type": "array", "items": heuristic},
                    "recommended_conf": conf}},
        "ApplicationReport": {
            "type": "object", "additionalProperties": True,
            "required": ["app_id", "job_key", "runtime_s", "driver_s", "executor_s",
                         "critical_path_s", "wasted_core_s", "what_if", "heuristics",
                         "recommended_conf"],
            "properties": {
                "app_id": _nullable(text), "job_key": _nullable(text), "run_id": text,
                "source": text, "runtime_s": seconds, "driver_s": seconds,
                "executor_s": seconds, "critical_path_s": seconds, "wasted_core_s": seconds,
                "executors": {"type": "integer"}, "executor_cores": {"type": "integer"},
                "what_if": {"type": "array", "items": {
                    "type": "object", "required": ["executors", "runtime_s", "utilisation"],
                    "properties": {"executors": {"type": "integer"}, "share": NUMBER,
                                   "runtime_s": seconds,
                                   "utilisation": _nullable(NUMBER)}}},
                "heuristics": {"type": "array", "items": heuristic},
                "recommended_conf": conf}},
    }
