"""Honest evaluation of the runtime models: splits a user would face.

Each data source (``scout-multinode``, ``c3o-emr``, ``local``) is evaluated on
its own, under the protocols that apply to it:

- ``configs`` (a): held-out configurations of seen workloads.  Runs are
  grouped by configuration (instance type, instance count and knobs); every
  run of a configuration is in the same fold (5-fold GroupKFold), so repeated
  runs never leak into the training side.
- ``scale`` (b): scale extrapolation.  Train on the smaller inputs, predict
  the largest, per workload: the larger of two sizes (``sf10`` > ``sf1``,
  ``bigdata`` > ``huge``, by label, else by input bytes) or the largest third
  of three or more distinct sizes.  Workloads with one size stay in training.
- ``workloads`` (c): unseen workloads.  A workload is its name and framework
  (Hadoop sort and Spark sort are two workloads); with up to 10 workloads one
  is left out at a time, with more (the local runs: 22 TPC-H queries, the
  HiBench and MapReduce jobs) 5 folds of whole workloads (GroupKFold).  Unseen workloads
  are profiled once: every row carries the profile (and DAG) of one
  *reference* run of its workload (the smallest input, fewest knobs set),
  never its own; reference runs are not scored.  Local results are shown
  separately for TPC-H queries and for the HiBench/MapReduce jobs.
- ``cluster`` (d): held-out cluster configurations (instance type x count),
  5-fold GroupKFold; the Scout and C3O tables.

Metrics on the finished test runs: MdAPE, MAPE, P90 of the absolute
percentage error, share within 10 %, and coverage of the 80 % interval.
Censored test runs (``completed=False``) have no true runtime: they are not
scored, but the share whose prediction is at least the time limit is shown.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path

import numpy as np

from jobgauge.errors import UsageError

#: The shared Scout and C3O run tables: ``$JOBGAUGE_SHARED_DATASETS``, else
#: ``../shared/datasets`` from the current folder (as in the README's examples).
SHARED_DATASETS_ENV = "JOBGAUGE_SHARED_DATASETS"
#: Where reports go unless told: ``bench/reports`` in the current folder.
DEFAULT_REPORT_DIR = Path("bench") / "reports"
EVAL_VERSION = 4
PROTOCOLS = {
    "configs": "(a) held-out configurations",
    "scale": "(b) scale extrapolation",
    "workloads": "(c) held-out workloads",
    "cluster": "(d) held-out cluster configurations",
}
#: Subsets of the test runs reported on their own (protocol ``name:subset``).
SUBSETS = {
    "tpch": ("TPC-H queries", lambda workload: workload.startswith("tpch-")),
    "jobs": ("HiBench/MapReduce jobs", lambda workload: not workload.startswith("tpch-")),
}
#: Up to this many workloads protocol (c) leaves one out at a time; with more, 5 folds.
MAX_LEAVE_ONE_OUT = 10
#: Part of the cache key of sources with profiles: bump when what their cells compute
#: changes (DAG building, reference profiles).
PROFILED_VERSION = 2
PROTOCOLS_BY_SOURCE = {
    "scout-multinode": ("cluster", "scale", "workloads"),   # no knobs: configs == cluster
    "c3o-emr": ("configs", "cluster", "scale", "workloads"),
}
DEFAULT_PROTOCOLS = ("configs", "scale", "workloads")
DEFAULT_MODELS = ("tree", "svm", "forest", "gbm", "ernest", "fc", "rnn", "gbm+classes",
                  "fc+classes", "gbm:size_exponent=auto")
#: Lighter settings the evaluation gives a model (CPU budget of a full run on a shared
#: 2-core machine): the DAG network trains one network for 30 epochs of 256-run batches.
EVAL_PARAMS = {"rnn": {"epochs": 30, "batch_size": 256, "n_networks": 1}}
QUICK_PARAMS = {"fc": {"epochs": 20, "n_networks": 1}, "rnn": {"epochs": 20, "n_networks": 1},
                "forest": {"n_estimators": 30}, "gbm": {"max_iter": 60}}


def default_run_tables() -> list[Path]:
    """The shared Scout and C3O tables (where they exist) plus the runs shipped in
    :mod:`jobgauge.data`."""
    from jobgauge.data import run_tables

    shared = Path(os.environ.get(SHARED_DATASETS_ENV) or Path("..") / "shared" / "datasets")
    paths = [shared / "scout_multinode.csv", shared / "c3o_emr.csv", *run_tables()]
    return [p for p in paths if p.is_file()]


# ------------------------------------------------------------- profiles
def default_profile_files() -> list[Path]:
    """The profile records shipped in :mod:`jobgauge.data`."""
    from jobgauge.data import profile_files

    return profile_files()


def _record_dag(record):
    """The DAG of one profile record: the physical plan's operators and the event log's
    stages (with their measured metrics) side by side, as two components of one DAG."""
    from jobgauge.dag import QueryDag
    from jobgauge.errors import GaugeError

    parts = []
    plan = record.get("physical_plan")
    if plan:
        try:
            parts.append(("plan", QueryDag.from_spark_plan(plan).to_dict()))
        except GaugeError:
            pass
    if record.get("stages"):
        try:
            parts.append(("stage", QueryDag.from_stages(record["stages"]).to_dict()))
        except GaugeError:
            pass
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0][1]
    nodes, edges = [], []
    for prefix, dag in parts:
        nodes += [{**node, "id": f"{prefix}:{node['id']}"} for node in dag["nodes"]]
        edges += [{**edge, "source": f"{prefix}:{edge['source']}",
                   "target": f"{prefix}:{edge['target']}"} for edge in dag["edges"]]
    return {"directed": True, "multigraph": False, "graph": {}, "nodes": nodes, "edges": edges}


def attach_reference_profiles(frame, records):
    """Add ``profile`` and ``dag`` columns from one reference run per workload.

    The reference run of a workload (per framework) is its profiled run with the smallest
    input, then the fewest knobs set, then the smallest run_id; its profile
    stands for "the user profiled this job once".  A ``profile_reference``
    column marks the reference runs (they are not scored in evaluations).
    """
    frame = frame.copy()
    frame["profile"] = None
    frame["dag"] = None
    frame["profile_reference"] = False
    if not records:
        return frame
    keys = list(zip(frame["source"].astype(str), frame["run_id"].astype(str)))
    has = np.array([k in records for k in keys])
    if not has.any():
        return frame
    sizes = frame["input_bytes"].fillna(np.inf).to_numpy()
    knobs = np.array([len(c) for c in frame["config"]])
    jobs = _keys(frame, ["workload", "framework"])  # Hadoop sort and Spark sort differ
    for job in np.unique(jobs[has]):
        rows = np.flatnonzero(has & (jobs == job))
        best = min(rows, key=lambda i: (sizes[i], knobs[i], keys[i][1]))
        record = records[keys[best]]
        summary = record.get("summary") or None
        dag = _record_dag(record)
        same = np.flatnonzero(jobs == job)
        for i in same:
            frame.at[frame.index[i], "profile"] = summary
            frame.at[frame.index[i], "dag"] = dag
        frame.at[frame.index[best], "profile_reference"] = True
    return frame


# ------------------------------------------------------------- protocols
def _group_folds(groups, n_splits, seed=0):
    from sklearn.model_selection import GroupKFold

    unique = np.unique(groups)
    if len(unique) < 2:
        return []
    splitter = GroupKFold(n_splits=min(n_splits, len(unique)), shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros(len(groups)), groups=groups))


def _keys(frame, columns):
    keys = frame[columns[0]].astype(str).to_numpy().astype(object)
    for column in columns[1:]:
        keys = keys + "|" + frame[column].astype(str).to_numpy().astype(object)
    return keys


def _size_rank(frame):
    """Per row: True when its input is among its workload's largest (the scale test side).

    Per workload and framework, sizes are ordered by the size label (TPC-H scale factor,
    HiBench size) where every row has one, else by input bytes.  With two distinct sizes
    the larger is held out; with more, the largest third.
    """
    from jobgauge.models.features import size_scale

    labels = frame["datasize"].fillna("").astype(str).to_numpy()
    scales = np.array([size_scale(label) for label in labels], dtype=float).reshape(-1, 2)
    label_value = np.where(np.isfinite(scales[:, 0]), scales[:, 0], scales[:, 1])
    sizes = frame["input_bytes"].to_numpy(dtype=float)
    groups = _keys(frame, ["workload", "framework"])
    largest = np.zeros(len(frame), dtype=bool)
    for group in np.unique(groups):
        rows = groups == group
        value = label_value[rows] if np.isfinite(label_value[rows]).all() else sizes[rows]
        distinct = np.unique(value[np.isfinite(value)])
        if len(distinct) < 2:
            continue
        cut = distinct[-1] if len(distinct) == 2 else distinct[len(distinct) - len(distinct) // 3]
        largest[np.flatnonzero(rows)[value >= cut]] = True
    return largest


def protocol_folds(frame, protocol, *, n_splits=5):
    """List of (train index, test index) for a protocol on one source's frame."""
    if protocol == "configs":
        return _group_folds(_keys(frame, ["instance_type", "instance_count", "config_json"]),
                            n_splits)
    if protocol == "cluster":
        return _group_folds(_keys(frame, ["instance_type", "instance_count"]), n_splits)
    if protocol == "workloads":
        workloads = _keys(frame, ["workload", "framework"])
        unique = np.unique(workloads)
        if len(unique) < 2:
            return []
        if len(unique) > MAX_LEAVE_ONE_OUT:
            return _group_folds(workloads, n_splits)
        return [(np.flatnonzero(workloads != w), np.flatnonzero(workloads == w)) for w in unique]
    if protocol == "scale":
        largest = _size_rank(frame)
        if not largest.any() or largest.all():
            return []
        return [(np.flatnonzero(~largest), np.flatnonzero(largest))]
    raise UsageError(f"unknown protocol {protocol!r}; choose from {', '.join(PROTOCOLS)}")


# ------------------------------------------------------------- metrics
def metrics(y, predicted, low=None, high=None) -> dict:
    """MdAPE, MAPE, P90 APE, share within 10 % and interval coverage (fractions)."""
    y, predicted = np.asarray(y, float), np.asarray(predicted, float)
    ape = np.abs(predicted - y) / y
    out = {"n": len(y), "mdape": float(np.median(ape)), "mape": float(ape.mean()),
           "p90": float(np.quantile(ape, 0.9)), "within10": float((ape <= 0.10).mean())}
    if low is not None:
        out["coverage80"] = float(((y >= np.asarray(low)) & (y <= np.asarray(high))).mean())
    return out


def model_from_spec(spec, **params):
    """A model from ``name`` or ``name:key=value,key=value`` (values as JSON, else text)."""
    from jobgauge.models import make_model

    name, _, settings = spec.partition(":")
    for item in filter(None, settings.split(",")):
        key, sep, text = item.partition("=")
        if not sep:
            raise UsageError(f"model spec {spec!r}: {item!r} must look like key=value")
        try:
            params[key] = json.loads(text)
        except json.JSONDecodeError:
            params[key] = text
    return make_model(name, **params)


def _cache_key(frame, dataset, protocol, model, quick) -> str:
    digest = hashlib.sha1()
    digest.update(json.dumps([EVAL_VERSION, dataset, protocol, repr(sorted(
        model.get_params(deep=False).items(), key=str)), quick]).encode())
    digest.update("|".join(frame["run_id"].astype(str)).encode())
    digest.update(np.asarray(frame["runtime_s"], float).tobytes())
    if "profile_reference" in frame.columns:  # which runs stand for their workload's profile
        digest.update(b"profiles:" + frame["profile_reference"].to_numpy(dtype=bool).tobytes())
        # the profiled (local) source's own version and folds: its cells are recomputed when
        # either changes (the shared tables' keys stay as they were, their folds unchanged)
        digest.update(f"local:{PROFILED_VERSION}".encode())
        for _, test in protocol_folds(frame, protocol, n_splits=3 if quick else 5):
            digest.update(np.asarray(test, np.int64).tobytes())
    return digest.hexdigest()[:16]


def evaluate_cell(frame, dataset, protocol, name, *, quick=False, cache_dir=None,
                  n_splits=5):
    """Cross-validate one model under one protocol; returns the per-run predictions."""
    base = name.split("+")[0].split(":")[0]
    params = dict(EVAL_PARAMS.get(base, {}))
    if quick:
        params.update(QUICK_PARAMS.get(base, {}))
    model = model_from_spec(name, random_state=0, **params)
    key = _cache_key(frame, dataset, protocol, model, quick)
    cache_file = Path(cache_dir) / f"{dataset}__{protocol}__{name}__{key}.json" \
        if cache_dir else None
    if cache_file is not None and cache_file.is_file():
        return json.loads(cache_file.read_text())
    folds = protocol_folds(frame, protocol, n_splits=3 if quick else n_splits)
    if "profile_reference" in frame.columns:
        scored = ~frame["profile_reference"].to_numpy(dtype=bool)
    else:
        scored = np.ones(len(frame), dtype=bool)
    result = {"dataset": dataset, "protocol": protocol, "model": name, "fit_s": 0.0,
              "folds": len(folds), "train_rows": [], "workload": [], "y": [], "completed": [],
              "predicted": [], "low": [], "high": []}
    for train, test in folds:
        test = test[scored[test]]
        if len(test) == 0:
            continue
        train_frame = frame.iloc[train]
        if train_frame["completed"].sum() == 0:
            continue
        fold_model = model_from_spec(name, random_state=0, **params)
        started = time.perf_counter()
        fold_model.fit(train_frame)
        result["fit_s"] += time.perf_counter() - started
        test_frame = frame.iloc[test]
        predicted = fold_model.predict(test_frame)
        low, high = fold_model.predict_interval(test_frame, coverage=0.8)
        result["train_rows"].append(len(train))
        result["workload"] += test_frame["workload"].astype(str).tolist()
        result["y"] += test_frame["runtime_s"].astype(float).tolist()
        result["completed"] += test_frame["completed"].astype(bool).tolist()
        result["predicted"] += predicted.tolist()
        result["low"] += low.tolist()
        result["high"] += high.tolist()
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        cache_file.write_text(json.dumps(result))
    return result


def summarize(cell, *, subset=None) -> dict | None:
    """Metric row of a cell (optionally only test runs whose workload passes ``subset``)."""
    y = np.array(cell["y"], float)
    if len(y) == 0:
        return None
    keep = np.ones(len(y), dtype=bool)
    if subset is not None:
        keep = np.array([subset(w) for w in cell["workload"]], dtype=bool)
    done = np.array(cell["completed"], bool) & keep
    censored = ~np.array(cell["completed"], bool) & keep
    if not done.any():
        return None
    predicted = np.array(cell["predicted"], float)
    row = metrics(y[done], predicted[done], np.array(cell["low"])[done],
                  np.array(cell["high"])[done])
    row.update({"dataset": cell["dataset"], "protocol": cell["protocol"], "model": cell["model"],
                "fit_s": cell["fit_s"], "folds": cell["folds"],
                "censored_test": int(censored.sum()),
                "censored_at_least_bound": float((predicted[censored] >= y[censored]).mean())
                if censored.any() else None})
    return row


def summary_rows(cells) -> list[dict]:
    """Metric rows of cells, plus one row per subset (``protocol:tpch``, ``protocol:jobs``)
    for cells whose test runs mix TPC-H queries and other jobs."""
    rows = []
    for cell in cells:
        row = summarize(cell)
        if row is None:
            continue
        rows.append(row)
        present = [name for name, (_, test) in SUBSETS.items()
                   if any(test(w) for w in cell["workload"])]
        if "tpch" not in present:
            continue
        for name in present:
            part = summarize(cell, subset=SUBSETS[name][1])
            if part is not None:
                part["protocol"] = f"{cell['protocol']}:{name}"
                rows.append(part)
    return rows


def protocol_label(protocol) -> str:
    """``(c) held-out workloads: TPC-H queries`` for ``workloads:tpch``."""
    base, _, subset = protocol.partition(":")
    label = PROTOCOLS.get(base, base)
    if protocol == "workloads:tpch":
        return "(c) unseen TPC-H queries"
    return f"{label}: {SUBSETS[subset][0]}" if subset in SUBSETS else label


def noise_floor(frame) -> dict | None:
    """How well a run's repeats predict it: MdAPE of each finished run against the median of
    the other runs of exactly the same configuration (same workload, size, cluster, knobs).

    No model can expect to beat this on held-out configurations; None without repeats.
    """
    keys = _keys(frame, ["workload", "framework", "datasize", "instance_type", "instance_count",
                         "config_json"])
    done = frame["completed"].to_numpy(dtype=bool)
    runtime = frame["runtime_s"].to_numpy(dtype=float)
    errors = []
    for key in np.unique(keys[done]):
        values = runtime[done & (keys == key)]
        if len(values) < 2:
            continue
        for i in range(len(values)):
            others = np.delete(values, i)
            errors.append(abs(np.median(others) - values[i]) / values[i])
    if not errors:
        return None
    return {"runs": len(errors), "mdape": float(np.median(errors)),
            "p90": float(np.quantile(errors, 0.9))}


# ------------------------------------------------------------- driver
def load_evaluation_frames(paths, profile_paths=None) -> dict:
    """{source: frame} of the run tables, with reference profiles where present."""
    from jobgauge.runtable import read_profile_records, read_run_tables

    frame = read_run_tables(paths)
    records = read_profile_records(default_profile_files() if profile_paths is None else profile_paths)
    frames = {}
    for source in sorted(frame["source"].unique()):
        part = frame[frame["source"] == source].reset_index(drop=True)
        part = attach_reference_profiles(part, records)
        if not part["profile"].notna().any():
            part = part.drop(columns=["profile", "dag", "profile_reference"])
        frames[str(source)] = part
    return frames


def run_evaluation(paths, *, protocols=None, models=None, out_dir=None, quick=False,
                   progress=None, profile_paths=None, use_cache=True, report=True,
                   command=None) -> dict:
    """Score models under protocols on each source of ``paths``; write the report.

    Returns ``{"rows": [metric rows], "cells": [...], "markdown_table": str,
    "report": path or None, "timing": {"wall_s", "computed", "cached"}}``; ``command`` is
    the command line the report names for reproducing it.
    """
    if protocols:
        unknown = [p for p in protocols if p not in PROTOCOLS]
        if unknown:
            raise UsageError(f"unknown protocol(s) {', '.join(unknown)}; choose from "
                             + ", ".join(PROTOCOLS))
    models = list(models or DEFAULT_MODELS)
    for name in models:
        model_from_spec(name)  # raises a clear error for an unknown name
    out = Path(out_dir) if out_dir else DEFAULT_REPORT_DIR
    cache_dir = out / "cache" if use_cache else None
    frames = load_evaluation_frames(paths, profile_paths)
    tasks = []
    for dataset, frame in frames.items():
        wanted = PROTOCOLS_BY_SOURCE.get(dataset, DEFAULT_PROTOCOLS)
        for protocol in wanted:
            if protocols and protocol not in protocols:
                continue
            for name in models:
                if name.startswith("rnn") and "dag" not in frame.columns:
                    continue  # without DAGs the RNN is the FC network with an empty sequence
                tasks.append((dataset, protocol, name))
    from tqdm import tqdm

    started = time.perf_counter()
    cached_before = set(cache_dir.glob("*.json")) if cache_dir and cache_dir.is_dir() else set()
    cells = []
    bar = tqdm(tasks, file=progress, disable=progress is None, unit="cell")
    for dataset, protocol, name in bar:
        bar.set_description(f"{dataset} {protocol} {name}")
        cells.append(evaluate_cell(frames[dataset], dataset, protocol, name, quick=quick,
                                   cache_dir=cache_dir))
    rows = summary_rows(cells)
    computed = len(set(cache_dir.glob("*.json")) - cached_before) if cache_dir else len(cells)
    result = {"rows": rows, "cells": cells, "frames": {k: len(v) for k, v in frames.items()},
              "markdown_table": markdown_table(rows), "report": None,
              "timing": {"wall_s": time.perf_counter() - started, "computed": computed,
                         "cached": len(cells) - computed}}
    if report:
        from jobgauge.models._report import write_report

        result["report"] = str(write_report(result, frames, out, quick=quick, command=command))
    return result


def _percent(value) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else f"{100 * value:.1f}"


def markdown_table(rows) -> str:
    """Model x (dataset, protocol) table of MdAPE (%), interval coverage in brackets."""
    if not rows:
        return "(no results)"
    models = []
    for row in rows:
        if row["model"] not in models:
            models.append(row["model"])
    columns = []
    for row in rows:
        key = (row["dataset"], row["protocol"])
        if key not in columns:
            columns.append(key)
    by_key = {(r["dataset"], r["protocol"], r["model"]): r for r in rows}
    lines = ["| dataset | protocol | " + " | ".join(models) + " |",
             "|---|---|" + "---|" * len(models)]
    for dataset, protocol in columns:
        cells = []
        best = min((by_key[(dataset, protocol, m)]["mdape"] for m in models
                    if (dataset, protocol, m) in by_key), default=None)
        for m in models:
            row = by_key.get((dataset, protocol, m))
            if row is None:
                cells.append("—")
                continue
            text = f"{_percent(row['mdape'])} ({_percent(row.get('coverage80'))})"
            cells.append(f"**{text}**" if row["mdape"] == best else text)
        label = protocol_label(protocol)
        lines.append(f"| {dataset} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
