"""What every runtime model shares: targets, censoring, features, intervals.

A model learns the logarithm of the runtime, so its errors are relative
errors (a 10 s miss on a 20 s job counts as much as a 100 s miss on a 200 s
job).  Rows with ``completed=False`` hit a time limit: their runtime is at
least ``runtime_s``.  They are kept as censored targets: models fit with
``censored_iterations`` rounds that raise each censored target to
max(observed bound, current prediction); the networks use a one-sided loss.

Intervals are split-conformal: ``fit`` holds out ``calibration_size`` of the
clusters (or, on data from few clusters, of the configurations; all runs of
one go to the same side, see :func:`configuration_keys`), fits on
the rest, keeps the held-out log residuals of completed runs, then refits on
everything.  ``predict_interval(X, coverage)`` returns the residual
quantiles around the prediction, so an 80 % interval covered 80 % of unseen
configurations during fit.  ``calibration_size=0`` skips the extra fit and
uses training residuals (cheaper, intervals too narrow).  A model may sort its
held-out residuals by the kind of question they answer (``_interval_groups``:
the stage predictor tells a job measured at the asked size or near it from one
that is not); each named kind with :data:`MIN_POOL_RESIDUALS` residuals or more
then gives its own rows their interval (Mondrian conformal).  Kinds nest
(``"measured job|spark|TPC-H"`` is a kind of ``"measured job|spark"``, the broadest,
of two parts): a kind with too few residuals takes the pool of the narrowest broader
kind that has enough, and a row of no named kind the pooled one.  (Giving those the
widest of the pooled and the named intervals was
measured: on the scale-up to SF 3 and SF 10 the pooled interval already covers
89 % of runs, the widest 94 %, ``bench/evaluate.py --quiet-corpus``.)  A model may
then widen the interval of a row asked beyond what was measured (``_extrapolated``:
the stage predictor, by the error per unit of log distance that it measured by
holding out each job's largest size), so a far answer is never surer than a near one,
and then raise a low bound that would fall below a smaller size's
(``_never_falling_bounds``), so more data is never answered with a lower bound.

``fit`` also keeps ``measured_range_``, what the training runs covered
(:class:`jobgauge.models._coverage.MeasuredRange`), so that a prediction far
outside it can say so.
"""

from __future__ import annotations

import contextlib
import math
from typing import ClassVar

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from jobgauge.errors import ModelError
from jobgauge.models._coverage import MeasuredRange
from jobgauge.models._params import Boolean, Interval, Options, RandomState, validate_params
from jobgauge.models.features import RUN_MODES, RunFeatures, check_fitted, check_frame, \
    run_modes
from jobgauge.runtable import public_origins

MIN_CALIBRATION_GROUPS = 5
#: The fewest held-out residuals of one kind of question that give that kind intervals
#: of its own (fewer: the pooled residuals).
MIN_POOL_RESIDUALS = 30
#: The fewest finished runs of each run mode (this machine, other machines) for a model to
#: learn the two apart (:meth:`RuntimeModel._fit_parts`).
MIN_MODE_RUNS = 30


def targets(X, y=None):
    """(runtime seconds, censored mask) of a run table, checked.

    ``y`` defaults to ``X.runtime_s``; ``completed=False`` rows are censored.
    """
    if y is None:
        if "runtime_s" not in X.columns:
            raise ModelError("no target: pass y or give X a runtime_s column")
        y = X["runtime_s"]
    y = np.asarray(y, dtype=float).reshape(-1)
    if len(y) != len(X):
        raise ModelError(f"y has {len(y)} values for {len(X)} rows")
    if not (np.isfinite(y) & (y > 0)).all():
        bad = int(np.flatnonzero(~(np.isfinite(y) & (y > 0)))[0])
        raise ModelError(f"runtime_s must be a positive number in every training row "
                         f"(row {bad} has {y[bad]!r})")
    if "completed" in X.columns:
        censored = ~X["completed"].fillna(True).astype(bool).to_numpy()
    else:
        censored = np.zeros(len(X), dtype=bool)
    if censored.all():
        raise ModelError("every training run is censored (completed=false): "
                         "at least one finished run is needed")
    return y, censored


MIN_CALIBRATION_CLUSTERS = 8


def configuration_keys(X) -> np.ndarray:
    """One string per row naming the unit a calibration split holds out.

    With at least MIN_CALIBRATION_CLUSTERS distinct clusters (instance type x count), whole
    clusters are held out: a new cluster is the harder question a user asks, and holding
    out only knob settings on a cluster seen in training gives intervals that are too
    narrow for it.  Otherwise (one machine, knobs varied) the unit is the configuration:
    cluster plus knobs.  Runs of different workloads or sizes share the key either way.
    Each origin (``runtable.public_origins``: a public table, or jobgauge's and the
    user's runs) is keyed by its own clusters: the public tables' dozens of EC2 clusters
    made whole clusters the unit for jobgauge's three local ones too, so one of them,
    or none, was held out.
    """
    origins = public_origins(X)
    if len(set(origins)) > 1:
        keys = np.empty(len(X), dtype=object)
        for origin in np.unique(origins):
            mine = origins == origin
            keys[mine] = configuration_keys(X[mine])
        return keys

    def join(columns):
        keys = X[columns[0]].astype(str).to_numpy().astype(object)
        for column in columns[1:]:
            keys = keys + "|" + X[column].astype(str).to_numpy().astype(object)
        return keys

    clusters = join(["instance_type", "instance_count"])
    if len(np.unique(clusters)) >= MIN_CALIBRATION_CLUSTERS or "config_json" not in X.columns:
        return clusters
    return join(["instance_type", "instance_count", "config_json"])


def conformal_offsets(residuals, coverage):
    """(low, high) log offsets that cover ``coverage`` of future residuals (split conformal)."""
    n = len(residuals)
    alpha = 1.0 - coverage
    low_level = math.floor((n + 1) * alpha / 2) / n
    high_level = min(math.ceil((n + 1) * (1 - alpha / 2)) / n, 1.0)
    low = np.quantile(residuals, max(low_level, 0.0), method="inverted_cdf") if low_level > 0 \
        else residuals.min() - (residuals.max() - residuals.min()) * 0.5
    high = np.quantile(residuals, high_level, method="inverted_cdf")
    if high_level >= 1.0:
        high = residuals.max() + (residuals.max() - residuals.min()) * 0.5
    return min(float(low), 0.0), max(float(high), 0.0)


def _kind_pools(residuals, groups) -> dict:
    """The held-out residuals of each kind of question and of each broader kind it
    names (``"measured job|spark|TPC-H"`` also counts for ``"measured job|spark"``; a
    kind of one or two parts is the broadest), for each kind with at least
    :data:`MIN_POOL_RESIDUALS` of them."""
    kinds = {}
    for group in np.unique(groups):
        parts = str(group).split("|") if group else []
        for end in range(min(2, len(parts)), len(parts) + 1):
            kinds.setdefault("|".join(parts[:end]), []).append(groups == group)
    return {kind: np.sort(residuals[np.logical_or.reduce(masks)])
            for kind, masks in kinds.items()
            if sum(int(mask.sum()) for mask in masks) >= MIN_POOL_RESIDUALS}


def _origin_pools(residuals, origins) -> dict:
    """origin -> the sorted held-out residuals of its runs, for each origin with at
    least :data:`MIN_POOL_RESIDUALS` of them, where there are several origins (a public
    table beside jobgauge's runs, ``runtable.public_origins``); else {}.  Pooled, C3O's
    and Scout's thousands of residuals widened a local question of jobgauge's: kmeans at
    12x its HiBench tiny run on local[2] from [0.98, 3.27] s to [1.15, 3.48] s."""
    if len(set(origins)) < 2:
        return {}
    return {str(origin): np.sort(residuals[origins == origin]) for origin in set(origins)
            if (origins == origin).sum() >= MIN_POOL_RESIDUALS}


def pool_of(pools: dict, group) -> np.ndarray | None:
    """The residual pool of a kind of question: its own where it has one, else the one of
    the narrowest broader kind that has one (``"measured job|spark|TPC-H"``, then
    ``"measured job|spark"``); None for the pooled residuals."""
    parts = str(group).split("|") if group else []
    for end in range(len(parts), min(2, len(parts)) - 1, -1):
        pool = pools.get("|".join(parts[:end]))
        if pool is not None:
            return pool
    return None


def join_columns(X, columns, missing=""):
    """One text key per row: the columns' values joined by "|" (``missing`` for an absent
    column)."""
    keys = _text(X[columns[0]])
    for column in columns[1:]:
        values = _text(X[column]) if column in X.columns \
            else np.array([missing] * len(X), dtype=object)
        keys = keys + "|" + values
    return keys


def _text(series) -> np.ndarray:
    """``series.astype(str)`` as an object array; a text column without missing values
    as it is (the conversion cost 5 times the read, and a question reads a dozen)."""
    import pandas as pd

    if isinstance(series.dtype, pd.StringDtype) and not series.hasnans:
        return series.to_numpy(dtype=object)
    return series.astype(str).to_numpy().astype(object)


def _pooled_slope(size, log_y, done, keys):
    """Pooled within-group least-squares slope of log runtime on log size; None unless at
    least two groups have two or more distinct sizes."""
    numerator = denominator = 0.0
    groups = 0
    for key in np.unique(keys[done]):
        rows = done & (keys == key)
        if len(np.unique(np.round(size[rows], 6))) < 2:
            continue
        x = size[rows] - size[rows].mean()
        numerator += float(x @ (log_y[rows] - log_y[rows].mean()))
        denominator += float(x @ x)
        groups += 1
    return numerator / denominator if groups >= 2 and denominator > 0 else None


class RuntimeModel(RegressorMixin, BaseEstimator):
    """Base of every runtime model (not registered itself).

    Subclasses implement ``_fit_target(F, log_y, X)`` and ``_predict_matrix(F, X)``
    on the feature matrix, or override ``_fit_log`` for a censored loss.
    """

    _parameter_constraints: ClassVar[dict] = {
        "random_state": [RandomState()],
        "calibration_size": [Interval(float, 0.0, 0.5)],
        "censored_iterations": [Interval(int, 0, None)],
        "with_classes": [Boolean()],
        "size_exponent": [None, Options({"auto"}), Interval(float, 0.0, 2.0)],
    }

    #: Whether the model learns runs on this machine and on other machines apart
    #: (:meth:`_fit_parts`, :func:`~jobgauge.models.features.run_modes`).  The machines
    #: differ in speed, and local mode's memory is the driver's heap where a node's is the
    #: node's.  One tree learnt from local TPC-H runs and Scout's EC2 runs answered TPC-H
    #: Q3 at SF 1 on local[2] with an 8g driver as 541.5 s (measured 3.0-3.5 s): with
    #: 8 GiB its features looked like an m4.large.  Runs in local mode and on the
    #: project's standalone cluster on 127.0.0.1 stay together: learnt apart, the DAG
    #: network's error on unseen TPC-H queries grew from 36.5 to 41.4 %
    #: (``bench/evaluate.py --quiet-corpus``).
    learns_modes_apart: ClassVar[bool] = True

    # ------------------------------------------------------------ public API
    def fit(self, X, y=None):
        """Learn from a run table; ``y`` defaults to ``X.runtime_s``. Returns self."""
        validate_params(self)
        check_frame(X, owner=type(self).__name__)
        runtime, censored = targets(X, y)
        X = X.reset_index(drop=True)
        log_y = np.log(runtime)
        residuals, source, groups, asked = None, "training residuals", None, None
        if self.calibration_size > 0:
            split = self._calibration_split(X, censored)
            if split is not None:
                train, calibration = split
                self._fit_parts(X.iloc[train].reset_index(drop=True), log_y[train],
                                censored[train])
                keep = calibration[~censored[calibration]]
                held_out = X.iloc[keep].reset_index(drop=True)
                predicted = self._predict_parts(held_out)
                residuals = log_y[keep] - predicted
                source = "held-out configurations"
                groups, asked = self._interval_groups(held_out), held_out
        self._fit_parts(X, log_y, censored)
        if residuals is None:
            asked = X.iloc[np.flatnonzero(~censored)].reset_index(drop=True)
            residuals = log_y[~censored] - self._predict_parts(asked)
        self.calibration_residuals_ = np.sort(residuals)
        self.origin_residuals_ = _origin_pools(residuals, public_origins(asked))
        self.interval_pools_ = {} if groups is None else _kind_pools(residuals, groups)
        self.interval_source_ = source
        self.n_training_rows_ = len(X)
        self.n_censored_ = int(censored.sum())
        self.measured_range_ = MeasuredRange.from_frame(X)
        return self

    def predict(self, X):
        """Predicted runtime in seconds, one per row."""
        self._check_fitted()
        check_frame(X, owner=type(self).__name__)
        X = X.reset_index(drop=True)
        with self._one_question(X):
            return np.exp(self._predict_parts(X))

    def predict_interval(self, X, coverage=0.8):
        """(low, high) runtime bounds in seconds holding ``coverage`` of outcomes."""
        return self.predict_with_interval(X, coverage)[1:]

    def predict_with_interval(self, X, coverage=0.8):
        """(runtime, low, high) in seconds per row: :meth:`predict` and
        :meth:`predict_interval` from one pass of the model."""
        self._check_fitted()
        X = self._checked_question(X, coverage)
        with self._one_question(X):
            return self._answer_with_interval(X, coverage)

    def _checked_question(self, X, coverage):
        """``X`` (its index reset) once ``coverage`` and ``X`` are checked."""
        if isinstance(coverage, bool) or not isinstance(coverage, (int, float)) \
                or not 0.0 < coverage < 1.0:
            raise ModelError(f"coverage must be a number between 0 and 1, got {coverage!r}")
        check_frame(X, owner=type(self).__name__)
        return X.reset_index(drop=True)

    def _answer_with_interval(self, X, coverage):
        """(runtime, low, high) of ``X`` inside its question."""
        center, low, high = self._log_interval(X, coverage)
        low, high = self._never_falling_bounds(X, center, low, high, coverage)
        return np.exp(center), np.exp(center + low), np.exp(center + high)

    def _log_interval(self, X, coverage):
        """(log prediction, low offset, high offset) per row of ``X``: the interval of
        its kind of question, widened beyond what was measured."""
        pools = getattr(self, "interval_pools_", None)
        center = self._predict_parts(X)
        groups = self._interval_groups(X) if pools else None
        low, high = self._pooled_offsets(X, coverage)
        if groups is not None:
            for group in np.unique(groups):
                pool = pool_of(pools, group)
                if pool is not None:
                    rows = groups == group
                    low[rows], high[rows] = conformal_offsets(pool, coverage)
        low, high = self._extrapolated(X, groups, low, high, coverage)
        return center, low, high

    def _pooled_offsets(self, X, coverage):
        """(low, high) log offsets per row of ``X`` from the pooled residuals: those of
        its origin (:meth:`_origins`) where the model learned runs of several
        (``origin_residuals_``), else all of them."""
        low, high = conformal_offsets(self.calibration_residuals_, coverage)
        low, high = np.full(len(X), low), np.full(len(X), high)
        by_origin = getattr(self, "origin_residuals_", None)
        if by_origin:
            origins = self._origins(X)
            for origin in set(origins) & set(by_origin):
                rows = origins == origin
                low[rows], high[rows] = conformal_offsets(by_origin[origin], coverage)
        return low, high

    def _origins(self, X) -> np.ndarray:
        """Per row of ``X``, the origin of the runs it is answered from
        (``runtable.public_origins``: its public table, ``""`` for the rest)."""
        return public_origins(X)

    def score(self, X, y=None, sample_weight=None):
        """Negative median absolute percentage error (higher is better)."""
        runtime, censored = targets(X, y)
        predicted = self.predict(X)
        done = ~censored
        return -float(np.median(np.abs(predicted[done] - runtime[done]) / runtime[done]))

    def __sklearn_is_fitted__(self):
        return hasattr(self, "calibration_residuals_")

    # ------------------------------------------------------------- internals
    def _check_fitted(self):
        check_fitted(self, "calibration_residuals_")

    def _rng(self):
        return np.random.RandomState(self.random_state)

    def _one_question(self, X):
        """A context in which ``X`` is asked several times (its prediction, then its
        kind of question): a model may compute what they share once; this default
        computes nothing."""
        return contextlib.nullcontext()

    def _interval_groups(self, X):
        """The kind of question each row of ``X`` asks, for intervals per kind (an
        array of text; ``""``: the pooled interval), or None: one interval for all (this
        default).  Called on the held-out rows with the model fitted without them, and
        on the rows asked."""
        return None

    def _extrapolated(self, X, groups, low, high, coverage):
        """The (low, high) log offsets of each row of ``X`` (``groups``: its kind of
        question, or None), widened where the row is asked beyond what was measured (a
        model that knows how its error grows with the distance); this default widens
        nothing."""
        return low, high

    def _never_falling_bounds(self, X, center, low, high, coverage):
        """The (low, high) log offsets of ``X`` (``center``: its log predictions), each
        raised where a smaller input of the same question has a higher bound (a model
        that widens its intervals with the distance beyond what was measured); this
        default raises nothing."""
        return low, high

    def _calibration_split(self, X, censored):
        keys = configuration_keys(X)
        if len(np.unique(keys)) < MIN_CALIBRATION_GROUPS:
            return None
        mask = self._drawn(keys, public_origins(X))
        if censored[~mask].all() or (~censored[mask]).sum() == 0:
            return None
        return np.flatnonzero(~mask), np.flatnonzero(mask)

    def _drawn(self, keys, origins) -> np.ndarray:
        """Per row, True where its key (``keys``: a configuration, a job) is among
        ``calibration_size`` of the keys drawn for the calibration split, drawn apart per
        origin (``origins``: ``runtable.public_origins``) from the same seed: jobgauge's
        and the user's runs are held out as without the public tables, whose thousands of
        configurations otherwise took the draws (HiBench's pool of measured jobs held 76
        residuals with them, 214 without)."""
        mask = np.zeros(len(keys), dtype=bool)
        for origin in np.unique(origins):
            mine = origins == origin
            unique = np.unique(keys[mine])
            count = max(1, int(round(self.calibration_size * len(unique))))
            chosen = self._rng().choice(unique, size=count, replace=False)
            mask |= mine & np.isin(keys, chosen)
        return mask

    def _make_features(self):
        return RunFeatures()

    def _features_fit(self, X, log_y):
        self.features_ = self._make_features().fit(X)
        matrix = self.features_.transform(X)
        if self.with_classes:
            from jobgauge.models._classifier import JobClassifier

            self.classifier_ = JobClassifier(random_state=self.random_state).fit(
                X, np.exp(log_y))
            matrix = np.hstack([matrix, self.classifier_.class_matrix(X)])
        return matrix

    def _features(self, X):
        matrix = self.features_.transform(X)
        if self.with_classes:
            matrix = np.hstack([matrix, self.classifier_.class_matrix(X)])
        return matrix

    # ------------------------------------------------------- size scaling
    def _fit_size_exponent(self, X, matrix, log_y, censored):
        """Set ``size_exponent_``: the model learns log runtime minus exponent x log input
        bytes, so a larger input than any seen in training scales the prediction by
        (size ratio) ** exponent instead of being capped at the largest runtime seen.

        ``"auto"`` estimates the exponent from runs of one workload on one cluster at
        several input sizes (pooled within-group slope, clipped to [0, 1.5]).  Where every
        workload ran at one size only, it compares different workloads run with the same
        framework, cluster and knobs (how runtime grows with input across jobs); with
        neither it assumes linear scaling (1.0), Ernest's assumption.
        """
        names = list(self.features_.get_feature_names_out())
        self.size_column_ = names.index("log_input_bytes")
        setting = getattr(self, "size_exponent", None)
        if setting is None:
            self.size_exponent_ = 0.0
            return
        if setting != "auto":
            self.size_exponent_ = float(setting)
            return
        done = ~censored
        size = matrix[:, self.size_column_]
        slope = _pooled_slope(size, log_y, done, join_columns(X, ["workload", "framework",
                                                           "instance_type", "instance_count"]))
        if slope is None:  # each workload at one size: compare jobs run with the same settings
            slope = _pooled_slope(size, log_y, done, join_columns(X, [
                "framework", "instance_type", "instance_count", "config_json"]))
        self.size_exponent_ = 1.0 if slope is None else float(np.clip(slope, 0.0, 1.5))

    def _size_offset(self, matrix):
        return self.size_exponent_ * matrix[:, self.size_column_]

    _SIZE_FEATURES = ("log_input_bytes", "log_scale_factor", "hibench_size")

    def _fit_size_ranges(self, X, matrix):
        """Per workload, the range of each size feature seen in training (for clipping)."""
        names = list(self.features_.get_feature_names_out())
        self.size_columns_ = [names.index(n) for n in self._SIZE_FEATURES]
        self.slot_columns_ = (names.index("log_bytes_per_slot"), names.index("log_parallel_slots"))
        values = matrix[:, self.size_columns_]
        workloads = X["workload"].astype(str).to_numpy()
        self.size_ranges_ = {w: (values[workloads == w].min(0), values[workloads == w].max(0))
                             for w in np.unique(workloads)}
        self.size_ranges_[None] = (values.min(0), values.max(0))

    def _clip_sizes(self, matrix, X):
        """With a size exponent the exponent alone extrapolates: the learned part sees each
        size clipped to the range its workload had in training (all workloads' range for
        an unseen one), so it cannot add an arbitrary extrapolation of its own."""
        if not self.size_exponent_:
            return matrix
        matrix = matrix.copy()
        workloads = X["workload"].astype(str).to_numpy()
        for workload in np.unique(workloads):
            low, high = self.size_ranges_.get(workload, self.size_ranges_[None])
            rows = workloads == workload
            matrix[np.ix_(rows, self.size_columns_)] = np.clip(
                matrix[np.ix_(rows, self.size_columns_)], low, high)
        per_slot, slots = self.slot_columns_
        matrix[:, per_slot] = matrix[:, self.size_columns_[0]] - matrix[:, slots]
        return matrix

    def _fit_parts(self, X, log_y, censored):
        """:meth:`_fit_log` once, or once per run mode (:func:`run_modes`) where the model
        learns the modes apart (:attr:`learns_modes_apart`) and each mode has
        :data:`MIN_MODE_RUNS` finished runs: a copy of the model (``mode_models_``) per
        mode, each fitted on that mode's runs only."""
        self.mode_models_ = None
        if self.learns_modes_apart:
            from sklearn.base import clone

            modes = run_modes(X)
            if all(((modes == mode) & ~censored).sum() >= MIN_MODE_RUNS for mode in RUN_MODES):
                self.mode_models_ = {}
                for mode in RUN_MODES:
                    rows = np.flatnonzero(modes == mode)
                    part = clone(self)
                    part._fit_log(X.iloc[rows].reset_index(drop=True), log_y[rows],
                                  censored[rows])
                    self.mode_models_[mode] = part
                return
        self._fit_log(X, log_y, censored)

    def _predict_parts(self, X):
        """Log predictions of ``X`` from :meth:`_predict_log`, each row by its mode's model
        where the model learnt the modes apart."""
        parts = getattr(self, "mode_models_", None)
        if not parts:
            return self._predict_log(X)
        modes = run_modes(X)
        result = np.empty(len(X))
        for mode, part in parts.items():
            rows = np.flatnonzero(modes == mode)
            if len(rows):
                result[rows] = part._predict_log(X.iloc[rows].reset_index(drop=True))
        return result

    def _fit_log(self, X, log_y, censored):
        """Fit on log runtimes; censored targets are raised to the prediction iteratively."""
        matrix = self._features_fit(X, log_y)
        self._fit_size_exponent(X, matrix, log_y, censored)
        self._fit_size_ranges(X, matrix)
        target = log_y - self._size_offset(matrix)
        work = target.copy()
        rounds = self.censored_iterations if censored.any() else 0
        self._fit_target(matrix, work, X)
        for _ in range(rounds):
            predicted = self._predict_matrix(matrix, X)
            raised = np.maximum(target[censored], predicted[censored])
            if np.allclose(raised, work[censored], atol=1e-4):
                break
            work[censored] = raised
            self._fit_target(matrix, work, X)

    def _predict_log(self, X):
        matrix = self._features(X)
        return self._predict_matrix(self._clip_sizes(matrix, X), X) + self._size_offset(matrix)

    def _fit_target(self, matrix, log_y, X):  # pragma: no cover - abstract
        raise NotImplementedError

    def _predict_matrix(self, matrix, X):  # pragma: no cover - abstract
        raise NotImplementedError
