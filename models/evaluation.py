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
  *reference* run of its workload (the fewest knobs set, then the smallest input),
  never its own; reference runs are not scored.  Local results are shown
  separately for TPC-H queries and for the HiBench/MapReduce jobs.
- ``cluster`` (d): held-out cluster configurations (instance type x count),
  5-fold GroupKFold; the Scout and C3O tables.

The quiet corpus (the tables of ``data/runs`` measured under the load guard, issue 13; ``bench/evaluate.py --quiet-corpus``) adds
protocols that ask where users ask, each reported per test size, slot layout or
family.  Every workload carries the profile of its reference run (fewest settings, then smallest input), taken
from the quiet runs or from the shipped runs in ``data/runs`` (whose runtimes were
measured under load, but whose profiles are fine as profiles).  That reference run
is the one run a user has of the job: it is on the training side of every fold of
these protocols and never scored.

- ``scaleup`` (e): train on every run at SF <= 1, predict every run above (SF 3,
  SF 10), reported per test scale factor.
- ``slots`` (f): train on ``local[2]``, predict ``local[1]`` and the standalone
  cluster at the scale factors the training side holds; and the reverse.
- ``families`` (g): the Scout and C3O tables; each instance family (the letters of
  ``m4``/``c5``/``r4``) is predicted by a model trained on the others.
- ``configs-sf1`` (a) and ``workloads-sf1`` (c): protocols (a) and (c) scored on the
  test runs at SF >= 1 only.

Metrics on the finished test runs: MdAPE, MAPE, P90 of the absolute
percentage error, share within 10 %, coverage of the 80 % interval and its median
width (high / low).
Censored test runs (``completed=False``) have no true runtime: they are not
scored, but the share whose prediction is at least the time limit is shown.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import re
import time
from pathlib import Path

import numpy as np

from jobgauge.errors import UsageError
from jobgauge.runtable import SHARED_DATASETS_ENV, public_run_tables

#: Where reports go unless told: ``bench/reports`` in the current folder.
DEFAULT_REPORT_DIR = Path("bench") / "reports"
EVAL_VERSION = 4
PROTOCOLS = {
    "configs": "(a) held-out configurations",
    "scale": "(b) scale extrapolation",
    "workloads": "(c) held-out workloads",
    "cluster": "(d) held-out cluster configurations",
    "scaleup": "(e) scale-up from SF <= 1",
    "slots": "(f) slots",
    "families": "(g) held-out instance families",
    "configs-sf1": "(a) held-out configurations at SF >= 1",
    "workloads-sf1": "(c) unseen TPC-H queries at SF >= 1",
}
#: The protocols of the quiet corpus (``--quiet-corpus``), per dataset.
QUIET_PROTOCOLS = {
    "quiet": ("configs-sf1", "workloads-sf1", "scaleup", "slots"),
    "scout-multinode": ("families",),
    "c3o-emr": ("families",),
}
#: Protocols whose test runs are reported per value of a column as well (one row each).
BREAKDOWNS = {"scaleup": "datasize", "slots": "instance_type", "families": "family",
              "configs-sf1": "datasize", "workloads-sf1": "datasize"}
#: Protocols (a) and (c) on the quiet corpus score the runs at this TPC-H scale factor or above.
LARGE_SCALE_FACTOR = 1.0
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


def shared_run_tables() -> list[Path]:
    """The shared Scout and C3O tables, where they exist: in ``$JOBGAUGE_SHARED_DATASETS``,
    else in ``../shared/datasets`` from the current folder (as in the README's
    examples)."""
    return public_run_tables(os.environ.get(SHARED_DATASETS_ENV)
                             or Path("..") / "shared" / "datasets")


def default_run_tables() -> list[Path]:
    """The shared Scout and C3O tables (where they exist) plus the runs shipped in
    :mod:`jobgauge.data`."""
    from jobgauge.data import run_tables

    return [*shared_run_tables(), *run_tables()]


# ------------------------------------------------------------- profiles
def default_profile_files() -> list[Path]:
    """The profile records shipped in :mod:`jobgauge.data`."""
    from jobgauge.data import profile_files

    return profile_files()


def record_dag(record):
    """The DAG of one profile record: the physical plan's operators and the event log's
    stages (with their measured metrics) side by side, as two components of one DAG.
    Each scan of the plan gets its files' bytes and growth and, under a broadcast, Spark's
    estimate of the broadcast over those bytes (``broadcast_share``,
    :func:`jobgauge.dag.broadcast_shares`): the record's own, else the shipped ones."""
    from jobgauge.dag import QueryDag, broadcast_shares
    from jobgauge.errors import GaugeError

    parts = []
    plan = record.get("physical_plan")
    if plan:
        try:
            parts.append(("plan", QueryDag.from_spark_plan(plan).to_dict()))
        except GaugeError:
            pass
        else:
            files = record.get("scan_files") or _shipped_scan_files()
            growth = _table_growth(record)
            shares = broadcast_shares(parts[0][1], record.get("scan_row_bytes")
                                      or _shipped_scan_row_bytes())
            for node in parts[0][1]["nodes"]:
                if node["id"] in shares:
                    node["broadcast_share"] = shares[node["id"]]
            size_scans(parts[0][1]["nodes"], files, growth)
    if record.get("stages"):
        try:
            parts.append(("stage", QueryDag.from_stages(_stage_growth(record)).to_dict()))
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


def size_scans(nodes, files: dict, growth: dict) -> None:
    """Give each scan node (a dict of a DAG's nodes) whose ``location`` is in ``files``
    ({location: bytes}) its files' bytes (``file_bytes``) and, where ``growth`` knows
    the location, how they grow with the data set (``file_growth``)."""
    for node in nodes:
        if node.get("location") in files:
            node["file_bytes"] = files[node["location"]]
            if node["location"] in growth:
                node["file_growth"] = growth[node["location"]]


def size_plan_scans(dag, dataset_bytes=None) -> None:
    """Give the scans of a plan (a QueryDag) whose files this machine holds their
    files' bytes and growth (:func:`size_scans`, with :func:`table_growth_by_name`),
    and the DAG the bytes of the data set they are of (its ``dataset_bytes`` graph
    attribute): ``dataset_bytes`` where given, else the bytes of the one directory that
    holds every scanned table, else those of the tables it scans (each once).  So the
    stage model can size a query it never measured by what its plan reads
    (``models._stage.plan_reads``): the web service's planner and ``jobgauge hive
    explain --predict`` on a server of this machine.  A plan none of whose scans this
    machine holds keeps no bytes (and ``dataset_bytes``, where given)."""
    from jobgauge.models._stage import scan_table
    from jobgauge.profiler.runners.collect import scan_files
    from jobgauge.profiler.workloads.base import directory_bytes

    scans = [attrs for _, attrs in dag.nodes(data=True) if attrs.get("location")]
    files = scan_files(locations=[attrs["location"] for attrs in scans])
    names = table_growth_by_name()
    growth = {location: names[scan_table(location)] for location in files
              if scan_table(location) in names}
    size_scans(scans, files, growth)
    if dataset_bytes is None and files:
        parents = {Path(str(location).removeprefix("file:")).parent for location in files}
        folder = parents.pop() if len(parents) == 1 else None
        dataset_bytes = (directory_bytes(folder) if folder and folder.is_dir() else None) \
            or sum(files.values())
    if dataset_bytes:
        dag.graph["dataset_bytes"] = float(dataset_bytes)


@functools.lru_cache(maxsize=1)
def table_growth_by_name() -> dict:
    """{file name: exponent} of :func:`jobgauge.models._stage.table_growth` over the
    shipped scan files, by the table's file name (``lineitem.parquet``: 1.0,
    ``nation.parquet``: 0.0): how the tables of a copy of the same data set elsewhere
    grow (the median over the shipped locations of that name).  Read once per process
    (the web planner asks it for every pasted query); callers do not change it."""
    from jobgauge.models._stage import scan_table

    names = {}
    for location, exponent in _shipped_growth().items():
        names.setdefault(scan_table(location), []).append(exponent)
    return {name: float(np.median(values)) for name, values in names.items()}


def _stage_growth(record) -> list:
    """The record's stages, each that names the files it scanned (``scan_files``, as
    the event log listed them) with how they grow with the data (``file_growth``,
    :func:`jobgauge.models._stage.table_growth`, weighted by their bytes) where known."""
    stages = record["stages"]
    if not any(isinstance(s, dict) and s.get("scan_files") for s in stages):
        return stages
    growth = _table_growth(record)
    out = []
    for stage in stages:
        files = stage.get("scan_files") if isinstance(stage, dict) else None
        known = {loc: size for loc, size in (files or {}).items() if loc in growth}
        total = sum(known.values())
        if known and len(known) == len(files) and total > 0:
            stage = {**stage, "file_growth": sum(growth[loc] * size
                                                 for loc, size in known.items()) / total}
        out.append(stage)
    return out


def _table_growth(record) -> dict:
    """:func:`jobgauge.models._stage.table_growth` of the shipped files and the
    record's own (computed once for the shipped files alone, the shipped records)."""
    from jobgauge.models._stage import table_growth

    own = record.get("scan_files")
    if not own or own.items() <= _shipped_scan_files().items():
        return _shipped_growth()
    return table_growth({**_shipped_scan_files(), **own})


@functools.lru_cache(maxsize=1)
def _shipped_growth() -> dict:
    from jobgauge.models._stage import table_growth

    return table_growth(_shipped_scan_files())


@functools.lru_cache(maxsize=1)
def _shipped_scan_files() -> dict:
    from jobgauge.data import scan_files

    return scan_files()


@functools.lru_cache(maxsize=1)
def _shipped_scan_row_bytes() -> dict:
    from jobgauge.data import scan_row_bytes

    return scan_row_bytes()


def attach_reference_profiles(frame, records, references=None):
    """Add ``profile`` and ``dag`` columns from one reference run per workload, or for a
    job of the user's one per size level (each run gets the level nearest its input).

    The reference runs of a workload (per framework) are chosen by
    ``models._stage.sized_reference_runs`` (the profiled run with the fewest knobs set,
    then the smallest input, then the smallest run_id), or given: ``references``,
    {(workload, framework): [positions in ``frame`` of runs with a record in ``records``]},
    as ``sized_reference_runs`` returns them (``bench/reference_spread.py`` draws other
    profiling runs); a benchmark's profile stands for "the user profiled this job once".
    Runs of the public tables (``runtable.PUBLIC_SOURCES``: Scout's and C3O's builds of
    same-named jobs) get no profile: they keep their own measured curves.  (Replayed
    from jobgauge's local HiBench profiles, 10^4-10^6 times smaller, they set the
    m4/c4/r4 slot speeds 60x below local[2]'s, and TPC-H Q18 at SF 100 on m5.xlarge,
    a family no run had, was answered 11x slower than without them.)
    A ``profile_reference`` column marks the reference runs (they are not scored in
    evaluations).  A ``task_cpu_s`` column keeps each run's own
    tasks' CPU seconds (its own profile's ``executor_cpu_time_ms``; NaN without one):
    beside ``cpu_time_s`` it is the run's CPU accounting.
    """
    from jobgauge.models._stage import nearest_size, sized_reference_runs
    from jobgauge.runtable import public_origins

    frame = frame.copy()
    frame["profile"] = None
    frame["dag"] = None
    frame["profile_reference"] = False
    keys = list(zip(frame["source"].astype(str), frame["run_id"].astype(str)))
    frame["task_cpu_s"] = [_task_cpu_s((records or {}).get(key)) for key in keys]
    if not records:
        return frame
    has = np.array([k in records for k in keys])
    if not has.any():
        return frame
    jobs = _keys(frame, ["workload", "framework"])  # Hadoop sort and Spark sort differ
    jobs[public_origins(frame) != ""] = None
    sizes = frame["input_bytes"].astype(float).to_numpy() \
        if "input_bytes" in frame.columns else np.full(len(frame), np.nan)
    if references is None:
        references = sized_reference_runs(frame, has)
    for (workload, framework), chosen in references.items():
        job = f"{workload}|{framework}"
        profiles = [(record.get("summary") or None, record_dag(record))
                    for record in (records[keys[best]] for best in chosen)]
        levels = [sizes[best] for best in chosen]
        for i in np.flatnonzero(jobs == job):
            summary, dag = profiles[nearest_size(levels, sizes[i]) if len(levels) > 1 else 0]
            frame.at[frame.index[i], "profile"] = summary
            frame.at[frame.index[i], "dag"] = dag
        for best in chosen:
            frame.at[frame.index[best], "profile_reference"] = True
    return frame


def _task_cpu_s(record) -> float:
    """A profile record's tasks' CPU seconds, NaN where it has none."""
    from jobgauge.models.features import _num

    summary = record.get("summary") if isinstance(record, dict) else None
    value = _num(summary, "executor_cpu_time_ms") if isinstance(summary, dict) else None
    return value / 1e3 if value is not None and value >= 0 else math.nan


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


def scale_factors(frame):
    """Per row: the TPC-H scale factor of its size label (``sf3`` -> 3.0), NaN for other sizes."""
    from jobgauge.models.features import size_scale

    labels = frame["datasize"].fillna("").astype(str)
    return np.array([size_scale(label)[0] for label in labels], dtype=float)


def instance_letters(instance_type) -> str:
    """The family letters of an instance type: ``m`` for ``m5.xlarge`` and ``m4.large``,
    ``local`` for ``local[2]``."""
    from jobgauge.models.features import instance_family

    family = instance_family(instance_type)
    letters = re.match(r"[a-z]+", family)
    return letters.group(0) if letters else family


def breakdown_values(frame, protocol):
    """Per row, what :data:`BREAKDOWNS` reports a protocol's test runs by (None: not broken
    down): the size label, the instance type, or the instance family letters."""
    column = BREAKDOWNS.get(protocol)
    if column is None:
        return None
    if column == "family":
        return np.array([instance_letters(t) for t in frame["instance_type"]], dtype=object)
    return frame[column].fillna("").astype(str).to_numpy().astype(object)


def _references(frame):
    """Per row: True for the reference (profiling) run of its workload."""
    if "profile_reference" not in frame.columns:
        return np.zeros(len(frame), dtype=bool)
    return frame["profile_reference"].fillna(False).to_numpy(dtype=bool)


def _with_references(folds, frame, keep_test=None):
    """Folds with every reference run on the training side (never tested), and test runs
    limited to ``keep_test``; folds left without test runs are dropped."""
    reference = _references(frame)
    out = []
    for train, test in folds:
        test = test[~reference[test]]
        if keep_test is not None:
            test = test[keep_test[test]]
        if len(test):
            out.append((np.union1d(train, np.flatnonzero(reference)), test))
    return out


#: Protocol (f) trains on this Spark master and predicts the others (and the reverse).
SLOTS_TRAIN_TYPE = "local[2]"


def _slot_folds(frame):
    """Protocol (f): local[2] -> the rest, and the rest -> local[2], each at the size labels
    the training side holds; only Spark runs are tested (a MapReduce job in Hadoop's
    local runner has no Spark master to move)."""
    types = frame["instance_type"].astype(str).to_numpy()
    sizes = frame["datasize"].fillna("").astype(str).to_numpy()
    spark = frame["framework"].astype(str).to_numpy() == "spark" \
        if "framework" in frame.columns else np.ones(len(frame), dtype=bool)
    reference = _references(frame)
    folds = []
    for train_side in (types == SLOTS_TRAIN_TYPE, types != SLOTS_TRAIN_TYPE):
        trained = train_side & ~reference
        if not trained.any():
            continue
        test = ~train_side & ~reference & spark & np.isin(sizes, np.unique(sizes[trained]))
        if test.any():
            folds.append((np.flatnonzero(train_side | reference), np.flatnonzero(test)))
    return folds


def protocol_folds(frame, protocol, *, n_splits=5):
    """List of (train index, test index) for a protocol on one source's frame."""
    if protocol in ("configs-sf1", "workloads-sf1"):
        large = scale_factors(frame) >= LARGE_SCALE_FACTOR
        return _with_references(protocol_folds(frame, protocol.split("-")[0],
                                               n_splits=n_splits), frame, keep_test=large)
    if protocol == "scaleup":
        scale = scale_factors(frame)
        test = np.flatnonzero(scale > LARGE_SCALE_FACTOR)
        if not len(test):
            return []
        return _with_references([(np.flatnonzero(scale <= LARGE_SCALE_FACTOR), test)], frame)
    if protocol == "slots":
        return _slot_folds(frame)
    if protocol == "families":
        letters = breakdown_values(frame, "families")
        unique = np.unique(letters)
        if len(unique) < 2:
            return []
        return _with_references([(np.flatnonzero(letters != f), np.flatnonzero(letters == f))
                                 for f in unique], frame)
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
        low, high = np.asarray(low, float), np.asarray(high, float)
        out["coverage80"] = float(((y >= low) & (y <= high)).mean())
        with np.errstate(divide="ignore", invalid="ignore"):
            out["width80"] = float(np.median(np.where(low > 0, high / low, np.inf)))
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


def _model_code(model) -> bytes:
    """The source of the jobgauge modules a model's class is made of (its class hierarchy
    and the feature module) and of every jobgauge module they take a name from, and so on:
    a cached cell is recomputed when that code changes.  (The hierarchy alone missed
    ``jobgauge.units`` and ``jobgauge.knobs``, whose sizes and engine defaults the features
    read: session 51 found fc's cached cells up to 1.1 points off their recomputed
    figures.)"""
    import inspect
    import sys
    import types

    names = {cls.__module__ for cls in type(model).__mro__}
    names.add("jobgauge.models.features")
    pending = sorted(names)
    while pending:
        module = sys.modules.get(pending.pop())
        for value in vars(module).values() if module is not None else ():
            name = value.__name__ if isinstance(value, types.ModuleType) \
                else getattr(value, "__module__", None)
            if isinstance(name, str) and name.startswith("jobgauge.") and name not in names \
                    and name in sys.modules:
                names.add(name)
                pending.append(name)
    code = []
    for name in sorted(n for n in names if n.startswith("jobgauge.")):
        module = sys.modules.get(name)
        path = inspect.getsourcefile(module) if module is not None else None
        if path:
            code.append(Path(path).read_bytes())
    return b"\0".join(code)


#: The libraries whose versions are part of a cached cell's key (:func:`_library_versions`).
KEYED_LIBRARIES = ("numpy", "scipy", "scikit-learn", "pandas", "torch")


def _library_versions() -> str:
    """The versions of :data:`KEYED_LIBRARIES` and of Python: a cached cell is recomputed
    when they change, as when the model's code does.  (The report of 6a8ddc2 took 18 of
    its 22 cells from a cache, and its scale-up figures, 16.8 / 16.8 %, are not what
    that commit computes with none cached, 17.1 / 16.5 % in session 63: what changed
    was not in the key, whose code, runs and protocol were the same.)"""
    import importlib.metadata
    import platform

    versions = [f"python={platform.python_version()}"]
    for name in KEYED_LIBRARIES:
        try:
            versions.append(f"{name}={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            versions.append(f"{name}=none")
    return ";".join(versions)


#: numpy's SIMD levels, the widest first (:func:`_machine`).
SIMD_LEVELS = ("AVX512F", "AVX2", "AVX", "SSE42", "ASIMD")


@functools.lru_cache(maxsize=1)
def _machine(cpuinfo: str = "/proc/cpuinfo") -> str:
    """The CPU the figures were computed on (``cpuinfo``: the file that describes it):
    its model, the widest SIMD level numpy dispatches to there, a digest of its feature
    flags and the core OpenBLAS (loaded with numpy) picked for it.  The same code, runs and library versions (:func:`_library_versions`) gave
    ff99e5c's scale-up from SF <= 1 as 17.1 / 16.5 % in sessions 63 and 66 and
    16.8 / 16.8 % in sessions 64 and 67, each again on rerun and with any
    ``PYTHONHASHSEED``, on machines that all call themselves an AMD EPYC with AVX-512:
    floating-point sums taken in other orders by other vector units and BLAS kernels are
    the likely cause, and the model name and SIMD level alone did not tell them apart."""
    import platform

    model, flags = "", ""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                if name == "model name" and not model:
                    model = value.strip()
                elif name in ("flags", "features") and not flags:
                    flags = " ".join(sorted(value.split()))
    except OSError:
        pass
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:     # another numpy layout: the level is not known
        features = {}
    simd = next((level for level in SIMD_LEVELS if features.get(level)), "unknown")
    try:
        from threadpoolctl import threadpool_info

        blas = next((str(info.get("architecture")) for info in threadpool_info()
                     if info.get("user_api") == "blas" and info.get("architecture")),
                    "unknown")
    except ImportError:
        blas = "unknown"
    digest = hashlib.sha1(flags.encode()).hexdigest()[:8] if flags else "unknown"
    return (f"cpu={model or platform.machine() or 'unknown'};simd={simd};"
            f"flags={digest};blas={blas}")


def _environment() -> str:
    """:func:`_library_versions` and :func:`_machine`: what a cached cell is keyed on
    besides the model's code, runs and protocol, and what a report says it ran with."""
    return f"{_library_versions()};{_machine()}"


def _cache_key(frame, dataset, protocol, model, quick) -> str:
    digest = hashlib.sha1()
    digest.update(json.dumps([EVAL_VERSION, dataset, protocol, repr(sorted(
        model.get_params(deep=False).items(), key=str)), quick]).encode())
    digest.update(_model_code(model))
    digest.update(_environment().encode())
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
    breakdown = breakdown_values(frame, protocol)
    result = {"dataset": dataset, "protocol": protocol, "model": name, "fit_s": 0.0,
              "folds": len(folds), "train_rows": [], "workload": [], "y": [], "completed": [],
              "predicted": [], "low": [], "high": [], "index": [], "datasize": [],
              "breakdown": None if breakdown is None else []}
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
        result["index"] += [int(i) for i in test]
        result["datasize"] += test_frame["datasize"].fillna("").astype(str).tolist()
        if breakdown is not None:
            result["breakdown"] += [str(v) for v in breakdown[test]]
    if cache_file is not None:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        cache_file.write_text(json.dumps(result))
    return result


def summarize(cell, *, subset=None, keep=None, frame=None) -> dict | None:
    """Metric row of a cell (optionally only test runs whose workload passes ``subset``, or
    those ``keep`` marks).  With the cell's ``frame``, the row also holds the repeat noise
    of its finished test runs (``noise_mdape``, ``noise_runs``; see :func:`noise_floor`)."""
    y = np.array(cell["y"], float)
    if len(y) == 0:
        return None
    keep = np.ones(len(y), dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
    if subset is not None:
        keep = keep & np.array([subset(w) for w in cell["workload"]], dtype=bool)
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
    if frame is not None and cell.get("index"):
        noise = noise_floor(frame.iloc[np.array(cell["index"])[done]])
        row["noise_mdape"] = None if noise is None else noise["mdape"]
        row["noise_runs"] = 0 if noise is None else noise["runs"]
    return row


def _breakdown_order(value):
    """Sort key of breakdown values: size labels by scale factor (SF 3 before SF 10), the
    rest by name."""
    from jobgauge.models.features import size_scale

    scale = size_scale(value)[0]
    return (0, scale, "") if math.isfinite(scale) else (1, 0.0, str(value))


def summary_rows(cells, frames=None) -> list[dict]:
    """Metric rows of cells, plus one row per subset (``protocol:tpch``, ``protocol:jobs``)
    for cells whose test runs mix TPC-H queries and other jobs, and for the protocols of
    :data:`BREAKDOWNS` one row per value (``scaleup:sf3``, ``slots:local[1]``,
    ``families:r``).  With ``frames`` ({dataset: frame}) each row holds the repeat noise
    of its test runs."""
    rows = []
    for cell in cells:
        frame = (frames or {}).get(cell["dataset"])
        row = summarize(cell, frame=frame)
        if row is None:
            continue
        rows.append(row)
        if cell["protocol"] in BREAKDOWNS:
            values = np.array(cell.get("breakdown") or [], dtype=object)
            distinct = sorted(set(values), key=_breakdown_order)
            if len(distinct) < 2 and cell["protocol"] != "scaleup":
                continue  # one value: its row would repeat the protocol's (scale-up: the SF)
            for value in distinct:
                part = summarize(cell, keep=values == value, frame=frame)
                if part is not None:
                    part["protocol"] = f"{cell['protocol']}:{value}"
                    rows.append(part)
            continue
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
    if BREAKDOWNS.get(base) == "datasize" and subset:
        return f"{label}: {'predict ' if base == 'scaleup' else ''}{subset.replace('sf', 'SF ')}"
    if base == "slots" and subset:
        if subset == SLOTS_TRAIN_TYPE:
            return f"{label}: train the others, predict {subset}"
        return f"{label}: train {SLOTS_TRAIN_TYPE}, predict {subset}"
    if base == "families" and subset:
        return f"{label}: predict {subset}"
    return f"{label}: {SUBSETS[subset][0]}" if subset in SUBSETS else label


def noise_floor(frame) -> dict | None:
    """How well a run's repeats predict it: MdAPE of each finished run against the median of
    the other runs of exactly the same configuration (same workload, size, cluster, knobs).

    No model can expect to beat this on held-out configurations; None without repeats.
    """
    from jobgauge.runtable import repeat_noise

    keys = _keys(frame, ["workload", "framework", "datasize", "instance_type", "instance_count",
                         "config_json"])
    done = frame["completed"].to_numpy(dtype=bool)
    runtime = frame["runtime_s"].to_numpy(dtype=float)
    return repeat_noise(runtime[done & (keys == key)] for key in np.unique(keys[done]))


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


def _check_names(protocols, models):
    """Raise a clear UsageError for an unknown protocol or model name."""
    if protocols:
        unknown = [p for p in protocols if p not in PROTOCOLS]
        if unknown:
            raise UsageError(f"unknown protocol(s) {', '.join(unknown)}; choose from "
                             + ", ".join(PROTOCOLS))
    for name in models:
        model_from_spec(name)  # raises a clear error for an unknown name


def _evaluate_plan(frames, plan, models, *, quick, cache_dir, progress):
    """Cells of every (dataset, protocol in ``plan[dataset]``, model); and the timing."""
    tasks = []
    for dataset, frame in frames.items():
        for protocol in plan.get(dataset, ()):
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
    computed = len(set(cache_dir.glob("*.json")) - cached_before) if cache_dir else len(cells)
    return cells, {"wall_s": time.perf_counter() - started, "computed": computed,
                   "cached": len(cells) - computed}


def run_evaluation(paths, *, protocols=None, models=None, out_dir=None, quick=False,
                   progress=None, profile_paths=None, use_cache=True, report=True,
                   command=None) -> dict:
    """Score models under protocols on each source of ``paths``; write the report.

    Returns ``{"rows": [metric rows], "cells": [...], "markdown_table": str,
    "report": path or None, "timing": {"wall_s", "computed", "cached"}}``; ``command`` is
    the command line the report names for reproducing it.  The quiet-corpus protocols
    (:data:`QUIET_PROTOCOLS`) run here only where asked for by name.
    """
    models = list(models or DEFAULT_MODELS)
    _check_names(protocols, models)
    out = Path(out_dir) if out_dir else DEFAULT_REPORT_DIR
    cache_dir = out / "cache" if use_cache else None
    frames = load_evaluation_frames(paths, profile_paths)
    plan = {}
    for dataset in frames:
        wanted = PROTOCOLS_BY_SOURCE.get(dataset, DEFAULT_PROTOCOLS)
        if protocols:  # the defaults that are asked for, then the quiet ones asked for
            wanted = [p for p in wanted if p in protocols] + \
                [p for p in protocols if p not in _DEFAULT_PROTOCOL_SET]
        plan[dataset] = wanted
    cells, timing = _evaluate_plan(frames, plan, models, quick=quick, cache_dir=cache_dir,
                                   progress=progress)
    rows = summary_rows(cells)
    result = {"rows": rows, "cells": cells, "frames": {k: len(v) for k, v in frames.items()},
              "markdown_table": markdown_table(rows), "report": None, "timing": timing}
    if report:
        from jobgauge.models._report import write_report

        result["report"] = str(write_report(result, frames, out, quick=quick, command=command))
    return result


#: The protocols of :func:`run_evaluation`'s per-source defaults.
_DEFAULT_PROTOCOL_SET = {p for ps in PROTOCOLS_BY_SOURCE.values() for p in ps} | \
    set(DEFAULT_PROTOCOLS)


# ------------------------------------------------------------- the quiet corpus
def quiet_models() -> list[str]:
    """The models the quiet-corpus report compares: the stage predictor, Ernest, the
    registry's current default model (read now, not when this module was imported), the
    FC network (the default when issue 13 was filed) and the DAG network: target (c) asks
    both DAG-aware predictors, this one and the RNN, to beat the FC network."""
    from jobgauge.models import DEFAULT_MODEL

    return list(dict.fromkeys(["stage", "ernest", DEFAULT_MODEL, "fc", "rnn"]))


def quiet_run_tables(quiet_dir=None) -> list[Path]:
    """The quiet corpus's run tables, sorted by name: the tables of ``quiet_dir/runs``
    (default: the shipped ``data/runs``) measured under the collector's load guard (their
    header has ``quiet_start``, issue 13); the older tables measured beside other work
    (HiBench, MapReduce) are not part of it."""
    from jobgauge.runtable import is_quiet_table

    folder = Path(quiet_dir) if quiet_dir else _repo_quiet_dir()
    return [path for path in sorted((folder / "runs").glob("*.csv.gz"))
            if is_quiet_table(path)]


def _repo_quiet_dir() -> Path:
    from jobgauge.data import runs_dir

    return runs_dir().parent


def load_quiet_frames(quiet_dir=None, *, reference_runs=None, reference_profiles=None,
                      shared_tables=None) -> tuple[dict, list[tuple[Path, int, int]]]:
    """({dataset: frame}, [(file, rows, rows in the evaluation)]): the quiet corpus as
    dataset ``quiet`` and the shared Scout and C3O tables, each source its own dataset.

    Every quiet workload carries the profile (and DAG) of its reference run among
    the quiet runs and ``reference_runs`` (default: none, the quiet runs' own profiles;
    e.g. the runs measured under load in ``data/loaded/runs`` with their profiles in
    ``reference_profiles``); a reference run that is chosen joins the quiet frame as its
    workload's reference run (``corpus`` = ``shipped``), the others stay out.

    Quiet tables without TPC-H runs (HiBench, MapReduce) stay out: the protocols of issue
    13 ask about TPC-H queries, scale factors and masters.  With the MapReduce tables in,
    their reference runs joined the local[2] side of the slots protocol and taught it the
    contention of Hadoop's local runner (local[2] -> local[1] 23.6 -> 29.2 % MdAPE);
    with the quiet HiBench tiny table in, local[2] -> local[1] erred by 36 % at SF 1 and
    on HiBench tiny alike (only local[2] runs train that fold, so the contention is
    learned from nothing but the regularization).
    """
    import pandas as pd

    from jobgauge.runtable import read_profile_records, read_run_tables

    folder = Path(quiet_dir) if quiet_dir else _repo_quiet_dir()
    quiet_paths = quiet_run_tables(folder)
    if not quiet_paths:
        raise UsageError(f"no quiet run tables in {folder / 'runs'}; collect them with "
                         "'jobgauge collect bench/plans/tpch-sf1.toml'")
    if reference_runs is None:
        reference_runs = []
    if reference_profiles is None:
        from jobgauge.runtable import profiles_beside

        reference_profiles = [p for path in reference_runs for p in profiles_beside(path)]
    if shared_tables is None:
        shared_tables = shared_run_tables()
    files = []
    parts = []
    for path in quiet_paths:
        part = read_run_tables([path]).assign(corpus="quiet", table=str(path))
        if len(part) and not part["workload"].astype(str).str.startswith("tpch-").any():
            continue                    # the protocols ask about TPC-H queries and scales
        files.append([Path(path), len(part), len(part)])
        parts.append(part)
    jobs = set(_keys(parts[0], ["workload", "framework"]).tolist()).union(
        *(_keys(part, ["workload", "framework"]).tolist() for part in parts[1:]))
    for path in reference_runs or ():
        part = read_run_tables([path])
        files.append([Path(path), len(part), 0])
        mine = [job in jobs for job in _keys(part, ["workload", "framework"])] if len(part) \
            else []
        parts.append(part[mine].assign(corpus="shipped", table=str(path)))
    records = read_profile_records([*sorted((folder / "profiles").glob("*.jsonl*")),
                                    *reference_profiles])
    combined = attach_reference_profiles(pd.concat(parts, ignore_index=True), records)
    keep = (combined["corpus"] == "quiet") | combined["profile_reference"]
    used = combined[keep]["table"].value_counts()
    for entry in files:
        entry[2] = int(used.get(str(entry[0]), 0))
    frames = {"quiet": combined[keep].drop(columns=["table"]).reset_index(drop=True)}
    shared, shared_files = shared_frames(shared_tables)
    frames.update(shared)
    return frames, [tuple(entry) for entry in files] + shared_files


def shared_frames(shared_tables=None) -> tuple[dict, list[tuple[Path, int, int]]]:
    """({source: frame}, [(file, rows, rows in the evaluation)]): the shared Scout and C3O
    tables (``shared_tables``, default :func:`shared_run_tables`), each source its own
    dataset, as :func:`load_quiet_frames` evaluates them."""
    from jobgauge.runtable import read_run_tables

    frames, files = {}, []
    for path in shared_run_tables() if shared_tables is None else shared_tables:
        part = read_run_tables([path])
        files.append((Path(path), len(part), len(part)))
        for source in sorted(part["source"].unique()):
            frames[str(source)] = part[part["source"] == source].reset_index(drop=True)
    return frames, files


def quiet_frame_and_records(quiet_dir=None):
    """(frame, records): the quiet TPC-H runs (dataset ``quiet`` of
    :func:`load_quiet_frames`, each workload with its reference profile) and every profile
    record of the quiet corpus keyed by (source, run_id), for the reports that read each
    run's own plan or CPU accounting (``bench/slot_accounting.py``,
    ``bench/join_switches.py``)."""
    from jobgauge.runtable import read_profile_records

    folder = Path(quiet_dir) if quiet_dir else _repo_quiet_dir()
    frame = load_quiet_frames(folder, shared_tables=[])[0]["quiet"]
    return frame, read_profile_records(sorted((folder / "profiles").glob("*.jsonl*")))


def run_quiet_evaluation(*, quiet_dir=None, protocols=None, models=None, out_dir=None,
                         quick=False, progress=None, use_cache=True, reference_runs=None,
                         reference_profiles=None, shared_tables=None) -> dict:
    """Score models under the quiet-corpus protocols (:data:`QUIET_PROTOCOLS`).

    Returns ``{"rows", "cells", "frames" ({dataset: frame}), "files" ([(path, rows,
    rows in the evaluation)]),
    "timing"}``; the report is written by ``models._report.write_quiet_report``.
    """
    models = list(models or quiet_models())
    _check_names(protocols, models)
    out = Path(out_dir) if out_dir else DEFAULT_REPORT_DIR
    frames, files = load_quiet_frames(quiet_dir, reference_runs=reference_runs,
                                      reference_profiles=reference_profiles,
                                      shared_tables=shared_tables)
    plan = {dataset: [p for p in QUIET_PROTOCOLS.get(dataset, ())
                      if not protocols or p in protocols] for dataset in frames}
    cells, timing = _evaluate_plan(frames, plan, models, quick=quick,
                                   cache_dir=out / "cache" if use_cache else None,
                                   progress=progress)
    return {"rows": summary_rows(cells, frames), "cells": cells, "frames": frames,
            "files": files, "models": models, "timing": timing}


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
