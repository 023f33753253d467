"""The HTML pages: the estimate form and the running-jobs page.

Field errors are shown next to their field (the page is drawn again with
status 400); nothing a user types reaches the page unescaped.
"""

from __future__ import annotations

import dataclasses

from flask import Blueprint, current_app, render_template, request

from jobgauge.errors import GaugeError
from jobgauge.models._default import HELD_NOTE, HISTORY_REACH
from jobgauge.webapp.requests import (
    AQE_CHOICES, DEFAULT_SIZE, HIBENCH_SIZES, SQL_WORKLOAD, InvalidField, parse_estimate,
)

form = Blueprint("form", __name__)

FIELDS = ("workload", "sql", "scale", "size", "input_gb", "nodes_min", "nodes_max", "deadline_s",
          "budget_usd", "shuffle_partitions", "adaptive", "broadcast_threshold")
DEFAULTS = {"workload": "tpch-q3", "sql": "", "scale": "1", "size": DEFAULT_SIZE, "input_gb": "",
            "nodes_min": "1", "nodes_max": "8", "deadline_s": "", "budget_usd": "",
            "shuffle_partitions": "", "adaptive": "default", "broadcast_threshold": ""}
DEFAULT_TYPES = ("local[2]", "m5.xlarge", "r5.xlarge")
# How an error next to a field begins: "The scale factor must be greater than 0; got -1".
FIELD_NAMES = {"workload": "The workload", "sql": "The query", "scale": "The scale factor",
               "size": "The data size", "input_gb": "The input size",
               "instance_types": "The instance types", "nodes_min": "The smallest node count",
               "nodes_max": "The largest node count", "deadline_s": "The deadline",
               "budget_usd": "The budget", "shuffle_partitions": "The partition count",
               "adaptive": "The setting", "broadcast_threshold": "The threshold"}


def _service():
    return current_app.extensions["jobgauge"]


def _choices(service) -> dict:
    from jobgauge.profiler.workloads import workload_names

    builtin = workload_names()
    options = service.instance_options()
    return {
        "tpch_workloads": [w for w in builtin if w.startswith("tpch-")],
        "hibench_workloads": [w for w in builtin if not w.startswith("tpch-")],
        "store_jobs": service.store_jobs(),
        "local_types": [o for o in options.values() if o.local],
        "cloud_types": [o for o in options.values() if not o.local],
        "adaptive_choices": AQE_CHOICES, "sizes": HIBENCH_SIZES, "sql_workload": SQL_WORKLOAD,
        "max_query_chars": int(current_app.config["MAX_QUERY_CHARS"]),
    }


@form.route("/", methods=["GET", "POST"])
def index():
    service = _service()
    values = dict(DEFAULTS)
    chosen = [t for t in DEFAULT_TYPES if t in service.instance_options()]
    errors, failure, answer = {}, None, None
    status = 200
    if request.method == "POST":
        values.update({k: request.form.get(k, "") for k in FIELDS})
        if values["sql"].strip():
            values["workload"] = SQL_WORKLOAD   # a pasted query is what gets estimated
        chosen = request.form.getlist("instance_types")
        try:
            answer = _answer(service, {**values, "instance_types": chosen})
        except InvalidField as exc:
            errors[exc.field] = exc.message
            status = 400
        except GaugeError as exc:
            failure = str(exc)
            status = 400
    return render_template("index.html", values=values, chosen_types=chosen, errors=errors,
                           field_names=FIELD_NAMES, failure=failure, answer=answer,
                           history_reach=HISTORY_REACH, held_note=HELD_NOTE,
                           **_choices(service)), status


def _answer(service, fields: dict) -> dict:
    """Everything the result page shows, for valid fields."""
    from jobgauge.webapp._plots import png_data_uri, what_if_png

    parsed = dataclasses.replace(     # the page shows where the time goes
        parse_estimate(fields, known_workloads=service.known_workloads(),
                       catalog_names=service.instance_options(),
                       max_query_chars=int(current_app.config["MAX_QUERY_CHARS"])),
        explain=True)
    dag, plan_note = None, None
    if parsed.sql:
        try:
            dag = service.dag(parsed)
        except InvalidField:
            raise
        except GaugeError as exc:  # no plan (e.g. HiveServer2 down): the estimate still stands
            plan_note = f"no query plan: {exc}"
    else:
        plan_note = f"{parsed.label} is not a SQL query, so it has no query plan to draw."
    estimate = service.estimate(parsed, dag=dag, plan=False)
    tuned = service.tune(parsed, estimate=estimate)
    png = what_if_png(estimate["options"], recommended=estimate["recommended"],
                      deadline_s=parsed.deadline_s, budget_usd=parsed.budget_usd,
                      title=f"{parsed.label} at {parsed.datasize}")
    return {"request": parsed, "estimate": estimate, "tuned": tuned, "dag": dag,
            "dag_svg": dag.to_svg() if dag is not None else None, "plan_note": plan_note,
            "plan_source": f"HiveServer2 at {service.hive_host}:{service.hive_port}"
            if service.hive_host else "a local Spark session (EXPLAIN FORMATTED; nothing runs)",
            "plot": png_data_uri(png), "options": service.instance_options()}


@form.get("/running")
def running():
    """Progress and time left of running Spark applications, refreshed every 2 s."""
    apps = request.args.get("apps", "")
    return render_template("running.html", apps=apps)
