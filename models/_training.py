"""Training a runtime model, the one way ``jobgauge train`` and the web service do it.

:func:`train_model` fits a registry model on a run-table frame and returns it
with its summary, the one metrics layout the store keeps with every model::

    {"model": "fc", "training_rows": 1372, "censored_rows": 4,
     "sources": {"local": 1372}, "workloads": ["join", "tpch-q1", ...],
     "datasizes": ["huge", "sf0.1", ...], "instance_types": ["local[2]", ...],
     "settings_varied": ["spark.sql.shuffle.partitions", ...],
     "error_estimate_from": "...", "calibration_rows": 274,
     "calibration_mdape": 0.12, "calibration_p90_ape": 0.4,
     "interval_80_factors": [0.8, 1.3], "trained_from": "data/runs/...", "notes": [...]}

``workloads``, ``datasizes`` and ``instance_types`` are what the model has
seen (from its ``measured_range_``, :mod:`jobgauge.models._coverage`), so an
estimate can say when it extrapolates; ``settings_varied`` the
settings whose effect the runs can show (a recommendation changes no other).
"""

from __future__ import annotations

import math


def settings_varied(frame) -> list[str]:
    """The settings that take more than one value across the runs of ``frame`` (a
    setting a run leaves out counts as its default): the only ones the runs can
    show an effect of."""
    import json

    if "config" in frame.columns:
        configs = [c if isinstance(c, dict) else {} for c in frame["config"]]
    elif "config_json" in frame.columns:
        configs = [json.loads(c) if isinstance(c, str) and c else {} for c in frame["config_json"]]
    else:
        return []
    values: dict = {}
    for config in configs:
        for key, value in config.items():
            values.setdefault(key, set()).add(str(value))
    return sorted(k for k, v in values.items()
                  if len(v) > 1 or any(k not in c for c in configs))


def training_summary(model, frame) -> dict:
    """Counts, what the model has seen, and held-out error figures of a freshly
    trained ``model`` on ``frame``."""
    import numpy as np

    from jobgauge.models._base import conformal_offsets
    from jobgauge.models._registry import model_name

    residuals = model.calibration_residuals_
    relative = np.abs(np.expm1(residuals))
    low, high = conformal_offsets(residuals, 0.8)

    measured = model.measured_range_   # what the runs covered: the model's own record
    return {
        "model": model_name(model),
        "training_rows": len(frame),
        "censored_rows": int(model.n_censored_),
        "sources": {str(k): int(v) for k, v in frame["source"].value_counts().sort_index().items()},
        "workloads": measured.workload_names(),
        "datasizes": measured.size_labels(),
        "instance_types": measured.instance_type_names(),
        "settings_varied": settings_varied(frame),
        "error_estimate_from": model.interval_source_,
        "calibration_rows": len(residuals),
        "calibration_mdape": float(np.median(relative)),
        "calibration_p90_ape": float(np.quantile(relative, 0.9)),
        "interval_80_factors": [float(math.exp(low)), float(math.exp(high))],
    }


def train_model(frame, *, kind: str | None = None, params: dict | None = None,
                profiles: dict | None = None, seed: int = 0, origin: str = "",
                notes=(), progress=None, failures_from=None):
    """Fit the registry model ``kind`` (default ``DEFAULT_MODEL``) with ``params``
    (``random_state`` defaults to ``seed``) on the run-table ``frame``.

    ``profiles``: profile records keyed by (source, run_id) (``read_profile_records``);
    each workload then gets the profile and plan DAG of one reference run.
    ``origin`` says where the runs came from, ``notes`` what was left out of them;
    ``progress`` (a stream) gets one line before the fit.  ``failures_from``: a run
    table of other measurements of the same jobs, not learned from, whose failed runs
    the model's failure notes count too
    (:meth:`jobgauge.models._coverage.MeasuredRange.with_failures_of`).  Returns ``(model,
    summary)``; the summary is the layout of the module docstring.  A bad
    parameter fails before any work.  The same training done before, with the same
    code, libraries and machine, is loaded from the model cache instead
    (:mod:`jobgauge.models._cache`, ``$JOBGAUGE_MODEL_CACHE``; ``progress`` says so)."""
    from jobgauge.models._params import validate_params
    from jobgauge.models._registry import DEFAULT_MODEL, make_model

    notes = list(notes)
    if profiles is not None:
        from jobgauge.models.evaluation import attach_reference_profiles

        frame = attach_reference_profiles(frame, profiles)
        profiled = frame.loc[frame["profile"].notna(), "workload"].nunique()
        notes.append(f"reference profiles for {profiled} of {frame['workload'].nunique()} "
                     f"workloads")
    kind = kind or DEFAULT_MODEL
    params = dict(params or {})
    params.setdefault("random_state", seed)
    model = make_model(kind, **params)
    validate_params(model)
    # the same runs trained on before, with the same code: that model, not another fit
    # (models._cache; a new store trains the shipped runs' model on first need).  The
    # origin and notes only describe the runs: they are not part of the key.
    from jobgauge.models import _cache

    folder = _cache.cache_dir()
    key = _cache.training_key(frame, kind=kind, params=sorted(params.items(), key=str),
                              failures_from=failures_from) if folder is not None else None
    cached = _cache.cached_model(key, folder) if key is not None else None
    if cached is not None:
        model, path = cached
        if progress is not None:
            print(f"{kind} trained on these {len(frame)} runs before, with this code: "
                  f"loaded from {path}", file=progress, flush=True)
    else:
        if progress is not None:
            print(f"training {kind} on {len(frame)} runs from {origin or 'a run table'} ...",
                  file=progress, flush=True)
        model.fit(frame)
    if failures_from is not None and len(failures_from) \
            and getattr(model, "measured_range_", None) is not None:
        if cached is None:      # a cached model has them counted already
            model.measured_range_ = model.measured_range_.with_failures_of(failures_from)
        failed = int((~failures_from["completed"].astype(bool)).sum())
        notes.append(f"counted the failures of {len(failures_from)} re-measured runs, not "
                     f"learned from ({failed} failed)")
    if cached is None and key is not None:
        _cache.keep_model(key, folder, model)
    summary = training_summary(model, frame)
    summary["trained_from"] = origin
    summary["notes"] = notes
    return model, summary
