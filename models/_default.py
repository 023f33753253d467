"""The model a store answers with, and keeping it up to date with the store's runs.

The wrapper (``jobgauge-submit``), ``jobgauge tune``, ``jobgauge predict`` and the
web service all ask :func:`store_model` for the model of a store: its newest
model, or, on a fresh store, one trained on first need from the *prior* plus
the store's own runs and saved in the store (so the next call loads it).

The prior (:func:`prior_run_tables`) is what a fresh store learns from: the
run tables shipped in :mod:`jobgauge.data`, and the public run tables (Scout,
C3O) of the folder ``$JOBGAUGE_SHARED_DATASETS`` names, when it is set.  The
store's runs (:func:`store_run_frame`: every run with a runtime that did not
fail) are added to it (:func:`learning_frame`), so a job's own runs teach the
model about that job.

Retraining happens by itself: :func:`maybe_retrain` counts the store's runs
added since the newest model was trained (the model's metrics keep
``store_runs``, the count it saw) and, after every ``retrain_every`` new runs
(default :data:`DEFAULT_RETRAIN_EVERY`, ``$JOBGAUGE_RETRAIN_EVERY``, 0: never),
starts ``jobgauge train --with-prior --lock FILE`` as a detached process, which
learns from the same prior as the model before it (a model trained from another
runs folder keeps it in its metrics, :func:`recorded_prior`).
The lock file (:func:`retrain_lock_path`, beside an SQLite store) makes sure two
trainings never run at once; nothing waits for the training to finish.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import weakref
from pathlib import Path

from jobgauge.errors import UsageError

__all__ = ["DEFAULT_MODEL_NAME", "DEFAULT_RETRAIN_EVERY", "MODEL_KIND_ENV", "RETRAIN_EVERY_ENV",
           "job_history", "learning_frame", "learns_reference_profiles", "maybe_retrain",
           "prior_failures", "prior_profile_files", "prior_run_tables", "recorded_prior",
           "recollected_run_tables", "reference_profile_records",
           "retrain_after_runs", "retrain_every",
           "retrain_lock_path", "runs_since_training", "store_model", "store_run_frame",
           "with_store_profiles",
           "train_store_model", "training_lock"]

#: The name the model trained on first need (and by the background retraining) is saved as.
DEFAULT_MODEL_NAME = "default"
#: New runs in the store after which the model is retrained in the background.
DEFAULT_RETRAIN_EVERY = 5
RETRAIN_EVERY_ENV = "JOBGAUGE_RETRAIN_EVERY"
#: The model kind a store trains on first need (the web service's MODEL_KIND setting).
MODEL_KIND_ENV = "JOBGAUGE_MODEL_KIND"


# ------------------------------------------------------------------ what it learns from

def prior_run_tables(runs_dir=None) -> list[Path]:
    """The run tables a fresh store learns from: those in ``runs_dir`` (default: the
    ones shipped in :mod:`jobgauge.data`) plus the public Scout and C3O tables of
    ``$JOBGAUGE_SHARED_DATASETS`` when that folder is set."""
    from jobgauge.runtable import SHARED_DATASETS_ENV, public_run_tables

    if runs_dir is None:
        from jobgauge.data import runs_dir as shipped_runs_dir

        runs_dir = shipped_runs_dir()
    runs_dir = Path(runs_dir)
    paths = sorted(runs_dir.glob("*.csv.gz")) + sorted(runs_dir.glob("*.csv"))
    shared = os.environ.get(SHARED_DATASETS_ENV)
    if shared:
        paths += public_run_tables(shared)
    return paths


def recollected_run_tables(runs_dir=None) -> list[Path]:
    """The re-measurements beside the prior's run tables (``recollect/runs`` in the
    folder above ``runs_dir``, default the shipped ones: ``jobgauge.data``), which no
    model learns runtimes from; [] where there is no such folder."""
    from jobgauge.data import recollected_runs_dir

    folder = recollected_runs_dir(runs_dir)
    return sorted(folder.glob("*.csv.gz")) if folder.is_dir() else []


def prior_failures(runs_dir=None):
    """The runs of :func:`recollected_run_tables` as one run-table frame (None without
    any), for ``train_model(failures_from=...)``: their failed runs are failures of the
    same jobs all the same (``data/README.md``)."""
    from jobgauge.runtable import read_run_tables

    tables = recollected_run_tables(runs_dir)
    return read_run_tables(tables) if tables else None


def recorded_prior(store, name: str | None = None) -> tuple:
    """(runs folder, profile files) the store's newest model (of ``name`` when given)
    took its prior from, where that is not the shipped runs folder (``prior_runs_dir``
    and ``prior_profile_files`` in its metrics, set by :func:`train_store_model`);
    (None, None) for the shipped prior or a store without a model.  A folder or file
    that is gone is a UsageError: retraining from the shipped runs instead would
    change what the answers learn from without a word."""
    from jobgauge.store import NoStoredModel

    try:
        meta, _ = store.load_model(name)
    except NoStoredModel:
        return None, None
    metrics = meta["metrics"]
    if not metrics.get("prior_runs_dir"):
        return None, None
    folder = Path(metrics["prior_runs_dir"])
    files = [Path(p) for p in metrics.get("prior_profile_files") or []]
    gone = next((p for p in (folder, *files) if not p.exists()), None)
    if gone is not None:
        raise UsageError(f"model {meta['name']!r} learned from {gone}, which is gone; "
                         f"retrain with --runs, or without --with-prior")
    return folder, files


def _is_shipped_runs_dir(runs_dir) -> bool:
    from jobgauge.data import runs_dir as shipped_runs_dir

    return runs_dir is None or Path(runs_dir).resolve() == Path(shipped_runs_dir()).resolve()


def prior_profile_files(run_tables=None) -> list[Path]:
    """The profile records of run tables: ``profiles/NAME.jsonl.gz`` beside
    ``runs/NAME.csv.gz`` for each of ``run_tables`` (default
    :func:`prior_run_tables`), where that file exists."""
    from jobgauge.runtable import profiles_beside   # the one home of "beside"

    tables = prior_run_tables() if run_tables is None else run_tables
    return list(dict.fromkeys(p for table in tables for p in profiles_beside(table)))


def learns_reference_profiles(kind: str | None) -> bool:
    """True when the model ``kind`` (None: the registry's default) keeps a reference
    profile per workload (the stage model): it is trained with the profile records
    of its runs, and replays them for questions that come without one.  Other
    models learn from numeric features only and are trained without profiles, so
    what they see in training is what a question gives them."""
    from jobgauge.models._registry import CLASSES_SUFFIX, DEFAULT_MODEL, MODELS

    base = (kind or DEFAULT_MODEL).removesuffix(CLASSES_SUFFIX)
    return bool(getattr(MODELS.get(base), "learns_reference_profiles", False))


def reference_profile_records(kind: str | None, profile_files) -> dict | None:
    """The profile records (``read_profile_records`` of ``profile_files``) a ``kind``
    model is trained with: None for a model that does not keep reference profiles
    (:func:`learns_reference_profiles`) or when there are none."""
    if not learns_reference_profiles(kind):
        return None
    from jobgauge.runtable import read_profile_records

    files = list(profile_files or [])
    return (read_profile_records(files) or None) if files else None


def store_profile_records(store, workloads) -> dict:
    """Profile records (the layout of the shipped ones, ``collect.compact_profile``) of
    the store's runs of ``workloads`` that have a profile (the newest
    :data:`HISTORY_RUNS` of each), keyed by (source, run_id): a
    job of the user's is then replayed from a profile of its own, as jobgauge's
    workloads are from theirs.  (Without them the stage model knew a store job only by
    its runtimes: asked at 3x and 10x the input it had run with, it answered within
    2 % of its answer at 1x.)"""
    records = {}
    for workload in workloads:
        runs = store.run_frame(workload=workload)
        if "id" in runs.columns:      # the newest runs: the cost stays bounded as history grows
            runs = runs.sort_values("id").tail(HISTORY_RUNS)
        for run in runs.itertuples():
            saved = store.profiles_for(int(run.id))
            if not saved:
                continue
            records[(str(run.source), str(run.run_id))] = profile_record(saved[0])
    return records


def _shipped_layout(stored: dict) -> bool:
    """True for a stored profile in the layout of the shipped records (imported with a
    run table), False for a ``Profile``'s dict (read from a log)."""
    return "format" not in stored and "summary" in stored


def profile_record(stored: dict) -> dict:
    """A profile as the store keeps it, in the layout of the shipped records
    (``collect.compact_profile``: ``summary``, ``stages``, ``physical_plan``)."""
    if _shipped_layout(stored):
        return stored
    from jobgauge.profiler.readers.profile import Profile
    from jobgauge.profiler.runners.collect import compact_profile

    return compact_profile(Profile.from_dict(stored))


def profile_summary(stored: dict) -> dict:
    """The summary (``Profile.summary()``) of a profile as the store keeps it."""
    if _shipped_layout(stored):
        return dict(stored["summary"])
    from jobgauge.profiler.readers.profile import Profile

    return Profile.from_dict(stored).summary()


def with_store_profiles(profiles, kind: str | None, store, frame):
    """``profiles`` plus, for a ``kind`` that keeps reference profiles, those of the
    store's own jobs among ``frame``'s workloads (:func:`store_profile_records`): the
    first-need training, the background retraining and ``jobgauge train`` on a store
    all train so.  (The retraining once trained without them: a query of the user's,
    run once, was answered from its own profile until the model retrained, and from
    other queries' after.)"""
    if not learns_reference_profiles(kind):
        return profiles
    from jobgauge.profiler.workloads import benchmark_of

    own = store_profile_records(store, [w for w in frame["workload"].astype(str).unique()
                                        if benchmark_of(w) is None])
    return {**(profiles or {}), **own} if own else profiles


def store_run_frame(store, **filters) -> tuple:
    """(frame, notes): the store's runs a model may learn from, as a run-table frame:
    failed runs (an error, not a time limit), runs timed only by spark-submit's wall
    time and runs without a runtime are left out, and ``notes`` say how many.
    ``filters``: column equality, as ``Store.run_frame`` takes it."""
    return learnable_runs(store.run_frame(**filters))


def learnable_runs(frame) -> tuple:
    """(frame, notes): the runs of a store's run frame a model may learn from
    (:func:`store_run_frame`)."""
    notes = []
    if len(frame) and "status" in frame.columns:
        failed = frame["status"].astype(str) == "failed"
        if failed.any():
            notes.append(f"left out {int(failed.sum())} failed runs (an error, not a time limit)")
            frame = frame[~failed]
    if len(frame) and "time_kind" in frame.columns:
        # the models learn the application's runtime; a spark-submit wall time (JVM
        # start included, recorded when no event log was written) means something else
        wall = frame["time_kind"].astype(str) == "wall"
        if wall.any():
            notes.append(f"left out {int(wall.sum())} runs timed only by their wall time "
                         f"(no event log: JVM start included)")
            frame = frame[~wall]
    if len(frame):
        missing = ~(frame["runtime_s"].astype(float) > 0)
        if missing.any():
            notes.append(f"left out {int(missing.sum())} runs without a runtime")
            frame = frame[~missing]
    return frame.reset_index(drop=True), notes


def learning_frame(store, *, runs_dir=None, prior=None) -> tuple:
    """(frame, origin, notes): the prior (``prior``: a run-table frame, default the
    tables of :func:`prior_run_tables`) plus the store's own runs
    (:func:`store_run_frame`); a store run with the source and run id of a prior
    run replaces it.  ``origin`` says where the runs came from."""
    import pandas as pd

    from jobgauge.runtable import COLUMNS, read_run_tables

    tables = []
    if prior is None:
        tables = prior_run_tables(runs_dir)
        prior = read_run_tables(tables) if tables else pd.DataFrame(columns=[*COLUMNS, "config"])
    own, notes = store_run_frame(store)
    columns = list(dict.fromkeys([*prior.columns, "config", "config_json"]))
    if len(own):
        own = own.reindex(columns=columns)
        keys = set(zip(own["source"].astype(str), own["run_id"].astype(str)))
        kept = [(s, r) not in keys for s, r in zip(prior["source"].astype(str),
                                                  prior["run_id"].astype(str))]
        frames = [f for f in (prior[kept], own) if len(f)]
        frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    else:
        frame = prior
    if len(frame) == 0:
        raise UsageError("no runs to train on: the store has no runs with a runtime and no "
                         "run tables were found to learn from; import runs with "
                         "'jobgauge import'")
    where = (f"{len(tables)} run tables ({', '.join(sorted({str(p.parent) for p in tables}))})"
             if tables else "the prior run tables")
    origin = f"{where} + {len(own)} runs of {store.display_url}"
    return frame.reset_index(drop=True), origin, notes


def job_history(store, workload: str, framework: str | None = None) -> dict:
    """What the store knows of a job key: ``runs`` (how many, with a runtime or not),
    and of its newest run ``datasize``, ``input_bytes`` (None: unknown), ``profile``
    (its profile summary, None without one, with the run's input bytes as
    ``dataset_bytes``: the data set it profiled, which the stage model scales from)
    and ``run_id``."""
    filters = {"workload": workload}
    if framework:
        filters["framework"] = framework
    count = store.count_runs(**filters)
    if not count:
        return {"runs": 0, "datasize": "", "input_bytes": None, "profile": None, "run_id": None}
    last = store.runs_list(limit=1, **filters)[0]
    profile = None
    records = store.profiles_for(last["id"])
    if records:
        from jobgauge.errors import GaugeError

        try:
            profile = profile_summary(records[-1])
        except (GaugeError, KeyError, TypeError, ValueError):
            profile = None      # a stored record of another layout: predict without it
    size = last.get("input_bytes")
    size = None if size is None or size != size else float(size)
    if profile is not None and size:
        profile["dataset_bytes"] = size
    return {"runs": int(count), "datasize": last.get("datasize") or "",
            "input_bytes": size,
            "profile": profile, "run_id": last.get("run_id")}


#: The shrinkage of :func:`history_factor`'s log factor, n / (n + this): the squared ratio
#: of one run's repeat noise (about 10 % on this machine) to how far the model may be off
#: for a job it has not seen run (about 30 % and more), so one measured run already
#: outweighs the model's prediction.
HISTORY_SHRINK_RUNS = 0.1
#: :func:`history_factor` prices the job's newest runs, at most this many (each answer
#: prices them all again: 30 runs take about 3 ms on this machine).
HISTORY_RUNS = 50
#: A run calibrates answers at sizes near its own: fully within this factor of its input
#: size, not at all beyond :data:`HISTORY_REACH` (its weight falls linearly in the log
#: size between).  On the quiet TPC-H corpus (the stage model trained on SF <= 1, each
#: query's answers at SF 3 calibrated by its runs at one smaller scale, all weighted
#: alike), runs at SF 1 (3.1x smaller) took the SF 3 answers from 16.5 to 16.6 % MdAPE,
#: at SF 0.3 (11x) to 18.0 % and at SF 0.1 (34x) to 20.3 %; the SF 10 answers from
#: 16.9 % to 18.2, 18.1 and 24.3 % (weighted by distance: 16.5-16.9 % throughout;
#: bench/calibration_reach.py).  One warm run of TPC-H Q3 at SF 0.01 on a busy machine
#: (0.67 s against 0.45 s answered) took the answer at SF 3 from 5.95 to 8.8 s
#: (measured 5.2-7.5 s).
HISTORY_NEAR = 3.0
HISTORY_REACH = 10.0


def _run_size(row: dict) -> dict:
    """The size fields of a measured run, to price it at its own size: its input bytes
    and size label where the run has them (an empty dict: the job's)."""
    import math

    size = {}
    value = row.get("input_bytes")
    if value is not None and not (isinstance(value, float) and math.isnan(value)) and value > 0:
        size["input_bytes"] = float(value)
    label = row.get("datasize")
    if isinstance(label, str) and label:
        size["datasize"] = label
    elif "input_bytes" in size:
        size["datasize"] = ""
    return size


def job_runs(store, job):
    """The job key's finished runs in the store that calibrate its answers
    (:func:`history_factor`) and count as measured in its notes
    (``models.predict_frame``'s ``own_runs``): failed runs, wall-time-only runs and
    runs without a runtime left out, as in training; the newest :data:`HISTORY_RUNS`."""
    return job_run_frames(store, job)[0]


def job_failures(store, job):
    """The job key's runs in the store that failed with an error (status ``failed``:
    out of memory, a lost executor), newest :data:`HISTORY_RUNS`: no model learns from
    them (:func:`store_run_frame` leaves them out), so ``models.predict_frame`` counts
    them in its failure notes (``own_failures``): a configuration that failed on the
    user's cluster is said to have failed, and the tuner never recommends it as the best."""
    return job_run_frames(store, job)[1]


def job_run_frames(store, job) -> tuple:
    """(:func:`job_runs`, :func:`job_failures`) from one read of the store."""
    frame = store.run_frame(workload=str(job.workload),
                            framework=str(job.framework) if job.framework else None)
    if not len(frame):
        return frame, frame
    failed = frame[frame["status"].astype(str) == "failed"] if "status" in frame.columns \
        else frame.iloc[:0]
    own, _ = learnable_runs(frame)
    if len(own):
        own = own[own["completed"].astype(bool)]
    return _newest(own), _newest(failed)


def _newest(frame):
    """The newest :data:`HISTORY_RUNS` runs of ``frame``: the cost stays bounded as
    history grows."""
    if "id" in frame.columns:
        frame = frame.sort_values("id").tail(HISTORY_RUNS)
    return frame.reset_index(drop=True)


def history_factor(store, model, job, *, runs=None) -> tuple:
    """(factor, runs) of :func:`history_calibration`."""
    calibration = history_calibration(store, model, job, runs=runs)
    return calibration["factor"], calibration["runs"]


def history_calibration(store, model, job, *, runs=None) -> dict:
    """``{"factor", "runs", "far", "busy", "held"}``: how the job's own measured runs in the store
    compare with what ``model`` answers for them when asked as ``job`` (a
    :class:`jobgauge.job.Job`) is asked: each of its runs (``runs``, else
    :func:`job_runs`) is priced as ``job`` on the run's cluster with the run's
    settings; the factor is the exponential of the
    mean log ratio of measured to priced runtime, each run weighted by its distance from
    the asked input (:func:`reach_weights`: none beyond :data:`HISTORY_REACH` x), shrunk
    to 1 by ``w / (w + HISTORY_SHRINK_RUNS)`` (:func:`calibration_factor`); ``runs``:
    how many calibrate it, ``far``: how many are too far from the asked input to,
    ``busy``: how many started on a busy machine and are left out (:func:`quiet_runs`);
    factor 1.0 without such runs.  ``held``: the factor holds the answer at the
    (calibrated) answer of a smaller size, so that more data is never faster
    (:func:`_held_factor`; ``runs`` and ``far`` still count at the asked size).
    ``cluster_runs`` and ``cluster_jobs``: where none of the job's own runs calibrates
    it, the runs of other jobs on its instance type that do, and how many jobs they are
    (:func:`cluster_calibration`; 0 and 0 where its own runs do or there are none).

    Each run is priced at its own size (its input bytes and size label where it has
    them, else the job's): priced at the size asked, runs at a third and a tenth of it
    pulled every answer down to their own runtime (a job of the user's asked at 3x and
    10x its measured input was answered within 2 % of its answer at 1x).

    A prediction for the job times the factor is calibrated to what its runs measure:
    the shipped corpus times a query inside a warm application, while a job run
    through ``jobgauge-submit`` is timed as the whole application (its JVM and
    session start included), and a user's cluster is not this machine.  The runs are
    priced as the question is (not from their own stage timings, which the model
    replays to their measured time once it has trained on them), so the factor
    corrects the answer the user sees.  It multiplies every setting's prediction
    alike, so it changes no recommendation.

    A run that started on a busy machine (``quiet_start`` false: other processes' load
    above the guard's threshold, as ``jobgauge run`` and ``jobgauge-submit`` record it)
    is left out where the job has runs that did not (:func:`quiet_runs`): its time is
    the other processes' as much as the job's."""
    from dataclasses import replace

    import numpy as np

    from jobgauge.job import Job, jobs_frame
    from jobgauge.models.features import row_configs

    # the job key's runs only: the cost follows the job's history, not the store's size
    every = job_runs(store, job) if runs is None else runs
    own = quiet_runs(every)
    busy = len(every) - len(own)
    if not len(own):
        return {"busy": busy, **_cluster_fallback(store, model, job, far=0)}
    asked = jobs_frame(replace(job, cluster=Job.from_row(row).cluster, settings=config,
                               **_run_size(row))
                       for row, config in zip(own.to_dict("records"), row_configs(own)))
    question = jobs_frame([job])
    sizes, at = _run_sizes(model, question, asked)
    weights = reach_weights(sizes / at) if at else np.ones(len(asked))
    near = weights > 0
    far = int((~near).sum())
    measured = own["runtime_s"].to_numpy(dtype=float)
    predicted = model.predict(asked)
    factor, count = calibration_factor(measured[near], predicted[near], weights[near])
    # sizes unknown: every run calibrates alike, and nothing fades
    held = None if at is None else \
        _held_factor(model, job, question, at, sizes, measured, predicted, factor)
    if not count and held is None:   # every run too far from the asked input
        return {"busy": busy, **_cluster_fallback(store, model, job, far=far)}
    return {"factor": factor if held is None else held, "runs": count, "far": far,
            "busy": busy, "held": held is not None, "cluster_runs": 0, "cluster_jobs": 0}


def _cluster_fallback(store, model, job, *, far: int) -> dict:
    """:func:`history_calibration`'s answer for a job none of whose own runs calibrates
    it: the factor of the other jobs' runs on its instance type
    (:func:`cluster_calibration`)."""
    cluster = cluster_calibration(store, model, job)
    return {"factor": cluster["factor"], "runs": 0, "far": far, "held": False,
            "cluster_runs": cluster["runs"], "cluster_jobs": cluster["jobs"]}


#: :func:`cluster_calibration` prices the newest runs of other jobs on the asked instance
#: type, at most this many.
CLUSTER_RUNS = 100


def cluster_runs(store, job):
    """The store's finished runs of jobs other than ``job``'s on its instance type and
    framework (every node count: an instance type's speed is its own), the newest
    :data:`CLUSTER_RUNS`, less those that started on a busy machine where others did
    not (:func:`quiet_runs`)."""
    frame, _ = store_run_frame(store, instance_type=str(job.cluster.instance_type),
                               framework=str(job.framework) if job.framework else None)
    if not len(frame):
        return frame
    other = frame[frame["completed"].astype(bool)
                  & (frame["workload"].astype(str) != str(job.workload))]
    if "id" in other.columns:
        other = other.sort_values("id").tail(CLUSTER_RUNS)
    return quiet_runs(other.reset_index(drop=True))


def cluster_calibration(store, model, job) -> dict:
    """``{"factor", "runs", "jobs"}``: how the store's runs of other jobs on ``job``'s
    instance type (:func:`cluster_runs`) compare with what ``model`` answers for them,
    each priced as itself (its job, settings and size): :func:`cluster_factor`.  It
    calibrates the answers for a job with no runs of its own that do: a user's cluster
    slower or faster than the machine the shipped runs were measured on shows in all
    its jobs' runs (``bench/cluster_factor.py``).  Factor 1.0 without such runs."""
    from dataclasses import replace

    from jobgauge.job import Job, jobs_frame
    from jobgauge.models.features import row_configs

    filters = {"instance_type": str(job.cluster.instance_type),
               "framework": str(job.framework) if job.framework else None}
    # kept per model until the store's runs on the instance type change: a form that asks
    # many instance types, and every answer after it, pays the ~35 ms once
    key = (store.url, *filters.values(), str(job.workload), store.runs_mark(**filters))
    try:
        kept = _CLUSTER_KEPT.setdefault(model, {})
    except TypeError:           # a model that cannot be weakly referenced: not kept
        kept = {}
    if key in kept:
        return dict(kept[key])
    runs = cluster_runs(store, job)
    if not len(runs):
        answer = {"factor": 1.0, "runs": 0, "jobs": 0}
    else:
        priced = jobs_frame(replace(Job.from_row(row), settings=config, **_run_size(row))
                            for row, config in zip(runs.to_dict("records"), row_configs(runs)))
        factor, jobs = cluster_factor(runs["runtime_s"].to_numpy(dtype=float),
                                      model.predict(priced), runs["workload"].astype(str))
        answer = {"factor": factor, "runs": len(runs) if jobs else 0, "jobs": jobs}
    if len(kept) >= CLUSTER_KEPT:
        kept.pop(next(iter(kept)))
    kept[key] = answer
    return dict(answer)


#: :func:`cluster_calibration`'s answers kept per model (weakly: a model let go takes
#: its answers with it), at most this many per model, the oldest dropped first.
CLUSTER_KEPT = 256
_CLUSTER_KEPT = weakref.WeakKeyDictionary()


def option_calibrations(store, model, jobs, *, runs=None) -> tuple[dict, list[dict]]:
    """(calibration, per option): one job asked on several clusters at once (the web
    form's options, ``jobs``: the same job on each).  ``calibration``:
    :func:`history_calibration` of the first; per option ``{"factor", "runs", "jobs"}``:
    where the job's own runs calibrate (or hold) its answers, that factor for every
    option (0 runs and jobs of other jobs); else each instance type its own, from the
    other jobs' runs on it (:func:`cluster_calibration`; the first type's is the
    calibration's own fallback), with how many runs of how many jobs gave it."""
    calibration = history_calibration(store, model, jobs[0], runs=runs)
    first = {"factor": calibration["factor"], "runs": calibration["cluster_runs"],
             "jobs": calibration["cluster_jobs"]}
    if calibration["runs"] or calibration["held"]:
        return calibration, [first] * len(jobs)
    by_type = {jobs[0].cluster.instance_type: first}
    for job in jobs:
        if job.cluster.instance_type not in by_type:
            by_type[job.cluster.instance_type] = cluster_calibration(store, model, job)
    return calibration, [by_type[job.cluster.instance_type] for job in jobs]


#: Sizes inside each fade of a run's weight (between :data:`HISTORY_NEAR` and
#: :data:`HISTORY_REACH` x its input, either way) at which :func:`_held_factor` also asks.
HOLD_STEPS = 4


def _held_factor(model, job, question, at, sizes, measured, predicted, factor):
    """The factor that keeps a calibrated answer from falling as the data grows, or None
    where ``factor`` does: the answer at ``at`` input bytes is the model's times
    ``factor``, each run's weight fading with its distance (:func:`reach_weights`), so
    moving away from runs the model answers too fast (or towards runs it answers too
    slowly) could make more data faster.  (A query of one's own run once at SF 0.01 was
    answered 0.276 s there and 0.268 s at SF 1, 100x away: its run had been slower
    than the model answered.)  The answer is at least the calibrated answer of the same
    question at every smaller size where a run's weight changes (the edges of its fades
    and :data:`HOLD_STEPS` sizes inside each): only those whose factor is above
    ``factor`` can be higher, and only they are asked of the model."""
    import math
    from dataclasses import replace

    import numpy as np

    from jobgauge.job import jobs_frame

    steps = np.linspace(math.log(HISTORY_NEAR), math.log(HISTORY_REACH), HOLD_STEPS + 2)
    known = np.unique(sizes[np.isfinite(sizes) & (sizes > 0)])    # runs share sizes
    points = np.unique(np.concatenate([np.outer(known, np.exp(steps)).ravel(),
                                       np.outer(known, np.exp(-steps)).ravel()]))
    points = points[points < at * (1.0 - 1e-9)]
    higher = []
    for point in points:
        weights = reach_weights(sizes / point)
        near = weights > 0
        there = calibration_factor(measured[near], predicted[near], weights[near])[0]
        if there > factor * (1.0 + 1e-9):
            higher.append((point, there))
    if not higher:
        return None
    frame = jobs_frame([replace(job, input_bytes=float(point), datasize="")
                        for point, _ in higher])
    highest = float(np.max(model.predict(frame) * np.array([there for _, there in higher])))
    raw = float(model.predict(question)[0])
    if not raw > 0 or highest <= raw * factor:
        return None
    return highest / raw


def _run_sizes(model, question, runs):
    """(input bytes of each of ``runs``, of ``question``) as the model sizes them (its
    ``measured_range_``); (NaNs, None) where it cannot tell."""
    import numpy as np

    from jobgauge.models._coverage import MeasuredRange

    measured = getattr(model, "measured_range_", None)
    if not isinstance(measured, MeasuredRange):
        return np.full(len(runs), np.nan), None
    asked = measured.input_bytes(question)[0]
    sizes = np.array([np.nan if size is None else size
                      for size in measured.input_bytes(runs)], dtype=float)
    return sizes, (asked if asked is not None and asked > 0 else None)


def reach_weights(ratios):
    """A run's weight in a calibration by the ratio of its input to the asked input: 1
    within :data:`HISTORY_NEAR` x either way, 0 beyond :data:`HISTORY_REACH` x, linear in
    the log ratio between; 1 where the ratio is not a positive number."""
    import math

    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        distance = np.abs(np.log(np.asarray(ratios, dtype=float)))
    weight = (math.log(HISTORY_REACH) - distance) / \
        (math.log(HISTORY_REACH) - math.log(HISTORY_NEAR))
    return np.where(np.isfinite(distance), np.clip(weight, 0.0, 1.0), 1.0)


def quiet_runs(runs):
    """``runs`` (a run frame) less those that started on a busy machine (``quiet_start``
    false), where any other is left; all of them where none is (then the busy runs are
    the only measurement of the job there is)."""
    from jobgauge.runtable import busy_starts

    busy = busy_starts(runs)
    return runs if busy.all() or not busy.any() else runs[~busy].reset_index(drop=True)


def calibration_factor(measured, predicted, weights=None) -> tuple:
    """(factor, runs) of :func:`history_factor` from a job's measured runtimes and what
    the model answers for the same runs: the exponential of the (``weights``-) weighted
    mean log ratio, shrunk to 1 by ``w / (w + HISTORY_SHRINK_RUNS)``, ``w`` the weight
    of the ``runs`` with both (their count without weights); (1.0, 0) without any."""
    import numpy as np

    measured = np.asarray(measured, dtype=float)
    predicted = np.asarray(predicted, dtype=float)
    weights = np.ones(len(measured)) if weights is None else np.asarray(weights, dtype=float)
    usable = np.isfinite(predicted) & (predicted > 0) & np.isfinite(measured) & \
        (measured > 0) & (weights > 0)
    n = int(usable.sum())
    if not n:
        return 1.0, 0
    total = float(weights[usable].sum())
    log_ratio = float(np.sum(weights[usable] * np.log(measured[usable] / predicted[usable])))
    return float(np.exp(log_ratio / (total + HISTORY_SHRINK_RUNS))), n


#: The shrinkage of :func:`cluster_factor`'s log factor, J / (J + this), J the jobs whose
#: runs give it.  Scored by ``bench/cluster_factor.py`` (each TPC-H query of a table
#: answered from the other queries' runs on the same machine; ``--shrink S`` for
#: another): with 1 its answers on the machine the model learned from were at worst 0.1
#: point of MdAPE above uncalibrated (from one other query's runs), where 0 was up to
#: 1.6 points above; 2 gained less on the slower machine (25.3 % from one query's runs,
#: against 21.9 % with 1 and 33.6 % uncalibrated).
CLUSTER_SHRINK_JOBS = 1.0


def cluster_factor(measured, predicted, jobs) -> tuple:
    """(factor, jobs): how much slower (above 1) or faster the runs of other jobs on one
    cluster measured than the model answers for them: per job the mean log ratio of
    measured to answered runtime, their mean over the ``jobs`` (one name per run), shrunk
    to 1 by J / (J + :data:`CLUSTER_SHRINK_JOBS`); (1.0, 0) without any.  A cluster
    slower than the machine the model learned from (the slower machine of session 48:
    its SF 1 runs 1.6x the shipped ones) shows in every job's runs alike, where one
    job's own miss does not."""
    import numpy as np

    measured = np.asarray(measured, dtype=float)
    predicted = np.asarray(predicted, dtype=float)
    jobs = np.asarray(jobs, dtype=object)
    usable = np.isfinite(predicted) & (predicted > 0) & np.isfinite(measured) & (measured > 0)
    names = sorted(set(jobs[usable]))
    if not names:
        return 1.0, 0
    logs = np.log(measured[usable] / predicted[usable])
    per_job = [float(logs[jobs[usable] == name].mean()) for name in names]
    shrink = len(names) / (len(names) + CLUSTER_SHRINK_JOBS)
    return float(np.exp(np.mean(per_job) * shrink)), len(names)


def predict_with_history(store, model, job, *, coverage: float = 0.8) -> dict:
    """``models.predict_job``'s answer for ``job`` calibrated to the job key's own runs
    in ``store`` (:func:`job_runs`, :func:`history_factor`; its notes count them as
    measured), with ``calibrated_runs`` (how many) and ``history_factor``: what the web
    form, ``jobgauge predict`` and ``jobgauge hive explain --predict`` answer."""
    from jobgauge.models import predict_job

    own, failed = job_run_frames(store, job)
    calibration = history_calibration(store, model, job, runs=own)
    factor = calibration["factor"]
    return {**predict_job(model, job, coverage=coverage, factor=factor, own_runs=own,
                          own_failures=failed),
            "calibrated_runs": calibration["runs"], "history_factor": factor,
            "history_held": calibration["held"],
            "busy_runs_left_out": calibration["busy"],
            "far_runs_left_out": calibration["far"],
            "cluster_runs": calibration["cluster_runs"],
            "cluster_jobs": calibration["cluster_jobs"]}


def explain_answer(model, job, factor: float = 1.0) -> dict | None:
    """Where the time of ``job``'s answer goes: the stage model's replay of its profile
    (``StagePredictor.explain``) with every time times ``factor`` (the job's calibration,
    :func:`history_factor`), so its stages and driver add up to the answer (before a
    read floor); None for a model without stages or a job it does not replay."""
    explain = getattr(model, "explain", None)
    if explain is None:
        return None
    told = explain(job.frame().iloc[0])
    if not told.get("stages"):
        return None
    stages = [{**stage, "seconds": stage["seconds"] * factor} for stage in told["stages"]]
    return {"method": told["method"], "replayed_from": told.get("replayed_from"),
            "factor": factor, "runtime_s": told["runtime_s"] * factor,
            "driver_s": max(told["driver_s"] * factor, 0.0), "stages": stages,
            "critical_path": told["critical_path"],
            "critical_path_s": told["critical_path_s"] * factor,
            "dominating_stage": told["dominating_stage"]}


def explanation_lines(explanation: dict) -> list[str]:
    """:func:`explain_answer` in words, one line per stage."""
    def name(stage_id):
        return f"stage {stage_id:g}"

    total = explanation["runtime_s"]
    lines = [f"where the time goes ({explanation['method']}"
             + (f", times {explanation['factor']:.2f} to match the job's runs"
                if explanation["factor"] != 1.0 else "") + "):"]
    for stage in explanation["stages"]:
        share = stage["seconds"] / total if total > 0 else 0.0
        line = (f"  {name(stage['stage_id']):<11} {stage['kind']:<10} {stage['tasks']:>5} "
                f"task{'s' if stage['tasks'] != 1 else ' '} in {stage['waves']:>4} "
                f"wave{'s' if stage['waves'] != 1 else ' '} {stage['seconds']:9.2f} s "
                f"{100 * share:3.0f} %")
        if stage.get("shuffle_join"):
            line += (f"  a shuffle join: the broadcast of {name(stage['stage_id'] - 0.5)} "
                     f"outgrows spark.sql.autoBroadcastJoinThreshold here, a plan its "
                     f"profile did not run")
        lines.append(line)
    lines.append(f"  {'driver':<11} {'':<10} {'':>24} {explanation['driver_s']:9.2f} s")
    path = " -> ".join(f"{s:g}" for s in explanation["critical_path"])
    lines.append(f"  the stages run one after another; the longest chain of dependent stages: "
                 f"{path} ({explanation['critical_path_s']:.2f} s); the most time: "
                 f"{name(explanation['dominating_stage'])}")
    return lines


#: What an answer held at the calibrated answer of a smaller size says
#: (:func:`_held_factor`).
HELD_NOTE = "held at its answer at a smaller size: more data is never faster"


def calibration_line(runs: int, workload: str, factor: float, left_out: int = 0,
                     far: int = 0, held: bool = False, cluster_runs: int = 0,
                     cluster_jobs: int = 0, instance_type: str = "") -> str:
    """What an answer calibrated to ``runs`` of the job's own runs says of it, and of the
    ``left_out`` runs that started on a busy machine and the ``far`` ones too far from
    its size (both counted by :func:`history_calibration`), and whether it is ``held``
    at the calibrated answer of a smaller size; or, calibrated to ``cluster_runs`` of
    ``cluster_jobs`` other jobs on ``instance_type`` instead (:func:`cluster_calibration`),
    that; "" for an answer that no run calibrates and none was left out of."""
    beyond = (f"{far} run{'s' if far != 1 else ''} more than {HISTORY_REACH:g}x smaller or "
              f"larger than this input") if far else ""
    if not runs and cluster_runs:
        line = (f"calibrated to the {cluster_runs} measured run{'s' if cluster_runs != 1 else ''}"
                f" of {cluster_jobs} other job{'s' if cluster_jobs != 1 else ''} on "
                f"{instance_type} in the store: the model's answer x {factor:.2f} "
                f"(none of {workload}'s own)")
        return line[:-1] + f"; {beyond} left out)" if far else line
    if not runs:
        notes = [beyond] * bool(far) + [f"the model's answer x {factor:.2f}, {HELD_NOTE}"] * held
        return f"not calibrated to {workload}'s runs in the store: " + "; ".join(notes) \
            if notes else ""
    line = (f"calibrated to the {runs} measured run{'s' if runs != 1 else ''} of "
            f"{workload} in the store: the model's answer x {factor:.2f}")
    notes = []
    if left_out:
        notes.append(f"{left_out} run{'s' if left_out != 1 else ''} that started on a busy "
                     f"machine left out")
    if far:
        notes.append(f"{beyond} left out")
    if held:
        notes.append(HELD_NOTE)
    return line + (f" ({'; '.join(notes)})" if notes else "")


# ------------------------------------------------------------------ the store's model

def train_store_model(store, *, name: str = DEFAULT_MODEL_NAME, kind: str | None = None,
                      runs_dir=None, prior=None, profile_files=None, seed: int = 0,
                      progress=None):
    """Train a ``kind`` model (default: the registry's) on :func:`learning_frame` with
    ``jobgauge train``'s code (``models._training.train_model``), save it in the store
    as ``name`` and return (model, meta).  A model that keeps reference profiles gets
    the profile records of ``profile_files`` (default: those beside the prior run
    tables, :func:`prior_profile_files`).  The re-measurements beside ``runs_dir``
    (:func:`prior_failures`) count in its failure notes, whether or not ``prior``
    gives the runs it learns from.  Its metrics add ``store_runs``: how many
    runs the store held, which :func:`runs_since_training` counts from; and
    ``prior_runs_dir`` and ``prior_profile_files``, where ``runs_dir`` is not the
    shipped folder, so that the background retraining learns from the same prior
    (:func:`recorded_prior`)."""
    from jobgauge.models import dumps_model
    from jobgauge.models._training import train_model

    store_runs = store.count_runs()
    frame, origin, notes = learning_frame(store, runs_dir=runs_dir, prior=prior)
    if profile_files is None:
        profile_files = prior_profile_files(prior_run_tables(runs_dir)) \
            if learns_reference_profiles(kind) else []
    profiles = with_store_profiles(reference_profile_records(kind, profile_files), kind,
                                   store, frame)
    failures = prior_failures(runs_dir)
    model, summary = train_model(frame, kind=kind, seed=seed, origin=origin, notes=notes,
                                 profiles=profiles, progress=progress, failures_from=failures)
    summary["store_runs"] = int(store_runs)
    if not _is_shipped_runs_dir(runs_dir):
        summary["prior_runs_dir"] = str(Path(runs_dir).resolve())
        summary["prior_profile_files"] = [str(Path(p).resolve()) for p in profile_files]
    store.save_model(name, summary["model"], dumps_model(model), summary)
    meta, _ = store.load_model(name)
    return model, meta


def store_model(store, *, name: str | None = None, kind: str | None = None, runs_dir=None,
                prior=None, progress=None):
    """(model, meta): the store's newest model (of ``name`` when given); on a store
    without one, a model trained on first need by :func:`train_store_model` (the prior
    plus the store's runs) and saved as ``name`` (default :data:`DEFAULT_MODEL_NAME`).
    ``kind`` defaults to ``$JOBGAUGE_MODEL_KIND`` (the web service's ``MODEL_KIND``
    setting), else the registry's default.  A store that cannot be read is its
    StoreError, never a reason to train."""
    from jobgauge.models import loads_model
    from jobgauge.store import NoStoredModel

    try:
        meta, payload = store.load_model(name)
        return loads_model(payload), meta
    except NoStoredModel:
        if progress is not None:
            print(f"no model in the store yet: training one from the shipped runs and the "
                  f"store's own ({store.count_runs()} runs) ...", file=progress, flush=True)
        kind = kind or os.environ.get(MODEL_KIND_ENV) or None
        return train_store_model(store, name=name or DEFAULT_MODEL_NAME, kind=kind,
                                 runs_dir=runs_dir, prior=prior, progress=progress)


# ------------------------------------------------------------------ retraining

def retrain_every(value=None) -> int:
    """The retraining interval: ``value`` if given, else ``$JOBGAUGE_RETRAIN_EVERY``,
    else :data:`DEFAULT_RETRAIN_EVERY`; 0 switches retraining off."""
    source = "retrain_every"
    if value is None:
        value = os.environ.get(RETRAIN_EVERY_ENV)
        source = RETRAIN_EVERY_ENV
    if value is None or value == "":
        return DEFAULT_RETRAIN_EVERY
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"{source} must be a whole number >= 0, got {value!r}") from None
    if number < 0:
        raise UsageError(f"{source} must be a whole number >= 0, got {number}")
    return number


def runs_since_training(store, meta: dict | None = None) -> int:
    """Runs added to the store since the newest model (``meta``) was trained: the
    store's count minus the ``store_runs`` its metrics keep (a model trained elsewhere
    counts from none)."""
    if meta is None:
        models = store.list_models()
        if not models:
            return store.count_runs()
        meta = models[0]
    seen = (meta.get("metrics") or {}).get("store_runs") or 0
    return max(0, store.count_runs() - int(seen))


def retrain_lock_path(store) -> Path:
    """The lock file of a store's retraining: beside an SQLite store's file, else in
    the user's jobgauge folder, named after the store."""
    url = str(store.url)
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        path = Path(url.removeprefix("sqlite:///"))
        return path.with_name(path.name + ".retrain.lock")
    from jobgauge.store import DEFAULT_PATH

    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    return DEFAULT_PATH.parent / f"retrain-{digest}.lock"


@contextlib.contextmanager
def training_lock(path):
    """Hold the lock file ``path`` (an exclusive ``flock``) for the block; yields True,
    or False at once when another process holds it."""
    import fcntl

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def maybe_retrain(store, *, every=None, name: str = DEFAULT_MODEL_NAME, kind: str | None = None,
                  lock_path=None):
    """Start retraining in the background when the store holds ``every`` (see
    :func:`retrain_every`) or more runs the newest model has not seen: a detached
    ``jobgauge train --with-prior --model-name NAME --lock FILE`` of the newest model's
    kind (or ``kind``), the store's URL in its environment, its output in ``FILE.log``,
    at the lowest CPU priority (:data:`BACKGROUND_NICE`: the user's next job keeps the
    cores).  Returns the started process, or None (retraining off, too few new runs, no
    model yet, or a training running)."""
    every = retrain_every(every)
    if every == 0:
        return None
    models = store.list_models()
    if not models or runs_since_training(store, models[0]) < every:
        return None
    lock_path = Path(lock_path) if lock_path else retrain_lock_path(store)
    with training_lock(lock_path) as free:
        if not free:
            return None                   # a training is running: it will see these runs
    command = [sys.executable, "-m", "jobgauge.cli", "train", "--with-prior",
               "--model-name", name, "--lock", str(lock_path)]
    kind = kind or models[0].get("kind")       # the kind answering now, retrained
    if kind:
        command += ["--kind", kind]
    env = dict(os.environ, JOBGAUGE_STORE=str(store.url))
    with open(lock_path.with_name(lock_path.name + ".log"), "ab") as log:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                env=env, start_new_session=True, close_fds=True,
                                preexec_fn=_background_priority)


def retrain_after_runs(store, *, every=None, note=None, warn=None) -> None:
    """After recording runs: start the background retraining when enough new runs are
    in (:func:`maybe_retrain`; never waits) and ``note`` it; a retraining that cannot
    start is a ``warn``-ing, never an error: the runs are recorded, and the next new
    run tries again.  ``note`` and ``warn`` default to ``jobgauge:`` lines on stderr."""
    def say(prefix):
        return lambda message: print(f"jobgauge: {prefix}{message}", file=sys.stderr,
                                     flush=True)

    note, warn = note or say(""), warn or say("warning: ")
    try:
        if maybe_retrain(store, every=every) is not None:
            note("retraining the model on the new runs in the background")
    except Exception as exc:  # noqa: BLE001 - the runs are recorded; retraining is a bonus
        warn(f"retraining not started ({exc.__class__.__name__}: {exc})")


def retraining_pid(lock_path) -> int | None:
    """The process id of the retraining that holds ``lock_path`` (None: none running)."""
    import fcntl

    path = Path(lock_path)
    if not path.exists():
        return None
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            text = handle.read().strip()
            return int(text) if text.isdigit() else None
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None


def _signal_group(pid: int, number: int) -> bool:
    try:
        os.killpg(os.getpgid(pid), number)
    except OSError:                   # gone, or not ours
        return False
    return True


@contextlib.contextmanager
def retraining_paused(store, *, lock_path=None):
    """Hold the store's background retraining still (SIGSTOP to its process group) for
    the block, and let it go on after (SIGCONT), even when the block fails: a job on
    this machine's cores runs alone, and the retraining loses only time.  Yields
    whether one was paused.  (The learning loop at SF 1 measured the job started just
    after a retraining began at 1.4-2x its time: Q1 24.6-29.6 s against 14.1-17.4 s,
    Q10 with the defaults 32.0 s against 15.6 s, with the retraining at nice 19.)
    A retraining a killed wrapper left paused goes on at the next
    :func:`resume_retraining` or pause."""
    import signal

    try:
        pid = retraining_pid(lock_path or retrain_lock_path(store))
    except (OSError, ValueError):
        pid = None
    paused = pid is not None and _signal_group(pid, signal.SIGSTOP)
    try:
        yield paused
    finally:
        if paused:
            _signal_group(pid, signal.SIGCONT)


def resume_retraining(store, *, lock_path=None) -> bool:
    """Let a paused background retraining of the store go on; whether one was found."""
    import signal

    pid = retraining_pid(lock_path or retrain_lock_path(store))
    return pid is not None and _signal_group(pid, signal.SIGCONT)


#: The niceness of the background retraining.  The learning loop at SF 1 measured Q1 at
#: 19-20 s in the rounds a retraining ran beside it at normal priority, 11.5-11.9 s in
#: the others (2 cores): the retraining must never take the job's cores.
BACKGROUND_NICE = 19


def _background_priority() -> None:
    """In the retraining's child process: the lowest CPU priority."""
    os.nice(BACKGROUND_NICE)
