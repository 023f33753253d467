"""Runtime models: predict how long a job takes, with a calibrated interval.

Every model follows the scikit-learn estimator contract and learns from a
run-table DataFrame (``jobgauge.runtable.read_run_tables``), optionally with
``profile`` and ``dag`` columns::

    from jobgauge.models import make_model, predict_one, save_model
    model = make_model("fc", random_state=0).fit(frame)
    predict_one(model, workload="terasort", datasize="huge",
                instance_type="m4.xlarge", instance_count=8, vcpus=4, memory_gib=16)
    # {'runtime_s': ..., 'low_s': ..., 'high_s': ..., 'outside_measured': False,
    #  'note': None}

A question about one job is a :class:`jobgauge.job.Job` (``predict_job(model,
job)``); ``train_model(frame, kind=...)`` is the one way a model is trained
(``jobgauge train`` and the web service), returning the model and its summary.

Registered models (``MODELS``): tree, svm, forest, gbm, ernest, fc, rnn, stage
(:class:`StagePredictor`, a stage-level replay of a job's profile); any
of them with ``+classes`` (``with_classes=True``) adds :class:`JobClassifier`
classes to its features.  Every fitted model keeps :class:`MeasuredRange`
(``measured_range_``): what its runs covered, so a prediction far outside it
says so (``outside_measured`` and a note naming the nearest measured size).

Names are loaded on first use (PEP 562), so ``import jobgauge.models.cli``
(the ``jobgauge --help`` path) does not import scikit-learn or torch.
"""

from __future__ import annotations

import importlib
import importlib.util

_EXPORTS = {
    "RuntimeModel": "_base",
    "DecisionTreeModel": "_baselines", "ErnestModel": "_baselines",
    "GradientBoostingModel": "_baselines", "RandomForestModel": "_baselines",
    "SVRModel": "_baselines",
    "JobClassifier": "_classifier",
    "DagRNN": "_networks", "FullyConnectedModel": "_networks",
    "InvalidParameterError": "_params",
    "MeasuredRange": "_coverage",
    "DEFAULT_MODEL": "_registry", "FORMAT_VERSION": "_registry", "MODELS": "_registry",
    "configuration_frame": "_registry", "dumps_model": "_registry", "load_model": "_registry",
    "loads_model": "_registry", "make_model": "_registry", "model_name": "_registry",
    "model_names": "_registry", "predict_frame": "_registry", "predict_job": "_registry",
    "predict_one": "_registry",
    "read_header": "_registry", "save_model": "_registry",
    "RunFeatures": "features",
    "StagePredictor": "_stage",
    "train_model": "_training", "training_summary": "_training",
}
# The online remaining-time estimator is its own module (models/remaining.py);
# it is exported when the file exists, and an error inside it is not hidden.
__all__ = [
    "DEFAULT_MODEL", "FORMAT_VERSION", "MODELS", "DagRNN", "DecisionTreeModel", "ErnestModel",
    "FullyConnectedModel", "GradientBoostingModel", "InvalidParameterError", "JobClassifier",
    "MeasuredRange", "RandomForestModel", "RunFeatures", "RuntimeModel", "SVRModel",
    "StagePredictor", "configuration_frame",
    "dumps_model", "load_model", "loads_model", "make_model", "model_name", "model_names",
    "predict_frame", "predict_job", "predict_one", "read_header", "save_model",
    "train_model", "training_summary",
]
if importlib.util.find_spec("jobgauge.models.remaining") is not None:
    _EXPORTS["RemainingTimeEstimator"] = "remaining"
    __all__ += ["RemainingTimeEstimator"]


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"jobgauge.models.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'jobgauge.models' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
