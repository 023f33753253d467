"""The tuner: Optuna studies over execution settings and cluster configurations.

Search space (``SearchSpace``, ``KNOBS``, ``build_space``; ``Knob``, ``KNOBS``
and ``knob`` are the core knob table's, ``jobgauge.knobs``), objective
(``Objective``, ``Goal``), sampler (``make_sampler``, ``TransferSampler``)
and storage (``get_storage``) are separate pieces; the modes join them:
``tune_with_model`` (a runtime model is the objective), ``tune_measured``
(real runs) and ``tune_replay`` (look-ups in a run table).

Names are loaded on first use, so ``import jobgauge.tuner`` (and the CLI's
``--help``) does not import Optuna, NumPy or pandas.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    # search spaces and constraints
    "Knob": "_space", "KNOBS": "_space", "SearchSpace": "_space", "build_space": "_space",
    "local_spark_space": "_space", "LOCAL_SPARK_KNOBS": "_space",
    "spark_sql_space": "_space", "job_space": "_space", "knob": "_space",
    "check_configuration": "_space",
    "hive_to_spark": "_space", "spark_to_hive": "_space", "spark_submit_lines": "_space",
    "hive_set_lines": "_space", "format_setting": "_space",
    # instance catalog
    "InstanceType": "_catalog", "InstanceCatalog": "_catalog", "load_catalog": "_catalog",
    "read_catalog": "_catalog",
    # objectives
    "Goal": "_objective", "Measurement": "_objective", "Objective": "_objective",
    "cost_usd": "_objective", "OBJECTIVES": "_objective", "Outcome": "_objective",
    # samplers, storage, the loop
    "make_sampler": "_samplers", "TransferSampler": "_samplers",
    "RandomCandidateSampler": "_samplers", "SnappedSampler": "_samplers",
    "get_storage": "_storage", "CandidateSet": "_candidates",
    "create_study": "_study", "run_trials": "_study", "ask_configuration": "_study",
    "tell_measurement": "_study", "summarise": "_study", "level_importance": "_study",
    "TuneResult": "_study", "TrialResult": "_study",
    # modes
    "tune_replay": "_modes", "tune_with_model": "_modes", "tune_measured": "_modes",
    "tune_space": "_modes", "model_evaluator": "_modes", "measured_evaluator": "_modes",
    "ReplayTable": "_replay", "history_prior": "_transfer", "history_frame": "_transfer",
    # the recommendation and its trust region
    "recommend": "_recommend", "Recommendation": "_recommend", "TrustRegion": "_recommend",
    "store_trust_region": "_recommend",
    # errors
    "UnknownWorkload": "_errors", "UnknownInstanceType": "_errors",
    "EmptyRunTable": "_errors", "InvalidConfiguration": "_errors",
    "InfeasibleTuning": "_errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'jobgauge.tuner' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"jobgauge.tuner.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
