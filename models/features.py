"""Numeric features of a run table, for every runtime model.

:class:`RunFeatures` turns a run-table DataFrame (the shape of
``jobgauge.runtable.read_run_tables``, optionally with ``profile`` and ``dag``
columns) into a dense float matrix without missing values:

- resources: ``vcpus``, ``memory_gib``, ``instance_count``, ``total_vcpus``,
  memory per vCPU, logs of these, and the Spark executor layout from
  ``spark.executor.instances`` / ``spark.executor.cores`` /
  ``spark.executor.memory`` (one executor per node with all its cores when the
  configuration does not say; ``spark.cores.max`` caps the cores in all, as a
  standalone cluster does; Hadoop's local job runner runs
  ``mapreduce.local.map.tasks.maximum`` maps at once, default 1);
- data size: ``log_input_bytes`` (estimated from the size label seen in
  training when the row has no ``input_bytes``), the TPC-H scale factor of a
  label such as ``sf0.1`` and the HiBench size ordinal
  (tiny < small < medium < large < huge < gigantic < bigdata);
- knobs from ``config``: numbers, booleans and sizes/durations (``"10m"``,
  ``"64MB"``, ``"120s"``, read by ``jobgauge.units``) as numbers, with the
  engine defaults of the knob table (``jobgauge.knobs``) for rows that do not
  set a knob; small categorical knobs one-hot;
- one-hot instance family, framework and workload for the values seen in
  training (unseen ones are all-zero, so they still get a prediction from the
  numeric features);
- profile features when a ``profile`` column holds ``Profile.summary()``
  dicts: input size, shuffle/input ratio, CPU time per byte, selectivity, spill
  and GC shares, stage and task counts and the profiling run's own runtime.

Example::

    >>> features = RunFeatures().fit(frame)
    >>> matrix = features.transform(frame)          # (n_rows, n_features)
    >>> features.get_feature_names_out()[:3]
    array(['vcpus', 'memory_gib', 'instance_count'], dtype=object)
"""

from __future__ import annotations

import json
import math
from urllib.parse import urlsplit

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin

from jobgauge.errors import ModelError, NotFittedError, UsageError
from jobgauge.job import DEFAULT_EXECUTOR_MEMORY, memory_gib
from jobgauge.knobs import defaults_as_text
from jobgauge.models._params import store_params
from jobgauge.units import (  # noqa: F401 (size_scale and HIBENCH_SIZES re-exported)
    HIBENCH_SIZES, bytes_at_scale, parse_quantity, size_scale)

REQUIRED_COLUMNS = ("workload", "framework", "instance_type", "instance_count", "vcpus")
#: Maps Hadoop's local job runner runs at once unless ``mapreduce.local.map.tasks.maximum``
#: says (Hadoop's default).
LOCAL_MAP_SLOTS = 1.0
LAYOUT_KEYS = ("spark.executor.instances", "spark.executor.cores", "spark.executor.memory",
               "spark.cores.max", "mapreduce.local.map.tasks.maximum")

# Engine defaults of the knobs (jobgauge.knobs), used for rows that do not set
# them: the job then ran with the engine's default, a known value, not a missing one.
KNOB_DEFAULTS = defaults_as_text()
#: Spark's executor heap where no setting gives one (the knob table's default), GiB.
SPARK_EXECUTOR_MEMORY_GIB = memory_gib(DEFAULT_EXECUTOR_MEMORY)


# Profile-derived features: name -> function of a summary dict (None if it cannot say).
PROFILE_FEATURES = (
    "log_input_bytes", "shuffle_ratio", "log_cpu_ms_per_mb", "log_run_ms_per_mb",
    "output_selectivity", "record_selectivity", "spill_ratio", "gc_share",
    "log_n_stages", "log_n_tasks", "log_n_jobs", "log_runtime_s", "critical_path_share",
)


def parse_knob(value):
    """A knob value as a float where it is a number, boolean, size or duration, else a str.

    Sizes use binary units as Spark does (``"10m"`` is 10 MiB); durations need
    a time unit (``"120s"``, ``"5min"``, ``"100ms"``).  Numbers, sizes and
    durations are read by :func:`jobgauge.units.parse_quantity`; any other text
    is a category.

    >>> parse_knob("64MB"), parse_knob("true"), parse_knob("120s"), parse_knob("lz4")
    (67108864.0, 1.0, 120.0, 'lz4')
    """
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if value is None:
        return None
    text = str(value).strip()
    lowered = text.lower()
    if lowered in ("true", "yes", "on"):
        return 1.0
    if lowered in ("false", "no", "off"):
        return 0.0
    try:
        return parse_quantity(text)
    except UsageError:
        return text


def instance_family(instance_type) -> str:
    """The family of an instance type: ``c4`` for ``c4.2xlarge``, ``local`` for ``local[2]``."""
    text = str(instance_type or "").strip().lower()
    if text.startswith("local"):
        return "local"
    return text.split(".", 1)[0] if text else "unknown"


#: Where a run ran: on one machine (``"local"``: local mode, or a cluster whose master is
#: on the loopback address, as jobgauge's own standalone cluster) or on other machines
#: (``"remote"``: a cloud instance type, a YARN or remote cluster).  The machines differ in
#: speed, and local mode's memory is the driver's heap where a node's is the node's.
RUN_MODES = ("local", "remote")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def run_modes(frame) -> np.ndarray:
    """Each row's mode (:data:`RUN_MODES`): ``"local"`` where its instance family is
    ``local`` or its ``spark.master`` names a host on the loopback address, else
    ``"remote"``."""
    modes = []
    for instance_type, config in zip(frame["instance_type"], row_configs(frame)):
        master = str(config.get("spark.master") or "")
        try:
            host = urlsplit(master).hostname if "://" in master else None
        except ValueError:
            host = None
        modes.append("local" if instance_family(instance_type) == "local"
                     or master.startswith("local") or host in LOOPBACK_HOSTS else "remote")
    return np.array(modes, dtype=object)


def _as_config(value) -> dict:
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.strip():
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            raise ModelError(f"config_json is not valid JSON: {value[:60]!r}") from None
        if isinstance(parsed, dict):
            return parsed
        raise ModelError(f"config_json is not a JSON object: {value[:60]!r}")
    return {}


def row_configs(frame) -> list[dict]:
    """The ``config`` dicts of a frame (parsed from ``config_json`` when there is no ``config``)."""
    if "config" in frame.columns:
        return [_as_config(v) for v in frame["config"]]
    if "config_json" in frame.columns:
        return [_as_config(v) for v in frame["config_json"]]
    return [{} for _ in range(len(frame))]


#: Settings that say where a job runs rather than how: they set the slots.  Runs of a job
#: are compared by their settings without them (a standalone master's URL names a port
#: that changes with every start of the cluster, so no two of its applications share a
#: ``config_json``).
SLOT_SETTINGS = ("spark.master",)


def settings_key(config: dict) -> str:
    """A run's settings as sorted JSON, values as text, less :data:`SLOT_SETTINGS`: equal
    for two runs of one configuration wherever they ran."""
    return json.dumps({k: str(v) for k, v in sorted(config.items()) if k not in SLOT_SETTINGS})


def _as_summary(value):
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, dict):
        return value
    if hasattr(value, "summary"):
        return value.summary()
    if isinstance(value, str) and value.strip():
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            raise ModelError(f"profile is not valid JSON: {value[:60]!r}") from None
        return parsed if isinstance(parsed, dict) else None
    return None


def _num(summary, key):
    value = summary.get(key)
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def profile_features(summary) -> dict:
    """Derived features of one profile summary (``Profile.summary()``); None where unknown."""
    out = dict.fromkeys(PROFILE_FEATURES)
    if not summary:
        return out
    input_bytes = _num(summary, "input_bytes")
    shuffle = sum(v for v in (_num(summary, "shuffle_read_bytes"),
                              _num(summary, "shuffle_write_bytes")) if v is not None)
    has_shuffle = any(_num(summary, k) is not None
                      for k in ("shuffle_read_bytes", "shuffle_write_bytes"))
    cpu_ms = _num(summary, "executor_cpu_time_ms")
    if cpu_ms is None:
        maps, reduces = _num(summary, "map_time_ms"), _num(summary, "reduce_time_ms")
        if maps is not None or reduces is not None:
            cpu_ms = (maps or 0.0) + (reduces or 0.0)
    run_ms = _num(summary, "executor_run_time_ms")
    megabytes = None if input_bytes is None else max(input_bytes, 1.0) / 2 ** 20
    if input_bytes is not None:
        out["log_input_bytes"] = math.log1p(input_bytes)
        if has_shuffle:
            out["shuffle_ratio"] = math.log1p(shuffle / max(input_bytes, 1.0))
        if cpu_ms is not None:
            out["log_cpu_ms_per_mb"] = math.log1p(cpu_ms / megabytes)
        if run_ms is not None:
            out["log_run_ms_per_mb"] = math.log1p(run_ms / megabytes)
        output = _num(summary, "output_bytes")
        if output is not None:
            out["output_selectivity"] = math.log1p(output / max(input_bytes, 1.0))
        spill = (_num(summary, "memory_spill_bytes") or 0.0) + (_num(summary, "disk_spill_bytes")
                                                                 or 0.0)
        out["spill_ratio"] = math.log1p(spill / max(input_bytes, 1.0))
    records_in, records_out = _num(summary, "input_records"), _num(summary, "output_records")
    if records_in is not None and records_out is not None:
        out["record_selectivity"] = math.log1p(records_out / max(records_in, 1.0))
    gc_ms = _num(summary, "jvm_gc_time_ms")
    if gc_ms is not None and run_ms:
        out["gc_share"] = gc_ms / run_ms
    for name, key in (("log_n_stages", "n_stages"), ("log_n_tasks", "n_tasks"),
                      ("log_n_jobs", "n_jobs"), ("log_runtime_s", "runtime_s")):
        value = _num(summary, key)
        if value is not None:
            out[name] = math.log1p(value)
    runtime, critical = _num(summary, "runtime_s"), _num(summary, "critical_path_s")
    if runtime and critical is not None:
        out["critical_path_share"] = critical / runtime
    return out


def check_frame(X, *, owner="model"):
    """Raise ModelError unless X is a DataFrame with the run-table columns a model needs."""
    import pandas as pd

    if not isinstance(X, pd.DataFrame):
        raise ModelError(f"{owner} expects a run-table DataFrame (as read_run_tables returns), "
                         f"got {type(X).__name__}")
    missing = [c for c in REQUIRED_COLUMNS if c not in X.columns]
    if missing:
        raise ModelError(f"{owner} input lacks run-table columns: {', '.join(missing)}")
    if len(X) == 0:
        raise ModelError(f"{owner} input has no rows")


def check_fitted(estimator, attribute):
    """Raise NotFittedError unless ``estimator`` has ``attribute``, which its ``fit`` sets."""
    if not hasattr(estimator, attribute):
        raise NotFittedError(f"This {type(estimator).__name__} is not fitted yet: call fit first")


def _float_column(frame, name, n):
    if name not in frame.columns:
        return np.full(n, np.nan)
    import pandas as pd

    values = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)
    return values


class RunFeatures(TransformerMixin, BaseEstimator):
    """Run-table rows to a dense numeric matrix (see the module docstring).

    ``workload_onehot``/``framework_onehot``/``family_onehot`` add one column per
    value seen in training; ``knobs`` adds the configuration knobs;
    ``max_categories`` bounds the one-hot width of a categorical knob; ``profile``
    adds profile features when a ``profile`` column is present.
    """

    def __init__(self, *, workload_onehot=True, framework_onehot=True, family_onehot=True,
                 knobs=True, max_categories=12, profile=True):
        store_params(self, locals())

    # ---------------------------------------------------------------- fitting
    def fit(self, X, y=None):
        check_frame(X, owner="RunFeatures")
        n = len(X)
        vcpus = _float_column(X, "vcpus", n)
        memory = _float_column(X, "memory_gib", n)
        ratio = memory / vcpus
        ratio = ratio[np.isfinite(ratio) & (ratio > 0)]
        self.memory_per_vcpu_ = float(np.median(ratio)) if len(ratio) else 4.0
        self.workloads_ = sorted(set(map(str, X["workload"]))) if self.workload_onehot else []
        self.frameworks_ = sorted(set(map(str, X["framework"]))) if self.framework_onehot else []
        self.families_ = sorted({instance_family(t) for t in X["instance_type"]}) \
            if self.family_onehot else []
        # data size: medians of log bytes per (workload, label) and per label
        log_bytes = np.log1p(_float_column(X, "input_bytes", n))
        labels = X["datasize"].fillna("").astype(str).to_numpy() if "datasize" in X.columns \
            else np.array([""] * n)
        workloads = X["workload"].astype(str).to_numpy()
        known = np.isfinite(log_bytes)
        self.size_by_workload_label_ = {}
        self.size_by_label_ = {}
        self.size_by_workload_ = {}
        self.scale_bytes_ = {}
        if known.any():
            import pandas as pd

            table = pd.DataFrame({"w": workloads[known], "l": labels[known], "b": log_bytes[known]})
            by_pair = table.groupby(["w", "l"])["b"].median()
            self.size_by_workload_label_ = {f"{w}\x00{lab}": float(v)
                                            for (w, lab), v in by_pair.items()}
            self.size_by_label_ = {str(k): float(v)
                                   for k, v in table.groupby("l")["b"].median().items()}
            self.size_by_workload_ = {str(k): float(v)
                                      for k, v in table.groupby("w")["b"].median().items()}
            self.size_default_ = float(np.median(log_bytes[known]))
            # a TPC-H scale factor not measured: the bytes per scale factor of the measured
            # ones around it (jobgauge.units.bytes_at_scale), per workload, else pooled
            factors = np.array([size_scale(label)[0] for label in labels])
            usable = known & np.isfinite(factors) & (factors > 0)
            if usable.any():
                sizes = np.expm1(log_bytes)
                self.scale_bytes_ = {str(w): scale_bytes(factors[usable & (workloads == w)],
                                                         sizes[usable & (workloads == w)])
                                     for w in np.unique(workloads[usable])}
                self.scale_bytes_[""] = scale_bytes(factors[usable], sizes[usable])
        else:
            self.size_default_ = 0.0
        # knobs
        self.numeric_knobs_ = {}      # key -> (fill value, log?)
        self.categorical_knobs_ = {}  # key -> categories
        if self.knobs:
            self._fit_knobs(row_configs(X))
        # profile
        self.profile_fill_ = {}
        if self.profile and "profile" in X.columns:
            rows = [profile_features(_as_summary(v)) for v in X["profile"]]
            for name in PROFILE_FEATURES:
                values = [r[name] for r in rows if r[name] is not None]
                if values:
                    self.profile_fill_[name] = float(np.median(values))
        self.feature_names_ = np.array(self._names(), dtype=object)
        self.n_features_out_ = len(self.feature_names_)
        return self

    def _fit_knobs(self, configs):
        values = {}
        for config in configs:
            for key, value in config.items():
                if key in LAYOUT_KEYS:
                    continue
                values.setdefault(key, []).append(parse_knob(value))
        for key in sorted(values):
            seen = [v for v in values[key] if v is not None]
            default = parse_knob(KNOB_DEFAULTS[key]) if key in KNOB_DEFAULTS else None
            if seen and all(isinstance(v, float) for v in seen):
                array = np.array(seen, dtype=float)
                positive = bool((array > 0).all())
                use_log = positive and array.max() / array.min() >= 20
                if isinstance(default, float) and (default > 0 or not use_log):
                    fill = default
                else:
                    fill = float(np.median(array))
                self.numeric_knobs_[key] = (fill, use_log)
            else:
                categories = sorted({str(v) for v in seen})
                if len(categories) > self.max_categories:
                    counts = {c: sum(1 for v in seen if str(v) == c) for c in categories}
                    categories = sorted(sorted(categories, key=lambda c: -counts[c])
                                        [:self.max_categories])
                self.categorical_knobs_[key] = (categories, None if default is None
                                                else str(default))

    def _names(self):
        names = ["vcpus", "memory_gib", "instance_count", "total_vcpus", "total_memory_gib",
                 "memory_per_vcpu", "log_vcpus", "log_memory_gib", "log_instance_count",
                 "log_total_vcpus", "log_total_memory_gib", "inverse_total_vcpus",
                 "executor_instances", "executor_cores", "executor_memory_gib",
                 "log_parallel_slots", "log_input_bytes", "input_bytes_missing",
                 "log_bytes_per_slot", "log_scale_factor", "hibench_size"]
        names += [f"family={f}" for f in self.families_]
        names += [f"framework={f}" for f in self.frameworks_]
        names += [f"workload={w}" for w in self.workloads_]
        for key, (_, use_log) in self.numeric_knobs_.items():
            names.append(f"knob:{key}" + (" (log)" if use_log else ""))
        for key, (categories, _) in self.categorical_knobs_.items():
            names += [f"knob:{key}={c}" for c in categories]
        if self.profile_fill_:
            names += [f"profile:{p}" for p in PROFILE_FEATURES] + ["profile_missing"]
        return names

    def get_feature_names_out(self, input_features=None):
        self._check_fitted()
        return self.feature_names_.copy()

    def _check_fitted(self):
        check_fitted(self, "feature_names_")

    # ------------------------------------------------------------- transform
    def transform(self, X):
        self._check_fitted()
        check_frame(X, owner="RunFeatures")
        n = len(X)
        vcpus = _float_column(X, "vcpus", n)
        if not (np.isfinite(vcpus) & (vcpus > 0)).all():
            raise ModelError("vcpus must be a positive number in every row")
        count = _float_column(X, "instance_count", n)
        if not (np.isfinite(count) & (count >= 1)).all():
            raise ModelError("instance_count must be a whole number >= 1 in every row")
        memory = _float_column(X, "memory_gib", n)
        memory = np.where(np.isfinite(memory) & (memory > 0), memory, vcpus * self.memory_per_vcpu_)
        configs = row_configs(X)
        total_vcpus = vcpus * count
        total_memory = memory * count
        executors = np.array([_layout(c, "spark.executor.instances") for c in configs])
        executors = np.where(np.isfinite(executors), executors, count)
        cores = np.array([_layout(c, "spark.executor.cores") for c in configs])
        cores = np.where(np.isfinite(cores), cores, vcpus)
        # Hadoop's local job runner runs mapreduce.local.map.tasks.maximum maps at once
        # (default 1), whatever the machine's cores
        runner = (X["framework"].astype(str).to_numpy() == "hadoop") \
            & (X["instance_type"].astype(str).to_numpy() == "local") \
            if "framework" in X.columns else np.zeros(n, dtype=bool)
        if runner.any():
            maps = np.array([_layout(c, "mapreduce.local.map.tasks.maximum") if r else 1.0
                             for c, r in zip(configs, runner)])
            maps = np.where(np.isfinite(maps), maps, LOCAL_MAP_SLOTS)
            cores = np.where(runner, np.minimum(maps, vcpus * count), cores)
            executors = np.where(runner, 1.0, executors)
        executor_memory = np.array([_layout(c, "spark.executor.memory") for c in configs]) / 2 ** 30
        # without the setting: the node's memory (the public tables' clusters, whose
        # platform sized the executors and whose configurations name no master), but
        # Spark's own default heap on a standalone master a run names, as jobgauge's
        # cluster ran: its 4 GiB workers ran 1g executors, and read as 4 GiB the
        # 3g setting was less memory than none
        standalone = np.array([str(c.get("spark.master", "")).startswith("spark://")
                               for c in configs], dtype=bool)
        executor_memory = np.where(np.isfinite(executor_memory), executor_memory,
                                   np.where(standalone, SPARK_EXECUTOR_MEMORY_GIB, memory))
        # Spark's local mode runs its tasks in the driver's JVM on local[N]'s N threads and
        # ignores the executor settings: spark.executor.cores=64 on local[2] gave each task
        # 1/64 of the heap, and the web form answered TPC-H Q3 at SF 3 in 40.1 s (5.95 s
        # without it)
        local = np.array([str(c.get("spark.master", "")).startswith("local") for c in configs],
                         dtype=bool)
        executors = np.where(local, 1.0, executors)
        cores = np.where(local, vcpus, cores)
        executor_memory = np.where(local, memory, executor_memory)
        # a standalone application takes at most spark.cores.max cores in all: its
        # executors are that many cores over the cores of one
        cores_max = np.array([_layout(c, "spark.cores.max") for c in configs])
        capped = np.isfinite(cores_max) & ~local      # local mode ignores it
        executors = np.where(capped, np.maximum(np.floor(np.where(capped, cores_max, 1.0)
                                                         / cores), 1.0), executors)
        slots = np.maximum(np.minimum(executors * cores, total_vcpus), 1.0)
        # data size
        log_bytes = np.log1p(_float_column(X, "input_bytes", n))
        missing = ~np.isfinite(log_bytes)
        labels = X["datasize"].fillna("").astype(str).tolist() if "datasize" in X.columns \
            else [""] * n
        workloads = X["workload"].astype(str).tolist()
        if missing.any():
            for i in np.flatnonzero(missing):
                log_bytes[i] = self._estimate_size(workloads[i], labels[i])
        scales = np.array([size_scale(label) for label in labels], dtype=float).reshape(n, 2)
        scale_factor = np.where(np.isfinite(scales[:, 0]), np.log10(np.where(
            np.isfinite(scales[:, 0]) & (scales[:, 0] > 0), scales[:, 0], 1.0)), 0.0)
        hibench = np.where(np.isfinite(scales[:, 1]), scales[:, 1], -1.0)
        columns = [vcpus, memory, count, total_vcpus, total_memory, memory / vcpus,
                   np.log(vcpus), np.log(memory), np.log(count), np.log(total_vcpus),
                   np.log(total_memory), 1.0 / total_vcpus, executors, cores, executor_memory,
                   np.log(slots), log_bytes, missing.astype(float), log_bytes - np.log(slots),
                   scale_factor, hibench]
        families = [instance_family(t) for t in X["instance_type"]]
        columns += [np.array([f == name for f in families], dtype=float) for name in self.families_]
        frameworks = X["framework"].astype(str).tolist()
        columns += [np.array([f == name for f in frameworks], dtype=float)
                    for name in self.frameworks_]
        columns += [np.array([w == name for w in workloads], dtype=float)
                    for name in self.workloads_]
        for key, (fill, use_log) in self.numeric_knobs_.items():
            column = np.empty(n)
            for i, config in enumerate(configs):
                value = parse_knob(config.get(key)) if key in config else None
                column[i] = value if isinstance(value, float) and math.isfinite(value) else fill
            if use_log:
                column = np.log(np.maximum(column, 1e-12))
            columns.append(column)
        for key, (categories, default) in self.categorical_knobs_.items():
            values = [str(parse_knob(c[key])) if key in c else default for c in configs]
            columns += [np.array([v == cat for v in values], dtype=float) for cat in categories]
        if self.profile_fill_:
            raw = X["profile"].tolist() if "profile" in X.columns else [None] * n
            rows = [profile_features(_as_summary(v)) for v in raw]
            for name in PROFILE_FEATURES:
                fill = self.profile_fill_.get(name, 0.0)
                columns.append(np.array([fill if r[name] is None else r[name] for r in rows]))
            columns.append(np.array([all(v is None for v in r.values()) for r in rows],
                                    dtype=float))
        matrix = np.column_stack(columns).astype(float)
        if not np.isfinite(matrix).all():  # pragma: no cover - every column is filled above
            raise ModelError("features contain non-finite values")
        return matrix

    def _estimate_size(self, workload, label):
        key = f"{workload}\x00{label}"
        if key in self.size_by_workload_label_:
            return self.size_by_workload_label_[key]
        factor = size_scale(label)[0]
        levels = getattr(self, "scale_bytes_", None)
        if levels and math.isfinite(factor) and factor > 0:
            return math.log1p(bytes_at_scale(levels.get(workload, levels[""]), factor))
        old = getattr(self, "bytes_per_scale_", None)     # a model fitted before scale_bytes_
        if old and math.isfinite(factor) and factor > 0:
            return old.get(workload, old[""]) + math.log(factor)
        if label and label in self.size_by_label_:
            return self.size_by_label_[label]
        if workload in self.size_by_workload_:
            return self.size_by_workload_[workload]
        return self.size_default_


def scale_bytes(factors, sizes) -> list:
    """[(TPC-H scale factor, median input bytes)] per distinct scale factor of the runs
    (``factors`` and ``sizes`` aligned, every factor positive): what
    ``jobgauge.units.bytes_at_scale`` sizes a scale factor never measured from, for the
    model's size feature and for ``models._coverage``'s "far outside" note alike."""
    import pandas as pd

    medians = pd.Series(np.asarray(sizes, dtype=float)).groupby(
        np.asarray(factors, dtype=float)).median()
    return [(float(f), float(b)) for f, b in medians.items()]


def _layout(config, key):
    if key not in config:
        return math.nan
    value = parse_knob(config[key])
    if isinstance(value, float) and math.isfinite(value) and value > 0:
        return value
    raise ModelError(f"configuration knob {key} must be a positive number or size, "
                     f"got {config[key]!r}")
