"""Classical runtime models: decision tree, SVR, random forest, gradient boosting, Ernest.

All learn log runtime from :class:`~jobgauge.models.features.RunFeatures`
(Ernest excepted: it fits its own four-term formula in seconds).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from jobgauge.models._base import RuntimeModel, join_columns
from jobgauge.models._params import Interval, Options, store_params


class DecisionTreeModel(RuntimeModel):
    """One regression tree on log runtime (the seed's "DT" baseline)."""

    _parameter_constraints: ClassVar[dict] = {
        **RuntimeModel._parameter_constraints,
        "max_depth": [Interval(int, 1, None), None],
        "min_samples_leaf": [Interval(int, 1, None)],
    }

    def __init__(self, *, max_depth=None, min_samples_leaf=2, random_state=0,
                 calibration_size=0.2, censored_iterations=3, with_classes=False,
                 size_exponent=None):
        store_params(self, locals())

    def _fit_target(self, matrix, log_y, X):
        from sklearn.tree import DecisionTreeRegressor

        self.estimator_ = DecisionTreeRegressor(
            max_depth=self.max_depth, min_samples_leaf=self.min_samples_leaf,
            random_state=self.random_state).fit(matrix, log_y)

    def _predict_matrix(self, matrix, X):
        return self.estimator_.predict(matrix)


class SVRModel(RuntimeModel):
    """Support-vector regression (RBF kernel) on standardised features and log runtime."""

    _parameter_constraints: ClassVar[dict] = {
        **RuntimeModel._parameter_constraints,
        "C": [Interval(float, 0.0, None, closed="neither")],
        "epsilon": [Interval(float, 0.0, None)],
        "gamma": [Options({"scale", "auto"}), Interval(float, 0.0, None, closed="neither")],
        "kernel": [Options({"rbf", "linear", "poly", "sigmoid"})],
    }

    def __init__(self, *, C=10.0, epsilon=0.01, gamma="scale", kernel="rbf", random_state=0,
                 calibration_size=0.2, censored_iterations=3, with_classes=False,
                 size_exponent=None):
        store_params(self, locals())

    def _fit_target(self, matrix, log_y, X):
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVR

        self.scaler_ = StandardScaler().fit(matrix)
        self.target_mean_, self.target_scale_ = float(log_y.mean()), float(log_y.std() or 1.0)
        self.estimator_ = SVR(C=self.C, epsilon=self.epsilon, gamma=self.gamma,
                              kernel=self.kernel).fit(
            self.scaler_.transform(matrix), (log_y - self.target_mean_) / self.target_scale_)

    def _predict_matrix(self, matrix, X):
        scaled = self.estimator_.predict(self.scaler_.transform(matrix))
        return scaled * self.target_scale_ + self.target_mean_


class RandomForestModel(RuntimeModel):
    """Random forest on log runtime."""

    _parameter_constraints: ClassVar[dict] = {
        **RuntimeModel._parameter_constraints,
        "n_estimators": [Interval(int, 1, None)],
        "max_depth": [Interval(int, 1, None), None],
        "min_samples_leaf": [Interval(int, 1, None)],
        "max_features": [Interval(float, 0.0, 1.0, closed="right"), Options({"sqrt", "log2"})],
    }

    def __init__(self, *, n_estimators=200, max_depth=None, min_samples_leaf=1,
                 max_features=0.5, random_state=0, calibration_size=0.2,
                 censored_iterations=3, with_classes=False, size_exponent=None):
        store_params(self, locals())

    def _fit_target(self, matrix, log_y, X):
        from sklearn.ensemble import RandomForestRegressor

        self.estimator_ = RandomForestRegressor(
            n_estimators=self.n_estimators, max_depth=self.max_depth,
            min_samples_leaf=self.min_samples_leaf, max_features=self.max_features,
            random_state=self.random_state, n_jobs=1).fit(matrix, log_y)

    def _predict_matrix(self, matrix, X):
        return self.estimator_.predict(matrix)


class GradientBoostingModel(RuntimeModel):
    """Histogram gradient boosting on log runtime (fixed iterations, no early stopping)."""

    _parameter_constraints: ClassVar[dict] = {
        **RuntimeModel._parameter_constraints,
        "max_iter": [Interval(int, 1, None)],
        "learning_rate": [Interval(float, 0.0, 1.0, closed="right")],
        "max_leaf_nodes": [Interval(int, 2, None)],
        "min_samples_leaf": [Interval(int, 1, None)],
        "l2_regularization": [Interval(float, 0.0, None)],
    }

    def __init__(self, *, max_iter=300, learning_rate=0.1, max_leaf_nodes=15,
                 min_samples_leaf=5, l2_regularization=0.0, random_state=0,
                 calibration_size=0.2, censored_iterations=3, with_classes=False,
                 size_exponent=None):
        store_params(self, locals())

    def _fit_target(self, matrix, log_y, X):
        from sklearn.ensemble import HistGradientBoostingRegressor
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):  # the machine is shared: one OpenMP thread
            self.estimator_ = HistGradientBoostingRegressor(
                max_iter=self.max_iter, learning_rate=self.learning_rate,
                max_leaf_nodes=self.max_leaf_nodes, min_samples_leaf=self.min_samples_leaf,
                l2_regularization=self.l2_regularization, early_stopping=False,
                random_state=self.random_state).fit(matrix, log_y)

    def _predict_matrix(self, matrix, X):
        from threadpoolctl import threadpool_limits

        with threadpool_limits(1):
            return self.estimator_.predict(matrix)


class ErnestModel(RuntimeModel):
    """Ernest (Venkataraman et al., NSDI 2016): t = θ0 + θ1·scale/m + θ2·log(m) + θ3·m.

    θ ≥ 0 by non-negative least squares on relative error (each row weighted
    by 1/t).  ``scale`` is the input size in GB and ``m`` the number of
    machines.  One fit per (workload, framework, instance_type, knobs) with at
    least ``min_machine_counts`` distinct machine counts; otherwise per
    (workload, framework, instance_type); otherwise per (workload, framework)
    counting machines as total vCPUs / 2; otherwise one global fit (the
    fallback for unseen workloads, which Ernest itself cannot predict).
    """

    _parameter_constraints: ClassVar[dict] = {
        **RuntimeModel._parameter_constraints,
        "min_machine_counts": [Interval(int, 2, None)],
    }
    learns_modes_apart = False     # the published fit: per instance type already, pooled below
    LEVELS = (("workload", "framework", "instance_type", "config_json"),
              ("workload", "framework", "instance_type"),
              ("workload", "framework"),
              ())

    def __init__(self, *, min_machine_counts=3, random_state=0, calibration_size=0.2,
                 censored_iterations=3, with_classes=False):
        store_params(self, locals())

    def _design(self, X):
        names = list(self.features_.get_feature_names_out())
        matrix = self.features_.transform(X)
        scale = np.expm1(matrix[:, names.index("log_input_bytes")]) / 1e9
        count = matrix[:, names.index("instance_count")]
        cores = matrix[:, names.index("total_vcpus")]
        return scale, count, cores

    @staticmethod
    def _terms(scale, machines):
        return np.column_stack([np.ones_like(scale), scale / machines, np.log(machines), machines])

    def _keys(self, X, level):
        columns = self.LEVELS[level]
        if not columns:
            return np.array([""] * len(X), dtype=object)
        return join_columns(X, columns, missing="{}")

    def _fit_target(self, matrix, log_y, X):
        from scipy.optimize import nnls

        scale, count, cores = self._design(X)
        runtime = np.exp(log_y)
        self.fits_ = []
        for level in range(len(self.LEVELS)):
            machines = count if level < 2 else cores / 2.0
            keys = self._keys(X, level)
            table = {}
            for key in np.unique(keys):
                rows = np.flatnonzero(keys == key)
                if level < len(self.LEVELS) - 1 and \
                        len(np.unique(machines[rows])) < self.min_machine_counts:
                    continue
                terms = self._terms(scale[rows], machines[rows]) / runtime[rows, None]
                theta, _ = nnls(terms, np.ones(len(rows)))
                table[key] = theta
            self.fits_.append(table)

    def _predict_matrix(self, matrix, X):
        scale, count, cores = self._design(X)
        result = np.full(len(X), np.nan)
        for level, table in enumerate(self.fits_):
            machines = count if level < 2 else cores / 2.0
            keys = self._keys(X, level)
            for key, theta in table.items():
                rows = np.flatnonzero((keys == key) & np.isnan(result))
                if len(rows):
                    result[rows] = self._terms(scale[rows], machines[rows]) @ theta
        return np.log(np.maximum(result, 1e-3))
