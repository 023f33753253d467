"""The model registry, saving and loading, and one-call predictions.

>>> model = make_model("gbm", random_state=0).fit(frame)              # doctest: +SKIP
>>> predict_one(model, workload="tpch-q3", datasize="sf1",
...             config={"spark.sql.shuffle.partitions": "64"})        # doctest: +SKIP
{'runtime_s': 41.2, 'low_s': 36.0, 'high_s': 47.9, 'outside_measured': False, 'note': None,
 'failures': None, 'read_floor_s': None}

Saved models are bytes: the line ``JOBGAUGE-MODEL``, one JSON header line
(``format_version``, model name, versions) and a pickle of the fitted model.
Loading checks the header first, so a garbage file or a model saved by an
incompatible jobgauge gives a clear :class:`ModelError`.  Like every pickle,
a model file runs code when loaded: load only files you trust.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import pickle
from pathlib import Path

import numpy as np

from jobgauge.errors import ModelError, UsageError
from jobgauge.models._base import RuntimeModel
from jobgauge.models._baselines import (
    DecisionTreeModel,
    ErnestModel,
    GradientBoostingModel,
    RandomForestModel,
    SVRModel,
)
from jobgauge.models._networks import DagRNN, FullyConnectedModel
from jobgauge.models._stage import StagePredictor

MODELS = {
    "tree": DecisionTreeModel,
    "svm": SVRModel,
    "forest": RandomForestModel,
    "gbm": GradientBoostingModel,
    "ernest": ErnestModel,
    "fc": FullyConnectedModel,
    "rnn": DagRNN,
    "stage": StagePredictor,
}
#: Suffix of a registry name that turns on job classes (``"fc+classes"``).
CLASSES_SUFFIX = "+classes"
#: The model ``jobgauge train``, the web service, ``jobgauge predict``, the tuner and the
#: wrapper use unless told otherwise: the stage replay, the one that holds the physical
#: sanity properties (tests/test_sanity.py: more data never faster, more nodes never much
#: slower), which the FC network breaks on most workloads of the shipped corpus.
DEFAULT_MODEL = "stage"
FORMAT_VERSION = 1
MAGIC = b"JOBGAUGE-MODEL\n"


def model_names(*, with_variants=False) -> list[str]:
    """Registered names (with the ``+classes`` variants when asked)."""
    names = list(MODELS)
    if with_variants:
        names += [n + CLASSES_SUFFIX for n in MODELS]
    return names


def model_class(name: str):
    """(class, base name, whether ``+classes`` asks for job classes) of a registry name,
    or UsageError naming the registered ones."""
    base = name[:-len(CLASSES_SUFFIX)] if isinstance(name, str) and \
        name.endswith(CLASSES_SUFFIX) else name
    if base not in MODELS:
        raise UsageError(f"unknown model {name!r}; choose one of "
                         + ", ".join(model_names(with_variants=True)))
    return MODELS[base], base, base != name


def make_model(name: str = DEFAULT_MODEL, **params) -> RuntimeModel:
    """A new, unfitted model by registry name; ``name+classes`` sets ``with_classes=True``."""
    cls, base, with_classes = model_class(name)
    if with_classes:
        params.setdefault("with_classes", True)
    try:
        return cls(**params)
    except TypeError:
        valid = sorted(cls().get_params(deep=False))
        unknown = sorted(set(params) - set(valid))
        raise UsageError(f"model {base!r} has no parameter(s) {', '.join(unknown)}; "
                         f"its parameters are {', '.join(valid)}") from None


def model_name(model) -> str:
    """The registry name of a model instance (with ``+classes`` when it uses classes)."""
    for name, cls in MODELS.items():
        if type(model) is cls:
            return name + (CLASSES_SUFFIX if getattr(model, "with_classes", False) else "")
    return type(model).__name__


def _json_params(model) -> dict:
    out = {}
    for key, value in model.get_params(deep=False).items():
        if isinstance(value, type):
            value = f"{value.__module__}.{value.__qualname__}"
        elif isinstance(value, tuple):
            value = list(value)
        out[key] = value
    return out


def dumps_model(model) -> bytes:
    """A fitted model as bytes (header + pickle)."""
    if not isinstance(model, RuntimeModel):
        raise ModelError(f"only jobgauge runtime models can be saved, not {type(model).__name__}")
    model._check_fitted()
    from jobgauge import __version__

    header = {"format_version": FORMAT_VERSION, "model": model_name(model),
              "class": type(model).__name__, "jobgauge": __version__,
              "params": _json_params(model),
              "n_training_rows": getattr(model, "n_training_rows_", None)}
    return MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + \
        pickle.dumps(model, protocol=pickle.HIGHEST_PROTOCOL)


def read_header(data: bytes) -> dict:
    """The JSON header of saved model bytes (ModelError if it is not one)."""
    if not isinstance(data, (bytes, bytearray)) or not data.startswith(MAGIC):
        raise ModelError("not a jobgauge model file (it does not start with JOBGAUGE-MODEL)")
    end = data.find(b"\n", len(MAGIC))
    try:
        header = json.loads(data[len(MAGIC):end].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ModelError("damaged jobgauge model file (unreadable header)") from None
    if not isinstance(header, dict) or "format_version" not in header:
        raise ModelError("damaged jobgauge model file (header lacks format_version)")
    return header


def loads_model(data: bytes) -> RuntimeModel:
    """A model from :func:`dumps_model` bytes; ModelError on garbage or a version mismatch."""
    header = read_header(data)
    if header["format_version"] != FORMAT_VERSION:
        raise ModelError(f"model file format version {header['format_version']!r} cannot be read "
                         f"by this jobgauge (it reads version {FORMAT_VERSION}); retrain with "
                         f"'jobgauge train'")
    end = data.find(b"\n", len(MAGIC))
    try:
        model = pickle.loads(data[end + 1:])
    except Exception as exc:  # noqa: BLE001 - any unpickling failure means a damaged file
        raise ModelError(f"damaged jobgauge model file ({type(exc).__name__}: {exc})") from None
    if not isinstance(model, RuntimeModel):
        raise ModelError("damaged jobgauge model file (it holds no runtime model)")
    return model


def save_model(model, path) -> Path:
    """Write a fitted model to ``path`` (atomically: a temporary file of this call's own
    beside it, then a rename, so two writers of one path never mix their bytes)."""
    import tempfile

    path = Path(path)
    data = dumps_model(model)
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
        temporary = None
    except OSError as exc:
        raise ModelError(f"cannot write model to {path}: {exc.strerror or exc}") from None
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    return path


def load_model(path) -> RuntimeModel:
    """Read a model written by :func:`save_model`."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ModelError(f"no model file at {path}") from None
    except OSError as exc:
        raise ModelError(f"cannot read model file {path}: {exc.strerror or exc}") from None
    try:
        return loads_model(data)
    except ModelError as exc:
        raise ModelError(f"{path}: {exc}") from None


def predict_frame(model, X, *, coverage=0.8, factor=1.0, own_runs=None, own_failures=None):
    """Predictions for every row of a run table, as a DataFrame aligned with ``X``:
    ``predicted_runtime_s``, ``predicted_low_s``, ``predicted_high_s`` (seconds), and
    ``outside_measured`` (bool) with ``measured_note`` (why, naming the nearest measured
    size; None when inside) from the model's ``measured_range_``
    (:mod:`jobgauge.models._coverage`).  ``factor``: every answer times it (a job's
    own measured runs calibrate the model's answers by it); ``own_runs``: those runs
    (``models._default.job_runs``), measured for the notes too, whether or not the
    model has learned from them yet; ``own_failures``: its runs that failed with an
    error (``models._default.job_failures``), counted in ``failure_note``.
    ``read_floor_s``: the least time the row's nodes take to read its input
    (:func:`read_floors`; NaN where unknown); no prediction or bound is below it.
    ``answered_from``: for a query never measured, the measured workloads whose
    profiles answer it (the model's ``predict_answer``; None for any other row or
    model).  ``answered_from_table``: the public table (Scout's, C3O's) whose runs of a
    job of the row's name answer it, a program of theirs of that name (the model's
    ``predict_answer``; None where jobgauge's runs and the user's answer it).
    ``failure_note``: that the row's configuration failed in measured runs, how often
    (:meth:`jobgauge.models._coverage.MeasuredRange.failure_notes`), else that it is
    at risk of failing and why (the model's ``predict_answer``, where it has them: the stage
    model's broadcasts per GiB of driver memory); None where neither says so.  A row whose input
    size the model cannot tell (no input bytes, and a size label its workload's runs
    never measured that is not a TPC-H scale factor: ``huge``, ``biggest``) is
    refused: :class:`jobgauge.models._coverage.UnknownSize` names the measured sizes."""
    import pandas as pd

    from jobgauge.models._coverage import MeasuredRange, UnknownSize

    # what the model measured: a model without it (an older pickle, a model from
    # elsewhere) refuses nothing, has no floor and says nothing
    measured = getattr(model, "measured_range_", None)
    known = isinstance(measured, MeasuredRange)
    if known:
        measured = measured.with_runs(own_runs, own_failures)
    sizes = measured.input_bytes(X) if known else None   # refusals and floors read them
    refusals = measured.size_refusals(X, sizes) if known else []
    if refusals:
        raise UnknownSize("; ".join(refusals))
    together = getattr(model, "predict_with_interval", None)
    answer = getattr(model, "predict_answer", None)
    risks, borrowed, tables = None, [None] * len(X), [None] * len(X)
    if answer is not None:  # the answer, its failure risks and borrowed queries in one pass
        runtime, low, high, risks, borrowed, tables = answer(X, coverage=coverage)
        borrowed = [jobs or None for jobs in borrowed]
        tables = [table or None for table in tables]
    elif together is not None:  # one pass of the model instead of two
        runtime, low, high = together(X, coverage=coverage)
    else:
        runtime = model.predict(X)
        low, high = model.predict_interval(X, coverage=coverage)
    floors = read_floors(X, sizes) if known else np.full(len(X), np.nan)
    runtime = np.fmax(np.asarray(runtime, dtype=float) * factor, floors)
    low = np.fmax(np.asarray(low, dtype=float) * factor, floors)
    high = np.fmax(np.asarray(high, dtype=float) * factor, runtime)
    notes = measured.notes(X) if known else [None] * len(X)
    failures = measured.failure_notes(X) if known else [None] * len(X)
    if risks is not None:     # a configuration never measured that is at risk of failing
        failures = [failed or risk for failed, risk in zip(failures, risks)]
    return pd.DataFrame({"predicted_runtime_s": runtime, "predicted_low_s": low,
                         "predicted_high_s": high,
                         "outside_measured": [note is not None for note in notes],
                         "measured_note": pd.Series(notes, index=X.index, dtype=object),
                         "read_floor_s": floors,
                         "failure_note": pd.Series(failures, index=X.index, dtype=object),
                         "answered_from": pd.Series(borrowed, index=X.index, dtype=object),
                         "answered_from_table": pd.Series(tables, index=X.index,
                                                          dtype=object)},
                        index=X.index)


def read_floors(X, sizes) -> np.ndarray:
    """Per row of ``X``, :func:`jobgauge.job.read_floor_s` of what it reads on its nodes,
    from their ``network_gbps`` (a catalog column; NaN where unknown).  What it reads:
    the bytes its plan's scans read at its input size where the plan says
    (:func:`jobgauge.models._stage.plan_read_bytes`: a count over the region table at
    SF 1000 reads 2 KiB, not the data set's 345 GB), else its input (``sizes``: its
    input bytes as given, else as the model's ``measured_range_`` sizes its label,
    :meth:`jobgauge.models._coverage.MeasuredRange.input_bytes`)."""
    from jobgauge.job import read_floor_s
    from jobgauge.models._stage import plan_read_bytes

    if "network_gbps" not in X.columns:
        return np.full(len(X), np.nan)
    dags = X["dag"].tolist() if "dag" in X.columns else [None] * len(X)
    reads = [plan_read_bytes(dag, size) for dag, size in zip(dags, sizes)]
    floors = [read_floor_s(size if read is None else read, count, memory, network)
              for read, size, count, memory, network in
              zip(reads, sizes, X["instance_count"], X["memory_gib"], X["network_gbps"])]
    return np.array([np.nan if floor is None else floor for floor in floors])


def _job(index, raw):
    """The Job of one configuration dict (the keyword arguments of :func:`predict_one`)."""
    from jobgauge.job import Cluster, Job

    item = dict(raw)
    try:
        config = item.pop("config", None) or {}
        if not isinstance(config, dict):
            raise UsageError("config must be a dict of knob: value")
        cluster = Cluster(item.pop("instance_type", "local") or "local",
                          item.pop("vcpus", 2), item.pop("memory_gib", None),
                          item.pop("hourly_price_usd", None), item.pop("instance_count", 1))
        job = Job(item.pop("workload", None), item.pop("datasize", ""), cluster, config,
                  framework=item.pop("framework", "spark"),
                  input_bytes=item.pop("input_bytes", None), profile=item.pop("profile", None),
                  dag=item.pop("dag", None), run_id=str(index))
    except UsageError as exc:
        raise UsageError(f"configuration {index}: {exc}") from None
    if item:
        raise UsageError(f"configuration {index}: unknown field(s) {', '.join(sorted(item))}")
    return job


def configuration_frame(configurations):
    """A run-table DataFrame from dicts with the keyword arguments of :func:`predict_one`
    (each one a :class:`jobgauge.job.Job`; see :func:`jobgauge.job.jobs_frame`)."""
    from jobgauge.job import jobs_frame

    return jobs_frame([_job(index, raw) for index, raw in enumerate(configurations)])


def predict_job(model, job, *, coverage=0.8, factor=1.0, own_runs=None,
                own_failures=None) -> dict:
    """Predicted runtime of a :class:`jobgauge.job.Job`: ``{"runtime_s", "low_s",
    "high_s", "outside_measured", "note", "failures", "read_floor_s"}``; seconds,
    low/high bound the ``coverage`` interval; ``note`` says why the job is far outside
    what the model was trained on (None when it is not); ``failures``, that its
    configuration failed in measured runs (None when it did not); ``read_floor_s``: the
    least time its nodes take to read its input (None where unknown or 0;
    :func:`predict_frame`, as ``factor``, ``own_runs`` and ``own_failures``);
    ``answered_from``: for a query never measured, the measured queries whose profiles
    answer it (None otherwise); ``answered_from_table``: the public table whose runs of
    a job of its name answer it (None where jobgauge's and the user's do)."""
    result = predict_frame(model, job.frame(), coverage=coverage, factor=factor,
                           own_runs=own_runs, own_failures=own_failures).iloc[0]
    floor = float(result["read_floor_s"])
    return {"runtime_s": float(result["predicted_runtime_s"]),
            "low_s": float(result["predicted_low_s"]),
            "high_s": float(result["predicted_high_s"]),
            "outside_measured": bool(result["outside_measured"]),
            "note": result["measured_note"], "failures": result["failure_note"],
            "read_floor_s": floor if math.isfinite(floor) and floor > 0 else None,
            "answered_from": result["answered_from"],
            "answered_from_table": result["answered_from_table"]}


def predict_one(model, *, workload, datasize, config=None, framework="spark",
                instance_type="local", instance_count=1, vcpus=2, memory_gib=None,
                input_bytes=None, hourly_price_usd=None, profile=None, dag=None,
                coverage=0.8) -> dict:
    """Predicted runtime of one configuration: :func:`predict_job`'s dict."""
    job = _job(0, {"workload": workload, "datasize": datasize, "config": config,
                   "framework": framework, "instance_type": instance_type,
                   "instance_count": instance_count, "vcpus": vcpus, "memory_gib": memory_gib,
                   "input_bytes": input_bytes, "hourly_price_usd": hourly_price_usd,
                   "profile": profile, "dag": dag})
    return predict_job(model, job, coverage=coverage)
