"""The query-estimation form (HTML)."""

from __future__ import annotations

from flask import Blueprint, current_app, render_template, request

from jobgauge.errors import GaugeError
from jobgauge.webapp.requests import AQE_CHOICES, MASTERS, InvalidField, parse_estimate

form = Blueprint("form", __name__)


@form.route("/", methods=["GET", "POST"])
def index():
    values = {"query": "1", "scale": "0.1", "shuffle_partitions": "", "adaptive": "default",
              "broadcast_threshold": "", "master": "local[2]"}
    errors, result, tuned, failure = {}, None, None, None
    status = 200
    if request.method == "POST":
        values.update({k: request.form.get(k, "") for k in values})
        try:
            parsed = parse_estimate(values)
            service = current_app.extensions["jobgauge"]
            result = service.estimate(**parsed)
            result["parsed"] = parsed
            tuned = service.tune(workload=parsed["workload"], datasize=parsed["datasize"])
        except InvalidField as exc:
            errors[exc.field] = exc.message
            status = 400
        except GaugeError as exc:
            failure = str(exc)
            status = 400
    return render_template("index.html", values=values, errors=errors, result=result,
                           tuned=tuned, failure=failure, adaptive_choices=AQE_CHOICES,
                           masters=MASTERS, queries=range(1, 23)), status
