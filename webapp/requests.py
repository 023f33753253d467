"""Validation of what a person or a script asks, shared by the form and the API."""

from __future__ import annotations

import re

from jobgauge.errors import UsageError


class InvalidField(UsageError):
    """A form or JSON field holds a value jobgauge cannot use."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")
        self.message = message


_SIZE = re.compile(r"^\s*(-?\d+)\s*([kmg]?)b?\s*$", re.IGNORECASE)
AQE_CHOICES = ("default", "true", "false")
MASTERS = ("local[1]", "local[2]")


def _text(data, name):
    value = data.get(name)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise InvalidField(name, f"must be a string or number; got {type(value).__name__}")
    return str(value).strip()


def parse_estimate(data: dict) -> dict:
    """Turn form or JSON fields into (workload, datasize, config, master).

    Fields: ``query`` (TPC-H query 1..22) or ``workload`` (e.g. ``tpch-q3``),
    ``scale`` (TPC-H scale factor, default 0.1), and the knobs
    ``shuffle_partitions``, ``adaptive`` (default/true/false),
    ``broadcast_threshold`` (bytes, or 10m, -1 turns broadcast joins off),
    and ``master`` (local[1] or local[2]); a JSON ``config`` object may add
    any other ``spark.*`` setting.
    """
    if not isinstance(data, dict):
        raise InvalidField("body", "must be a JSON object")
    workload = _text(data, "workload")
    query = _text(data, "query")
    if workload and query:
        raise InvalidField("query", "give either query or workload, not both")
    if not workload:
        if not query:
            raise InvalidField("query", "choose a TPC-H query (1 to 22)")
        if not query.isdigit() or not 1 <= int(query) <= 22:
            raise InvalidField("query", f"must be a TPC-H query number from 1 to 22; got {query!r}")
        workload = f"tpch-q{int(query)}"
    elif not re.fullmatch(r"[a-z][a-z0-9\-]{0,63}", workload):
        raise InvalidField("workload", f"is not a workload name; got {workload[:80]!r}")
    scale = _text(data, "scale") or "0.1"
    try:
        scale_value = float(scale)
    except ValueError:
        raise InvalidField("scale", f"must be a number such as 0.1; got {scale[:40]!r}") from None
    if not 0 < scale_value <= 100:
        raise InvalidField("scale", f"must be greater than 0 and at most 100; got {scale}")
    datasize = _text(data, "datasize") or f"sf{scale_value:g}"

    config = {}
    extra = data.get("config")
    if extra is not None:
        if not isinstance(extra, dict):
            raise InvalidField("config", "must be an object of spark.* settings")
        for key, value in extra.items():
            if not re.fullmatch(r"spark\.[A-Za-z0-9_.\-]+", str(key)):
                raise InvalidField("config", f"{str(key)[:80]!r} is not a spark.* setting")
            if isinstance(value, (dict, list)) or value is None:
                raise InvalidField("config", f"{key} needs a plain value")
            config[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)
    partitions = _text(data, "shuffle_partitions")
    if partitions:
        if not partitions.isdigit() or not 1 <= int(partitions) <= 100_000:
            raise InvalidField("shuffle_partitions",
                               f"must be a whole number from 1 to 100000; got {partitions[:40]!r}")
        config["spark.sql.shuffle.partitions"] = str(int(partitions))
    adaptive = (_text(data, "adaptive") or "default").lower()
    if adaptive not in AQE_CHOICES:
        raise InvalidField("adaptive", f"must be one of {', '.join(AQE_CHOICES)}; got {adaptive[:40]!r}")
    if adaptive != "default":
        config["spark.sql.adaptive.enabled"] = adaptive
    threshold = _text(data, "broadcast_threshold")
    if threshold:
        match = _SIZE.match(threshold)
        if not match:
            raise InvalidField("broadcast_threshold",
                               f"must be bytes (e.g. 10485760), a size such as 10m, or -1; got {threshold[:40]!r}")
        number = int(match.group(1)) * {"": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}[
            match.group(2).lower()]
        if number < -1:
            raise InvalidField("broadcast_threshold", f"must be -1 or more; got {threshold}")
        config["spark.sql.autoBroadcastJoinThreshold"] = str(number)
    master = _text(data, "master") or "local[2]"
    if master not in MASTERS:
        raise InvalidField("master", f"must be one of {', '.join(MASTERS)}; got {master[:40]!r}")
    return {"workload": workload, "datasize": datasize, "config": config, "master": master}
